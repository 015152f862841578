# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Interface MTU planning: input checks, ``ip -d -j link`` parsing, preflight and the commit-confirm plan.

Pure functions (no host access) so that every decision the ``link_mtu`` module
takes can be unit tested: which interfaces change and in which order, which
limits apply (NIC, VLAN parent, bond and bridge members, cloud platform), what
is refused and why; and the MTU's part of the commit-confirm timer (MtuSetting).
"""

import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import ipnet
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import show_value as _show
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.links import PORT_MASTERS, PROPAGATING_MASTERS
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.links import STACKED_KINDS, members

MIN_MTU = 576           # the smallest datagram every IPv4 host must accept (RFC 791)
MAX_MTU = 65535         # the largest IP packet
IPV6_MIN_MTU = 1280     # below this the kernel turns IPv6 off on the interface (RFC 8200)
ICMP_OVERHEAD = {4: 28, 6: 48}      # IP header + ICMP echo header
TCP_OVERHEAD = {4: 40, 6: 60}       # IP header + TCP header without options
TCP_TIMESTAMPS = 12                 # the timestamp option every segment carries when negotiated

_HOSTNAME = re.compile(r'^(?=.{1,253}\.?$)(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*\.?$')
_IFNAME = re.compile(r'^[^\s/:]{1,15}$')

_MTU_DIGITS = re.compile(r'[0-9]+\Z')
MTU_HELP = ('a whole number of bytes from %d (the smallest datagram every IPv4 host accepts) to %d (the largest IP '
            'packet), as an integer or a string of the digits 0-9 only; Ethernet jumbo frames are usually 9000'
            % (MIN_MTU, MAX_MTU))
PEER_HELP = 'an IPv4 or IPv6 address (198.18.0.2, 2001:db8::2) or a host name this host can resolve'

# Cloud platforms and their largest MTU.  Evidence comes from DMI (/sys/class/dmi/id) as the
# kernel reports it; the same strings appear in Ansible's ansible_system_vendor / ansible_product_name.
AZURE_ASSET_TAG = '7783-7084-3265-9085-8269-3286-77'
CLOUD_LIMITS = {
    'aws': (9001, 'AWS: 9001 within a VPC (EC2 jumbo frames); 1500 through an internet gateway, a VPN or most '
                  'inter-region peering, which the path proof finds'),
    'gcp': (8896, 'Google Cloud: a VPC network MTU is at most 8896 (the VPC\'s own MTU setting may be lower)'),
    'azure': (3900, 'Azure: 3900 for traffic inside a virtual network on Mellanox (accelerated networking) and '
                    'synthetic NICs'),
    'azure-mana': (9000, 'Azure: 9000 inside a virtual network with the Microsoft Azure Network Adapter (MANA)'),
}


class MtuError(ValueError):
    """Bad input; the message names the value and what is accepted."""


# ----------------------------------------------------------------------------- input

def parse_mtu(value, name='mtu'):
    """An MTU as int, from an int or a string of the digits 0-9 only (what ``-e mtu=9000`` passes).

    Nothing else is read as a number: no sign, spaces, decimal point or exponent, and no float, so '+9000',
    ' 9000', '9000.0' and 9000.0 are refused; so are booleans.  MtuError, naming ``name`` and the value, for those
    and outside MIN_MTU..MAX_MTU.  The link_mtu module and the validation play (validate_inputs) both use it.
    """
    if isinstance(value, str):
        if not _MTU_DIGITS.match(value):
            raise MtuError('%s: %s is not a whole number of bytes in digits 0-9 only (no sign, spaces '
                           'or decimal point); expected %s.' % (name, _show(value), MTU_HELP))
        digits = value.lstrip('0') or '0'
        number = int(digits) if len(digits) <= len(str(MAX_MTU)) else None
    elif isinstance(value, float):
        raise MtuError('%s: %s is not a whole number of bytes in digits 0-9 only (no decimal point); '
                       'expected %s.' % (name, _show(value), MTU_HELP))
    elif isinstance(value, int) and not isinstance(value, bool):
        number = int(value)
    elif isinstance(value, bool) or value is None:
        raise MtuError('%s: %s is not usable; expected %s.' % (name, value, MTU_HELP))
    else:
        raise MtuError('%s: %s (%s) is not usable; expected %s.' % (name, _show(value), type(value).__name__, MTU_HELP))
    if number is None or number < MIN_MTU or number > MAX_MTU:
        raise MtuError('%s: %s is outside %d..%d; expected %s.'
                       % (name, _show(value if number is None else number), MIN_MTU, MAX_MTU, MTU_HELP))
    return number


def parse_peer(value):
    """{'peer': text, 'address': ip or None, 'family': 4/6 or None, 'name': host name or None}."""
    if not isinstance(value, str) or not value.strip():
        raise MtuError('peer %s is not usable; expected %s.' % (_show(value), PEER_HELP))
    text = value.strip()
    literal = text[1:-1] if text.startswith('[') and text.endswith(']') else text
    try:
        addr = ipnet.parse_address(literal.split('%', 1)[0])      # the collection's one address parser
    except ValueError:
        addr = None
    if addr is not None:
        if addr.is_unspecified or addr.is_multicast:
            raise MtuError('peer %s is not a unicast address; expected %s.' % (_show(value), PEER_HELP))
        return {'peer': text, 'address': str(addr), 'family': addr.version, 'name': None}
    if re.match(r'^[0-9.]+$', text) or not _HOSTNAME.match(text):
        raise MtuError('peer %s is neither an IP address nor a valid host name; expected %s.'
                       % (_show(value), PEER_HELP))
    return {'peer': text, 'address': None, 'family': None, 'name': text}


def check_ifname(name):
    """``name`` when it is a Linux interface name, else MtuError (the link_mtu module and validate_inputs)."""
    if not isinstance(name, str) or not _IFNAME.match(name) or name in ('.', '..'):
        raise MtuError('interface %s is not a Linux interface name (1 to 15 characters, no spaces, "/" or ":").'
                       % _show(name))
    return name


def tcp_mss(mtu, family=4, timestamps=True):
    """Payload bytes of a full-size TCP segment at ``mtu`` (what TCP_INFO tcpi_snd_mss reports)."""
    return mtu - TCP_OVERHEAD[family] - (TCP_TIMESTAMPS if timestamps else 0)


# ----------------------------------------------------------------------------- ip -d -j link

def parse_links(data):
    """Index ``ip -d -j link show`` output by name: mtu, limits, kind, master, parent, MAC."""
    by_index = dict((item.get('ifindex'), item.get('ifname')) for item in data)
    links = {}
    for item in data:
        info = item.get('linkinfo') or {}
        parent = item.get('link')
        if parent is None and item.get('link_index') is not None and 'link_netnsid' not in item:
            parent = by_index.get(item.get('link_index'))
        if 'link_netnsid' in item:
            parent = None       # the other end lives in another namespace (veth, container)
        links[item['ifname']] = {
            'name': item['ifname'],
            'index': item.get('ifindex'),
            'mtu': int(item.get('mtu', 0)),
            'min_mtu': item.get('min_mtu'),
            'max_mtu': item.get('max_mtu'),
            'kind': info.get('info_kind'),
            'slave_kind': info.get('info_slave_kind'),
            'vlan_id': (info.get('info_data') or {}).get('id') if info.get('info_kind') == 'vlan' else None,
            'master': item.get('master'),
            'parent': parent,
            'mac': item.get('address'),
            'link_type': item.get('link_type'),
            'flags': item.get('flags') or [],
            'operstate': item.get('operstate'),
        }
    return links


def describe_link(link):
    kind = link.get('kind') or ('loopback' if link.get('link_type') == 'loopback' else 'device')
    if kind == 'vlan' and link.get('parent'):
        return 'VLAN %s on %s' % (link.get('vlan_id'), link['parent'])
    return kind


# ----------------------------------------------------------------------------- platform

def cloud_platform(dmi, drivers=None):
    """Detect a cloud platform from DMI strings; returns None or {'platform', 'max_mtu', 'evidence', 'note'}.

    ``dmi`` maps sys_vendor, product_name, product_version, bios_vendor, bios_version, chassis_asset_tag
    to their text; ``drivers`` maps interface name to kernel driver name (to tell Azure MANA apart).
    """
    dmi = dict((key, (value or '').strip()) for key, value in (dmi or {}).items())
    drivers = drivers or {}
    found = None
    vendor, product = dmi.get('sys_vendor', ''), dmi.get('product_name', '')
    bios_vendor, bios_version = dmi.get('bios_vendor', ''), dmi.get('bios_version', '')
    if vendor == 'Amazon EC2' or bios_vendor == 'Amazon EC2':
        found = ('aws', 'DMI sys_vendor/bios_vendor %r' % (vendor or bios_vendor))
    elif 'amazon' in bios_version.lower() or 'amazon' in dmi.get('product_version', '').lower():
        found = ('aws', 'DMI bios_version %r (Xen-based EC2 instance)' % (bios_version or dmi.get('product_version')))
    elif vendor == 'Google' or product == 'Google Compute Engine' or bios_vendor == 'Google':
        found = ('gcp', 'DMI sys_vendor %r, product_name %r' % (vendor, product))
    elif dmi.get('chassis_asset_tag') == AZURE_ASSET_TAG:
        mana = sorted(name for name, driver in drivers.items() if driver == 'mana')
        if mana:
            found = ('azure-mana', 'DMI chassis_asset_tag %s (Azure) and MANA driver on %s'
                     % (AZURE_ASSET_TAG, ', '.join(mana)))
        else:
            found = ('azure', 'DMI chassis_asset_tag %s (Azure), no MANA device' % AZURE_ASSET_TAG)
    if not found:
        return None
    limit, note = CLOUD_LIMITS[found[0]]
    return {'platform': found[0].split('-')[0], 'max_mtu': limit, 'evidence': found[1], 'note': note}


# ----------------------------------------------------------------------------- the plan

def _limit(links, name, platform, raise_parents, seen=None):
    """(largest MTU ``name`` can take, what sets that limit)."""
    seen = set() if seen is None else seen
    if name in seen:
        return MAX_MTU, 'loop'
    seen.add(name)
    link = links[name]
    best, why = MAX_MTU, 'the IP maximum'
    if link.get('max_mtu'):
        best, why = int(link['max_mtu']), '%s max_mtu %s (ip -d link)' % (name, link['max_mtu'])
    kind = link.get('kind')
    children = []
    if kind in PROPAGATING_MASTERS or kind in PORT_MASTERS:
        children = members(links, name)
    if kind in STACKED_KINDS and link.get('parent') in links:
        children = [link['parent']]
    for child in children:
        if kind in STACKED_KINDS and not raise_parents:
            lim, lwhy = links[child]['mtu'], '%s MTU %s (the parent; raising parents is off)' % (child, links[child]['mtu'])
        else:
            lim, lwhy = _limit(links, child, None, raise_parents, seen)
        if lim < best:
            best, why = lim, lwhy
    if platform and platform['max_mtu'] < best:
        why = '%s limit %d (%s)' % (platform['platform'], platform['max_mtu'], platform['evidence'])
        best = platform['max_mtu']
    return best, why


def resolve_interfaces(links, requested):
    """Map requested names to the interfaces that carry their MTU: a bond/team/bridge member becomes its master.

    Returns (list of (name, reason), notes, errors).
    """
    result, notes, errors = [], [], []
    visible = sorted(name for name, link in links.items() if link.get('link_type') != 'loopback')
    for name, reason in requested:
        if name not in links:
            errors.append('interface %s does not exist on this host (%s); interfaces here: %s.'
                          % (name, reason, ', '.join(visible) or 'none'))
            continue
        link = links[name]
        if link.get('link_type') == 'loopback':
            errors.append('interface %s is the loopback; its MTU has nothing to do with the path to a peer.' % name)
            continue
        master = link.get('master')
        if master and master in links and links[master].get('kind') in PROPAGATING_MASTERS + PORT_MASTERS:
            notes.append('%s is a member of %s %s: the %s and all its members change together.'
                         % (name, links[master].get('kind'), master, links[master].get('kind')))
            name, reason = master, 'master of %s (%s)' % (name, reason)
        if name not in [item[0] for item in result]:
            result.append((name, reason))
    return result, notes, errors


def plan(links, requested, target, protected=None, platform=None, clamp=False, raise_parents=True,
         allow_lower=False, allow_protected=False):
    """Decide what changes.

    ``requested`` is a list of (interface, reason) -- named explicitly or found through a peer's route;
    ``protected`` maps interface -> why it is left alone (control connection, default route).
    Returns a dict: target, entries (per interface: before, after, status, role, limit), steps (apply
    order: parents and ports before their children and masters), revert_steps (reverse), errors,
    warnings, notes.  Nothing here touches the host.
    """
    protected = protected or {}
    target = parse_mtu(target)
    resolved, notes, errors = resolve_interfaces(links, requested)
    warnings = []
    entries = {}
    order = []
    steps = []

    def put(name, before, after, status, role):
        if name not in entries:
            order.append(name)
        entries[name] = {'before': before, 'after': after, 'status': status, 'role': role,
                         'kind': describe_link(links[name])}

    def ensure(name, mtu, role, requested_here):
        if name in entries and entries[name]['after'] >= mtu:
            return
        link = links[name]
        kind = link.get('kind')
        if kind in STACKED_KINDS and link.get('parent'):
            parent = link['parent']
            if parent not in links:
                warnings.append('%s sits on %s, which is not visible here; its MTU is not checked.' % (name, parent))
            elif links[parent]['mtu'] < mtu:
                if not raise_parents:
                    errors.append('%s (%s) cannot exceed its parent %s, which has MTU %d; raise %s first or let the '
                                  'role raise parents (raise_parents).'
                                  % (name, describe_link(link), parent, links[parent]['mtu'], parent))
                    return
                ensure(parent, mtu, 'parent of %s' % name, False)
        if kind in PORT_MASTERS:
            for port in members(links, name):
                ensure(port, mtu, 'port of %s %s' % (kind, name), False)
        current = link['mtu']
        if current >= mtu and not (requested_here and allow_lower and current > mtu):
            put(name, current, current, 'ok' if current == mtu else 'kept_higher', role)
            if current > mtu and requested_here:
                notes.append('%s already has MTU %d, above %d; kept (allow_lower lowers it).' % (name, current, mtu))
        else:
            known = [i for i, step in enumerate(steps) if step[0] == name]
            if known:
                steps[known[0]] = (name, current, mtu)
            else:
                steps.append((name, current, mtu))
            put(name, current, mtu, 'change', role)
        if kind in PROPAGATING_MASTERS:
            for member in members(links, name):
                if links[member]['mtu'] != entries[name]['after']:
                    put(member, links[member]['mtu'], entries[name]['after'], 'follows',
                        'member of %s %s' % (kind, name))

    for name, reason in resolved:
        limit, why = _limit(links, name, platform, raise_parents)
        mtu = target
        min_mtu = links[name].get('min_mtu')
        if min_mtu and target < int(min_mtu):
            errors.append('%s: MTU %d is below what the device accepts (min_mtu %s).' % (name, target, min_mtu))
            continue
        if target > limit:
            if clamp:
                mtu = limit
                warnings.append('%s: MTU %d is above its limit %d (%s); clamped to %d.'
                                % (name, target, limit, why, limit))
            else:
                errors.append('%s: MTU %d is above its limit %d (%s); ask for %d or less, or set clamp to use the '
                              'limit.' % (name, target, limit, why, limit))
                continue
        ensure(name, mtu, 'requested', True)
        if name not in entries:
            continue
        entries[name]['role'] = 'requested'
        entries[name]['reason'] = reason
        entries[name]['limit'] = limit
        entries[name]['limit_source'] = why

    for name in order:
        entry = entries[name]
        if entry['status'] in ('change', 'follows') and name in protected and not allow_protected:
            errors.append('%s (%s) %s; it is left alone unless you opt in (allow_control_interface). The '
                          'commit-confirm timer restores it if the change cuts the connection.'
                          % (name, entry['role'], protected[name]))
        if entry['status'] == 'change' and entry['after'] < IPV6_MIN_MTU <= entry['before']:
            warnings.append('%s: MTU %d is below 1280, the IPv6 minimum; the kernel turns IPv6 off on it.'
                            % (name, entry['after']))
    return {
        'target': target,
        'entries': dict((name, entries[name]) for name in order),
        'order': order,
        'steps': steps,
        'revert_steps': [(name, after, before) for name, before, after in reversed(steps)],
        'changed': bool(steps),
        'errors': errors,
        'warnings': warnings,
        'notes': notes,
    }


def diff_text(entries, key):
    """'wan0 mtu 1500\\n' lines for --diff, one per interface whose MTU changes."""
    return ''.join('%s mtu %s\n' % (name, entry[key]) for name, entry in entries.items()
                   if entry['status'] in ('change', 'follows'))


# ----------------------------------------------------------------------------- commit-confirm

class MtuSetting(commit.Setting):
    """The MTU for the commit-confirm timer (module_utils/common/commit.py): set with ``ip link set``, by the module
    through ``run_ip`` and by the timer's script; its files keep the names of jumbo_mtu (the role) and the units
    bdp-wan-tune-mtu-TOKEN, as hosts already have them."""

    NAME, UNIT_PREFIX, WHAT = 'jumbo_mtu', 'bdp-wan-tune-mtu-', 'MTU'
    SOURCE = '''import subprocess


def set_value(name, mtu):
    subprocess.check_call(['ip', 'link', 'set', 'dev', name, 'mtu', '%d' % mtu])
'''

    def __init__(self, run_ip):
        self.run_ip = run_ip

    def set(self, name, value):
        self.run_ip(['link', 'set', 'dev', name, 'mtu', str(value)])

    @staticmethod
    def describe(steps):
        """'eth0.100=1500 eth0=1500': the MTUs put back, in their order (the revert log's "restored")."""
        return ' '.join('%s=%d' % (name, previous) for name, _current, previous in steps)


def proof_verdict(results):
    """(ok, failed results) over every peer's proof result."""
    failed = [item for item in results if not item.get('ok')]
    return not failed, failed
