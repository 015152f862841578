# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's rollback (playbooks/tasks/canary.yml, wan_tune_canary_rollback) covers every role the tuning play of
playbooks/wan_tune.yml can apply, each with its own state set to absent and under the same opt-in condition, in the
order of -e wan_tune_state=absent (docs/rollout.md: "the same steps as -e wan_tune_state=absent"; issue 15).

The roles' rollbacks themselves are proven elsewhere (the molecule scenarios, tests/integration/test_controller_host.py
and the VM tier); this keeps the list in the canary from falling behind the playbook when a role is added, and keeps
one rescue for every rollback step: the internal role bdp.wan_tune.rollback (tasks_from note), whose main entry point
reports the failures together at the end of each role's rollback, or of the playbook (issue 16).
"""

from __future__ import annotations

import glob
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


ROLLBACK_ROLES = ('bbr', 'tcp_buffers', 'jumbo_mtu', 'rsync_daemon', 'hpn_ssh')


def tasks_in(tasks):
    """Every task of a task list, blocks opened (with the key they are under)."""
    for task in tasks or []:
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from tasks_in(task.get(key))


def includes_rollback(task, entry_point):
    include = task.get('ansible.builtin.include_role') or {}
    return include.get('name') == 'bdp.wan_tune.rollback' and include.get('tasks_from') == entry_point


def test_every_rollback_step_has_the_one_rescue():
    rescues = 0
    for role in ROLLBACK_ROLES:
        for path in glob.glob(os.path.join(ROOT, 'roles', role, 'tasks', 'absent*.yml')):
            for task in tasks_in(load(path)):
                if 'rescue' in task:
                    rescues += 1
                    assert [includes_rollback(t, 'note') for t in task['rescue']] == [True], (path, task['name'])
    assert rescues >= 7, 'the rollback steps lost their rescue'


def test_only_the_rollback_role_notes_a_failure():
    paths = glob.glob(os.path.join(ROOT, 'roles', '*', 'tasks', '*.yml'))
    paths.append(os.path.join(ROOT, 'playbooks', 'tasks', 'canary.yml'))
    for path in paths:
        if os.sep + os.path.join('roles', 'rollback') + os.sep in path:
            continue
        for task in tasks_in(load(path)):
            facts = task.get('ansible.builtin.set_fact') or {}
            assert '__wan_tune_rollback_failures' not in facts, '%s: %s notes a failure itself' % (path, task['name'])


def test_each_rollback_ends_with_the_one_report():
    for role in ROLLBACK_ROLES:
        last = load('roles', role, 'tasks', 'absent.yml')[-1]
        assert last.get('ansible.builtin.include_role', {}).get('name') == 'bdp.wan_tune.rollback', role
        assert 'tasks_from' not in last['ansible.builtin.include_role'], role
        assert 'not __wan_tune_rollback_report_at_end' in str(last.get('when')), role
    last = tuning_play()['post_tasks'][-1]
    assert last['ansible.builtin.include_role']['name'] == 'bdp.wan_tune.rollback'
    assert tuning_play()['vars']['__wan_tune_rollback_report_at_end'] is True
    assert rollback_block()['vars']['__wan_tune_rollback_report_at_end'] is True
