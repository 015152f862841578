# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wan_tune job artifact of playbooks/wan_tune.yml (the set_stats task of the tuning play's post_tasks): the task
as the playbook holds it, templated by Ansible's own templar over the results the roles register, in the shapes of
runs the controller test (tests/integration/test_controller_host.py, which checks tcp_buffers and bbr on real runs)
cannot make here: jumbo frames, the NIC settings, the rsync daemon, rollbacks. The bbr role's result in a tuning run is
its own vars/main.yml (the congestion part of the tcp_buffers call), the plan the one of module_utils/common/bdp.py.
"""

from __future__ import annotations

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp
from wan_tune_playbook import load, play

SKIPPED = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}
PLAN = bdp.buffer_plan('1g', 98)
CONGESTION = {'changed': True, 'settings': {
    'net.ipv4.tcp_congestion_control': {'before': 'cubic', 'after': 'bbr', 'wanted': 'bbr', 'status': 'changed'},
    'net.core.default_qdisc': {'before': 'fq_codel', 'after': 'fq', 'wanted': 'fq', 'status': 'changed'}}}
JUMBO_PLAN = {'changed': False, 'would_change': True, 'invocation': {'module_args': {'mtu': 9000}},
              'interfaces': {'ens4': {'before': 1500, 'after': 9000, 'status': 'change', 'role': 'requested'},
                             'ens4.100': {'before': 1500, 'after': 9000, 'status': 'change', 'role': 'requested'}}}


def artifact_task():
    tasks = [task for task in play()['post_tasks'] if 'ansible.builtin.set_stats' in task]
    assert len(tasks) == 1
    return tasks[0]


def applied(**registered):
    """The artifact of host h1 after a run in which the roles registered ``registered``."""
    task = artifact_task()
    variables = dict(task.get('vars', {}))
    variables.update(load('roles', 'bbr', 'vars', 'main.yml'))           # bbr_result, in a hand-over
    variables.update(inventory_hostname='h1', ansible_check_mode=False, bbr_state='present',
                     tcp_buffers_state='present', __tcp_buffers_plan=PLAN)
    variables.update(registered)
    data = Templar(loader=DataLoader(), variables=variables).template(task['ansible.builtin.set_stats']['data'])
    assert list(data) == ['wan_tune'] and list(data['wan_tune']) == ['h1']
    return data['wan_tune']['h1']


def test_the_task_connects_to_no_host_and_sets_one_artifact_for_the_whole_run():
    task = artifact_task()
    stats = task['ansible.builtin.set_stats']
    assert stats['per_host'] is False and stats['aggregate'] is True and list(stats['data']) == ['wan_tune']
    assert task['tags'] == ['always'] and 'when' not in task        # every run, rollbacks and check mode too
    assert not set(task) & {'delegate_to', 'register', 'changed_when', 'become'}


def test_a_tuning_run_with_jumbo_frames_and_the_rsync_daemon():
    result = applied(tcp_buffers_result={'changed': True, 'congestion': CONGESTION}, jumbo_mtu_plan=JUMBO_PLAN,
                     jumbo_mtu_applied={'changed': True}, jumbo_mtu_persisted={'changed': True},
                     rsync_daemon_result={'changed': False}, mtu='9000', rsync_daemon=True)
    assert result == {
        'state': 'present', 'check_mode': False, 'changed': True,
        'tcp_buffers': {'state': 'present', 'rate_bps': 10 ** 9, 'rtt_ms': 98.0, 'bdp_bytes': 12250000,
                        'headroom': 8.0, 'buffer_bytes': 98000000},
        'bbr': {'state': 'present', 'congestion_control': 'bbr', 'qdisc': 'fq'},
        'jumbo_mtu': {'state': 'present', 'mtu': 9000, 'interfaces': {'ens4': 9000, 'ens4.100': 9000}},
        'nic': None, 'rsync_daemon': {'state': 'present'}}


def test_a_no_op_run_changed_nothing_and_a_skipped_qdisc_is_null():
    congestion = {'changed': False, 'settings': {
        'net.ipv4.tcp_congestion_control': {'before': 'bbr', 'after': 'bbr', 'wanted': 'bbr', 'status': 'ok'},
        'net.core.default_qdisc': {'wanted': 'fq', 'status': 'skipped', 'reason': 'the kernel has no such key'}}}
    result = applied(tcp_buffers_result={'changed': False, 'congestion': congestion}, nic_result={'changed': False},
                     nic=True, jumbo_mtu_plan=SKIPPED)
    assert result['changed'] is False
    assert result['bbr'] == {'state': 'present', 'congestion_control': 'bbr', 'qdisc': None}
    assert result['nic'] == {'state': 'present'} and result['jumbo_mtu'] is None


@pytest.mark.parametrize('changed_by', ['nic_result', 'rsync_daemon_result', 'jumbo_mtu_persisted', 'bbr_result'])
def test_any_role_call_that_changed_the_host_counts(changed_by):
    result = applied(tcp_buffers_result={'changed': False, 'congestion': dict(CONGESTION, changed=False)},
                     **{changed_by: {'changed': True, 'settings': CONGESTION['settings']}})
    assert result['changed'] is True


def test_bbr_alone_by_tags_and_tcp_buffers_alone():
    # --tags bbr: the role's own call (kernel.yml); tcp_buffers skipped by its tags registered nothing
    result = applied(bbr_result=CONGESTION)
    assert result['bbr'] == {'state': 'present', 'congestion_control': 'bbr', 'qdisc': 'fq'}
    assert result['tcp_buffers'] is None
    # --skip-tags bbr: no hand-over, so the buffer call has no congestion part
    result = applied(tcp_buffers_result={'changed': True})
    assert result['bbr'] is None and result['tcp_buffers']['buffer_bytes'] == 98000000


def test_a_rollback_says_absent_for_what_it_undid():
    result = applied(wan_tune_state='absent', bbr_state='absent', tcp_buffers_state='absent',
                     tcp_buffers_result=SKIPPED, tcp_buffers_rollback={'changed': True},
                     bbr_rollback={'changed': True}, bbr_qdisc_rollback={'changed': False},
                     jumbo_mtu_restored={'changed': True}, jumbo_mtu_unpersisted={'changed': False})
    assert result == {'state': 'absent', 'check_mode': False, 'changed': True, 'tcp_buffers': {'state': 'absent'},
                      'bbr': {'state': 'absent'}, 'jumbo_mtu': {'state': 'absent'}, 'nic': None, 'rsync_daemon': None}


def test_a_rollback_only_run_knows_only_the_role_it_undid():
    # -e rsync_daemon_state=absent without a rate: bbr and tcp_buffers do not run (their tasks skip)
    result = applied(rsync_daemon_state='absent', tcp_buffers_result=SKIPPED, rsync_daemon_removed={'changed': True})
    assert result == {'state': 'present', 'check_mode': False, 'changed': True, 'tcp_buffers': None, 'bbr': None,
                      'jumbo_mtu': None, 'nic': None, 'rsync_daemon': {'state': 'absent'}}


def test_check_mode_says_what_would_be_applied():
    result = applied(ansible_check_mode=True, tcp_buffers_result={'changed': True, 'congestion': CONGESTION},
                     nic_result={'changed': True}, nic=True)
    assert result['check_mode'] is True and result['changed'] is True and result['nic'] == {'state': 'present'}
