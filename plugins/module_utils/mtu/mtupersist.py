# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pieces of the link_mtu_persist module, by concern: the host's files and commands (PersistHost), which
network configuration manages an interface (Detection), and what each backend writes or runs for it
(Backends: systemd-networkd, NetworkManager, netplan, ifupdown, ifcfg). The module's Persist class puts them
together for state=present and state=absent."""

import glob
import json
import os
import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.record import Record
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import netconf

STATE_FILE = 'jumbo_mtu_persist.json'
NETPLAN_DIRS = ('lib/netplan', 'etc/netplan', 'run/netplan')

# The root of every configuration path the module reads and writes.
ROOT = '/'


class PersistHost(object):
    """The module's parameters, result and record, and the host's files (under ``root``) and commands; the
    planned writes and commands are collected here and carried out by the module."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.root = ROOT
        # what was written and replaced: <state_dir>/jumbo_mtu_persist.json, {"interfaces": {name: entry}},
        # each entry with its backend, its file or connection, and the original value where one was replaced
        self.record = Record(module, self.p['state_dir'], STATE_FILE, section='interfaces')
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


class Detection(PersistHost):
    """Which network configuration manages an interface, with the evidence."""

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


class Backends(PersistHost):
    """What each backend writes or runs to persist an MTU (plan_*), and to take it back (unplan)."""

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

    def unplan(self, name, record):
        """Plan taking back what ``record`` says was persisted for ``name``: the networkd drop-in goes, the
        NetworkManager connection gets its original MTU back, the ifcfg file its original line (or it goes when
        the module created it). The shared netplan and ifupdown files are the module's to remove."""
        backend = record.get('backend')
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
