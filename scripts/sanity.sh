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

dest="$ROOT/.cache/sanity/ansible_collections/bdp/wan_tune"
rm -rf "$dest"
mkdir -p "$dest"
git ls-files -z --cached --others --exclude-standard \
    | rsync -a --from0 --ignore-missing-args --files-from=- ./ "$dest/"
cd "$dest"
ansible-test sanity --local --python 3.11 --requirements --color no "$@"
