# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html in a real browser: headless Chromium (Debian's chromium, installed by scripts/setup.sh) runs the
page's inline script, and the DOM it leaves must hold the plot of each run - a goodput bar per pair with its value,
the stock baseline bar and the ceiling tick - with bar lengths in proportion to the values."""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess

import pytest

import role_templates
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report as report

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        'fixtures', 'verify')
CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def attrs(tag):
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def elements(dom, name, cls):
    return [attrs(tag) for tag in re.findall(r'<%s\b[^>]*>' % name, dom) if cls in attrs(tag).get('class', '').split()]


def test_chromium_draws_a_plot_per_run_with_each_pair(tmp_path):
    assert CHROMIUM, 'chromium is not installed; run scripts/setup.sh (it installs Debian\'s chromium)'
    runs = []
    for minute, (name, label) in enumerate((('lab-stock.json', 'stock'), ('lab-tuned.json', 'tuned'))):
        run = report.build_run(load(name), label, datetime.datetime(2026, 11, 22, 20, minute,
                                                                    tzinfo=datetime.timezone.utc))
        run['file'] = report.run_file_name(run)
        runs.append(run)
    page = tmp_path / 'report.html'
    page.write_text(role_templates.verify_html(runs))
    proc = subprocess.run([CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                           '--user-data-dir=%s' % (tmp_path / 'profile'), '--virtual-time-budget=5000',
                           '--dump-dom', page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    dom = proc.stdout
    assert proc.returncode == 0 and '</html>' in dom, proc.stderr[-2000:]
    assert 'data-plots-drawn="2"' in dom, 'the inline script did not run to its end'
    stock, tuned = runs
    svgs = dict((attrs(tag)['data-run'], attrs(tag)) for tag in re.findall(r'<svg\b[^>]*>', dom)
                if 'data-run' in attrs(tag))
    assert svgs[stock['file']]['data-drawn'] == '2' and svgs[tuned['file']]['data-drawn'] == '2'
    # split the DOM per run section: each plot holds the bars of its own pairs
    sections = dict((run['file'], dom[dom.index('id="%s"' % run['file']):]) for run in runs)
    sections[tuned['file']] = sections[tuned['file']][:sections[tuned['file']].index('id="%s"' % stock['file'])]
    for run in runs:
        part = sections[run['file']]
        measured = dict((rect['data-pair'].replace('&gt;', '>'), rect) for rect in elements(part, 'rect', 'measured'))
        ceilings = dict((tick['data-pair'].replace('&gt;', '>'), tick) for tick in elements(part, 'line', 'ceiling'))
        baselines = dict((rect['data-pair'].replace('&gt;', '>'), rect) for rect in elements(part, 'rect', 'baseline'))
        assert sorted(measured) == sorted(pair['key'] for pair in run['pairs'])
        assert sorted(ceilings) == sorted(measured)
        for pair in run['pairs']:
            goodput = measured[pair['key']]
            assert int(goodput['data-bps']) == pair['receiver_bps']
            assert ('fail' if run is stock else 'pass') in goodput['class'].split()
            assert int(ceilings[pair['key']]['data-bps']) == pair['ceiling_bps']
            assert float(goodput['width']) > 0
        if run is tuned:
            assert sorted(baselines) == sorted(measured)
            for pair in run['pairs']:
                base = [item for item in stock['pairs'] if item['key'] == pair['key']][0]
                assert int(baselines[pair['key']]['data-bps']) == base['receiver_bps']
                ratio = float(baselines[pair['key']]['width']) / float(measured[pair['key']]['width'])
                assert ratio == pytest.approx(base['receiver_bps'] / float(pair['receiver_bps']), rel=0.01)
        else:
            assert baselines == {}
