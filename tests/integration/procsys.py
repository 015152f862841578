# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's own /proc/sys, for the integration tests that run the roles against it and put back what
they find changed (the collection's sysctl engine is what is under test, so the tests read it independently)."""

from __future__ import annotations

import os


def proc(key):
    return os.path.join('/proc/sys', *key.split('.'))


def read(key):
    """The live value, whitespace-normalised."""
    with open(proc(key)) as handle:
        return ' '.join(handle.read().split())


def write(key, value):
    with open(proc(key), 'w') as handle:
        handle.write(value)
