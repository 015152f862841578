# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two gated includes of playbooks/wan_tune.yml (tasks/plan_opt_in.yml in the validation play, tasks/after.yml in
the tuning play) let a run without opt-in roles pay one skipped task per host (docs/fleet.md). An include's condition
must hold wherever one of its tasks would run, or that task is skipped without a word: both take their conditions from
the same play variables, and this keeps them so when a task is added or a condition changed.
"""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from wan_tune_playbook import TUNING, VALIDATION, VARIABLE, conditions, expanded, load, play


def gate(play_, path):
    """The condition, as text, of the include of ``path`` in the play."""
    for section in ('tasks', 'post_tasks'):
        for task in play_.get(section, []):
            if (task.get('ansible.builtin.include_tasks') or {}).get('file') == path:
                return ' and '.join('(%s)' % condition for condition in conditions(task))
    raise AssertionError('%s is not included' % path)


def check(play_name, path):
    """Every play variable a task of ``path`` names in its first condition means a part of the include's condition."""
    play_ = play(play_name)
    condition = expanded(gate(play_, path), play_['vars'])
    tasks = [task for task in load('playbooks', *path.split('/')) if 'when' in task]
    assert tasks
    for task in tasks:
        own = conditions(task)[0]
        names = VARIABLE.findall(own)
        assert names, '%s: %r names no play variable: the include cannot know it' % (task['name'], own)
        for name in names:
            assert expanded(name, play_['vars']) in condition, '%s: %s is not in the condition of the include' % (
                task['name'], name)
    return tasks


def test_every_opt_in_check_is_under_the_validation_include():
    tasks = check(VALIDATION, 'tasks/plan_opt_in.yml')
    assert len(tasks) == 3


def test_every_task_after_the_tuning_is_under_its_include():
    tasks = check(TUNING, 'tasks/after.yml')
    # the four opt-in roles, the canary and the rollback report
    assert len(tasks) == 6


def decide(play_name, path, extra):
    """What Ansible decides for host h1 of a run with the extra variables ``extra`` (-e ...): whether the include of
    ``path`` runs (its own condition, evaluated as a conditional with the play's variables) and the names of the
    tasks of ``path`` whose conditions hold."""
    play_ = play(play_name)
    variables = dict(play_['vars'], inventory_hostname='h1', hostvars={'localhost': {}}, ansible_run_tags=['all'],
                     ansible_skip_tags=[])
    templar = Templar(loader=DataLoader(), variables=dict(variables, **extra))

    def holds(when):
        return all(templar.evaluate_conditional(trust_as_template(condition)) for condition in when)

    tasks = [task['name'] for task in load('playbooks', *path.split('/')) if 'when' in task
             and holds(conditions(task))]
    return holds([gate(play_, path)]), tasks


def check_decisions(play_name, path, cases):
    """Each case (extra variables, the words of the one task that runs, or None for none): the include runs exactly
    when one of its tasks would, and that task is the one expected."""
    for extra, expected in cases:
        include, tasks = decide(play_name, path, extra)
        assert include is bool(tasks), (extra, include, tasks)
        assert len(tasks) == (1 if expected else 0) and all(expected in task for task in tasks), (extra, tasks)


def test_the_validation_include_runs_for_each_opt_in_alone_and_not_without_one():
    # the include's real condition, as Ansible evaluates it: with "and" in place of "or" no opt-in alone runs it
    check_decisions(VALIDATION, 'tasks/plan_opt_in.yml', (
        ({}, None), ({'hpn_ssh': 'true'}, 'HPN-SSH'), ({'nic': 'true'}, 'NIC'), ({'rsync_daemon': 'true'}, 'rsync'),
        ({'nic': 'true', 'nic_state': 'absent'}, None), ({'rsync_daemon': 'true', 'wan_tune_state': 'absent'}, None),
        ({'hpn_ssh': 'false'}, None)))


def test_the_include_after_the_tuning_runs_for_each_opt_in_alone_and_not_without_one():
    check_decisions(TUNING, 'tasks/after.yml', (
        ({}, None), ({'nic': 'true'}, 'NIC'), ({'mtu': '9000'}, 'Jumbo'), ({'rsync_daemon_state': 'absent'}, 'rsync'),
        ({'hpn_ssh': 'yes'}, 'HPN-SSH'), ({'wan_tune_canary': 'true'}, None),
        ({'wan_tune_canary': 'true', 'hostvars': {'localhost': {'__wan_tune_canary_batch': ['h1']}}}, 'Canary'),
        ({'__wan_tune_rollback_failures': ['bbr: failed']}, 'rollback failed')))
