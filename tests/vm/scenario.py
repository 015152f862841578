# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real-host scenario, run in order on one Debian VM with Debian's own kernel (test_<suite>.py).

Each step is a test; they share one VM and build on each other, as an operator's runs would:
check mode on the stock host, converge, idempotence, lower rates, rollback, reboots, an admin
override, jumbo frames on the WAN NIC, and rollback after a reboot, compared with snapshots of
`sysctl -a`, `lsmod`, `tc qdisc show`, MTUs and the files under /etc taken before the first run.
"""

from __future__ import annotations

import os
import json
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402  pylint: disable=wrong-import-position

PLAYBOOK = os.path.join(vmlib.ROOT, 'playbooks', 'wan_tune.yml')
ORIGINAL = {}   # per suite: the stock values read before the first run
KEYS = ('net.core.rmem_max', 'net.core.wmem_max', 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem',
        'net.ipv4.tcp_congestion_control', 'net.core.default_qdisc', 'net.core.netdev_max_backlog',
        'net.ipv4.tcp_mtu_probing')


ENV = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_PIPELINING='True', ANSIBLE_FORCE_COLOR='false',
           ANSIBLE_NOCOLOR='1')


def ansible_playbook(inventory, *args):
    """(rc, output, changed) of one run of playbooks/wan_tune.yml."""
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), PLAYBOOK, '-i', inventory]
    proc = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=900, env=ENV, check=False)
    output = proc.stdout + proc.stderr
    recap = re.search(r'^vm\s*:.*changed=(\d+)', output, re.M)
    return proc.returncode, output, int(recap.group(1)) if recap else None


def adhoc(vm, module, module_args, port):
    """(rc, the module's result, output) of one module run on the VM with ``ansible``, connected to ``port``."""
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible'), 'vm', '-i', vm.inv, '-m', module, '-a',
           module_args, '-e', 'ansible_port=%d' % port]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV, check=False)
    head, sep, result = proc.stdout.partition(' => ')
    return proc.returncode, json.loads(result) if sep and head.startswith('vm |') else None, proc.stdout + proc.stderr


class RealHost(object):
    """Subclasses set SUITE, WAN (tap, host address, guest address, queues) and ADMIN_FILE."""

    SUITE = None
    WAN = None
    ADMIN_FILE = None        # where the admin's lower tcp_rmem goes for the override step

    @staticmethod
    def sysctl(vm, key):
        return ' '.join(vm.out('sysctl -n %s' % key).split())

    def run(self, vm, *args, expect_rc=0):
        rc, output, changed = ansible_playbook(vm.inv, *args)
        assert rc == expect_rc, output[-6000:]
        return output, changed

    @staticmethod
    def qdiscs(vm):
        return vmlib.snapshot(vm)['tc']

    def assert_tuned(self, vm, size):
        original = ORIGINAL[self.SUITE]
        assert self.sysctl(vm, 'net.ipv4.tcp_congestion_control') == 'bbr'
        assert self.sysctl(vm, 'net.core.default_qdisc') == 'fq'
        assert self.sysctl(vm, 'net.core.rmem_max') == str(size)
        assert self.sysctl(vm, 'net.core.wmem_max') == str(size)
        rmem, wmem = original['net.ipv4.tcp_rmem'].split(), original['net.ipv4.tcp_wmem'].split()
        assert self.sysctl(vm, 'net.ipv4.tcp_rmem') == '%s %s %d' % (rmem[0], rmem[1], size)
        assert self.sysctl(vm, 'net.ipv4.tcp_wmem') == '%s %s %d' % (wmem[0], wmem[1], size)
        assert self.sysctl(vm, 'net.ipv4.tcp_mtu_probing') == '1'
        modules = vmlib.snapshot(vm)['lsmod']
        assert 'tcp_bbr' in modules and 'sch_fq' in modules
        assert vm.out('cat /etc/modules-load.d/bdp-wan-tune.conf').split()[-2:] == ['tcp_bbr', 'sch_fq']
        self.assert_fq_everywhere(vm)

    @staticmethod
    def nic(vm, name, lines=None):
        """{'RX:': '4096', 'TX:': '4096', 'rx-usecs:': '50', 'txqueuelen': '1000', ...} of one NIC, from the
        snapshot's ethtool lines (now, or ``lines``: the stock ones)."""
        found = {}
        for line in vmlib.snapshot(vm)['nic'] if lines is None else lines:
            words = line.split()
            if words[0] == name:
                found[words[2] if words[1] == 'ring' else words[1]] = words[-1]
        return found

    @staticmethod
    def nic_record(vm):
        return vm.out('cat /var/lib/bdp_wan_tune/nic_settings.json')

    def assert_nic_tuned(self, vm):
        """The e1000e at its rings' maximum and the fixed rx-usecs; its .link file keeps the default naming."""
        fast = self.nic(vm, vm.fast_nic)
        assert (fast['RX:'], fast['TX:'], fast['rx-usecs:']) == ('4096', '4096', '50'), fast
        link = vm.out('cat /etc/systemd/network/*bdp-wan-tune*%s*.link' % vm.fast_nic)
        assert 'RxBufferSize=4096' in link and 'NamePolicy=' in link, link

    def assert_fq_everywhere(self, vm):
        lines = self.qdiscs(vm)
        roots = dict((line.split()[4], line.split()[1]) for line in lines if ' root' in line)
        assert roots[vm.control] == 'fq', lines
        wan = [line for line in lines if ' dev %s ' % vm.wan_nic in line]
        if self.WAN[3] > 1:
            # a multiqueue NIC keeps mq as root, with fq under every TX queue; never one root fq
            assert roots[vm.wan_nic] == 'mq', lines
            children = [line.split()[1] for line in wan if ' parent ' in line]
            assert children == ['fq'] * self.WAN[3], lines
        else:
            assert roots[vm.wan_nic] == 'fq', lines

    def assert_stock(self, vm, modules_still_loaded=False):
        """As before the first run. Before a reboot, modules stay loaded: tcp_bbr (the ssh session of the run
        itself still uses bbr) and sch_fq, and with them the kernel's lists of congestion controls."""
        now = vmlib.snapshot(vm)
        found = vmlib.differences(vm.stock, now)
        if modules_still_loaded:
            # (and inet_diag/tcp_diag, which ss loaded for the live-socket check)
            loaded = set(['tcp_bbr', 'sch_fq', 'inet_diag', 'tcp_diag'])
            assert set(line[2:] for line in found.pop('lsmod', [])) <= loaded, found
            derived = ('net.ipv4.tcp_available_congestion_control', 'net.ipv4.tcp_allowed_congestion_control')
            found['sysctl'] = [line for line in found.get('sysctl', []) if not line[2:].startswith(derived)]
            if not found['sysctl']:
                del found['sysctl']
        assert not found, found

    # ------------------------------------------------------------------ the steps, in order
    def test_01_stock_host(self, host):
        original = ORIGINAL[self.SUITE]
        assert original['net.ipv4.tcp_congestion_control'] == 'cubic'
        assert 'tcp_bbr' not in host.stock['lsmod'] and 'sch_fq' not in host.stock['lsmod']
        roots = [line for line in host.stock['tc'] if ' dev %s root' % host.wan_nic in line]
        assert roots and roots[0].split()[1] == ('mq' if self.WAN[3] > 1 else 'fq_codel'), host.stock['tc']

    def test_02_check_mode_predicts_every_change_and_changes_nothing(self, host):
        output, changed = self.run(host, '-e', 'rate=1g rtt=98', '--check', '--diff')
        assert changed and changed > 0
        assert 'loaded kernel modules (lsmod)' in output and 'tcp_bbr' in output and 'sch_fq' in output
        assert 'net.ipv4.tcp_congestion_control = bbr' in output
        assert '+net.core.rmem_max = 98000000' in output
        assert '+qdisc %s' % ('mq/fq' if self.WAN[3] > 1 else 'fq') in output
        assert '/etc/modules-load.d/bdp-wan-tune.conf' in output
        self.assert_stock(host)

    def test_03_converge(self, host):
        stock = self.nic(host, host.fast_nic)
        assert (stock['RX:'], stock['TX:']) == ('256', '256'), stock      # of 4096 (QEMU's 82574L)
        # Ansible connects through the e1000e: its ring change (the link resets) goes under the commit-confirm timer,
        # confirmed over a new connection through the same NIC, and only then persisted
        output, changed = self.run(host, '-e', 'rate=10g rtt=98', '-e', 'ansible_port=%d' % host.fast_port)
        assert changed > 0
        assert 'rings of %s are under the commit-confirm timer' % host.fast_nic in output, output[-3000:]
        assert 'Confirm the ring change' in output and 'pending' not in self.nic_record(host)
        self.assert_tuned(host, 980000000)
        self.assert_nic_tuned(host)
        # the virtio WAN NIC: its rings are at their maximum already (256 of 256), nothing failed
        wan, stock = self.nic(host, host.wan_nic), self.nic(host, host.wan_nic, host.stock['nic'])
        assert (wan['RX:'], wan['TX:']) == (stock['RX:'], stock['TX:']), output[-3000:]

    def test_04_second_run_changes_nothing(self, host):
        _output, changed = self.run(host, '-e', 'rate=10g rtt=98')
        assert changed == 0

    def test_04_a_ring_change_nobody_confirms_is_put_back_by_the_timer(self, host):
        """The module alone over the e1000e, rings 4096 -> 1024 under a 10 s timer, never confirmed: the timer (a
        transient systemd unit running the module's own ioctl code in Python) puts 4096 back by itself. The NIC is
        the one that routes to a peer (the host side of its network; nothing is sent), as the role's defaults find
        it."""
        rc, result, output = adhoc(host, 'bdp.wan_tune.nic_settings', 'peers=%s rings=1024 coalescing=keep '
                                   'txqueuelen=keep governor=keep confirm_timeout=10' % vmlib.FAST_NET_HOST,
                                   host.fast_port)
        assert rc == 0 and result, output
        assert (result['commit']['method'], result['commit']['state']) == ('systemd', 'pending'), output
        assert result['selected'][host.fast_nic] == 'route to %s' % vmlib.FAST_NET_HOST, output
        # the ring sizes the driver reported after the change (read back by the module: the timer may have put them
        # back by the time this test reads them on a slow VM)
        rings = result['interfaces'][host.fast_nic]['rings']
        assert (rings['status'], rings['after']) == ('changed', {'rx': 1024, 'tx': 1024}), rings
        deadline = time.time() + 90
        while time.time() < deadline and self.nic(host, host.fast_nic)['RX:'] != '4096':
            time.sleep(3)
        assert (self.nic(host, host.fast_nic)['RX:'], self.nic(host, host.fast_nic)['TX:']) == ('4096', '4096')
        log = [json.loads(line) for line in host.out('cat /var/lib/bdp_wan_tune/nic-reverts.log').splitlines()]
        assert (log[-1]['by'], log[-1]['rc'], log[-1]['restored']) == ('timer', 0, '%s rx 4096 tx 4096' % host.fast_nic)
        assert 'RxBufferSize=4096' in host.out('cat /etc/systemd/network/*bdp-wan-tune*%s*.link' % host.fast_nic)

    def test_05_lower_rate_lowers_the_collections_own_values(self, host):
        output, changed = self.run(host, '-e', 'rate=1g rtt=98')
        assert changed > 0
        # the change the timer ended is forgotten, with a warning; the rings stay as the timer put them
        assert 'was not confirmed; the commit-confirm timer put back %s rx 4096 tx 4096' % host.fast_nic in output
        assert 'pending' not in self.nic_record(host)
        self.assert_tuned(host, 98000000)

    def test_06_never_below_what_the_host_had(self, host):
        original = ORIGINAL[self.SUITE]
        self.run(host, '-e', 'rate=10m rtt=10')              # 8 x BDP = 100000 bytes
        assert self.sysctl(host, 'net.core.rmem_max') == original['net.core.rmem_max']
        assert self.sysctl(host, 'net.ipv4.tcp_rmem') == original['net.ipv4.tcp_rmem']
        assert self.sysctl(host, 'net.ipv4.tcp_wmem') == original['net.ipv4.tcp_wmem']
        self.run(host, '-e', 'rate=10m rtt=10 tcp_buffers_allow_lower=true')
        assert self.sysctl(host, 'net.core.rmem_max') == '100000'

    def test_07_rollback_restores_the_stock_host(self, host):
        output, changed = self.run(host, '-e', 'wan_tune_state=absent')
        assert changed > 0
        # modules stay loaded until the next boot; everything else is as before the first run
        self.assert_stock(host, modules_still_loaded=True)
        _output, changed = self.run(host, '-e', 'wan_tune_state=absent')
        assert changed == 0

    def test_08_reboot_brings_everything_back_and_a_run_changes_nothing(self, host):
        self.run(host, '-e', 'rate=1g rtt=98')
        host.reboot()
        self.assert_tuned(host, 98000000)   # from systemd-sysctl, systemd-modules-load and default_qdisc
        self.assert_nic_tuned(host)         # from the .link file, applied by systemd-udevd at boot
        _output, changed = self.run(host, '-e', 'rate=1g rtt=98')
        assert changed == 0

    def test_09_rollback_after_a_reboot(self, host):
        self.run(host, '-e', 'wan_tune_state=absent')
        self.assert_stock(host, modules_still_loaded=True)
        host.reboot()
        self.assert_stock(host)              # nothing loads tcp_bbr or sch_fq any more

    def test_10_admin_override_jumbo_frames_and_reboot(self, host):
        path, line = self.ADMIN_FILE, 'net.ipv4.tcp_rmem = 4096 131072 4194304'
        jumbo = ('-e', 'mtu=9000', '-e', '{"jumbo_mtu_interfaces": ["%s"], "jumbo_mtu_peers": ["%s"]}'
                 % (host.wan_nic, host.peer))
        output, _changed = self.run(host, '-e', 'rate=1g rtt=98', *jumbo)
        assert host.out('cat /sys/class/net/%s/mtu' % host.wan_nic).strip() == '9000'
        host.out("cp -a {0} {0}.bdp-test 2>/dev/null || touch {0}.bdp-test-absent; echo '{1}' >> {0}".format(path, line))
        try:
            host.reboot()
            assert host.out('cat /sys/class/net/%s/mtu' % host.wan_nic).strip() == '9000'
            assert self.sysctl(host, 'net.ipv4.tcp_rmem').endswith(' 4194304')
            output, _changed = self.run(host, '-e', 'rate=1g rtt=98', *jumbo)
            assert '%s sets net.ipv4.tcp_rmem' % path in output, output[-4000:]
            self.assert_tuned(host, 98000000)
        finally:
            host.out('if [ -e {0}.bdp-test-absent ]; then rm -f {0} {0}.bdp-test-absent; '
                     'else mv {0}.bdp-test {0}; fi'.format(path))
        self.run(host, '-e', 'wan_tune_state=absent')
        assert host.out('cat /sys/class/net/%s/mtu' % host.wan_nic).strip() == '1500'
        self.assert_stock(host, modules_still_loaded=True)
