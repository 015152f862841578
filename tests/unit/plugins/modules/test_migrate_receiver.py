# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migrate_receiver module, the receiver's half of the migration's preflight, on real files: it writes nothing in
check mode or not (a snapshot of the module's directory, with every entry's times and attributes, is the same after),
a pass after the first takes the receiver's bytes from the sender's state of the last pass instead of walking, the
filesystem's attributes are asked without a probe file, and the daemon's unit says whether device nodes can be made.
``systemctl`` is a script of the test that prints a unit's properties as systemd 252 prints them: this machine has no
systemd."""

from __future__ import annotations

import os
import stat

from ansible_collections.bdp.wan_tune.plugins.modules import migrate_receiver

# `systemctl show --property=...` of bdp-rsync-tls.service as the role writes it by default, and with
# rsync_daemon_devices: true (capabilities in systemd's lower case, DeviceAllow one line per entry)
BOUNDING = ('cap_chown cap_dac_override cap_dac_read_search cap_fowner cap_fsetid cap_setgid cap_setuid '
            'cap_net_bind_service cap_sys_chroot cap_setfcap')
SHOW_SEALED = ('LoadState=loaded\nActiveState=active\nCPUUsageNSec=1234567\nUser=\nPrivateDevices=yes\n'
               'CapabilityBoundingSet=%s\nDevicePolicy=closed\nSystemCallFilter=chroot mknod mknodat openat read\n'
               % BOUNDING)
SHOW_DEVICES = ('LoadState=loaded\nActiveState=active\nCPUUsageNSec=1234567\nUser=\nPrivateDevices=no\n'
                'CapabilityBoundingSet=%s cap_mknod\nDevicePolicy=closed\nDeviceAllow=char-* m\nDeviceAllow=block-* m\n'
                'SystemCallFilter=chroot mknod mknodat openat read\n' % BOUNDING)


def snapshot(top):
    """Every entry under ``top`` (itself included) with its type, size, mode, times (ctime moves with any attribute
    set or removed) and extended attributes."""
    out = {}
    for root, dirs, files in os.walk(str(top)):
        for name in [''] + dirs + files:
            path = os.path.join(root, name) if name else root
            info = os.lstat(path)
            attrs = tuple(sorted(os.listxattr(path, follow_symlinks=False))) if not stat.S_ISLNK(info.st_mode) else ()
            out[os.path.relpath(path, str(top))] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mode,
                                                    info.st_mtime_ns, info.st_ctime_ns, attrs)
    return out


def fake_systemctl(tmp_path, monkeypatch, text):
    """A systemctl first on PATH whose `show` prints ``text``."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (tmp_path / 'show.txt').write_text(text)
    script = bindir / 'systemctl'
    script.write_text('#!/bin/sh\n[ "$1" = show ] && exec cat %s\nexit 1\n' % (tmp_path / 'show.txt'))
    script.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (bindir, os.environ.get('PATH', '')))


def module_tree(tmp_path):
    """A module's directory with a sender's destination: 3 files of 1000 bytes, one of them with a second name."""
    path = tmp_path / 'module'
    dest = path / 'dc1-a'
    (dest / 'd').mkdir(parents=True)
    for index in range(3):
        (dest / ('f%d' % index)).write_bytes(b'x' * 1000)
    os.link(str(dest / 'f0'), str(dest / 'd' / 'f0-again'))
    os.symlink('f1', str(dest / 'link'))
    return path, dest


def test_the_receiver_is_read_and_nothing_written_in_check_mode_or_not(tmp_path, run_module, monkeypatch):
    path, dest = module_tree(tmp_path)
    fake_systemctl(tmp_path, monkeypatch, SHOW_SEALED)
    before = snapshot(path)
    for check_mode in (True, False):
        result = run_module(migrate_receiver.main, {'path': str(path), 'dest': str(dest),
                                                    'units': ['bdp-rsync-tls.service'],
                                                    '_ansible_check_mode': check_mode})
        assert result['rc'] == 0 and result['changed'] is False, result
        assert snapshot(path) == before
        # the first pass walks the destination: each inode once, as the plan counts the tree
        assert (result['present_bytes'], result['present_from']) == (3000, 'walk')
        info = os.statvfs(str(path))
        assert abs(result['avail_bytes'] - info.f_bavail * info.f_frsize) < 64 * 1024 * 1024
        assert result['filesystem']['type'] and os.path.realpath(str(dest)).startswith(result['filesystem']['mount'])
        assert (result['unit'], result['cpu_ns'], result['device_nodes']) == ('bdp-rsync-tls.service', 1234567, False)
        assert result['device_nodes_why'] == ('bdp-rsync-tls.service has PrivateDevices=yes, no CAP_MKNOD in '
                                              'CapabilityBoundingSet, DevicePolicy=closed with DeviceAllow=none')
        assert result['refusal'] == '' and not result['warning_msgs']


def test_a_pass_after_the_first_takes_the_receivers_bytes_from_the_last_pass(tmp_path, run_module, monkeypatch):
    path, dest = module_tree(tmp_path)
    fake_systemctl(tmp_path, monkeypatch, SHOW_DEVICES)
    done = {'state': 'done', 'bytes_total': 5000, 'bytes_done': 2000, 'present_bytes': 3000}
    result = run_module(migrate_receiver.main, {'path': str(path), 'dest': str(dest), 'previous': done,
                                                'units': ['bdp-rsync-tls.service']})
    # the tree as the last pass listed it, not the 3000 bytes a walk finds
    assert (result['present_bytes'], result['present_from']) == (5000, 'last pass')
    assert result['device_nodes'] is True and result['device_nodes_why'] == ''
    stopped = dict(done, state='stopped', bytes_done=1500)
    result = run_module(migrate_receiver.main, {'path': str(path), 'dest': str(dest), 'previous': stopped})
    assert (result['present_bytes'], result['present_from']) == (4500, 'last pass')
    # a destination emptied since (by hand) holds nothing of the last pass
    for entry in ('f0', 'f1', 'f2', 'link', 'd/f0-again'):
        os.unlink(str(dest / entry))
    os.rmdir(str(dest / 'd'))
    result = run_module(migrate_receiver.main, {'path': str(path), 'dest': str(dest), 'previous': done})
    assert (result['present_bytes'], result['present_from']) == (0, 'walk')


def test_a_tree_with_device_nodes_is_refused_where_the_daemon_cannot_make_them(tmp_path, run_module, monkeypatch):
    path, dest = module_tree(tmp_path)
    fake_systemctl(tmp_path, monkeypatch, SHOW_SEALED)
    args = {'path': str(path), 'dest': str(dest), 'units': ['bdp-rsync-tls.service'],
            'devices': {'count': 2, 'receiver': 'dc2-a', 'module': 'incoming'}, '_ansible_check_mode': True}
    result = run_module(migrate_receiver.main, args)
    assert result['rc'] == 0 and result['refusal'] == (
        'the tree has 2 device nodes, and the daemon that serves incoming on dc2-a cannot create them '
        '(bdp-rsync-tls.service has PrivateDevices=yes, no CAP_MKNOD in CapabilityBoundingSet, DevicePolicy=closed '
        'with DeviceAllow=none): every pass would '
        'end with rsync\'s mknod "Operation not permitted" (exit 23). To keep them, set rsync_daemon_devices: true '
        'for dc2-a and run the rsync_daemon role (-e rsync_daemon=true), which lets its TLS daemon create device '
        'nodes in the modules (CAP_MKNOD, creation only). Leave devices out of migrate_preserve (or exclude them '
        'with migrate_exclude) to give them up; the special files (FIFOs, sockets) are kept either way.')
    given_up = run_module(migrate_receiver.main, dict(args, devices=dict(args['devices'], keep=False)))
    assert given_up['refusal'] == ''
    (tmp_path / 'show.txt').write_text(SHOW_DEVICES)
    assert run_module(migrate_receiver.main, args)['refusal'] == ''
    nobody = run_module(migrate_receiver.main, dict(args, devices=dict(args['devices'], owners=False)))
    assert 'the module incoming of dc2-a does not run as root' in nobody['refusal'] \
        and 'migrate_preserve' in nobody['refusal'] and 'migrate_exclude' in nobody['refusal']


def test_systemctl_that_cannot_tell_leaves_the_devices_unknown_and_refused(tmp_path, run_module, monkeypatch):
    path, dest = module_tree(tmp_path)
    fake_systemctl(tmp_path, monkeypatch, '')
    (tmp_path / 'bin' / 'systemctl').write_text('#!/bin/sh\necho "Failed to connect to bus: Host is down" >&2\n'
                                                'exit 1\n')
    result = run_module(migrate_receiver.main, {'path': str(path), 'dest': str(dest), 'devices': {'count': 1},
                                                'units': ['rsync.service']})
    assert result['device_nodes'] is False and result['cpu_ns'] is None
    assert result['device_nodes_why'] == ("systemctl could not show rsync.service (Failed to connect to bus: Host is "
                                          "down), so the daemon's settings are not known")
    assert 'cannot create them (systemctl could not show' in result['refusal']
