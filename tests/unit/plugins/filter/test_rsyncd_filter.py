# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rsync_daemon_problems filter (plugins/filter/rsyncd.py)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.filter import rsyncd


def test_problems_and_none():
    writable = {'name': 'in', 'path': '/srv/in', 'read_only': 'false'}
    found = rsyncd.rsync_daemon_problems({'modules': [writable]})
    assert len(found) == 1 and 'rsync_daemon_modules[0] (in): read_only is false' in found[0]
    assert rsyncd.rsync_daemon_problems({'modules': []}) == []


def test_not_a_mapping():
    with pytest.raises(AnsibleFilterError, match='expected a mapping'):
        rsyncd.rsync_daemon_problems(['x'])


def test_registered():
    assert rsyncd.FilterModule().filters()['rsync_daemon_problems'] is rsyncd.rsync_daemon_problems
