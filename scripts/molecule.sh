#!/usr/bin/env bash
# Run a Molecule scenario end to end:  bash scripts/molecule.sh [SCENARIO] [molecule test args...]
# Installs what is missing (scripts/setup.sh), builds the test image when the
# build script changed (scripts/build-image.sh), exports the environment and
# runs `molecule test -s SCENARIO` from the repo root with the venv's molecule.
# MOLECULE_CMD=converge (etc.) runs another molecule subcommand instead of test.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCENARIO="${1:-default}"
[ "$#" -gt 0 ] && shift

bash "$ROOT/scripts/setup.sh"
bash "$ROOT/scripts/build-image.sh"

VENV="$ROOT/.venv"
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"
export CONTAINERS_CONF="$ROOT/scripts/containers.conf"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.cache/collections:$SITE"
# Scenarios live in molecule/ (not extensions/molecule/): say so, which also
# silences molecule's "should migrate" warning for collection repos.
export MOLECULE_GLOB="molecule/*/molecule.yml"
export ANSIBLE_FORCE_COLOR="${ANSIBLE_FORCE_COLOR:-0}"
export PY_COLORS="${PY_COLORS:-0}"

cd "$ROOT"
echo "molecule: ${MOLECULE_CMD:-test} -s $SCENARIO ($(molecule --version 2>/dev/null | sed -n 1p))"
start=$(date +%s)
rc=0
molecule "${MOLECULE_CMD:-test}" -s "$SCENARIO" "$@" || rc=$?
echo "molecule: ${MOLECULE_CMD:-test} -s $SCENARIO exited $rc after $(( $(date +%s) - start )) s"
exit "$rc"
