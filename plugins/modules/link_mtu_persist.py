#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: link_mtu_persist
short_description: Persist interface MTUs through the network stack that manages each interface
version_added: 0.2.0
description:
  - Makes an MTU survive a reboot by telling the host's own network configuration, detected per interface (or forced
    with O(backend)), in this order
  - "netplan: the interface is defined in C(/etc/netplan), C(/run/netplan) or C(/lib/netplan). Writes
    C(/etc/netplan/90-bdp-wan-tune-mtu.yaml) (mode 0600) adding C(mtu) to the same definition id, which netplan
    merges; a physical device rendered by systemd-networkd that the definition does not match by MAC gets
    C(match: macaddress) and C(set-name), as netplan needs for MTU changes. Validated with C(netplan generate); no
    C(netplan apply)."
  - "NetworkManager: NetworkManager runs and the device has an active connection. Runs C(nmcli connection modify
    UUID 802-3-ethernet.mtu N) (or the type's MTU property), then C(nmcli device reapply), which keeps the link up;
    O(nm_reactivate=true) falls back to C(nmcli connection up) when reapply is refused."
  - "systemd-networkd: networkd manages the link (C(/run/systemd/netif/links)). Writes the drop-in
    C(/etc/systemd/network/NAME.network.d/90-bdp-wan-tune-mtu.conf) with C([Link] MTUBytes=N). Does not reload
    networkd unless O(networkd_reload=true), because C(networkctl reload) reconfigures the link (its addresses are
    removed and added again)."
  - "ifupdown: C(/etc/network/interfaces) (or a file it sources) has a stanza for the interface. Writes
    C(/etc/network/interfaces.d/bdp-wan-tune-mtu) with C(iface NAME inet manual) and C(mtu N); ifupdown applies
    every stanza of an interface. An interface no backend manages on a host with ifupdown gets C(auto NAME) too."
  - "ifcfg: C(/etc/sysconfig/network-scripts/ifcfg-NAME) exists and NetworkManager does not run. Sets C(MTU=N)
    in that file, keeping the previous line for O(state=absent)."
  - Before writing anything it fails on configuration that would override the MTU at boot (a later netplan file, a
    later networkd drop-in, another ifupdown stanza with another C(mtu)), and on interfaces nothing manages, naming
    the file and line.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  interfaces:
    description: Interfaces and the MTU to persist. Required with O(state=present).
    type: list
    elements: dict
    suboptions:
      name:
        description: Interface name.
        type: str
        required: true
      mtu:
        description: The MTU, 576 to 65535.
        type: int
        required: true
  backend:
    description: V(auto) detects the backend per interface; a named backend is used for every interface; V(none)
      persists nothing and reports it.
    type: str
    choices: [auto, networkd, networkmanager, netplan, ifupdown, ifcfg, none]
    default: auto
  state:
    description: V(present) persists; V(absent) removes what this module wrote and restores what it changed.
    type: str
    choices: [present, absent]
    default: present
  header:
    description: Comment lines at the top of the files this module owns (for example C(ansible_managed)).
    type: str
    default: ''
  note:
    description: One comment line saying where the value comes from.
    type: str
    default: ''
  networkd_reload:
    description: Run C(networkctl reload) after writing a networkd drop-in (reconfigures the link).
    type: bool
    default: false
  nm_reactivate:
    description: Reactivate the NetworkManager connection when C(nmcli device reapply) is refused (the link goes
      down and up).
    type: bool
    default: false
  root:
    description: Prefix for every configuration path (images, tests). Commands still act on the running host.
    type: path
    default: /
  state_dir:
    description: Where what was written and replaced is recorded for O(state=absent).
    type: path
    default: /var/lib/bdp_wan_tune
extends_documentation_fragment:
  - bdp.wan_tune.attributes
  - ansible.builtin.action_common_attributes
attributes:
  diff_mode:
    details: Shows each file change and the nmcli commands.
notes:
  - Changes no runtime MTU; M(bdp.wan_tune.link_mtu) does that, with a path proof, before this runs.
seealso:
  - module: bdp.wan_tune.link_mtu
"""

EXAMPLES = r"""
- name: Persist the proven MTU through whatever manages each interface
  bdp.wan_tune.link_mtu_persist:
    interfaces:
      - {name: wan0, mtu: 9000}
    header: "# Ansible managed"

- name: Preview the netplan file on a host that uses netplan
  bdp.wan_tune.link_mtu_persist:
    interfaces: [{name: ens5, mtu: 9001}]
    backend: netplan
  check_mode: true
  diff: true

- name: Remove the persistence change
  bdp.wan_tune.link_mtu_persist:
    state: absent
"""

RETURN = r"""
interfaces:
  description: Per interface, the backend, what it manages the interface with, the files or commands and the status
    (changed, ok, configured = the existing configuration already sets this MTU).
  returned: always
  type: dict
  sample:
    wan0: {backend: networkd, evidence: "networkd manages wan0 with /etc/systemd/network/10-wan0.network",
           path: /etc/systemd/network/10-wan0.network.d/90-bdp-wan-tune-mtu.conf, mtu: 9000, status: changed}
commands:
  description: Commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: list
  sample: [["nmcli", "connection", "modify", "5c1b...", "802-3-ethernet.mtu", "9000"]]
files:
  description: Files written or removed.
  returned: always
  type: list
  elements: str
check_mode:
  description: Whether this call ran in check mode (nothing was written or run).
  returned: always
  type: bool
"""

import glob
import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils import files
from ansible_collections.bdp.wan_tune.plugins.module_utils import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils import netconf

STATE_FILE = 'jumbo_mtu_persist.json'
NETPLAN_DIRS = ('lib/netplan', 'etc/netplan', 'run/netplan')


class Persist(object):
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.root = self.p['root'] or '/'
        self.state_path = os.path.join(self.p['state_dir'], STATE_FILE)
        self.result = {'changed': False, 'interfaces': {}, 'commands': [], 'files': [],
                       'check_mode': module.check_mode}
        self.diffs = []
        self.writes = []        # (path, text or None for delete, mode)
        self.commands = []

    def path(self, *parts):
        return os.path.join(self.root, *[part.lstrip('/') for part in parts])

    def fail(self, msg):
        self.module.fail_json(msg=msg, **self.result)

    read = staticmethod(files.read_text)

    def load_state(self):
        return files.load_record(self.state_path)

    def save_state(self, state):
        files.save_record(self.module, self.state_path, state)

    def write(self, path, text, mode=0o644):
        files.write_atomic(self.module, path, text, mode)

    def plan_write(self, path, text, mode=0o644):
        old = self.read(path)
        if old == text:
            return False
        self.writes.append((path, text, mode))
        self.diffs.append({'before': old or '', 'after': text or '', 'before_header': path, 'after_header': path})
        return True

    def run(self, argv, check=True):
        rc, out, err = self.module.run_command(argv)
        if check and rc != 0:
            raise RuntimeError('%s failed (rc %d): %s' % (' '.join(argv), rc, (err or out).strip()))
        return rc, out, err

    # ------------------------------------------------------------------ detection
    def links(self):
        ip = self.module.get_bin_path('ip', required=True)
        rc, out, err = self.module.run_command([ip, '-d', '-j', 'link', 'show'])
        if rc != 0:
            self.fail('ip -d -j link show failed: %s' % err)
        return linkmtu.parse_links(json.loads(out or '[]'))

    def netplan_docs(self, exclude=None):
        docs = []
        for directory in NETPLAN_DIRS:
            for path in sorted(glob.glob(self.path(directory, '*.yaml'))):
                if exclude and os.path.realpath(path) == os.path.realpath(exclude):
                    continue
                try:
                    docs.append((path, netconf.yaml_load(self.read(path) or '')))
                except Exception as exc:  # pylint: disable=broad-except
                    self.fail('cannot read netplan file %s: %s' % (path, exc))
        return docs

    def nm_running(self):
        nmcli = self.module.get_bin_path('nmcli')
        if not nmcli:
            return None
        rc, out, _err = self.module.run_command([nmcli, '-t', '-f', 'RUNNING', 'general'])
        return nmcli if rc == 0 and out.strip() == 'running' else None

    def nm_connection(self, nmcli, name):
        rc, out, _err = self.module.run_command([nmcli, '-g', 'GENERAL.CON-UUID', 'device', 'show', name])
        uuid = out.strip() if rc == 0 else ''
        if not uuid:
            return None
        rc, out, err = self.module.run_command([nmcli, '-g', 'connection.type,connection.id', 'connection', 'show',
                                                uuid])
        if rc != 0:
            self.fail('nmcli connection show %s failed: %s' % (uuid, err.strip()))
        values = out.splitlines()
        conn_type, conn_id = (values + ['', ''])[:2]
        setting = netconf.nm_setting(conn_type.strip())
        rc, out, err = self.module.run_command([nmcli, '-g', setting, 'connection', 'show', uuid])
        return {'uuid': uuid, 'type': conn_type.strip(), 'id': conn_id.strip(), 'setting': setting,
                'current': out.strip(), 'nmcli': nmcli}

    def ifupdown_stanzas(self, exclude=None):
        """All stanzas of /etc/network/interfaces and what it sources; (stanzas, auto set, main sources)."""
        main = self.path('etc/network/interfaces')
        text = self.read(main)
        if text is None:
            return None
        stanzas, auto, seen = [], set(), set()
        base = self.path('etc/network')

        def visit(path, text):
            if path in seen:
                return None
            seen.add(path)
            parsed = netconf.ifupdown_parse(text, path)
            if exclude is None or os.path.realpath(path) != os.path.realpath(exclude):
                stanzas.extend(parsed['ifaces'])
                auto.update(parsed['auto'])
            for kind, pattern in netconf.ifupdown_includes(parsed['sources'], base, self.root):
                files = sorted(glob.glob(pattern)) if kind == 'glob' else sorted(
                    os.path.join(pattern, name) for name in os.listdir(pattern)
                    if os.path.isdir(pattern) and re.match(r'^[A-Za-z0-9_-]+$', name))
                for item in files:
                    if os.path.isfile(item):
                        visit(item, self.read(item) or '')
            return parsed

        top = visit(main, text)
        return stanzas, auto, top['sources']

    def detect(self, name, link):
        forced = self.p['backend']
        if forced == 'none':
            return {'backend': 'none', 'evidence': 'backend=none: nothing is persisted'}
        tried = []
        if forced in ('auto', 'netplan'):
            docs = self.netplan_docs(exclude=self.path('etc/netplan', netconf.NETPLAN_NAME))
            entry = netconf.netplan_find(netconf.netplan_definitions(docs), name, link.get('mac')) if docs else None
            if entry:
                evidence = 'netplan defines %s as %s.%s in %s' % (name, entry['section'], entry['id'],
                                                                  ', '.join(entry['files']))
                return {'backend': 'netplan', 'entry': entry, 'evidence': evidence}
            if forced == 'netplan':
                if docs:
                    self.fail('%s is not defined in any netplan file (%s); define it there with its addresses, then '
                              'run again.' % (name, ', '.join(path for path, _doc in docs)))
                return {'backend': 'netplan', 'entry': {'section': 'ethernets', 'id': name, 'conf': {},
                                                        'files': [], 'mtu_files': [], 'renderer': 'networkd'},
                        'evidence': 'backend=netplan; no netplan file here defines %s yet' % name}
            tried.append('netplan: %s' % ('no file defines it' if docs else 'no netplan files'))
        if forced in ('auto', 'networkmanager'):
            nmcli = self.nm_running()
            conn = self.nm_connection(nmcli, name) if nmcli else None
            if conn and conn['id'].startswith('netplan-'):
                self.fail('%s is managed by NetworkManager through netplan (connection %s), but no netplan file '
                          'defines it here; fix the netplan configuration first.' % (name, conn['id']))
            if conn:
                return {'backend': 'networkmanager', 'conn': conn,
                        'evidence': 'NetworkManager manages %s with connection %r (%s)' % (name, conn['id'],
                                                                                           conn['uuid'])}
            if forced == 'networkmanager':
                self.fail('NetworkManager %s; cannot persist %s through it.'
                          % ('is not running (nmcli general)' if not nmcli else 'has no active connection on %s'
                             % name, name))
            tried.append('NetworkManager: %s' % ('not running' if not nmcli else 'no connection on %s' % name))
        if forced in ('auto', 'networkd'):
            state = netconf.networkd_link_state(self.read(self.path('run/systemd/netif/links', str(link['index']))))
            network_file = netconf.networkd_managed(state)
            if network_file:
                return {'backend': 'networkd', 'network_file': network_file,
                        'evidence': 'systemd-networkd manages %s with %s' % (name, network_file)}
            if forced == 'networkd':
                self.fail('systemd-networkd does not manage %s (%s); add a .network file for it with its addresses '
                          'first, then run again.' % (name, 'setup state %s' % state.get('ADMIN_STATE')
                                                      if state else 'networkd is not running or does not know it'))
            tried.append('networkd: %s' % ('state %s' % state.get('ADMIN_STATE') if state else 'not running'))
        found = None
        if forced in ('auto', 'ifupdown'):
            found = self.ifupdown_stanzas(exclude=self.path('etc/network/interfaces.d', netconf.IFUPDOWN_NAME))
            if found and [s for s in found[0] if s['name'] == name]:
                return {'backend': 'ifupdown', 'stanzas': found[0], 'auto': found[1], 'sources': found[2],
                        'evidence': 'ifupdown has a stanza for %s (%s)' % (name, ', '.join(
                            '%s:%d' % (s['path'], s['line']) for s in found[0] if s['name'] == name))}
            tried.append('ifupdown: %s' % ('no stanza' if found else 'no /etc/network/interfaces'))
        if forced in ('auto', 'ifcfg'):
            path = self.path('etc/sysconfig/network-scripts', 'ifcfg-%s' % name)
            if os.path.exists(path) or forced == 'ifcfg':
                return {'backend': 'ifcfg', 'file': path, 'evidence': '%s %s' % (
                    path, 'exists' if os.path.exists(path) else 'is created (backend=ifcfg)')}
            tried.append('ifcfg: no %s' % path)
        if found and (forced == 'ifupdown' or self.module.get_bin_path('ifup')):
            return {'backend': 'ifupdown', 'stanzas': found[0], 'auto': found[1], 'sources': found[2],
                    'evidence': 'nothing manages %s; ifupdown is installed, so it gets a manual stanza with auto' % name}
        self.fail('Nothing manages %s persistently (%s), so nothing would set its MTU at the next boot. Add '
                  '%s to your network configuration (netplan, NetworkManager, systemd-networkd, ifupdown or ifcfg) '
                  'and run again, or set the backend to none to keep a runtime-only change.'
                  % (name, '; '.join(tried), name))
        return None

    # ------------------------------------------------------------------ present
    def present(self):
        state = self.load_state()
        recorded = state.setdefault('interfaces', {})
        links = self.links()
        wanted = []
        for item in self.p['interfaces']:
            try:
                name = linkmtu.check_ifname(item['name'])
                mtu = linkmtu.parse_mtu(item['mtu'], 'interfaces[%s].mtu' % item['name'])
            except linkmtu.MtuError as exc:
                self.fail(str(exc))
            if name not in links:
                self.fail('interface %s does not exist on this host; nothing was written.' % name)
            wanted.append((name, mtu))
        errors = []
        netplan_entries = dict(((r['netplan']['section'], r['netplan']['id']), r['netplan'])
                               for r in recorded.values() if r.get('backend') == 'netplan' and r.get('netplan'))
        ifupdown_entries = dict((n, (n, r['mtu'], r.get('auto', False))) for n, r in recorded.items()
                                if r.get('backend') == 'ifupdown' and r.get('written'))
        for name, mtu in wanted:
            info = self.detect(name, links[name])
            backend = info['backend']
            entry = {'backend': backend, 'evidence': info['evidence'], 'mtu': mtu, 'status': 'ok'}
            self.result['interfaces'][name] = entry
            try:
                if backend == 'networkd':
                    self.plan_networkd(name, mtu, info, entry, errors)
                elif backend == 'networkmanager':
                    self.plan_nm(name, mtu, info, entry, recorded)
                elif backend == 'netplan':
                    self.plan_netplan(name, mtu, info, entry, links[name], errors, netplan_entries)
                elif backend == 'ifupdown':
                    self.plan_ifupdown(name, mtu, info, entry, errors, ifupdown_entries)
                elif backend == 'ifcfg':
                    self.plan_ifcfg(name, mtu, info, entry, recorded)
                else:
                    entry['status'] = 'not persisted'
            except netconf.NetConfError as exc:
                errors.append(str(exc))
        if errors:
            self.fail('%s Nothing was written.' % ' '.join(errors))
        if netplan_entries:
            path = self.path('etc/netplan', netconf.NETPLAN_NAME)
            text = netconf.netplan_render(list(netplan_entries.values()), self.p['header'])
            if self.plan_write(path, text, 0o600):
                for name, entry in self.result['interfaces'].items():
                    if entry['backend'] == 'netplan' and entry['status'] == 'ok':
                        entry['status'] = 'changed'
        if ifupdown_entries:
            path = self.path('etc/network/interfaces.d', netconf.IFUPDOWN_NAME)
            text = netconf.ifupdown_render(list(ifupdown_entries.values()), self.p['header'])
            if self.plan_write(path, text):
                for name, entry in self.result['interfaces'].items():
                    if entry['backend'] == 'ifupdown' and entry['status'] == 'ok':
                        entry['status'] = 'changed'
        self.result['changed'] = bool(self.writes or self.commands)
        self.result['files'] = [path for path, _text, _mode in self.writes]
        self.result['commands'] = self.commands
        if self.commands:
            self.diffs.append({'before': '', 'after': netconf.nm_describe(self.commands),
                               'before_header': 'commands', 'after_header': 'commands'})
        self.result['diff'] = self.diffs
        if self.module.check_mode or not self.result['changed']:
            return
        self.apply(state, recorded)

    def plan_networkd(self, name, mtu, info, entry, errors):
        network_file = info['network_file']
        dropin = netconf.networkd_dropin_path(network_file, self.path('etc/systemd/network'))
        entry['path'] = dropin
        others = []
        for directory in ('etc/systemd/network', 'run/systemd/network', 'usr/lib/systemd/network',
                          'lib/systemd/network'):
            for path in glob.glob(self.path(directory, os.path.basename(network_file) + '.d', '*.conf')):
                if os.path.basename(path) != netconf.DROPIN_NAME:
                    others.append((path, self.read(path) or ''))
        main = self.read(self.path(network_file)) or ''
        later = [(path, text) for path, text in others if os.path.basename(path) > netconf.DROPIN_NAME]
        for path, text in later:
            value = netconf.parse_bytes(netconf.ini_value(text, 'Link', 'MTUBytes'))
            if value is not None and value != mtu:
                errors.append('%s sets MTUBytes=%s for %s and is read after %s, so networkd would use it at boot; '
                              'remove that line.' % (path, value, name, netconf.DROPIN_NAME))
        without, _source = netconf.networkd_effective(main, others)
        if without == mtu and self.read(dropin) is None:
            entry['status'] = 'configured'
            return
        text = netconf.networkd_dropin(mtu, self.p['header'], self.p['note'])
        entry['record'] = {'path': dropin}
        if self.plan_write(dropin, text):
            entry['status'] = 'changed'
            if self.p['networkd_reload']:
                self.commands.append(['networkctl', 'reload'])

    def plan_nm(self, name, mtu, info, entry, recorded):
        conn = info['conn']
        entry.update(connection=conn['id'], uuid=conn['uuid'], setting=conn['setting'], current=conn['current'])
        if netconf.nm_value(conn['current']) == mtu:
            entry['status'] = 'configured' if name not in recorded else 'ok'
            return
        original = recorded.get(name, {}).get('original', conn['current'])
        entry['record'] = {'uuid': conn['uuid'], 'type': conn['type'], 'setting': conn['setting'],
                           'original': original, 'nmcli': conn['nmcli']}
        cmds = netconf.nm_commands(conn['uuid'], conn['type'], mtu, name)
        cmds = [[conn['nmcli']] + cmd[1:] for cmd in cmds]
        self.commands.extend(cmds)
        entry['commands'] = cmds
        entry['status'] = 'changed'

    def plan_netplan(self, name, mtu, info, entry, link, errors, entries):
        found = info['entry']
        own = self.path('etc/netplan', netconf.NETPLAN_NAME)
        for path, value in netconf.netplan_conflicts(found, own):
            if value != mtu:
                errors.append('%s sets mtu %s for %s.%s and netplan reads it after %s; remove it there.'
                              % (path, value, found['section'], found['id'], netconf.NETPLAN_NAME))
        key = (found['section'], found['id'])
        if found['conf'].get('mtu') == mtu and key not in entries:
            entry['status'] = 'configured'
            return
        spec = netconf.netplan_entry(found, name, link.get('mac'), mtu)
        entries[key] = spec
        entry.update(path=own, netplan_id='%s.%s' % key)
        entry['record'] = {'netplan': spec, 'path': own}

    def plan_ifupdown(self, name, mtu, info, entry, errors, entries):
        own = self.path('etc/network/interfaces.d', netconf.IFUPDOWN_NAME)
        if not netconf.ifupdown_sources_file(info['sources'], own, self.path('etc/network'), self.root):
            errors.append('%s does not source %s, so ifupdown would never read it; add "source %s/*" to it.'
                          % (self.path('etc/network/interfaces'), own, os.path.dirname(own)))
            return
        conflicts = netconf.ifupdown_conflicts(info['stanzas'], name, mtu, own)
        if conflicts:
            errors.append('; '.join('%s line %d sets mtu %s for %s' % (path, line, value, name)
                                    for path, line, value in conflicts)
                          + ': ifupdown applies every stanza, so that value would fight this one at boot; remove it.')
            return
        if any(s['name'] == name and s['options'].get('mtu') == str(mtu) for s in info['stanzas']) \
                and name not in entries:
            entry['status'] = 'configured'
            return
        needs_auto = name not in info['auto']
        entries[name] = (name, mtu, needs_auto)
        entry.update(path=own, auto=needs_auto)
        entry['record'] = {'path': own, 'auto': needs_auto, 'written': True}

    def plan_ifcfg(self, name, mtu, info, entry, recorded):
        path = info['file']
        text = self.read(path)
        entry['path'] = path
        if text is None:
            text = 'DEVICE=%s\nONBOOT=yes\n' % name
        current = netconf.ifcfg_get(text, 'MTU')
        if current == str(mtu):
            entry['status'] = 'configured' if name not in recorded else 'ok'
            return
        new, original = netconf.ifcfg_render(text, mtu)
        old = recorded.get(name, {})
        entry['record'] = {'path': path, 'original': old.get('original', original),
                           'file_existed': old.get('file_existed', self.read(path) is not None)}
        if self.plan_write(path, new):
            entry['status'] = 'changed'

    def apply(self, state, recorded):
        done = []
        try:
            for path, text, mode in self.writes:
                old = self.read(path)
                self.write(path, text, mode)
                done.append((path, old))
            netplan = self.path('etc/netplan', netconf.NETPLAN_NAME)
            if any(path == netplan for path, _t, _m in self.writes) and self.module.get_bin_path('netplan') \
                    and self.root == '/':
                rc, out, err = self.module.run_command([self.module.get_bin_path('netplan'), 'generate'])
                if rc != 0:
                    raise RuntimeError('netplan generate rejected %s: %s' % (netplan, (err or out).strip()))
            for name, entry in self.result['interfaces'].items():
                if entry.get('record'):
                    record = dict(entry['record'], backend=entry['backend'], mtu=entry['mtu'])
                    recorded[name] = record
            self.save_state(state)
            for cmd in self.commands:
                if cmd[1:3] == ['device', 'reapply']:
                    rc, out, err = self.run(cmd, check=False)
                    if rc != 0:
                        if self.p['nm_reactivate']:
                            uuid = [c for c in self.commands if c[1:3] == ['connection', 'modify']][0][3]
                            self.run([cmd[0], 'connection', 'up', uuid])
                        else:
                            self.module.warn('nmcli device reapply %s was refused (%s); the connection has the new '
                                             'MTU from its next activation. nm_reactivate=true reactivates it now.'
                                             % (cmd[3], (err or out).strip()))
                else:
                    self.run(cmd)
        except (RuntimeError, OSError, IOError) as exc:
            for path, old in reversed(done):
                if old is None:
                    if os.path.exists(path):
                        os.unlink(path)
                else:
                    self.write(path, old)
            self.fail('Persisting failed and the files were put back: %s. The runtime MTU is unchanged.' % exc)

    # ------------------------------------------------------------------ absent
    def absent(self):
        state = self.load_state()
        recorded = state.get('interfaces', {})
        for name, record in sorted(recorded.items()):
            backend = record.get('backend')
            entry = {'backend': backend, 'status': 'removed'}
            self.result['interfaces'][name] = entry
            if backend == 'networkd':
                if self.read(record['path']) is not None:
                    self.writes.append((record['path'], None, 0))
                    self.diffs.append({'before': self.read(record['path']), 'after': '',
                                       'before_header': record['path'], 'after_header': record['path']})
            elif backend == 'networkmanager':
                value = netconf.nm_value(record.get('original'))
                cmds = [[record.get('nmcli', 'nmcli')] + c[1:]
                        for c in netconf.nm_commands(record['uuid'], record['type'], value, name)]
                self.commands.extend(cmds)
            elif backend == 'ifcfg':
                text = self.read(record['path'])
                if text is not None:
                    if not record.get('file_existed', True):
                        self.writes.append((record['path'], None, 0))
                        self.diffs.append({'before': text, 'after': '', 'before_header': record['path'],
                                           'after_header': record['path']})
                    else:
                        self.plan_write(record['path'], netconf.ifcfg_restore(text, record.get('original')))
        # the shared files of netplan and ifupdown: everything recorded goes
        for backend, path in (('netplan', self.path('etc/netplan', netconf.NETPLAN_NAME)),
                              ('ifupdown', self.path('etc/network/interfaces.d', netconf.IFUPDOWN_NAME))):
            if any(r.get('backend') == backend for r in recorded.values()) and self.read(path) is not None:
                self.writes.append((path, None, 0))
                self.diffs.append({'before': self.read(path), 'after': '', 'before_header': path,
                                   'after_header': path})
        self.result['changed'] = bool(self.writes or self.commands or state)
        self.result['files'] = [path for path, _t, _m in self.writes]
        self.result['commands'] = self.commands
        if self.commands:
            self.diffs.append({'before': '', 'after': netconf.nm_describe(self.commands), 'before_header': 'commands',
                               'after_header': 'commands'})
        self.result['diff'] = self.diffs
        if self.module.check_mode:
            return
        try:
            for path, text, mode in self.writes:
                if text is None:
                    if os.path.exists(path):
                        os.unlink(path)
                    directory = os.path.dirname(path)
                    if directory.endswith('.network.d') and os.path.isdir(directory) and not os.listdir(directory):
                        os.rmdir(directory)
                else:
                    self.write(path, text, mode)
            for cmd in self.commands:
                if cmd[1:3] == ['device', 'reapply']:
                    self.run(cmd, check=False)
                else:
                    self.run(cmd)
        except (RuntimeError, OSError, IOError) as exc:
            self.fail('Removing the persistence change failed: %s; the record was kept so you can retry.' % exc)
        files.save_record(self.module, self.state_path, {})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type='list', elements='dict', options=dict(
                name=dict(type='str', required=True),
                mtu=dict(type='int', required=True),
            )),
            backend=dict(type='str', default='auto',
                         choices=['auto', 'networkd', 'networkmanager', 'netplan', 'ifupdown', 'ifcfg', 'none']),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            header=dict(type='str', default=''),
            note=dict(type='str', default=''),
            networkd_reload=dict(type='bool', default=False),
            nm_reactivate=dict(type='bool', default=False),
            root=dict(type='path', default='/'),
            state_dir=dict(type='path', default=files.STATE_DIR),
        ),
        required_if=[('state', 'present', ('interfaces',))],
        supports_check_mode=True,
    )
    persist = Persist(module)
    try:
        if module.params['state'] == 'present':
            persist.present()
        else:
            persist.absent()
    except (RuntimeError, netconf.NetConfError) as exc:
        persist.fail(str(exc))
    module.exit_json(**persist.result)


if __name__ == '__main__':
    main()
