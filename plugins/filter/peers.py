# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The addresses of a host's WAN peers, from inventory names or plain addresses.

Documentation lives in peer_addresses.yml beside this file.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import peers as _peers


def peer_addresses(names, hostvars):
    """['b', '198.18.0.9'] -> ['198.18.0.2', '198.18.0.9']: an inventory host's address on the WAN path
    (module_utils/common/peers.py), else the name."""
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, (list, tuple)):
        raise AnsibleFilterError('peers: expected a list of inventory host names or addresses, got %r' % (names,))
    addresses = []
    for name in names:
        name = str(name)
        address = str(_peers.address_of(name, hostvars[name])[0]) if name in hostvars else name
        if address not in addresses:
            addresses.append(address)
    return addresses


class FilterModule(object):
    def filters(self):
        return {'peer_addresses': peer_addresses}
