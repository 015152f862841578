# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hpn_ssh_probe against the real OpenSSH client of the controller (Debian's ssh, which knows no HPN option).

The daemon side needs sshd, its privilege separation user and /run/sshd, which the controller does not have; the
Molecule scenario hpn_ssh probes a real sshd (the test stand-in) in systemd containers.
"""

from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.bdp.wan_tune.plugins.modules import hpn_ssh_probe
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import hpnssh

SSH = shutil.which('ssh')


@pytest.mark.skipif(SSH is None, reason='no OpenSSH client on this machine')
def test_openssh_client_knows_no_hpn_option(run_module, tmp_path):
    result = run_module(hpn_ssh_probe.main, {'server_binary': str(tmp_path / 'no-hpnsshd'), 'client_binary': SSH,
                                             'services': ['bdp-no-such-unit.service'], 'sockets': []})
    assert result['rc'] == 0 and result['changed'] is False
    client = result['client']
    assert client['installed'] and client['error'] == ''
    assert client['version'].startswith('OpenSSH_') and client['hpn_version'] is None
    assert client['known'] == []
    assert sorted(client['refused']) == sorted(option.split()[0] for option in hpnssh.CLIENT_PROBES)
    assert 'Bad configuration option: fallback' in client['refused']['Fallback']
    assert result['server'] == {'installed': False, 'version': '', 'hpn_version': None, 'known': [], 'refused': {},
                                'error': ''}
    assert result['service'] == '' and result['sockets'] == []


def test_probe_files_are_removed(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('TMPDIR', str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, 'tempdir', None)
    run_module(hpn_ssh_probe.main, {'server_binary': '/nonexistent/hpnsshd', 'client_binary': SSH or '/nonexistent',
                                    'services': [], 'sockets': []})
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith('bdp-wan-tune-hpn-probe-')] == []
