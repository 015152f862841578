# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""migrate_run: no key material outlives its use.  The key files in the run directory (the password and the copies
of the sender's client identity) are listed after each step of a run's life: started, ended (the unit's own
ExecStopPost= line, run for real), a start that fails, a run whose ExecStopPost= never ran (a reboot), and the
sender's identity removed.  systemd itself is replaced: systemctl reports the unit's state, systemd-run records its
command line; the files are real."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess

import pytest

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.modules import migrate_run

KEY_NAMES = {'password', 'tls-ca.crt', 'tls-host.crt', 'tls-host.key'}


@pytest.fixture
def host(tmp_path, monkeypatch):
    """The sender's identity, a run directory, and systemd as the test sets it."""
    identity = tmp_path / 'identity'
    identity.mkdir()
    for name in ('ca.crt', 'host.crt', 'host.key'):
        (identity / name).write_text('-----BEGIN %s-----\n' % name)
    state = {'active': 'inactive', 'systemd_run_rc': 0, 'started': [], 'identity': identity,
             'run_dir': str(tmp_path / 'run'), 'tmp': tmp_path}

    def run_command(module, args, **kwargs):
        if os.path.basename(args[0]) == 'systemctl':
            return 0, state['active'] + '\n', ''
        state['started'].append(list(args))
        return state['systemd_run_rc'], '', 'Failed to start transient service unit' if state['systemd_run_rc'] else ''

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                        lambda self, name, required=False, opt_dirs=None: '/usr/bin/' + name)
    return state


def start(run_module, host, tls=True):
    secret = host['tmp'] / 'migrate.password.transferred'
    secret.write_text('pw\n')
    identity = {'ca': str(host['identity'] / 'ca.crt'), 'cert': str(host['identity'] / 'host.crt'),
                'key': str(host['identity'] / 'host.key')}
    config = {'url': 'rsync://198.18.0.2/data/', 'transport': 'tls' if tls else 'plain',
              'identity': identity if tls else {}, 'port': 874, 'command': ['rsync'], 'env': {}}
    return run_module(migrate_run.main, {
        'receiver': 'b', 'user': 'bdp', 'run_dir': host['run_dir'], 'unit': 'bdp-wan-tune-migrate-test',
        'config': config, 'secret_src': str(secret)})


def key_files(host):
    return sorted(set(os.listdir(host['run_dir'])) & KEY_NAMES) if os.path.isdir(host['run_dir']) else []


def unit_ends(host):
    """What systemd runs when the unit ends, however it ends: its ExecStopPost= line, from systemd-run's command."""
    (line,) = [arg for arg in host['started'][-1] if arg.startswith('--property=ExecStopPost=')]
    subprocess.run(shlex.split(line.split('=', 2)[2]), check=True)


def test_key_files_after_each_step_of_a_runs_life(run_module, host):
    started = start(run_module, host)
    assert started['rc'] == 0 and started['started'] is True, started.get('msg')
    assert key_files(host) == sorted(KEY_NAMES)                              # while the unit runs
    assert stat.S_IMODE(os.stat(os.path.join(host['run_dir'], 'tls-host.key')).st_mode) == 0o600
    unit_ends(host)                                                           # success, failure, stop, SIGKILL
    assert key_files(host) == []
    assert 'runner.py' in os.listdir(host['run_dir'])                         # the rest of the run stays

    # the sender's identity removed (by the rsync_daemon role): the next start fails and leaves no copy
    os.unlink(str(host['identity'] / 'host.key'))
    failed = start(run_module, host)
    assert failed['rc'] == 1 and 'cannot be read' in failed['msg']
    assert key_files(host) == []


def test_a_start_after_a_reboot_removes_what_the_ended_run_left(run_module, host):
    assert start(run_module, host)['rc'] == 0
    assert key_files(host) == sorted(KEY_NAMES)     # the host rebooted: ExecStopPost= never ran, the unit is gone
    plain = start(run_module, host, tls=False)          # the next pass, without TLS: it copies no identity
    assert plain['rc'] == 0 and plain['started'] is True
    assert key_files(host) == ['password']  # its own password, until its unit ends
    unit_ends(host)
    assert key_files(host) == []


def test_a_start_systemd_refuses_leaves_no_key(run_module, host):
    host['systemd_run_rc'] = 1
    failed = start(run_module, host)
    assert failed['rc'] == 1 and 'the key copies this run wrote were removed' in failed['msg']
    assert key_files(host) == []


def test_a_running_unit_keeps_its_copies(run_module, host):
    assert start(run_module, host)['rc'] == 0
    host['active'] = 'active'
    again = start(run_module, host)
    assert again['rc'] == 0 and again['running'] is True and again['started'] is False
    assert key_files(host) == sorted(KEY_NAMES)


def test_the_unit_removes_every_key_file_it_gets():
    assert {os.path.basename(path) for path in migrate_run.secret_files('/var/lib/bdp_wan_tune/x')} == KEY_NAMES
