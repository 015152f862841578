# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sysctl_dropin run in-process against a fake /proc/sys and fake sysctl.d directories."""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import dropin as dropin_utils, sysctl
from ansible_collections.bdp.wan_tune.plugins.modules import sysctl_dropin

RELEASE = os.uname()[2]
NAMESPACE_REASON = 'owned by the host kernel; read-only in this network namespace'
HOST = {
    'net.core.rmem_max': '212992',
    'net.core.wmem_max': '212992',
    'net.ipv4.tcp_rmem': '4096\t131072\t6291456',
    'net.ipv4.tcp_wmem': '4096\t16384\t4194304',
    'net.core.netdev_max_backlog': '1000',
    'net.ipv4.tcp_congestion_control': 'cubic',
    'net.ipv4.tcp_available_congestion_control': 'reno cubic bbr',
    'net.ipv4.tcp_allowed_congestion_control': 'reno cubic',
    'net.ipv4.conf.eth0/100.mtu': '1500',
}
BUFFERS = [
    {'key': 'net.core.rmem_max', 'value': 49000000, 'floor': True,
     'comment': '4 x BDP\nBDP = 1 Gbit/s x 98 ms / 8 = 12250000 bytes'},
    {'key': 'net.ipv4.tcp_rmem', 'value': [None, None, 49000000], 'floor': True},
]
EXPECTED_FILE = (
    '# Ansible managed\n'
    '\n'
    '# 4 x BDP\n'
    '# BDP = 1 Gbit/s x 98 ms / 8 = 12250000 bytes\n'
    'net.core.rmem_max = 49000000\n'
    '\n'
    'net.ipv4.tcp_rmem = 4096 131072 49000000\n')


@pytest.fixture
def host(proc, etc, tmp_path):
    """A host in the initial network namespace, with the fake trees and the module's paths."""
    for key, value in HOST.items():
        proc.set(key, value)
    host = type('Host', (), {})()
    host.proc, host.etc = proc, etc
    host.path = os.path.join(etc.etc, '90-bdp-wan-tune.conf')
    host.state_dir = str(tmp_path / 'state')
    host.state_file = os.path.join(host.state_dir, '90-bdp-wan-tune.conf.json')
    return host


@pytest.fixture
def container(host):
    """The same host seen from a container: net.core.* keys are read-only (0444)."""
    for key in ('net.core.rmem_max', 'net.core.wmem_max', 'net.core.netdev_max_backlog'):
        host.proc.readonly(key, HOST[key])
    assert sysctl.initial_netns() is False
    return host


@pytest.fixture
def dropin(host, run_module):
    """dropin(settings=..., **other args) -> result of one module run."""

    def run(settings=None, **args):
        args.setdefault('path', host.path)
        args.setdefault('state_dir', host.state_dir)
        if settings is not None:
            args['settings'] = settings
        return run_module(sysctl_dropin.main, args)

    return run


def read(path):
    with open(path) as handle:
        return handle.read()


def refuse_writes(monkeypatch, key, refused_value=None, error=errno.EINVAL):
    """Make the (fake) kernel refuse writing ``key`` (only ``refused_value`` when given)."""
    real = sysctl.write_live
    calls = []

    def write_live(name, value, root=None):
        calls.append((name, sysctl.normalize_value(value)))
        if name == key and (refused_value is None or sysctl.normalize_value(value) == refused_value):
            raise OSError(error, os.strerror(error))
        return real(name, value, root)

    monkeypatch.setattr(sysctl, 'write_live', write_live)
    return calls


# --------------------------------------------------------------------------- present

def test_first_run_writes_file_state_and_live_values(host, dropin):
    result = dropin(BUFFERS, header='# Ansible managed')
    assert result['rc'] == 0, result
    assert result['changed'] is True
    assert result['path'] == host.path
    assert result['initial_netns'] is True
    assert read(host.path) == EXPECTED_FILE
    assert stat.S_IMODE(os.stat(host.path).st_mode) == 0o644
    assert host.proc.raw('net.core.rmem_max') == '49000000\n'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 49000000'
    assert result['settings'] == {
        'net.core.rmem_max': {'before': '212992', 'after': '49000000', 'wanted': '49000000', 'status': 'changed'},
        'net.ipv4.tcp_rmem': {'before': '4096 131072 6291456', 'after': '4096 131072 49000000',
                              'wanted': '4096 131072 49000000', 'status': 'changed'},
    }
    assert result['skipped_keys'] == {}
    assert result['overrides'] == []
    assert result['warning_msgs'] == []
    state = json.loads(read(host.state_file))
    assert state == {'file_existed': False,
                     'original': {'net.core.rmem_max': '212992', 'net.ipv4.tcp_rmem': '4096 131072 6291456'}}
    assert os.listdir(host.etc.etc) == ['90-bdp-wan-tune.conf']   # no temporary files left


def test_second_run_is_unchanged(host, dropin):
    assert dropin(BUFFERS, header='# Ansible managed')['changed'] is True
    before = os.stat(host.path)
    result = dropin(BUFFERS, header='# Ansible managed')
    assert result['rc'] == 0
    assert result['changed'] is False
    assert {key: info['status'] for key, info in result['settings'].items()} == {
        'net.core.rmem_max': 'ok', 'net.ipv4.tcp_rmem': 'ok'}
    assert read(host.path) == EXPECTED_FILE
    assert os.stat(host.path).st_ino == before.st_ino          # the file was not rewritten
    assert result['warning_msgs'] == []


def test_live_drift_is_reapplied_without_rewriting_the_file(host, dropin):
    dropin(BUFFERS, header='# Ansible managed')
    inode = os.stat(host.path).st_ino
    host.proc.set('net.core.rmem_max', '212992')
    result = dropin(BUFFERS, header='# Ansible managed')
    assert result['changed'] is True
    assert result['settings']['net.core.rmem_max']['status'] == 'changed'
    assert result['settings']['net.ipv4.tcp_rmem']['status'] == 'ok'
    assert host.proc.get('net.core.rmem_max') == '49000000'
    assert os.stat(host.path).st_ino == inode
    # the original from before the first change is kept
    assert json.loads(read(host.state_file))['original']['net.core.rmem_max'] == '212992'


def test_edited_file_is_rewritten(host, dropin):
    dropin(BUFFERS, header='# Ansible managed')
    with open(host.path, 'a') as handle:
        handle.write('net.core.rmem_max = 1\n')
    result = dropin(BUFFERS, header='# Ansible managed')
    assert result['changed'] is True
    assert read(host.path) == EXPECTED_FILE


def test_check_mode_reports_changes_and_writes_nothing(host, dropin):
    result = dropin(BUFFERS, header='# Ansible managed', _ansible_check_mode=True)
    assert result['rc'] == 0
    assert result['changed'] is True
    assert result['settings']['net.core.rmem_max']['status'] == 'changed'
    assert result['settings']['net.core.rmem_max']['after'] == '212992'
    assert not os.path.exists(host.path)
    assert not os.path.exists(host.state_dir)
    assert host.proc.get('net.core.rmem_max') == '212992'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    assert result['diff'][0]['after'] == EXPECTED_FILE


def test_diff_has_file_and_live_values(host, dropin):
    result = dropin(BUFFERS, header='# Ansible managed', _ansible_diff=True)
    assert result['diff'] == [
        {'before': '', 'after': EXPECTED_FILE, 'before_header': host.path, 'after_header': host.path},
        {'before': 'net.core.rmem_max = 212992\nnet.ipv4.tcp_rmem = 4096 131072 6291456\n',
         'after': 'net.core.rmem_max = 49000000\nnet.ipv4.tcp_rmem = 4096 131072 49000000\n',
         'before_header': 'live values (/proc/sys)', 'after_header': 'live values (/proc/sys)'},
    ]


def test_diff_of_a_second_run_is_empty(host, dropin):
    dropin(BUFFERS, header='# Ansible managed')
    result = dropin(BUFFERS, header='# Ansible managed', _ansible_diff=True)
    assert result['diff'][0]['before'] == result['diff'][0]['after'] == EXPECTED_FILE
    assert result['diff'][1]['before'] == result['diff'][1]['after'] == ''


def test_null_fields_keep_host_min_and_default(host, dropin):
    host.proc.set('net.ipv4.tcp_rmem', '8192\t87380\t6291456')
    result = dropin([{'key': 'net.ipv4.tcp_rmem', 'value': [None, 1048576, None]}])
    assert result['rc'] == 0
    assert host.proc.get('net.ipv4.tcp_rmem') == '8192 1048576 6291456'
    assert 'net.ipv4.tcp_rmem = 8192 1048576 6291456\n' in read(host.path)


def test_null_fields_with_a_different_field_count_fail(host, dropin):
    result = dropin([{'key': 'net.ipv4.tcp_rmem', 'value': [None, 49000000]}])
    assert result['rc'] == 1
    assert result['failed'] is True
    assert result['msg'].startswith('settings: net.ipv4.tcp_rmem: ')
    assert 'keeps host fields (null)' in result['msg']
    assert 'has 3 fields' in result['msg']
    assert not os.path.exists(host.path)
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'


def test_string_and_list_values_are_whitespace_normalized(host, dropin):
    result = dropin([{'key': 'net.ipv4.tcp_wmem', 'value': '4096\t16384   4194304'},
                     {'key': 'net.core.netdev_max_backlog', 'value': '2500'}])
    assert result['settings']['net.ipv4.tcp_wmem']['status'] == 'ok'
    assert result['settings']['net.core.netdev_max_backlog']['status'] == 'changed'
    assert 'net.ipv4.tcp_wmem = 4096 16384 4194304\n' in read(host.path)


def test_floor_keeps_a_higher_host_value(host, dropin):
    host.proc.set('net.core.rmem_max', '67108864')
    host.proc.set('net.ipv4.tcp_rmem', '4096 131072 67108864')
    result = dropin(BUFFERS)
    assert result['rc'] == 0
    assert result['settings'] == {
        'net.core.rmem_max': {'before': '67108864', 'after': '67108864', 'wanted': '67108864',
                              'requested': '49000000', 'status': 'ok'},
        'net.ipv4.tcp_rmem': {'before': '4096 131072 67108864', 'after': '4096 131072 67108864',
                              'wanted': '4096 131072 67108864', 'requested': '4096 131072 49000000',
                              'status': 'ok'},
    }
    assert host.proc.get('net.core.rmem_max') == '67108864'
    text = read(host.path)
    assert 'net.core.rmem_max = 67108864\n' in text          # the file keeps the host's higher value
    assert '49000000' not in text


def test_floor_works_per_field(host, dropin):
    host.proc.set('net.ipv4.tcp_rmem', '8192 65536 6291456')
    result = dropin([{'key': 'net.ipv4.tcp_rmem', 'value': [4096, 131072, 49000000], 'floor': True}])
    info = result['settings']['net.ipv4.tcp_rmem']
    assert info['wanted'] == '8192 131072 49000000'
    assert info['requested'] == '4096 131072 49000000'
    assert info['status'] == 'changed'
    assert host.proc.get('net.ipv4.tcp_rmem') == '8192 131072 49000000'


def test_floor_raises_a_lower_host_value(host, dropin):
    result = dropin([{'key': 'net.core.rmem_max', 'value': 49000000, 'floor': True}])
    info = result['settings']['net.core.rmem_max']
    assert info['status'] == 'changed'
    assert 'requested' not in info
    assert host.proc.get('net.core.rmem_max') == '49000000'


def test_allow_lower_lowers_a_floor_key(host, dropin):
    host.proc.set('net.core.rmem_max', '67108864')
    result = dropin(BUFFERS[:1], allow_lower=True)
    info = result['settings']['net.core.rmem_max']
    assert info == {'before': '67108864', 'after': '49000000', 'wanted': '49000000', 'status': 'changed'}
    assert host.proc.get('net.core.rmem_max') == '49000000'


def test_without_floor_a_higher_host_value_is_lowered(host, dropin):
    host.proc.set('net.core.rmem_max', '67108864')
    result = dropin([{'key': 'net.core.rmem_max', 'value': 49000000}])
    assert result['settings']['net.core.rmem_max']['status'] == 'changed'
    assert host.proc.get('net.core.rmem_max') == '49000000'


def test_slash_form_vlan_key(host, dropin):
    result = dropin([{'key': 'net/ipv4/conf/eth0.100/mtu', 'value': 9000}])
    assert result['rc'] == 0
    assert result['settings']['net.ipv4.conf.eth0/100.mtu']['after'] == '9000'
    assert host.proc.raw('net.ipv4.conf.eth0/100.mtu') == '9000\n'
    assert os.path.isfile(os.path.join(host.proc.root, 'net', 'ipv4', 'conf', 'eth0.100', 'mtu'))
    assert 'net.ipv4.conf.eth0/100.mtu = 9000\n' in read(host.path)


# --------------------------------------------------------------------------- namespaces and strict

def test_container_skips_host_owned_keys_and_applies_per_namespace_keys(container, dropin):
    result = dropin(BUFFERS, header='# Ansible managed')
    assert result['rc'] == 0, result
    assert result['initial_netns'] is False
    assert result['changed'] is True
    assert result['skipped_keys'] == {'net.core.rmem_max': NAMESPACE_REASON}
    assert result['settings']['net.core.rmem_max'] == {
        'before': '212992', 'after': '212992', 'wanted': '49000000', 'status': 'skipped', 'reason': NAMESPACE_REASON}
    assert result['settings']['net.ipv4.tcp_rmem']['status'] == 'changed'
    assert container.proc.get('net.core.rmem_max') == '212992'
    assert container.proc.get('net.ipv4.tcp_rmem') == '4096 131072 49000000'
    assert result['warning_msgs'] == ['net.core.rmem_max was not set to 49000000: %s.' % NAMESPACE_REASON]
    text = read(container.path)
    assert text == ('# Ansible managed\n'
                    '# Not set by this file on this host:\n'
                    '#   net.core.rmem_max: %s\n'
                    '\n'
                    'net.ipv4.tcp_rmem = 4096 131072 49000000\n' % NAMESPACE_REASON)
    assert [key for key, value in sysctl.parse_conf(text)] == ['net.ipv4.tcp_rmem']
    # only the applied key is recorded for state=absent
    assert json.loads(read(container.state_file))['original'] == {'net.ipv4.tcp_rmem': '4096 131072 6291456'}


def test_container_second_run_is_unchanged(container, dropin):
    dropin(BUFFERS)
    result = dropin(BUFFERS)
    assert result['changed'] is False
    assert result['skipped_keys'] == {'net.core.rmem_max': NAMESPACE_REASON}
    assert len(result['warning_msgs']) == 1


def test_container_read_only_key_already_at_the_value_is_ok(container, dropin):
    result = dropin([{'key': 'net.core.rmem_max', 'value': 212992}])
    assert result['settings']['net.core.rmem_max']['status'] == 'ok'
    assert result['skipped_keys'] == {}


def test_container_congestion_control_not_allowed_is_skipped(container, dropin):
    result = dropin([{'key': 'net.ipv4.tcp_congestion_control', 'value': 'bbr'}])
    assert result['rc'] == 0, result
    reason = ('the host allows only reno cubic in network namespaces; on the host, add bbr to '
              'net.ipv4.tcp_allowed_congestion_control')
    assert result['skipped_keys'] == {'net.ipv4.tcp_congestion_control': reason}
    assert container.proc.get('net.ipv4.tcp_congestion_control') == 'cubic'
    assert result['warning_msgs'] == ['net.ipv4.tcp_congestion_control was not set to bbr: %s.' % reason]
    assert 'net.ipv4.tcp_congestion_control =' not in read(container.path)


def test_container_congestion_control_allowed_is_set(container, dropin):
    result = dropin([{'key': 'net.ipv4.tcp_congestion_control', 'value': 'reno'}])
    assert result['settings']['net.ipv4.tcp_congestion_control']['status'] == 'changed'
    assert container.proc.get('net.ipv4.tcp_congestion_control') == 'reno'


def test_container_missing_key_is_skipped(container, dropin):
    result = dropin([{'key': 'net.ipv4.tcp_no_such_key', 'value': 1},
                     {'key': 'net.ipv4.tcp_wmem', 'value': [None, None, 8388608]}])
    assert result['rc'] == 0
    assert result['skipped_keys'] == {'net.ipv4.tcp_no_such_key': 'not present in this network namespace'}
    assert container.proc.get('net.ipv4.tcp_wmem') == '4096 16384 8388608'


def test_strict_fails_before_anything_is_written(container, dropin):
    settings = BUFFERS + [{'key': 'net.core.netdev_max_backlog', 'value': 2500}]
    result = dropin(settings, strict=True)
    assert result['rc'] == 1
    assert result['failed'] is True
    assert result['msg'] == (
        'strict is set and these keys cannot be set here: net.core.rmem_max (%s); net.core.netdev_max_backlog (%s). '
        'Nothing was changed. Run on the host (initial network namespace) or set strict=false to skip them with a '
        'warning.' % (NAMESPACE_REASON, NAMESPACE_REASON))
    assert not os.path.exists(container.path)
    assert not os.path.exists(container.state_dir)
    assert container.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'


def test_strict_fails_for_a_congestion_control_the_host_does_not_allow(container, dropin):
    result = dropin([{'key': 'net.ipv4.tcp_congestion_control', 'value': 'bbr'}], strict=True)
    assert result['rc'] == 1
    assert 'net.ipv4.tcp_congestion_control (the host allows only reno cubic' in result['msg']
    assert container.proc.get('net.ipv4.tcp_congestion_control') == 'cubic'


def test_strict_passes_on_the_host(host, dropin):
    result = dropin(BUFFERS, strict=True)
    assert result['rc'] == 0
    assert result['changed'] is True


def test_read_only_key_on_the_host(host, dropin):
    host.proc.readonly('net.ipv4.tcp_available_congestion_control', 'reno cubic bbr')
    result = dropin([{'key': 'net.ipv4.tcp_available_congestion_control', 'value': 'bbr'}])
    assert result['skipped_keys'] == {'net.ipv4.tcp_available_congestion_control': 'read-only /proc/sys on this host'}
    assert host.proc.get('net.ipv4.tcp_available_congestion_control') == 'reno cubic bbr'


# --------------------------------------------------------------------------- missing keys and bad input

def test_missing_key_fails_in_the_initial_namespace(host, dropin):
    result = dropin(BUFFERS + [{'key': 'net.ipv4.tcp_no_such_key', 'value': 1}])
    assert result['rc'] == 1
    assert result['msg'] == ('net.ipv4.tcp_no_such_key does not exist on this kernel (%s); remove it from the '
                             'settings or mark it optional.' % RELEASE)
    assert not os.path.exists(host.path)
    assert host.proc.get('net.core.rmem_max') == '212992'


def test_optional_missing_key_is_skipped(host, dropin):
    result = dropin(BUFFERS + [{'key': 'net.ipv4.tcp_no_such_key', 'value': 1, 'optional': True}])
    assert result['rc'] == 0, result
    assert result['skipped_keys'] == {'net.ipv4.tcp_no_such_key': 'the kernel has no such key'}
    assert result['settings']['net.ipv4.tcp_no_such_key'] == {
        'before': None, 'after': None, 'wanted': '1', 'status': 'skipped', 'reason': 'the kernel has no such key'}
    assert result['warning_msgs'] == ['net.ipv4.tcp_no_such_key was not set to 1: the kernel has no such key.']
    assert host.proc.get('net.core.rmem_max') == '49000000'
    assert 'net.ipv4.tcp_no_such_key =' not in read(host.path)


def test_optional_missing_key_with_null_fields_is_skipped(host, dropin):
    result = dropin([{'key': 'net.ipv4.udp_rmem_min_missing', 'value': [None, None, 49000000], 'optional': True},
                     {'key': 'net.core.rmem_max', 'value': 49000000}])
    assert result['rc'] == 0, result['msg']
    assert 'net.ipv4.udp_rmem_min_missing' in result['skipped_keys']
    assert host.proc.get('net.core.rmem_max') == '49000000'


def test_duplicate_keys_fail(host, dropin):
    result = dropin([{'key': 'net.core.rmem_max', 'value': 1}, {'key': 'net/core/rmem_max', 'value': 2}])
    assert result['rc'] == 1
    assert result['msg'] == 'settings: key net.core.rmem_max is listed twice; give each key once.'
    assert not os.path.exists(host.path)
    assert host.proc.get('net.core.rmem_max') == '212992'


@pytest.mark.parametrize('key', ['net.core.rmem max', 'net.core.rmem_max=1', '-', '  '])
def test_keys_that_are_not_sysctl_names_fail(host, dropin, key):
    result = dropin([{'key': key, 'value': 1}])
    assert result['rc'] == 1
    assert result['msg'] == 'settings: key %r is not a sysctl name such as net.ipv4.tcp_rmem.' % key


def test_key_escaping_proc_sys_is_refused(host, dropin, tmp_path):
    outside = tmp_path / 'outside'
    outside.write_text('0\n')
    result = dropin([{'key': 'net/../../outside', 'value': 1}])
    assert outside.read_text() == '0\n'
    assert result['rc'] == 1
    assert 'is not a sysctl name' in result['msg']


def test_state_present_requires_settings(host, dropin):
    result = dropin()
    assert result['rc'] == 1
    assert 'settings' in result['msg']
    assert not os.path.exists(host.path)


# --------------------------------------------------------------------------- congestion control

@pytest.fixture
def cc_source(monkeypatch):
    """Where the kernel would take an algorithm from (kmod.Kernel.congestion_source), as the test says."""
    sources = {}
    monkeypatch.setattr(dropin_utils.Kernel, 'congestion_source',
                        lambda self, algorithm, present: sources.get(algorithm, 'missing'))
    return sources


def test_congestion_control_the_kernel_lacks_fails(host, dropin, cc_source):
    host.proc.set('net.ipv4.tcp_available_congestion_control', 'reno cubic')
    result = dropin(BUFFERS + [{'key': 'net.ipv4.tcp_congestion_control', 'value': 'bbr'}])
    assert result['rc'] == 1
    assert result['msg'] == (
        'net.ipv4.tcp_congestion_control: the kernel (%s) has no bbr congestion control (available: reno cubic); '
        'use a kernel built with it (CONFIG_TCP_CONG_BBR).' % RELEASE)
    assert not os.path.exists(host.path)
    assert host.proc.get('net.ipv4.tcp_congestion_control') == 'cubic'
    assert host.proc.get('net.core.rmem_max') == '212992'


def test_congestion_control_in_an_unloaded_module_fails_with_the_fix(host, dropin, cc_source):
    host.proc.set('net.ipv4.tcp_available_congestion_control', 'reno cubic')
    cc_source['bbr'] = 'module'
    result = dropin([{'key': 'net.ipv4.tcp_congestion_control', 'value': 'bbr'}])
    assert result['rc'] == 1
    assert result['msg'].endswith('load its module first (modprobe tcp_bbr; the bbr role does this before it sets '
                                  'the default).')
    assert host.proc.get('net.ipv4.tcp_congestion_control') == 'cubic'


def test_check_mode_predicts_a_congestion_control_from_an_unloaded_module(host, dropin, cc_source):
    # Debian, Ubuntu, RHEL: tcp_bbr is a module; in check mode the bbr role did not load it
    host.proc.set('net.ipv4.tcp_available_congestion_control', 'reno cubic')
    cc_source['bbr'] = 'module'
    result = dropin([{'key': 'net.ipv4.tcp_congestion_control', 'value': 'bbr'}], _ansible_check_mode=True)
    assert result['rc'] == 0 and result['changed'] is True
    info = result['settings']['net.ipv4.tcp_congestion_control']
    assert info['status'] == 'changed' and info['wanted'] == 'bbr'
    assert info['note'] == 'available once the module tcp_bbr is loaded (check mode: not loaded)'
    assert 'net.ipv4.tcp_congestion_control = bbr' in result['diff'][0]['after']
    assert not os.path.exists(host.path)
    assert host.proc.get('net.ipv4.tcp_congestion_control') == 'cubic'


def test_check_mode_still_refuses_a_congestion_control_the_kernel_lacks(host, dropin, cc_source):
    host.proc.set('net.ipv4.tcp_available_congestion_control', 'reno cubic')
    result = dropin([{'key': 'net.ipv4.tcp_congestion_control', 'value': 'bbr'}], _ansible_check_mode=True)
    assert result['rc'] == 1
    assert 'has no bbr congestion control' in result['msg']


def test_available_congestion_control_is_set_on_the_host(host, dropin):
    # tcp_allowed_congestion_control does not matter in the initial namespace
    result = dropin([{'key': 'net.ipv4.tcp_congestion_control', 'value': 'bbr'}])
    assert result['rc'] == 0
    assert result['settings']['net.ipv4.tcp_congestion_control']['status'] == 'changed'
    assert host.proc.get('net.ipv4.tcp_congestion_control') == 'bbr'


# --------------------------------------------------------------------------- rollback

def test_kernel_refusing_a_value_rolls_back_live_values_and_new_file(host, dropin, monkeypatch):
    calls = refuse_writes(monkeypatch, 'net.ipv4.tcp_rmem', '4096 131072 49000000')
    result = dropin(BUFFERS)
    assert result['rc'] == 1
    assert result['msg'] == (
        'Applying %s failed and was rolled back (file and live values restored): [Errno 22] Invalid argument. '
        'Check the value against the kernel limits (see docs/troubleshooting.md).' % host.path)
    assert calls[:2] == [('net.core.rmem_max', '49000000'), ('net.ipv4.tcp_rmem', '4096 131072 49000000')]
    assert host.proc.get('net.core.rmem_max') == '212992'          # restored
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    assert not os.path.exists(host.path)                            # the new file is gone again
    assert result['settings']['net.core.rmem_max']['after'] == '212992'
    assert os.listdir(host.etc.etc) == []


def test_a_rollback_that_cannot_restore_a_value_says_so_instead_of_claiming_it_restored(host, dropin, monkeypatch):
    """Issue 15: restoring a live value fails too (here the kernel refuses net.core.rmem_max going back to 212992):
    the message must not say "file and live values restored"; it names the key, its value now and the one it should
    have got back, and says the rest was restored."""
    real = sysctl.write_live
    refused = {('net.ipv4.tcp_rmem', '4096 131072 49000000'), ('net.core.rmem_max', '212992')}

    def write_live(name, value, root=None):
        if (name, sysctl.normalize_value(value)) in refused:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        return real(name, value, root)

    monkeypatch.setattr(sysctl, 'write_live', write_live)
    result = dropin(BUFFERS)
    assert result['rc'] == 1
    assert 'restored)' not in result['msg'] and 'was rolled back' not in result['msg']
    assert result['msg'] == (
        "Applying %s failed: [Errno 1] Operation not permitted. The rollback is incomplete: net.core.rmem_max is "
        "still '49000000', not restored to '212992' ([Errno 1] Operation not permitted). Everything else was "
        "restored; put these back by hand (sysctl -w KEY=VALUE; see docs/troubleshooting.md)." % host.path)
    assert result['rollback_errors'] == [
        "net.core.rmem_max is still '49000000', not restored to '212992' ([Errno 1] Operation not permitted)"]
    assert host.proc.get('net.core.rmem_max') == '49000000'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    assert not os.path.exists(host.path)                            # the file was put back (none before)


def test_kernel_refusing_a_value_restores_the_previous_file(host, dropin, monkeypatch):
    old = '# previous version\nnet.core.rmem_max = 212992\n'
    host.etc.write(host.etc.etc, '90-bdp-wan-tune.conf', old)
    refuse_writes(monkeypatch, 'net.ipv4.tcp_rmem', '4096 131072 49000000')
    result = dropin(BUFFERS)
    assert result['rc'] == 1
    assert 'rolled back' in result['msg']
    assert read(host.path) == old
    assert host.proc.get('net.core.rmem_max') == '212992'


def test_readback_mismatch_rolls_back(host, dropin, monkeypatch):
    real = sysctl.write_live

    def clamping_kernel(key, value, root=None):
        if key == 'net.core.rmem_max' and sysctl.normalize_value(value) == '49000000':
            value = '16777216'          # accepted, but the kernel keeps another value
        return real(key, value, root)

    monkeypatch.setattr(sysctl, 'write_live', clamping_kernel)
    result = dropin(BUFFERS)
    assert result['rc'] == 1
    assert "the kernel did not take: net.core.rmem_max is '16777216', wanted '49000000'" in result['msg']
    assert 'rolled back' in result['msg']
    assert host.proc.get('net.core.rmem_max') == '212992'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    assert not os.path.exists(host.path)


def test_readback_via_read_live_mismatch_rolls_back(host, dropin, monkeypatch):
    """Patch the read side instead: after the write, the kernel reports something else."""
    real_read, real_write = sysctl.read_live, sysctl.write_live
    written = set()

    def write_live(key, value, root=None):
        written.add(key)
        return real_write(key, value, root)

    def read_live(key, root=None):
        if key == 'net.ipv4.tcp_rmem' and key in written:
            return '4096 131072 33554432'
        return real_read(key, root)

    monkeypatch.setattr(sysctl, 'write_live', write_live)
    monkeypatch.setattr(sysctl, 'read_live', read_live)
    result = dropin(BUFFERS)
    assert result['rc'] == 1
    assert "net.ipv4.tcp_rmem is '4096 131072 33554432', wanted '4096 131072 49000000'" in result['msg']
    assert real_read('net.core.rmem_max') == '212992'
    assert real_read('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    assert not os.path.exists(host.path)


# --------------------------------------------------------------------------- overrides

def test_overrides_from_a_later_file_are_returned_and_warned(host, dropin):
    host.etc.write(host.etc.etc, '10-early.conf', 'net.core.rmem_max = 1048576\n')
    host.etc.write_conf('net.core.rmem_max = 8388608\nnet.ipv4.tcp_rmem = 4096 131072 49000000\n')
    result = dropin(BUFFERS)
    assert result['rc'] == 0
    assert result['overrides'] == [{'file': host.etc.conf, 'key': 'net.core.rmem_max', 'value': '8388608',
                                    'ours': '49000000'}]
    assert result['warning_msgs'] == [
        '%s sets net.core.rmem_max = 8388608 and is applied after this file at boot, so the host will come up with '
        '8388608 instead of 49000000; remove that line or the key from it.' % host.etc.conf]


def test_overrides_are_reported_in_check_mode(host, dropin):
    late = host.etc.write(host.etc.usr, '95-vendor.conf', 'net.ipv4.tcp_rmem = 4096 87380 6291456\n')
    result = dropin(BUFFERS, _ansible_check_mode=True)
    assert [(item['file'], item['key']) for item in result['overrides']] == [(late, 'net.ipv4.tcp_rmem')]


def test_skipped_keys_are_not_checked_for_overrides(container, dropin):
    container.etc.write_conf('net.core.rmem_max = 8388608\n')
    result = dropin(BUFFERS)
    assert result['overrides'] == []


# --------------------------------------------------------------------------- absent

def test_absent_removes_the_file_and_restores_keys_still_at_our_value(host, dropin):
    dropin(BUFFERS)
    host.proc.set('net.ipv4.tcp_rmem', '4096 131072 8388608')      # changed by someone else since
    result = dropin(state='absent')
    assert result['rc'] == 0, result
    assert result['changed'] is True
    assert result['restored'] == {'net.core.rmem_max': '212992'}
    assert host.proc.get('net.core.rmem_max') == '212992'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 8388608'   # left alone
    assert not os.path.exists(host.path)
    assert not os.path.exists(host.state_file)


def test_absent_restores_all_keys(host, dropin):
    dropin(BUFFERS)
    result = dropin(state='absent', _ansible_diff=True)
    assert result['restored'] == {'net.core.rmem_max': '212992', 'net.ipv4.tcp_rmem': '4096 131072 6291456'}
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    file_text = sysctl.render('', [('net.core.rmem_max', '49000000', BUFFERS[0]['comment']),
                                   ('net.ipv4.tcp_rmem', '4096 131072 49000000', '')])
    assert result['diff'] == [
        {'before': file_text, 'after': '', 'before_header': host.path, 'after_header': host.path},
        {'before': 'net.core.rmem_max = 49000000\nnet.ipv4.tcp_rmem = 4096 131072 49000000\n',
         'after': 'net.core.rmem_max = 212992\nnet.ipv4.tcp_rmem = 4096 131072 6291456\n',
         'before_header': 'live values (/proc/sys)', 'after_header': 'live values (/proc/sys)'},
    ]
    assert not os.path.exists(host.state_dir)           # removed once empty


def test_absent_keeps_a_state_dir_shared_with_other_files(host, dropin):
    dropin(BUFFERS)
    other = os.path.join(host.state_dir, '80-other.conf.json')
    with open(other, 'w') as handle:
        handle.write('{}')
    dropin(state='absent')
    assert not os.path.exists(host.state_file)
    assert os.path.exists(other)


def test_absent_keeps_the_first_original_over_several_runs(host, dropin):
    dropin([{'key': 'net.core.rmem_max', 'value': 33554432}])
    dropin([{'key': 'net.core.rmem_max', 'value': 49000000}])
    result = dropin(state='absent')
    assert result['restored'] == {'net.core.rmem_max': '212992'}
    assert host.proc.get('net.core.rmem_max') == '212992'


def test_absent_twice_is_unchanged(host, dropin):
    dropin(BUFFERS)
    assert dropin(state='absent')['changed'] is True
    result = dropin(state='absent')
    assert result['rc'] == 0
    assert result['changed'] is False
    assert result['restored'] == {}


def test_absent_without_anything_is_unchanged(host, dropin):
    result = dropin(state='absent')
    assert result['changed'] is False
    assert result['restored'] == {}


def test_absent_check_mode_changes_nothing(host, dropin):
    dropin(BUFFERS)
    result = dropin(state='absent', _ansible_check_mode=True)
    assert result['changed'] is True
    assert result['restored'] == {'net.core.rmem_max': '212992', 'net.ipv4.tcp_rmem': '4096 131072 6291456'}
    assert os.path.exists(host.path)
    assert os.path.exists(host.state_file)
    assert host.proc.get('net.core.rmem_max') == '49000000'


def test_absent_failing_restore_keeps_the_file(host, dropin, monkeypatch):
    dropin(BUFFERS)
    working = sysctl.write_live
    refuse_writes(monkeypatch, 'net.ipv4.tcp_rmem')
    result = dropin(state='absent')
    assert result['rc'] == 1
    assert result['msg'].startswith('Restoring net.ipv4.tcp_rmem to 4096 131072 6291456 failed: ')
    assert 'The other keys were restored' in result['msg']
    assert 'were kept so that a second rollback can retry' in result['msg']
    assert os.path.exists(host.path)
    # every other key was restored; the file and the whole record stay (a reboot before the retry would bring
    # this file's values back, and the retry must still know what the host had)
    assert host.proc.get('net.core.rmem_max') == '212992'
    with open(host.state_file) as handle:
        assert json.load(handle)['original'] == {'net.core.rmem_max': '212992', 'net.ipv4.tcp_rmem': '4096 131072 6291456'}
    monkeypatch.setattr(sysctl, 'write_live', working)      # the cause is fixed: a second rollback finishes
    retry = dropin(state='absent')
    assert retry['rc'] == 0 and retry['restored'] == {'net.ipv4.tcp_rmem': '4096 131072 6291456'}
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    assert not os.path.exists(host.path) and not os.path.exists(host.state_file)


# --------------------------------------------------------------------------- file mode

@pytest.fixture
def strict_umask():
    old = os.umask(0o077)
    yield
    os.umask(old)


def test_file_mode_is_0644_whatever_the_umask(host, dropin, strict_umask):
    result = dropin(BUFFERS)
    assert result['rc'] == 0
    assert stat.S_IMODE(os.stat(host.path).st_mode) == 0o644


# --------------------------------------------------------------------------- floors follow the collection's own inputs down

def buffers(size):
    return [{'key': 'net.core.rmem_max', 'value': size, 'floor': True},
            {'key': 'net.ipv4.tcp_rmem', 'value': [None, None, size], 'floor': True}]


def test_a_lower_rate_lowers_the_collections_own_values(host, dropin):
    assert dropin(buffers(980000000))['rc'] == 0                 # 10g, 98 ms
    result = dropin(buffers(98000000))                           # then 1g, 98 ms
    assert result['rc'] == 0 and result['changed'] is True
    assert host.proc.get('net.core.rmem_max') == '98000000'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 98000000'
    info = result['settings']['net.core.rmem_max']
    assert 'requested' not in info and info['host_before_first_run'] == '212992'
    # the record still holds what the host had before the first run
    with open(host.state_file) as handle:
        assert json.load(handle)['original'] == {'net.core.rmem_max': '212992',
                                                 'net.ipv4.tcp_rmem': '4096 131072 6291456'}


def test_never_below_what_the_host_had_before_the_first_run(host, dropin):
    dropin(buffers(980000000))
    result = dropin(buffers(100000))                             # far below the host's own values
    assert host.proc.get('net.core.rmem_max') == '212992'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 6291456'
    assert result['settings']['net.ipv4.tcp_rmem']['requested'] == '4096 131072 100000'
    # allow_lower goes below the host's own value
    dropin(buffers(100000), allow_lower=True)
    assert host.proc.get('net.core.rmem_max') == '100000'
    # and state=absent still brings back what the host had before the first run
    assert dropin(state='absent')['restored'] == {'net.core.rmem_max': '212992', 'net.ipv4.tcp_rmem': '4096 131072 6291456'}
    assert host.proc.get('net.core.rmem_max') == '212992'


def test_a_value_someone_else_raised_since_is_a_floor(host, dropin):
    dropin(buffers(98000000))
    host.proc.set('net.core.rmem_max', '500000000')              # an admin raised it by hand since
    result = dropin(buffers(49000000))
    assert host.proc.get('net.core.rmem_max') == '500000000'
    assert result['settings']['net.core.rmem_max']['requested'] == '49000000'
    assert host.proc.get('net.ipv4.tcp_rmem') == '4096 131072 49000000'   # still the collection's own: lowered


# --------------------------------------------------------------------------- memory guard and tcp_mem (issue 7, item 6)

GIB = 2 ** 30
TCP_MEM_16G = '196608\t262144\t393216'         # the kernel's own tcp_mem for 16 GiB (pages of 4096 bytes)
TCP_MEM_32G = '393216\t524288\t786432'
BUFFER_10G_98 = 980000000                      # 8 x BDP at 10 Gbit/s, 98 ms
MEMINFO = 'MemTotal:       %d kB\nMemFree:        1000000 kB\nMemAvailable:   2000000 kB\n'


@pytest.fixture
def ram(host, tmp_path, monkeypatch):
    """ram(gib, tcp_mem): a fake /proc/meminfo with that MemTotal, 4096-byte pages, and that net.ipv4.tcp_mem."""
    path = str(tmp_path / 'meminfo')
    monkeypatch.setattr(dropin_utils, 'MEMINFO', path)
    monkeypatch.setattr(dropin_utils, 'page_size', lambda: 4096)

    def set_host(gib, tcp_mem):
        with open(path, 'w') as handle:
            handle.write(MEMINFO % (gib * 2 ** 20))
        host.proc.set('net.ipv4.tcp_mem', tcp_mem)
        return host

    return set_host


def guard(flows=4, buffer_bytes=BUFFER_10G_98, **extra):
    return dict({'flows': flows, 'buffer_bytes': buffer_bytes}, **extra)


def test_meminfo_is_read_in_bytes(tmp_path, monkeypatch):
    path = tmp_path / 'meminfo'
    path.write_text('MemTotal:       24684096 kB\nMemFree:        23097496 kB\n')
    monkeypatch.setattr(dropin_utils, 'MEMINFO', str(path))
    assert dropin_utils.mem_total_bytes() == 24684096 * 1024
    path.write_text('garbage\n')
    assert dropin_utils.mem_total_bytes() is None
    monkeypatch.setattr(dropin_utils, 'MEMINFO', str(tmp_path / 'missing'))
    assert dropin_utils.mem_total_bytes() is None
    assert dropin_utils.page_size() == os.sysconf('SC_PAGE_SIZE')


def test_guard_warns_about_tcp_mem_without_changing_it(ram, dropin):
    host = ram(16, TCP_MEM_16G)
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard())
    assert result['rc'] == 0, result
    assert result['warning_msgs'] == [
        '4 flows x 980000000-byte buffers need 3738 MiB (957032 pages of 4096 bytes), above the net.ipv4.tcp_mem '
        'pressure mark of 262144 pages (1024 MiB; max 393216 pages, 1536 MiB). Past pressure the kernel shrinks the '
        'buffers of all TCP sockets and stops autotuning, so these flows cannot all grow to full size: lower the flow '
        'count or the headroom, or opt in to raising net.ipv4.tcp_mem to fit (tcp_buffers_fit_tcp_mem: true; module '
        'option memory_guard.fit_tcp_mem), which would set it to 196608 957032 1048576 (max capped at 25% of RAM).']
    assert host.proc.get('net.ipv4.tcp_mem') == '196608 262144 393216'
    assert 'net.ipv4.tcp_mem' not in result['settings']
    assert 'tcp_mem' not in read(host.path)
    memory = result['memory']
    assert {key: memory[key] for key in ('mem_total_bytes', 'page_size', 'tcp_mem', 'needed_bytes', 'needed_pages',
                                         'fits', 'proposed_tcp_mem', 'tcp_mem_capped', 'fit_tcp_mem')} == {
        'mem_total_bytes': 16 * GIB, 'page_size': 4096, 'tcp_mem': [196608, 262144, 393216],
        'needed_bytes': 3920000000, 'needed_pages': 957032, 'fits': False,
        'proposed_tcp_mem': [196608, 957032, 1048576], 'tcp_mem_capped': True, 'fit_tcp_mem': False}
    assert memory['warnings'] == result['warning_msgs']
    assert memory['summary'].endswith('; 25% of RAM = 4096 MiB; does not fit: see the warnings')
    assert json.loads(read(host.state_file))['original'] == {'net.core.rmem_max': '212992',
                                                             'net.ipv4.tcp_rmem': '4096 131072 6291456'}


def test_guard_is_silent_when_the_flows_fit(ram, dropin):
    host = ram(16, TCP_MEM_16G)
    result = dropin(buffers(98000000), memory_guard=guard(buffer_bytes=98000000, fit_tcp_mem=True))
    assert result['rc'] == 0 and result['warning_msgs'] == []
    assert result['memory']['fits'] is True
    assert result['memory']['summary'].endswith('; fits')
    assert 'net.ipv4.tcp_mem' not in result['settings']                 # nothing to raise: not pinned in the file
    assert host.proc.get('net.ipv4.tcp_mem') == '196608 262144 393216'


def test_guard_keeps_the_ram_share_warning(ram, dropin):
    ram(4, '1000000 2000000 3000000')                                   # tcp_mem is no limit here
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard())
    assert result['warning_msgs'] == [
        "4 flows x 980000000-byte buffers need 3738 MiB, more than 25% of this host's 4096 MiB RAM; "
        "lower the flow count or headroom, or check net.ipv4.tcp_mem (pages) allows it."]


def test_fit_tcp_mem_raises_it_exactly_per_the_rule(ram, dropin):
    host = ram(32, TCP_MEM_32G)
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert result['rc'] == 0, result
    assert result['warning_msgs'] == []
    # pressure = ceil(3920000000 / 4096) = 957032; max = ceil(957032 x 3 / 2) = 1435548 (<= 25 % of 32 GiB); min kept
    assert host.proc.get('net.ipv4.tcp_mem') == '393216 957032 1435548'
    assert result['settings']['net.ipv4.tcp_mem'] == {
        'before': '393216 524288 786432', 'after': '393216 957032 1435548', 'wanted': '393216 957032 1435548',
        'status': 'changed'}
    text = read(host.path)
    assert text.endswith('\n# memory_guard.fit_tcp_mem: pressure holds 4 flows x 980000000 bytes (957032 pages of '
                         '4096 bytes); max = 3/2 x pressure, at most 25% of RAM; min as the host had it.\n'
                         'net.ipv4.tcp_mem = 393216 957032 1435548\n')
    assert json.loads(read(host.state_file))['original']['net.ipv4.tcp_mem'] == '393216 524288 786432'
    assert result['memory']['proposed_tcp_mem'] == [393216, 957032, 1435548]
    assert result['memory']['summary'].endswith(
        '; net.ipv4.tcp_mem 393216 524288 786432 -> 393216 957032 1435548; fits')
    again = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert again['changed'] is False and again['warning_msgs'] == []
    assert again['settings']['net.ipv4.tcp_mem']['status'] == 'ok'


def test_fit_tcp_mem_caps_max_at_the_memory_share_and_warns(ram, dropin):
    host = ram(16, TCP_MEM_16G)
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert result['rc'] == 0, result
    assert host.proc.get('net.ipv4.tcp_mem') == '196608 957032 1048576'       # max = 25 % of 16 GiB in pages
    assert result['warning_msgs'] == [
        "4 flows x 980000000-byte buffers do not fit with the kernel's margin within 25% of this host's 16384 MiB "
        "RAM: raising the net.ipv4.tcp_mem pressure mark to 957032 pages (3738 MiB) for them needs max 1435548 pages "
        "(5607 MiB; 3/2 x pressure, the kernel's own ratio), so max is capped at 1048576 pages (4096 MiB); "
        "net.ipv4.tcp_mem is set to 196608 957032 1048576. Lower the flow count or the headroom, or raise "
        "tcp_buffers_memory_share if the host can spare the memory."]
    assert result['memory']['tcp_mem_capped'] is True
    # a larger share lifts the cap
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True, memory_share=0.5))
    assert host.proc.get('net.ipv4.tcp_mem') == '196608 957032 1435548'
    assert result['warning_msgs'] == []


def test_fit_tcp_mem_never_lowers_the_host_values(ram, dropin):
    host = ram(32, '500000 2000000 3000000')
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert result['warning_msgs'] == []
    assert 'net.ipv4.tcp_mem' not in result['settings']
    assert host.proc.get('net.ipv4.tcp_mem') == '500000 2000000 3000000'
    host.proc.set('net.ipv4.tcp_mem', '500000 600000 3000000')           # only the pressure is too low
    dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert host.proc.get('net.ipv4.tcp_mem') == '500000 957032 3000000'


def test_fit_tcp_mem_follows_the_collections_own_inputs_down(ram, dropin):
    host = ram(32, TCP_MEM_32G)
    dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert host.proc.get('net.ipv4.tcp_mem') == '393216 957032 1435548'
    # then 1 flow: 239258 pages fit below the host's own pressure, so the raise is taken back
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(flows=1, fit_tcp_mem=True))
    assert result['changed'] is True
    assert host.proc.get('net.ipv4.tcp_mem') == '393216 524288 786432'
    assert 'net.ipv4.tcp_mem = 393216 524288 786432\n' in read(host.path)
    assert dropin(buffers(BUFFER_10G_98), memory_guard=guard(flows=1, fit_tcp_mem=True))['changed'] is False


def test_fit_tcp_mem_check_mode_predicts(ram, dropin):
    host = ram(32, TCP_MEM_32G)
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True), _ansible_check_mode=True,
                    _ansible_diff=True)
    assert result['rc'] == 0 and result['changed'] is True
    info = result['settings']['net.ipv4.tcp_mem']
    assert info['status'] == 'changed' and info['wanted'] == '393216 957032 1435548'
    assert info['after'] == '393216 524288 786432'
    assert 'net.ipv4.tcp_mem = 393216 524288 786432\n' in result['diff'][1]['before']
    assert 'net.ipv4.tcp_mem = 393216 957032 1435548\n' in result['diff'][1]['after']
    assert 'net.ipv4.tcp_mem = 393216 957032 1435548\n' in result['diff'][0]['after']
    assert host.proc.get('net.ipv4.tcp_mem') == '393216 524288 786432'
    assert not os.path.exists(host.path) and not os.path.exists(host.state_dir)


def test_absent_restores_tcp_mem(ram, dropin):
    host = ram(32, TCP_MEM_32G)
    dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    result = dropin(state='absent')
    assert result['rc'] == 0
    assert result['restored']['net.ipv4.tcp_mem'] == '393216 524288 786432'
    assert host.proc.get('net.ipv4.tcp_mem') == '393216 524288 786432'
    assert not os.path.exists(host.path) and not os.path.exists(host.state_file)


def test_fit_tcp_mem_in_a_container_is_skipped_with_a_warning(ram, container, dropin):
    ram(32, TCP_MEM_32G)
    container.proc.readonly('net.ipv4.tcp_mem', TCP_MEM_32G)               # host-wide: read-only in a container
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert result['rc'] == 0, result
    assert result['skipped_keys']['net.ipv4.tcp_mem'] == NAMESPACE_REASON
    assert container.proc.get('net.ipv4.tcp_mem') == '393216 524288 786432'
    assert 'net.ipv4.tcp_mem =' not in read(container.path)
    assert 'net.ipv4.tcp_mem was not set to 393216 957032 1435548: %s.' % NAMESPACE_REASON in result['warning_msgs']
    # not raised, so the warning against the live value is shown
    assert any(msg.startswith('4 flows x 980000000-byte buffers need 3738 MiB') for msg in result['warning_msgs'])
    assert container.proc.get('net.ipv4.tcp_rmem') == '4096 131072 980000000'   # per-namespace keys still set
    strict = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True), strict=True)
    assert strict['rc'] == 1 and 'net.ipv4.tcp_mem (%s)' % NAMESPACE_REASON in strict['msg']


def test_flows_as_a_string_of_digits(ram, dropin):
    ram(32, TCP_MEM_32G)
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(flows='4'))
    assert result['rc'] == 0 and result['memory']['flows'] == 4
    bad = dropin(buffers(BUFFER_10G_98), memory_guard=guard(flows=0))
    assert bad['rc'] == 1 and bad['msg'].startswith('memory_guard: memory_guard.flows: 0 is not usable')


def test_fit_tcp_mem_refuses_tcp_mem_in_the_settings(ram, dropin):
    host = ram(32, TCP_MEM_32G)
    result = dropin(buffers(BUFFER_10G_98) + [{'key': 'net.ipv4.tcp_mem', 'value': '1 2 3'}],
                    memory_guard=guard(fit_tcp_mem=True))
    assert result['rc'] == 1
    assert result['msg'] == ('memory_guard: fit_tcp_mem sets net.ipv4.tcp_mem itself; remove that key from the '
                             'settings or set fit_tcp_mem to false.')
    assert not os.path.exists(host.path)


def test_unreadable_meminfo_checks_tcp_mem_only(ram, dropin, monkeypatch, tmp_path):
    host = ram(32, TCP_MEM_32G)
    monkeypatch.setattr(dropin_utils, 'MEMINFO', str(tmp_path / 'missing'))
    result = dropin(buffers(BUFFER_10G_98), memory_guard=guard(fit_tcp_mem=True))
    assert result['rc'] == 0
    assert result['warning_msgs'][0] == ('memory_guard: could not read MemTotal from %s on this host, so that check '
                                         'was left out and net.ipv4.tcp_mem is not changed.' % (tmp_path / 'missing'))
    assert result['warning_msgs'][1].startswith('4 flows x 980000000-byte buffers need 3738 MiB')
    assert host.proc.get('net.ipv4.tcp_mem') == '393216 524288 786432'


def test_without_memory_guard_nothing_is_read(host, dropin, monkeypatch):
    monkeypatch.setattr(dropin_utils, 'mem_total_bytes', lambda: pytest.fail('meminfo read'))
    result = dropin(BUFFERS)
    assert result['rc'] == 0 and 'memory' not in result


def test_a_key_no_longer_managed_goes_back_to_the_host_value(host, dropin):
    """tcp_buffers_companions (or fit_tcp_mem) switched off: the key leaves the file and gets the host's value back."""
    with_backlog = buffers(98000000) + [{'key': 'net.core.netdev_max_backlog', 'value': 2500, 'floor': True}]
    dropin(with_backlog)
    assert host.proc.get('net.core.netdev_max_backlog') == '2500'
    check = dropin(buffers(98000000), _ansible_check_mode=True)
    assert check['changed'] is True and host.proc.get('net.core.netdev_max_backlog') == '2500'
    assert check['settings']['net.core.netdev_max_backlog'] == {
        'before': '2500', 'after': '2500', 'wanted': '1000', 'status': 'changed', 'given_back': True}
    result = dropin(buffers(98000000))
    assert result['changed'] is True
    assert host.proc.get('net.core.netdev_max_backlog') == '1000'
    with open(host.path) as handle:
        assert 'netdev_max_backlog' not in handle.read()
    with open(host.state_file) as handle:
        assert 'net.core.netdev_max_backlog' not in json.load(handle)['original']
    assert dropin(buffers(98000000))['changed'] is False
    # and the rollback still restores the keys the file manages
    assert dropin(state='absent')['restored'] == {'net.core.rmem_max': '212992', 'net.ipv4.tcp_rmem': '4096 131072 6291456'}


def test_a_key_no_longer_managed_that_someone_changed_is_left_alone(host, dropin):
    dropin(buffers(98000000) + [{'key': 'net.core.netdev_max_backlog', 'value': 2500, 'floor': True}])
    host.proc.set('net.core.netdev_max_backlog', '5000')          # the admin's since
    result = dropin(buffers(98000000))
    assert 'net.core.netdev_max_backlog' not in result['settings']
    assert host.proc.get('net.core.netdev_max_backlog') == '5000'


# ---------------------------------------------------------------- congestion: the bbr request in the same execution
SETTINGS = [{'key': 'net.core.rmem_max', 'value': 49000000, 'floor': True}]


def fake_congestion(monkeypatch, seen, result=None, fail=None):
    """congestion.run replaced: records the module as the engine saw it; returns ``result`` or fails with ``fail``."""
    from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import congestion

    def run(module, state):
        seen.append((dict(module.params), state, module.check_mode))
        if fail:
            module.fail_json(msg=fail, kernel='6.1.0-28-amd64', loaded=[])
        return dict(result)
    monkeypatch.setattr(congestion, 'run', run)


def test_congestion_runs_first_with_its_defaults_and_this_state_dir(host, dropin, monkeypatch):
    seen = []
    diff = [{'before': '', 'after': 'tcp_bbr\n', 'before_header': 'm', 'after_header': 'm'}]
    fake_congestion(monkeypatch, seen, {'changed': True, 'kernel': '6.1.0-28-amd64', 'diff': diff})
    result = dropin(SETTINGS, congestion={'sysctl_file': '/etc/sysctl.d/90-bbr.conf', 'verify': True})
    assert result['rc'] == 0, result
    params, state, check_mode = seen[0]
    assert state == 'available' and check_mode is False
    assert params == {'algorithm': 'bbr', 'qdisc': 'fq', 'interfaces': [], 'header': '',
                      'modules_load_file': '/etc/modules-load.d/bdp-wan-tune.conf', 'strict': False,
                      'sysctl_file': '/etc/sysctl.d/90-bbr.conf', 'verify': True, 'state_dir': host.state_dir}
    assert result['congestion'] == {'changed': True, 'kernel': '6.1.0-28-amd64', 'diff': diff}
    # this module's own file as without the option: written, applied, and its result at the top level
    assert result['settings']['net.core.rmem_max']['status'] == 'changed'
    assert os.path.exists(host.path)
    assert result['changed'] is True
    assert result['diff'][0] == diff[0] and result['diff'][1]['after_header'] == host.path


def test_congestion_changed_alone_makes_the_run_changed(host, dropin, monkeypatch):
    assert dropin(SETTINGS)['rc'] == 0
    fake_congestion(monkeypatch, [], {'changed': True, 'diff': []})
    result = dropin(SETTINGS, congestion={'sysctl_file': '/etc/sysctl.d/90-bbr.conf'})
    assert result['settings']['net.core.rmem_max']['status'] == 'ok'
    assert result['changed'] is True
    fake_congestion(monkeypatch, [], {'changed': False, 'diff': []})
    assert dropin(SETTINGS, congestion={'sysctl_file': '/etc/sysctl.d/90-bbr.conf'})['changed'] is False


def test_a_failed_congestion_request_leaves_this_file_alone(host, dropin, monkeypatch):
    fake_congestion(monkeypatch, [], fail='Kernel 6.1.0-28-amd64 has no bbr congestion control')
    result = dropin(SETTINGS, congestion={'sysctl_file': '/etc/sysctl.d/90-bbr.conf'})
    assert result['rc'] == 1
    assert result['msg'] == 'Kernel 6.1.0-28-amd64 has no bbr congestion control'
    assert result['congestion'] == {'failed': True, 'msg': result['msg'], 'kernel': '6.1.0-28-amd64', 'loaded': []}
    assert not os.path.exists(host.path)
    assert host.proc.get('net.core.rmem_max') == HOST['net.core.rmem_max']


def test_congestion_goes_with_state_present_only(host, dropin, monkeypatch):
    seen = []
    fake_congestion(monkeypatch, seen, {'changed': False, 'diff': []})
    result = dropin(state='absent', congestion={'sysctl_file': '/etc/sysctl.d/90-bbr.conf'})
    assert result['rc'] == 1 and 'state=present only' in result['msg']
    assert seen == []
