# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job artifacts of a verify run and the stock baseline given back (module_utils/verify/verify_report.py):
summary(), artifacts(), given_baseline() and how a given stock run competes with the report directory's.

The runs are built from the recorded role input of tests/unit/fixtures/verify (lab-stock.json, lab-tuned.json: the
WAN lab at 1 Gbit/s and 98 ms before and after playbooks/wan_tune.yml), as the module builds them.
"""

from __future__ import annotations

import datetime
import json
import os

import pytest

import role_templates
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report as report

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'verify')
SUMMARY_PAIR = {'key', 'source', 'target', 'address', 'status', 'receiver_bps', 'ceiling_bps', 'expectation_bps',
                'limit', 'diagnosis', 'retransmits', 'rate_bps', 'rtt_ms', 'streams', 'duration', 'baseline_bps',
                'baseline_run'}


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def at(minute):
    return datetime.datetime(2026, 11, 22, 20, minute, 0, tzinfo=datetime.timezone.utc)


def run_of(name, label, minute, check_mode=False):
    run = report.build_run(load(name), label, at(minute), check_mode)
    run['file'] = report.run_file_name(run)
    return run


def through_json(value):
    """What the next job gets: AWX and ansible-runner keep the artifacts as JSON."""
    return json.loads(json.dumps(value))


def message(value):
    with pytest.raises(report.ReportError) as info:
        report.given_baseline(value)
    return str(info.value)


# ----------------------------------------------------------------------------- summary and artifacts

def test_the_summary_is_compact_and_keeps_each_pairs_verdict_and_figures():
    stock = run_of('lab-stock.json', 'stock', 0)
    summary = report.summary(stock)
    assert sorted(summary) == ['check_mode', 'id', 'label', 'pairs', 'passed', 'time']
    assert (summary['label'], summary['id'], summary['time'], summary['passed'], summary['check_mode']) == \
        ('stock', '20261122T200000Z', '2026-11-22T20:00:00Z', False, False)
    for item, pair in zip(summary['pairs'], stock['pairs']):
        assert set(item) == SUMMARY_PAIR                # the lab's tests counted retransmits
        assert all(item[name] == pair.get(name) for name in SUMMARY_PAIR)
        assert item['status'] == 'FAIL' and item['diagnosis'][0].startswith('receive window on ')
    # no iperf3 output, no host survey: a few hundred bytes per pair
    assert len(json.dumps(summary)) < 1500 * len(summary['pairs'])
    assert through_json(summary) == summary


def test_a_pair_without_retransmits_leaves_the_key_out():
    run = run_of('loopback-check-mode.json', 'stock', 0, check_mode=True)
    assert all('retransmits' not in item for item in report.summary(run)['pairs'])
    assert set(report.summary(run_of('lab-tuned.json', 'tuned', 0))['pairs'][0]) == SUMMARY_PAIR


def test_the_summary_of_a_later_run_carries_each_pairs_stock_baseline():
    stock, tuned = run_of('lab-stock.json', 'stock', 0), run_of('lab-tuned.json', 'tuned', 1)
    report.record_baselines(tuned, [stock, tuned])
    pairs = report.summary(tuned)['pairs']
    assert [(item['baseline_bps'], item['baseline_run']) for item in pairs] == [
        (pair['receiver_bps'], stock['id']) for pair in stock['pairs']]
    assert all(item['baseline_bps'] is None for item in report.summary(stock)['pairs'])


def test_only_a_measured_stock_run_is_a_baseline_artifact():
    stock = run_of('lab-stock.json', 'stock', 0)
    found = report.artifacts(stock)
    assert sorted(found) == ['verify', 'verify_baseline'] and found['verify'] == found['verify_baseline']
    assert found['verify'] == report.summary(stock)
    for run in (run_of('lab-tuned.json', 'tuned', 1), run_of('loopback-check-mode.json', 'stock', 2, check_mode=True),
                run_of('lab-stock.json', 'Stock', 3)):
        assert sorted(report.artifacts(run)) == ['verify'], run['label']


# ----------------------------------------------------------------------------- the baseline given back

@pytest.mark.parametrize('value', [None, {}, '', '   '])
def test_nothing_given_is_no_baseline(value):
    assert report.given_baseline(value) is None


def test_the_baseline_artifact_is_read_back_as_a_stock_run():
    stock = run_of('lab-stock.json', 'stock', 0)
    artifact = through_json(report.artifacts(stock)['verify_baseline'])
    given = report.given_baseline(artifact)
    assert (given['id'], given['time'], given['label'], given['check_mode'], given['given']) == \
        (stock['id'], stock['time'], 'stock', False, True)
    assert given['order'] == at(0).timestamp()
    assert given['pairs'] == [{'key': pair['key'], 'receiver_bps': pair['receiver_bps'], 'measured': True}
                              for pair in stock['pairs']]
    # its JSON text (-e verify_baseline='{...}') and a run file of another report directory read the same
    assert report.given_baseline(json.dumps(artifact)) == given
    old = load('run-20261120T100000Z-stock.json')
    from_file = report.given_baseline(old)
    assert from_file['id'] == '20261120T100000Z' and from_file['order'] == old['order']
    assert [pair['receiver_bps'] for pair in from_file['pairs']] == [pair['receiver_bps'] for pair in old['pairs']]


def test_a_pair_that_was_not_measured_is_no_baseline():
    stock = report.summary(run_of('lab-stock.json', 'stock', 0))
    stock['pairs'][0] = dict(stock['pairs'][0], status='ERROR', receiver_bps=None)
    stock['pairs'][1] = dict(stock['pairs'][1], receiver_bps=float(stock['pairs'][1]['receiver_bps']))
    given = report.given_baseline(stock)
    assert [pair['measured'] for pair in given['pairs']] == [False, True]
    assert isinstance(given['pairs'][1]['receiver_bps'], int)


@pytest.mark.parametrize('value, reason', [
    ([{'key': 'a -> b'}], 'verify_baseline: is a list, not a verify summary; expected '),
    (5, 'verify_baseline: is a number, not a verify summary; expected '),
    (True, 'verify_baseline: is a boolean, not a verify summary; expected '),
    ('stock', "verify_baseline: 'stock' is a string that is not JSON text; expected "),
    ('[1]', 'verify_baseline: is a list, not a verify summary; expected '),
    ({'verify_baseline': {}}, 'verify_baseline: is a mapping without a pairs list (its keys: verify_baseline), not a '
                              'verify summary; expected '),
    ({'pairs': 'a -> b', 'id': 'x'}, 'verify_baseline: is a mapping without a pairs list (its keys: id, pairs)'),
])
def test_a_value_that_is_no_summary_is_refused_by_its_kind(value, reason):
    text = message(value)
    assert text.startswith(reason), text
    assert 'expected the verify_baseline artifact of a run labelled stock: a mapping with id, time' in text
    assert 'each pair a mapping with key and receiver_bps' in text and text.endswith('{} for none.')


def summary_with(**changes):
    summary = through_json(report.summary(run_of('lab-stock.json', 'stock', 0)))
    summary.update(changes)
    return summary


@pytest.mark.parametrize('changes, reason', [
    ({'pairs': [{'status': 'PASS', 'receiver_bps': 1}]},
     'verify_baseline: pairs[0] has no key (the pair, such as "a -> b"); it has receiver_bps, status; expected '),
    ({'pairs': [{'key': ''}]}, 'verify_baseline: pairs[0] has no key'),
    ({'pairs': ['a -> b']}, 'verify_baseline: pairs[0] is a string, not a pair of a verify summary; expected '),
    ({'pairs': [{'key': 'a -> b', 'receiver_bps': 'fast'}]},
     "verify_baseline: pairs[0] (a -> b) has receiver_bps 'fast', not a whole number of bit/s; expected "),
    ({'pairs': [{'key': 'a -> b', 'receiver_bps': -1}]}, 'verify_baseline: pairs[0] (a -> b) has receiver_bps -1,'),
    ({'label': 'tuned'}, "verify_baseline: run 20261122T200000Z is labelled 'tuned', not stock, so it is no stock "
                         "baseline; expected "),
    ({'check_mode': True}, 'verify_baseline: run 20261122T200000Z ran in check mode and measured nothing; expected '),
    ({'id': None}, 'verify_baseline: the summary has no run id (id: null (empty)); expected '),
    ({'time': '22/11/2026'}, "verify_baseline: run 20261122T200000Z has no time to order it by (time: '22/11/2026')"),
])
def test_a_summary_that_cannot_be_a_stock_baseline_is_refused_naming_what_is_wrong(changes, reason):
    assert message(summary_with(**changes)).startswith(reason)


def test_the_name_in_the_message_is_the_callers():
    with pytest.raises(report.ReportError, match=r'^baseline: is a list'):
        report.given_baseline([], 'baseline')


# ----------------------------------------------------------------------------- the given run against the directory's

def test_the_latest_earlier_stock_run_wins_wherever_it_is():
    early, late = run_of('lab-stock.json', 'stock', 0), run_of('lab-stock.json', 'stock', 2)
    late['pairs'][0]['receiver_bps'] += 1
    tuned = run_of('lab-tuned.json', 'tuned', 3)
    key = tuned['pairs'][0]['key']
    given_late = report.given_baseline(through_json(report.summary(late)))
    given_early = report.given_baseline(through_json(report.summary(early)))
    # given later than the directory's stock run: the given one; given earlier: the directory's
    assert report.baseline([early, tuned], tuned, key, given_late)['run_id'] == late['id']
    assert report.baseline([early, tuned], tuned, key, given_late)['receiver_bps'] == late['pairs'][0]['receiver_bps']
    assert report.baseline([late, tuned], tuned, key, given_early)['run_id'] == late['id']
    # alone in a fresh directory, and not at all without it
    assert report.baseline([tuned], tuned, key, given_early)['run_id'] == early['id']
    assert report.baseline([tuned], tuned, key) is None
    # a stock run given that is not earlier than the run is not its baseline; nor is a stock run's own
    before = run_of('lab-tuned.json', 'tuned', 1)
    assert report.baseline([before], before, key, given_late) is None
    assert report.baseline([late], late, key, given_early) is None
    # a pair the given run did not measure
    assert report.baseline([tuned], tuned, 'nobody -> nowhere', given_early) is None


def test_the_same_run_in_the_directory_and_given_is_the_directorys():
    stock, tuned = run_of('lab-stock.json', 'stock', 0), run_of('lab-tuned.json', 'tuned', 1)
    key = tuned['pairs'][0]['key']
    given = report.given_baseline(through_json(report.summary(stock)))
    given['pairs'][0]['receiver_bps'] = 1         # were it taken, it would show
    assert report.baseline([stock, tuned], tuned, key, given)['receiver_bps'] == stock['pairs'][0]['receiver_bps']
    # a run's exact time (order) is never before the whole second of its summary
    stock['order'] += 0.75
    assert report.baseline([stock, tuned], tuned, key, given)['receiver_bps'] == stock['pairs'][0]['receiver_bps']


def test_a_run_keeps_the_baseline_it_was_written_with_in_both_reports():
    stock, tuned = run_of('lab-stock.json', 'stock', 0), run_of('lab-tuned.json', 'tuned', 1)
    given = report.given_baseline(through_json(report.artifacts(stock)['verify_baseline']))
    report.record_baselines(tuned, [tuned], given)
    for pair, base in zip(tuned['pairs'], stock['pairs']):
        assert (pair['baseline_bps'], pair['baseline_run']) == (base['receiver_bps'], stock['id'])
    # as read back from its JSON by a later run that was given nothing
    kept = through_json(tuned)
    later = run_of('lab-tuned.json', 'tuned', 2)
    report.record_baselines(later, [kept, later])
    assert all(pair['baseline_run'] is None for pair in later['pairs'])
    text = role_templates.verify_markdown(kept, [kept, later])
    for pair in kept['pairs']:
        row = [line for line in text.splitlines() if line.startswith('| %s |' % pair['key'])][0]
        assert '| %s (%s) | PASS |' % (report.mbit(pair['baseline_bps']), stock['id']) in row
    page = role_templates.verify_html([kept, later])
    data = json.loads(page.split('id="verify-data">')[1].split('</script>')[0])
    shown = dict((run['file'], [pair['baseline_bps'] for pair in run['pairs']]) for run in data['runs'])
    assert shown[kept['file']] == [pair['receiver_bps'] for pair in stock['pairs']]
    assert shown[later['file']] == [None, None]
    # a stock run records none
    report.record_baselines(stock, [stock], given)
    assert all(pair['baseline_run'] is None and pair['baseline_bps'] is None for pair in stock['pairs'])
