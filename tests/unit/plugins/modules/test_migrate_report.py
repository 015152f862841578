# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migrate_report module: the report's JSON, written once per content, the run's first receiver CPU figure kept."""

from __future__ import annotations

import json
import os
import stat

from ansible_collections.bdp.wan_tune.plugins.modules import migrate_report

PROGRESS = {'state': 'done', 'started': 100.0, 'ended': 140.0, 'run_id': '100.000000', 'bytes_total': 2 * 10 ** 9,
            'bytes_done': 2 * 10 ** 9, 'files': 3, 'stream_count': 1, 'proof': 'checksum', 'verified': True,
            'mismatches': 0, 'resent_bytes': 0, 'literal_bytes': 2 * 10 ** 9, 'cpu_seconds': 4.0,
            'phases': {'copying': [102.0, 122.0], 'proving': [122.0, 138.0]},
            'streams': [{'stream': 0, 'bytes': 2 * 10 ** 9, 'started': 102.0, 'ended': 121.0, 'rc': 0,
                         'cpu_seconds': 2.0, 'literal_bytes': 2 * 10 ** 9}],
            'plan': {'bytes': 2 * 10 ** 9, 'streams': 1, 'streams_reason': 'migrate_streams=1'}, 'cpu_before': 10 ** 10}
TARGET = {'receiver': 'dc2-a', 'module': 'incoming', 'transport': 'tls', 'dest': '/srv/in/dc1-a'}


def args(report_dir, cpu_ns, **extra):
    return dict({'report_dir': str(report_dir), 'status': {'state': 'done', 'progress': PROGRESS}, 'target': TARGET,
                 'sender': 'dc1-a', 'receiver_cpu_ns': cpu_ns}, **extra)


def test_the_report_files_in_a_new_directory_and_the_first_cpu_figure_kept(tmp_path, run_module):
    report_dir = tmp_path / 'results' / 'migrate'
    checked = run_module(migrate_report.main, args(report_dir, 16 * 10 ** 9, _ansible_check_mode=True))
    assert checked['changed'] is False and not report_dir.exists()

    first = run_module(migrate_report.main, args(report_dir, 16 * 10 ** 9))
    assert first['rc'] == 0 and first['changed'] is True, first
    assert stat.S_IMODE(os.stat(str(report_dir)).st_mode) == 0o755
    # the JSON; the role renders the pages of paths md and html from the run with its templates
    assert os.listdir(str(report_dir)) == [os.path.basename(first['paths']['json'])]
    assert sorted(first['paths']) == ['html', 'json', 'md'] and first['paths']['md'].endswith('-dc1-a-dc2-a.md')
    with open(first['paths']['json']) as handle:
        assert json.load(handle)['receiver_cpu_seconds_per_gb'] == 3.0

    # read again later, with the receiver's counter gone on: the run's first figure stays, nothing is rewritten
    again = run_module(migrate_report.main, args(report_dir, 40 * 10 ** 9))
    assert again['changed'] is False and again['run']['receiver_cpu_seconds_per_gb'] == 3.0


def test_an_unreadable_earlier_report_is_replaced(tmp_path, run_module):
    first = run_module(migrate_report.main, args(tmp_path, 16 * 10 ** 9))
    with open(first['paths']['json'], 'w') as handle:
        handle.write('{not json')
    again = run_module(migrate_report.main, args(tmp_path, 40 * 10 ** 9))
    assert again['changed'] is True and again['run']['receiver_cpu_seconds_per_gb'] == 15.0
