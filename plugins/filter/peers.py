# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The addresses of a host's WAN peers, from inventory names or plain addresses.

Documentation lives in peer_addresses.yml beside this file.
"""

from ansible.errors import AnsibleFilterError

ADDRESS_VARS = ('wan_address', 'jumbo_mtu_address', 'ansible_host')


def peer_addresses(names, hostvars, address_vars=ADDRESS_VARS):
    """['b', '198.18.0.9'] -> ['198.18.0.2', '198.18.0.9']: an inventory host's first address variable, else the name."""
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, (list, tuple)):
        raise AnsibleFilterError('peers: expected a list of inventory host names or addresses, got %r' % (names,))
    addresses = []
    for name in names:
        name = str(name)
        address = name
        if name in hostvars:
            host = hostvars[name]
            for var in address_vars:
                if var in host and host[var] not in (None, ''):
                    address = str(host[var])
                    break
        if address not in addresses:
            addresses.append(address)
    return addresses


class FilterModule(object):
    def filters(self):
        return {'peer_addresses': peer_addresses}
