# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migrate job artifact (issue 36): the set_stats task of roles/migrate/tasks/report.yml as the role holds it,
templated by Ansible's own templar over what the role registers. Every run and status job leaves it: the report of
an ended migration, and while it runs (a job started with migrate_wait=false, a status that comes back at once) its
state and progress. How run.yml and status.yml reach it in every such job is the role's, checked here too."""

from __future__ import annotations

import time

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report as _report
from wan_tune_playbook import load

SKIPPED = {'changed': False, 'skipped': True, 'skip_reason': 'Conditional result was False'}
TARGET = {'receiver': 'b', 'module': 'incoming', 'dest': '/srv/incoming/a', 'transport': 'tls',
          'unit': 'bdp-migrate-b-incoming.service'}
NOW = time.time()
COPYING = {'run_id': '%.6f' % (NOW - 60), 'state': 'copying', 'runs': 2, 'started': NOW - 60, 'ended': None,
           'bytes_total': 2 * 10 ** 9, 'bytes_done': 5 * 10 ** 8, 'present_bytes': 10 ** 8, 'files': 3289,
           'files_done': 800, 'stream_count': 2, 'streams': [{'stream': 0}, {'stream': 1}],
           'phases': {'copying': [NOW - 58, None]}, 'walk': {'state': 'listing', 'files': 900, 'bytes': 6 * 10 ** 8},
           'plan': {'estimate': 'about 400 s at 40 Mbit/s (migrate_bwlimit, below migrate_rate\'s 500 Mbit/s)'},
           'verified': None, 'proof': 'checksum', 'transport': 'tls'}


def artifact_task():
    tasks = [task for task in load('roles', 'migrate', 'tasks', 'report.yml') if 'ansible.builtin.set_stats' in task]
    assert len(tasks) == 1
    return tasks[0]


def artifact(status, report=None):
    """The artifact of sender a after the role registered ``status`` (migrate_status) and ``report``."""
    report = SKIPPED if report is None else report
    task = artifact_task()
    variables = dict(task.get('vars', {}), inventory_hostname='a', __migrate_target=TARGET, __migrate_status=status,
                     __migrate_report=report)
    data = Templar(loader=DataLoader(), variables=variables).template(task['ansible.builtin.set_stats']['data'])
    assert list(data) == ['migrate'] and list(data['migrate']) == ['a']
    return data['migrate']['a']


def read(progress, active=True, state=None, bwlimit_bps=0):
    """migrate_status's result through its action plugin, which adds the progress line of a running migration."""
    return {'changed': False, 'active': active, 'state': state or (progress or {}).get('state'), 'progress': progress,
            'bwlimit_bps': bwlimit_bps, 'line': _report.progress_line(progress, NOW) if active else ''}


def test_one_artifact_for_the_job_in_every_run_and_status_job():
    task = artifact_task()
    stats = task['ansible.builtin.set_stats']
    assert stats['aggregate'] is True and stats.get('per_host', False) is False and list(stats['data']) == ['migrate']
    assert 'when' not in task and not set(task) & {'delegate_to', 'register', 'changed_when', 'become'}
    # run.yml reads the migration after it started it, waiting or not (not in check mode, which starts nothing)
    status = [task for task in load('roles', 'migrate', 'tasks', 'run.yml')
              if task.get('ansible.builtin.include_tasks') == 'status.yml']
    assert len(status) == 1 and status[0]['when'] == 'not ansible_check_mode', status
    assert [task.get('ansible.builtin.import_tasks') for task in load('roles', 'migrate', 'tasks', 'status.yml')][-1] \
        == 'report.yml'


def test_a_running_migration_leaves_its_state_and_progress():
    result = artifact(read(COPYING, bwlimit_bps=40 * 10 ** 6))
    assert result == {
        'sender': 'a', 'receiver': 'b', 'module': 'incoming', 'destination': '/srv/incoming/a', 'transport': 'tls',
        'unit': 'bdp-migrate-b-incoming.service', 'state': 'copying', 'active': True, 'run_id': COPYING['run_id'],
        'runs': 2, 'started': COPYING['started'], 'progress': _report.progress_line(COPYING, NOW),
        'bytes': 2 * 10 ** 9, 'files': 3289, 'bytes_done': 5 * 10 ** 8, 'files_done': 800, 'present_bytes': 10 ** 8,
        'listing': True, 'streams': 2, 'bwlimit_bps': 40 * 10 ** 6, 'estimate': COPYING['plan']['estimate'],
        'verified': None}
    assert result['progress'].startswith('600 MB of 2 GB (30 %), 800 of 3289 files')


def test_a_pass_just_started_and_a_migration_that_never_ran():
    starting = {'run_id': '%.6f' % NOW, 'state': 'starting', 'runs': 1, 'started': NOW, 'bytes_total': 10 ** 9,
                'files': 10, 'stream_count': 1, 'bytes_done': 0, 'streams': [], 'phases': {}, 'present_bytes': 0,
                'plan': {'streams': 1}}
    result = artifact(read(starting))
    assert (result['state'], result['active'], result['bytes_done'], result['listing'], result['estimate']) == (
        'starting', True, 0, False, '')
    assert result['progress'].endswith('(starting, 0 streams)')
    never = artifact({'changed': False, 'active': False, 'state': None, 'progress': None, 'bwlimit_bps': 0})
    assert (never['state'], never['active'], never['progress'], never['bytes'], never['runs']) == (
        None, False, '', None, None)
    assert never['receiver'] == 'b' and never['bwlimit_bps'] == 0


def test_an_ended_migration_leaves_its_report():
    done = dict(COPYING, state='done', ended=NOW, bytes_done=19 * 10 ** 8, files_done=3289, verified=True,
                mismatches=0, walk={'state': 'listed', 'parts': 4}, phases={'copying': [NOW - 58, NOW - 10]})
    status = read(done, active=False)
    run = _report.build(status, TARGET, 'a')
    assert artifact(status, {'changed': False, 'run': run, 'paths': {}}) == run


def test_status_comes_back_at_once_by_default_and_a_read_changes_nothing():
    default = load('roles', 'migrate', 'defaults', 'main.yml')['migrate_wait']
    waits = dict((action, Templar(loader=DataLoader(), variables={'migrate_action': action}).template(default))
                 for action in ('run', 'status'))
    assert waits == {'run': True, 'status': False}
    read_task = load('roles', 'migrate', 'tasks', 'status.yml')[0]
    assert read_task['bdp.wan_tune.migrate_status']['wait'] == '{{ migrate_wait | bool }}'
    # the report's files are the controller's: a status that finds the migration ended and writes them changed no host
    writes = [task for task in load('roles', 'migrate', 'tasks', 'report.yml')
              if task.get('delegate_to') == 'localhost']
    assert [task['name'] for task in writes if task.get('changed_when') is not False] == []
    assert len(writes) == 2
