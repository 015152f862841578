# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's rollback (playbooks/tasks/canary.yml, wan_tune_canary_rollback) covers every role the tuning play of
playbooks/wan_tune.yml can apply, each with its own state set to absent and under the same opt-in condition, in the
order of -e wan_tune_state=absent (docs/rollout.md: "the same steps as -e wan_tune_state=absent"; issue 15).

The roles' rollbacks themselves are proven elsewhere (the molecule scenarios and the VM tier); this keeps the list in
the canary from falling behind the playbook when a role is added.
"""

from __future__ import annotations

import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return yaml.safe_load(handle)


def role_of(task):
    for key in ('ansible.builtin.include_role', 'ansible.builtin.import_role'):
        if key in task:
            return task[key]['name'].rsplit('.', 1)[-1]
    return None


def conditions(task):
    when = task.get('when', [])
    return [when] if isinstance(when, str) else list(when)


def tuning_play():
    return [play for play in load('playbooks', 'wan_tune.yml') if play['name'] == 'Tune TCP for long fat networks'][0]


def rollback_block():
    return [task for task in load('playbooks', 'tasks', 'canary.yml')
            if task['name'].startswith('Roll the first batch back')][0]


def test_the_canary_rolls_back_every_role_the_run_can_apply():
    applied = [role_of(task) for task in tuning_play()['tasks'] if role_of(task)]
    assert applied == ['bbr', 'tcp_buffers', 'jumbo_mtu', 'rsync_daemon', 'hpn_ssh']
    block = rollback_block()
    rolled_back = [role_of(task) for task in block['block']]
    assert sorted(rolled_back) == sorted(applied), 'the canary rollback misses %s' % (set(applied) - set(rolled_back))
    for role in applied:
        assert block['vars'].get('%s_state' % role) == 'absent', role


def test_the_canary_rolls_back_in_the_order_of_wan_tune_state_absent():
    play = tuning_play()
    # wan_tune_state=absent: the MTU first (pre_tasks), then the tasks in their order, jumbo_mtu's present-only include
    # left out
    order = [role_of(task) for task in play['pre_tasks'] if role_of(task)]
    order += [role_of(task) for task in play['tasks'] if role_of(task) and role_of(task) not in order]
    assert [role_of(task) for task in rollback_block()['block']] == order


def test_the_transport_roles_are_rolled_back_where_the_run_applied_them():
    playbook = dict((role_of(task), conditions(task)) for task in tuning_play()['tasks'] if role_of(task))
    canary = dict((role_of(task), conditions(task)) for task in rollback_block()['block'])
    for role in ('rsync_daemon', 'hpn_ssh'):
        opt_in = '%s | default(false) | bool' % role
        assert any(condition.startswith(opt_in) for condition in playbook[role]), playbook[role]
        assert canary[role] == [opt_in], canary[role]
