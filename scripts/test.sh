#!/usr/bin/env bash
# Every check of the project; `make test` runs them all (CI: .ci/run).
#   scripts/test.sh all | lint | sanity | units | molecule | host
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

stage() { printf '\n=== %s ===\n' "$*"; }

lint() {
    stage "yamllint"
    yamllint --strict .
    stage "ansible-lint (production profile)"
    ansible-lint --profile production
}

sanity() {
    stage "ansible-test sanity"
    bash scripts/sanity.sh
}

units() {
    stage "unit tests"
    python -m pytest tests/unit -q
}

molecule_default() {
    stage "molecule default scenario"
    bash scripts/molecule.sh default
}

host() {
    stage "controller host run (initial network namespace)"
    python -m pytest tests/integration -q
}

started=$(date +%s)
case "${1:-all}" in
    all) lint; sanity; units; molecule_default; host ;;
    lint) lint ;;
    sanity) sanity ;;
    units) units ;;
    molecule) molecule_default ;;
    host) host ;;
    *) echo "usage: $0 all|lint|sanity|units|molecule|host" >&2; exit 2 ;;
esac
stage "done in $(( $(date +%s) - started )) s"
