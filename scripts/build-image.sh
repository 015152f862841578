#!/usr/bin/env bash
# Build the local systemd test image localhost/bdp-wan-tune-debian12:latest (also the WAN lab hosts:
# openssh-server, rsync and fpart (fpsync, with dma as its light mail agent), stunnel4, openssl and python3-cryptography
# (the rsync daemon over TLS; community.crypto's modules on the hosts; debootstrap does not resolve the virtual package
# python3-cryptography depends on, so python3-cffi-backend is named) and nftables (the TLS daemon's source gate) for
# the transfer lab, whose hosts reach no mirror)
# (no container registry is reachable: debootstrap + podman import).
#
# The image is labelled with the sha256 of this script; when an image with
# the same label exists the build is skipped.  Editing this script rebuilds.
#   FORCE=1 scripts/build-image.sh      rebuild anyway
#   DEBIAN_MIRROR=URL scripts/build-image.sh   override the mirror (default: the one apt uses here)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${BDP_IMAGE:-localhost/bdp-wan-tune-debian12:latest}"
LABEL="org.bdp.wan_tune.build-hash"
SUITE=bookworm
PACKAGES=systemd,systemd-sysv,dbus,python3,iproute2,procps,kmod,iperf3,openssh-client,openssh-server,rsync,fpart,bsd-mailx,dma,ca-certificates,sudo,iputils-ping,stunnel4,openssl,python3-cryptography,python3-cffi-backend,nftables
ROOTFS="$ROOT/.cache/rootfs-debian12"

export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/scripts/containers.conf}"

log() { printf 'build-image: %s\n' "$*"; }

HASH="$(cat "${BASH_SOURCE[0]}" "$ROOT/scripts/debian-mirror.sh" | sha256sum | cut -c1-16)"

if [ "${FORCE:-0}" != "1" ] && podman image exists "$IMAGE"; then
    have="$(podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null || true)"
    if [ "$have" = "$HASH" ]; then
        log "$IMAGE is up to date ($LABEL=$HASH)"
        exit 0
    fi
    log "$IMAGE has $LABEL='$have', want $HASH: rebuilding"
fi

# shellcheck source=scripts/debian-mirror.sh
. "$ROOT/scripts/debian-mirror.sh"
MIRROR="$(debian_mirror)"

start=$(date +%s)
log "debootstrap $SUITE${MIRROR:+ from $MIRROR} into $ROOTFS (about 1-2 min)"
rm -rf "$ROOTFS"
mkdir -p "$ROOT/.cache"
trap 'rm -rf "$ROOTFS"' EXIT
# shellcheck disable=SC2086  # no mirror argument: debootstrap's default
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" $MIRROR \
    >"$ROOT/.cache/debootstrap.log" 2>&1; then
    tail -n 30 "$ROOT/.cache/debootstrap.log" >&2
    [ -f "$ROOTFS/debootstrap/debootstrap.log" ] && tail -n 30 "$ROOTFS/debootstrap/debootstrap.log" >&2
    echo "build-image: debootstrap failed (log: $ROOT/.cache/debootstrap.log)" >&2
    exit 1
fi

log "making the rootfs boot cleanly under systemd in a container"
# Units that hang, poke host devices, or reach the network in a privileged
# container.  Masking = symlink to /dev/null (what `systemctl mask` does).
MASK=(
    getty.target getty@.service serial-getty@.service console-getty.service
    container-getty@.service
    systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
    systemd-udev-trigger.service systemd-udev-settle.service
    systemd-firstboot.service systemd-remount-fs.service
    sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount
    sys-fs-fuse-connections.mount dev-hugepages.mount
    proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount systemd-binfmt.service
    apt-daily.timer apt-daily-upgrade.timer apt-daily.service apt-daily-upgrade.service
    e2scrub_all.timer e2scrub_reap.service fstrim.timer
)
for u in "${MASK[@]}"; do
    ln -sfn /dev/null "$ROOTFS/etc/systemd/system/$u"
done
rm -f "$ROOTFS/etc/systemd/system/getty.target.wants/"*

echo bdp-wan-tune > "$ROOTFS/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$ROOTFS/etc/hosts"
: > "$ROOTFS/etc/resolv.conf"
# Empty machine-id: every container gets its own at boot.
: > "$ROOTFS/etc/machine-id"
rm -f "$ROOTFS/var/lib/dbus/machine-id"

# systemd-sysctl.service (static, pulled in by sysinit.target) applies
# /usr/lib/sysctl.d, /etc/sysctl.d and /run/sysctl.d at boot.  It has
# ConditionPathIsReadWrite=/proc/sys/, which holds with --privileged.
# Debian's stock sysctl files are left exactly as shipped.
mkdir -p "$ROOTFS/etc/sysctl.d"
if [ ! -e "$ROOTFS/lib/systemd/system/systemd-sysctl.service" ]; then
    echo "build-image: systemd-sysctl.service missing from rootfs" >&2
    exit 1
fi

# Smaller image. The python3-cryptography package stays in apt's cache: Molecule rsync_daemon removes it from a host
# (which cannot reach a mirror) to run check mode on a host without it, then installs it again from there.
find "$ROOTFS/var/cache/apt/archives" -name '*.deb' ! -name 'python3-cryptography_*' -delete
rm -rf "$ROOTFS/var/lib/apt/lists/"* "$ROOTFS/var/log/"*.log "$ROOTFS/debootstrap"

old_id="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
log "podman import -> $IMAGE"
tar -C "$ROOTFS" --numeric-owner -c . | podman import --quiet \
    --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change 'ENV container=podman' \
    --change "LABEL $LABEL=$HASH" \
    - "$IMAGE" >/dev/null
new_id="$(podman image inspect --format '{{.Id}}' "$IMAGE")"
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
    podman rmi "$old_id" >/dev/null 2>&1 || log "old image $old_id still in use, left in place"
fi
rm -rf "$ROOTFS"
trap - EXIT
log "built $IMAGE ($new_id, $(( $(date +%s) - start )) s)"
