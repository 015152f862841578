# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify role's report (module_utils/verify/verify_report.py) over recorded input of the report module.

Fixtures in tests/unit/fixtures/verify, each the list the role handed to bdp.wan_tune.verify_report
(the role's pair plan plus the registered bdp.wan_tune.iperf3_verify result):
  loopback-*.json  two controller hosts over loopback (pass; rate 1t, which fails; congestion nosuchcc, an error;
                   check mode);
  lab-stock.json, lab-tuned.json  the WAN lab at 1 Gbit/s, 98 ms, both directions, before and after
                   playbooks/wan_tune.yml, judged against the link rate (verify_expect=rate).
"""

from __future__ import annotations

import datetime
import json
import os
import re

import pytest

import role_templates
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report as report

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'verify')


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def at(minute):
    return datetime.datetime(2026, 11, 22, 20, minute, 0, tzinfo=datetime.timezone.utc)


def run_of(name, label, minute, check_mode=False):
    run = report.build_run(load(name), label, at(minute), check_mode)
    run['file'] = report.run_file_name(run)
    return run


def test_passing_pairs_keep_the_figures_of_the_module():
    run = run_of('loopback-pass.json', 'tuned', 0)
    assert run['passed'] is True and run['failed_pairs'] == []
    assert [pair['key'] for pair in run['pairs']] == ['h1 -> h2', 'h2 -> h1']
    for pair, entry in zip(run['pairs'], load('loopback-pass.json')):
        assert pair['status'] == 'PASS' and pair['passed'] is True and pair['measured'] is True
        assert pair['receiver_bps'] == int(entry['result']['receiver_bps']) > 10 ** 9
        assert pair['ceiling_bps'] == 10 ** 9 and pair['limit'] == 'link rate'
        assert pair['rate_bps'] == 10 ** 9 and pair['rtt_ms'] == 1.0 and pair['rtt_source'] == 'given'
        assert pair['receive_buffer_bytes'] > 0 and pair['send_buffer_bytes'] > 0
        assert pair['diagnosis'] == []
    line = report.one_line(run['pairs'][0])
    assert line.startswith('h1 -> h2 (127.0.0.1): ') and line.endswith(': PASS')
    assert 'of ceiling 1000.0 Mbit/s (link rate)' in line


def test_failed_pairs_are_named_with_their_diagnosis():
    run = run_of('loopback-fail-rate-1t.json', 'tuned', 0)
    assert run['passed'] is False and run['failed_pairs'] == ['h1 -> h2', 'h2 -> h1']
    for pair in run['pairs']:
        assert pair['status'] == 'FAIL' and pair['passed'] is False
        assert pair['diagnosis'] and pair['fraction'] < 0.7
    message = report.failure_message(run)
    assert message.startswith('2 of 2 path tests failed (run 20261122T200000Z, label tuned): ')
    assert 'h1 -> h2 (127.0.0.1)' in message and 'h2 -> h1 (127.0.0.1)' in message
    assert 'Likely limit: ' + run['pairs'][0]['diagnosis'][0] in message


def test_a_test_that_did_not_run_is_an_error_with_its_message():
    run = run_of('loopback-error-congestion.json', 'tuned', 0)
    pair = run['pairs'][0]
    assert pair['status'] == 'ERROR' and pair['passed'] is False and not pair['measured']
    assert pair['diagnosis'][0].startswith("iperf3 could not use congestion control 'nosuchcc'")
    assert run['failed_pairs'] == ['h1 -> h2'] and run['passed'] is False
    assert 'ERROR: iperf3 could not use congestion control' in report.one_line(pair)


def test_an_error_of_the_role_replaces_the_result():
    entry = dict(load('loopback-pass.json')[0], result={}, error='Start a one-test iperf3 server failed: no iperf3')
    pair = report.normalise(entry)
    assert pair['status'] == 'ERROR' and pair['diagnosis'] == ['Start a one-test iperf3 server failed: no iperf3']


def test_check_mode_measures_nothing_and_fails_nothing():
    run = run_of('loopback-check-mode.json', 'tuned', 0, check_mode=True)
    assert run['passed'] is None and run['failed_pairs'] == []
    for pair in run['pairs']:
        assert pair['status'] == 'CHECK MODE' and pair['passed'] is None and pair['receiver_bps'] is None
        assert pair['ceiling_bps'] == 10 ** 9
        assert 'check mode, not tested (10 s, 1 stream)' in report.one_line(pair)


@pytest.mark.parametrize('label', ['', 'a/b', '../x', 'x' * 41, None, 5, '-x'])
def test_bad_labels_are_refused_naming_the_variable(label):
    with pytest.raises(report.ReportError, match=r'^verify_label: .* is not a run label; expected 1 to 40'):
        report.build_run([], label, at(0))


def test_bad_results_are_refused():
    with pytest.raises(report.ReportError, match='"pair"'):
        report.build_run([{'result': {}}], 'run', at(0))
    with pytest.raises(report.ReportError, match='not a list'):
        report.build_run('x', 'run', at(0))


def test_the_baseline_is_the_latest_earlier_stock_run_of_the_pair():
    old_stock = run_of('loopback-fail-rate-1t.json', 'stock', 0)
    stock = run_of('lab-stock.json', 'stock', 1)
    check = run_of('loopback-check-mode.json', 'stock', 2, check_mode=True)
    tuned = run_of('lab-tuned.json', 'tuned', 3)
    later_stock = run_of('lab-stock.json', 'stock', 4)
    runs = [later_stock, tuned, check, stock, old_stock]
    for pair in tuned['pairs']:
        base = report.baseline(runs, tuned, pair['key'])
        expected = [item for item in stock['pairs'] if item['key'] == pair['key']][0]
        assert base['receiver_bps'] == expected['receiver_bps'] and base['run_id'] == stock['id']
    assert report.baseline(runs, stock, stock['pairs'][0]['key']) is None      # a stock run has none
    assert report.baseline(runs, tuned, 'nobody -> nowhere') is None
    assert report.baseline([tuned], tuned, tuned['pairs'][0]['key']) is None


def test_lab_stock_fails_on_its_receive_window_and_tuned_passes():
    stock, tuned = run_of('lab-stock.json', 'stock', 0), run_of('lab-tuned.json', 'tuned', 1)
    assert sorted(pair['key'] for pair in stock['pairs']) == ['bdp-lab-a -> bdp-lab-b', 'bdp-lab-b -> bdp-lab-a']
    for pair in stock['pairs']:
        assert pair['status'] == 'FAIL' and pair['receive_buffer_bytes'] == 6291456
        assert pair['diagnosis'][0].startswith('receive window on ')
        assert pair['receiver_bps'] < 0.5 * 10 ** 9
    for pair in tuned['pairs']:
        assert pair['status'] == 'PASS' and pair['receiver_bps'] >= 0.7 * 10 ** 9
        assert pair['limit'] == 'link rate' and pair['receive_buffer_bytes'] == 98000000


def test_markdown_has_a_row_per_pair_with_the_baseline_and_the_diagnosis():
    stock, tuned = run_of('lab-stock.json', 'stock', 0), run_of('lab-tuned.json', 'tuned', 1)
    text = role_templates.verify_markdown(tuned, [stock, tuned])
    assert text.startswith('# Path verification 20261122T200100Z (tuned)\n')
    assert 'Verdict: PASS.' in text
    for pair in tuned['pairs']:
        base = [item for item in stock['pairs'] if item['key'] == pair['key']][0]
        row = [line for line in text.splitlines() if line.startswith('| %s |' % pair['key'])][0]
        assert '| %s |' % report.mbit(pair['receiver_bps']) in row
        assert '| %s (%s) | PASS |' % (report.mbit(base['receiver_bps']), stock['id']) in row
    text = role_templates.verify_markdown(stock, [stock, tuned])
    assert 'Verdict: FAIL: ' in text and '## Failed pairs' in text and '- **bdp-lab-a -> bdp-lab-b**: receive window' in text


def test_html_is_self_contained_and_carries_the_data_of_each_run():
    stock, tuned = run_of('lab-stock.json', 'stock', 0), run_of('lab-tuned.json', 'tuned', 1)
    page = role_templates.verify_html([stock, tuned])
    assert page.startswith('<!DOCTYPE html>')
    # nothing is fetched: no src/href, no URL but the SVG namespace name, no @import
    assert not re.search(r'\b(src|href)\s*=', page)
    assert set(re.findall(r'https?://[^\s\'"<>]+', page)) == {'http://www.w3.org/2000/svg'}
    assert '@import' not in page and '<link' not in page
    # newest first, one plot placeholder per run; the plot itself is drawn by the inline script
    assert page.index('data-run="%s"' % tuned['file']) < page.index('data-run="%s"' % stock['file'])
    assert '<rect' not in page.split('<script')[0]
    data = json.loads(re.search(r'<script type="application/json" id="verify-data">(.*?)</script>', page).group(1))
    assert [run['file'] for run in data['runs']] == [tuned['file'], stock['file']]
    tuned_data = data['runs'][0]['pairs']
    for pair in tuned['pairs']:
        item = [entry for entry in tuned_data if entry['key'] == pair['key']][0]
        base = [entry for entry in stock['pairs'] if entry['key'] == pair['key']][0]
        assert item['receiver_bps'] == pair['receiver_bps'] and item['baseline_bps'] == base['receiver_bps']
        assert item['ceiling_bps'] == pair['ceiling_bps'] and item['status'] == 'PASS'
    assert all(entry['baseline_bps'] is None for entry in data['runs'][1]['pairs'])


def test_html_escapes_names_so_the_data_cannot_end_the_script():
    entry = load('loopback-pass.json')[0]
    entry = dict(entry, pair=dict(entry['pair'], source='</script><script>alert(1)</script>'))
    run = report.build_run([entry], 'run', at(0))
    run['file'] = report.run_file_name(run)
    page = role_templates.verify_html([run])
    assert '<script>alert(1)' not in page
    assert page.count('<script') == 2


def test_html_shows_at_most_the_newest_runs():
    runs = [run_of('lab-tuned.json', 'tuned', minute) for minute in range(5)]
    page = role_templates.verify_html(runs, limit=2)
    assert page.count('<section class="run"') == 2 and '2 runs shown of 5 kept' in page
    assert 'data-run="%s"' % runs[4]['file'] in page and 'data-run="%s"' % runs[2]['file'] not in page


def test_run_file_names_never_collide():
    run = run_of('lab-tuned.json', 'tuned', 0)
    first = report.run_file_name(run)
    assert first == 'run-20261122T200000Z-tuned.json' and report.RUN_FILE_RE.match(first)
    second = report.run_file_name(run, [first])
    assert second == 'run-20261122T200000Z-2-tuned.json' and report.RUN_FILE_RE.match(second)
    assert report.parse_run('not json') is None and report.parse_run('{"schema": 99, "pairs": []}') is None
