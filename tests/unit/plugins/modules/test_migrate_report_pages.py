# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migrate role's report pages (templates/report.md.j2, report.html.j2), rendered by ansible.builtin.template from
a run of module_utils/migrate/report.py as the role renders them, and the HTML page opened in headless Chromium: the
verdict, the summary, what was kept, a row per pass, a row per stream, every value escaped (a file name with markup in
it stays text), and the run's JSON whole in the page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report as _report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
HOSTILE = '</script><b id="injected">x</b>\n|pipe'


def run_of():
    first = {'runs': 1, 'run_id': '1.0', 'state': 'done', 'started': 1795680000.0, 'ended': 1795680100.0,
             'copy_seconds': 80.0, 'literal_bytes': 9 * 10 ** 9, 'files_sent': 200000, 'deleted': 0, 'vanished': 3,
             'changed_at_source': 12, 'differs_at_receiver': 0, 'verified': True, 'delete': False, 'proof': 'checksum'}
    # the second pass's runner kept its proof's and its whole seconds (the first's, an older one, did not)
    second = dict(first, runs=2, run_id='2.0', started=1795683600.0, ended=1795683610.0, copy_seconds=4.0,
                  proof_seconds=4.5, pass_seconds=10.0, literal_bytes=9 * 10 ** 7, files_sent=2000, vanished=0,
                  changed_at_source=0, differs_at_receiver=2)
    progress = {'state': 'done', 'runs': 3, 'run_id': '3.0', 'started': 1795690000.0, 'ended': 1795690060.0,
                'bytes_total': 9 * 10 ** 9, 'bytes_done': 9 * 10 ** 9, 'literal_bytes': 9 * 10 ** 7,
                'files_sent': 2000, 'files': 200000, 'present_bytes': 9 * 10 ** 9, 'proof': 'checksum',
                'verified': True, 'mismatches': 1, 'changed_at_source': 0, 'differs_at_receiver': 1, 'delete': True,
                'differs_at_receiver_names': ['data/repaired.bin'], 'bwlimit_start_bps': 5 * 10 ** 8,
                'limits': [[1795690004.0, 2 * 10 ** 8]],
                'deleted': 1000, 'deleted_names': [HOSTILE], 'vanished': 1, 'vanished_names': ['gone'], 'extra': 0,
                'excludes': ['*.tmp'], 'stream_count': 2,
                'phases': {'copying': [1795690002.0, 1795690006.0], 'proving': [1795690006.0, 1795690050.0]},
                'streams': [{'stream': 0, 'bytes': 10 ** 7, 'files': 1000, 'started': 1795690002.0,
                             'ended': 1795690006.0, 'rc': 0, 'cpu_seconds': 1.5, 'literal_bytes': 10 ** 7},
                            {'stream': 1, 'bytes': 8 * 10 ** 7, 'files': 1000, 'started': 1795690002.0,
                             'ended': 1795690005.0, 'rc': 0, 'cpu_seconds': 2.5, 'literal_bytes': 8 * 10 ** 7}],
                'preserve': {'acls': True, 'xattrs': False, 'sparse': True},
                'plan': {'attributes': {'xattrs': 4}, 'linked': 2}, 'history': [first, second]}
    progress['summary'] = dict(second, runs=3, run_id='3.0', started=1795690000.0, ended=1795690060.0, deleted=1000,
                               delete=True, differs_at_receiver=1, proof_seconds=44.0, pass_seconds=60.0)
    return _report.build({'state': 'done', 'progress': progress},
                         {'receiver': 'dc2-a', 'module': 'incoming', 'transport': 'tls', 'dest': '/srv/in/dc1-a',
                          'owners': True}, 'dc1-a')


def render(tmp_path, run):
    """The two pages, rendered by ansible.builtin.template with the role's templates (as tasks/report.yml does)."""
    (tmp_path / 'run.json').write_text(json.dumps({'__run': run}))
    playbook = tmp_path / 'render.yml'
    playbook.write_text('- hosts: localhost\n  gather_facts: false\n  tasks:\n'
                        '    - ansible.builtin.template:\n        src: %s/roles/migrate/templates/report.{{ item }}.j2\n'
                        '        dest: %s/report.{{ item }}\n        mode: "0644"\n      loop: [md, html]\n'
                        % (ROOT, tmp_path))
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(playbook), '-e',
                           '@%s' % (tmp_path / 'run.json')], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return (tmp_path / 'report.md').read_text(), tmp_path / 'report.html'


def test_the_markdown_page_has_the_summary_the_passes_and_the_streams(tmp_path):
    run = run_of()
    markdown, dummy = render(tmp_path, run)
    assert markdown.startswith('# Migration dc1-a -> dc2-a:incoming (%s)\n\n**VERIFIED (checksum)**\n' % run['when'])
    assert '| goodput of this pass | 180 Mbit/s |' in markdown
    assert '| deleted at the receiver | 1000, 0 left that the source has not |' in markdown
    rows = [line for line in markdown.split('## Passes')[1].split('## Streams')[0].splitlines()
            if re.match(r'^\| [0-9]+ \|', line)]
    assert [row.split(' | ')[0] for row in rows] == ['| 1', '| 2', '| 3'] and '| 900 Mbit/s | 2500.0 |' in rows[0]
    # per pass: what differed at the receiver, the copy's, the proof's and the whole pass's seconds (the outage)
    assert '| changed at the source | differs at the receiver | copy s | proof s | whole pass s | goodput | files/s | ' \
        'verified |' in markdown and '| stream | bytes | files | parts |' in markdown
    assert rows[0].endswith('| 12 | 0 | 80.0 | - | 100.0 | 900 Mbit/s | 2500.0 | yes |'), rows[0]
    assert rows[1].endswith('| 0 | 2 | 4.0 | 4.5 | 10.0 | 180 Mbit/s | 500.0 | yes |'), rows[1]
    assert rows[2].endswith('| 0 | 1 | 4.0 | 44.0 | 60.0 | 180 Mbit/s | 500.0 | yes |'), rows[2]
    assert "The last pass's whole pass seconds (the sender's runner, from its start to its end" in markdown
    assert '| whole pass seconds (the runner\'s start to its end, the proof done) | 60.0 |' in markdown
    assert '| rate limit | 500 Mbit/s at the start; 200 Mbit/s from 10:46:44 |' in markdown
    assert '\nDiffered at the receiver, sent again (1): "data/repaired.bin"\n' in markdown
    assert '\nVanished from the source during the pass (1): "gone"\n' in markdown
    assert 'Not kept: extended attributes' in markdown and 'Kept: permissions' in markdown
    assert 'Deleted at the receiver (1000, the first 1 below): "</script><b id=\\"injected\\">x</b>\\n|pipe"' \
        in markdown                                                                 # the name, as JSON quotes it
    assert markdown.count('\n| 0 | ') == 1 and markdown.count('\n| 1 | ') == 2      # two streams, pass 1 and stream 1


def test_chromium_shows_the_html_page_with_every_table_and_nothing_of_a_name_as_markup(tmp_path):
    assert CHROMIUM, 'chromium is not installed; run scripts/setup.sh (it installs Debian\'s chromium)'
    run = run_of()
    dummy, page = render(tmp_path, run)
    text = page.read_text()
    embedded = text.split('<script type="application/json" id="run">')[1].split('</script>')[0]
    assert json.loads(embedded.replace('<\\/', '</')) == run
    proc = subprocess.run([CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                           '--user-data-dir=%s' % (tmp_path / 'profile'), '--dump-dom', page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    dom = proc.stdout
    assert proc.returncode == 0 and '</html>' in dom, proc.stderr[-2000:]
    assert 'id="injected"' not in dom.replace('id=\\"injected\\"', '')
    assert re.search(r'<p class="verdict pass" id="verdict">VERIFIED \(checksum\)</p>', dom)
    passes = dom.split('<table id="passes">')[1].split('</table>')[0]
    assert passes.count('<tr>') == 4                     # the head and one row per pass
    streams = dom.split('<table id="streams">')[1].split('</table>')[0]
    assert streams.count('<tr>') == 3
    summary = dom.split('<table id="summary">')[1].split('</table>')[0]
    assert '<th>goodput of this pass</th><td>180 Mbit/s</td>' in summary
    assert '<th>files per second</th><td>500.0</td>' in summary and '<th>files/s</th>' in passes
    assert '<li>ACLs</li>' in dom and 'extended attributes: the receiver' in dom
    assert '<th>differs at the receiver</th>' in passes and '<th>whole pass s</th>' in passes
    assert re.search(r'<h3>Differed at the receiver, sent again \(1\)</h3>\s*<ul><li><code>"data/repaired.bin"</code>',
                     dom)
    assert '&lt;/script&gt;&lt;b id=\\"injected\\"&gt;' in dom or '&lt;/script&gt;&lt;b id=&quot;injected' in dom \
        or '&lt;/script&gt;&lt;b id="injected"' in dom


@pytest.mark.parametrize('field', ['message'])
def test_a_long_message_wraps_inside_the_page(tmp_path, field):
    """A message of one long word (a path) wraps: the page's style breaks it (overflow-wrap) rather than run past
    the page."""
    run = run_of()
    run[field] = '/srv/' + 'x' * 600
    dummy, page = render(tmp_path, run)
    assert 'overflow-wrap: anywhere' in page.read_text() and ('<p class="message">/srv/' + 'x' * 600) in page.read_text()
