# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rsync_daemon role's platform check with generated facts: the RHEL family from EL 8 on ships stunnel without
libwrap, so the TLS daemon (transport tls, the default, or both) is refused there before any change, naming
rsync_daemon_transport; plain is not, and neither is Debian.  No RHEL image can be built here: these run the role's
own tasks/platform.yml through include_role with ansible-playbook --check against localhost, with the facts passed as
ansible_facts (-e @vars.json), as tests/integration/test_hpn_ssh_sources.py does.  They change nothing and connect to
nothing but localhost.
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


@pytest.mark.parametrize('facts, transport', [('rocky9', 'tls'), ('rhel8', 'both')])
def test_tls_is_refused_where_stunnel_has_no_libwrap(tmp_path, facts, transport):
    rc, messages = run(tmp_path, facts, transport)
    assert rc != 0
    assert 'rsync_daemon_transport: %s on %s %s: its stunnel is built without libwrap' % (
        transport, FACTS[facts]['distribution'], FACTS[facts]['distribution_major_version']) in messages
    assert 'Nothing was changed on this host.' in messages


@pytest.mark.parametrize('facts, transport', [('rocky9', 'plain'), ('centos7', 'tls'), ('debian12', 'tls')])
def test_the_other_platforms_pass(tmp_path, facts, transport):
    rc, messages = run(tmp_path, facts, transport)
    assert rc == 0, messages
