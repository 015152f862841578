#!/usr/bin/env bash
# ansible-test sanity, locally (no containers): ansible-test needs the collection
# at .../ansible_collections/bdp/wan_tune, so test a copy of the working tree there.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

# ansible-test bootstraps pip in its venvs with a get-pip.py it downloads from a
# host this machine cannot reach; give it the offline stand-in under the name it looks for.
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',.*/\1/p" \
    "$ROOT/.venv/lib/python3.11/site-packages/ansible_test/_internal/python_requirements.py" | head -n1)
mkdir -p "$HOME/.ansible/test/cache"
cp "$ROOT/scripts/get-pip-offline.py" "$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"

# Outside the checkout: inside it, ansible-test would ask the checkout's git for the
# file list, where .cache/ is ignored, and skip every target.
work="$(mktemp -d "${TMPDIR:-/tmp}/bdp-wan-tune-sanity.XXXXXX")"
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/bdp/wan_tune"
mkdir -p "$dest"
git ls-files -z --cached --others --exclude-standard \
    | rsync -a --from0 --ignore-missing-args --files-from=- ./ "$dest/"
cd "$dest"
log="$work/sanity.log"
ansible-test sanity --local --python 3.11 --requirements --color no "$@" 2>&1 | tee "$log"
if grep -q "All targets skipped" "$log"; then
    echo "sanity: ansible-test found no targets to test in $dest" >&2
    exit 1
fi
