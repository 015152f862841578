# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migrate_plan module, the migration's preflight: the counts the role's room check and report read, the streams
and their parts, nothing written (the runner walks the tree itself), in check mode as in a run."""

from __future__ import annotations

import os

from ansible_collections.bdp.wan_tune.plugins.modules import migrate_plan


def test_the_preflight_counts_the_tree_and_writes_nothing(tmp_path, run_module):
    source = tmp_path / 'data'
    (source / 'd').mkdir(parents=True)
    for index in range(1500):
        (source / 'd' / ('f%04d' % index)).write_bytes(b'x' * 100)
    (source / 'big.bin').write_bytes(b'y' * 10 ** 6)
    os.link(str(source / 'big.bin'), str(source / 'd' / 'big-again.bin'))
    (source / 'skip.tmp').write_bytes(b'z' * 5000)
    os.symlink('big.bin', str(source / 'link'))
    before = sorted(os.listdir(str(tmp_path)))
    for check_mode in (True, False):
        result = run_module(migrate_plan.main, {'source': str(source), 'max_streams': 8, 'rate_bps': 10 ** 9,
                                                'excludes': ['*.tmp'], '_ansible_check_mode': check_mode})
        assert result['rc'] == 0 and result['changed'] is False, result
        assert (result['files'], result['inodes'], result['linked'], result['dirs'], result['others']) == (
            1502, 1501, 1, 1, 1)
        assert result['bytes'] == 1500 * 100 + 10 ** 6 and result['largest'] == {'path': 'big.bin', 'bytes': 10 ** 6}
        # 1501 files of 766 bytes on average: the small-file rule gives 4 streams; a part each at least
        assert result['streams'] == 4 and 'per-file work on the receiver' in result['streams_reason']
        assert result['parts'] == {'files': 376, 'bytes': 287500} and 'is more than a stream' in result['bound']
        assert 0 < result['peak_memory_kb'] < 200 * 1024 and result['seconds'] > 0
        assert sorted(os.listdir(str(tmp_path))) == before
    given = run_module(migrate_plan.main, {'source': str(source), 'max_streams': 8, 'streams': '2'})
    assert given['streams'] == 2 and given['streams_reason'] == 'migrate_streams=2'


def test_a_source_that_is_not_a_directory_is_refused_naming_migrate_source(tmp_path, run_module):
    result = run_module(migrate_plan.main, {'source': str(tmp_path / 'missing'), 'max_streams': 4})
    assert result['rc'] == 1 and result['msg'].startswith('migrate_source: %s is not a directory' % (
        tmp_path / 'missing')) and 'Nothing was moved' in result['msg']
    relative = run_module(migrate_plan.main, {'source': 'data', 'max_streams': 4})
    assert relative['rc'] == 1 and 'is not an absolute path' in relative['msg']


def test_the_plan_takes_migrate_bwlimit_and_says_which_figure_bounds_its_time(tmp_path, run_module):
    source = tmp_path / 'data'
    source.mkdir()
    (source / 'a.bin').write_bytes(b'a' * 10 ** 6)
    (source / 'b.bin').write_bytes(b'b' * 10 ** 6)
    args = {'source': str(source), 'max_streams': 2, 'streams': '2', 'rate_bps': 500 * 10 ** 6}
    free = run_module(migrate_plan.main, args)
    limited = run_module(migrate_plan.main, dict(args, bwlimit_bps=40 * 10 ** 6))
    assert free['rate_by'] == 'migrate_rate' and free['estimate'].endswith('at 500 Mbit/s (migrate_rate)')
    assert limited['rate_by'] == 'migrate_bwlimit' and limited['seconds'] > 12 * free['seconds']
    assert '40 Mbit/s (migrate_bwlimit, below migrate_rate\'s 500 Mbit/s)' in limited['estimate']
