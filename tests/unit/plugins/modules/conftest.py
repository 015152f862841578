# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a module's main() in-process and return its JSON result; the commit-confirm timers of a test."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from waiting import until

try:
    from ansible.module_utils import _internal as module_internal      # ansible-core 2.19 and later
except ImportError:                                                   # pragma: no cover - older ansible-core
    module_internal = None

try:
    from ansible.module_utils.testing import patch_module_args   # ansible-core 2.19 and later
except ImportError:                                                # pragma: no cover - older ansible-core
    from unittest import mock

    @contextlib.contextmanager
    def patch_module_args(args=None):
        payload = json.dumps({'ANSIBLE_MODULE_ARGS': args or {}}).encode()
        with mock.patch.object(basic, '_ANSIBLE_ARGS', payload):
            yield


def warning_messages(result):
    """Warnings as plain text: 2.19 returns structured summaries, older versions strings."""
    messages = []
    for item in result.get('warnings', []):
        if isinstance(item, dict):
            item = (item.get('event') or {}).get('msg', item.get('msg'))
        messages.append(item)
    return messages


@pytest.fixture
def run_module(capsys, monkeypatch):
    """run_module(main, args) -> the module's result dict, with 'rc' (exit code) and 'warning_msgs' added.

    Each run starts like a real module process: no warnings left over from an earlier run (they are
    process-global), and not flagged as the controller (importing ansible.errors, as the filter tests do,
    sets that flag and would send module warnings to Display instead of the result).
    """

    def run(main, args):
        if module_internal is not None and hasattr(module_internal, 'is_controller'):
            monkeypatch.setattr(module_internal, 'is_controller', False)
        for name in ('_global_warnings', '_global_deprecations'):
            if hasattr(module_warnings, name):
                monkeypatch.setattr(module_warnings, name, type(getattr(module_warnings, name))())
        with patch_module_args(args):
            with pytest.raises(SystemExit) as info:
                main()
        out = capsys.readouterr().out
        result = json.loads(out)
        result['rc'] = info.value.code
        result['warning_msgs'] = warning_messages(result)
        return result

    return run


class Timers(object):
    """The commit-confirm timers (module_utils/common/commit.py) the modules arm in a test: the run directory below
    tmp_path, and each detached timer process a stand-in that sleeps 300 s with the script's path in its command
    line (disarm finds and kills it by that), so that no real script runs against this machine's interfaces.  The
    real timer, firing for real in a network namespace, is tested in module_utils/common/test_commit.py."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.started = []           # the pids of the stand-ins

    @staticmethod
    def fire(state_dir, setting, pending):
        """The timer's time is up: what its script does (commit.fire, the function the script carries), run here
        with the setting's module-side set (through the test's fake host).  Returns the record it logged."""
        timer = commit.Timer(None, state_dir, setting)
        return commit.fire(timer.data(pending['token'], pending['revert_steps']), setting.set)

    def running(self, pid):
        """Whether the stand-in ``pid`` still sleeps (not killed by a disarm)."""
        return pid in self.started and 'sleep' in (files.read_text('/proc/%d/cmdline' % pid) or '')

    def stopped(self, pid, within=10.0):
        """Whether the stand-in ``pid`` is gone within ``within`` seconds: a disarm's SIGTERM is delivered when the
        process next runs, which on a loaded machine is not at once."""
        return until(lambda: not self.running(pid), within)

    def left(self):
        """What the run directory holds besides the decision markers (which stay until boot, so that a timer that
        fires late backs off)."""
        return sorted(name for name in os.listdir(self.run_dir) if not name.endswith('.decided'))


@pytest.fixture
def timers(monkeypatch, tmp_path):
    """Timers for the test (see there); the stand-ins are killed afterwards."""
    found = Timers(str(tmp_path / 'run'))
    monkeypatch.setattr(commit, 'RUN_DIR', found.run_dir)      # a patched constant: not an option of the modules
    real_spawn = commit.spawn_detached

    def spawn(argv, ready_pipe=False):
        if argv[:2] == ['/bin/sh', '-c'] and argv[2].startswith('sleep '):
            assert argv[4] == sys.executable, argv          # the script runs with the module's own Python
            argv = ['/bin/sh', '-c', 'sleep 300', argv[3]]
        pid, pipe = real_spawn(argv, ready_pipe)
        found.started.append(pid)
        return pid, pipe

    monkeypatch.setattr(commit, 'spawn_detached', spawn)
    yield found
    for pid in found.started:
        for call in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.waitpid(pid, 0)):
            try:
                call()
            except OSError:
                pass
