# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a module's main() in-process and return its JSON result."""

from __future__ import annotations

import contextlib
import json

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings

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
