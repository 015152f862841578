# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two gated includes of playbooks/wan_tune.yml (tasks/plan_opt_in.yml in the validation play, tasks/after.yml in
the tuning play) let a run without opt-in roles pay one skipped task per host (docs/fleet.md). An include's condition
must hold wherever one of its tasks would run, or that task is skipped without a word: both take their conditions from
the same play variables, and this keeps them so when a task is added or a condition changed.
"""

from __future__ import annotations

from wan_tune_playbook import TUNING, VALIDATION, VARIABLE, conditions, expanded, load, play


def gate(play_, path):
    """The condition, as text, of the include of ``path`` in the play."""
    for section in ('tasks', 'post_tasks'):
        for task in play_.get(section, []):
            if (task.get('ansible.builtin.include_tasks') or {}).get('file') == path:
                return str(task['when'])
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


def test_the_include_after_the_tuning_holds_for_an_opt_in_role_alone():
    # the gate's text, rendered with only one opt-in role asked for, is true: a template of the real expression
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    play_ = play()
    base = dict(play_['vars'], inventory_hostname='h1', hostvars={'localhost': {}})
    for extra, expected in (({}, False), ({'nic': 'true'}, True), ({'mtu': '9000'}, True),
                            ({'rsync_daemon_state': 'absent'}, True), ({'hpn_ssh': 'yes'}, True),
                            ({'wan_tune_canary': 'true'}, False),
                            ({'wan_tune_canary': 'true', 'hostvars': {'localhost': {'__wan_tune_canary_batch': ['h1']}}},
                             True),
                            ({'__wan_tune_rollback_failures': ['bbr: failed']}, True)):
        templar = Templar(loader=DataLoader(), variables=dict(base, **extra))
        assert templar.template(trust_as_template('{{ __wan_tune_after | bool }}')) is expected, extra
