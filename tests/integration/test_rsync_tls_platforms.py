# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rsync_daemon role's platform check with generated facts: the TLS daemon's source gate is a table of nftables on
every family (before 0.5.0 it was stunnel's libwrap, which the RHEL family lacks from EL 8 on, and EL 8+ was refused
here), so no distribution is refused for transport tls or both.  Whether a host's kernel lets root use nftables is
asked on the host by the module rsync_daemon_tls (tests/unit/plugins/module_utils/transfer/test_rsynctls_gate.py).
No RHEL image can be built here: these run the role's own tasks/platform.yml through include_role with
ansible-playbook --check against localhost, with the facts passed as ansible_facts (-e @vars.json), as
tests/integration/test_hpn_ssh_sources.py does.  They change nothing and connect to nothing but localhost.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from labenv import ROOT, ansible_env

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Read the platform as the role does before it changes anything
      ansible.builtin.include_role:
        name: bdp.wan_tune.rsync_daemon
        tasks_from: platform.yml
"""
FACTS = {
    'rocky9': {'os_family': 'RedHat', 'distribution': 'Rocky', 'distribution_major_version': '9'},
    'rhel8': {'os_family': 'RedHat', 'distribution': 'RedHat', 'distribution_major_version': '8'},
    'centos7': {'os_family': 'RedHat', 'distribution': 'CentOS', 'distribution_major_version': '7'},
    'debian12': {'os_family': 'Debian', 'distribution': 'Debian', 'distribution_major_version': '12'},
}


def run(tmp_path, facts, transport):
    """(exit code, all messages) of the platform check."""
    (tmp_path / 'play.yml').write_text(PLAYBOOK)
    (tmp_path / 'vars.json').write_text(json.dumps({'ansible_facts': FACTS[facts],
                                                    'rsync_daemon_transport': transport}))
    env = dict(ansible_env(), ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    proc = subprocess.run(['ansible-playbook', '--check', '-c', 'local', '-i', 'localhost,',
                           str(tmp_path / 'play.yml'), '-e', '@' + str(tmp_path / 'vars.json')],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    report = json.loads(proc.stdout)
    messages = [str(result.get('msg', '')) for play in report['plays'] for task in play['tasks']
                for result in [task['hosts'].get('localhost', {})]]
    return proc.returncode, ' '.join(messages)


@pytest.mark.parametrize('facts, transport', [('rocky9', 'tls'), ('rhel8', 'both'), ('rocky9', 'plain'),
                                              ('centos7', 'tls'), ('debian12', 'tls')])
def test_no_platform_is_refused_for_the_tls_daemon(tmp_path, facts, transport):
    rc, messages = run(tmp_path, facts, transport)
    assert rc == 0, messages
    assert 'libwrap' not in messages
