# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real-kernel test VMs: Debian with Debian's own kernel under qemu (KVM where it works, else TCG).

Disk images come from scripts/build-vm.sh (.cache/vm/SUITE). Each VM boots a throw-away qcow2
overlay over the pristine image, so every test session starts from a stock host. Ansible and the
tests reach it over SSH on a loopback-forwarded port; a second NIC sits on a tap device on this
machine with addresses in 198.18.0.0/15 (multiqueue when asked), and qemu's user network is
restricted (restrict=on): the guest reaches nothing but the forwarded port.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, '.cache', 'vm')
KVM_BROKEN = os.path.join(CACHE, 'kvm-broken')
CONTROL_MAC = '52:54:00:bd:00:01'   # matched by the image's 10-control.network (DHCP)
FAST_NIC_MAC = '52:54:00:bd:02:01'  # the e1000e NIC (QEMU's Intel 82574L) that proves rings and coalescing
FAST_NIC_ADDRESS = '198.18.200.2/24'
FAST_NET, FAST_NET_HOST = '198.18.200.0/24', '198.18.200.1'    # QEMU's user network of that NIC, and its host side
SSH_OPTS = ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR',
            '-o', 'ConnectTimeout=5', '-o', 'BatchMode=yes', '-o', 'ServerAliveInterval=5']


class VMError(RuntimeError):
    pass


_ACCEL = []   # the accelerator that worked in this process: KVM is tried once, TCG after a failure


class KvmBroken(VMError):
    pass


class GuestPanic(VMError):
    """The guest kernel panicked before SSH answered.

    Seen here under TCG only, early in boot before userspace (e.g. "Oops: int3 ... Fatal exception in interrupt"
    at 3 s, on a fresh overlay before any test had run): the emulator, not the host under test. A boot that
    panics is retried with a power cycle (PANIC_RETRIES times), and each retry is reported as a warning with
    the console kept; a panic after the host came up, or on every retry, still fails the test.
    """


PANIC = 'Kernel panic - not syncing'
PANIC_RETRIES = 2
# How long a boot or a reboot may take before SSH answers. Under TCG a boot takes 25-90 s on a quiet machine; on a
# loaded one the guest crawled through its initramfs for 229 s (the two VMs run side by side, with whatever else
# runs on the machine), so the bound is generous: it costs nothing when the guest is quick.
BOOT_TIMEOUT = 600


def accelerator():
    """'kvm' where /dev/kvm opens (and has not failed in this process), else 'tcg'; BDP_VM_ACCEL overrides.

    Nested KVM can open /dev/kvm and then fail inside the guest ("KVM internal error"); VM.start()
    notices that within seconds and boots again with TCG."""
    if os.environ.get('BDP_VM_ACCEL') in ('tcg', 'kvm'):
        return os.environ['BDP_VM_ACCEL']
    if _ACCEL:
        return _ACCEL[0]
    if files_text(KVM_BROKEN) == os.uname()[2]:
        return 'tcg'
    return 'kvm' if os.access('/dev/kvm', os.R_OK | os.W_OK) else 'tcg'


def files_text(path):
    try:
        with open(path, errors='replace') as handle:
            return handle.read()
    except OSError:
        return None


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class VM(object):
    """One Debian VM. ``wan`` = (tap name, host address/prefix, guest address/prefix, queues) or None."""

    def __init__(self, suite, workdir, wan=None, memory=1024, cpus=2):
        self.suite = suite
        self.image = os.path.join(CACHE, suite)
        if not os.path.isfile(os.path.join(self.image, 'disk.img')):
            raise VMError('no VM image for %s: run scripts/build-vm.sh %s' % (suite, suite))
        self.workdir = workdir
        self.wan = wan
        self.memory = memory
        self.cpus = cpus
        self.port = free_port()
        self.fast_port = free_port()        # SSH over the e1000e: the control connection on the NIC whose rings change
        self.key = os.path.join(workdir, 'id_ed25519')
        self.console = os.path.join(workdir, 'console.log')
        self.control_path = os.path.join(workdir, 'ssh.sock')
        self.qemu_err = os.path.join(workdir, 'qemu.err')
        self.proc = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout=BOOT_TIMEOUT):
        self.accel = accelerator()
        self._make_disk()
        try:
            self._boot_retrying(timeout)
        except KvmBroken:
            self.proc.kill()
            self.proc.wait(10)
            _ACCEL[:] = ['tcg']
            with open(KVM_BROKEN, 'w') as handle:     # remembered for this host kernel
                handle.write(os.uname()[2])
            self.accel = 'tcg'
            self._boot_retrying(timeout)
        if not _ACCEL:
            _ACCEL.append(self.accel)
        if self.wan:
            self._wan_network()
        return self

    def _boot_retrying(self, timeout):
        """Launch qemu on the disk and wait for SSH; power-cycle when the guest kernel panics during boot."""
        for attempt in range(PANIC_RETRIES + 1):
            self._launch()
            try:
                self.wait_ssh(timeout)
                return
            except GuestPanic as panic:
                self._keep_panic(panic, 'boot', attempt + 1 if attempt < PANIC_RETRIES else None)
                if attempt == PANIC_RETRIES:
                    raise

    def _keep_panic(self, panic, when, retry):
        """Stop the panicked qemu, keep its console, and say so (stderr and a pytest warning)."""
        self.proc.kill()
        self.proc.wait(10)
        kept = '%s.panic-%d' % (self.console, time.time())
        shutil.copy(self.console, kept)
        if retry is None:
            return
        message = ('%s: the guest kernel panicked during %s (%s): power-cycling the VM, retry %d of %d; '
                   'console kept in %s' % (self.suite, when, self.accel, retry, PANIC_RETRIES, kept))
        print('vmlib: ' + message, file=sys.stderr)
        warnings.warn(message + '\n' + str(panic).splitlines()[-1])

    def _make_disk(self):
        """A throw-away qcow2 overlay over the pristine image (made once per VM: a power cycle keeps it)."""
        os.makedirs(self.workdir, exist_ok=True)
        shutil.copy(os.path.join(self.image, 'id_ed25519'), self.key)
        os.chmod(self.key, 0o600)
        subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'raw', '-b',
                        os.path.join(self.image, 'disk.img'), self.disk], check=True)

    @property
    def disk(self):
        return os.path.join(self.workdir, 'disk.qcow2')

    def _launch(self):
        disk = self.disk
        argv = ['qemu-system-x86_64', '-accel', self.accel, '-m', str(self.memory), '-smp', str(self.cpus),
                '-nographic', '-monitor', 'none', '-serial', 'file:%s' % self.console,
                '-kernel', os.path.join(self.image, 'vmlinuz'), '-initrd', os.path.join(self.image, 'initrd.img'),
                '-append', 'root=/dev/vda rw console=ttyS0 net.ifnames=1',
                '-drive', 'file=%s,format=qcow2,if=virtio,cache=unsafe' % disk,
                '-netdev', 'user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:%d-:22' % self.port,
                '-device', 'virtio-net-pci,netdev=n0,mac=%s' % CONTROL_MAC,
                # a 1G Intel NIC whose rings (256 of 4096) and coalescing the nic role can change for real; its own
                # user network, isolated (restrict=on), carries no test traffic but, for the steps that connect
                # through it (fast_port), the Ansible connection, so that its ring change goes under the timer
                '-netdev', 'user,id=n2,restrict=on,net=%s,host=%s,hostfwd=tcp:127.0.0.1:%d-%s:22' % (
                    FAST_NET, FAST_NET_HOST, self.fast_port, FAST_NIC_ADDRESS.split('/', maxsplit=1)[0]),
                '-device', 'e1000e,netdev=n2,mac=%s' % FAST_NIC_MAC]
        if self.wan:
            tap, host_addr, _guest, queues = self.wan
            self._tap_up(tap, host_addr, queues)
            netdev = 'tap,id=n1,ifname=%s,script=no,downscript=no' % tap
            device = 'virtio-net-pci,netdev=n1,mac=%s' % self.wan_mac
            if queues > 1:
                netdev += ',queues=%d' % queues
                device += ',mq=on,vectors=%d' % (2 * queues + 2)
            argv += ['-netdev', netdev, '-device', device]
        open(self.console, 'w').close()      # this boot's console only (a retry keeps the last one aside)
        self.started = time.time()
        with open(self.qemu_err, 'w') as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)

    @property
    def wan_mac(self):
        return '52:54:00:bd:01:%02x' % (sum(self.suite.encode()) % 256)

    def _tap_up(self, tap, host_addr, queues):
        subprocess.run(['ip', 'link', 'del', tap], capture_output=True, check=False)
        cmd = ['ip', 'tuntap', 'add', 'dev', tap, 'mode', 'tap'] + (['multi_queue'] if queues > 1 else [])
        subprocess.run(cmd, check=True)
        subprocess.run(['ip', 'link', 'set', 'dev', tap, 'mtu', '9000', 'up'], check=True)
        subprocess.run(['ip', 'addr', 'add', host_addr, 'dev', tap], check=True)

    def _wan_network(self):
        """Give the WAN NIC its address through systemd-networkd (the host's own boot machinery)."""
        _tap, _host, guest_addr, _queues = self.wan
        text = '[Match]\nMACAddress=%s\n\n[Network]\nAddress=%s\nLinkLocalAddressing=no\n' % (self.wan_mac, guest_addr)
        fast = '[Match]\nMACAddress=%s\n\n[Network]\nAddress=%s\nLinkLocalAddressing=no\n' % (FAST_NIC_MAC, FAST_NIC_ADDRESS)
        self.ssh('cat > /etc/systemd/network/20-wan.network <<"EOF"\n%sEOF\n'
                 'cat > /etc/systemd/network/30-fast.network <<"EOF"\n%sEOF\nnetworkctl reload' % (text, fast))
        deadline = time.time() + 60
        while time.time() < deadline:
            if guest_addr.split('/')[0] in self.ssh('ip -4 -o addr show', check=False)[1]:
                return
            time.sleep(1)
        raise VMError('%s: the WAN NIC did not get %s' % (self.suite, guest_addr))

    def wait_ssh(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise VMError('qemu exited (%s): %s' % (self.proc.returncode, self._tail()))
            if self.accel == 'kvm' and self._kvm_broken():
                raise KvmBroken('KVM failed inside the guest')
            if PANIC in (files_text(self.console) or ''):
                raise GuestPanic('%s: kernel panic during boot; console: %s' % (self.suite, self._tail()))
            rc, out, _err = self.ssh('cat /proc/sys/kernel/random/boot_id', check=False, timeout=15)
            if rc == 0 and out.strip():
                self.boot_id = out.strip()
                self._master()
                return
            time.sleep(2)
        raise VMError('%s: no SSH after %d s; console: %s' % (self.suite, timeout, self._tail()))

    def _kvm_broken(self):
        """Nested KVM here either reports an internal error or hangs before the kernel prints a line."""
        if 'KVM internal error' in (files_text(self.qemu_err) or ''):
            return True
        return time.time() - self.started > 20 and 'Linux version' not in (files_text(self.console) or '')

    def reboot(self, timeout=BOOT_TIMEOUT):
        """systemctl reboot, then wait for a new boot (a different boot_id) to answer on SSH."""
        old = self.boot_id
        self.ssh('systemctl reboot', check=False, timeout=15)
        self._master('exit')
        deadline = time.time() + timeout
        while time.time() < deadline:
            time.sleep(3)
            try:
                self.wait_ssh(max(5, deadline - time.time()))
            except GuestPanic as panic:
                # The host shut down cleanly and its next boot panicked in the emulator: the power cycle
                # boots the same disk, as a power cycle of a real host after a hung reboot would.
                self._keep_panic(panic, 'a reboot', 1)
                self._boot_retrying(max(60, deadline - time.time()))
            if self.boot_id != old:
                return
        raise VMError('%s: did not reboot within %d s' % (self.suite, timeout))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.ssh('systemctl poweroff', check=False, timeout=10)
            self._master('exit')
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.wan:
            subprocess.run(['ip', 'link', 'del', self.wan[0]], capture_output=True, check=False)

    def _tail(self, lines=15):
        try:
            with open(self.console, errors='replace') as handle:
                return ''.join(handle.readlines()[-lines:])
        except OSError:
            return '(no console log)'

    # ------------------------------------------------------------------ access
    def _master(self, operation=None):
        """Start (or with ``operation='exit'`` stop) the SSH master connection that the test's own commands share:
        under TCG every new SSH connection costs the guest a key exchange (about a second). Without a master,
        ``ssh`` connects directly."""
        argv = ['ssh', '-i', self.key, '-p', str(self.port)] + SSH_OPTS + ['-o', 'ControlPath=' + self.control_path]
        argv += ['-O', operation] if operation else ['-M', '-N', '-f', '-o', 'ControlPersist=yes']
        subprocess.run(argv + ['root@127.0.0.1'], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30, check=False)

    def ssh(self, command, check=True, timeout=120):
        argv = ['ssh', '-i', self.key, '-p', str(self.port)] + SSH_OPTS
        argv += ['-o', 'ControlPath=' + self.control_path, 'root@127.0.0.1', command]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            if check:
                raise VMError('%s: timed out: %s' % (self.suite, command))
            return 255, '', 'timeout'
        if check and proc.returncode != 0:
            raise VMError('%s: %s failed (%d): %s%s'
                          % (self.suite, command, proc.returncode, proc.stdout, proc.stderr))
        return proc.returncode, proc.stdout, proc.stderr

    def out(self, command):
        return self.ssh(command)[1]

    def inventory(self, path, **host_vars):
        """A YAML inventory file with this VM as host ``vm`` and ``host_vars``."""
        values = {'ansible_host': '127.0.0.1', 'ansible_port': self.port, 'ansible_user': 'root',
                  'ansible_ssh_private_key_file': self.key,
                  'ansible_ssh_common_args': ' '.join(SSH_OPTS),
                  'ansible_python_interpreter': '/usr/bin/python3'}
        values.update(host_vars)
        with open(path, 'w') as handle:
            json.dump({'all': {'hosts': {'vm': values}}}, handle, indent=2)
        return path

    def interface(self, mac):
        """The guest's name for the NIC with ``mac``."""
        for line in self.out('ip -o link show').splitlines():
            if 'link/ether %s ' % mac in line:
                return line.split(':', 2)[1].strip()
        raise VMError('%s: no NIC with MAC %s' % (self.suite, mac))


# Keys whose value changes while the host runs (counters, values random at each read): left out of every
# comparison. Keys the kernel derives at boot (memory, free pages, CPUs, seeds) are found by rule instead:
# tests/vm/boot_derived.py compares stock boots and records them in fixtures/boot_derived.json.
COUNTERS = re.compile(r'^(kernel\.random\.|kernel\.ns_last_pid|kernel\.pty\.nr|fs\.(dentry-state|file-nr|inode-nr|'
                      r'inode-state|aio-nr|quota\.)|net\.netfilter\.nf_conntrack_count|kernel\.tainted|'
                      r'net\.ipv6\.conf\.[^.]+\.stable_secret|vm\.stat_refresh|kernel\.perf_event_max_sample_rate|'
                      # random, drawn at each boot once a driver asks for it (e1000e's RSS)
                      r'net\.core\.netdev_rss_key)')
BOOT_DERIVED_FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'boot_derived.json')


# A key the collection writes that the kernel also derives at boot (net.ipv4.tcp_mem from the free pages) is still
# compared, each number within this share of its stock value: two boots of one VM move it by a few pages, while any
# value the collection writes or leaves behind differs by far more.
BOOT_NOISE = 0.001


def boot_derived(path=BOOT_DERIVED_FIXTURE):
    """(left out, compared within BOOT_NOISE): the keys the comparison of stock boots found derived at boot (in any
    suite), split by whether the collection writes them or they follow from what it writes (boot_derived.py)."""
    import boot_derived as finder   # pylint: disable=import-outside-toplevel
    with open(path) as handle:
        recorded = json.load(handle)
    protected = finder.protected_keys()
    found = set()
    for suite in recorded['suites'].values():
        found.update(suite['keys'])
    kept = set(key for key in found if finder.is_protected(key, protected))
    return frozenset(found - kept), frozenset(kept)


SNAPSHOT = r"""
echo '=== sysctl'; sysctl -a 2>/dev/null | sort
echo '=== lsmod'; lsmod | awk 'NR > 1 { print $1 }' | sort
echo '=== tc'; tc qdisc show
echo '=== mtu'; ip -o link show | awk '{ print $2, $4, $5 }'
echo '=== nic'; for n in $(ls /sys/class/net); do
  ethtool -g "$n" 2>/dev/null | awk -v n="$n" '/^Current/ { c = 1 } c && /^(RX|TX):/ { print n, "ring", $1, $2 }'
  ethtool -c "$n" 2>/dev/null | awk -v n="$n" '/^Adaptive RX|^rx-usecs:/ { print n, $0 }'
  echo "$n txqueuelen $(cat /sys/class/net/$n/tx_queue_len)"
done
echo '=== files'; {
  find /etc /var/lib/bdp_wan_tune -xdev -type l -printf '%p -> %l\n' 2>/dev/null
  find /etc /var/lib/bdp_wan_tune -xdev -type f -print0 2>/dev/null | xargs -0r sha256sum |
    sed -E 's/^([0-9a-f]{16})[0-9a-f]* [ *](.*)$/\2 \1/'
} | sort
"""


_BOOT_DERIVED = []


def _boot_derived():
    if not _BOOT_DERIVED:
        _BOOT_DERIVED.extend(boot_derived())
    return _BOOT_DERIVED


def left_out(key):
    """Whether the snapshot leaves this sysctl key out: a runtime counter, or derived at boot and not protected."""
    return bool(COUNTERS.match(key)) or key in _boot_derived()[0]


def same_value(key, old, new):
    """Whether two values of a sysctl key are the same host state: equal, or, for a protected key the kernel derives
    at boot, the same count of numbers each within BOOT_NOISE of the old one."""
    if old == new:
        return True
    if key not in _boot_derived()[1]:
        return False
    try:
        then, now = [int(x) for x in old.split()], [int(x) for x in new.split()]
    except ValueError:
        return False
    return len(then) == len(now) and all(abs(b - a) <= BOOT_NOISE * abs(a) for a, b in zip(then, now))


def snapshot(vm):
    """What the tier compares: sysctl -a (less counters and boot-derived keys), loaded modules, qdiscs, MTUs, the
    NICs' rings, coalescing and queue lengths (ethtool, which the image has for the tier, not for the roles), and
    the files under /etc."""
    sections, name = {}, None
    for line in vm.out(SNAPSHOT).splitlines():
        if line.startswith('=== '):
            name = line[4:]
            sections[name] = []
        elif name == 'sysctl' and left_out(line.partition(' = ')[0]):
            continue
        elif name:
            sections[name].append(line)
    return sections


def differences(before, after, sections=None):
    """Lines that differ per section ('-' before, '+' after), for an assertion message (sysctl keys by same_value)."""
    found = {}
    for name in sections or sorted(set(before) | set(after)):
        old, new = before.get(name, []), after.get(name, [])
        gone = [line for line in old if line not in set(new)]
        added = [line for line in new if line not in set(old)]
        if name == 'sysctl':
            now = dict(line.partition(' = ')[::2] for line in added)
            then = dict(line.partition(' = ')[::2] for line in gone)
            same = set(key for key in set(now) & set(then) if same_value(key, then[key], now[key]))
            gone = [line for line in gone if line.partition(' = ')[0] not in same]
            added = [line for line in added if line.partition(' = ')[0] not in same]
        if gone or added:
            found[name] = ['- ' + line for line in gone] + ['+ ' + line for line in added]
    return found
