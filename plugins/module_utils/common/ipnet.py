# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IP addresses and networks, the one parser of the collection's address lists.

Only what the consuming programs really parse: an IPv4 address in four decimal octets, an IPv6 address, either
with a CIDR prefix, and an IPv4 network with a dotted netmask (rsyncd's ``addr/mask``).  No host names (rsyncd with
``reverse lookup = no`` never matches a name), no inet_aton forms (``198.18.200`` would be read as 198.18.0.200), no
zone ids, no brackets.  Used by module_utils/transfer/rsyncd.py (hosts allow), module_utils/mtu/linkmtu.py (peer literals) and,
through them, the validation play.
"""

import ipaddress
import re

NETWORK_HELP = ('an IPv4 or IPv6 address (198.18.3.12, 2001:db8::12), a network in CIDR form (198.18.3.0/24, '
                '2001:db8::/64) or an IPv4 network with a dotted netmask (198.18.3.0/255.255.255.0); no host names')
_DIGITS = re.compile(r'^[0-9]{1,3}$')


def parse_address(text):
    """The ipaddress object of an IPv4 (four decimal octets) or IPv6 address; ValueError with the reason."""
    if not isinstance(text, str) or not text or text != text.strip():
        raise ValueError('is not an IP address')
    if '%' in text or text.startswith('['):
        raise ValueError('is not a plain IP address (no zone id, no brackets)')
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if re.match(r'^[0-9.]+$', text):
        parts = text.split('.')
        if len(parts) != 4:
            raise ValueError('has %d parts, not the 4 octets of an IPv4 address' % len(parts))
        raise ValueError('is not an IPv4 address (each of the 4 octets from 0 to 255, no leading zeros)')
    raise ValueError('is not an IP address')


def parse_network(text):
    """An address or network as ipaddress.ip_network (host bits allowed, as rsyncd masks them); ValueError with the
    reason.  The prefix is a length (0 to 32 or 128) or, for IPv4, a netmask of contiguous ones."""
    if not isinstance(text, str):
        raise ValueError('is not a string')
    if re.search(r'[\s,]', text):
        raise ValueError('holds a space or a comma (one address or network per item)')
    if text.count('/') > 1:
        raise ValueError('has more than one /')
    address_text, slash, prefix = text.partition('/')
    try:
        address = parse_address(address_text)
    except ValueError as exc:
        if ':' not in address_text and re.search(r'[A-Za-z*?]', address_text):
            raise ValueError('is a host name: the rsync daemon (reverse lookup = no) never matches names')
        raise ValueError('%s' % exc)
    if not slash:
        return ipaddress.ip_network(address)
    if _DIGITS.match(prefix):
        if int(prefix) > address.max_prefixlen:
            raise ValueError('has the prefix length /%s, above %d' % (prefix, address.max_prefixlen))
        return ipaddress.ip_network('%s/%d' % (address, int(prefix)), strict=False)
    if address.version == 4 and re.match(r'^[0-9.]+$', prefix):
        try:
            mask = int(ipaddress.IPv4Address(prefix))
        except ValueError:
            raise ValueError('has the netmask %s, which is not an IPv4 address' % prefix)
        inverted = ~mask & 0xFFFFFFFF
        if inverted & (inverted + 1):
            raise ValueError('has the netmask %s, whose ones are not contiguous' % prefix)
        return ipaddress.ip_network('%s/%s' % (address, prefix), strict=False)
    kinds = 'a length or a dotted netmask' if address.version == 4 else 'a length'
    raise ValueError('has the prefix /%s, not %s' % (prefix, kinds))
