# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""path_probe: real handshakes over loopback, the recorded RTT (kept, check mode, absent), and rate=auto on an
interface without a link speed (lo) and on one with a speed (the sysfs read and the route lookup mocked)."""

from __future__ import annotations

import json
import os
import socket

import pytest

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import pathprobe
from ansible_collections.bdp.wan_tune.plugins.modules import path_probe


@pytest.fixture
def closed_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def args(tmp_path, port, **extra):
    return dict({'peers': ['127.0.0.1'], 'port': port, 'count': 3, 'state_dir': str(tmp_path / 'state')}, **extra)


def record(tmp_path):
    path = tmp_path / 'state' / pathprobe.RECORD_NAME
    return json.loads(path.read_text()) if path.exists() else None


def test_measures_records_and_keeps(run_module, tmp_path, closed_port):
    first = run_module(path_probe.main, args(tmp_path, closed_port))
    assert first['rc'] == 0 and first['changed'] is True, first
    assert len(first['peers'][0]['samples_ms']) == 3
    assert first['rtt_ms'] == 0.1                  # loopback: well under 0.1 ms, rounded up to the 0.1 ms step
    assert record(tmp_path) == {'127.0.0.1': 0.1}
    again = run_module(path_probe.main, args(tmp_path, closed_port))
    assert again['changed'] is False and again['rtt_ms'] == 0.1
    assert '127.0.0.1 median' in again['summary']


def test_check_mode_measures_but_writes_nothing(run_module, tmp_path, closed_port):
    result = run_module(path_probe.main, args(tmp_path, closed_port, _ansible_check_mode=True))
    assert result['changed'] is True and result['rtt_ms'] == 0.1
    assert record(tmp_path) is None


def test_a_new_path_replaces_a_far_recorded_value(run_module, tmp_path, closed_port):
    os.makedirs(str(tmp_path / 'state'))
    (tmp_path / 'state' / pathprobe.RECORD_NAME).write_text(json.dumps({'127.0.0.1': 98.0}))
    result = run_module(path_probe.main, args(tmp_path, closed_port))
    assert result['changed'] is True and result['rtt_ms'] == 0.1
    assert 'more than 25 % away from the previous 98 ms' in result['rtt_reason']


def test_absent_removes_the_record(run_module, tmp_path, closed_port):
    run_module(path_probe.main, args(tmp_path, closed_port))
    check = run_module(path_probe.main, {'state': 'absent', 'state_dir': str(tmp_path / 'state'), '_ansible_check_mode': True})
    assert check['changed'] is True and record(tmp_path) is not None
    gone = run_module(path_probe.main, {'state': 'absent', 'state_dir': str(tmp_path / 'state')})
    assert gone['changed'] is True and record(tmp_path) is None
    again = run_module(path_probe.main, {'state': 'absent', 'state_dir': str(tmp_path / 'state')})
    assert again['changed'] is False


def test_no_peers_says_what_to_set(run_module, tmp_path):
    result = run_module(path_probe.main, {'peers': [], 'state_dir': str(tmp_path)})
    assert result['rc'] == 1 and 'wan_peers' in result['msg']


def test_an_unreachable_peer_fails_with_the_fix(run_module, tmp_path, monkeypatch):
    def no_answer(*dummy, **kwargs):
        raise socket.timeout('timed out')
    monkeypatch.setattr(pathprobe, 'tcp_handshake_ms', no_answer)
    result = run_module(path_probe.main, {'peers': ['198.18.0.99'], 'count': 2, 'state_dir': str(tmp_path)})
    assert result['rc'] == 1
    assert 'no tcp answer from 198.18.0.99 (timed out)' in result['msg'] and 'rtt=<ms>' in result['msg']
    assert not os.listdir(str(tmp_path))


def test_rate_auto_on_loopback_has_no_speed(run_module, tmp_path):
    result = run_module(path_probe.main, {'peers': ['127.0.0.1'], 'rtt': False, 'rate': True, 'state_dir': str(tmp_path)})
    assert result['rc'] == 1
    assert 'reports no link speed for lo' in result['msg'] and 'rate=10g' in result['msg']


def test_rate_auto_reads_the_interface_towards_the_peer(run_module, tmp_path, monkeypatch):
    commands = []

    def run_command(self, cmd, **kwargs):
        commands.append(cmd)
        return 0, '198.18.0.2 dev wan0 src 198.18.0.1 uid 0\n    cache\n', ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(pathprobe, 'read_speed_mbps', {'wan0': 25000}.get)
    result = run_module(path_probe.main, {'peers': ['198.18.0.2'], 'rtt': False, 'rate': True,
                                          'state_dir': str(tmp_path)})
    assert result['rc'] == 0 and result['changed'] is False
    assert commands == [['ip', 'route', 'get', '198.18.0.2']]
    assert (result['interface'], result['speed_mbps'], result['rate_bps']) == ('wan0', 25000, 25000000000)
    assert 'rate 25000 Mbit/s (link speed of wan0' in result['summary']


@pytest.mark.parametrize('bad, word', [({'count': 0}, 'count'), ({'port': 70000}, 'port'), ({'tolerance': 1.5}, 'tolerance')])
def test_bad_options(run_module, tmp_path, bad, word):
    result = run_module(path_probe.main, dict({'peers': ['127.0.0.1'], 'state_dir': str(tmp_path)}, **bad))
    assert result['rc'] == 1 and word in result['msg']
