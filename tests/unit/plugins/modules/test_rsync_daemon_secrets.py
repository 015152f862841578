# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 15, item 1: no rsync password reaches a log.  The action plugin rsync_daemon_config hands the secrets file
to the module in a file; the module's arguments (what the host's journal logs as "Invoked with"), its result and
its diff hold no password; rsync_daemon_check takes no password at all and reads them from the secrets file.

The action runs with a connection whose put_file copies into a local "remote" tmp dir, and the module it calls runs
in-process with the arguments the action built, its log line captured (AnsibleModule.log)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from unittest import mock

import pytest

from ansible.module_utils import basic

from ansible_collections.bdp.wan_tune.plugins.action import rsync_daemon_config as action_plugin
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd
from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_check
from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_config

from rsync_utils import AWKWARD as PASSWORDS
from rsync_utils import free_port, leaks, make_paths, needs_a_daemon, needs_root, rsync_daemon


@pytest.fixture
def paths(tmp_path):
    make_paths(tmp_path, ['state', 'remote'] + list(PASSWORDS))
    os.chmod(str(tmp_path / 'remote'), 0o700)
    return tmp_path


def settings(paths, **kwargs):
    """The daemon's settings as the role's variables give them (without the prefix), with the passwords."""
    base = {
        'modules': [{'name': user, 'path': str(paths / user), 'read_only': False, 'auth_users': [user],
                     'hosts_allow': ['198.18.3.0/24'], 'uid': 'root', 'gid': 'root'} for user in PASSWORDS],
        'users': [{'name': user, 'password': password} for user, password in PASSWORDS.items()],
    }
    base.update(kwargs)
    return base


def task_args(paths, settings_=None, **kwargs):
    base = {
        'settings': settings(paths) if settings_ is None else settings_,
        'conf_path': str(paths / 'rsyncd.conf'), 'secrets_path': str(paths / 'rsyncd.secrets'),
        'state_dir': str(paths / 'state'), 'service': 'bdp-wan-tune-test-none.service',
    }
    base.update(kwargs)
    return base


class Templar(object):
    """The action's templar over task_vars that hold no templates: each value as it is."""

    def template(self, value):
        return value


class Harness(object):
    """The action plugin with a fake connection: put_file copies into paths/remote (the remote tmp dir) and
    records the local file's mode; the module runs in-process with the arguments the action built."""

    def __init__(self, paths, run_module, monkeypatch, check_mode=False, diff=False):
        self.paths, self.transfers, self.module_args, self.logged = paths, [], [], []
        self.run_module, self.check_mode, self.diff = run_module, check_mode, diff
        monkeypatch.setattr(basic.AnsibleModule, 'log', lambda module, msg, log_args=None: self.logged.append(msg))

    def put_file(self, local, remote):
        st = os.stat(local)
        self.transfers.append({'local': local, 'mode': stat.S_IMODE(st.st_mode), 'remote': remote})
        shutil.copyfile(local, remote)
        os.chmod(remote, 0o600)

    def run(self, args, task_vars=None):
        connection = mock.MagicMock()
        connection._shell.tmpdir = None
        connection._shell.join_path = os.path.join
        connection.put_file.side_effect = self.put_file
        task = mock.MagicMock(args=args, async_val=0, check_mode=self.check_mode, diff=self.diff,
                              action='bdp.wan_tune.rsync_daemon_config')
        action = action_plugin.ActionModule(task, connection, mock.MagicMock(), mock.MagicMock(), Templar(), None)
        removed = []

        def make_tmp_path(remote_user=None):
            connection._shell.tmpdir = str(self.paths / 'remote')
            return connection._shell.tmpdir

        def execute_module(module_name=None, module_args=None, task_vars=None, **kwargs):
            self.module_args.append(module_args)
            extra = {'_ansible_check_mode': self.check_mode, '_ansible_diff': self.diff}
            return self.run_module(rsync_daemon_config.main, dict(module_args, **extra))

        action._make_tmp_path = make_tmp_path
        action._execute_module = execute_module
        action._fixup_perms2 = lambda paths, remote_user=None, execute=True: None
        action._remove_tmp_path = lambda path, force=False: removed.append(path)
        result = action.run(task_vars=task_vars or {})
        self.removed = removed
        return result


@needs_root
def test_no_password_in_the_module_arguments_the_log_line_the_result_or_the_diff(paths, run_module, monkeypatch):
    checked = Harness(paths, run_module, monkeypatch, check_mode=True, diff=True)
    preview = checked.run(task_args(paths))
    assert preview['changed'] is True and not (paths / 'rsyncd.secrets').exists()
    assert '%d users; its content is not shown' % len(PASSWORDS) in preview['diff'][1]['after']

    harness = Harness(paths, run_module, monkeypatch, diff=True)
    result = harness.run(task_args(paths))
    assert result['rc'] == 0 and result['changed'] is True, result.get('msg')
    for run in (checked, harness):
        # what the module received: names and a path, nothing else secret
        assert [user['name'] for user in run.module_args[0]['settings']['users']] == list(PASSWORDS)
        assert all(set(user) == {'name'} for user in run.module_args[0]['settings']['users'])
        assert run.module_args[0]['secrets_src'] == str(paths / 'remote' / 'rsyncd.secrets')
        assert leaks(json.dumps(run.module_args)) == []
        # the module's journal line exists and names the users, but no password
        invoked = [line for line in run.logged if line.startswith('Invoked with')]
        assert len(invoked) == 1 and 'back' in invoked[0] and leaks(invoked[0]) == []
        # the local copy was 0600 and is gone; the handed-over file was taken; the remote tmp dir removed
        assert run.transfers[0]['mode'] == 0o600 and not os.path.exists(run.transfers[0]['local'])
        assert os.listdir(str(paths / 'remote')) == [] and run.removed == [str(paths / 'remote')]
    assert leaks(json.dumps(preview)) == [] and leaks(json.dumps(result)) == []

    secrets = os.stat(str(paths / 'rsyncd.secrets'))
    assert (stat.S_IMODE(secrets.st_mode), secrets.st_uid, secrets.st_gid) == (0o600, 0, 0)
    assert (paths / 'rsyncd.secrets').read_text('utf-8') == rsyncd.render_secrets(PASSWORDS)
    assert rsyncd.parse_secrets((paths / 'rsyncd.secrets').read_text('utf-8')) == PASSWORDS
    assert leaks((paths / 'rsyncd.conf').read_text('utf-8')) == []

    again = Harness(paths, run_module, monkeypatch, diff=True).run(task_args(paths))
    assert again['changed'] is False and 'diff' not in again
    changed = dict(PASSWORDS, back='QaBack\\slash10')
    other = task_args(paths, settings(paths, users=[{'name': user, 'password': password}
                                                    for user, password in changed.items()]))
    third = Harness(paths, run_module, monkeypatch, diff=True).run(other)
    assert third['changed'] is True and third['files'][str(paths / 'rsyncd.secrets')] == 'written'
    assert 'QaBack' not in json.dumps(third)


def test_bad_users_are_refused_on_the_controller_without_showing_the_password(paths, run_module, monkeypatch):
    harness = Harness(paths, run_module, monkeypatch)
    args = task_args(paths, settings(paths, users=[{'name': 'back', 'password': 'QaBack\\slash9\n'},
                                                   {'name': 'x y', 'password': 'p'}]))
    result = harness.run(args)
    assert result['failed'] is True and 'users[0].password (user back)' in result['msg']
    assert "users[1].name: 'x y' is not a user name" in result['msg']
    assert 'slash9' not in result['msg'] and harness.transfers == [] and harness.module_args == []


def test_secrets_src_cannot_be_set_in_the_task(paths, run_module, monkeypatch):
    harness = Harness(paths, run_module, monkeypatch)
    result = harness.run(task_args(paths, secrets_src='/etc/shadow'))
    assert result['failed'] is True and 'set by the action plugin' in result['msg'] and harness.module_args == []


@pytest.mark.parametrize('state', ['present', 'absent'])
def test_an_option_the_module_lacks_is_refused_on_the_controller_by_name_only(paths, run_module, monkeypatch, state):
    # a task of the old interface: users (with their passwords) as an option of its own; the module would echo an
    # unknown option, unmasked, in its failed result
    harness = Harness(paths, run_module, monkeypatch)
    args = task_args(paths, state=state, users=[{'name': 'back', 'password': 'QaBack\\slash8'}], port=873)
    result = harness.run(args)
    assert result['failed'] is True and harness.module_args == [] and harness.transfers == []
    assert result['msg'].startswith('port, users are not options of bdp.wan_tune.rsync_daemon_config')
    assert 'give the daemon settings (%s) in settings' % ', '.join(rsyncd.SETTINGS) in result['msg']
    assert 'slash8' not in json.dumps(result)


def test_absent_transfers_nothing(paths, run_module, monkeypatch):
    harness = Harness(paths, run_module, monkeypatch)
    result = harness.run(task_args(paths, state='absent'))
    assert result['rc'] == 0 and result['changed'] is False and harness.transfers == []
    assert 'secrets_src' not in harness.module_args[0] and 'settings' not in harness.module_args[0]


@needs_root
def test_the_settings_come_from_the_task_and_only_the_users_from_the_hosts_variable(paths, run_module, monkeypatch):
    """The task's settings are the daemon's (in sight, as the role's task gives them); the action plugin reads only
    rsync_daemon_users itself (the passwords are never a task argument), and no other rsync_daemon_* variable:
    not the CA's private key, not a port the task did not give."""
    own = settings(paths)
    users = own.pop('users')
    task_vars = {'rsync_daemon_users': users, 'rsync_daemon_streams': '2', 'rsync_daemon_port': 8873,
                 'rsync_daemon_tls_ca_key': 'CA-PRIVATE-KEY', 'inventory_hostname': 'b'}
    harness = Harness(paths, run_module, monkeypatch)
    result = harness.run(task_args(paths, dict(own, streams=3)), task_vars)
    assert result['rc'] == 0 and result['changed'] is True, result.get('msg')
    sent = harness.module_args[0]['settings']
    assert sorted(sent) == sorted(set(own) | {'streams', 'users'})
    assert sent['streams'] == 3 and 'port' not in sent and 'CA-PRIVATE-KEY' not in json.dumps(harness.module_args)
    assert [user['name'] for user in sent['users']] == list(PASSWORDS)
    assert leaks(json.dumps(harness.module_args)) == [] and 'max connections = 3' in (paths / 'rsyncd.conf').read_text()
    assert rsyncd.parse_secrets((paths / 'rsyncd.secrets').read_text('utf-8')) == PASSWORDS
    unknown = Harness(paths, run_module, monkeypatch).run(task_args(paths, {'tls_ca_key': 'x', 'colour': 1}))
    assert unknown['failed'] and 'settings: has the unknown keys colour, tls_ca_key' in unknown['msg']


def test_the_roles_task_hands_on_every_setting_but_the_users():
    # a key added to rsyncd.SETTINGS and not to the task would silently take the module's default
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(root, 'roles', 'rsync_daemon', 'tasks', 'present.yml')) as handle:
        (task,) = [task for task in yaml.safe_load(handle) if 'bdp.wan_tune.rsync_daemon_config' in task]
    given = task['bdp.wan_tune.rsync_daemon_config']['settings']
    assert set(given) == set(rsyncd.SETTINGS) - {'users'}
    assert all(value == '{{ rsync_daemon_%s }}' % key for key, value in given.items())


def test_the_module_refuses_a_password_argument_and_a_missing_secrets_file(paths, run_module, monkeypatch):
    logged = []
    monkeypatch.setattr(basic.AnsibleModule, 'log', lambda module, msg, log_args=None: logged.append(msg))
    args = task_args(paths)
    refused = run_module(rsync_daemon_config.main, args)
    assert refused['failed'] and 'only the action plugin' in refused['msg']
    del args['settings']['users']
    missing = run_module(rsync_daemon_config.main, args)
    assert missing['failed'] and 'No secrets file was handed over' in missing['msg']
    assert not (paths / 'rsyncd.conf').exists() and not (paths / 'rsyncd.secrets').exists()


def test_the_module_removes_the_handed_over_file_when_it_refuses(paths, run_module):
    src = paths / 'remote' / 'rsyncd.secrets'
    src.write_text('back:x\n')
    args = task_args(paths, settings(paths, users=[{'name': 'back'}]), secrets_src=str(src))
    args['settings']['modules'][0]['path'] = str(paths / 'nowhere')
    refused = run_module(rsync_daemon_config.main, args)
    assert refused['failed'] and not src.exists()


# --------------------------------------------------------------------------- a real daemon with these passwords

@pytest.fixture
def daemon(paths, run_module, monkeypatch):
    needs_a_daemon()
    port = free_port()
    assert Harness(paths, run_module, monkeypatch).run(task_args(paths, settings(paths, port=port)))['changed']
    with rsync_daemon(paths / 'rsyncd.conf', port, paths / 'rsyncd.log'):
        yield port


def test_the_check_logs_in_with_every_awkward_password_from_the_secrets_file(paths, daemon, run_module, monkeypatch):
    logged = []
    monkeypatch.setattr(basic.AnsibleModule, 'log', lambda module, msg, log_args=None: logged.append(msg))
    commands = []
    real_run_command = basic.AnsibleModule.run_command

    def run_command(module, args, **kwargs):
        commands.append((args, kwargs.get('environ_update')))
        return real_run_command(module, args, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    modules = [{'name': user, 'path': str(paths / user), 'read_only': False, 'auth_users': [user]}
               for user in PASSWORDS]
    result = run_module(rsync_daemon_check.main, {'port': daemon, 'modules': modules,
                                                  'secrets_path': str(paths / 'rsyncd.secrets')})
    assert result['rc'] == 0, result['msg']
    assert [c['module'] for c in result['checks'] if c['check'] == 'authenticated write' and c['passed']] \
        == list(PASSWORDS)
    assert leaks(json.dumps(result)) == [] and leaks('\n'.join(logged)) == []
    # the passwords went to rsync in a file, never in argv or the environment
    assert commands and leaks(json.dumps(commands, ensure_ascii=False)) == []
    assert all(arg.startswith('--password-file=') for args, env in commands for arg in args if 'password' in arg)
    assert not os.path.exists('/tmp/bdp-pwned')
    log = (paths / 'rsyncd.log').read_text('utf-8', 'replace')
    assert leaks(log) == []
