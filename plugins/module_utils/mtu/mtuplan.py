# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What link_mtu reads from the host to plan a change: links, routes, peers, the control connection, the cloud.

Everything here only reads.  ``run_ip(args, check=True)`` runs ``ip`` and returns (rc, out, err); with
``check`` it raises RuntimeError on failure.  The planning itself (limits, parents, bonds, bridges) is the
pure linkmtu.plan.
"""

import json
import os
import socket

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import links as stacking
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu

DMI_DIR = '/sys/class/dmi/id'
DMI_KEYS = ('sys_vendor', 'product_name', 'product_version', 'bios_vendor', 'bios_version', 'chassis_asset_tag')


def ip_runner(module, binary):
    """A run_ip(args, check=True) for ``module``: runs ``binary`` (the path of ip) with ``args``; with ``check``, an
    exit other than 0 raises RuntimeError naming the command and what ip said.  (rc, out, err)."""
    def run_ip(args, check=True):
        rc, out, err = module.run_command([binary] + args)
        if check and rc != 0:
            raise RuntimeError('ip %s: %s' % (' '.join(args), (err or out).strip()))
        return rc, out, err
    return run_ip


def links(run_ip):
    _rc, out, _err = run_ip(['-d', '-j', 'link', 'show'])
    return linkmtu.parse_links(json.loads(out or '[]'))


def route(run_ip, address):
    """(the route ``ip route get`` picks for ``address``, None) or (None, the error)."""
    rc, out, err = run_ip(['-j', 'route', 'get', address], check=False)
    if rc != 0:
        return None, (err or out).strip()
    data = json.loads(out or '[]')
    return (data[0] if data else None), None


def resolve_peers(run_ip, texts):
    """([peer dicts with address, family, interface, gateway, source], [errors]) for the peers as given."""
    peers, errors = [], []
    for text in texts:
        try:
            peer = linkmtu.parse_peer(text)
        except linkmtu.MtuError as exc:
            errors.append(str(exc))
            continue
        if peer['address'] is None:
            try:
                infos = socket.getaddrinfo(peer['name'], None, 0, socket.SOCK_DGRAM)
            except socket.gaierror as exc:
                errors.append('peer %r does not resolve on this host (%s); use an address or a name this host '
                              'can resolve.' % (text, exc.strerror or exc))
                continue
            infos.sort(key=lambda info: 0 if info[0] == socket.AF_INET else 1)
            peer['address'] = infos[0][4][0]
            peer['family'] = 6 if infos[0][0] == socket.AF_INET6 else 4
        found, err = route(run_ip, peer['address'])
        if found is None:
            errors.append('peer %s (%s): no route from this host (%s).' % (text, peer['address'], err))
            continue
        if found.get('type') == 'local' or found.get('dev') == 'lo':
            errors.append('peer %s (%s) is an address of this host; list the other end of the path.'
                          % (text, peer['address']))
            continue
        peer['interface'] = found.get('dev')
        peer['gateway'] = found.get('gateway')
        peer['source'] = found.get('prefsrc')
        peers.append(peer)
    return peers, errors


def requested(links, run_ip, interfaces, peers):
    """([(interface, reason)], [errors of peers without a route]): the named ``interfaces`` (each must exist), else
    the interfaces that route to ``peers``; linkmtu.MtuError when a name is wrong or no peer has a route.  The caller
    checks that one of the two is given.  Shared by nic_facts and nic_settings; survey.carriers adds the devices
    below."""
    if interfaces:
        here = ', '.join(sorted(name for name, link in links.items() if link.get('link_type') != 'loopback'))
        for name in interfaces:
            try:
                linkmtu.check_ifname(name)
            except linkmtu.MtuError as exc:
                raise linkmtu.MtuError('interfaces: %s' % exc)
            if name not in links:
                raise linkmtu.MtuError('interfaces: %s does not exist on this host; interfaces here: %s.'
                                       % (name, here or 'none'))
        return [(name, 'given') for name in interfaces], []
    found, errors = resolve_peers(run_ip, peers)
    if not found:
        raise linkmtu.MtuError(' '.join(errors))
    pairs = []
    for peer in found:
        if peer['interface'] not in [item[0] for item in pairs]:
            pairs.append((peer['interface'], 'route to %s' % peer['address']))
    return pairs, errors


def ssh_client():
    """The SSH client address of this session, from this process or an ancestor (become drops the env)."""
    conn = os.environ.get('SSH_CONNECTION') or os.environ.get('SSH_CLIENT')
    pid = os.getpid()
    for dummy in range(40):
        if conn:
            return conn.split()[0]
        stat = files.read_text('/proc/%d/stat' % pid)
        try:
            pid = int(stat.rsplit(')', 1)[1].split()[1])
        except (AttributeError, IndexError, ValueError):
            return None
        if pid <= 1:
            return None
        env = files.read_text('/proc/%d/environ' % pid) or ''
        values = dict(item.split('=', 1) for item in env.split('\0') if '=' in item)
        conn = values.get('SSH_CONNECTION') or values.get('SSH_CLIENT')
    return None


def protected(run_ip, control_hosts):
    """{interface: reason} for interfaces that carry a default route or the Ansible control connection."""
    found = {}
    for family in ('-4', '-6'):
        rc, out, _err = run_ip([family, '-j', 'route', 'show', 'default'], check=False)
        if rc != 0:
            continue
        for item in json.loads(out or '[]'):
            devs = [item.get('dev')] + [hop.get('dev') for hop in item.get('nexthops', [])]
            for dev in devs:
                if dev:
                    found.setdefault(dev, 'carries the default route (%s)' % ('IPv4' if family == '-4' else 'IPv6'))
    found.update(control_interfaces(run_ip, control_hosts, found))
    return found


def control_interfaces(run_ip, control_hosts, known=None):
    """{interface: reason} for the interfaces the Ansible control connection uses: the route to this session's SSH
    client, and the interfaces that hold one of ``control_hosts`` (what the controller connects to).  An
    interface already in ``known`` keeps that reason for a control host (as protected() words it)."""
    known, found = known or {}, {}
    client = ssh_client()
    if client:
        found_route, _err = route(run_ip, client)
        if found_route and found_route.get('dev'):
            found[found_route['dev']] = 'carries the Ansible control connection (SSH from %s)' % client
    if control_hosts:
        rc, out, _err = run_ip(['-j', 'addr', 'show'], check=False)
        addrs = {}
        for link in json.loads(out or '[]') if rc == 0 else []:
            for info in link.get('addr_info', []):
                addrs[info.get('local')] = link.get('ifname')
        for host in control_hosts:
            try:
                infos = socket.getaddrinfo(host, None, 0, socket.SOCK_DGRAM)
            except (socket.gaierror, UnicodeError):
                continue
            for info in infos:
                dev = addrs.get(info[4][0])
                if dev and dev != 'lo' and dev not in known:
                    found.setdefault(dev, 'holds %s, the address Ansible connects to' % host)
    return found


def platform(choice, max_mtu=None):
    """The cloud platform and its MTU limit: the caller's own limit, a forced platform, or DMI; None for none."""
    if max_mtu:
        return {'platform': 'configured', 'max_mtu': max_mtu, 'evidence': 'platform_max_mtu',
                'note': 'set by the caller'}
    if choice == 'none':
        return None
    if choice != 'auto':
        limit, note = linkmtu.CLOUD_LIMITS[choice]
        return {'platform': choice.split('-')[0], 'max_mtu': limit, 'evidence': 'platform=%s' % choice,
                'note': note}
    dmi = dict((key, files.read_text(os.path.join(DMI_DIR, key)) or '') for key in DMI_KEYS)
    try:
        names = os.listdir(stacking.SYS_CLASS_NET)
    except OSError:
        names = []
    drivers = dict((name, stacking.driver(name, stacking.SYS_CLASS_NET)) for name in names)
    return linkmtu.cloud_platform(dmi, dict((name, found) for name, found in drivers.items() if found))
