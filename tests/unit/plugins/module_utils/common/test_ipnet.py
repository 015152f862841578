# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The address and network parser (plugins/module_utils/common/ipnet.py): what rsyncd parses with reverse lookup = no."""

from __future__ import annotations

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import ipnet
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd


@pytest.mark.parametrize('text, network', [
    ('198.18.3.12', '198.18.3.12/32'),
    ('198.18.3.0/24', '198.18.3.0/24'),
    ('198.18.3.7/24', '198.18.3.0/24'),                     # host bits: rsyncd masks them
    ('198.18.3.0/255.255.255.0', '198.18.3.0/24'),
    ('198.18.0.0/255.254.0.0', '198.18.0.0/15'),
    ('0.0.0.0/0', '0.0.0.0/0'),
    ('2001:db8::12', '2001:db8::12/128'),
    ('2001:db8::/64', '2001:db8::/64'),
    ('::1', '::1/128'),
])
def test_accepted(text, network):
    assert str(ipnet.parse_network(text)) == network


@pytest.mark.parametrize('text, reason', [
    ('198.18.200.300', 'is not an IPv4 address (each of the 4 octets from 0 to 255'),
    ('198.18.200', 'has 3 parts, not the 4 octets of an IPv4 address'),
    ('198.18.3.012', 'no leading zeros'),
    ('rsync-b', 'is a host name'),
    ('*.dc2.example.org', 'is a host name'),
    ('198.18.3.0/33', 'has the prefix length /33, above 32'),
    ('2001:db8::/129', 'above 128'),
    ('198.18.3.0/255.0.255.0', 'whose ones are not contiguous'),
    ('198.18.3.0/0.0.0.255', 'whose ones are not contiguous'),            # a host mask is no netmask
    ('198.18.3.0/255.255.255.300', 'is not an IPv4 address'),
    ('2001:db8::/ffff::', 'not a length'),
    ('198.18.3.0/24/8', 'more than one /'),
    ('198.18.3.1 198.18.3.2', 'a space or a comma'),
    ('198.18.3.1,198.18.3.2', 'a space or a comma'),
    ('fe80::1%eth0', 'no zone id'),
    ('[2001:db8::1]', 'no brackets'),
    ('', 'is not an IP address'),
    (' 198.18.3.1', 'a space'),
])
def test_refused(text, reason):
    with pytest.raises(ValueError) as info:
        ipnet.parse_network(text)
    assert reason in str(info.value)


def test_rsync_daemon_hosts_allow_is_refused_with_the_variable_named():
    users = [{'name': 'migrate', 'password': 'p'}]
    modules = [{'name': 'in', 'path': '/srv/in', 'read_only': False, 'auth_users': ['migrate'],
                'hosts_allow': ['198.18.200']}]
    dummy, problems = rsyncd.check({'modules': modules, 'users': users, 'hosts_allow': ['198.18.200.300']})
    assert problems[0].startswith("rsync_daemon_hosts_allow[0]: '198.18.200.300' is not an IPv4 address"), problems
    assert problems[0].endswith('expected %s.' % ipnet.NETWORK_HELP)
    assert problems[1].startswith("rsync_daemon_modules[0] (in).hosts_allow[0]: '198.18.200' has 3 parts"), problems
