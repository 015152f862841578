# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's address on the WAN path: the one order of its variables, for every role and check.

Used on the controller by the peer_addresses filter (tcp_buffers rtt=auto, verify, jumbo_mtu's peers from the play)
and by the validate_inputs action (the same peers, checked before any host changes).
"""

ADDRESS_VARS = ('wan_address', 'jumbo_mtu_address', 'ansible_host')


def address_of(name, host_vars):
    """(address, variable): the first of ADDRESS_VARS that is set and not empty for the host, else (name, None).

    Reading a variable may template it; an exception from that gets the variable's name as ``address_var``.
    """
    for var in ADDRESS_VARS:
        try:
            value = host_vars[var] if var in host_vars else None
        except Exception as exc:  # pylint: disable=broad-except
            exc.address_var = var
            raise
        if value not in (None, ''):
            return value, var
    return name, None
