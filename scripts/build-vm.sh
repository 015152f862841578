#!/usr/bin/env bash
# Build the real-kernel test VMs: Debian root filesystems with Debian's own kernel
# (linux-image-amd64), turned into ext4 disk images, for tests/vm (qemu, TCG or KVM).
#   scripts/build-vm.sh [SUITE ...]        default: bookworm trixie
# Per suite, in .cache/vm/SUITE/: disk.img (raw ext4, the pristine host; tests boot a
# qcow2 overlay over it), vmlinuz, initrd.img, and the root login key id_ed25519.
# A suite is rebuilt when this script changes (its hash is in .cache/vm/SUITE/stamp).
# Suites are built in parallel (about 2.5 min here, about 900 MB each).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/debian-mirror.sh
. "$ROOT/scripts/debian-mirror.sh"
CACHE="$ROOT/.cache/vm"
HASH="$(cat "${BASH_SOURCE[0]}" "$ROOT/scripts/debian-mirror.sh" | sha256sum | cut -c1-16)"
# What a small stock Debian server has, plus the kernel and what the roles call:
# iproute2 (ip, tc, ss), kmod (modprobe), procps (sysctl), iputils-ping (jumbo proof); ethtool for the tier's own
# reading of rings and coalescing (the nic role does not need it: it uses the ioctl).
PACKAGES=systemd,systemd-sysv,udev,dbus,python3,iproute2,procps,kmod,openssh-server,iputils-ping,ethtool,linux-image-amd64,initramfs-tools
SUITES=("$@")
[ "${#SUITES[@]}" -gt 0 ] || SUITES=(bookworm trixie)

log() { printf 'build-vm: %s\n' "$*"; }

# A debootstrap killed half-way (the machine restarted) leaves /proc mounted inside its tree: unmount what is under
# it, deepest first, so that the tree can be removed.
unmount_under() {
    local mount
    awk -v t="$1/" 'index($2 "/", t) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mount; do
        umount -l "$mount"
    done
}

build() {
    local suite="$1" out="$CACHE/$1" tree="$CACHE/$1.tree" mirror
    if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$HASH" ] && [ -f "$out/disk.img" ]; then
        log "$suite is up to date ($out)"
        return 0
    fi
    local start
    start=$(date +%s)
    unmount_under "$tree"
    rm -rf "$tree" "$out"
    mkdir -p "$CACHE"
    mirror="$(debian_mirror)"
    log "$suite: debootstrap with Debian's kernel${mirror:+ from $mirror} (about 3 min)"
    # shellcheck disable=SC2086  # no mirror argument: debootstrap's default
    if ! debootstrap --variant=minbase --include="$PACKAGES" "$suite" "$tree" $mirror \
        >"$CACHE/$suite-debootstrap.log" 2>&1; then
        tail -n 30 "$CACHE/$suite-debootstrap.log" >&2
        echo "build-vm: debootstrap $suite failed (log: $CACHE/$suite-debootstrap.log)" >&2
        rm -rf "$tree"
        return 1
    fi

    # The root login of the tests (key only), and how the VM comes up.
    mkdir -p "$out" "$tree/root/.ssh"
    ssh-keygen -q -t ed25519 -N '' -C "bdp-wan-tune-vm-$suite" -f "$out/id_ed25519"
    install -m 0600 "$out/id_ed25519.pub" "$tree/root/.ssh/authorized_keys"
    chmod 0700 "$tree/root/.ssh"
    printf 'PermitRootLogin prohibit-password\nUseDNS no\n' > "$tree/etc/ssh/sshd_config.d/bdp-wan-tune-test.conf"
    echo "bdp-vm-$suite" > "$tree/etc/hostname"
    printf '127.0.0.1\tlocalhost\n127.0.1.1\tbdp-vm-%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$suite" \
        > "$tree/etc/hosts"
    printf '/dev/vda / ext4 defaults 0 1\n' > "$tree/etc/fstab"
    # The first NIC (qemu user networking, the control connection and default route) takes DHCP;
    # tests give further NICs their addresses through their own .network files.
    cat > "$tree/etc/systemd/network/10-control.network" <<'EOF'
[Match]
MACAddress=52:54:00:bd:00:01

[Network]
DHCP=ipv4
EOF
    : > "$tree/etc/machine-id"
    # Enable networkd, sshd and the serial console as `systemctl enable` would, without a running systemd.
    chroot "$tree" systemctl enable systemd-networkd.service ssh.service serial-getty@ttyS0.service \
        >/dev/null 2>&1
    # Units that only slow a test boot: timers that start apt or fstrim.
    for u in apt-daily.timer apt-daily-upgrade.timer fstrim.timer e2scrub_all.timer; do
        ln -sfn /dev/null "$tree/etc/systemd/system/$u"
    done
    cp -L "$tree/vmlinuz" "$out/vmlinuz"
    cp -L "$tree/initrd.img" "$out/initrd.img"
    rm -rf "$tree/var/cache/apt/archives/"*.deb "$tree/var/lib/apt/lists/"* "$tree/debootstrap"
    mke2fs -q -t ext4 -L root -d "$tree" "$out/disk.img" 2G
    rm -rf "$tree"
    echo "$HASH" > "$out/stamp"
    log "$suite: built $out ($(( $(date +%s) - start )) s)"
}

pids=()
for suite in "${SUITES[@]}"; do
    build "$suite" &
    pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do
    wait "$pid" || rc=1
done
exit "$rc"
