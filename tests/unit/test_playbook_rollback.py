# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary's rollback (playbooks/tasks/canary.yml, wan_tune_canary_rollback) covers every role the tuning play of
playbooks/wan_tune.yml can apply, each with its own state set to absent and under the same opt-in condition, in the
order of -e wan_tune_state=absent (docs/rollout.md: "the same steps as -e wan_tune_state=absent"; issue 15).

The roles' rollbacks themselves are proven elsewhere (the molecule scenarios, tests/integration/test_controller_host.py
and the VM tier); this keeps the list in the canary from falling behind the playbook when a role is added, and keeps
one rescue for every rollback step: each role's tasks/absent.yml includes the internal role bdp.wan_tune.rollback once
(tasks_from steps), which runs each step of the role with the one rescue and reports the failures together at the
end of the role's rollback, or of the playbook (issues 16 and 23).
"""

from __future__ import annotations

import glob
import os

from wan_tune_playbook import REPO_ROOT, conditions, expanded, load, play


def role_of(task):
    for key in ('ansible.builtin.include_role', 'ansible.builtin.import_role'):
        if key in task:
            return task[key]['name'].rsplit('.', 1)[-1]
    return None


def tuning_tasks(*sections):
    """The tasks of the tuning play's ``sections`` (tasks and post_tasks), in order, with the included task files of
    playbooks/tasks (after.yml) opened."""
    for section in sections or ('tasks', 'post_tasks'):
        for task in play()[section]:
            include = task.get('ansible.builtin.include_tasks')
            path = include.get('file') if isinstance(include, dict) else include
            if path and path.startswith('tasks/') and not path.startswith('tasks/canary'):
                yield from load('playbooks', *path.split('/'))
            else:
                yield task


def rollback_block():
    return [task for task in load('playbooks', 'tasks', 'canary.yml')
            if task['name'].startswith('Roll the first batch back')][0]


def test_the_canary_rolls_back_every_role_the_run_can_apply():
    applied = [role_of(task) for task in tuning_tasks() if role_of(task) not in (None, 'rollback')]
    assert applied == ['bbr', 'tcp_buffers', 'nic', 'jumbo_mtu', 'rsync_daemon', 'hpn_ssh']
    block = rollback_block()
    rolled_back = [role_of(task) for task in block['block']]
    assert sorted(rolled_back) == sorted(applied), 'the canary rollback misses %s' % (set(applied) - set(rolled_back))
    for role in applied:
        assert block['vars'].get('%s_state' % role) == 'absent', role


def test_the_canary_rolls_back_in_the_order_of_wan_tune_state_absent():
    # wan_tune_state=absent: the MTU first (pre_tasks), then the tasks in their order, jumbo_mtu's present-only include
    # left out
    order = [role_of(task) for task in tuning_tasks('pre_tasks') if role_of(task)]
    order += [role_of(task) for task in tuning_tasks() if role_of(task) not in order + [None, 'rollback']]
    assert [role_of(task) for task in rollback_block()['block']] == order


def test_the_transport_roles_are_rolled_back_where_the_run_applied_them():
    variables = play()['vars']
    playbook = dict((role_of(task), [expanded(c, variables) for c in conditions(task)]) for task in tuning_tasks())
    canary = dict((role_of(task), conditions(task)) for task in rollback_block()['block'])
    for role in ('nic', 'rsync_daemon', 'hpn_ssh'):
        opt_in = '%s | default(false) | bool' % role
        assert any(condition.startswith('(' + opt_in) for condition in playbook[role]), playbook[role]
        assert canary[role] == [opt_in], canary[role]


ROLLBACK_ROLES = ('bbr', 'tcp_buffers', 'nic', 'jumbo_mtu', 'rsync_daemon', 'hpn_ssh')


def tasks_in(tasks):
    """Every task of a task list, blocks opened (with the key they are under)."""
    for task in tasks or []:
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from tasks_in(task.get(key))


def includes_rollback(task, entry_point):
    include = task.get('ansible.builtin.include_role') or {}
    return include.get('name') == 'bdp.wan_tune.rollback' and include.get('tasks_from') == entry_point


def steps_include(role):
    """The one include of role bdp.wan_tune.rollback (tasks_from steps) in the role's tasks/absent.yml."""
    found = [task for task in tasks_in(load('roles', role, 'tasks', 'absent.yml')) if includes_rollback(task, 'steps')]
    assert len(found) == 1, '%s: %d includes of the rollback steps' % (role, len(found))
    return found[0]


def test_each_role_rolls_back_through_the_one_include_of_its_steps():
    for role in ROLLBACK_ROLES:
        include = steps_include(role)
        steps = include['vars']['rollback_steps']
        assert steps, role
        for step in steps:
            assert step['name'] and os.path.exists(os.path.join(REPO_ROOT, 'roles', role, 'tasks', step['file'])), (role, step)
        # the steps are the role's only rescue: no step file and no other task file of the rollback rescues itself
        for path in glob.glob(os.path.join(REPO_ROOT, 'roles', role, 'tasks', '*.yml')):
            for task in tasks_in(load(path)):
                assert not any(includes_rollback(t, 'note') for t in task.get('rescue') or []), (path, task['name'])


def test_every_step_has_the_one_rescue_and_the_rollback_ends_with_the_one_report():
    step = load('roles', 'rollback', 'tasks', 'step.yml')
    assert len(step) == 1 and [t['ansible.builtin.include_tasks'] for t in step[0]['rescue']] == ['note.yml']
    assert step[0]['block'][0]['ansible.builtin.include_tasks'].endswith('/tasks/{{ __rollback_step.file }}')
    steps = load('roles', 'rollback', 'tasks', 'steps.yml')
    assert steps[0]['ansible.builtin.include_tasks'] == 'step.yml'
    assert steps[-1]['ansible.builtin.include_tasks'] == 'main.yml'
    assert 'not __wan_tune_rollback_report_at_end' in str(steps[-1]['when'])


def test_only_the_rollback_role_notes_a_failure():
    paths = glob.glob(os.path.join(REPO_ROOT, 'roles', '*', 'tasks', '*.yml'))
    paths.append(os.path.join(REPO_ROOT, 'playbooks', 'tasks', 'canary.yml'))
    for path in paths:
        if os.sep + os.path.join('roles', 'rollback') + os.sep in path:
            continue
        for task in tasks_in(load(path)):
            facts = task.get('ansible.builtin.set_fact') or {}
            assert '__wan_tune_rollback_failures' not in facts, '%s: %s notes a failure itself' % (path, task['name'])


def test_the_playbook_reports_every_role_s_rollback_at_its_end():
    # the last task that can fail a host; only the artifacts (set_stats, which reads and never fails) come after it
    tasks = list(tuning_tasks())
    last = [task for task in tasks if 'ansible.builtin.set_stats' not in task][-1]
    assert last['ansible.builtin.include_role']['name'] == 'bdp.wan_tune.rollback'
    assert all('ansible.builtin.set_stats' in task for task in tasks[tasks.index(last) + 1:])
    assert play()['vars']['__wan_tune_rollback_report_at_end'] is True
    assert rollback_block()['vars']['__wan_tune_rollback_report_at_end'] is True
