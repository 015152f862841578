#!/usr/bin/env bash
# The main job (`make demo`): before/after over an emulated long fat link, or the
# playbook against INVENTORY. Variables: RATE, RTT (ms), LOSS (%), MTU, DURATION (s), INVENTORY.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
args=(--rate "${RATE:-1g}" --rtt "${RTT:-98}" --loss "${LOSS:-0}" --mtu "${MTU:-9000}" --duration "${DURATION:-15}")
if [ -n "${INVENTORY:-}" ]; then
    args+=(--inventory "$INVENTORY")
else
    bash "$ROOT/scripts/build-image.sh"     # the lab hosts' image
fi
exec python tests/lab/demo.py "${args[@]}"
