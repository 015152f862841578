# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host surveys in the verify report (module_utils/verify/verify_report.py): the Hosts section of the Markdown
and the HTML, and the hints of module_utils/nic/diagnose.py in the diagnosis of a pair that fell short.

Fixtures in tests/unit/fixtures/verify:
  surveys-ring-drops.json  the surveys the role hands to bdp.wan_tune.verify_report ({'before': {host: nic_facts
                   result}, 'after': {...}}) for h1 and h2 of the loopback-*.json fixtures: h1 a 25G mlx5 sender
                   with rings at the maximum and the performance governor; h2 a 10G e1000e receiver with rings 512 of
                   4096, no cpufreq, whose rx_missed_errors rose by 1200 and rx_no_buffer_count by 30 between them;
  run-20261120T100000Z-stock.json  a run file written before the report kept surveys (no "hosts" key).
A container's /proc/net/softnet_stat counts for the whole machine, so the drops are tested from these fixtures.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import re

import role_templates
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report as report

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'verify')
OLD_RUN = 'run-20261120T100000Z-stock.json'
RING_HINT = ('receiver h2: ring/missed drops on ens4 rose during the test (rx_missed_errors +1200, rx_no_buffer_count '
             '+30): raise the rings (nic_rings / ethtool -G ens4 rx 4096 tx 4096)')


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def run_of(name, surveys, minute=0, label='tuned', check_mode=False):
    run = report.build_run(load(name), label, datetime.datetime(2026, 11, 22, 20, minute, tzinfo=datetime.timezone.utc),
                           check_mode, surveys)
    run['file'] = report.run_file_name(run)
    return run


def old_run():
    run = load(OLD_RUN)
    run['file'] = OLD_RUN
    return run


def section(text, title):
    """The Markdown section ``## title`` up to the next one."""
    part = text.split('\n## %s\n' % title, 1)[1]
    return part.split('\n## ', 1)[0]


def table_rows(text, first):
    """The cells of the Markdown table rows that start with the cell ``first``."""
    return [[cell.strip() for cell in line.strip('|').split(' | ')] for line in text.splitlines()
            if line.startswith('| %s |' % first)]


def test_a_failed_pair_with_rising_ring_drops_names_the_rings():
    run = run_of('loopback-fail-rate-1t.json', load('surveys-ring-drops.json'))
    first = run['pairs'][0]
    assert first['key'] == 'h1 -> h2' and first['status'] == 'FAIL'
    # the module's own diagnosis first (it stays the "likely limit"), then the hints of the hosts
    assert first['diagnosis'][0].startswith('no single cause stands out') and first['diagnosis'][1:] == [RING_HINT]
    assert 'Likely limit: no single cause stands out' in report.failure_message(run)
    markdown = role_templates.verify_markdown(run, [run])
    failed = [line for line in section(markdown, 'Failed pairs').splitlines() if line.startswith('- **h1 -> h2**')]
    assert len(failed) == 1 and failed[0].endswith(RING_HINT)
    page = role_templates.verify_html([run])
    cell = re.search(r'<tr data-pair="h1 -&gt; h2">.*?<td class="diag">(.*?)</td></tr>', page).group(1)
    assert cell.endswith(RING_HINT.replace("'", '&#x27;'))


def test_a_passing_pair_gets_no_hint_though_the_counters_rose():
    run = run_of('loopback-pass.json', load('surveys-ring-drops.json'))
    assert [pair['status'] for pair in run['pairs']] == ['PASS', 'PASS']
    assert [pair['diagnosis'] for pair in run['pairs']] == [[], []]
    markdown = role_templates.verify_markdown(run, [run])
    assert '## Failed pairs' not in markdown and 'raise the rings' not in markdown
    # the Hosts section still shows what rose
    assert 'rx_missed_errors +1200, rx_no_buffer_count +30' in section(markdown, 'Hosts')


def test_the_hosts_section_shows_the_survey_of_each_host():
    run = run_of('loopback-fail-rate-1t.json', load('surveys-ring-drops.json'))
    assert sorted(run['hosts']) == ['h1', 'h2']
    assert set(run['hosts']['h2']) == {'before', 'after', 'errors'}
    assert set(run['hosts']['h2']['after']) == {'interfaces', 'nic', 'host'}       # no invocation, no summary
    hosts = section(role_templates.verify_markdown(run, [run]), 'Hosts')
    assert table_rows(hosts, 'Host') == [
        ['Host', 'Survey', 'CPU governor', 'irqbalance', 'Softnet drops', 'Time squeezes'],
        ['Host', 'Interface', 'Driver', 'Speed (Mbit/s)', 'Rings (current of maximum)', 'txqueuelen', 'Root qdisc',
         'NUMA node', 'Ring/missed drops']]
    assert table_rows(hosts, 'h1') == [
        ['h1', 'before and after the tests', 'performance', 'running', '+0', '+0'],
        ['h1', 'ens5 (route to 198.18.0.2)', 'mlx5_core', '25000', 'rx 8192 of 8192, tx 8192 of 8192', '1000', 'mq/fq',
         '0', 'none']]
    assert table_rows(hosts, 'h2') == [
        ['h2', 'before and after the tests', 'unsupported', 'not running', '+0', '+0'],
        ['h2', 'ens4 (route to 198.18.0.1)', 'e1000e', '10000', 'rx 512 of 4096, tx 512 of 4096', '1000', 'fq_codel',
         'none', 'rx_missed_errors +1200, rx_no_buffer_count +30']]
    page = role_templates.verify_html([run])
    hosts_html = page.split('<h3>Hosts</h3>', 1)[1].split('</section>', 1)[0]
    for row in (table_rows(hosts, 'h1') + table_rows(hosts, 'h2')):
        assert '<td>%s</td>' % '</td><td>'.join(row) in hosts_html, row
    assert page.count('<h3>Hosts</h3>') == 1


def test_softnet_drops_and_time_squeezes_that_rose_are_shown_and_named():
    surveys = load('surveys-ring-drops.json')
    softnet = surveys['after']['h1']['host']['softnet']
    softnet['per_cpu'][1].update(dropped=40, time_squeeze=10)        # CPU 1: 40 drops, 7 more squeezes than before
    run = run_of('loopback-fail-rate-1t.json', surveys)
    assert table_rows(section(role_templates.verify_markdown(run, [run]), 'Hosts'), 'h1')[0][4:] == ['+40', '+7']
    assert run['pairs'][0]['diagnosis'][1:3] == [
        'sender h1: /proc/net/softnet_stat drops rose by 40 during the test (the backlog queue was full): raise '
        'net.core.netdev_max_backlog',
        'sender h1: /proc/net/softnet_stat time_squeeze rose by 7 during the test (the softirq ran out of budget '
        'with packets left): raise net.core.netdev_budget (and net.core.netdev_budget_usecs)']


def test_a_survey_that_failed_or_was_skipped():
    surveys = load('surveys-ring-drops.json')
    surveys['before']['h2'] = {'failed': False, 'msg': 'No interface to survey: peer 127.0.0.1 (127.0.0.1) is an '
                                                       'address of this host; list the other end of the path.'}
    surveys['after']['h2'] = {'unreachable': True, 'msg': 'Failed to connect to the host via ssh'}
    surveys['before']['h3'] = surveys['after']['h3'] = {'skipped': True, 'changed': False}    # no pair: no survey
    run = run_of('loopback-fail-rate-1t.json', surveys)
    assert sorted(run['hosts']) == ['h1', 'h2']
    assert run['hosts']['h2'] == {'before': None, 'after': None, 'errors': [
        'the survey before the tests failed: No interface to survey: peer 127.0.0.1 (127.0.0.1) is an address of '
        'this host; list the other end of the path.',
        'the survey after the tests failed: Failed to connect to the host via ssh']}
    # no survey of the receiver, no hint about it; the pair keeps its own diagnosis
    assert len(run['pairs'][0]['diagnosis']) == 1
    markdown = role_templates.verify_markdown(run, [run])
    hosts = section(markdown, 'Hosts')
    assert table_rows(hosts, 'h2') == [['h2', 'not surveyed', '-', '-', '-', '-']]
    assert '- h2: the survey after the tests failed: Failed to connect to the host via ssh' in hosts
    assert '<li>h2: the survey after the tests failed: Failed to connect' in role_templates.verify_html([run])


def test_check_mode_has_the_survey_before_only_with_counts_since_boot():
    surveys = load('surveys-ring-drops.json')
    surveys['after'] = dict((name, {'skipped': True, 'changed': False}) for name in surveys['after'])
    run = run_of('loopback-check-mode.json', surveys, check_mode=True)
    assert [pair['diagnosis'] for pair in run['pairs']] == [[], []]
    hosts = section(role_templates.verify_markdown(run, [run]), 'Hosts')
    assert table_rows(hosts, 'h1')[0] == ['h1', 'before the tests only', 'performance', 'running', '0 since boot',
                                          '15 since boot']
    assert table_rows(hosts, 'h2')[1][-1] == 'rx_missed_errors 7 since boot'


def test_without_surveys_the_report_says_so():
    run = run_of('loopback-fail-rate-1t.json', None)
    assert run['hosts'] is None and len(run['pairs'][0]['diagnosis']) == 1
    assert section(role_templates.verify_markdown(run, [run]), 'Hosts').strip() == report.NO_SURVEY
    assert '<h3>Hosts</h3>\n<p class="hosts-note">%s</p>' % report.NO_SURVEY in role_templates.verify_html([run])


def test_an_older_run_without_surveys_still_renders():
    old, new = old_run(), run_of('lab-tuned.json', load('surveys-ring-drops.json'), label='tuned')
    assert 'hosts' not in old and report.parse_run(json.dumps(old)) is not None
    markdown = role_templates.verify_markdown(old, [old])
    assert markdown.startswith('# Path verification 20261120T100000Z (stock)') and '## Hosts' not in markdown
    assert '- **bdp-lab-a -> bdp-lab-b**: receive window' in markdown
    page = role_templates.verify_html([old, new])
    assert page.count('<section class="run"') == 2 and page.count('<h3>Hosts</h3>') == 1
    # the new run still finds the old one as its stock baseline
    assert report.baseline([old, new], new, 'bdp-lab-a -> bdp-lab-b')['run_id'] == old['id']


def test_the_json_keeps_every_key_of_an_older_run():
    old, new = old_run(), run_of('lab-stock.json', load('surveys-ring-drops.json'), label='stock')
    assert set(new) - set(old) == {'hosts'} and not set(old) - set(new) - {'file'}
    for before, after in zip(old['pairs'], new['pairs']):
        assert set(before) == set(after)
    # the lab hosts were not surveyed (the fixture is of h1 and h2): their pairs keep the diagnosis they had
    assert [pair['diagnosis'] for pair in new['pairs']] == [pair['diagnosis'] for pair in old['pairs']]


def test_the_surveys_are_not_changed_by_the_report():
    surveys = load('surveys-ring-drops.json')
    kept = copy.deepcopy(surveys)
    run_of('loopback-fail-rate-1t.json', surveys)
    assert surveys == kept
