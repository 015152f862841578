# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""link_mtu in-process against a fake ``ip``: preflight errors change nothing, check mode, the commit-confirm
decisions (confirm, too late, revert) and the undo.  Probes are replaced by a fake path; the commit-confirm timer is
the ``timers`` fixture's (its time up is the timer's own work, run here against the fake ``ip``)."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuplan
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuproof
from ansible_collections.bdp.wan_tune.plugins.modules import link_mtu


class FakeHost(object):
    """Links, routes and a path MTU; ``ip link set`` changes the links and is recorded."""

    def __init__(self):
        self.links = [
            {'ifindex': 1, 'ifname': 'lo', 'mtu': 65536, 'link_type': 'loopback', 'address': '00:00:00:00:00:00'},
            {'ifindex': 2, 'ifname': 'eth0', 'mtu': 1500, 'min_mtu': 68, 'max_mtu': 9216, 'link_type': 'ether',
             'address': '02:00:00:00:00:01'},
            {'ifindex': 3, 'ifname': 'wan0', 'mtu': 1500, 'min_mtu': 68, 'max_mtu': 65535, 'link_type': 'ether',
             'address': '02:00:00:00:00:02'},
        ]
        self.routes = {'198.18.0.2': 'wan0', '10.0.0.9': 'eth0'}
        self.default_dev = 'eth0'
        self.path_mtu = 9000
        self.calls = []

    def mtu(self, name):
        return [item for item in self.links if item['ifname'] == name][0]['mtu']

    def run_command(self, args, **kwargs):
        args = [str(a) for a in args]
        self.calls.append(args)
        if os.path.basename(args[0]) != 'ip':
            return 0, '', ''
        rest = args[1:]
        if rest == ['-d', '-j', 'link', 'show']:
            return 0, json.dumps(self.links), ''
        if rest[:3] == ['-j', 'route', 'get']:
            dev = self.routes.get(rest[3])
            if dev is None:
                return 2, '', 'RTNETLINK answers: Network is unreachable'
            return 0, json.dumps([{'dst': rest[3], 'dev': dev, 'prefsrc': '198.18.0.1'}]), ''
        if rest[1:] == ['-j', 'route', 'show', 'default']:
            if rest[0] == '-4' and self.default_dev:
                return 0, json.dumps([{'dst': 'default', 'gateway': '10.0.0.1', 'dev': self.default_dev}]), ''
            return 0, '[]', ''
        if rest == ['-j', 'addr', 'show']:
            return 0, '[]', ''
        if rest[:3] == ['link', 'set', 'dev']:
            for item in self.links:
                if item['ifname'] == rest[3]:
                    item['mtu'] = int(rest[5])
            return 0, '', ''
        return 1, '', 'unexpected ip %s' % rest

    def sets(self):
        return [call[4:] for call in self.calls if call[1:4] == ['link', 'set', 'dev']]

    def prover(self, address, family, mtu, before_mtu=None, **kwargs):
        """Stands in for mtuproof.prove: the path carries self.path_mtu."""
        fits = mtu <= self.path_mtu
        return {'address': address, 'mtu': mtu, 'ok': fits, 'icmp': {'payload': mtu - 28}, 'tcp': None,
                'summary': ('%d-byte DF ICMP packets answered' % mtu) if fits else
                           ('%d-byte DF ICMP payload (%d-byte packets, the full MTU %d) got no reply; the largest that '
                            'got through is %d' % (mtu - 28, mtu, mtu, self.path_mtu - 28))}


@pytest.fixture
def host(monkeypatch, tmp_path, timers):
    fake = FakeHost()
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, args, **kw: fake.run_command(args, **kw))
    real_bin = basic.AnsibleModule.get_bin_path

    def get_bin_path(self, name, required=False, opt_dirs=None):
        if name == 'ip':
            return '/sbin/ip'
        if name == 'systemd-run':
            return None
        return real_bin(self, name, required=required, opt_dirs=opt_dirs)

    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    monkeypatch.setattr(mtuproof, 'prove', fake.prover)
    monkeypatch.setattr(mtuplan, 'ssh_client', lambda: None)
    monkeypatch.setattr(mtuplan, 'platform', lambda choice, max_mtu=None: None)
    monkeypatch.setattr(mtuproof.Listener, 'start', lambda self, peers: {'running': False})
    fake.state_dir = str(tmp_path / 'state')
    fake.run_dir = timers.run_dir
    fake.timers = timers
    return fake


def fire(host):
    """The timer of the pending change: its time is up (the timer's own work, against the fake ``ip``)."""
    setting = linkmtu.MtuSetting(lambda args, check=True: host.run_command(['/sbin/ip'] + args))
    return host.timers.fire(host.state_dir, setting, state_of(host)['pending'])


def args(host, **extra):
    base = {'mtu': 9000, 'peers': ['198.18.0.2'], 'state_dir': host.state_dir,
            'commit_method': 'process', 'confirm_timeout': 60}
    base.update(extra)
    return base


def state_of(host):
    with open(os.path.join(host.state_dir, 'jumbo_mtu.json')) as handle:
        return json.load(handle)


# --------------------------------------------------------------------------- refused before anything changes

@pytest.mark.parametrize('extra, words', [
    ({'mtu': 575}, 'mtu: 575 is outside 576..65535'),
    ({'mtu': 70000}, 'mtu: 70000 is outside 576..65535'),
    ({'interfaces': ['wan9']}, 'interface wan9 does not exist on this host (named in interfaces); interfaces here: '
                               'eth0, wan0.'),
    ({'peers': ['no-such-host.invalid']}, "peer 'no-such-host.invalid' does not resolve on this host"),
    ({'peers': ['not a host']}, "peer 'not a host' is neither an IP address nor a valid host name"),
    ({'peers': ['203.0.113.7']}, 'peer 203.0.113.7 (203.0.113.7): no route from this host'),
    ({'peers': ['10.0.0.9']}, 'eth0 (requested) carries the default route (IPv4); it is left alone'),
    ({'interfaces': ['eth0'], 'mtu': 9500}, 'eth0: MTU 9500 is above its limit 9216'),
    ({'peers': [], 'interfaces': []}, 'Give interfaces, peers or both'),
    ({'confirm_timeout': 9}, 'confirm_timeout: 9 s is too short to confirm over a new connection; use 10 or more.'),
])
def test_bad_input_fails_before_anything_changes(run_module, host, monkeypatch, extra, words):
    def no_dns(name, *a, **kw):
        raise socket.gaierror(-2, 'Name or service not known')
    monkeypatch.setattr(socket, 'getaddrinfo', no_dns)
    result = run_module(link_mtu.main, args(host, **extra))
    assert result['rc'] == 1 and result['failed']
    assert words in result['msg'], result['msg']
    assert 'Nothing was changed' in result['msg']
    assert host.sets() == [] and not os.path.exists(host.run_dir)


def test_check_mode_plans_and_touches_nothing(run_module, host):
    result = run_module(link_mtu.main, dict(args(host), _ansible_check_mode=True, _ansible_diff=True))
    assert result['changed'] and result['would_change'] and result['check_mode']
    assert result['interfaces']['wan0'] == dict(result['interfaces']['wan0'], before=1500, after=9000,
                                                status='change', reason='route to 198.18.0.2')
    assert result['diff'] == {'before': 'wan0 mtu 1500\n', 'after': 'wan0 mtu 9000\n',
                              'before_header': 'live MTU (ip link)', 'after_header': 'live MTU (ip link)'}
    assert result['persist'] == [{'name': 'wan0', 'mtu': 9000}]
    assert result['protected'] == {'eth0': 'carries the default route (IPv4)'}
    assert host.sets() == [] and not os.path.exists(host.state_dir)


# --------------------------------------------------------------------------- change, prove, confirm

def test_change_prove_confirm_then_nothing_to_do(run_module, host):
    result = run_module(link_mtu.main, args(host))
    assert result['rc'] == 0 and result['changed']
    assert host.sets() == [['wan0', 'mtu', '9000']] and host.mtu('wan0') == 9000
    commit = result['commit']
    assert commit['method'] == 'process' and commit['state'] == 'pending' and commit['timeout'] == 60
    script = os.path.join(host.run_dir, 'jumbo_mtu-%s.py' % commit['token'])
    # the timer restores wan0 to 1500: the step reaches the script as data
    assert '"steps": [["wan0", 1500]]' in open(script).read() and commit['restores'] == 'wan0=1500'
    assert host.timers.running(commit['pid'])
    assert 'path proven to 198.18.0.2' in result['summary']
    assert state_of(host)['pending']['token'] == commit['token']
    assert state_of(host)['original'] == {'wan0': 1500}

    confirmed = run_module(link_mtu.main, {'state': 'confirmed', 'state_dir': host.state_dir})
    assert confirmed['changed'] and confirmed['outcome'] == 'confirmed'
    assert not os.path.exists(script) and host.timers.stopped(commit['pid'])      # disarmed
    state = state_of(host)
    assert state['pending'] is None and state['committed'] == {'wan0': 9000}
    assert host.timers.left() == [] and os.listdir(host.run_dir) == ['jumbo_mtu-%s.decided' % commit['token']]

    again = run_module(link_mtu.main, args(host))
    assert not again['changed'] and again['summary'] == 'nothing to change; verified 198.18.0.2 at 9000 bytes'
    assert run_module(link_mtu.main, {'state': 'confirmed', 'state_dir': host.state_dir})['changed'] is False


def test_failed_proof_restores_and_names_the_sizes(run_module, host):
    host.path_mtu = 1500
    result = run_module(link_mtu.main, args(host))
    assert result['failed']
    assert result['msg'].startswith('Path proof failed, so the MTU was restored (wan0 1500): Peer 198.18.0.2 '
                                    '(198.18.0.2 via wan0, MTU 9000): 8972-byte DF ICMP payload')
    assert 'the largest that got through is 1472' in result['msg']
    assert 'After the restore: 1500-byte packets to 198.18.0.2 get through again' in result['msg']
    assert host.sets() == [['wan0', 'mtu', '9000'], ['wan0', 'mtu', '1500']] and host.mtu('wan0') == 1500
    state = state_of(host)
    assert state['pending'] is None and state['original'] == {}
    assert state['history'][-1]['outcome'] == 'restored_by_module'
    assert host.timers.left() == []                         # the timer's script and pid file gone


def test_unhealthy_path_is_refused_before_the_change(run_module, host):
    host.path_mtu = 1400                                    # not even the current 1500 gets through
    result = run_module(link_mtu.main, args(host))
    assert result['failed'] and result['msg'].startswith('The path is not healthy before the change')
    assert 'Nothing was changed' in result['msg'] and host.sets() == []


def test_two_phases_prove_a_pending_change(run_module, host):
    applied = run_module(link_mtu.main, args(host, prove=False, verify=False, listen=True))
    assert applied['changed'] and applied['commit']['state'] == 'pending' and 'peers' not in applied or \
        all('ok' not in peer for peer in applied['peers'])
    proof = run_module(link_mtu.main, args(host))
    assert not proof['changed'] and proof['commit']['state'] == 'pending'
    assert proof['peers'][0]['ok'] and host.sets() == [['wan0', 'mtu', '9000']]


def test_confirmation_after_the_timer_fired_is_too_late(run_module, host):
    result = run_module(link_mtu.main, args(host, prove=False))
    token = result['commit']['token']
    record = fire(host)
    assert (record['token'], record['restored'], record['rc'], host.mtu('wan0')) == (token, 'wan0=1500', 0, 1500)
    late = run_module(link_mtu.main, {'state': 'confirmed', 'state_dir': host.state_dir})
    assert late['failed'] and late['outcome'] == 'restored_by_timer'
    assert late['msg'].startswith('Too late: the commit-confirm timer of change %s restored the previous MTUs '
                                  '(wan0 1500) at %s, 60 s after the change, before this confirmation.'
                                  % (token, time.strftime('%F %T', time.localtime(record['at'])))), late['msg']
    assert state_of(host)['pending'] is None and state_of(host)['original'] == {}
    assert host.timers.running(result['commit']['pid'])     # its own script is not stopped (it runs, or ended)


def test_reverted_after_a_lost_connection(run_module, host):
    result = run_module(link_mtu.main, args(host, prove=False))
    reverted = run_module(link_mtu.main, {'state': 'reverted', 'state_dir': host.state_dir})
    assert reverted['changed'] and reverted['outcome'] == 'restored_by_module'
    assert reverted['restored'] == {'wan0': 1500} and host.mtu('wan0') == 1500
    assert 'was not confirmed; restored wan0 1500 now' in reverted['summary']
    assert not os.path.exists(os.path.join(host.run_dir, 'jumbo_mtu-%s.py' % result['commit']['token']))
    log = [json.loads(line) for line in open(os.path.join(host.state_dir, 'jumbo_mtu-reverts.log'))]
    assert log == [{'token': result['commit']['token'], 'by': 'module', 'at': log[0]['at'], 'restored': 'wan0=1500',
                    'rc': 0, 'failed': ''}]
    again = run_module(link_mtu.main, {'state': 'reverted', 'state_dir': host.state_dir})
    assert not again['changed'] and 'ended restored by module' in again['summary']


def test_absent_restores_what_was_recorded_and_leaves_foreign_changes(run_module, host):
    run_module(link_mtu.main, args(host))
    run_module(link_mtu.main, {'state': 'confirmed', 'state_dir': host.state_dir})
    check = run_module(link_mtu.main, {'state': 'absent', 'state_dir': host.state_dir,
                                       '_ansible_check_mode': True})
    assert check['changed'] and check['diff']['after'] == 'wan0 mtu 1500\n' and host.mtu('wan0') == 9000
    undone = run_module(link_mtu.main, {'state': 'absent', 'state_dir': host.state_dir})
    assert undone['changed'] and undone['restored'] == {'wan0': 1500} and host.mtu('wan0') == 1500
    assert not os.path.exists(host.state_dir)
    assert not run_module(link_mtu.main, {'state': 'absent', 'state_dir': host.state_dir})['changed']
    # someone else changed it after us: left alone
    run_module(link_mtu.main, args(host))
    run_module(link_mtu.main, {'state': 'confirmed', 'state_dir': host.state_dir})
    host.run_command(['/sbin/ip', 'link', 'set', 'dev', 'wan0', 'mtu', '4000'])
    left = run_module(link_mtu.main, {'state': 'absent', 'state_dir': host.state_dir})
    assert host.mtu('wan0') == 4000
    assert any('changed by someone else' in text for text in left['warning_msgs'])


def test_a_second_change_waits_for_the_pending_one(run_module, host):
    run_module(link_mtu.main, args(host, prove=False))
    other = run_module(link_mtu.main, args(host, mtu=8000, allow_lower=True))
    assert other['failed'] and 'is still waiting for its confirmation' in other['msg']
    assert host.mtu('wan0') == 9000
    run_module(link_mtu.main, {'state': 'reverted', 'state_dir': host.state_dir})
    assert host.mtu('wan0') == 1500


def test_a_confirmation_cut_short_is_finished_not_undone(run_module, host):
    """state=confirmed took the decision, then its task timed out: the next call commits the change."""
    run_module(link_mtu.main, args(host, prove=False))
    assert commit.Timer.claim(state_of(host)['pending'], 'confirmed')
    reverted = run_module(link_mtu.main, {'state': 'reverted', 'state_dir': host.state_dir})
    assert reverted['outcome'] == 'confirmed' and not reverted['changed'] and host.mtu('wan0') == 9000
    assert state_of(host)['committed'] == {'wan0': 9000} and state_of(host)['original'] == {'wan0': 1500}
    assert host.timers.left() == []
    assert run_module(link_mtu.main, {'state': 'absent', 'state_dir': host.state_dir})['restored'] == {'wan0': 1500}


def test_the_next_run_finds_what_the_timer_did_and_changes_again(run_module, host):
    token = run_module(link_mtu.main, args(host, prove=False))['commit']['token']
    fire(host)
    again = run_module(link_mtu.main, args(host))
    assert again['rc'] == 0 and again['changed'] and again['commit']['token'] != token
    assert any(text.startswith('Change %s was not confirmed; the commit-confirm timer restored wan0 1500 at '
                               % token) and text.endswith(', before this run; it is not in effect.')
               for text in again['warning_msgs']), again['warning_msgs']
    assert [item['outcome'] for item in state_of(host)['history']] == ['restored_by_timer']


def test_a_change_from_before_a_reboot_ended_with_the_boot(run_module, host):
    run_module(link_mtu.main, args(host, prove=False))
    state = state_of(host)
    state['pending']['boot_id'] = 'an-earlier-boot'
    with open(os.path.join(host.state_dir, 'jumbo_mtu.json'), 'w') as handle:
        json.dump(state, handle)
    host.run_command(['/sbin/ip', 'link', 'set', 'dev', 'wan0', 'mtu', '1500'])     # what the boot brought up
    reverted = run_module(link_mtu.main, {'state': 'reverted', 'state_dir': host.state_dir})
    assert reverted['outcome'] == 'restored_by_reboot' and reverted['commit']['state'] == 'restored_by_reboot'
    assert reverted['summary'].endswith('was not confirmed; the host has rebooted since, which restored wan0 1500')
    assert host.sets() == [['wan0', 'mtu', '9000'], ['wan0', 'mtu', '1500']] and host.timers.left() == []


def test_a_put_back_cut_short_is_finished_and_the_next_run_plans_from_it(run_module, host):
    """state=reverted took the decision, then its task timed out: the next run puts the MTU back first, and plans
    (and changes) again from 1500."""
    token = run_module(link_mtu.main, args(host, prove=False))['commit']['token']
    assert commit.Timer.claim(state_of(host)['pending'], 'module') and host.mtu('wan0') == 9000
    again = run_module(link_mtu.main, args(host))
    assert again['rc'] == 0 and again['changed'] and again['interfaces']['wan0']['before'] == 1500
    assert any(text.startswith('Change %s was not confirmed; restored wan0 1500 now, before this run' % token)
               for text in again['warning_msgs']), again['warning_msgs']
    assert host.sets() == [['wan0', 'mtu', '9000'], ['wan0', 'mtu', '1500'], ['wan0', 'mtu', '9000']]


def test_check_mode_after_the_timer_decided_predicts_the_next_run(run_module, host):
    """The role plans in check mode first, in every run: a change its timer ended must not stop that plan with
    "still waiting for its confirmation"; check mode says what the next real run finishes, and changes nothing."""
    token = run_module(link_mtu.main, args(host, prove=False))['commit']['token']
    fire(host)
    before = state_of(host)
    check = run_module(link_mtu.main, dict(args(host), _ansible_check_mode=True))
    assert check['rc'] == 0 and check['changed'] and check['would_change'], check.get('msg')
    assert any(('Change %s was decided (timer) but not finished' % token) in text
               for text in check['warning_msgs']), check['warning_msgs']
    assert state_of(host) == before and host.sets() == [['wan0', 'mtu', '9000'], ['wan0', 'mtu', '1500']]
