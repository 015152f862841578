#!/usr/bin/env bash
# The reference pages, generated with antsibull-docs: the roles from every roles/*/meta/argument_specs.yml, the
# modules from their DOCUMENTATION, RETURN and EXAMPLES, the filters from plugins/filter/*.yml; and the playbooks'
# variable tables in docs/*.md from playbooks/meta/argument_specs.yml (scripts/docs_playbooks.py).
#   scripts/docs.sh            regenerate docs/reference/{roles,modules,filters}/ (`make docs`); check the result into git
#   scripts/docs.sh --check    regenerate into a temporary directory and fail when one of them differs
# antsibull-docs reads the collection through ansible-doc, found as bdp.wan_tune through
# ANSIBLE_COLLECTIONS_PATH (.cache/collections, made by scripts/setup.sh). Its formats are RST only
# (ansible-docsite or simplified-rst); simplified-rst is the one meant for reading in a repository.
# scripts/docs_pages.py files the pages by kind, named after their plugin (docs/reference/modules/link_mtu.rst),
# with a README.md each, and points the links between them at those names.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

REF=docs/reference
KINDS="roles modules filters"
check=false
case "${1:-}" in
    "") ;;
    --check) check=true ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# The collection as bdp.wan_tune under .cache/collections (as scripts/setup.sh links it), for a bare scripts/test.sh lint.
python -c 'import sys; sys.path.insert(0, "tests"); import collection_path; collection_path.collections_base()'

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The whole collection in one ansible-doc pass, then filed by kind.
mkdir -m 0700 "$tmp/all"
antsibull-docs --config-file docs/reference/antsibull-docs.cfg collection --use-current --squash-hierarchy --output-format simplified-rst \
    --no-indexes --no-add-antsibull-docs-version --fail-on-error --dest-dir "$tmp/all" bdp.wan_tune >"$tmp/log" 2>&1 ||
    { cat "$tmp/log" >&2; echo "docs: antsibull-docs failed" >&2; exit 1; }
counts="$(python scripts/docs_pages.py "$tmp/all" "$tmp/ref")"

if $check; then
    failed=false
    for kind in $KINDS; do
        if ! diff -ru "$REF/$kind" "$tmp/ref/$kind" >"$tmp/diff"; then
            head -n 60 "$tmp/diff" >&2
            echo "docs: $REF/$kind differs from the documentation it is generated from; run make docs and commit the result" >&2
            failed=true
        fi
    done
    python scripts/docs_playbooks.py --check || failed=true
    if $failed; then exit 1; fi
    echo "docs: $REF/{roles,modules,filters} and the playbook tables are up to date ($counts)"
else
    for kind in $KINDS; do
        rm -rf "${REF:?}/$kind"
        cp -r "$tmp/ref/$kind" "$REF/$kind"
    done
    python scripts/docs_playbooks.py
    echo "docs: wrote $REF/{roles,modules,filters} ($counts)"
fi
