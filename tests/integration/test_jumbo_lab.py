# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jumbo frames in the WAN lab, through playbooks/wan_tune.yml as users run it (-e mtu=9000).

Two lab containers (tests/lab/wanlab.py, lab name bdp-lab-jumbo) joined by the emulated link;
their wan0 starts at MTU 1500 and is managed by systemd-networkd, as a real host's WAN
interface would be.  The lab's path MTU decides whether 9000-byte frames get through:

* path MTU 9000: --check --diff shows the plan and changes nothing; the run raises both hosts to
  9000, proves the path (ICMP at full size and a TCP exchange with 8948-byte segments), confirms
  and persists (networkd drop-in); a second run changes nothing; a networkd restart brings 9000
  back from the drop-in; wan_tune_state=absent restores 1500 and removes the drop-in.
* path MTU 1500: the proof finds the black hole, both hosts are restored to 1500, the run fails
  naming the peer and the sizes, nothing is persisted, the hosts still answer over the link.
* bad input fails before anything changes.
* the commit-confirm timer (a transient systemd timer in the lab host) restores an unconfirmed
  change by itself, and a late confirmation is refused.

A real restart of a host cannot be shown here (the lab's wan0 is a TUN device its delay line
holds; it does not survive the host's network namespace); molecule/jumbo_mtu restarts
containers for systemd-networkd and ifupdown.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'lab'))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position
from labenv import ansible_env, fetch_debs  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the lab needs root (namespaces, TUN, podman)')

NAME = 'bdp-lab-jumbo'
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'wan_tune.yml')
DROPIN = '/etc/systemd/network/10-wan0.network.d/90-bdp-wan-tune-mtu.conf'
BASE = ['-e', json.dumps({'rate': '1g', 'rtt': 20, 'wan_tune_become': False})]


class JumboLab(object):
    def __init__(self, lab, inventory):
        self.lab = lab
        self.inventory = inventory

    def playbook(self, *args, playbook=PLAYBOOK, timeout=900):
        cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', self.inventory, playbook]
        proc = subprocess.run(cmd + BASE + list(args), capture_output=True, text=True, env=ansible_env(),
                              timeout=timeout, check=False)
        out = proc.stdout + proc.stderr
        changed = dict((host, int(count)) for host, count in re.findall(r'^(\S+)\s*:\s*ok=\d+\s+changed=(\d+)', out,
                                                                        re.M))
        return proc.returncode, out, changed

    def ansible(self, host, module_args, *args):
        cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible'), '-i', self.inventory,
               self.lab.host_name(host), '-m', 'bdp.wan_tune.link_mtu', '-a', module_args] + list(args)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), timeout=300, check=False)
        return proc.returncode, proc.stdout + proc.stderr

    def sh(self, host, command, check=True):
        proc = self.lab.exec(host, ['sh', '-c', command], timeout=60)
        if check:
            assert proc.returncode == 0, '%s on %s: %s%s' % (command, host, proc.stdout, proc.stderr)
        return proc.stdout.strip()

    def mtu(self, host):
        return int(self.sh(host, 'cat /sys/class/net/wan0/mtu'))

    def exists(self, host, path):
        return self.lab.exec(host, ['test', '-e', path]).returncode == 0

    def ping(self, host, payload, count=2):
        other = self.lab.address('B' if host == 'A' else 'A')
        return self.lab.exec(host, ['ping', '-M', 'do', '-s', str(payload), '-c', str(count), '-W', '2',
                                    other]).returncode == 0


def networkd_manages_wan0(jlab, host):
    """Give wan0 a .network file with its address and let systemd-networkd manage it (no udev in the lab)."""
    address = jlab.lab.address(host)
    jlab.sh(host, 'mkdir -p /etc/systemd/network /etc/systemd/system/systemd-networkd.service.d && '
                  'printf "[Service]\\nReadOnlyPaths=/sys\\n" '
                  '> /etc/systemd/system/systemd-networkd.service.d/10-no-udev.conf && '
                  'printf "[Match]\\nName=wan0\\n\\n[Network]\\nLinkLocalAddressing=no\\nIPv6AcceptRA=no\\n\\n'
                  '[Address]\\nAddress=%s/30\\nBroadcast=no\\n" > /etc/systemd/network/10-wan0.network && '
                  'systemctl daemon-reload && systemctl enable --now systemd-networkd >/dev/null 2>&1' % address)
    for _attempt in range(30):
        if '(configured)' in jlab.sh(host, 'networkctl status wan0 --no-pager', check=False):
            return
        time.sleep(1)
    links = jlab.sh(host, 'networkctl --no-pager', check=False)
    pytest.fail('networkd did not configure wan0 on %s: %s' % (host, links))


@pytest.fixture(scope='module')
def jlab(tmp_path_factory):
    assert not [item for item in wanlab.leftovers() if NAME in item], 'lab %s already exists' % NAME
    lab = wanlab.Lab(rate='1g', rtt=20, mtu=1500, path_mtu=9000, hosts='containers', name=NAME)
    lab.up()
    try:
        inventory = str(tmp_path_factory.mktemp('jumbo') / 'inventory.ini')
        with open(inventory, 'w') as handle:
            handle.write('[lab]\n%s jumbo_mtu_address=%s\n%s jumbo_mtu_address=%s\n[lab:vars]\n'
                         'ansible_connection=podman_nsenter\n'
                         'ansible_python_interpreter=/usr/bin/python3\n'
                         % (lab.host_name('A'), lab.address('A'), lab.host_name('B'), lab.address('B')))
        jumbo = JumboLab(lab, inventory)
        for host in 'AB':
            networkd_manages_wan0(jumbo, host)
        yield jumbo
    finally:
        lab.down()
        left = [item for item in wanlab.leftovers() if NAME in item]
        assert not left, 'the lab left things behind: %s' % left


def test_bad_input_fails_before_anything_changes(jlab):
    cases = [
        # refused by the validation play with linkmtu's own messages (parse_mtu, parse_peer), as the module would
        ({'mtu': 575},
         'jumbo_mtu_target (-e mtu=...): 575 is outside 576..65535; expected a whole number of bytes from 576'),
        ({'mtu': 65536}, '65536 is outside 576..65535'),
        ({'mtu': '9k'}, "'9k' is not a whole number of bytes in digits 0-9 only"),
        ({'mtu': '+9000'}, "'+9000' is not a whole number of bytes in digits 0-9 only"),
        ({'mtu': 9000, 'jumbo_mtu_peers': ['not a host']},
         "peer 'not a host' is neither an IP address nor a valid host name"),
        ({'mtu': 9000, 'jumbo_mtu_peers': ['224.0.0.1']}, "peer '224.0.0.1' is not a unicast address"),
        ({'mtu': 9000, 'jumbo_mtu_peers': ['no-such-peer.invalid']},
         "peer 'no-such-peer.invalid' does not resolve on this host"),
        ({'mtu': 9000, 'jumbo_mtu_interfaces': ['wan9']},
         'interface wan9 does not exist on this host (named in interfaces); interfaces here: wan0.'),
    ]
    for extra, words in cases:
        rc, out, _changed = jlab.playbook('-e', json.dumps(extra), '--tags', 'jumbo_mtu')
        assert rc != 0, out
        assert words in out, out
        assert 'Nothing was changed' in out, out
        for host in 'AB':
            assert jlab.mtu(host) == 1500
            assert not jlab.exists(host, '/var/lib/bdp_wan_tune/jumbo_mtu.json')
            assert not jlab.exists(host, DROPIN)


def test_check_mode_shows_the_plan_and_changes_nothing(jlab):
    rc, out, _changed = jlab.playbook('-e', 'mtu=9000', '--check', '--diff', '--tags', 'jumbo_mtu')
    assert rc == 0, out
    assert '-wan0 mtu 1500\n+wan0 mtu 9000' in out
    assert '+++ after: %s' % DROPIN in out and '+MTUBytes=9000' in out
    assert 'MTU 9000 (check mode: nothing changed): wan0 1500 9000 change' in out
    for host in 'AB':
        assert jlab.mtu(host) == 1500 and not jlab.exists(host, DROPIN)
        assert not jlab.exists(host, '/run/bdp_wan_tune')


def test_path_mtu_9000_raise_prove_persist_idempotent_undo(jlab):
    rc, out, _changed = jlab.playbook('-e', 'mtu=9000')
    assert rc == 0, out
    for host in 'AB':
        assert jlab.mtu(host) == 9000
        assert jlab.ping(host, 8972)
        assert 'MTUBytes=9000' in jlab.sh(host, 'cat %s' % DROPIN)
        state = json.loads(jlab.sh(host, 'cat /var/lib/bdp_wan_tune/jumbo_mtu.json'))
        assert state['original'] == {'wan0': 1500} and state['committed'] == {'wan0': 9000}
        assert state['pending'] is None
        # the timer is disarmed and nothing of the proof is left running
        assert jlab.sh(host, 'systemctl list-units --all --no-legend --plain "bdp-wan-tune-mtu-*"') == ''
        assert jlab.lab.exec(host, ['pgrep', '-f', '[b]dp-wan-tune-mtu-listener']).returncode == 1
    assert out.count('path proven to') == 2
    assert out.count('TCP exchanged 262144 bytes both ways with 8948-byte segments (sent) / 8948 (received)') == 2
    assert out.count('commit: confirmed change') == 2
    assert 'persisted: wan0, changed, systemd-networkd manages wan0 with /etc/systemd/network/10-wan0.network' in out

    rc, out, changed = jlab.playbook('-e', 'mtu=9000')
    assert rc == 0, out
    assert set(changed.values()) == {0}, out
    assert out.count('proof: nothing to change; verified') == 2

    # the host's network stack brings 9000 back on its own
    for host in 'AB':
        jlab.sh(host, 'ip link set dev wan0 mtu 1500 && systemctl restart systemd-networkd')
    for host in 'AB':
        for _attempt in range(20):
            if jlab.mtu(host) == 9000:
                break
            time.sleep(0.5)
        assert jlab.mtu(host) == 9000
        assert jlab.ping(host, 8972)

    rc, out, _changed = jlab.playbook('-e', 'wan_tune_state=absent', '--tags', 'jumbo_mtu')
    assert rc == 0, out
    for host in 'AB':
        assert jlab.mtu(host) == 1500
        assert not jlab.exists(host, DROPIN)
        assert not jlab.exists(host, '/var/lib/bdp_wan_tune/jumbo_mtu.json')
        assert jlab.ping(host, 1472)


def test_path_mtu_1500_black_hole_is_found_and_restored(jlab):
    jlab.lab.set_link(path_mtu=1500)
    try:
        rc, out, _changed = jlab.playbook('-e', 'mtu=9000', '--tags', 'jumbo_mtu')
    finally:
        jlab.lab.set_link(path_mtu=9000)
    assert rc != 0, out
    for host, peer in (('A', 'B'), ('B', 'A')):
        address = jlab.lab.address(peer)
        assert ('Path proof failed, so the MTU was restored (wan0 1500): Peer %s (%s via wan0, MTU 9000): 8972-byte '
                'DF ICMP payload (9000-byte packets, the full MTU 9000) got no reply; the largest that got through '
                'is 1472 (1500-byte packets)' % (address, address)) in out, out
        assert 'After the restore: 1500-byte packets to %s get through again' % address in out
        assert jlab.mtu(host) == 1500
        assert not jlab.exists(host, DROPIN)
        assert json.loads(jlab.sh(host, 'cat /var/lib/bdp_wan_tune/jumbo_mtu.json'))['pending'] is None
        assert jlab.sh(host, 'systemctl list-units --all --no-legend --plain "bdp-wan-tune-mtu-*"') == ''
        # the hosts still answer each other over the link, at full 1500-byte size
        assert jlab.ping(host, 1472)
        assert jlab.lab.exec(host, ['ping', '-c', '2', '-W', '2', jlab.lab.address(peer)]).returncode == 0
    jlab.playbook('-e', 'wan_tune_state=absent', '--tags', 'jumbo_mtu')


def test_commit_confirm_timer_restores_an_unconfirmed_change(jlab):
    rc, out = jlab.ansible('A', 'mtu=9000 peers=%s prove=false confirm_timeout=10' % jlab.lab.address('B'))
    assert rc == 0, out
    assert '"method": "systemd"' in out, out
    unit = re.search(r'"unit": "(bdp-wan-tune-mtu-[0-9a-f-]+)"', out).group(1)
    assert jlab.mtu('A') == 9000
    assert jlab.sh('A', 'systemctl is-active %s.timer' % unit) == 'active'
    for _attempt in range(40):
        if jlab.mtu('A') == 1500:
            break
        time.sleep(0.5)
    assert jlab.mtu('A') == 1500, 'the timer did not restore wan0'
    record = json.loads(jlab.sh('A', 'tail -n1 /var/lib/bdp_wan_tune/jumbo_mtu-reverts.log'))
    assert record['by'] == 'timer' and record['restored'] == 'wan0=1500' and record['rc'] == 0
    rc, out = jlab.ansible('A', 'state=confirmed')
    assert rc != 0 and 'Too late: the commit-confirm timer of change' in out, out
    assert jlab.sh('A', 'systemctl list-units --all --no-legend --plain "bdp-wan-tune-mtu-*"') == ''
    jlab.ansible('A', 'state=absent')


# --------------------------------------------------------------------------- a control connection that breaks
#
# The lab link is proven (peer A over wan0, path MTU 9000), but Ansible reaches B over SSH through
# another path: a controller namespace and a "switch" namespace whose port towards B carries only
# 1500-byte frames (a bridge drops longer frames silently).  Raising B's control interface to 9000
# therefore cuts every new SSH session, the proof cannot see it (the controller is not a peer), and
# only the commit-confirm timer can save the host.

SSH_DEBS = ('openssh-server', 'openssh-sftp-server', 'ucf', 'runit-helper', 'libwrap0', 'sensible-utils')
CTL = NAME + '-ctl'
SWITCH = NAME + '-sw'


def ip(*args, netns=None):
    cmd = ['ip'] + (['-n', netns] if netns else []) + [str(a) for a in args]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@pytest.fixture(scope='module')
def ctl(jlab, tmp_path_factory):
    """B reachable over SSH from a controller namespace through a switch that drops frames over 1500 bytes."""
    lab = jlab.lab
    env = ansible_env()
    container = lab.host_name('B')
    jlab.sh('B', 'mkdir -p /tmp/debs /root/.ssh && chmod 700 /root/.ssh')
    for deb in fetch_debs(SSH_DEBS):
        subprocess.run(['podman', 'cp', deb, '%s:/tmp/debs/' % container], check=True, env=env)
    jlab.sh('B', 'DEBIAN_FRONTEND=noninteractive dpkg -i /tmp/debs/*.deb >/dev/null && systemctl is-active ssh')
    workdir = tmp_path_factory.mktemp('ctl')
    key = str(workdir / 'id_ed25519')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', key], check=True)
    with open(key + '.pub') as handle:
        pub = handle.read().strip()
    jlab.sh('B', 'echo "%s" > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys' % pub)
    pid = lab.state['container_pids']['B'] if lab.state.get('container_pids') else \
        int(lab.netns_path('B').split('/')[2])
    try:
        for netns in (CTL, SWITCH):
            ip('netns', 'add', netns)
            ip('link', 'set', 'lo', 'up', netns=netns)
        ip('link', 'add', 'c0', 'netns', CTL, 'type', 'veth', 'peer', 'name', 's-c', 'netns', SWITCH)
        ip('link', 'add', 'ctl0', 'netns', pid, 'type', 'veth', 'peer', 'name', 's-b', 'netns', SWITCH)
        ip('link', 'add', 'br0', 'type', 'bridge', netns=SWITCH)
        for port, mtu in (('s-c', 9000), ('s-b', 1500)):
            ip('link', 'set', port, 'mtu', mtu, 'master', 'br0', 'up', netns=SWITCH)
        ip('link', 'set', 'br0', 'up', netns=SWITCH)
        ip('addr', 'add', '198.18.3.1/24', 'dev', 'c0', netns=CTL)
        ip('link', 'set', 'c0', 'mtu', 9000, 'up', netns=CTL)
        jlab.sh('B', 'ip addr add 198.18.3.2/24 dev ctl0 && ip link set ctl0 up')
        inventory = str(workdir / 'inventory.ini')
        with open(inventory, 'w') as handle:
            handle.write(
                'b ansible_host=198.18.3.2 ansible_user=root ansible_ssh_private_key_file=%s '
                'ansible_python_interpreter=/usr/bin/python3 ansible_timeout=10 '
                'ansible_ssh_common_args="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null '
                '-o ServerAliveInterval=3 -o ServerAliveCountMax=3"\n' % key)
        yield inventory
    finally:
        for netns in (CTL, SWITCH):
            subprocess.run(['ip', 'netns', 'delete', netns], check=False, capture_output=True)
        jlab.sh('B', 'ip link del ctl0 2>/dev/null; systemctl disable --now ssh >/dev/null 2>&1', check=False)


def ctl_playbook(inventory, *args):
    """wan_tune.yml from the controller namespace over SSH, jumbo_mtu only."""
    cmd = ['ip', 'netns', 'exec', CTL, os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'),
           '-i', inventory, PLAYBOOK, '--tags', 'jumbo_mtu'] + BASE + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), timeout=600, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_control_interface_is_left_alone_unless_opted_in(jlab, ctl):
    rc, out = ctl_playbook(ctl, '-e', json.dumps({'mtu': 9000, 'jumbo_mtu_interfaces': ['ctl0', 'wan0'],
                                                  'jumbo_mtu_peers': [jlab.lab.address('A')]}))
    assert rc != 0, out
    assert 'ctl0 (requested) carries the Ansible control connection (SSH from 198.18.3.1); it is left alone unless ' \
        'you opt in (allow_control_interface)' in out, out
    assert jlab.mtu('B') == 1500 and jlab.sh('B', 'cat /sys/class/net/ctl0/mtu') == '1500'


def test_lost_control_connection_is_restored_by_the_timer_and_reported(jlab, ctl):
    jlab.sh('A', 'ip link set dev wan0 mtu 9000')      # the proof peer already runs jumbo frames
    try:
        start = time.monotonic()
        rc, out = ctl_playbook(ctl, '-e', json.dumps({
            'mtu': 9000, 'jumbo_mtu_interfaces': ['ctl0', 'wan0'], 'jumbo_mtu_peers': [jlab.lab.address('A')],
            'jumbo_mtu_allow_control_interface': True, 'jumbo_mtu_persist': False, 'jumbo_mtu_confirm_timeout': 30}))
        elapsed = time.monotonic() - start
    finally:
        jlab.sh('A', 'ip link set dev wan0 mtu 1500')
    assert rc != 0, out
    # the path proof passed (the peer is fine); the new control session then broke
    assert re.search(r'TASK \[bdp.wan_tune.jumbo_mtu : Prove the path[^\n]*\n(\[WARNING\][^\n]*\n)*ok: \[b\]', out), out
    assert 'The MTU change on b was not confirmed: the control connection was lost after the change' in out, out
    assert re.search(r'change \S+ was not confirmed; (the commit-confirm timer restored|restored) ctl0 1500, wan0 1500',
                     out), out
    assert 'nothing was persisted' in out
    assert jlab.sh('B', 'cat /sys/class/net/ctl0/mtu') == '1500' and jlab.mtu('B') == 1500
    state = json.loads(jlab.sh('B', 'cat /var/lib/bdp_wan_tune/jumbo_mtu.json'))
    assert state['pending'] is None and state['history'][-1]['outcome'] in ('restored_by_timer', 'restored_by_module')
    assert jlab.sh('B', 'systemctl list-units --all --no-legend --plain "bdp-wan-tune-mtu-*"') == ''
    assert elapsed < 240, elapsed
    # and the controller reaches B again
    rc, out = ctl_playbook(ctl, '-e', 'wan_tune_state=absent')
    assert rc == 0, out
