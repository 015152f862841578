# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/verify.yml in the WAN lab (two hosts, 1 Gbit/s, 98 ms), both directions of the pair.

Check mode first (nothing measured, no report), then a stock run labelled ``stock`` and judged against the link
rate: it must fail, naming both pairs and the receive window, after writing the report. Then playbooks/wan_tune.yml,
and a ``tuned`` run that passes, with the stock run as its baseline in the JSON, Markdown and HTML report, and the
host survey of both hosts (bdp.wan_tune.nic_facts before and after each run) in its Hosts section.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'lab'))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the lab needs root (namespaces, TUN, podman)')

ROOT = wanlab.REPO_ROOT
VERIFY = os.path.join(ROOT, 'playbooks', 'verify.yml')
WAN_TUNE = os.path.join(ROOT, 'playbooks', 'wan_tune.yml')
NAME = 'bdp-lab-verify'      # its own name, so that another lab on the machine is neither used nor removed


def playbook(argv):
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')] + argv
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_NOCOLOR='1')
    return subprocess.run(cmd, env=env, text=True, capture_output=True, check=False, timeout=900)


def mine():
    return [item for item in wanlab.leftovers() if NAME in item]


def runs(directory):
    found = {}
    for name in sorted(os.listdir(directory)):
        if name.startswith('run-'):
            with open(os.path.join(directory, name)) as handle:
                run = json.load(handle)
            found[run['label']] = run
    return found


def test_verify_playbook_stock_fails_tuned_passes_with_the_baseline(tmp_path):
    assert not mine(), 'lab %s is already running: %s' % (NAME, mine())
    lab = wanlab.Lab(name=NAME, rate='1g', rtt='98', hosts='containers',
                     log=lambda msg: print('lab: ' + msg, file=sys.stderr))
    pairs = ['%s -> %s' % (lab.host_name('A'), lab.host_name('B')), '%s -> %s' % (lab.host_name('B'), lab.host_name('A'))]
    hosts = [lab.host_name('A'), lab.host_name('B')]
    report = tmp_path / 'report'
    try:
        with lab:
            inventory = tmp_path / 'inventory.ini'
            inventory.write_text('\n'.join([
                '[lab]',
                '%s jumbo_mtu_address=%s' % (lab.host_name('A'), lab.address('A')),
                '%s jumbo_mtu_address=%s' % (lab.host_name('B'), lab.address('B')),
                '[lab:vars]', 'ansible_connection=podman_nsenter',
                'ansible_python_interpreter=/usr/bin/python3', 'wan_tune_become=false']) + '\n')
            common = ['-i', str(inventory), '-e', json.dumps({
                'rate': '1g', 'rtt': '98', 'verify_pair_group': 'lab', 'verify_duration': 6, 'verify_omit': 3,
                'verify_expect': 'rate', 'verify_report_dir': str(report)})]

            check = playbook(common + [VERIFY, '--check', '-e', 'verify_label=stock'])
            assert check.returncode == 0, check.stdout[-3000:]
            assert check.stdout.count(': CHECK MODE: Check mode: no measurement was made') == 2
            # the survey only reads, so it runs before the tests in check mode too; the one after is skipped
            before, after = [block.split('\nTASK [')[0] for block in
                             check.stdout.split('TASK [bdp.wan_tune.verify : Survey this host')[1:]]
            assert all('ok: [%s]' % name in before for name in hosts) and 'ok: [' not in after, check.stdout[-3000:]
            assert not report.exists()

            stock = playbook(common + [VERIFY, '-e', 'verify_label=stock'])
            assert stock.returncode == 2, stock.stdout[-3000:]
            for pair in pairs:
                assert '"msg": "%s (198.18.0.' % pair in stock.stdout    # the line printed as the pair finished
            failure = [line for line in stock.stdout.splitlines() if '2 of 2 path tests failed' in line]
            assert failure and all(pair in failure[0] for pair in pairs) and 'receive window on' in failure[0]
            assert runs(str(report))['stock']['failed_pairs'] == pairs        # written before the failure

            tune = playbook(['-i', str(inventory), WAN_TUNE, '-e', 'rate=1g', '-e', 'rtt=98'])
            assert tune.returncode == 0, tune.stdout[-3000:]

            tuned = playbook(common + [VERIFY, '-e', 'verify_label=tuned'])
            assert tuned.returncode == 0, tuned.stdout[-3000:]
    finally:
        left = mine()
        if left:
            wanlab.teardown(NAME)
    assert not left, 'the lab left things behind: %s' % left

    kept = runs(str(report))
    assert sorted(kept) == ['stock', 'tuned']
    stock_pairs = dict((pair['key'], pair) for pair in kept['stock']['pairs'])
    tuned_pairs = dict((pair['key'], pair) for pair in kept['tuned']['pairs'])
    assert sorted(stock_pairs) == sorted(tuned_pairs) == pairs
    for key in pairs:
        before, after = stock_pairs[key], tuned_pairs[key]
        assert before['status'] == 'FAIL' and before['receive_buffer_bytes'] == 6291456
        assert before['diagnosis'][0].startswith('receive window on ')
        assert after['status'] == 'PASS' and after['receive_buffer_bytes'] == 98000000
        assert after['receiver_bps'] >= 0.7e9 and after['receiver_bps'] >= 2 * before['receiver_bps']
        print('%s: stock %.0f Mbit/s, tuned %.0f Mbit/s' % (key, before['receiver_bps'] / 1e6,
                                                            after['receiver_bps'] / 1e6))
    assert kept['tuned']['passed'] is True and kept['stock']['passed'] is False
    markdown = (report / 'report.md').read_text()
    assert markdown.startswith('# Path verification %s (tuned)' % kept['tuned']['id'])
    assert markdown.count('(%s) | PASS |' % kept['stock']['id']) == 2          # the stock baseline of both pairs
    page = (report / 'report.html').read_text()
    assert page.count('<section class="run"') == 2 and '"baseline_bps": %d' % stock_pairs[pairs[0]]['receiver_bps'] in page
    # the host survey of both lab hosts, before and after each run, of the interface that routes to the other host
    for run in kept.values():
        assert sorted(run['hosts']) == sorted(hosts), run['hosts']
        for name, entry in run['hosts'].items():
            assert entry['errors'] == [] and entry['before'] and entry['after'], (name, entry)
            routes = [nic['reason'] for nic in entry['after']['nic'].values()]
            assert routes and all(reason.startswith('route to 198.18.') for reason in routes), routes
            assert entry['after']['host']['softnet']['supported'] is True
    assert '\n## Hosts\n' in markdown and page.count('<h3>Hosts</h3>') == 2
    for name in hosts:
        assert '| %s | before and after the tests |' % name in markdown
