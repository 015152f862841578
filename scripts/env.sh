# shellcheck shell=bash
# Environment shared by the project's scripts: source it after scripts/setup.sh.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
export PATH="$ROOT/.venv/bin:$PATH"
export CONTAINERS_CONF="$ROOT/scripts/containers.conf"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.cache/collections:$ROOT/.venv/lib/python3.11/site-packages"
export ANSIBLE_LOCALHOST_WARNING=false
# The lab's and the Molecule scenarios' connection to their containers (one nsenter per module, piped)
export ANSIBLE_CONNECTION_PLUGINS="$ROOT/tests/connection_plugins"
export ANSIBLE_FORCE_COLOR="${ANSIBLE_FORCE_COLOR:-false}"
