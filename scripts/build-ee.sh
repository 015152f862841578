#!/usr/bin/env bash
# Build the local execution-environment image localhost/bdp-wan-tune-ee:latest (make ee): ansible-core and
# ansible-runner (pinned in requirements.txt), dumb-init and ansible-builder 3's entrypoint, galaxy.yml's dependencies
# and this collection, on top of the project's base image localhost/bdp-wan-tune-debian12:latest (scripts/build-image.sh: iperf3,
# openssh-client). No registry, no Galaxy, and no network inside the build: the wheels are fetched here by the venv's
# pip (cached in .cache/ee-wheels/), the collections come from the checkout and from the venv's `ansible` package.
# The Containerfile is ee/Containerfile; the build context is a temporary directory holding only what it copies.
#
# The image is labelled with a hash of its inputs (this script, ee/Containerfile, the base image's id, the Python
# requirements and constraints, the entrypoint, the two collections' MANIFEST.json); when the image has that label the
# build is skipped. Otherwise podman's layer cache keeps the Python layer unless the wheels changed, so a change of the
# collection reinstalls only the collection.
#   FORCE=1 scripts/build-ee.sh      rebuild anyway (podman's layer cache still applies)
#
# The same EE for ansible-builder 3 (execution-environment.yml, any EE base image), from a checkout:
#   scripts/build-ee.sh ansible-builder build -t bdp-wan-tune-ee --build-arg EE_BASE_IMAGE=IMAGE
#   scripts/build-ee.sh ansible-builder create --context DIR
# builds the collection's tarball into ee-build/ (bdp-wan_tune-<galaxy.yml's version>.tar.gz, older ones removed),
# which execution-environment.yml copies into the image, then runs ansible-builder with the rest of the arguments and
# -f execution-environment.yml. ansible-galaxy and ansible-builder come from PATH (the venv's after scripts/env.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${BDP_EE_IMAGE:-localhost/bdp-wan-tune-ee:latest}"
BASE_IMAGE="${BDP_IMAGE:-localhost/bdp-wan-tune-debian12:latest}"
LABEL="org.bdp.wan_tune.build-hash"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
WHEEL_CACHE="$ROOT/.cache/ee-wheels"
LOG="$ROOT/.cache/build-ee.log"
# Besides the pins of requirements.txt and ee/requirements.txt: pip (for users who extend the image) and the init
# ansible-builder 3 installs by default (container_init.package_pip).
EXTRA_PINS=(pip==26.3 dumb-init==1.2.5)
# The image's Python: Debian 12's python3 (CPython 3.11, glibc 2.36).
PY_VERSION=3.11
GLIBC_MINOR=36

export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/scripts/containers.conf}"

log() { printf 'build-ee: %s\n' "$*"; }
die() { printf 'build-ee: %s\n' "$*" >&2; exit 1; }

# --- ansible-builder's path: ee-build/ first, then ansible-builder --------------------------------------------------
if [ "${1:-}" = "ansible-builder" ]; then
    shift
    [ "$#" -gt 0 ] || die "usage: scripts/build-ee.sh ansible-builder create|build [ARGS...]"
    for tool in ansible-galaxy ansible-builder; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool is not on PATH (. scripts/env.sh after make setup)"
    done
    mkdir -p "$ROOT/ee-build"
    rm -f "$ROOT"/ee-build/bdp-wan_tune-*.tar.gz
    if ! out="$(ansible-galaxy collection build --output-path "$ROOT/ee-build" "$ROOT" 2>&1)"; then
        printf '%s\n' "$out" >&2
        die "ansible-galaxy collection build failed"
    fi
    log "ee-build/: $(cd "$ROOT/ee-build" && ls bdp-wan_tune-*.tar.gz)"
    cd "$ROOT"
    exec ansible-builder "$@" -f execution-environment.yml
fi

[ -x "$PY" ] || die "no venv at $VENV: run make setup"
command -v podman >/dev/null 2>&1 || die "podman is not installed: run make setup"
podman image exists "$BASE_IMAGE" || die "base image $BASE_IMAGE is missing: run make image (scripts/build-image.sh)"
base_id="$(podman image inspect --format '{{.Id}}' "$BASE_IMAGE")"

start=$(date +%s)
CTX="$(mktemp -d "${TMPDIR:-/tmp}/bdp-ee.XXXXXX")"
trap 'rm -rf "$CTX"' EXIT
mkdir -p "$CTX/collections/community" "$CTX/wheels" "$ROOT/.cache"
cp "$ROOT/ee/Containerfile" "$CTX/Containerfile"

# --- the collection: the tarball a user builds from the checkout ------------------------------------------------
# Its bytes differ from build to build (timestamps); its MANIFEST.json (version, FILES.json's checksum) does not.
if ! "$VENV/bin/ansible-galaxy" collection build --output-path "$CTX/collections" "$ROOT" >"$LOG" 2>&1; then
    cat "$LOG" >&2
    die "ansible-galaxy collection build failed"
fi
shopt -s nullglob
tarballs=("$CTX"/collections/bdp-wan_tune-*.tar.gz)
shopt -u nullglob
[ "${#tarballs[@]}" -eq 1 ] || die "expected one bdp-wan_tune-*.tar.gz, got ${#tarballs[@]}"
tarball="${tarballs[0]}"
tar -xzOf "$tarball" MANIFEST.json | sha256sum | cut -d' ' -f1 > "$CTX/bdp.wan_tune.sha256"

# --- galaxy.yml's dependencies (community.crypto, ansible.posix, community.general): from the `ansible` package in
# the venv (Galaxy is unreachable), each checked against galaxy.yml's range ------------------------------------------
purelib="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
dependencies="$("$PY" - "$ROOT/galaxy.yml" "$purelib/ansible_collections" <<'EOF'
import json
import os
import sys

import yaml
from ansible.galaxy.dependency_resolution.versioning import meets_requirements

with open(sys.argv[1]) as handle:
    wanted = yaml.safe_load(handle)['dependencies']
for name, spec in sorted(wanted.items()):
    manifest = os.path.join(sys.argv[2], *name.split('.'), 'MANIFEST.json')
    if not os.path.isfile(manifest):
        sys.exit('build-ee: %s not found in the venv (%s): run make setup' % (name, manifest))
    with open(manifest) as handle:
        version = json.load(handle)['collection_info']['version']
    if not meets_requirements(version, spec):
        sys.exit('build-ee: the venv has %s %s; galaxy.yml wants %s' % (name, version, spec))
    print(name, version)
EOF
)" || die "galaxy.yml's dependencies are not usable from the venv"
: > "$CTX/dependencies.sha256"
while read -r name dep_version; do
    namespace="${name%%.*}"; collection="${name#*.}"
    mkdir -p "$CTX/collections/$namespace"
    tar -C "$purelib/ansible_collections/$namespace" --exclude=__pycache__ -cf - "$collection" |
        tar -C "$CTX/collections/$namespace" -xf -
    printf '%s %s %s\n' "$name" "$dep_version" "$(sha256sum <"$purelib/ansible_collections/$namespace/$collection/MANIFEST.json" |
        cut -d' ' -f1)" >> "$CTX/dependencies.sha256"
done <<< "$dependencies"

# --- Python packages ---------------------------------------------------------------------------------------------
pins="$(grep -E '^ansible-(core|runner)==' "$ROOT/requirements.txt" || true)"
[ "$(printf '%s\n' "$pins" | grep -c .)" -eq 2 ] || die "requirements.txt must pin ansible-core and ansible-runner (==)"
{
    printf '%s\n' "$pins"
    grep -vE '^[[:space:]]*(#|$)' "$ROOT/ee/requirements.txt" || true
    printf '%s\n' "${EXTRA_PINS[@]}"
} > "$CTX/requirements.txt"
# The versions the project's venv has (and its tests ran with) constrain everything else, e.g. Jinja2 and cryptography.
"$PY" -m pip freeze --exclude-editable 2>/dev/null | grep -E '^[A-Za-z0-9._-]+==' > "$CTX/constraints.txt" || true
arch="$(uname -m)"
platforms=()
for minor in $(seq "$GLIBC_MINOR" -1 17); do platforms+=(--platform "manylinux_2_${minor}_$arch"); done
platforms+=(--platform "manylinux2014_$arch" --platform "manylinux2010_$arch" --platform "manylinux1_$arch")
wheel_key="$(cat "$CTX/requirements.txt" "$CTX/constraints.txt" <(printf '%s\n' "$PY_VERSION" "${platforms[@]}") |
    sha256sum | cut -c1-16)"

# ee/bindep.txt's Debian packages, checked in the base image by the build
system_packages="$(awk '!/^[[:space:]]*#/ && /platform:dpkg/ { printf "%s ", $1 }' "$ROOT/ee/bindep.txt")"
system_packages="${system_packages% }"

entrypoint="$("$PY" -c 'import ansible_builder, os; print(os.path.dirname(ansible_builder.__file__))')/_target_scripts/entrypoint"
[ -f "$entrypoint" ] || die "ansible-builder's entrypoint not found ($entrypoint): run make setup"
cp "$entrypoint" "$CTX/entrypoint"

HASH="$(cat "${BASH_SOURCE[0]}" "$ROOT/ee/Containerfile" "$CTX/entrypoint" "$CTX/dependencies.sha256" \
    "$CTX/bdp.wan_tune.sha256" <(printf '%s\n' "$base_id" "$wheel_key" "$system_packages") | sha256sum | cut -c1-16)"

if [ "${FORCE:-0}" != "1" ] && podman image exists "$IMAGE"; then
    have="$(podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null || true)"
    if [ "$have" = "$HASH" ]; then
        log "$IMAGE is up to date ($LABEL=$HASH)"
        exit 0
    fi
    log "$IMAGE has $LABEL='$have', want $HASH: rebuilding"
fi

# --- wheels: fetched once per set of requirements and constraints ---------------------------------------------------
wheels="$WHEEL_CACHE/$wheel_key"
if [ ! -f "$wheels/.complete" ]; then
    log "pip download: $(tr '\n' ' ' < "$CTX/requirements.txt")(CPython $PY_VERSION, manylinux $arch)"
    rm -rf "$WHEEL_CACHE" && mkdir -p "$wheels"
    if ! "$PY" -m pip download --quiet --disable-pip-version-check --dest "$wheels" --only-binary=:all: \
        --implementation cp --python-version "$PY_VERSION" --abi "cp${PY_VERSION/./}" "${platforms[@]}" \
        -r "$CTX/requirements.txt" -c "$CTX/constraints.txt" >>"$LOG" 2>&1; then
        grep -v "^WARNING: Location 'file:" "$LOG" | tail -n 30 >&2
        rm -rf "$wheels"
        die "pip download failed (log: $LOG)"
    fi
    touch "$wheels/.complete"
fi
cp "$wheels"/*.whl "$CTX/wheels/"
(cd "$CTX/wheels" && sha256sum -- *.whl) > "$CTX/wheels.sha256"

# --- build ---------------------------------------------------------------------------------------------------------
version="$(basename "$tarball" .tar.gz)"
version="${version#bdp-wan_tune-}"
old_id="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
log "podman build -> $IMAGE (bdp.wan_tune $version, $(awk '{ printf "%s %s, ", $1, $2 }' "$CTX/dependencies.sha256")$(grep -E '^ansible-(core|runner)==' "$CTX/requirements.txt" | tr '\n' ' ')from $BASE_IMAGE)"
if ! podman build --pull=never --network=none --layers \
    --build-arg "EE_BASE_IMAGE=$BASE_IMAGE" --build-arg "EE_SYSTEM_PACKAGES=$system_packages" \
    --label "$LABEL=$HASH" --label "org.bdp.wan_tune.version=$version" \
    --label "org.bdp.wan_tune.base-image-id=$base_id" \
    -f "$CTX/Containerfile" -t "$IMAGE" "$CTX" >>"$LOG" 2>&1; then
    tail -n 40 "$LOG" >&2
    die "podman build failed (log: $LOG)"
fi
new_id="$(podman image inspect --format '{{.Id}}' "$IMAGE")"
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
    podman rmi "$old_id" >/dev/null 2>&1 || log "old image $old_id still in use, left in place"
fi
steps="$(grep -c '^STEP ' "$LOG" || true)"
cached="$(grep -c '^--> Using cache' "$LOG" || true)"
log "built $IMAGE (${new_id:0:12}, $cached of $(( steps - 1 )) steps after FROM from podman's cache, $(( $(date +%s) - start )) s)"
