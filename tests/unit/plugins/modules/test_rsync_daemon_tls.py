# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rsync_daemon_tls on real files in tmp_path: a receiver's record, directory and broken marks of /etc/hosts.allow
(refused before anything changes); a sender's directories of two migrations, each rolled back alone; the client
files of 0.3 removed; check mode changes nothing; a second run changes nothing."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls
from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_tls

BEGIN, END = '# ' + rsynctls.WRAP_MARK_BEGIN, '# ' + rsynctls.WRAP_MARK_END


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A scratch root: the unit path of the TLS daemon lives under it."""
    (tmp_path / 'systemd').mkdir()
    monkeypatch.setattr(rsynctls, 'UNIT_PATH', str(tmp_path / 'systemd' / rsynctls.SERVICE))
    return tmp_path


def server(root, **kwargs):
    base = {'directory': str(root / 'etc' / 'bdp-wan-tune' / 'rsync-tls'), 'migration': 'm1',
            'wrap_path': str(root / 'hosts.allow'), 'state_dir': str(root / 'state')}
    base.update(kwargs)
    return base


def client(root, migration, **kwargs):
    base = {'directory': str(root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / migration), 'server': False,
            'migration': migration, 'receivers': ['r1'], 'state_dir': str(root / 'state')}
    base.update(kwargs)
    return base


def test_a_receiver_is_recorded_once_and_undone_exactly(root, run_module):
    wrap = root / 'hosts.allow'
    wrap.write_text('# the administrator\nALL: 127.0.0.1\n')
    os.chmod(str(wrap), 0o640)
    unit = root / 'systemd' / rsynctls.SERVICE
    unit.write_text('[Unit]\n# an older unit of the same name\n')

    predicted = run_module(rsync_daemon_tls.main, dict(server(root), _ansible_check_mode=True))
    assert predicted['changed'] and not (root / 'etc').exists() and not (root / 'state').exists()

    first = run_module(rsync_daemon_tls.main, server(root, senders=['s2', 's1']))
    assert first['changed'] and first['wrap_mode'] == '0640' and first['migration_before'] is None
    assert first['active'] is False and first['transfers'] == 0 and first['senders_before'] is None
    assert (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls').is_dir()
    again = run_module(rsync_daemon_tls.main, server(root, senders=['s1', 's2']))
    assert not again['changed'] and again['migration_before'] == 'm1' and again['senders_before'] == ['s1', 's2']
    moved = run_module(rsync_daemon_tls.main, server(root, migration='m2', senders=['s1']))
    assert moved['changed'] and moved['migration_before'] == 'm1' and moved['senders_before'] == ['s1', 's2']

    # what the role writes there (community.crypto, templates, blockinfile), then undone
    for name in rsynctls.SERVER_FILES.values():
        (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls' / name).write_text('x\n')
    unit.write_text('[Unit]\n# the collection\'s unit\n')
    removed = run_module(rsync_daemon_tls.main, server(root, state='absent'))
    assert removed['changed'] and removed['unit_changed'] and removed['files'][str(unit)] == 'restored'
    assert (removed['migration'], removed['senders'], removed['wrap_existed']) == ('m2', ['s1'], True)
    assert unit.read_text() == '[Unit]\n# an older unit of the same name\n'
    assert not (root / 'etc' / 'bdp-wan-tune').exists() and not (root / 'state').exists()
    assert wrap.read_text() == '# the administrator\nALL: 127.0.0.1\n' and os.stat(str(wrap)).st_mode & 0o777 == 0o640
    assert not run_module(rsync_daemon_tls.main, server(root, state='absent'))['changed']


def test_the_rollback_refuses_broken_marks_before_it_changes_anything(root, run_module):
    """blockinfile's state=absent with END before BEGIN would delete every line between them."""
    run_module(rsync_daemon_tls.main, server(root))
    text = 'ALL: 127.0.0.1\n%s\nkeep me\n%s\n' % (END, BEGIN)
    (root / 'hosts.allow').write_text(text)
    refused = run_module(rsync_daemon_tls.main, server(root, state='absent'))
    assert refused['rc'] != 0 and 'BEGIN on line(s) 4, END on line(s) 2' in refused['msg']
    assert (root / 'hosts.allow').read_text() == text and (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls').is_dir()
    assert (root / 'state' / rsync_daemon_tls.SERVER_RECORD).exists()


def test_transfers_are_the_rsync_children_of_stunnel_not_its_libwrap_helpers(tmp_path):
    """stunnel with libwrap keeps five helper processes of its own (measured in the transfer lab), and starts one
    rsync for each connection."""
    def proc(pid, comm, ppid):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / 'stat').write_text('%d (%s) S %d 1 1 0 -1\n' % (pid, comm, ppid))
    proc(372, 'stunnel4', 1)
    for pid in range(375, 380):
        proc(pid, 'stunnel4', 372)
    proc(743, 'rsync', 372)
    proc(744, 'rsync', 372)
    proc(747, 'rsync', 743)                 # rsync's own child (the generator), not another transfer
    proc(800, 'rsync) S 372 (x', 1)         # a name with parentheses and spaces is read whole
    (tmp_path / 'self').mkdir()
    assert rsync_daemon_tls.transfers_of(372, str(tmp_path)) == 2
    assert rsync_daemon_tls.transfers_of(999, str(tmp_path)) == 0


@pytest.mark.parametrize('text, lines', [
    ('%s\nbdp-rsync-tls: ALL : DENY\n' % BEGIN, 'BEGIN on line(s) 2, END on line(s) none'),
    ('%s\n%s\n' % (END, BEGIN), 'BEGIN on line(s) 3, END on line(s) 2'),
    ('%s\n%s\n%s\n%s\n' % (BEGIN, END, BEGIN, END), 'BEGIN on line(s) 2, 4, END on line(s) 3, 5'),
])
def test_broken_marks_are_refused_before_anything_changes(root, run_module, text, lines):
    (root / 'hosts.allow').write_text('ALL: 127.0.0.1\n' + text)
    refused = run_module(rsync_daemon_tls.main, server(root))
    assert refused['rc'] != 0 and 'Nothing was changed' in refused['msg'] and lines in refused['msg']
    assert (root / 'hosts.allow').read_text() == 'ALL: 127.0.0.1\n' + text
    assert not (root / 'etc').exists() and not (root / 'state').exists()


def test_a_sender_of_two_receivers_keeps_its_files_until_the_last_one_goes(root, run_module):
    run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r1', 'r2']))
    (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / 'm1' / 'host.key').write_text('key')
    one = run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent', receivers=['r1']))
    assert one['changed'] and one['receivers_left'] == ['r2']
    assert (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / 'm1' / 'host.key').exists()
    last = run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent', receivers=['r2']))
    assert last['changed'] and last['receivers_left'] == [] and not (root / 'etc').exists()
    assert not (root / 'state').exists()


def test_a_sender_in_two_migrations_loses_one_at_a_time(root, run_module):
    for migration in ('m1', 'm2'):
        made = run_module(rsync_daemon_tls.main, client(root, migration))
        assert made['changed'] and (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / migration).is_dir()
        for name in rsynctls.CLIENT_FILES.values():
            (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / migration / name).write_text(migration)
    assert not run_module(rsync_daemon_tls.main, client(root, 'm1'))['changed']

    gone = run_module(rsync_daemon_tls.main, client(root, 'm2', state='absent'))
    assert gone['changed'] and not (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / 'm2').exists()
    assert (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / 'm1' / 'host.crt').read_text() == 'm1'
    assert not run_module(rsync_daemon_tls.main, client(root, 'm2', state='absent'))['changed']
    checked = run_module(rsync_daemon_tls.main, dict(client(root, 'm1', state='absent'), _ansible_check_mode=True))
    assert checked['changed'] and (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client' / 'm1').is_dir()
    run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent'))
    assert not (root / 'etc' / 'bdp-wan-tune').exists() and not (root / 'state').exists()


def test_the_client_files_of_0_3_are_removed(root, run_module):
    old = root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client'
    old.mkdir(parents=True)
    for name in rsynctls.CLIENT_FILES.values():
        (old / name).write_text('0.3')
    (root / 'state').mkdir()
    (root / 'state' / 'rsync_daemon_tls_client.json').write_text(json.dumps(
        {'directory': str(old), 'existed': False, 'made': [str(old.parent), str(old)], 'kept': {}}))
    result = run_module(rsync_daemon_tls.main, client(root, 'm1'))
    assert result['changed'] and sorted(os.listdir(str(old))) == ['m1']
    assert all('layout of 0.3' in what for path, what in result['files'].items() if path.endswith(('.crt', '.key')))
    # the directories 0.3 made are still the collection's: the rollback of the last migration removes them
    run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent'))
    assert not (root / 'etc' / 'bdp-wan-tune').exists() and not (root / 'state').exists()


def test_the_start_of_the_daemon_is_read_to_the_microsecond():
    assert rsync_daemon_tls.started_at('Thu 2026-11-26 08:02:55.761015 UTC') == 1795680175.761015
    assert rsync_daemon_tls.started_at('') is None and rsync_daemon_tls.started_at('n/a') is None
