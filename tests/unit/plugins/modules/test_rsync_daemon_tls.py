# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rsync_daemon_tls on real files in tmp_path: a receiver's record, directory, migration CA directory (0700, refused
when broken, removed when the receiver leaves the migration) and broken marks of /etc/hosts.allow (refused before
anything changes); a sender's directories, one per migration and receiver, each rolled back alone; the one identity
per migration of earlier versions copied into each receiver's directory; the client files of 0.3 removed; check mode
changes nothing; a second run changes nothing."""

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
    base.setdefault('ca_dir', str(root / 'state' / rsynctls.CA_SUBDIR / base['migration']))
    return base


def make_ca(directory, days=365):
    """A CA certificate and key of the cryptography library in ``directory`` (the key root's, 0600): its PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import datetime
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'test CA')])
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(key, hashes.SHA256()))
    os.makedirs(str(directory), exist_ok=True)
    pem = cert.public_bytes(serialization.Encoding.PEM).decode('ascii')
    (directory / 'ca.crt').write_text(pem)
    handle = os.open(str(directory / 'ca.key'), os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(handle, 'wb') as stream:
        stream.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return pem


def client(root, migration, **kwargs):
    base = {'directory': str(root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client'), 'server': False,
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


def test_a_receiver_with_transfers_in_flight_does_not_move_to_another_migration(root, run_module, monkeypatch):
    """Moving would trust the new migration's CA only and refuse the running migration's next connection: refused,
    in check mode too (the validation play), before anything changes; the same migration, or no transfer, goes on."""
    run_module(rsync_daemon_tls.main, server(root, senders=['s1']))
    record = (root / 'state' / rsync_daemon_tls.SERVER_RECORD).read_text()
    in_flight = {'transfers': 2}
    monkeypatch.setattr(rsync_daemon_tls, 'daemon_state', lambda *a: (True, in_flight['transfers'], False))
    for check in (True, False):
        refused = run_module(rsync_daemon_tls.main, dict(server(root, migration='m2', senders=['s1']),
                                                         _ansible_check_mode=check))
        assert refused['rc'] != 0 and refused['msg'].startswith('This receiver serves the migration m1, with 2 '
                                                                'transfer(s) in flight'), refused
        assert 'rsync_daemon_tls_migration' in refused['msg'] and refused['msg'].endswith('Nothing was changed.')
        assert (root / 'state' / rsync_daemon_tls.SERVER_RECORD).read_text() == record
        assert not (root / 'state' / rsynctls.CA_SUBDIR / 'm2').exists()
    assert not run_module(rsync_daemon_tls.main, server(root, senders=['s1']))['changed']      # the same migration
    in_flight['transfers'] = 0
    moved = run_module(rsync_daemon_tls.main, server(root, migration='m2', senders=['s1']))
    assert moved['changed'] and moved['migration_before'] == 'm1'


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


def test_a_sender_of_two_receivers_holds_one_identity_for_each(root, run_module):
    parent = root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client'
    made = run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r1', 'r2']))
    assert made['changed'] and (parent / 'm1' / 'r1').is_dir() and (parent / 'm1' / 'r2').is_dir()
    assert os.stat(str(parent / 'm1' / 'r1')).st_mode & 0o777 == 0o700
    assert os.stat(str(parent / 'm1')).st_mode & 0o777 == 0o755
    # the directory given is the one written, whatever the record says (rsync_daemon_tls_client_dir changed)
    moved = run_module(rsync_daemon_tls.main, dict(client(root, 'm1', receivers=['r2']),
                                                   directory=str(root / 'elsewhere')))
    assert moved['changed'] and (root / 'elsewhere' / 'm1' / 'r2').is_dir()
    run_module(rsync_daemon_tls.main, dict(client(root, 'm1', state='absent', receivers=['r2']),
                                           directory=str(root / 'elsewhere')))
    assert not (root / 'elsewhere' / 'm1' / 'r2').exists()
    run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r1', 'r2']))
    assert not run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r2', 'r1']))['changed']
    for receiver in ('r1', 'r2'):
        (parent / 'm1' / receiver / 'host.key').write_text(receiver)
    one = run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent', receivers=['r1']))
    assert one['changed'] and one['receivers_left'] == ['r2'] and not (parent / 'm1' / 'r1').exists()
    assert (parent / 'm1' / 'r2' / 'host.key').read_text() == 'r2'
    last = run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent', receivers=['r2']))
    assert last['changed'] and last['receivers_left'] == [] and not (root / 'etc').exists()
    assert not (root / 'state').exists()


def test_a_sender_in_two_migrations_loses_one_at_a_time(root, run_module):
    parent = root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client'
    for migration in ('m1', 'm2'):
        made = run_module(rsync_daemon_tls.main, client(root, migration))
        assert made['changed'] and (parent / migration / 'r1').is_dir()
        for name in rsynctls.CLIENT_FILES.values():
            (parent / migration / 'r1' / name).write_text(migration)
    assert not run_module(rsync_daemon_tls.main, client(root, 'm1'))['changed']

    gone = run_module(rsync_daemon_tls.main, client(root, 'm2', state='absent'))
    assert gone['changed'] and not (parent / 'm2').exists()
    assert (parent / 'm1' / 'r1' / 'host.crt').read_text() == 'm1'
    assert not run_module(rsync_daemon_tls.main, client(root, 'm2', state='absent'))['changed']
    checked = run_module(rsync_daemon_tls.main, dict(client(root, 'm1', state='absent'), _ansible_check_mode=True))
    assert checked['changed'] and (parent / 'm1' / 'r1' / 'host.crt').exists()
    run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent'))
    assert not (root / 'etc' / 'bdp-wan-tune').exists() and not (root / 'state').exists()


def test_the_one_identity_of_earlier_versions_is_copied_to_each_receiver_and_kept_until_the_last_goes(root,
                                                                                                      run_module):
    """Earlier versions kept one identity per migration, <client_dir>/<migration>/, for every receiver; a running
    migration of that version points at it, so it stays until the migration's last receiver goes.  It is copied only
    where the receiver's CA is its trust anchor (the CA moved from the controller)."""
    parent = root / 'etc' / 'bdp-wan-tune' / 'rsync-tls-client'
    (parent / 'm1').mkdir(parents=True)
    for name in rsynctls.CLIENT_FILES.values():
        (parent / 'm1' / name).write_text('earlier ' + name)
    (root / 'state').mkdir()
    (root / 'state' / 'rsync_daemon_tls_client.json').write_text(json.dumps(
        {'parent': str(parent), 'made': [str(parent.parent), str(parent), str(parent / 'm1')],
         'migrations': {'m1': ['r1', 'r2']}}))
    anchor = 'earlier ca.crt\n'
    predicted = run_module(rsync_daemon_tls.main, dict(client(root, 'm1', receivers=['r1', 'r2'], anchor=anchor),
                                                       _ansible_check_mode=True))
    assert predicted['changed'] and not (parent / 'm1' / 'r1').exists()
    # another receiver's CA did not sign it: its key stays out
    other = run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r3'], anchor='another CA'))
    assert other['changed'] and os.listdir(str(parent / 'm1' / 'r3')) == []
    adopted = run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r1', 'r2'], anchor=anchor))
    assert adopted['changed']
    for receiver in ('r1', 'r2'):
        assert os.stat(str(parent / 'm1' / receiver)).st_mode & 0o777 == 0o700
        for name in rsynctls.CLIENT_FILES.values():
            path = parent / 'm1' / receiver / name
            assert path.read_text() == 'earlier ' + name
            assert adopted['files'][str(path)].startswith('copied from %s' % (parent / 'm1'))
            assert os.stat(str(path)).st_mode & 0o777 == (0o600 if name == 'host.key' else 0o644)
    assert not run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r1', 'r2'], anchor=anchor))['changed']
    # a receiver's own identity is never overwritten by the earlier one
    (parent / 'm1' / 'r1' / 'host.crt').write_text('issued for r1')
    assert not run_module(rsync_daemon_tls.main, client(root, 'm1', receivers=['r1'], anchor=anchor))['changed']
    assert (parent / 'm1' / 'r1' / 'host.crt').read_text() == 'issued for r1'
    run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent', receivers=['r1', 'r3']))
    assert (parent / 'm1' / 'host.key').exists() and not (parent / 'm1' / 'r1').exists()
    run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent', receivers=['r2']))
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
    assert result['changed'] and sorted(os.listdir(str(old))) == ['m1'] and os.listdir(str(old / 'm1')) == ['r1']
    assert all('layout of 0.3' in what for path, what in result['files'].items() if path.endswith(('.crt', '.key')))
    # the directories 0.3 made are still the collection's: the rollback of the last migration removes them
    run_module(rsync_daemon_tls.main, client(root, 'm1', state='absent'))
    assert not (root / 'etc' / 'bdp-wan-tune').exists() and not (root / 'state').exists()


def test_the_receiver_keeps_its_migration_ca_in_a_root_only_directory_and_drops_it_when_it_leaves(root, run_module):
    ca_dirs = dict((name, root / 'state' / rsynctls.CA_SUBDIR / name) for name in ('m1', 'm2'))
    first = run_module(rsync_daemon_tls.main, server(root))
    assert first['changed'] and first['ca_cert'] == '' and first['ca_dir_made'] and first['server_dir_made']
    for path in (ca_dirs['m1'], root / 'etc' / 'bdp-wan-tune' / 'rsync-tls'):
        assert os.stat(str(path)).st_mode & 0o777 == 0o700, path
    assert os.stat(str(ca_dirs['m1'].parent)).st_mode & 0o777 == 0o755
    pem = make_ca(ca_dirs['m1'])
    again = run_module(rsync_daemon_tls.main, server(root))
    assert not again['changed'] and again['ca_cert'] == pem and not again['ca_dir_made']
    # another name of the same directory is the same directory: nothing is removed
    alias = run_module(rsync_daemon_tls.main, server(root, state_dir=str(root / 'state' / '.' / ''),
                                                     ca_dir=str(root / 'state' / '.' / rsynctls.CA_SUBDIR / 'm1')))
    assert alias['rc'] == 0 and (ca_dirs['m1'] / 'ca.key').exists(), alias
    checked = run_module(rsync_daemon_tls.main, dict(server(root, migration='m2'), _ansible_check_mode=True))
    assert checked['changed'] and checked['files'][str(ca_dirs['m1'])].startswith('removed')
    assert (ca_dirs['m1'] / 'ca.key').exists() and not ca_dirs['m2'].exists()
    moved = run_module(rsync_daemon_tls.main, server(root, migration='m2'))
    assert moved['changed'] and moved['ca_cert'] == '' and not ca_dirs['m1'].exists() and ca_dirs['m2'].is_dir()
    # a CA given in variables leaves the receiver's CA directory alone, neither read nor made nor removed
    given = run_module(rsync_daemon_tls.main, server(root, migration='m2', ca_given=True))
    assert given['rc'] == 0 and given['ca_cert'] == '' and ca_dirs['m2'].is_dir()
    removed = run_module(rsync_daemon_tls.main, server(root, state='absent'))
    assert removed['changed'] and not ca_dirs['m2'].exists() and not (root / 'state').exists()


def test_a_ca_directory_of_a_wider_mode_is_put_back_to_root_only(root, run_module):
    ca_dir = root / 'state' / rsynctls.CA_SUBDIR / 'm1'
    pem = make_ca(ca_dir)
    os.chmod(str(ca_dir), 0o755)
    fixed = run_module(rsync_daemon_tls.main, server(root))
    assert fixed['changed'] and fixed['ca_cert'] == pem and fixed['files'][str(ca_dir)].startswith("made root's and 0700")
    assert os.stat(str(ca_dir)).st_mode & 0o777 == 0o700


@pytest.mark.parametrize('files, mode, words', [
    ({'ca.crt': 'cert'}, None, 'holds %s but not its key %s'),
    ({'ca.crt': 'cert', 'ca.key': 'key'}, 0o644, 'mode 0644'),
])
def test_a_broken_migration_ca_is_refused_before_anything_changes(root, run_module, files, mode, words):
    ca_dir = root / 'ca'
    ca_dir.mkdir()
    for name, text in files.items():
        (ca_dir / name).write_text(text)
    if mode is not None:
        os.chmod(str(ca_dir / 'ca.key'), mode)
    refused = run_module(rsync_daemon_tls.main, server(root, ca_dir=str(ca_dir)))
    expected = words % (ca_dir / 'ca.crt', ca_dir / 'ca.key') if '%s' in words else words
    assert refused['rc'] != 0 and 'Nothing was changed' in refused['msg'] and expected in refused['msg']
    assert refused['msg'].startswith('wan_tune_state_dir, rsync_daemon_tls_migration: ')
    assert not (root / 'etc').exists() and not (root / 'state').exists()


def test_a_ca_that_ends_within_30_days_is_refused_and_a_lone_key_is_finished(root, run_module):
    ca_dir = root / 'state' / rsynctls.CA_SUBDIR / 'm1'
    make_ca(ca_dir, days=20)
    refused = run_module(rsync_daemon_tls.main, server(root))
    assert refused['rc'] != 0 and 'the migration CA ends on' in refused['msg'] and not (root / 'etc').exists()
    # a CA whose making was cut short after its key: the role makes its certificate from that key
    (ca_dir / 'ca.crt').unlink()
    resumed = run_module(rsync_daemon_tls.main, server(root))
    assert resumed['rc'] == 0 and resumed['ca_cert'] == '' and (ca_dir / 'ca.key').exists()


def test_a_receiver_whose_ca_key_is_lost_is_refused_unless_a_new_ca_is_asked_for(root, run_module):
    """Set up by an earlier version whose controller is gone: its certificates are there, the CA's key nowhere."""
    run_module(rsync_daemon_tls.main, server(root))
    (root / 'etc' / 'bdp-wan-tune' / 'rsync-tls' / 'ca.crt').write_text('the earlier CA')
    refused = run_module(rsync_daemon_tls.main, server(root))
    assert refused['rc'] != 0 and refused['msg'].startswith('rsync_daemon_tls_ca_dir: this receiver serves the '
                                                            'migration m1 with certificates of its CA')
    assert 'rsync_daemon_tls_ca_new=true' in refused['msg'] and refused['msg'].endswith('Nothing was changed.')
    for allowed in ({'earlier_ca': True}, {'new_ca': True}, {'migration': 'm2'}, {'ca_given': True}):
        assert run_module(rsync_daemon_tls.main, dict(server(root, **allowed), _ansible_check_mode=True))['rc'] == 0


def test_the_start_of_the_daemon_is_read_to_the_microsecond():
    assert rsync_daemon_tls.started_at('Thu 2026-11-26 08:02:55.761015 UTC') == 1795680175.761015
    assert rsync_daemon_tls.started_at('') is None and rsync_daemon_tls.started_at('n/a') is None
