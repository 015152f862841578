# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Device nodes over TLS (issue 36): the TLS daemon's unit as the rsync_daemon role renders it lets rsync create
device nodes only with rsync_daemon_devices, and the receiver's reading of a unit's settings (module_utils/migrate/
receiver.py) agrees with the unit; the runner gives devices up with --no-devices (a real rsync skips them, keeps a
FIFO); the report lists device nodes as kept only when they were.  The filesystem's attributes asked without a
write; the receiver's bytes remembered from the last pass."""

from __future__ import annotations

import os
import subprocess

import pytest

from role_templates import render

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import receiver
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls


def unit_text(devices):
    return render('rsync_daemon', 'bdp-rsync-tls.service.j2', {
        'ansible_managed': 'managed', 'rsync_daemon_devices': devices, '__rsync_daemon_stunnel': '/usr/bin/stunnel4',
        '__rsync_daemon_tls': rsynctls.layout('m1', receiver='receiver')})


def properties(text):
    """The unit's settings as ``systemctl show`` gives them (capabilities in lower case, DeviceAllow a list), for
    what decides device nodes; the system call filter is left out (systemctl shows it expanded)."""
    out = {'LoadState': 'loaded', 'User': '', 'DeviceAllow': []}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if not sep or line.startswith('#'):
            continue
        if key == 'DeviceAllow':
            out[key].append(value)
        elif key in ('PrivateDevices', 'DevicePolicy', 'User'):
            out[key] = value
        elif key == 'CapabilityBoundingSet':
            out[key] = value.lower()
    return out


def test_the_tls_unit_lets_rsync_create_device_nodes_only_with_rsync_daemon_devices():
    sealed, open_ = unit_text(False), unit_text(True)
    assert 'PrivateDevices=yes\n' in sealed and 'CAP_MKNOD' not in sealed and 'DeviceAllow' not in sealed
    assert receiver.device_nodes('bdp-rsync-tls.service', properties(sealed)) == (
        False, 'bdp-rsync-tls.service has PrivateDevices=yes, no CAP_MKNOD in CapabilityBoundingSet')
    # creation only: m for every character and block device, no r or w; the rest of the sandbox as before
    assert 'PrivateDevices=no\nDevicePolicy=closed\nDeviceAllow=char-* m\nDeviceAllow=block-* m\n' in open_
    assert ' CAP_SETFCAP CAP_MKNOD\n' in open_
    assert receiver.device_nodes('bdp-rsync-tls.service', properties(open_)) == (True, '')
    assert [line for line in sealed.splitlines() if 'Device' not in line and 'Capability' not in line] == [
        line for line in open_.splitlines() if 'Device' not in line and 'Capability' not in line
        and not line.startswith('# Device nodes') and not line.startswith('# drop that')]


@pytest.mark.parametrize('change, why', [
    ({'DeviceAllow': ['char-* m']}, 'DevicePolicy=closed with DeviceAllow=char-* m'),
    ({'DeviceAllow': ['char-* rw', 'block-* rw']}, 'DevicePolicy=closed with DeviceAllow=char-* rw, block-* rw'),
    ({'DevicePolicy': 'auto', 'DeviceAllow': []}, None),
    ({'DevicePolicy': 'strict', 'DeviceAllow': []}, 'DevicePolicy=strict with DeviceAllow=none'),
    ({'User': 'rsync'}, 'User=rsync'),
    ({'SystemCallFilter': '~@raw-io mknod mknodat'}, 'SystemCallFilter without mknodat'),
    ({'SystemCallFilter': 'chroot openat'}, 'SystemCallFilter without mknodat'),
    ({'SystemCallFilter': 'chroot mknodat openat'}, None),
    ({'LoadState': 'not-found'}, None),
])
def test_each_setting_that_stops_mknod_is_named(change, why):
    props = dict(properties(unit_text(True)), **change)
    able, text = receiver.device_nodes('bdp-rsync-tls.service', props)
    if change.get('LoadState'):
        assert (able, text) == (False, 'bdp-rsync-tls.service is not loaded (not-found)')
    else:
        assert able is (why is None) and text == ('' if why is None else 'bdp-rsync-tls.service has ' + why)


FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'migrate')


@pytest.mark.parametrize('name, able', [('sealed', False), ('devices', True)])
def test_systemctl_show_of_systemd_252_is_read_as_it_prints_it(name, able):
    """The output of ``systemctl show`` in the lab's Debian 12 container (systemd 252) for a transient unit with the
    TLS unit's device settings, default and rsync_daemon_devices (in that container mknod of a character device
    failed with the first and worked with the second)."""
    with open(os.path.join(FIXTURES, 'systemctl-show-%s.txt' % name), encoding='utf-8') as handle:
        text = handle.read()
    out = receiver.daemon(['bdp-rsync-tls.service'], lambda unit: (text, None))
    assert (out['unit'], out['cpu_ns'], out['device_nodes']) == ('bdp-rsync-tls.service', None, able)
    assert out['device_nodes_why'] == ('' if able else 'bdp-rsync-tls.service has PrivateDevices=yes, no CAP_MKNOD in '
                                       'CapabilityBoundingSet, DevicePolicy=closed with DeviceAllow=none')


def test_the_daemon_read_is_the_active_unit_else_the_loaded_one():
    shown = {'rsync.service': 'LoadState=loaded\nActiveState=inactive\nCPUUsageNSec=[not set]\nPrivateDevices=yes\n',
             'rsyncd.service': 'LoadState=not-found\nActiveState=inactive\n'}
    out = receiver.daemon(['rsync.service', 'rsyncd.service'], lambda unit: (shown[unit], None))
    assert (out['unit'], out['cpu_ns'], out['device_nodes']) == ('rsync.service', None, False)
    shown['rsyncd.service'] = 'LoadState=loaded\nActiveState=active\nCPUUsageNSec=77\n'
    out = receiver.daemon(['rsync.service', 'rsyncd.service'], lambda unit: (shown[unit], None))
    assert (out['unit'], out['cpu_ns']) == ('rsyncd.service', 77)
    none = receiver.daemon(['a.service'], lambda unit: ('LoadState=not-found\n', None))
    assert none['unit'] is None and none['device_nodes_why'] == 'none of a.service is loaded'


def test_attributes_are_asked_without_a_write(tmp_path):
    # this machine's ext4 or tmpfs keeps both; procfs keeps neither: EOPNOTSUPP, not a guess
    assert receiver.keeps(str(tmp_path), receiver.XATTR_NAME) == ('yes', '')
    assert receiver.keeps(str(tmp_path), receiver.ACL_NAME) == ('yes', '')
    assert receiver.keeps('/proc', receiver.XATTR_NAME) == ('no', '')
    assert receiver.keeps('/proc', receiver.ACL_NAME) == ('no', '')
    assert receiver.keeps(str(tmp_path / 'missing'), receiver.ACL_NAME)[0] == 'unknown'
    kind, point, dummy = receiver.filesystem('/proc/self')
    assert (kind, point) == ('proc', '/proc')


def test_the_receivers_bytes_remembered_from_the_last_pass():
    assert receiver.remembered(None) is None and receiver.remembered({}) is None
    last = {'state': 'done', 'bytes_total': 900, 'bytes_done': 100, 'present_bytes': 800}
    assert receiver.remembered(last) == 900
    # a pass that did not end done left what was there and what it sent, never more than the tree
    assert receiver.remembered(dict(last, state='interrupted', bytes_done=50)) == 850
    assert receiver.remembered(dict(last, state='failed', bytes_done=500)) == 900
    assert receiver.remembered(dict(last, state='refused', bytes_done=0)) == 800


def test_devices_given_up_are_left_to_rsync_with_no_devices(tmp_path):
    config = {'password_file': '/nonexistent', 'preserve': {'acls': True, 'xattrs': True, 'sparse': True}}
    assert '--no-devices' not in runner.options(config)                  # a config of before: -a's devices
    assert '--no-devices' not in runner.options(dict(config, preserve=dict(config['preserve'], devices=True)))
    given_up = runner.options(dict(config, preserve=dict(config['preserve'], devices=False)))
    assert '--no-devices' in given_up
    source, dest = tmp_path / 'src', tmp_path / 'dst'
    source.mkdir()
    dest.mkdir()
    os.mkfifo(str(source / 'fifo'))
    try:
        os.mknod(str(source / 'null'), 0o600 | 0o020000, os.makedev(1, 3))
    except PermissionError:
        pytest.skip('making a device node needs CAP_MKNOD')
    local = [option for option in given_up if not option.startswith(('--password-file', '--partial-dir'))]
    subprocess.run(['rsync'] + local + [str(source) + '/', str(dest) + '/'], check=True, capture_output=True)
    assert sorted(os.listdir(str(dest))) == ['fifo']


def test_the_report_lists_device_nodes_as_kept_only_when_they_were():
    plan = {'attributes': {'devices': 2, 'acls': 0, 'xattrs': 0, 'sparse': 0}}
    root = {'owners': True, 'module': 'incoming'}
    kept, lost = report.kept({'plan': plan, 'preserve': {'devices': True}}, root)
    assert 'device nodes' in kept and 'special files (FIFOs, sockets)' in kept and lost == []
    kept, lost = report.kept({'plan': plan, 'preserve': {'devices': False}}, root)
    assert 'device nodes' not in kept and lost == [
        'device nodes: left out of migrate_preserve (2 entries of the tree are device nodes)']
    kept, lost = report.kept({'plan': plan, 'preserve': {'devices': True}}, {'owners': False, 'module': 'incoming'})
    assert 'device nodes' not in kept and 'device nodes: the module does not run as root' in lost[1]
    # a run state of before the choice: nothing claimed
    kept, lost = report.kept({'plan': plan, 'preserve': {}}, root)
    assert 'device nodes' not in ' '.join(kept + lost)
