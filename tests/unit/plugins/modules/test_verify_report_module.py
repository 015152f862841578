# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify_report module: the run's file, the page it returns (rendered here with the role's templates, as
roles/verify/tasks/report.yml renders them), check mode, baselines across runs and bad inputs (recorded role input)."""

from __future__ import annotations

import json
import os

import role_templates
from ansible_collections.bdp.wan_tune.plugins.modules import verify_report

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        'fixtures', 'verify')


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def markdown(result):
    return role_templates.render('verify', 'report.md.j2', {'__page': result['page']})


def html(result):
    return role_templates.render('verify', 'report.html.j2', {'__page': result['page']})


def test_two_runs_write_json_markdown_and_html_with_the_stock_baseline(run_module, tmp_path):
    directory = str(tmp_path / 'report')
    stock = run_module(verify_report.main, {'results': load('lab-stock.json'), 'label': 'stock',
                                            'report_dir': directory})
    assert stock['rc'] == 0 and stock['changed'] is True and stock['passed'] is False
    assert [pair['key'] for pair in stock['failed_pairs']] == ['bdp-lab-a -> bdp-lab-b', 'bdp-lab-b -> bdp-lab-a']
    assert stock['failure_msg'].startswith('2 of 2 path tests failed')
    tuned = run_module(verify_report.main, {'results': load('lab-tuned.json'), 'label': 'tuned',
                                            'report_dir': directory})
    assert tuned['rc'] == 0 and tuned['passed'] is True and tuned['failed_pairs'] == [] and tuned['failure_msg'] == ''
    by_key = dict((pair['key'], pair) for pair in stock['results'])
    for pair in tuned['results']:
        assert pair['baseline_bps'] == by_key[pair['key']]['receiver_bps'] and pair['baseline_run'] == stock['run']['id']
    assert len(tuned['lines']) == 2 and all(line.endswith(': PASS') for line in tuned['lines'])
    names = sorted(os.listdir(directory))
    assert names == sorted(os.path.basename(item['files']['json']) for item in (stock, tuned))
    assert tuned['files']['markdown'] == os.path.join(directory, 'report.md')
    saved = json.loads((tmp_path / 'report' / os.path.basename(tuned['files']['json'])).read_text())
    assert saved['label'] == 'tuned' and saved['passed'] is True and len(saved['pairs']) == 2 and 'file' not in saved
    assert html(tuned).count('<section class="run"') == 2
    assert markdown(tuned).startswith('# Path verification %s (tuned)' % tuned['run']['id'])
    assert oct(os.stat(tuned['files']['json']).st_mode & 0o777) == '0o644'


def test_check_mode_writes_nothing(run_module, tmp_path):
    directory = str(tmp_path / 'report')
    result = run_module(verify_report.main, {'results': load('loopback-check-mode.json'), 'label': 'tuned',
                                             'report_dir': directory, '_ansible_check_mode': True})
    assert result['rc'] == 0 and result['changed'] is False and result['passed'] is None
    assert result['msg'].startswith('Check mode: nothing measured and no report written')
    assert result['files']['html'] == os.path.join(directory, 'report.html')
    assert not os.path.exists(directory)


def test_other_files_in_the_directory_are_left_alone(run_module, tmp_path):
    (tmp_path / 'notes.json').write_text('{"schema": 1}')
    (tmp_path / 'run-20261122T200000Z-x.json').write_text('not json')
    result = run_module(verify_report.main, {'results': load('loopback-pass.json'), 'report_dir': str(tmp_path)})
    assert result['rc'] == 0 and result['run']['label'] == 'run'
    assert (tmp_path / 'notes.json').read_text() == '{"schema": 1}'
    assert '1 run shown of 1 kept' in html(result)


def test_bad_inputs_fail_naming_the_variable(run_module, tmp_path):
    result = run_module(verify_report.main, {'results': [], 'report_dir': 'results/verify'})
    assert result['rc'] == 1 and result['msg'].startswith("report_dir (verify_report_dir): 'results/verify' is not an "
                                                          "absolute path")
    result = run_module(verify_report.main, {'results': [], 'report_dir': str(tmp_path), 'label': 'a b'})
    assert result['rc'] == 1 and result['msg'].startswith("verify_label: 'a b' is not a run label")
    result = run_module(verify_report.main, {'results': [], 'report_dir': str(tmp_path), 'html_runs': 0})
    assert result['rc'] == 1 and result['msg'].startswith('html_runs: 0 is out of range')
    assert os.listdir(str(tmp_path)) == []


def test_the_surveys_are_kept_in_the_json_and_shown_in_both_reports(run_module, tmp_path):
    directory = str(tmp_path / 'report')
    result = run_module(verify_report.main, {'results': load('loopback-fail-rate-1t.json'), 'report_dir': directory,
                                             'surveys': load('surveys-ring-drops.json')})
    assert result['rc'] == 0 and result['passed'] is False
    hint = [line for line in result['results'][0]['diagnosis'] if line.startswith('receiver h2: ring/missed drops')]
    assert len(hint) == 1 and hint[0] in result['failed_pairs'][0]['diagnosis']
    saved = json.loads(open(result['files']['json']).read())
    assert sorted(saved['hosts']) == ['h1', 'h2'] and saved['hosts']['h2']['after']['nic']['ens4']['driver'] == 'e1000e'
    assert saved['pairs'][0]['diagnosis'] == result['results'][0]['diagnosis']
    assert '\n## Hosts\n' in markdown(result)
    assert '<h3>Hosts</h3>' in html(result)
    # without surveys (verify_host_survey: false) the run keeps hosts null, next to the earlier run
    again = run_module(verify_report.main, {'results': load('loopback-pass.json'), 'report_dir': directory})
    assert again['rc'] == 0 and again['run']['hosts'] is None
    assert json.loads(open(again['files']['json']).read())['hosts'] is None
    assert '2 runs shown of 2 kept' in html(again)


def test_an_older_run_file_in_the_directory_still_renders(run_module, tmp_path):
    (tmp_path / 'run-20261120T100000Z-stock.json').write_text(json.dumps(load('run-20261120T100000Z-stock.json')))
    result = run_module(verify_report.main, {'results': load('lab-tuned.json'), 'label': 'tuned',
                                             'report_dir': str(tmp_path), 'surveys': {'before': {}, 'after': {}}})
    assert result['rc'] == 0 and result['passed'] is True
    assert all(pair['baseline_run'] == '20261120T100000Z' for pair in result['results'])
    page = html(result)
    assert '2 runs shown of 2 kept' in page and page.count('<h3>Hosts</h3>') == 1


def test_a_fresh_directory_shows_the_stock_baseline_of_an_earlier_job(run_module, tmp_path):
    """AWX: the stock run's job left verify_baseline in its artifacts; the tuned run's job starts with an empty
    report directory and gets it as an extra variable (here through JSON, as AWX keeps artifacts)."""
    stock = run_module(verify_report.main, {'results': load('lab-stock.json'), 'label': 'stock',
                                            'report_dir': str(tmp_path / 'job1')})
    assert stock['rc'] == 0 and sorted(stock['artifacts']) == ['verify', 'verify_baseline']
    artifact = json.loads(json.dumps(stock['artifacts']['verify_baseline']))
    assert artifact == stock['artifacts']['verify'] and artifact['id'] == stock['run']['id']
    assert 'hosts' not in artifact and all('msg' not in pair for pair in artifact['pairs'])
    directory = tmp_path / 'job2'
    tuned = run_module(verify_report.main, {'results': load('lab-tuned.json'), 'label': 'tuned',
                                            'report_dir': str(directory), 'baseline': artifact})
    assert tuned['rc'] == 0 and tuned['passed'] is True
    assert tuned['msg'].endswith('; stock baseline: run %s, given as verify_baseline).' % stock['run']['id'])
    by_key = dict((pair['key'], pair) for pair in stock['results'])
    saved = json.loads((directory / os.path.basename(tuned['files']['json'])).read_text())
    for pair, kept in zip(tuned['results'], saved['pairs']):
        assert pair['baseline_bps'] == kept['baseline_bps'] == by_key[pair['key']]['receiver_bps']
        assert pair['baseline_run'] == kept['baseline_run'] == stock['run']['id']
    text = markdown(tuned)
    for pair in tuned['results']:
        assert '| %.1f (%s) | PASS |' % (pair['baseline_bps'] / 1e6, stock['run']['id']) in text
    # the tuned run is no baseline: its artifacts say so
    assert sorted(tuned['artifacts']) == ['verify'] and tuned['artifacts']['verify']['label'] == 'tuned'
    # its JSON text (-e verify_baseline='{...}') does the same; without it the fresh directory has no baseline
    again = run_module(verify_report.main, {'results': load('lab-tuned.json'), 'label': 'tuned',
                                            'report_dir': str(tmp_path / 'job3'), 'baseline': json.dumps(artifact)})
    assert [pair['baseline_run'] for pair in again['results']] == [stock['run']['id']] * 2
    alone = run_module(verify_report.main, {'results': load('lab-tuned.json'), 'label': 'tuned',
                                            'report_dir': str(tmp_path / 'job4')})
    assert [pair['baseline_run'] for pair in alone['results']] == [None, None]
    assert '| - | PASS |' in markdown(alone)


def test_a_baseline_that_is_no_stock_summary_fails_before_anything_is_written(run_module, tmp_path):
    bad = {'label': 'stock', 'id': '20261122T194500Z', 'time': '2026-11-22T19:45:00Z', 'pairs': [{'status': 'PASS'}]}
    result = run_module(verify_report.main, {'results': load('lab-tuned.json'), 'report_dir': str(tmp_path / 'r'),
                                             'baseline': bad})
    assert result['rc'] == 1 and result['msg'].startswith('verify_baseline: pairs[0] has no key'), result['msg']
    assert not (tmp_path / 'r').exists()


def test_check_mode_leaves_a_summary_and_no_baseline(run_module, tmp_path):
    result = run_module(verify_report.main, {'results': load('loopback-check-mode.json'), 'label': 'stock',
                                             'report_dir': str(tmp_path), '_ansible_check_mode': True})
    assert result['rc'] == 0 and sorted(result['artifacts']) == ['verify']
    assert result['artifacts']['verify']['check_mode'] is True and result['artifacts']['verify']['passed'] is None
