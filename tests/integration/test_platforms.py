# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each row of the support matrix (docs/platforms.md) planned in check mode with its recorded facts
(platform_facts.py): the rsync daemon's platform selection (roles/rsync_daemon/tasks/set_vars.yml: the vars file
include_vars takes with first_found, and the support matrix's limits), the migrate role's limits for a sender
(tasks/platform.yml) and the hpn_ssh role's package source
(tasks/validate.yml and tasks/plan.yml).  No host of these kinds can be booted here: these run the roles' own tasks
against localhost with the facts as ansible_facts; they change nothing and connect to nothing but localhost.
"""

from __future__ import annotations

import os

import pytest

from labenv import ROOT
from platform_facts import ROWS, facts, run_check

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: The TLS daemon on this platform
      block:
        - name: Choose the rsync daemon's platform names with transport tls
          ansible.builtin.include_role:
            name: bdp.wan_tune.rsync_daemon
            tasks_from: set_vars.yml
          vars:
            rsync_daemon_transport: tls
      rescue:
        - name: Keep the refusal
          ansible.builtin.set_fact:
            __tls_refused: "{{ ansible_failed_result.msg }}"
    - name: Choose the rsync daemon's platform names with transport plain
      ansible.builtin.include_role:
        name: bdp.wan_tune.rsync_daemon
        tasks_from: set_vars.yml
      vars:
        rsync_daemon_transport: plain
    - name: A migration over TLS from this platform
      block:
        - name: Read the sender's platform as the migrate role does before a byte moves
          ansible.builtin.include_role:
            name: bdp.wan_tune.migrate
            tasks_from: platform.yml
      rescue:
        - name: Keep the refusal
          ansible.builtin.set_fact:
            __migrate_refused: "{{ ansible_failed_result.msg }}"
    - name: HPN-SSH's source on this platform
      block:
        - name: Check the HPN-SSH inputs
          ansible.builtin.include_role:
            name: bdp.wan_tune.hpn_ssh
            tasks_from: validate.yml
        - name: Choose the HPN-SSH source
          ansible.builtin.include_role:
            name: bdp.wan_tune.hpn_ssh
            tasks_from: plan.yml
      rescue:
        - name: Keep the refusal
          ansible.builtin.set_fact:
            __hpn_ssh_refused: "{{ ansible_failed_result.msg }}"
    - name: Show the plan
      ansible.builtin.debug:
        msg:
          row: "{{ ansible_facts | bdp.wan_tune.platform_row }}"
          tls_refused: "{{ __tls_refused | default('') }}"
          packages: "{{ __rsync_daemon_packages }}"
          tls_packages: "{{ __rsync_daemon_tls_packages }}"
          service: "{{ __rsync_daemon_service }}"
          stunnel: "{{ __rsync_daemon_stunnel }}"
          hpn_ssh: "{{ __hpn_ssh_plan | default({}) }}"
          hpn_ssh_refused: "{{ __hpn_ssh_refused | default('') }}"
          migrate_refused: "{{ __migrate_refused | default('') }}"
"""
# What each row plans: its row of the matrix, the rsync daemon's packages, unit and stunnel, and HPN-SSH's package
# source (None: no public source, the role asks for the operator's).
DEBIAN = {'packages': ['rsync'], 'tls_packages': ['stunnel4', 'openssl', 'python3-cryptography'],
          'service': 'rsync.service', 'stunnel': '/usr/bin/stunnel4'}
EL = {'packages': ['rsync', 'rsync-daemon'], 'tls_packages': ['stunnel', 'openssl', 'python3-cryptography'],
      'service': 'rsyncd.service', 'stunnel': '/usr/bin/stunnel'}
EXPECTED = {
    'debian-12': dict(DEBIAN, row='Debian 12', hpn_ssh=None),
    'debian-13': dict(DEBIAN, row='Debian 13', hpn_ssh=None),
    'ubuntu-22.04': dict(DEBIAN, row='Ubuntu 22.04', hpn_ssh='ppa'),
    'ubuntu-24.04': dict(DEBIAN, row='Ubuntu 24.04', hpn_ssh='ppa'),
    'redhat-8': dict(EL, row='EL 8', hpn_ssh='copr'),
    'oraclelinux-8': dict(EL, row='EL 8', hpn_ssh='copr'),
    'redhat-9': dict(EL, row='EL 9', hpn_ssh='copr'),
    'rocky-9': dict(EL, row='EL 9', hpn_ssh='copr'),
    'almalinux-9': dict(EL, row='EL 9', hpn_ssh='copr'),
}


def test_every_fixture_is_a_row_with_an_expectation():
    assert ROWS == sorted(EXPECTED)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_each_row_plans_its_packages_units_and_sources(tmp_path, name):
    recorded, want = facts(name), EXPECTED[name]
    rc, results = run_check(tmp_path, PLAYBOOK, {'ansible_facts': recorded})
    assert rc == 0, results
    assert not [task for _play, task, result in results if result.get('changed')], results
    plan = [result['msg'] for _play, task, result in results if task == 'Show the plan'][0]
    assert plan['row'] == want['row']
    for key in ('packages', 'tls_packages', 'service', 'stunnel'):
        assert plan[key] == want[key], (key, plan)
    # no row is refused the TLS transport by the support matrix: the TLS client is rsync with openssl s_client
    # (rsynctls.client_command), no rsync-ssl, which EL 8's rsync lacks and EL 9's cannot give a key file
    assert plan['tls_refused'] == '' and plan['migrate_refused'] == '', plan
    if want['hpn_ssh'] is None:
        assert 'source' not in plan['hpn_ssh'], plan
        assert 'There is no public HPN-SSH package source for Debian' in plan['hpn_ssh_refused'], plan
    else:
        assert plan['hpn_ssh_refused'] == '' and plan['hpn_ssh']['source'] == want['hpn_ssh'], plan
        assert plan['hpn_ssh']['manager'] == recorded['pkg_mgr']


@pytest.mark.parametrize('name', ['redhat-8', 'rocky-9'])
def test_an_el_receiver_of_the_tls_daemon_passes_the_validation_play(tmp_path, name):
    """playbooks/wan_tune.yml itself, -e rsync_daemon=true: the receiver's platform step runs in the validation play
    (tasks/plan_opt_in.yml -> roles/rsync_daemon/tasks/plan.yml); an EL receiver of the TLS daemon is no longer
    refused there (the source gate is a table of nftables, not stunnel's libwrap), and the tuning play takes the role
    past its platform step and its packages to the daemon's configuration. The run stops later only on what
    localhost is not (no systemd as PID 1 here)."""
    variables = {'ansible_facts': facts(name), 'rate': '1g', 'rtt': '98', 'rsync_daemon': True,
                 'wan_tune_become': False,
                 'rsync_daemon_modules': [{'name': 'data', 'path': str(tmp_path), 'hosts_allow': ['198.18.0.2']}]}
    rc, results = run_check(tmp_path, os.path.join(ROOT, 'playbooks', 'wan_tune.yml'), variables)
    failed = [(play, task, result) for play, task, result in results if result.get('failed')]
    assert not [item for item in failed if item[0] == 'Validate the inputs of every host before any host changes'], \
        failed
    tuned = [task for play, task, result in results if play == 'Tune TCP for long fat networks']
    assert 'bdp.wan_tune.rsync_daemon : Refuse a platform the role cannot serve with these inputs (docs/platforms.md)' \
        in tuned
    assert [task for task in tuned if task.startswith('bdp.wan_tune.rsync_daemon : Write rsyncd.conf')], tuned
    assert not [item for item in failed if 'Refuse a platform' in item[1] or 'distribution is one' in item[1]], failed


@pytest.mark.parametrize('playbook', ['wan_tune.yml', 'verify.yml', 'migrate.yml'])
def test_an_el8_platform_python_is_refused_before_any_host_changes(tmp_path, playbook):
    """EL 8's platform-python (3.6) cannot run ansible-core 2.19's modules: each playbook's validation play, on the
    controller, names the variable and what to install; no task runs on the host."""
    variables = {'rate': '1g', 'rtt': '98', 'ansible_python_interpreter': '/usr/libexec/platform-python'}
    rc, results = run_check(tmp_path, os.path.join(ROOT, 'playbooks', playbook), variables)
    assert rc != 0
    failed = [(play, task, result) for play, task, result in results if result.get('failed')]
    assert len(failed) == 1, failed
    assert "ansible_python_interpreter: '/usr/libexec/platform-python' is EL 8's platform-python, Python 3.6, which " \
           "cannot run ansible-core 2.19's modules; expected Python 3.8 or later, such as /usr/bin/python3.11 (on EL " \
           "8: dnf install python3.11 or python3.12 from AppStream" in failed[0][2]['msg']
    assert 'Nothing was changed on any host.' in failed[0][2]['msg']
    assert [task for _play, task, result in results if result.get('failed')] == [failed[0][1]]
