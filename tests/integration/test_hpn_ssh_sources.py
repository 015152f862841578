# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hpn_ssh role's source selection for Ubuntu, Fedora, Enterprise Linux and Debian, in check mode.

The real package sources (the PPA, the Copr project) cannot be reached from the test machines, and Debian has no
HPN-SSH package.  So these tests run the role's own tasks - tasks/validate.yml and tasks/plan.yml, through
include_role - with ansible-playbook --check against localhost, with the recorded facts of the support matrix's rows
(platform_facts.py; Fedora's generated) passed as ansible_facts (-e @facts.json), and read the plan the role made from
the json callback.  They change nothing (check mode, and the tasks are read-only) and connect to nothing but
localhost.  About 15 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from labenv import ROOT, ansible_env
from platform_facts import facts as recorded, run_check

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the inputs
      ansible.builtin.include_role:
        name: bdp.wan_tune.hpn_ssh
        tasks_from: validate.yml
    - name: Choose the source
      ansible.builtin.include_role:
        name: bdp.wan_tune.hpn_ssh
        tasks_from: plan.yml
    - name: Show the plan
      ansible.builtin.debug:
        var: __hpn_ssh_plan
"""
# The rows of the support matrix from their recorded facts (platform_facts.py); Fedora, outside the matrix, generated.
FACTS = {
    'ubuntu': recorded('ubuntu-24.04'),
    'fedora': {'os_family': 'RedHat', 'distribution': 'Fedora', 'distribution_version': '41',
               'distribution_major_version': '41', 'pkg_mgr': 'dnf5'},
    'rocky': recorded('rocky-9'),
    'debian': recorded('debian-12'),
}
SHA = 'sha256:' + '0' * 64


def run(tmp_path, facts, extra=None):
    """ansible-playbook --check with these facts; (exit code, the plan or None, all messages)."""
    rc, results = run_check(tmp_path, PLAYBOOK, dict(extra or {}, ansible_facts=FACTS[facts]))
    plan, messages = None, []
    for _play, task, result in results:
        messages.append(str(result.get('msg', '')))
        if '__hpn_ssh_plan' in result:
            plan = result['__hpn_ssh_plan']
        assert not result.get('changed'), (task, result)
    return rc, plan, ' '.join(messages)


def source_tasks(plan):
    return os.path.join(ROOT, 'roles', 'hpn_ssh', 'tasks', 'source_%s.yml' % plan['source'])


def test_ubuntu_gets_the_ppa(tmp_path):
    rc, plan, messages = run(tmp_path, 'ubuntu')
    assert rc == 0, messages
    assert plan['source'] == 'ppa' and plan['manager'] == 'apt'
    assert plan['packages'] == ['hpnssh-server', 'hpnssh-client']
    assert os.path.exists(source_tasks(plan))
    assert 'ppa:rapier1/hpnssh' in open(source_tasks(plan)).read()
    assert 'HPN-SSH from ppa (the public PPA rapier1/hpnssh for Ubuntu)' in messages


def test_fedora_and_el_get_copr(tmp_path):
    for facts in ('fedora', 'rocky'):
        rc, plan, messages = run(tmp_path, facts, {'hpn_ssh_server': 'false'})
        assert rc == 0, messages
        assert plan['source'] == 'copr' and plan['manager'] == 'dnf'
        assert plan['packages'] == ['hpnssh-clients']          # client only: -e hpn_ssh_server=false
        assert 'copr, enable, rapier1/hpnssh' in open(source_tasks(plan)).read()


def test_debian_without_a_source_stops_with_what_to_give(tmp_path):
    rc, plan, messages = run(tmp_path, 'debian')
    assert rc != 0
    assert 'There is no public HPN-SSH package source for Debian 12.8' in messages
    assert 'hpn_ssh_repository' in messages and 'hpn_ssh_package_files' in messages


def test_debian_with_the_operators_repository_or_files(tmp_path):
    repo = {'url': 'https://packages.example.invalid/Debian_12/', 'key': 'https://packages.example.invalid/Release.key'}
    rc, plan, messages = run(tmp_path, 'debian', {'hpn_ssh_repository': repo})
    assert rc == 0, messages
    assert plan['source'] == 'repository' and plan['repository']['url'] == repo['url']
    deb = tmp_path / 'hpnssh-client_18.6.2_amd64.deb'
    deb.write_bytes(b'!<arch>\n')                  # the file must exist on the controller; the plan only names it
    files = [str(deb), {'url': 'https://files.example.invalid/s.deb', 'checksum': SHA}]
    rc, plan, messages = run(tmp_path, 'debian', {'hpn_ssh_package_files': files})
    assert rc == 0, messages
    assert plan['source'] == 'files' and [item['name'] for item in plan['files']] == [
        'hpnssh-client_18.6.2_amd64.deb', 's.deb']


def test_a_source_the_distribution_cannot_use_fails(tmp_path):
    rc, plan, messages = run(tmp_path, 'debian', {'hpn_ssh_source': 'ppa'})
    assert rc != 0 and 'hpn_ssh_source: ppa, but Debian 12.8 is not Ubuntu' in messages
    deb = tmp_path / 'a.deb'
    deb.write_bytes(b'!<arch>\n')
    rc, plan, messages = run(tmp_path, 'fedora', {'hpn_ssh_package_files': [str(deb)], 'hpn_ssh_source': 'files'})
    assert rc != 0 and 'not .rpm files' in messages


@pytest.mark.parametrize('extra, words', [
    ({'hpn_ssh_port': '22'}, "hpn_ssh_port: '22' is not usable"),
    ({'hpn_ssh_none_cipher': 'perhaps'}, "hpn_ssh_none_cipher: 'perhaps' is not a boolean"),
    ({'hpn_ssh_package_files': [{'url': 'https://f.example.invalid/a.deb'}]}, 'hpn_ssh_package_files[0].checksum'),
    ({'hpn_ssh_package_files': ['/nonexistent/bdp-wan-tune/hpnssh-server_18.6.2_amd64.deb']},
     'hpn_ssh_package_files[0]: "/nonexistent/bdp-wan-tune/hpnssh-server_18.6.2_amd64.deb" does not exist on the '
     'controller'),
])
def test_bad_inputs_stop_in_validate(tmp_path, extra, words):
    rc, plan, messages = run(tmp_path, 'ubuntu', extra)
    assert rc != 0 and plan is None
    # the role alone: nothing ran before it in this play, so it may say that nothing was changed
    assert words in messages, messages
    assert "Nothing was changed on this host: not by the hpn_ssh role, nor by the collection's other roles" in messages


def test_a_failed_copy_leaves_no_package_directory_and_names_the_variable(tmp_path):
    """A package file that goes away after the validation (here: tasks/source_files.yml run without it): the copy
    fails, the role removes its package directory, names hpn_ssh_package_files and the file, and says truthfully what
    the run had changed (a bbr result that changed: the role says so instead of "nothing was changed")."""
    cache = tmp_path / 'cache' / 'hpn_ssh'
    gone = '/nonexistent/bdp-wan-tune/hpnssh-server_18.6.2_amd64.deb'
    (tmp_path / 'play.yml').write_text("""
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Copy the package files
      ansible.builtin.include_role:
        name: bdp.wan_tune.hpn_ssh
        tasks_from: source_files.yml
""")
    variables = {'__hpn_ssh_cache_dir': str(cache), 'bbr_result': {'changed': True},
                 'ansible_python_interpreter': sys.executable,
                 '__hpn_ssh_plan': {'files': [{'path': gone, 'name': os.path.basename(gone)}]}}
    (tmp_path / 'vars.json').write_text(json.dumps(variables))
    proc = subprocess.run(['ansible-playbook', '-c', 'local', '-i', 'localhost,', str(tmp_path / 'play.yml'),
                           '-e', '@' + str(tmp_path / 'vars.json')], cwd=ROOT, env=ansible_env(),
                          capture_output=True, text=True, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert not cache.exists(), 'the package directory was left behind'
    assert 'localhost: hpn_ssh_package_files: %s: ' % gone in output, output
    assert 'Removed %s.' % cache in output, output
    assert 'The hpn_ssh role changed nothing on this host, but earlier in this run bbr changed it' in output, output
    assert 'Nothing was changed' not in output, output
