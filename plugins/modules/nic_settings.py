#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: nic_settings
short_description: Set NIC rings, interrupt coalescing, the transmit queue length and the CPU governor, and persist them
version_added: 0.4.0
description:
  - One call does the whole job on a host, for the interfaces named in O(interfaces) or, when that is empty, the
    interfaces that route to O(peers) (as M(bdp.wan_tune.nic_facts) finds them) and the devices below them (a
    VLAN's parent, a bond's or bridge's members), whose rings and queues carry the packets.
  - "Rings (C(ethtool -G)): to the driver's maximum (O(rings=max)), or to a number (rx and tx, each capped at its
    maximum). Interrupt coalescing (C(ethtool -C)): adaptive rx and tx where the driver offers it, or a fixed
    rx-usecs with adaptive rx off; each of these fields is set on its own where the driver refuses them together
    (ENA takes adaptive rx, not adaptive tx). Both through the SIOCETHTOOL ioctl: no ethtool program is needed. A
    driver that refuses a setting (virtio-net and veth have no ring resize or coalescing; a ring below the
    driver's minimum) is reported as V(unsupported) with the reason, never a failure and never a change; the
    refusal is recorded with the driver's name, so that later runs (and check mode) report it up front and never
    persist it. A ring size the driver rounds (e1000e and ixgbe to a multiple of 8, ENA down to a power of 2) is
    reported as the driver took it, and the same request later is V(ok)."
  - The transmit queue length (C(ip link set dev IF txqueuelen N)) only where the root qdisc queues up to it
    (pfifo_fast, pfifo, bfifo, or mq and multiq whose children are those); under fq, fq_codel, cake or noqueue it
    is reported as V(not_applicable) with the reason, since those have their own limits. A queue length this
    module persisted stays in its C(.link) file when the root qdisc became fq at boot (C(net.core.default_qdisc)).
  - The CPU frequency governor C(performance) on every CPU that offers it; a host without cpufreq (most VMs) is
    reported as V(unsupported).
  - A value the host had before this module first changed it is never lowered (rings, txqueuelen) unless
    O(allow_lower=true); the module's own earlier values follow its inputs down to that original.
  - "Persistence (O(persist=true)), the host's own way: one systemd C(.link) file per interface in
    C(/etc/systemd/network), applied by systemd-udevd when the device appears at boot, with C(RxBufferSize=), C(TxBufferSize=),
    C(TransmitQueueLength=), C(UseAdaptiveRxCoalesce=), C(UseAdaptiveTxCoalesce=) and C(RxCoalesceSec=) where the
    host's systemd knows the key (244, 248 and 250 added them; Debian 12 has 252). udev applies only the first
    C(.link) file that matches, so ours (C(10-bdp-wan-tune-IF.link), matched by the permanent MAC address) carries
    every key of the file udev applied before (usually C(99-default.link) with its naming policy). Persistence is
    reported as V(unsupported) and nothing is written where udev does not say which file it applied
    (C(ID_NET_LINK_FILE)), where an earlier file wins, or where the applied file has drop-ins
    (C(NAME.link.d/*.conf)), which would not apply to ours. The governor persists in a tmpfiles.d file in
    C(/etc/tmpfiles.d) where every CPU offers C(performance). Without systemd-udevd, persistence is reported as
    V(unsupported)."
  - "Never a lockout, never a cut transfer: a ring change resets many NICs (the link drops for a moment).
    On the interface the Ansible connection uses (and the devices below it), rings change only under the
    commit-confirm timer M(bdp.wan_tune.link_mtu) uses: the timer is armed before the change and, unless
    O(state=confirmed) arrives within O(confirm_timeout) seconds over a new connection, puts the rings back by
    itself (a Python script with the same ioctl, no ethtool program); the files (C(.link) and tmpfiles.d) are
    written only on confirmation. The task that sets the rings on every host of the batch and the confirmations
    must fit in O(confirm_timeout). Before any change, the module refuses to change rings on any interface while a migration of
    this collection runs or an rsync daemon transfer (TCP ports O(transfer_ports)) is established. Coalescing
    changes write interrupt registers and are neither refused nor timed."
  - Everything a change replaces is recorded in O(state_dir); O(state=absent) puts back every recorded value and
    file exactly and forgets the record.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  state:
    description:
      - V(present) plans, checks, changes and persists; a ring change on the control connection's interface is
        left pending under the commit-confirm timer (RV(commit)), its files unwritten until V(confirmed).
      - V(confirmed) disarms the timer of the pending ring change and writes its files; fails if the timer has
        already put the rings back. A decision taken by a confirmation cut short is finished (the files written)
        by the next call of any state.
      - V(reverted) puts the rings of a pending change back now (or reports that the timer did); used when the
        confirmation did not get through.
      - V(absent) puts back every value recorded before the first change (a value someone else changed since is
        left alone, with a warning), removes the files this module wrote (restoring a file that was there before)
        and forgets the record. Putting back the rings the NIC had before is going back to a known-good state,
        as the timer would, so it needs no timer.
    type: str
    choices: [present, confirmed, reverted, absent]
    default: present
  interfaces:
    description: The interfaces to tune. Empty means the interfaces that route to O(peers).
    type: list
    elements: str
    default: []
  peers:
    description: Addresses or host names of the peers; the interfaces that route to them are tuned when
      O(interfaces) is empty.
    type: list
    elements: str
    default: []
  rings:
    description: V(max) (the driver's maximum), V(keep), or a whole number of descriptors from 1 to 65536 for rx
      and tx (each capped at its maximum).
    type: str
    default: max
  txqueuelen:
    description: V(keep) or a whole number of packets from 1 to 1000000, applied where the root qdisc uses the
      device queue length.
    type: str
    default: '10000'
  coalescing:
    description: V(adaptive) (adaptive rx and tx where the driver offers it), V(keep), or a whole number of rx-usecs
      from 0 to 100000 (fixed, adaptive rx off).
    type: str
    default: adaptive
  governor:
    description: V(performance) sets the CPU frequency governor where cpufreq offers it; V(keep) leaves it.
    type: str
    choices: [performance, keep]
    default: performance
  persist:
    description: Persist the settings in a C(.link) file per interface and the governor in a tmpfiles.d file.
      With V(false), files written by an earlier run for these interfaces are removed (what was there before is
      put back).
    type: bool
    default: true
  header:
    description: The comment at the top of the files this module writes (for example C(ansible_managed)). Keep it
      the same for a host from run to run (no date, no list of peers), as another header rewrites the files.
    type: str
    default: Managed by bdp.wan_tune
  allow_lower:
    description: Lower rings or txqueuelen below what the host had before this module first changed them.
    type: bool
    default: false
  confirm_timeout:
    description: Seconds after arming before the timer puts the rings of the control connection's interface back
      unless O(state=confirmed) runs (10 or more).
    type: int
    default: 120
  transfer_ports:
    description: More TCP ports of rsync daemon transfers (an rsync daemon on other ports than 873 and 874, which are
      always watched); while a connection to or from one of them is established, ring changes are refused.
    type: list
    elements: int
    default: []
extends_documentation_fragment:
  - bdp.wan_tune.commit_confirm
  - bdp.wan_tune.state_dir
  - bdp.wan_tune.attributes
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Plans and reports what would change, writes and sets nothing. Whether a driver accepts a ring or
      coalescing value, and what it rounds a ring size to, shows only when the value is set, so the first check
      mode run on a host predicts it as asked (a change, and so in the C(.link) file); once a run has set it, the
      record holds the driver's refusal or the value it took, and check mode predicts them too. The refusal of a
      running transfer applies in check mode too, and a ring change that would go under the commit-confirm timer
      is named in its reason.
  diff_mode:
    details: Shows the settings per interface before and after, and each file.
notes:
  - Needs root and C(ip) from iproute2; C(tc) tells the root qdisc (without it txqueuelen is not applicable).
  - A C(.link) file takes effect when udev sees the device appear (at boot); nothing is re-triggered now.
seealso:
  - module: bdp.wan_tune.nic_facts
  - name: systemd.link
    description: The keys of the C(.link) files, and the version that added each.
    link: https://www.freedesktop.org/software/systemd/man/latest/systemd.link.html
"""

EXAMPLES = r"""
- name: Tune the interfaces towards the peers (rings to the maximum, adaptive coalescing, txqueuelen, governor)
  bdp.wan_tune.nic_settings:
    peers: [198.18.0.2]
    control_hosts: "{{ [ansible_host] if ansible_host is defined else [] }}"
  register: nic

- name: Named interfaces, rings 1024, fixed coalescing, not persisted
  bdp.wan_tune.nic_settings:
    interfaces: [ens4]
    rings: "1024"
    coalescing: "50"
    persist: false

- name: Open a fresh control connection, so the confirmation proves a new session works after the ring change
  ansible.builtin.meta: reset_connection

- name: Confirm a ring change on the control connection's NIC (the timer puts the rings back if this never arrives)
  bdp.wan_tune.nic_settings:
    state: confirmed
  when: nic.commit is defined

- name: Put everything back
  bdp.wan_tune.nic_settings:
    state: absent
"""

RETURN = r"""
interfaces:
  description:
    - Per interface, per setting (V(rings), V(coalescing), V(txqueuelen), V(persist)) its V(before), V(after),
      V(status) (V(changed), V(ok), V(unsupported), V(not_applicable), V(kept_higher)) and V(reason).
    - In check mode V(changed) means it would change.
  returned: when state is present
  type: dict
  sample:
    ens4:
      rings: {before: {rx: 256, tx: 256}, after: {rx: 4096, tx: 4096}, status: changed, reason: ''}
      coalescing: {before: {adaptive_rx: false, adaptive_tx: false, rx_usecs: 3},
                   after: {adaptive_rx: true, adaptive_tx: true, rx_usecs: 3}, status: changed,
                   reason: adaptive rx and tx}
      txqueuelen: {before: 1000, after: 1000, status: not_applicable,
                   reason: "the root qdisc is mq/fq, which keeps its own limit ..."}
      persist: {before: null, after: /etc/systemd/network/10-bdp-wan-tune-ens4.link, status: changed,
                reason: keeps the keys of /usr/lib/systemd/network/99-default.link}
selected:
  description: The interfaces acted on, each with why (given, the route to a peer, the parent or member of one).
  returned: when state is present
  type: dict
  sample: {ens4.20: route to 198.18.0.2, ens4: parent of vlan ens4.20}
host:
  description: The host's settings, as the interfaces' (V(governor) and V(governor_persist)).
  returned: when state is present
  type: dict
  sample:
    governor: {before: null, after: null, status: unsupported, reason: "unsupported: no cpufreq (...)"}
files:
  description: The files written or removed (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/network/10-bdp-wan-tune-ens4.link]
summary:
  description: One line for people.
  returned: always
  type: str
  sample: "ens4: rings rx 256 -> 4096, tx 256 -> 4096, coalescing adaptive; governor unsupported; 1 file written"
commit:
  description: The commit-confirm timer of a ring change on the control connection's interface (token, method,
    unit or pid, timeout, deadline, the rings it puts back) and how it ended.
  returned: when a ring change is pending, confirmed or put back
  type: dict
  sample: {token: 20261126-161003-ab12cd, method: systemd, unit: bdp-wan-tune-nic-20261126-161003-ab12cd,
           timeout: 120, deadline: 1795709523.1, state: pending,
           changes: [{interface: ens4, before: {rx: 256, tx: 256}, after: {rx: 4096, tx: 4096}}]}
outcome:
  description: How the pending ring change ended (V(confirmed), V(restored_by_timer), V(restored_by_module),
    V(restored_by_reboot)), or null when none was pending.
  returned: when state is confirmed or reverted, or absent with a pending change
  type: str
  sample: confirmed
check_mode:
  description: Whether this call ran in check mode.
  returned: always
  type: bool
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import runlock
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.commit import Timer, check_timeout, pending_in
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.record import Record
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuplan
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import linkfile
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import settings
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic.apply import APPLIED, Changes, SETTLED, refusals, save

RECORD = 'nic_settings.json'
# The settings whose change resets the link of many NICs (a ring resize reallocates the rings: e1000e, ixgbe, ena
# and mlx5 take the link down and up).  A coalescing change writes interrupt registers and is not guarded.
RESETS = ('rings',)


class WriteError(Exception):
    """Writing the files failed, and putting back some of those written before failed too (``unrestored``)."""

    def __init__(self, error, unrestored):
        Exception.__init__(self, '%s (and putting back the files written before failed: %s)'
                           % (error, '; '.join(unrestored)))
        self.unrestored = unrestored


class NicSettings(object):
    """One call: the parameters, the record, the plan and the result."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.run_ip = mtuplan.ip_runner(module, module.get_bin_path('ip', required=True))
        self.record = Record(module, self.p['state_dir'], RECORD)
        self.result = {'changed': False, 'files': [], 'summary': '', 'check_mode': module.check_mode}
        self.diffs = []
        self.writes = []        # [(path, text or None to remove)]
        self.pending_sources = {}   # {interface: the .link file whose keys ours carries}
        self.ifnames = {}           # {ifindex: interface}
        self.persisted = {}         # {interface: the txqueuelen ours keeps in its .link file while not applicable}
        self.timer = Timer(module, self.p['state_dir'], commit.Rings())
        self.armed = None           # the commit-confirm timer armed by this call
        self.applied = False        # this call's changes are made (and not put back)
        self.undone = None          # a failure put back this call's changes: True, or False when some could not be

    def fail(self, msg):
        if self.armed:
            back = self.undone if self.undone is not None else not self.applied
            if back and self.timer.decision(self.armed, take='module') == 'module':
                self.timer.disarm(self.armed)       # the rings are as before: no timer to leave behind
                self.record.data.pop('pending', None)
                save(self.record)
            elif not back:
                msg += (' The rings of %s stay as changed, under the commit-confirm timer, which puts them back '
                        'within %d s unless state=confirmed runs (state=reverted puts them back now).'
                        % (', '.join(name for name, _b, _a in self.armed['changes']), self.p['confirm_timeout']))
        self.module.fail_json(msg=msg, **self.result)

    def qdisc_text(self, name):
        tc = self.module.get_bin_path('tc')
        if not tc:
            return None
        rc, out, _err = self.module.run_command([tc, 'qdisc', 'show', 'dev', name])
        return out if rc == 0 else None

    def options(self):
        """The option values as settings.choice() reads them; fails naming the option."""
        p = self.p
        bad = [port for port in p['transfer_ports'] if not checks.is_port(port)]
        if bad:
            self.fail('transfer_ports: %s is not accepted; expected each %s. Nothing was changed.'
                      % (', '.join('%d' % port for port in bad), checks.port_help()))
        try:
            return dict((option, settings.choice(option, p[option])) for option in settings.WORDS)
        except settings.SettingsError as exc:
            return self.fail('%s Nothing was changed.' % exc)

    def selected(self, links):
        """[(interface, reason)]: the interfaces asked for and the devices below them."""
        if not self.p['interfaces'] and not self.p['peers']:
            self.fail('Nothing to tune: set interfaces (nic_interfaces in the role) or peers (their routes name the '
                      'interfaces). Nothing was changed.')
        try:
            pairs, errors = mtuplan.requested(links, self.run_ip, self.p['interfaces'], self.p['peers'])
        except linkmtu.MtuError as exc:
            return self.fail('%s Nothing was changed.' % exc)
        for error in errors:
            self.module.warn('%s That peer\'s interface is not tuned.' % error)
        return survey.carriers(links, pairs)

    # -------------------------------------------------------------------------------------------- the plan

    def plan_interface(self, name, opts):
        """{setting: entry} for one interface from what it has now and the record: a value the driver refused
        before is 'unsupported' up front, a request the driver took as another value it still has is 'ok'."""
        record = self.record
        refused = refusals(record, name, survey.driver(name, survey.SYS_CLASS_NET))
        settled = record.data.get(SETTLED, {})
        tx_queue_len = survey.read_int(os.path.join(survey.SYS_CLASS_NET, name, 'tx_queue_len'))
        rings = settings.plan_rings(ethtool.rings(name), opts['rings'], record.original('rings:' + name),
                                    self.p['allow_lower'])
        coalescing = settings.plan_coalescing(ethtool.coalescing(name), opts['coalescing'], refused)
        txqueuelen = settings.plan_txqueuelen(name, tx_queue_len, self.qdisc_text(name), opts['txqueuelen'],
                                              record.original('txqueuelen:' + name), self.p['allow_lower'])
        self.keep_txqueuelen(name, txqueuelen, opts)
        return {
            'rings': settings.settle(settings.known_refusal(rings, refused, 'rings'), settled.get('rings:' + name)),
            'coalescing': settings.settle(coalescing, settled.get('coalescing:' + name)),
            'txqueuelen': settings.settle(txqueuelen, settled.get('txqueuelen:' + name)),
        }

    def keep_txqueuelen(self, name, planned, opts):
        """A txqueuelen our .link file holds stays there while the root qdisc does not use it (fq set at boot by
        net.core.default_qdisc): the live setting is not applicable, the file is not rewritten."""
        path = os.path.join(linkfile.LINK_DIR, linkfile.LINK_NAME % name)
        if opts['txqueuelen'] == 'keep' or planned['status'] != 'not_applicable' or \
                path not in self.record.data.get('files', {}):
            return
        values = [value for section, key, value in linkfile.parse(files.read_text(path))
                  if section == 'Link' and key == 'TransmitQueueLength']
        if values and values[-1].isdigit():
            self.persisted[name] = int(values[-1])
            planned['reason'] += '; TransmitQueueLength=%s stays in %s for when it applies' % (values[-1], path)

    def guard(self, plan, links, control=True):
        """Refuse, before any change, ring changes on any interface while a migration or an rsync daemon transfer
        runs; with ``control``, return [(name, why)] of the ring changes on the control interface (and the devices
        below it), which go under the commit-confirm timer."""
        resetting = [name for name, entries in plan.items()
                     if any(entries[key]['status'] == 'changed' for key in RESETS)]
        if not resetting:
            return []
        running = settings.migrations(self.p['state_dir'], self.module.run_command,
                                      self.module.get_bin_path('systemctl'))
        running += ['an rsync daemon transfer (%s)' % item
                    for item in settings.rsync_transfers(survey.PROC, list(settings.RSYNC_PORTS) + self.p['transfer_ports'])]
        if running:
            self.fail('Refusing to change the rings of %s while %s runs: a ring change resets the link and would '
                      'cut the transfer. Run again after it ends (migrate_action=stop stops a migration), or set '
                      'nic_rings=keep (rings=keep) for this host to go on now. Nothing was changed.'
                      % (', '.join(resetting), '; '.join(running)))
        return self.control_hits(resetting, links) if control else []

    def control_hits(self, names, links):
        """[(name, why)] of ``names`` that carry the Ansible connection or sit below the interface that does."""
        hits = []
        for control, reason in sorted(mtuplan.control_interfaces(self.run_ip, self.p['control_hosts']).items()):
            for dev, how in survey.carriers(links, [(control, reason)]):
                if dev not in names or dev in [name for name, _why in hits]:
                    continue
                if dev == control:
                    hits.append((dev, '%s %s' % (dev, reason)))
                else:
                    hits.append((dev, '%s is the %s%s, which %s' % (
                        dev, how, '' if how.endswith(' ' + control) else ' below %s' % control, reason)))
        return hits


def present(ns):
    """Plan everything, refuse what must not run, then change (a ring change on the control interface under the
    commit-confirm timer), persist and record."""
    opts = ns.options()
    settle_pending(ns)
    links = mtuplan.links(ns.run_ip)
    chosen = ns.selected(links)
    plan = dict((name, ns.plan_interface(name, opts)) for name, _reason in chosen)
    found = settings.governors(survey.CPU_DIR)
    governor, writes = settings.plan_governor(found, ns.p['governor'], survey.CPU_DIR)
    ns.result.update(interfaces=plan, selected=dict(chosen), host={'governor': governor})
    timed = ns.guard(plan, links)
    for name, why in timed:
        plan[name]['rings']['reason'] = '; '.join(part for part in (
            plan[name]['rings']['reason'], 'under the commit-confirm timer (%s)' % why) if part)
    changes = Changes(ns, plan, governor, writes, found)
    if not ns.module.check_mode and changes.pending():
        if timed:
            arm(ns, plan, [name for name, _why in timed])
        changes.apply()         # first: a setting the driver refuses is not persisted
        ns.applied = True
        if ns.armed and not any(plan[name]['rings']['status'] == 'changed' for name, _why in timed):
            # the driver refused or kept them: nothing to confirm or put back; the change ends as it is
            ns.timer.claim(ns.armed, 'module')
            end_pending(ns, ns.armed, ns.timer.end(ns.armed, 'confirmed'))
            ns.armed = None
    try:
        persist_plan(ns, plan, links, opts, governor, found)
    except Exception as exc:  # pylint: disable=broad-except
        if not ns.applied:
            raise
        changes.failed('planning the persistence files', exc)
    ns.result['diff'] = [{'before': changes.describe('before'), 'after': changes.describe('after'),
                          'before_header': 'NIC settings', 'after_header': 'NIC settings'}] + ns.diffs
    ns.result['files'] = [path for path, _text in ns.writes]
    if ns.armed:
        # the files are written when the change is confirmed: a timer that puts the rings back leaves none
        ns.record.data['pending'].update(writes=[list(item) for item in ns.writes], sources=ns.pending_sources)
        save(ns.record)
        ns.result['commit'] = ns.timer.public(ns.armed, 'pending')
    elif not ns.module.check_mode and ns.writes:
        try:
            write_files(ns)
        except Exception as exc:  # pylint: disable=broad-except
            changes.failed('writing the persistence files', exc, getattr(exc, 'unrestored', ()))
    ns.result['changed'] = changes.pending() or bool(ns.writes)
    ns.result['summary'] = changes.summary(len(ns.writes))
    if ns.armed:
        ns.result['summary'] += ('; the rings of %s are under the commit-confirm timer: unless state=confirmed '
                                 'runs within %d s, it puts them back, and the files are written on confirmation'
                                 % (', '.join(name for name, _why in timed), ns.p['confirm_timeout']))


# ------------------------------------------------------------------------------------------------ commit-confirm

def arm(ns, plan, names):
    """Arm the timer that puts back the rings of ``names`` (the control interface and the NICs below it) and
    record the pending change, before any change is made."""
    steps = [(name, plan[name]['rings']['before'], plan[name]['rings']['before']) for name in names
             if plan[name]['rings']['status'] == 'changed']
    try:
        pending = ns.timer.arm(steps, ns.p['confirm_timeout'], ns.p['commit_method'])
    except (RuntimeError, OSError) as exc:
        ns.fail('Could not arm the commit-confirm timer, so nothing was changed: %s.' % exc)
    pending['changes'] = [(name, plan[name]['rings']['before'], plan[name]['rings']['after']) for name, _b, _a in steps]
    ns.armed = pending
    ns.record.data['pending'] = pending
    save(ns.record)


def settle_pending(ns):
    """A ring change still pending from an earlier call: one already decided (by the timer, a reboot, or a
    confirmation or put-back cut short) is finished, with a warning; one still waiting for its confirmation stops
    this call."""
    pending = ns.record.data.get('pending')
    if not pending:
        return
    by = ns.timer.decision(pending)
    if by == 'waiting':
        ns.fail('The ring change %s (%s) is still waiting for its confirmation: run state=confirmed to keep it or '
                'state=reverted to put the rings back, then run again. Nothing was changed.'
                % (pending['token'], ', '.join('%s %s -> %s' % (name, settings.show(before), settings.show(after))
                                               for name, before, after in pending['changes'])))
    if ns.module.check_mode:
        ns.module.warn('The ring change %s was decided (%s) but not finished; a run outside check mode finishes it.'
                       % (pending['token'], by or 'a reboot'))
        return
    _outcome, summary = finish(ns, pending, by)
    ns.writes, ns.pending_sources = [], {}      # this run plans its own
    ns.module.warn('%s%s; this run plans again from what the host has.' % (summary[0].upper(), summary[1:]))


def finish(ns, pending, by):
    """End the pending change ``by`` its decision (commit.Timer.end): the confirmation ('confirmed': the files are
    written), the module ('module': the rings are put back now), the timer ('timer') or a reboot (None), which put
    them back.  Returns (outcome, summary)."""
    token, restores = pending['token'], ns.timer.setting.describe(pending['revert_steps'])
    ending = end_pending(ns, pending, ns.timer.end(pending, by))
    if by == 'confirmed':
        ns.writes = [tuple(item) for item in pending.get('writes', [])]
        ns.pending_sources = pending.get('sources', {})
        ns.result['files'] = [path for path, _text in ns.writes]
        if ns.writes:
            try:
                write_files(ns)
            except Exception as exc:  # pylint: disable=broad-except
                ns.fail('The ring change %s is confirmed and its rings stay, but writing its files failed: %s. Run '
                        'again to write them.' % (token, exc))
        return 'confirmed', 'the ring change %s is confirmed; %d file(s) written' % (token, len(ns.writes))
    if ending['errors']:
        ns.fail('The ring change %s was not confirmed, and putting back %s failed: %s. Those rings stay as the '
                'change set them, recorded as this module\'s own: state=absent puts back the original.'
                % (token, restores, '; '.join(ending['errors'])))
    summary = 'the ring change %s was not confirmed; %sput back %s%s' % (
        token, {'module': '', 'timer': 'the commit-confirm timer '}.get(by, 'a reboot '), restores,
        {'module': ' now', 'timer': ' at %s' % (time.strftime('%F %T', time.localtime(ending['at']))
                                                if ending['at'] else 'an unknown time')}.get(by, ''))
    if ending['failed']:
        summary += (' (but could not put back the rings of %s, which stay as the change set them, recorded as this '
                    'module\'s own: state=absent puts back the original)' % ', '.join(ending['failed']))
    return ending['outcome'], summary


def end_pending(ns, pending, ending):
    """Forget the pending change and save the record.  The interfaces the ``ending`` put back are at the rings from
    before the change again, so this module's own value is that one again (a rollback then puts back the original
    and leaves no value someone else set).  Returns the ending."""
    applied = ns.record.data.setdefault(APPLIED, {})
    for name, before, _after in pending['changes']:
        if name in ending['restored']:
            applied['rings:' + name] = before
            ns.record.data.get(SETTLED, {}).pop('rings:' + name, None)
    ns.record.data.pop('pending', None)
    save(ns.record)
    return ending


def pending_change(ns, nothing, would):
    """The pending ring change as common/commit.py pending_in returns it (None: none, or check mode)."""
    ns.result['outcome'] = None
    return pending_in(ns.timer, ns.result, ns.record.data.get('pending'), nothing, would)


def confirmed(ns):
    """Disarm the timer of the pending ring change and write its files; too late if the timer decided."""
    pending = pending_change(ns, 'no pending ring change to confirm', 'would confirm the ring change %s')
    if not pending:
        return
    outcome, summary = finish(ns, pending, ns.timer.decision(pending, take='confirmed'))
    ns.result.update(changed=True, outcome=outcome, summary=summary)
    ns.result['commit']['state'] = outcome
    if outcome != 'confirmed':
        ns.fail('Too late: %s, before this confirmation (the timer was armed for %d s); nothing was persisted. If the '
                'control connection was fine, raise confirm_timeout (nic_confirm_timeout in the role).'
                % (summary, pending['timeout']))


def reverted(ns):
    """Put the rings of the pending change back now, or report that its timer (or a reboot) did."""
    pending = pending_change(ns, 'no pending ring change', 'would put back the rings of change %s')
    if not pending:
        return
    outcome, summary = finish(ns, pending, ns.timer.decision(pending, take='module'))
    ns.result.update(changed=True, outcome=outcome, summary=summary)
    ns.result['commit']['state'] = outcome


# ------------------------------------------------------------------------------------------------ persistence

def udev_support(ns):
    """(systemd version, None) where systemd-udevd applies .link files, else (None, the reason)."""
    udevadm = ns.module.get_bin_path('udevadm')
    if not udevadm or not os.path.exists(linkfile.UDEV_CONTROL):
        return None, ('systemd-udevd is not running here (no %s or no udevadm): the settings hold until the next '
                      'boot' % linkfile.UDEV_CONTROL)
    rc, out, _err = ns.module.run_command([udevadm, '--version'])
    version = linkfile.systemd_version(out) if rc == 0 else None
    if version is None:
        return None, 'udevadm --version did not tell the systemd version'
    return version, None


def udev_info(ns, ifindex):
    """``udevadm info`` of the interface with ``ifindex``, when /run/udev/data cannot be read."""
    rc, out, _err = ns.module.run_command([ns.module.get_bin_path('udevadm'), 'info', '--query=property',
                                           '--path=/sys/class/net/%s' % ns.ifnames.get(ifindex, '')])
    return out if rc == 0 else None


def link_settings(ns, name, entries, opts):
    """The values of one interface to persist: the ones this module sets (not kept, not refused by the driver)."""
    out = {}
    for key in ('rings', 'txqueuelen'):
        entry = entries[key]
        if opts[key] != 'keep' and entry['status'] in ('changed', 'ok', 'kept_higher') and entry['after'] is not None:
            out[key] = entry['after']
    if name in ns.persisted:
        out['txqueuelen'] = ns.persisted[name]
    entry = entries['coalescing']
    if opts['coalescing'] != 'keep' and entry['after'] is not None:
        refused = refusals(ns.record, name, survey.driver(name, survey.SYS_CLASS_NET))
        fields = dict((field, entry['after'][field]) for field, _value in settings.wanted_coalescing(opts['coalescing'])
                      if 'coalescing.' + field not in refused)
        if fields:
            out['coalescing'] = fields
    return out


def persist_plan(ns, plan, links, opts, governor, found):
    """Plan the .link file per interface and the governor's tmpfiles.d file (ns.writes, ns.diffs)."""
    version, why = udev_support(ns) if ns.p['persist'] else (None, 'persist is false')
    ns.ifnames = dict((survey.read_int(os.path.join(survey.SYS_CLASS_NET, name, 'ifindex')), name) for name in plan)
    for name, entries in plan.items():
        path = os.path.join(linkfile.LINK_DIR, linkfile.LINK_NAME % name)
        if version is None:
            entries['persist'] = without_file(ns, path, why, 'unsupported' if ns.p['persist'] else 'ok')
            continue
        entries['persist'] = link_entry(ns, name, links, link_settings(ns, name, entries, opts), version, path)
    ns.result['host']['governor_persist'] = governor_entry(ns, governor, found)


def without_file(ns, path, reason, status):
    """The persist entry where no file of ours is wanted: one an earlier run wrote is taken back ('changed')."""
    if plan_file(ns, path, None) == 'changed':
        return settings.entry(path, None, '%s; the file of an earlier run is taken back' % reason, 'changed')
    return settings.entry(None, None, reason, status)


def governor_entry(ns, governor, found):
    """The governor's persist entry, and its tmpfiles.d file planned.  Its line writes every CPU's governor, so it
    is written only where every CPU offers performance."""
    path = os.path.join(linkfile.TMPFILES_DIR, linkfile.TMPFILES_NAME)
    if not ns.p['persist']:
        return without_file(ns, path, 'persist is false', 'ok')
    if ns.p['governor'] == 'keep' or governor['status'] not in ('changed', 'ok'):
        return without_file(ns, path, 'the governor is not set here', 'not_applicable')
    missing = len([1 for _value, offered in found.values() if not offered])
    if missing:
        return without_file(ns, path, '%d of %d CPU(s) do not offer "performance": the tmpfiles.d line, which '
                            'writes every CPU, would fail at boot; the governor holds until the next boot'
                            % (missing, len(found)), 'unsupported')
    if not ns.module.get_bin_path('systemd-tmpfiles'):
        return without_file(ns, path, 'systemd-tmpfiles is not installed: the governor holds until the next boot',
                            'unsupported')
    before = path if os.path.exists(path) else None
    return settings.entry(before, path, status=plan_file(ns, path, linkfile.governor_text(ns.p['header'])))


def link_source(ns, name, path):
    """(the .link file whose keys ours carries, None), or (None, why ours must not be written): udev does not say
    which file it applied, an earlier file wins, or drop-ins of the applied file would be lost."""
    ifindex = survey.read_int(os.path.join(survey.SYS_CLASS_NET, name, 'ifindex'))
    applied = linkfile.applied(ifindex, linkfile.UDEV_DATA, lambda index: udev_info(ns, index))
    if applied is None:
        return None, ('udev does not say which .link file names this interface (no ID_NET_LINK_FILE); writing ours '
                      'could drop its naming policy')
    if applied != path and linkfile.sorts_before(applied, os.path.basename(path)):
        return None, ('udev applies %s, which sorts before %s and so wins; persist these settings there'
                      % (applied, os.path.basename(path)))
    source = ns.record.data.get('link_source', {}).get(name, applied) if applied == path else applied
    dropins = linkfile.dropins(source) if source else []
    if dropins:
        return None, ('%s has drop-ins (%s), which would not apply to ours, which replaces it: persist these '
                      'settings in a drop-in of your own' % (source, ', '.join(dropins)))
    return source, None


def link_entry(ns, name, links, values, version, path):
    """The persist entry of one interface, and its file planned."""
    if survey.driver(name, survey.SYS_CLASS_NET) is None:
        return without_file(ns, path, 'a virtual device (%s): its own configuration makes it at boot'
                            % (links.get(name, {}).get('kind') or 'no driver'), 'not_applicable')
    if not values:
        return without_file(ns, path, 'nothing of this module to persist', 'ok')
    source, refusal = link_source(ns, name, path)
    if refusal:
        return settings.entry(None, None, refusal, 'unsupported')       # nothing written, nothing taken back
    ours, skipped = linkfile.keys(values, version)
    items = linkfile.kept(linkfile.parse(files.read_text(source) if source else ''), [key for key, _v in ours])
    permanent = ethtool.permanent_address(name)
    match = [('PermanentMACAddress', permanent)] if permanent else [
        ('MACAddress', (files.read_text(os.path.join(survey.SYS_CLASS_NET, name, 'address')) or '').strip()),
        ('Driver', survey.driver(name, survey.SYS_CLASS_NET))]
    text = linkfile.render(ns.p['header'], name, match, items, ours, source)
    ns.pending_sources[name] = source
    reasons = ['keeps the keys of %s' % source]
    if source != path and os.path.basename(source) not in linkfile.SHIPPED:
        reasons.append('%s is an administrator\'s file: its keys are kept in ours' % source)
    if skipped:
        reasons.append('systemd %d does not know %s' % (version, ', '.join(skipped)))
    before = path if os.path.exists(path) else None
    return settings.entry(before, path, '; '.join(reasons), plan_file(ns, path, text))


def plan_file(ns, path, text):
    """Plan ``path`` to hold ``text`` (None: not ours any more: put back what was there, if we wrote it);
    'changed' or 'ok'."""
    old = files.read_text(path)
    recorded = ns.record.data.get('files', {}).get(path)
    if text is None:
        if recorded is None:
            return 'ok'
        text = recorded.get('content')
    if text == old:
        return 'ok'
    ns.writes.append((path, text))
    ns.diffs.append({'before': old or '', 'after': text or '', 'before_header': path, 'after_header': path})
    return 'changed'


def write_files(ns):
    """Write (atomically) or remove the planned files, recording first what each replaces; a failure puts back
    the files written before it and raises it (a WriteError naming also those that could not be put back)."""
    known = ns.record.data.setdefault('files', {})
    for path, _text in ns.writes:
        known.setdefault(path, {'content': files.read_text(path)})
    ns.record.data.setdefault('link_source', {}).update(ns.pending_sources)
    ns.record.save()
    done = []
    try:
        for path, text in ns.writes:
            old = files.read_text(path)
            put_file(ns, path, text)
            done.append((path, old))
    except Exception as exc:  # pylint: disable=broad-except
        unrestored = []
        for path, old in reversed(done):
            try:
                put_file(ns, path, old)
            except Exception as error:  # pylint: disable=broad-except
                unrestored.append('%s: %s' % (path, error))
        if unrestored:
            raise WriteError(exc, unrestored)
        raise
    for path, text in ns.writes:
        if text == known[path]['content']:
            del known[path]         # back as it was: nothing to restore any more
    save(ns.record)


def put_file(ns, path, text):
    """``path`` holding ``text`` (written atomically), or removed when ``text`` is None."""
    if text is None:
        if os.path.lexists(path):
            os.unlink(path)
    else:
        files.write_atomic(ns.module, path, text)


# ------------------------------------------------------------------------------------------------ the other states

def ring_changes(names):
    """A plan of ring changes on ``names``, for the guard."""
    return dict((name, dict((key, {'status': 'changed'}) for key in RESETS)) for name in names)


def absent(ns):
    """Put back every recorded value and file, then forget the record.  A pending ring change is put back first.
    The rings the NIC had before are a known-good state (the timer would put them back too), so they need no timer;
    only a running transfer stops them."""
    pending = ns.record.data.get('pending')
    if pending:
        ns.guard(ring_changes(name for name, _b, _a in pending['changes']), mtuplan.links(ns.run_ip), control=False)
        if not ns.module.check_mode:
            reverted(ns)
    changes = Changes(ns, {}, None, {}, {})
    steps = changes.restore_steps()
    if any(step[1] in RESETS for step in steps):
        ns.guard(ring_changes(step[0] for step in steps if step[1] in RESETS), mtuplan.links(ns.run_ip),
                 control=False)
    for path, saved in sorted(ns.record.data.get('files', {}).items()):
        if files.read_text(path) != saved.get('content'):
            ns.writes.append((path, saved.get('content')))
            ns.diffs.append({'before': files.read_text(path) or '', 'after': saved.get('content') or '',
                             'before_header': path, 'after_header': path})
    ns.result['files'] = [path for path, _text in ns.writes]
    log = ns.timer.log_path     # the timer's log goes with the record
    ns.result['changed'] = bool(steps or ns.writes or ns.record.data or os.path.exists(log))
    ns.result['diff'] = [{'before': changes.describe_steps(steps, 'before'),
                          'after': changes.describe_steps(steps, 'after'),
                          'before_header': 'NIC settings', 'after_header': 'NIC settings'}] + ns.diffs
    if ns.module.check_mode:
        ns.result['summary'] = 'would put back %d setting(s) and %d file(s)' % (len(steps), len(ns.writes))
        return
    changes.restore(steps)
    for path, text in ns.writes:
        put_file(ns, path, text)
    put_file(ns, log, None)
    ns.record.drop()
    ns.result['summary'] = 'put back %d setting(s) and %d file(s); the record is gone' % (len(steps), len(ns.writes))


STATES = {'present': present, 'confirmed': confirmed, 'reverted': reverted, 'absent': absent}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', default='present', choices=['present', 'confirmed', 'reverted', 'absent']),
            interfaces=dict(type='list', elements='str', default=[]),
            peers=dict(type='list', elements='str', default=[]),
            rings=dict(type='str', default='max'),
            txqueuelen=dict(type='str', default='10000'),
            coalescing=dict(type='str', default='adaptive'),
            governor=dict(type='str', default='performance', choices=['performance', 'keep']),
            persist=dict(type='bool', default=True),
            header=dict(type='str', default='Managed by bdp.wan_tune'),
            allow_lower=dict(type='bool', default=False),
            control_hosts=dict(type='list', elements='str', default=[]),
            transfer_ports=dict(type='list', elements='int', default=[]),
            confirm_timeout=dict(type='int', default=120),
            commit_method=dict(type='str', default='auto', choices=['auto', 'systemd', 'process']),
            state_dir=dict(type='path', default=files.STATE_DIR),
        ),
        supports_check_mode=True,
    )
    check_timeout(module)
    with runlock.held(module, module.params['state_dir'], 'nic_settings %s' % module.params['state']):
        ns = NicSettings(module)
        try:
            STATES[module.params['state']](ns)
        except (RuntimeError, OSError) as exc:
            ns.fail('%s' % exc)
        module.exit_json(**ns.result)


if __name__ == '__main__':
    main()
