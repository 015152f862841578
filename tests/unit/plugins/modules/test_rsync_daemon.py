# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rsync_daemon_config against files in tmp_path, and rsync_daemon_check against a real rsync daemon on loopback
started from the configuration rsync_daemon_config wrote."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd
from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_check
from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_config

from rsync_utils import free_port, handed_over, make_paths, needs_a_daemon, needs_root, rsync_daemon
from waiting import until

PASSWORD = 'Sup3r-s3cret-pw'


@pytest.fixture
def paths(tmp_path):
    return make_paths(tmp_path, ('incoming', 'pub', 'state'))


def args(paths, secrets=None, **kwargs):
    """The module's arguments; the keys of rsyncd.SETTINGS among ``kwargs`` go into its option settings."""
    settings = {
        'modules': [{'name': 'incoming', 'path': str(paths / 'incoming'), 'read_only': False,
                     'auth_users': ['migrate'], 'hosts_allow': ['198.18.3.0/24'], 'uid': 'root', 'gid': 'root'},
                    {'name': 'pub', 'path': str(paths / 'pub'), 'hosts_allow': ['198.18.3.0/24']}],
        'users': [{'name': 'migrate'}],
    }
    settings.update((key, kwargs.pop(key)) for key in list(kwargs) if key in rsyncd.SETTINGS)
    base = {
        'settings': settings,
        'secrets_src': handed_over(paths / 'handed-over.secrets',
                                   'migrate:%s\n' % PASSWORD if secrets is None else secrets),
        'conf_path': str(paths / 'rsyncd.conf'), 'secrets_path': str(paths / 'rsyncd.secrets'),
        'state_dir': str(paths / 'state'), 'service': 'bdp-wan-tune-test-none.service',
        'header': '#\n# Ansible managed\n#\n',
    }
    base.update(kwargs)
    return base


def read(path):
    with open(str(path)) as handle:
        return handle.read()


@needs_root
def test_present_check_mode_idempotence_and_secrets(paths, run_module):
    checked = run_module(rsync_daemon_config.main, dict(args(paths), _ansible_check_mode=True, _ansible_diff=True))
    assert checked['rc'] == 0 and checked['changed'] is True
    assert not (paths / 'rsyncd.conf').exists() and not (paths / 'rsyncd.secrets').exists()
    assert 'read only = no' in checked['diff'][0]['after']
    assert PASSWORD not in str(checked) and '1 users; its content is not shown' in checked['diff'][1]['after']
    # the installed rsync as the test reads it: this machine's (Debian 12's security update, rsync 3.5.0:
    # ENVIRONMENT.md) is past 3.4.0, the first upstream release with the fixes, as dpkg orders the versions
    upstream = subprocess.run(['rsync', '--version'], capture_output=True, text=True, check=True).stdout.split()[2]
    assert checked['version']['upstream'] == upstream
    assert subprocess.run(['dpkg', '--compare-versions', upstream, 'ge', '3.4.0'], check=False).returncode == 0, \
        'this test expects an rsync with the CVE fixes, as on the project\'s machines: %s' % upstream
    assert checked['cve']['fixed'] is True and checked['cve']['reason'].startswith('upstream %s is ' % upstream)
    assert not [item for item in checked['warning_msgs'] if 'CVE' in item], checked['warning_msgs']

    first = run_module(rsync_daemon_config.main, args(paths))
    assert first['changed'] is True and first['restart_needed'] is True and PASSWORD not in str(first)
    secrets = os.stat(str(paths / 'rsyncd.secrets'))
    assert secrets.st_mode & 0o7777 == 0o600 and secrets.st_uid == 0
    assert read(paths / 'rsyncd.secrets') == 'migrate:%s\n' % PASSWORD
    conf = read(paths / 'rsyncd.conf')
    assert conf.startswith('#\n# Ansible managed\n#\n') and 'secrets file = %s' % (paths / 'rsyncd.secrets') in conf
    assert ('auth digest = sha256' in conf) == first['version']['auth_digest_supported']

    again = run_module(rsync_daemon_config.main, args(paths))
    assert again['changed'] is False and again['restart_needed'] is False

    os.chmod(str(paths / 'rsyncd.secrets'), 0o644)
    mode = run_module(rsync_daemon_config.main, args(paths))
    assert mode['changed'] is True and mode['restart_needed'] is False
    assert os.stat(str(paths / 'rsyncd.secrets')).st_mode & 0o7777 == 0o600

    module_only = run_module(rsync_daemon_config.main, args(paths, streams=8))
    assert module_only['changed'] is True and module_only['restart_needed'] is False
    port = run_module(rsync_daemon_config.main, args(paths, streams=8, port=8873))
    assert port['changed'] is True and port['restart_needed'] is True


@needs_root
def test_absent_restores_the_earlier_files(paths, run_module):
    earlier = '# the admin\'s own daemon\n[old]\n    path = /srv/old\n'
    (paths / 'rsyncd.conf').write_text(earlier)
    run_module(rsync_daemon_config.main, args(paths))
    assert read(paths / 'rsyncd.conf') != earlier
    checked = run_module(rsync_daemon_config.main, dict(args(paths, state='absent'), _ansible_check_mode=True))
    assert checked['changed'] is True and read(paths / 'rsyncd.conf') != earlier
    undone = run_module(rsync_daemon_config.main, args(paths, state='absent'))
    assert undone['changed'] is True and undone['files'] == {str(paths / 'rsyncd.conf'): 'restored',
                                                             str(paths / 'rsyncd.secrets'): 'removed'}
    assert read(paths / 'rsyncd.conf') == earlier and not (paths / 'rsyncd.secrets').exists()
    assert not (paths / 'state').exists() or os.listdir(str(paths / 'state')) == []
    assert run_module(rsync_daemon_config.main, args(paths, state='absent'))['changed'] is False


@needs_root
def test_absent_removes_what_it_created(paths, run_module):
    made = run_module(rsync_daemon_config.main, args(paths))
    assert made['changed'] is True and (paths / 'rsyncd.conf').exists() and (paths / 'rsyncd.secrets').exists()
    undone = run_module(rsync_daemon_config.main, args(paths, state='absent'))
    assert undone['changed'] is True and undone['files'] == {str(paths / 'rsyncd.conf'): 'removed',
                                                             str(paths / 'rsyncd.secrets'): 'removed'}, undone
    assert not (paths / 'rsyncd.conf').exists() and not (paths / 'rsyncd.secrets').exists()


def test_refusals_change_nothing(paths, run_module):
    bad = args(paths)
    bad['settings']['modules'][0]['auth_users'] = []
    refused = run_module(rsync_daemon_config.main, bad)
    assert refused['failed'] and 'read_only is false, but auth_users is empty' in refused['msg']
    assert 'nothing was changed' in refused['msg']
    missing = args(paths)
    missing['settings']['modules'][1]['path'] = str(paths / 'nowhere')
    refused = run_module(rsync_daemon_config.main, missing)
    assert refused['failed'] and str(paths / 'nowhere') in refused['msg']
    assert not (paths / 'rsyncd.conf').exists() and not (paths / 'rsyncd.secrets').exists()


@pytest.fixture
def daemon(paths, run_module):
    """A real rsync daemon on 127.0.0.1 from the configuration rsync_daemon_config writes."""
    needs_a_daemon()
    port = free_port()
    assert run_module(rsync_daemon_config.main, args(paths, port=port))['changed']
    with rsync_daemon(paths / 'rsyncd.conf', port, paths / 'rsyncd.log'):
        yield port


def test_check_against_a_real_daemon(paths, daemon, run_module):
    modules = [{'name': 'incoming', 'path': str(paths / 'incoming'), 'read_only': False, 'auth_users': ['migrate']},
               {'name': 'pub', 'path': str(paths / 'pub'), 'read_only': True, 'auth_users': []}]
    secrets = str(paths / 'rsyncd.secrets')
    result = run_module(rsync_daemon_check.main, {'port': daemon, 'modules': modules, 'secrets_path': secrets})
    assert result['rc'] == 0, result['msg']
    assert [(c['check'], c['passed']) for c in result['checks']] == [
        ('daemon answers', True), ('authenticated write', True), ('wrong password refused', True),
        ('anonymous write refused', True), ('access from a listed address', None),
        ('read-only module refuses a write', True), ('access from a listed address', None)]
    # 198.18.3.0/24 is listed, and this machine has no address in it: said, not claimed as proven
    assert 'The rsync daemon passed all 5 checks. Not proven here: access from a listed address [incoming]' \
        in result['msg'] and 'prove it from a listed sender' in result['msg']
    assert result['greeting'].startswith('@RSYNCD:') and PASSWORD not in str(result)
    assert os.listdir(str(paths / 'incoming')) == [] and os.listdir(str(paths / 'pub')) == []

    # A secrets file the daemon does not use (another password) makes the authenticated write fail, and the check
    # says so without showing either password.
    other = paths / 'other.secrets'
    other.write_text('migrate:not-it\n')
    os.chmod(str(other), 0o600)
    wrong = run_module(rsync_daemon_check.main, {'port': daemon, 'modules': modules, 'secrets_path': str(other)})
    assert wrong['failed'] and 'authenticated write [incoming]' in wrong['msg'] and 'auth failed' in wrong['msg']


def sends(monkeypatch):
    """The options of every rsync the check runs (the real send() runs)."""
    calls = []
    real = rsync_daemon_check.send

    def recorded(module, source, target, password, timeout, tls=None, identity=None, extra=()):
        calls.append((target.split('/')[3], list(extra)))
        return real(module, source, target, password, timeout, tls, identity, extra)

    monkeypatch.setattr(rsync_daemon_check, 'send', recorded)
    return calls


def test_the_refusals_never_write_and_the_write_is_removed_at_once(paths, daemon, run_module, monkeypatch):
    modules = [{'name': 'incoming', 'path': str(paths / 'incoming'), 'read_only': False, 'auth_users': ['migrate']},
               {'name': 'pub', 'path': str(paths / 'pub'), 'read_only': True, 'auth_users': []}]
    calls = sends(monkeypatch)
    result = run_module(rsync_daemon_check.main, {'port': daemon, 'modules': modules,
                                                  'secrets_path': str(paths / 'rsyncd.secrets')})
    assert result['rc'] == 0, result['msg']
    # one real upload (the authenticated write, into incoming); the wrong password, the anonymous client and the
    # read-only module's write run with --dry-run
    assert calls == [('incoming', []), ('incoming', ['--dry-run']), ('incoming', ['--dry-run']),
                     ('pub', ['--dry-run'])]
    assert 'the file arrived and was removed' in result['checks'][1]['detail']
    assert os.listdir(str(paths / 'incoming')) == []


def test_no_file_is_written_into_a_module_a_transfer_is_writing(paths, daemon, run_module, monkeypatch, tmp_path):
    big = tmp_path / 'big'
    with open(str(big), 'wb') as handle:
        handle.truncate(64 * 1024 * 1024)
    password = tmp_path / 'pw'
    password.write_text(PASSWORD + '\n')
    os.chmod(str(password), 0o600)
    # a pass of a migration: rsync at 1 KiB/s, so it runs until the test stops it
    transfer = subprocess.Popen(['rsync', '--bwlimit=1', '--password-file=%s' % password, str(big),
                                 'rsync://migrate@127.0.0.1:%d/incoming/big' % daemon],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        busy = until(lambda: rsync_daemon_check.transfers_in(str(paths / 'incoming')), within=60)
        assert busy, 'the daemon never started the transfer'
        assert transfer.pid not in busy                      # the client works elsewhere; the daemon's child here
        assert rsync_daemon_check.transfers_in(str(paths / 'pub')) == []
        calls = sends(monkeypatch)
        modules = [{'name': 'incoming', 'path': str(paths / 'incoming'), 'read_only': False,
                    'auth_users': ['migrate']}]
        result = run_module(rsync_daemon_check.main, {'port': daemon, 'modules': modules,
                                                      'secrets_path': str(paths / 'rsyncd.secrets')})
    finally:
        transfer.kill()
        transfer.wait()
    assert result['rc'] == 0, result['msg']
    assert calls == [('incoming', ['--dry-run'])] * 3
    write = result['checks'][1]
    assert write['check'] == 'authenticated write' and write['passed'] is True
    assert 'nothing was written: a transfer into the module runs' in write['detail']


def test_check_without_a_daemon(run_module, paths):
    result = run_module(rsync_daemon_check.main, {'port': free_port(), 'modules': []})
    assert result['failed'] and 'daemon answers' in result['msg']


@needs_root
@pytest.mark.skipif(not shutil.which('dpkg'), reason='dpkg is not installed')
def test_warns_on_an_rsync_without_the_cve_fixes(paths, run_module, monkeypatch):
    def old_rsync(module, os_info):
        version = {'upstream': '3.2.7', 'package': '3.2.7-1', 'auth_digest_supported': False, 'auth_list': ['md5']}
        # ordered by this machine's dpkg, as on a Debian host
        return version, dict(rsyncd.cve_status('3.2.7', '3.2.7-1', 'debian', '12', at_least=lambda version, floor:
                                               rsyncd.version_at_least(module, version, floor)), cves=list(rsyncd.CVES))
    monkeypatch.setattr(rsync_daemon_config, 'installed', old_rsync)
    result = run_module(rsync_daemon_config.main, args(paths))
    assert result['rc'] == 0 and result['cve']['fixed'] is False
    assert any('lacks the fixes for CVE-2024-12084' in item and '3.2.7-1+deb12u1' in item
               for item in result['warning_msgs']), result['warning_msgs']
    assert result['auth_digest'] == '' and 'does not know the auth digest parameter' in result['auth_digest_note']
    assert 'auth digest' not in read(paths / 'rsyncd.conf')


@needs_root
def test_warns_when_the_host_cannot_order_the_versions(paths, run_module, monkeypatch):
    def unordered_rsync(module, os_info):
        version = {'upstream': '3.2.7', 'package': None, 'auth_digest_supported': False, 'auth_list': ['md5']}
        # neither dpkg nor rpm could order the versions
        return version, dict(rsyncd.cve_status('3.2.7', None, 'alpine', '3.20', at_least=lambda version, floor: None),
                             cves=list(rsyncd.CVES))
    monkeypatch.setattr(rsync_daemon_config, 'installed', unordered_rsync)
    result = run_module(rsync_daemon_config.main, args(paths))
    assert result['rc'] == 0 and result['cve']['fixed'] is None
    assert any('has the fixes for CVE-2024-12084' in item and 'is unknown' in item and 'could not order' in item
               and '3.4.0' in item for item in result['warning_msgs']), result['warning_msgs']


def test_check_proves_access_from_a_listed_address_of_the_host(paths, daemon, run_module, monkeypatch):
    """Issue 15, item 2: the check connects from an address of the host that hosts allow lists (here 127.0.0.2,
    standing in for the host's LAN address), and fails when the daemon's own configuration does not list it."""
    monkeypatch.setattr(rsync_daemon_check, 'own_addresses', lambda module: ['127.0.0.2'])
    secrets = str(paths / 'rsyncd.secrets')
    listed = [{'name': 'incoming', 'path': str(paths / 'incoming'), 'read_only': False, 'auth_users': ['migrate'],
               'hosts_allow': ['198.18.3.0/24']}]
    # the daemon lists 198.18.3.0/24 (and loopback 127.0.0.1): the module's hosts allow as the check is told it
    unlisted = run_module(rsync_daemon_check.main, {'port': daemon, 'modules': listed, 'secrets_path': secrets})
    assert unlisted['rc'] == 0 and [c['passed'] for c in unlisted['checks']][-1] is None
    # told that 127.0.0.2 is listed, which the daemon's configuration does not say: the listing is refused
    wrong = [dict(listed[0], hosts_allow=['127.0.0.2/32'])]
    refused = run_module(rsync_daemon_check.main, {'port': daemon, 'modules': wrong, 'secrets_path': secrets})
    assert refused['failed'] and 'access from a listed address [incoming] (from 127.0.0.2 as user migrate: rsync ' \
        'exit' in refused['msg'], refused['msg']


def test_check_from_a_listed_address_passes_when_the_daemon_lists_it(paths, run_module, monkeypatch):
    needs_a_daemon()
    port = free_port()
    listed = args(paths, port=port)
    listed['settings']['modules'][0]['hosts_allow'] = ['127.0.0.2/255.255.255.255']
    assert run_module(rsync_daemon_config.main, listed)['changed']
    with rsync_daemon(paths / 'rsyncd.conf', port):
        monkeypatch.setattr(rsync_daemon_check, 'own_addresses', lambda module: ['198.18.99.1', '127.0.0.2'])
        item = {'name': 'incoming', 'path': str(paths / 'incoming'), 'read_only': False, 'auth_users': ['migrate'],
                'hosts_allow': ['127.0.0.2/255.255.255.255']}
        result = run_module(rsync_daemon_check.main, {'port': port, 'modules': [item],
                                                      'secrets_path': str(paths / 'rsyncd.secrets')})
    assert result['rc'] == 0, result['msg']
    assert result['checks'][-1] == {'check': 'access from a listed address', 'module': 'incoming', 'passed': True,
                                    'detail': 'from 127.0.0.2 as user migrate: rsync exit 0'}
    assert 'Not proven' not in result['msg']


@needs_root
def test_the_init_script_links_are_recorded_and_returned_for_the_rollback(paths, run_module, monkeypatch):
    """Issue 15, item 9: systemctl disable turns S01rsync into K01rsync; the links before the first change are
    recorded and state absent hands them to the role, which puts them back."""
    monkeypatch.setattr(rsync_daemon_config.glob, 'glob', lambda pattern: (
        ['/etc/rc5.d/S01rsync', '/etc/rc2.d/S01rsync'] if pattern == '/etc/rc[0-6S].d/[SK][0-9][0-9]rsync' else []))
    assert run_module(rsync_daemon_config.main, args(paths, service='rsync.service'))['changed']
    checked = run_module(rsync_daemon_config.main, dict(args(paths, state='absent'), _ansible_check_mode=True))
    assert checked['rc_links_before'] == ['/etc/rc2.d/S01rsync', '/etc/rc5.d/S01rsync']
    undone = run_module(rsync_daemon_config.main, args(paths, state='absent'))
    assert undone['rc_links_before'] == ['/etc/rc2.d/S01rsync', '/etc/rc5.d/S01rsync']
    assert run_module(rsync_daemon_config.main, args(paths, state='absent'))['rc_links_before'] is None
