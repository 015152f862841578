#!/usr/bin/env bash
# Prepare a Debian 12 machine (as root) for developing and testing bdp.wan_tune:
#   * apt packages: podman, runc, debootstrap, iperf3, iproute2, rsync, stunnel4 (the TLS client test), make,
#     qemu-system-x86 and qemu-utils (the real-kernel VMs), ShellCheck (when the archive has it)
#   * a Python 3.11 venv at $ROOT/.venv with requirements.txt
#   * $ROOT/.cache/collections/ansible_collections/bdp/wan_tune -> $ROOT
# Idempotent: a second run does no apt or pip work.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/requirements.txt"
STAMP="$VENV/.requirements.sha256"

log() { printf 'setup: %s\n' "$*"; }

# --- apt packages -----------------------------------------------------------
APT_PKGS=(podman runc debootstrap iperf3 iproute2 rsync stunnel4 make openssh-client qemu-system-x86 qemu-utils e2fsprogs shellcheck chromium)
OPTIONAL_PKGS=(shellcheck)

is_installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = "installed" ]
}
is_optional() {
    local p
    for p in "${OPTIONAL_PKGS[@]}"; do [ "$p" = "$1" ] && return 0; done
    return 1
}

missing=()
for p in "${APT_PKGS[@]}"; do
    is_installed "$p" || missing+=("$p")
done
# Debian's own python3.11 needs python3.11-venv for `-m venv` (pyenv's does not)
if ! command -v python3.11 >/dev/null 2>&1 ||
   ! python3.11 -c 'import ensurepip' >/dev/null 2>&1; then
    for p in python3.11 python3.11-venv; do is_installed "$p" || missing+=("$p"); done
fi

if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: missing apt packages (${missing[*]}); run as root" >&2
        exit 1
    fi
    log "apt-get update (missing: ${missing[*]})"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    install=()
    for p in "${missing[@]}"; do
        if is_optional "$p" && ! apt-cache show "$p" >/dev/null 2>&1; then
            log "optional package $p not available, skipping"
            continue
        fi
        install+=("$p")
    done
    if [ "${#install[@]}" -gt 0 ]; then
        log "apt-get install ${install[*]}"
        apt-get install -y -qq --no-install-recommends "${install[@]}" >/dev/null
    fi
else
    log "apt packages present"
fi

# --- Python venv --------------------------------------------------------------
hash -r
PY="$(command -v python3.11 || command -v python3)"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    log "creating venv $VENV with $PY ($("$PY" --version 2>&1))"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
fi
# molecule/*/molecule.yml name .venv/lib/python3.11/site-packages; the pins
# in requirements.txt were verified with 3.11.
pyver="$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$pyver" != "3.11" ]; then
    echo "setup: $VENV uses Python $pyver; need 3.11 (remove $VENV and install python3.11)" >&2
    exit 1
fi

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
    log "pip install -r requirements.txt (about a minute the first time)"
    if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" \
        >"$VENV/pip-install.log" 2>&1; then
        grep -v "^WARNING: Location 'file:" "$VENV/pip-install.log" | tail -n 40 >&2
        echo "setup: pip install failed (full log: $VENV/pip-install.log)" >&2
        exit 1
    fi
    echo "$want" > "$STAMP"
else
    log "venv up to date (ansible-core $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("ansible-core"))'))"
fi

# --- the collection under its FQCN ---------------------------------------------
COLL_DIR="$ROOT/.cache/collections/ansible_collections/bdp"
mkdir -p "$COLL_DIR"
if [ "$(readlink "$COLL_DIR/wan_tune" 2>/dev/null || true)" != "$ROOT" ]; then
    ln -sfn "$ROOT" "$COLL_DIR/wan_tune"
    log "linked $COLL_DIR/wan_tune -> $ROOT"
fi

log "done"
