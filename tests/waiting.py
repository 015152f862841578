# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting in a test for what it waits for, never for a time: ``until`` polls a condition with a generous deadline,
so that a loaded machine makes a test slower, not wrong.  The deadline only stops a wait that would never end; the
test's assertion is on the condition itself."""

from __future__ import annotations

import time


def until(condition, within=60.0, every=0.05):
    """Call ``condition`` every ``every`` seconds until it returns something true or ``within`` seconds have passed;
    its last value (false when the time ran out)."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(every)
