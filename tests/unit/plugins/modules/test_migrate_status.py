# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migrate_status module's read of a run directory (issue 36): a pass just started, whose runner has not written
its state yet, is starting - not the pass before it, whose state.json is still there - and the limit is the run's.
A run holds the run's lock (runner.running()), as the runner does; systemd knows no unit of these names here."""

from __future__ import annotations

import fcntl
import json
import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from ansible_collections.bdp.wan_tune.plugins.modules import migrate_status

UNIT = 'bdp-migrate-test-status-nonexistent.service'


@pytest.fixture
def run_dir(tmp_path):
    """A run directory whose last pass ended done, and whose config is of a new start (its runner not yet written)."""
    path = tmp_path / 'run'
    path.mkdir()
    _runner.write_json(str(path / _runner.STATE), {'run_id': '100.000000', 'state': 'done', 'runs': 1,
                                                   'bytes_total': 10, 'bytes_done': 10, 'verified': True})
    _runner.write_json(str(path / _runner.CONFIG), {'id': UNIT, 'run_id': '200.000000', 'bytes': 5000, 'files': 3,
                                                    'streams': 2, 'proof': 'checksum', 'transport': 'tls',
                                                    'bwlimit_bps': 40 * 10 ** 6, 'present_bytes': 0,
                                                    'plan': {'estimate': 'about 1 s'}})
    return path


def held(path):
    """The run's lock, held as a runner holds it."""
    handle = os.open(str(path / _runner.RUN_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def test_a_pass_just_started_is_starting_not_the_pass_before(run_dir, run_module):
    lock = held(run_dir)
    try:
        result = run_module(migrate_status.main, {'run_dir': str(run_dir), 'unit': UNIT})
    finally:
        os.close(lock)
    assert result['rc'] == 0 and result['changed'] is False, result
    assert result['active'] is True and result['state'] == 'starting' and result['bwlimit_bps'] == 40 * 10 ** 6
    progress = result['progress']
    assert (progress['run_id'], progress['bytes_total'], progress['bytes_done'], progress['runs']) == (
        '200.000000', 5000, 0, 1)
    assert progress['message'] == '' and progress['plan'] == {'estimate': 'about 1 s'}


def test_a_start_whose_unit_ended_before_its_runner_wrote_is_failed(run_dir, run_module):
    result = run_module(migrate_status.main, {'run_dir': str(run_dir), 'unit': UNIT})
    assert result['active'] is False and result['state'] == 'failed'
    assert 'ended before its runner wrote anything' in result['progress']['message']


def test_the_runners_own_state_once_written(run_dir, run_module):
    state = json.loads((run_dir / _runner.STATE).read_text())
    _runner.write_json(str(run_dir / _runner.STATE), dict(state, run_id='200.000000', state='copying', runs=2))
    lock = held(run_dir)
    try:
        result = run_module(migrate_status.main, {'run_dir': str(run_dir), 'unit': UNIT})
    finally:
        os.close(lock)
    assert (result['active'], result['state'], result['progress']['runs']) == (True, 'copying', 2)
