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

from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls
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
            'migration': migration, 'state_dir': str(root / 'state')}
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

    first = run_module(rsync_daemon_tls.main, server(root))
    assert first['changed'] and first['wrap_mode'] == '0640' and first['migration_before'] is None
    assert first['active'] is False and first['transfers'] == 0
    assert (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls').is_dir()
    again = run_module(rsync_daemon_tls.main, server(root))
    assert not again['changed'] and again['migration_before'] == 'm1'
    moved = run_module(rsync_daemon_tls.main, server(root, migration='m2'))
    assert moved['changed'] and moved['migration_before'] == 'm1'

    # what the role writes there (community.crypto, templates, blockinfile), then undone
    for name in rsynctls.SERVER_FILES.values():
        (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls' / name).write_text('x\n')
    unit.write_text('[Unit]\n# the collection\'s unit\n')
    removed = run_module(rsync_daemon_tls.main, server(root, state='absent'))
    assert removed['changed'] and removed['unit_changed'] and removed['files'][str(unit)] == 'restored'
    assert unit.read_text() == '[Unit]\n# an older unit of the same name\n'
    assert not (root / 'etc' / 'bdp-wan-tune').exists() and not (root / 'state').exists()
    assert wrap.read_text() == '# the administrator\nALL: 127.0.0.1\n' and os.stat(str(wrap)).st_mode & 0o777 == 0o640
    assert not run_module(rsync_daemon_tls.main, server(root, state='absent'))['changed']


def test_a_hosts_allow_the_role_made_goes_when_only_its_block_was_in_it(root, run_module):
    run_module(rsync_daemon_tls.main, server(root))
    (root / 'hosts.allow').write_text('')               # blockinfile made it and took its block out again
    removed = run_module(rsync_daemon_tls.main, server(root, state='absent'))
    assert not (root / 'hosts.allow').exists() and 'removed' in removed['files'][str(root / 'hosts.allow')]


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
    assert not (root / 'etc').exists() and not (root / 'state').exists()


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
