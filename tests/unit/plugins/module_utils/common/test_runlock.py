# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's lock for state-changing steps (module_utils/common/runlock.py), on real files and real flock."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import runlock


class Exited(Exception):
    pass


class Module(object):
    check_mode = False
    _name = 'sysctl_dropin'

    def fail_json(self, **result):
        raise Exited(result)


def test_a_second_step_waits_then_fails_naming_the_holder_and_since(tmp_path):
    state_dir = str(tmp_path / 'state')
    path = os.path.join(state_dir, runlock.LOCK_NAME)
    holder = runlock.acquire(path, 'tcp_congestion available')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(Exited) as info:
        with runlock.held(Module(), state_dir, 'a test step', wait=1):
            pytest.fail('the second step ran while the first held the lock')
    message = info.value.args[0]['msg']
    assert message.startswith('another bdp.wan_tune run holds the lock since 20'), message
    assert '(pid %d, tcp_congestion available)' % os.getpid() in message
    assert 'Waited 1 s; nothing was changed by this step.' in message
    assert info.value.args[0]['changed'] is False
    runlock.release(holder, path)
    assert not os.path.exists(state_dir), 'an empty state directory is removed with the lock'
    ran = []
    with runlock.held(Module(), state_dir, 'a test step'):
        ran.append(os.path.exists(path))
    assert ran == [True] and not os.path.exists(state_dir)


def test_the_lock_leaves_a_directory_with_records_and_check_mode_takes_none(tmp_path):
    state_dir = tmp_path / 'state'
    state_dir.mkdir()
    (state_dir / 'qdisc.json').write_text('{}')
    with runlock.held(Module(), str(state_dir), 'a test step'):
        pass
    assert sorted(os.listdir(str(state_dir))) == ['qdisc.json']
    module = Module()
    module.check_mode = True
    holder = runlock.acquire(str(state_dir / runlock.LOCK_NAME), 'x')
    with runlock.held(module, str(state_dir), 'a test step', wait=0):
        pass                                    # check mode: no wait, no failure
    runlock.release(holder, str(state_dir / runlock.LOCK_NAME))


def test_a_waiter_takes_the_new_file_when_the_holder_removed_its_own(tmp_path):
    path = str(tmp_path / runlock.LOCK_NAME)
    first = runlock.acquire(path, 'a')
    runlock.release(first, path)
    second = runlock.acquire(path, 'b', wait=0)
    assert os.path.exists(path) and runlock.describe(path).endswith(', b)')
    runlock.release(second, path)


def test_a_lock_that_cannot_be_made_fails_with_the_path_not_a_traceback(tmp_path):
    blocker = tmp_path / 'not-a-directory'
    blocker.write_text('')
    with pytest.raises(Exited) as info:
        with runlock.held(Module(), str(blocker / 'state'), 'a test step'):
            pytest.fail('ran without the lock')
    assert info.value.args[0]['msg'].startswith('Cannot take the lock %s' % (blocker / 'state' / runlock.LOCK_NAME))
