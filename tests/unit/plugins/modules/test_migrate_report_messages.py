# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every message of the migrate role's report (tasks/report.yml: the closing line, the failure) and both report pages
(templates/report.md.j2, report.html.j2), rendered by Ansible as the role renders them for passes whose figures are
missing - a refused pass, a start whose runner wrote nothing, a state with no figure, a run killed before its end, a
run that was never started - say nothing of a figure they do not have: no "None" anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report as _report
from ansible_collections.bdp.wan_tune.plugins.modules import migrate_status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
TASKS = os.path.join(ROOT, 'roles', 'migrate', 'tasks', 'report.yml')
TARGET = {'receiver': 'dc2-a', 'module': 'incoming', 'transport': 'tls', 'dest': '/srv/in/dc1-a', 'owners': True}
# every figure of the runner's state, none known
EMPTY = dict((key, None) for key in (
    'id', 'run_id', 'state', 'runs', 'plan', 'cpu_before', 'started', 'ended', 'bytes_total', 'files', 'streams',
    'bytes_done', 'files_done', 'walk', 'first_rsync', 'first_byte', 'peak_rss_kb', 'mismatches', 'verified', 'proof',
    'resent_bytes', 'message', 'transport', 'present_bytes', 'stream_count', 'phases', 'delete', 'deleted',
    'deleted_names', 'vanished', 'vanished_names', 'changed_at_source', 'differs_at_receiver',
    'differs_at_receiver_names', 'extra', 'preserve', 'owners', 'excludes', 'history', 'summary', 'limits',
    'bwlimit_bps', 'bwlimit_start_bps', 'literal_bytes', 'files_sent', 'cpu_seconds', 'would_delete',
    'mismatches_after_resend', 'tree_present_bytes'))


def scenarios():
    """{name: the status migrate_status returned}: passes with figures missing."""
    refused = {'id': 'x', 'run_id': '1795690000.000000', 'state': 'refused', 'runs': 2, 'started': 1795690000.0,
               'ended': 1795690004.0, 'bytes_total': 10 ** 9, 'files': 300, 'streams': [], 'bytes_done': 0,
               'phases': {'counting deletes': [1795690000.5, 1795690004.0]}, 'delete': True, 'deleted': 0,
               'would_delete': 1200, 'deleted_names': ['a/%d' % index for index in range(50)], 'verified': None,
               'mismatches': None, 'proof': 'checksum', 'resent_bytes': 0, 'message': 'this pass would delete 1200 '
               'files', 'history': [{'runs': 1, 'state': 'done', 'started': 1795680000.0}]}
    refused['summary'] = dict((key, refused.get(key)) for key in ('runs', 'run_id', 'state', 'started', 'ended'))
    config = {'id': 'x', 'run_id': '1795690000.000000', 'bytes': 10 ** 9, 'files': 300, 'streams': 2}
    killed = {'state': 'copying', 'started': 1795690000.0, 'runs': 1, 'bytes_done': 5 * 10 ** 8, 'phases': {
        'copying': [1795690001.0, None]}, 'streams': [{'stream': 0, 'bytes': 5 * 10 ** 8}], 'walk': {}}
    return {'refused': {'state': 'refused', 'progress': refused},
            'unstarted': {'state': 'failed', 'progress': migrate_status.unstarted(config, None, 'bdp-migrate.service')},
            'no figure': {'state': 'failed', 'progress': dict(EMPTY)},
            'empty state': {'state': 'failed', 'progress': {}},
            'killed': {'state': 'interrupted', 'progress': killed},
            'never ran': {'state': None, 'progress': None}}


@pytest.mark.parametrize('name', sorted(scenarios()))
def test_the_report_of_a_pass_with_missing_figures_has_no_none(name):
    run = _report.build(scenarios()[name], TARGET, 'dc1-a')
    for field in ('line', 'verdict', 'rows', 'kept', 'not_kept'):
        assert 'None' not in json.dumps(run[field]), (field, run[field])


def messages():
    """The tasks of report.yml that say something (debug, fail): [(name, msg, the task's own vars)]."""
    with open(TASKS) as handle:
        tasks = yaml.safe_load(handle)
    out = []
    for task in tasks:
        for module in ('ansible.builtin.debug', 'ansible.builtin.fail'):
            if module in task:
                out.append((task['name'], task[module]['msg'], task.get('vars') or {}))
    return out


def test_every_message_and_page_with_missing_figures_says_no_none(tmp_path):
    """One ansible-playbook renders, for each scenario, report.yml's messages (as debug tasks with their own vars)
    and the two pages (with the role's templates)."""
    said = messages()
    assert [name for name, dummy, dummy_vars in said] == ['Say how the migration went',
                                                          'Fail when the migration did not end proven']
    cases = []
    for name, status in sorted(scenarios().items()):
        report = {'skipped': True} if status['state'] is None else {
            'run': _report.build(status, TARGET, 'dc1-a'), 'paths': {'html': '/r/x.html'}}
        cases.append({'name': name.replace(' ', '-'), 'status': status, 'report': report})
    (tmp_path / 'cases.json').write_text(json.dumps({'cases': cases}))
    tasks = []
    for name, msg, own in said:
        tasks.append({'name': name, 'ansible.builtin.debug': {'msg': msg}, 'loop': '{{ cases }}',
                      'vars': dict(own, __migrate_status='{{ item.status }}', __migrate_report='{{ item.report }}',
                                   __migrate_target=TARGET)})
    tasks.append({'name': 'pages', 'ansible.builtin.template': {
        'src': '%s/roles/migrate/templates/report.{{ item.1 }}.j2' % ROOT,
        'dest': '%s/{{ item.0.name }}.{{ item.1 }}' % tmp_path, 'mode': '0644'},
        'vars': {'__run': '{{ item.0.report.run }}'},
        'loop': "{{ cases | selectattr('report.run', 'defined') | product(['md', 'html']) | list }}"})
    playbook = tmp_path / 'messages.yml'
    playbook.write_text(yaml.safe_dump([{'hosts': 'localhost', 'gather_facts': False, 'tasks': tasks}]))
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(playbook), '-e',
                           '@%s' % (tmp_path / 'cases.json')], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    plays = json.loads(proc.stdout)['plays'][0]['tasks']
    rendered = {}
    for task in plays[:2]:
        for result in task['hosts']['localhost']['results']:
            rendered['%s: %s' % (task['task']['name'], result['item']['name'])] = result['msg']
    assert len(rendered) == 2 * len(cases)
    for key, msg in rendered.items():
        assert 'None' not in json.dumps(msg), (key, msg)
    pages = sorted(path.name for path in tmp_path.glob('*.md')) + sorted(path.name for path in tmp_path.glob('*.html'))
    assert len(pages) == 2 * (len(cases) - 1), pages
    for page in pages:
        text = (tmp_path / page).read_text()
        assert 'None' not in text.split('<script type="application/json"')[0], (page, text)
    # the refused pass's closing line: its state and what it would have deleted, no seconds it has not
    refused = rendered['Say how the migration went: refused'][0]
    assert refused.startswith('localhost -> dc2-a:incoming: refused: pass 2 sent 0 B in 0 files'), refused
    assert refused.endswith(' in 4.0 s in all, NOT verified; this pass would delete 1200 files'), refused
    assert 'Would have been deleted at the receiver, refused (1200, the first 50 below): "a/0", ' in (
        tmp_path / 'refused.md').read_text()
    assert rendered['Say how the migration went: never-ran'][0] == 'localhost -> dc2-a:incoming: never ran'
