# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The peer_addresses filter (plugins/filter/peers.py) and the order it takes from module_utils/common/peers.py."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.filter import peers
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import peers as peer_rule

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


def test_the_one_order_names_the_variable_used():
    assert peer_rule.address_of('a', HOSTVARS['a']) == ('198.18.0.1', 'wan_address')
    assert peer_rule.address_of('b', HOSTVARS['b']) == ('198.18.0.2', 'jumbo_mtu_address')
    assert peer_rule.address_of('d', HOSTVARS['d']) == ('d', None)


def test_a_variable_that_cannot_be_read_is_named():
    class Failing(dict):
        def __getitem__(self, key):
            raise ValueError('no template for %s' % key)

    with pytest.raises(ValueError) as info:
        peer_rule.address_of('e', Failing(jumbo_mtu_address='{{ nowhere }}'))
    assert info.value.address_var == 'jumbo_mtu_address'
