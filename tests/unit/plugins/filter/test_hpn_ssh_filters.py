# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hpn_ssh filters: what the role's templates and asserts receive."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.filter import hpn_ssh

DEBIAN = {'os_family': 'Debian', 'distribution': 'Debian', 'distribution_version': '12.8'}
UBUNTU = {'os_family': 'Debian', 'distribution': 'Ubuntu', 'distribution_version': '24.04'}


def test_plan_carries_an_error_instead_of_raising():
    plan = hpn_ssh.hpn_ssh_plan(DEBIAN)
    assert plan['error'].startswith('There is no public HPN-SSH package source for Debian 12.8')
    plan = hpn_ssh.hpn_ssh_plan(UBUNTU, 'auto', [], {}, 'yes', 'no')
    assert plan['error'] == '' and plan['source'] == 'ppa' and plan['packages'] == ['hpnssh-server']
    assert 'must be booleans, got maybe' in hpn_ssh.hpn_ssh_plan(UBUNTU, 'auto', [], {}, 'maybe')['error']


def test_config_for_both_sides():
    settings = {'port': '2222', 'host_keys': ['/etc/hpnssh/ssh_host_ed25519_key'], 'none_cipher': True}
    server = hpn_ssh.hpn_ssh_config(settings, ['NoneEnabled'], 'server', '# managed')
    assert server['text'].startswith('# managed\nPort 2222\n') and 'NoneEnabled yes\n' in server['text']
    client = hpn_ssh.hpn_ssh_config({'port': 2222}, [], 'client')
    assert client['text'] == 'Host *\n    IgnoreUnknown Fallback\n    Port 2222\n    Fallback no\n'
    assert client['guarded'] == ['Fallback']
    with pytest.raises(AnsibleFilterError, match='side must be server or client'):
        hpn_ssh.hpn_ssh_config(settings, [], 'both')
    with pytest.raises(AnsibleFilterError):
        hpn_ssh.hpn_ssh_config({'port': 22}, [], 'server')


def test_problems():
    assert hpn_ssh.hpn_ssh_problems({'hpn_ssh_port': 2222}) == []
    assert len(hpn_ssh.hpn_ssh_problems({'hpn_ssh_port': 22, 'hpn_ssh_firewall': 'x'})) == 2
    with pytest.raises(AnsibleFilterError):
        hpn_ssh.hpn_ssh_problems(['hpn_ssh_port'])
