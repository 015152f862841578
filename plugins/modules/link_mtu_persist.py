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
extends_documentation_fragment:
  - bdp.wan_tune.attributes
  - bdp.wan_tune.state_dir
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

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import runlock
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import netconf
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu.mtupersist import Backends, Detection


class Persist(Detection, Backends):
    """state=present and state=absent, from the pieces in module_utils/mtu/mtupersist.py."""

    def present(self):
        recorded = self.record.originals()
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
        self.apply()

    def apply(self):
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
                    self.record.put(name, dict(entry['record'], backend=entry['backend'], mtu=entry['mtu']))
            self.record.save()
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

    def absent(self):
        recorded = self.record.originals()
        for name, record in sorted(recorded.items()):
            self.result['interfaces'][name] = {'backend': record.get('backend'), 'status': 'removed'}
            self.unplan(name, record)
        # the shared files of netplan and ifupdown: everything recorded goes
        for backend, path in (('netplan', self.path('etc/netplan', netconf.NETPLAN_NAME)),
                              ('ifupdown', self.path('etc/network/interfaces.d', netconf.IFUPDOWN_NAME))):
            if any(r.get('backend') == backend for r in recorded.values()) and self.read(path) is not None:
                self.writes.append((path, None, 0))
                self.diffs.append({'before': self.read(path), 'after': '', 'before_header': path,
                                   'after_header': path})
        self.result['changed'] = bool(self.writes or self.commands or self.record.data)
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
        self.record.drop()


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
            state_dir=dict(type='path', default=files.STATE_DIR),
        ),
        required_if=[('state', 'present', ('interfaces',))],
        supports_check_mode=True,
    )
    # one state-changing step at a time on the host: the records are read, changed and written under the lock
    with runlock.held(module, module.params['state_dir'], 'link_mtu_persist %s' % module.params['state']):
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
