# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The peer_addresses filter (plugins/filter/peers.py)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.filter import peers

HOSTVARS = {
    'a': {'ansible_host': '10.0.0.1', 'wan_address': '198.18.0.1'},
    'b': {'ansible_host': '10.0.0.2', 'jumbo_mtu_address': '198.18.0.2'},
    'c': {'ansible_host': '198.18.0.3'},
    'd': {'wan_address': ''},
}


def test_addresses_in_order_of_preference():
    assert peers.peer_addresses(['a', 'b', 'c', 'd', '198.18.0.9'], HOSTVARS) == [
        '198.18.0.1', '198.18.0.2', '198.18.0.3', 'd', '198.18.0.9']


def test_a_single_name_and_duplicates():
    assert peers.peer_addresses('b', HOSTVARS) == ['198.18.0.2']
    assert peers.peer_addresses(['b', '198.18.0.2'], HOSTVARS) == ['198.18.0.2']


def test_not_a_list():
    with pytest.raises(AnsibleFilterError, match='expected a list'):
        peers.peer_addresses({'a': 1}, HOSTVARS)


def test_registered():
    assert peers.FilterModule().filters()['peer_addresses'] is peers.peer_addresses
