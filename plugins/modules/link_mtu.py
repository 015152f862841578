#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: link_mtu
short_description: Raise interface MTUs with a path proof and a commit-confirm timer that restores them on its own
version_added: 0.2.0
description:
  - Sets the MTU of network interfaces at runtime, named in O(interfaces) or found as the interfaces that route to
    O(peers) (C(ip route get)). Persistence is the job of M(bdp.wan_tune.link_mtu_persist), after the proof.
  - "Preflight, before anything changes: the MTU range, that every interface exists, that every peer is an address
    or resolves, the NIC's C(max_mtu) (C(ip -d link)), VLAN and macvlan parents (raised first, or refused with
    O(raise_parents=false)), bonds and teams (the master changes, the members follow), bridge ports (raised before
    the bridge), cloud limits detected from DMI (AWS 9001, Google Cloud 8896, Azure 3900 or 9000 with MANA), and
    interfaces that carry the Ansible control connection or a default route, which are refused unless
    O(allow_control_interface=true). A limit refuses the change, or clamps it with O(clamp=true)."
  - Before the change every peer must answer a small ICMP echo and a probe at the current MTU, so a path that
    is already broken is not blamed on the change.
  - "Commit-confirm: the previous MTUs are recorded and a timer on the host is armed B(before) the change (a
    transient systemd timer where systemd runs, else a detached C(sleep) process with a pid file). Unless
    O(state=confirmed) runs within O(confirm_timeout) seconds, the timer restores the previous MTUs by itself, so a
    change that cuts the control connection undoes itself."
  - "Path proof, per peer: a don't-fragment ICMP echo at the full size (MTU - 28 bytes of payload for IPv4, MTU - 48
    for IPv6), then a TCP exchange with the peer's one-off listener (started there with O(listen=true)) whose
    TCP_INFO must show full-size segments in both directions. On failure the module restores the previous MTUs,
    disarms the timer and fails, naming the peer, the largest size that got through and the smallest that did not
    (bisection)."
  - With a pending (unconfirmed) change made by an earlier call with O(prove=false), O(state=present) proves that
    change; this lets a play change every host first and prove afterwards, so peers are at the new MTU when probed.
  - When nothing needs to change, O(verify=true) sends one full-size DF probe per peer (read-only) and fails if the
    path no longer carries it.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  state:
    description:
      - V(present) plans, checks, arms the timer, changes and (with O(prove=true)) proves.
      - V(confirmed) disarms the timer of the pending change and records it as committed; fails if the timer has
        already restored the previous MTUs. A decision taken by a confirmation or a V(reverted) cut short is finished
        by the next call of any state.
      - V(reverted) undoes a pending change now (or reports that the timer already did); used after the control
        connection was lost.
      - V(absent) restores the MTUs recorded before the first change (interfaces someone else changed since are
        left alone) and forgets them.
    type: str
    choices: [present, confirmed, reverted, absent]
    default: present
  mtu:
    description: The MTU to set, 576 to 65535. Required with O(state=present).
    type: int
  interfaces:
    description: Interfaces to change. Empty means the interfaces that route to O(peers).
    type: list
    elements: str
    default: []
  peers:
    description:
      - Addresses or host names to prove the path to. Required when O(interfaces) is empty.
      - Also the only sources the O(listen) listener accepts.
    type: list
    elements: str
    default: []
  prove:
    description: Prove the path to every peer in this call (a change made now, or a pending one).
    type: bool
    default: true
  verify:
    description: When nothing changes, send one full-size DF probe per peer and fail if it gets no answer.
    type: bool
    default: true
  listen:
    description: Start a one-off TCP echo listener on O(proof_port) for the peers' proofs; it ends with
      O(state=confirmed) or after O(confirm_timeout) seconds.
    type: bool
    default: false
  tcp_proof:
    description:
      - V(auto) runs the TCP exchange where a peer's listener answers and notes when none does; V(required) fails
        the proof without it; V(off) proves with ICMP only.
    type: str
    choices: [auto, required, 'off']
    default: auto
  proof_port:
    description: TCP port of the one-off listener.
    type: int
    default: 45219
  probe_count:
    description: ICMP echoes per probe size; a size passes when one answer comes back.
    type: int
    default: 3
  confirm_timeout:
    description: Seconds after arming before the timer restores the previous MTUs unless confirmed.
    type: int
    default: 180
  allow_control_interface:
    description: Allow changing interfaces that carry the Ansible control connection or a default route.
    type: bool
    default: false
  clamp:
    description: Lower the MTU to the limit (NIC, parent, cloud) instead of refusing.
    type: bool
    default: false
  raise_parents:
    description: Raise a VLAN's or macvlan's parent when it is below the MTU.
    type: bool
    default: true
  allow_lower:
    description: Lower interfaces that already have a larger MTU.
    type: bool
    default: false
  platform:
    description: Cloud platform for its MTU limit; V(auto) detects it from DMI, V(none) applies no platform limit.
    type: str
    choices: [auto, none, aws, gcp, azure, azure-mana]
    default: auto
  platform_max_mtu:
    description: A platform limit of your own; overrides the detected one.
    type: int
  state_dir:
    description: Where the MTUs before the first change and the pending change are recorded.
extends_documentation_fragment:
  - bdp.wan_tune.commit_confirm
  - bdp.wan_tune.state_dir
  - bdp.wan_tune.attributes
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Plans and checks; sends no probes, arms nothing, changes nothing.
  diff_mode:
    details: Shows the MTU per interface before and after.
notes:
  - Needs root (C(ip link set), raw ICMP sockets) and C(ip) from iproute2.
  - Lowering an MTU is always safe for reachability, so O(state=absent) and the restores need no timer.
seealso:
  - module: bdp.wan_tune.link_mtu_persist
  - name: Jumbo frames in bdp.wan_tune
    description: When jumbo frames help, cloud limits, the proof and the automatic revert.
    link: https://example.invalid/bdp/wan_tune/docs/jumbo.md
"""

EXAMPLES = r"""
- name: Raise the interface that routes to the peer to 9000, prove the path, leave the timer armed
  bdp.wan_tune.link_mtu:
    mtu: 9000
    peers: [198.18.0.2]
  register: mtu_change

- name: Confirm over a fresh control connection (the timer restores the MTU if this never arrives)
  bdp.wan_tune.link_mtu:
    state: confirmed

- name: Two-phase, for several hosts that are each other's peers - change everywhere, then prove
  bdp.wan_tune.link_mtu:
    mtu: 9000
    peers: "{{ my_peers }}"
    prove: false
    listen: true

- name: Prove the pending change (restores and fails if a peer does not get full-size packets)
  bdp.wan_tune.link_mtu:
    mtu: 9000
    peers: "{{ my_peers }}"

- name: Undo
  bdp.wan_tune.link_mtu:
    state: absent
"""

RETURN = r"""
interfaces:
  description: Per interface, the MTU before and after and why it is in the plan.
  returned: when state is present
  type: dict
  sample:
    wan0: {before: 1500, after: 9000, status: change, role: requested, reason: "route to 198.18.0.2",
           limit: 65535, limit_source: "wan0 max_mtu 65535 (ip -d link)", kind: tun}
peers:
  description: Per peer, its address, the interface that routes to it and the proof result.
  returned: when state is present and peers are given
  type: list
  elements: dict
  sample:
    - peer: 198.18.0.2
      address: 198.18.0.2
      interface: wan0
      ok: true
      summary: "9000-byte DF ICMP packets (payload 8972) answered in 20.4 ms; TCP exchanged 262144 bytes ..."
      icmp: {payload: 8972, packet: 9000, received: 1, sent: 1, rtt_ms: 20.4}
      tcp: {ran: true, ok: true, snd_mss: 8948, rcv_mss: 8948, expected_mss: 8948, total_retrans: 0}
commit:
  description: The commit-confirm timer of the change (token, method, unit or pid, timeout, deadline, the MTUs it
    restores) and how it ended (V(state), pending or an O(state=reverted) outcome).
  returned: when a change was made, confirmed or reverted
  type: dict
  sample: {token: 20261122-031000-ab12cd, method: systemd, unit: bdp-wan-tune-mtu-20261122-031000-ab12cd,
           deadline: 1795000000.0, timeout: 180, state: pending, restores: wan0=1500,
           changes: [{interface: wan0, before: 1500, after: 9000}]}
platform:
  description: The cloud platform detected from DMI and its MTU limit, or null.
  returned: when state is present
  type: dict
  sample: {platform: aws, max_mtu: 9001, evidence: "DMI sys_vendor 'Amazon EC2'"}
would_change:
  description: Whether the plan changes any MTU (true also in check mode, where nothing changes).
  returned: when state is present
  type: bool
  sample: true
persist:
  description: The interfaces and MTUs to persist after the proof (changed or already at the MTU; members that
    follow a bond and interfaces kept higher are left out). Feed it to M(bdp.wan_tune.link_mtu_persist).
  returned: when state is present
  type: list
  elements: dict
  sample: [{name: wan0, mtu: 9000}]
protected:
  description: Interfaces left alone unless allow_control_interface is set, with the reason.
  returned: when state is present
  type: dict
  sample: {eth0: "carries the default route"}
tcp_mtu_probing:
  description: The live net.ipv4.tcp_mtu_probing (1 or 2 turns on black-hole detection for TCP).
  returned: when state is present
  type: str
  sample: "1"
restored:
  description: Interfaces set back to their earlier MTU by this call.
  returned: when state is reverted or absent, or a proof failed
  type: dict
  sample: {wan0: 1500}
outcome:
  description: How the pending change ended (V(confirmed), V(restored_by_timer), V(restored_by_module),
    V(restored_by_reboot)), or null when none was pending (the last one's with O(state=reverted)).
  returned: when state is confirmed or reverted
  type: str
  sample: restored_by_timer
record:
  description: The timer's line of the revert log (C(jumbo_mtu-reverts.log)) when the timer ended the change.
  returned: when state is reverted and a change was pending
  type: dict
  sample: {token: 20261122-031000-ab12cd, by: timer, at: 1795000000, restored: wan0=1500, rc: 0, failed: ''}
summary:
  description: One paragraph a human reads, saying what changed, what was proven and what was restored.
  returned: always
  type: str
check_mode:
  description: Whether this call ran in check mode (also when only the task was, with C(check_mode) or C(apply)).
  returned: always
  type: bool
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import runlock
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.commit import Timer, check_timeout, pending_in
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.record import Record
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuplan
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuproof
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import sysctl

STATE_FILE = 'jumbo_mtu.json'


class LinkMtu(object):
    """One call of the module: its parameters, its result, the host's links, the record, the timer, the listener.

    The states are the functions present, confirmed, reverted and absent below; the pieces are in module_utils:
    mtuplan (what the host looks like), linkmtu.plan (what to change), common/commit.py (the commit-confirm timer,
    with linkmtu.MtuSetting) and mtuproof (the proofs and the one-off listener).
    """

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.run_ip = mtuplan.ip_runner(module, module.get_bin_path('ip', required=True))
        self.record = Record(module, self.p['state_dir'], STATE_FILE)
        self.result = {'changed': False, 'summary': '', 'check_mode': module.check_mode}
        self.timer = Timer(module, self.p['state_dir'], linkmtu.MtuSetting(self.run_ip))
        self.listener = mtuproof.Listener(self.p['proof_port'], self.p['confirm_timeout'] + 60)

    def fail(self, msg, **extra):
        self.result.update(extra)
        self.result['summary'] = msg
        self.module.fail_json(msg=msg, **self.result)

    def warn(self, text):
        self.module.warn(text)

    @property
    def check_mode(self):
        return self.module.check_mode

    def links(self):
        return mtuplan.links(self.run_ip)

    def load_state(self):
        """The record as on disk now (lm.record): the originals under "original", and the pending change, what was
        committed, the order of the changes and the history beside them."""
        self.record = Record(self.module, self.p['state_dir'], STATE_FILE)
        return self.record.data

    def save_state(self, state):
        self.record.data = state
        self.record.save()

    def drop_state(self):
        self.record.drop()

    def start_listener(self, peers):
        self.result['listener'] = self.listener.start(peers)

    def close(self, state, pending, by, steps=None):
        """End ``pending`` as decided ``by`` (commit.Timer.end) and record it: a confirmed change's MTUs are
        committed; a change put back forgets the originals it recorded (not those of MTUs committed before, nor of
        MTUs it could not put back, which state=absent still restores).  Saves; returns the ending."""
        ending = self.timer.end(pending, by, steps)
        if ending['outcome'] == 'confirmed':
            links = self.links()
            ending['drift'] = ['%s is %s' % (name, links.get(name, {}).get('mtu'))
                               for name, _b, after in pending['changes'] if links.get(name, {}).get('mtu') != after]
            committed, order = state.setdefault('committed', {}), state.setdefault('order', [])
            for name, _before, after in pending['changes']:
                committed[name] = after
                order.extend([name] if name not in order else [])
            for name in pending.get('follows', {}):
                committed[name] = links.get(name, {}).get('mtu')
        else:
            for name in [step[0] for step in pending['changes']] + list(pending.get('follows', {})):
                if name not in state.get('committed', {}) and name not in ending['failed']:
                    state.get('original', {}).pop(name, None)
        state.setdefault('history', []).append({'token': pending['token'], 'outcome': ending['outcome'],
                                                'at': int(time.time())})
        state['history'] = state['history'][-20:]
        state['pending'] = None
        self.save_state(state)
        return ending


def ended(pending, ending):
    """How ``pending`` ended, in one line."""
    token, restored = pending['token'], _steps(ending['restored'])
    if ending['outcome'] == 'confirmed':
        return 'confirmed change %s (%s); the timer is disarmed' % (token, _changes(pending))
    text = 'change %s was not confirmed; %s' % (token, {
        'restored_by_module': 'restored %s now' % restored,
        'restored_by_timer': 'the commit-confirm timer restored %s at %s' % (restored, _at(ending)),
        'restored_by_reboot': 'the host has rebooted since, which restored %s' % restored}[ending['outcome']])
    if ending['failed']:
        text += ' (could not restore %s%s)' % (' '.join(ending['failed']), ': %s' % '; '.join(ending['errors'])
                                               if ending['errors'] else '')
    return text


def _at(ending):
    return time.strftime('%F %T', time.localtime(ending['at'])) if ending['at'] else 'an unknown time'


def _steps(items):
    return ', '.join('%s %s' % item for item in sorted(items.items()))


def _changes(commit):
    return ', '.join('%s %d -> %d' % tuple(step) for step in commit['changes'])


# ---------------------------------------------------------------------------------------------- state=present

def plan(lm):
    """Read the host and plan the change (read-only); fails, changing nothing, on any error."""
    p = lm.p
    try:
        target = linkmtu.parse_mtu(p['mtu'], 'mtu')
        for name in p['interfaces']:
            linkmtu.check_ifname(name)
    except linkmtu.MtuError as exc:
        lm.fail('%s Nothing was changed.' % exc)
    if not p['interfaces'] and not p['peers']:
        lm.fail('Give interfaces, peers or both: with neither there is nothing to change or prove. Nothing '
                'was changed.')
    peers, errors = mtuplan.resolve_peers(lm.run_ip, p['peers'])
    links = lm.links()
    requested = [(name, 'named in interfaces') for name in p['interfaces']]
    if not requested:
        for peer in peers:
            if peer['interface'] not in [item[0] for item in requested]:
                requested.append((peer['interface'], 'route to %s' % peer['peer']))
    protected = mtuplan.protected(lm.run_ip, p['control_hosts'])
    platform = mtuplan.platform(p['platform'], p['platform_max_mtu'])
    change = linkmtu.plan(links, requested, target, protected=protected, platform=platform, clamp=p['clamp'],
                          raise_parents=p['raise_parents'], allow_lower=p['allow_lower'],
                          allow_protected=p['allow_control_interface'])
    errors = errors + change['errors']
    lm.result.update(interfaces=change['entries'], platform=platform, protected=protected,
                     peers=[dict((k, v) for k, v in peer.items()) for peer in peers],
                     tcp_mtu_probing=sysctl.read_live('net.ipv4.tcp_mtu_probing'))
    if errors:
        lm.fail('%s Nothing was changed.' % ' '.join(errors))
    for text in change['warnings']:
        lm.warn(text)
    lm.result['notes'] = change['notes']
    lm.result['would_change'] = change['changed']
    lm.result['persist'] = [{'name': name, 'mtu': entry['after']} for name, entry in change['entries'].items()
                            if entry['status'] in ('change', 'ok')]
    lm.result['diff'] = {'before': linkmtu.diff_text(change['entries'], 'before'),
                         'after': linkmtu.diff_text(change['entries'], 'after'),
                         'before_header': 'live MTU (ip link)', 'after_header': 'live MTU (ip link)'}
    if lm.result['tcp_mtu_probing'] in ('0', None) and change['changed']:
        lm.warn('net.ipv4.tcp_mtu_probing is %s: TCP has no black-hole detection if a hop drops large '
                'segments later. bdp.wan_tune.tcp_buffers sets it to 1 in its sysctl.d file; run it too.'
                % lm.result['tcp_mtu_probing'])
    return change, peers, links


def present(lm):
    change, peers, links = plan(lm)
    state = lm.load_state()
    pending = state.get('pending')
    by = lm.timer.decision(pending) if pending else 'waiting'      # read only: takes no decision
    if by != 'waiting' and lm.check_mode:
        # the role plans in check mode first: an ended change does not stop that plan, a real run finishes it
        first = (' (it puts back %s first)' % lm.timer.setting.describe(pending['revert_steps'])
                 if by == 'module' else '')
        lm.warn('Change %s was decided (%s) but not finished; a run outside check mode finishes it%s, and this check '
                'plans from the MTUs the host has now.' % (pending['token'], by or 'a reboot', first))
        pending = None
    elif by != 'waiting':
        # an earlier change already ended (its timer fired, the host rebooted) or was decided by a call cut short
        ending = lm.close(state, pending, by)
        text = ended(pending, ending)
        lm.warn('%s%s, before this run%s.' % (text[0].upper(), text[1:], '' if ending['outcome'] == 'confirmed'
                                              else '; it is not in effect'))
        pending = None
        if ending['outcome'] == 'restored_by_module':
            change, peers, links = plan(lm)         # restored just now: plan again from the MTUs the host has
    if pending and change['changed']:
        lm.fail('Change %s (%s) is still waiting for its confirmation, and this call asks for another one. '
                'Confirm it (state=confirmed), undo it (state=reverted), or let its timer restore it at %s. '
                'Nothing was changed.'
                % (pending['token'], ', '.join('%s %s -> %s' % tuple(step) for step in pending['changes']),
                   time.strftime('%H:%M:%S', time.localtime(pending['deadline']))))
    if pending:
        return prove_pending(lm, state, pending, peers, links)
    if not change['changed']:
        return unchanged(lm, peers, links)
    lm.result['changed'] = True
    if lm.check_mode:
        lm.result['summary'] = 'would set %s' % ', '.join('%s %d -> %d' % step for step in change['steps'])
        return None
    return apply(lm, state, change, peers, links)


def apply(lm, state, change, peers, links):
    """Check the path at the current MTU, arm the timer, set the MTUs, read them back, and prove."""
    p = lm.p
    before = dict((name, links[name]['mtu']) for name in links)
    # the path must work now at the current MTU, or the proof would blame the change
    baseline = []
    for peer in peers:
        mtu = before.get(peer['interface'])
        res = mtuproof.prove(peer['address'], peer['family'], mtu, None, tcp='off', count=p['probe_count'])
        if not res['ok']:
            baseline.append('%s (%s via %s) at the current MTU %s: %s' % (peer['peer'], peer['address'],
                                                                          peer['interface'], mtu, res['summary']))
    if baseline:
        lm.fail('The path is not healthy before the change, so it cannot be proven after it: %s. Nothing was '
                'changed.' % ' '.join(baseline))
    try:
        commit = lm.timer.arm(change['revert_steps'], p['confirm_timeout'], p['commit_method'])
    except (RuntimeError, OSError) as exc:
        lm.fail('Could not arm the commit-confirm timer, so the MTU was not changed: %s.' % exc)
    commit['changes'] = change['steps']
    commit['follows'] = dict((name, entry['before']) for name, entry in change['entries'].items()
                             if entry['status'] == 'follows')
    commit['peers'] = [peer['peer'] for peer in peers]
    for name, entry in change['entries'].items():
        if entry['status'] in ('change', 'follows'):
            lm.record.remember(name, entry['before'])
    state['pending'] = commit
    lm.save_state(state)
    lm.result['commit'] = lm.timer.public(commit, 'pending')
    done = []
    try:
        for name, _current, mtu in change['steps']:
            done.append(name)
            lm.timer.setting.set(name, mtu)
        after = lm.links()
        wrong = ['%s is %s, wanted %s' % (name, after.get(name, {}).get('mtu'), entry['after'])
                 for name, entry in change['entries'].items()
                 if entry['status'] in ('change', 'follows') and after.get(name, {}).get('mtu') != entry['after']]
        if wrong:
            raise RuntimeError('the kernel did not take the MTU: %s' % '; '.join(wrong))
    except RuntimeError as exc:
        lm.timer.claim(commit, 'module')
        ending = lm.close(state, commit, 'module', [step for step in change['revert_steps'] if step[0] in done])
        lm.fail('Setting the MTU failed and the previous MTUs were restored (%s): %s.%s'
                % (_steps(ending['restored']) or 'nothing to restore', exc, ' Restore errors: %s'
                   % '; '.join(ending['errors']) if ending['errors'] else ''), restored=ending['restored'])
    if p['listen']:
        lm.start_listener(peers)
    lm.result['summary'] = 'set %s; commit-confirm timer %s restores it at %s unless confirmed' % (
        ', '.join('%s %d -> %d' % step for step in change['steps']),
        commit.get('unit') or 'pid %s' % commit.get('pid'),
        time.strftime('%H:%M:%S', time.localtime(commit['deadline'])))
    if p['prove'] and peers:
        check_proof(lm, state, commit, peers, after, before)


def prove_pending(lm, state, pending, peers, links):
    """Prove a change an earlier call made (the play changed every host first)."""
    lm.result['commit'] = lm.timer.public(pending, 'pending')
    wrong = []
    for name, _before, after in pending['changes']:
        if links.get(name, {}).get('mtu') != after:
            wrong.append('%s is %s, the pending change set %s' % (name, links.get(name, {}).get('mtu'), after))
    if lm.p['listen'] and not lm.check_mode:
        lm.start_listener(peers)
    if wrong:
        lm.result['summary'] = 'pending change %s no longer matches the host: %s' % (pending['token'],
                                                                                     '; '.join(wrong))
        if not lm.check_mode:
            lm.fail(lm.result['summary'] + '. Run state=reverted to restore the previous MTUs.')
        return
    if lm.check_mode or not lm.p['prove'] or not peers:
        lm.result['summary'] = 'change %s is pending confirmation' % pending['token']
        return
    before = dict((name, prev) for name, prev, _after in pending['changes'])
    check_proof(lm, state, pending, peers, links, before)


def check_proof(lm, state, commit, peers, links, before):
    """Prove every peer; on failure restore now, disarm, stop the listener and fail naming the sizes."""
    p = lm.p
    mtus = dict((name, link['mtu']) for name, link in links.items())
    results = mtuproof.prove_peers(peers, mtus, before, port=p['proof_port'], tcp=p['tcp_proof'],
                                   count=p['probe_count'])
    lm.result['peers'] = results
    ok, failed = linkmtu.proof_verdict(results)
    if ok:
        lm.result['summary'] = '%s; path proven to %s' % (
            lm.result.get('summary') or 'change %s pending' % commit['token'],
            '; '.join('%s (%s via %s): %s' % (r['peer'], r['address'], r['interface'], r['summary']) for r in results))
        return
    if lm.timer.decision(commit, take='module') != 'module':
        lm.fail('The path proof failed, and the commit-confirm timer had already restored the previous MTUs: '
                '%s' % mtuproof.failure_text(failed))
    ending = lm.close(state, commit, 'module')
    restored, errors = ending['restored'], ending['errors']
    lm.listener.stop()
    again = []
    for item in failed:
        peer = [p_ for p_ in peers if p_['peer'] == item['peer']][0]
        back = before.get(item['interface'], links.get(item['interface'], {}).get('mtu'))
        res = mtuproof.prove(peer['address'], peer['family'], back, None, tcp='off', count=p['probe_count'])
        again.append('%s-byte packets to %s get through again' % (back, item['peer']) if res['ok'] else
                     'even %s-byte packets to %s still fail: %s' % (back, item['peer'], res['summary']))
    lm.result['restored'] = restored
    lm.fail('Path proof failed, so the MTU was restored (%s): %s After the restore: %s.%s See docs/jumbo.md, '
            '"When the proof fails".'
            % (_steps(restored), mtuproof.failure_text(failed),
               '; '.join(again), ' Restore errors: %s.' % '; '.join(errors) if errors else ''),
            restored=restored)


def unchanged(lm, peers, links):
    """Nothing to change: start the listener if asked, and verify the path read-only."""
    p = lm.p
    if p['listen'] and not lm.check_mode:
        lm.start_listener(peers)
    if lm.check_mode or not p['verify'] or not peers:
        lm.result['summary'] = 'nothing to change'
        return
    mtus = dict((name, link['mtu']) for name, link in links.items())
    results = mtuproof.verify_peers(peers, mtus, count=p['probe_count'])
    lm.result['peers'] = results
    ok, failed = linkmtu.proof_verdict(results)
    if not ok:
        lm.fail('The MTU is already as wanted, but the path no longer carries full-size packets: %s Nothing '
                'was changed; fix the path, or undo with state=absent. See docs/jumbo.md.'
                % mtuproof.failure_text(failed))
    lm.result['summary'] = 'nothing to change; verified %s' % '; '.join(
        '%s at %s bytes' % (r['peer'], r['mtu']) for r in results)


# ---------------------------------------------------------------------------------------------- state=confirmed

def confirmed(lm):
    """Disarm the timer of the pending change and record it as committed; too late if the timer decided."""
    lm.result['listener_stopped'] = False if lm.check_mode else lm.listener.stop()
    pending = pending_change(lm, 'no pending MTU change to confirm', 'would confirm change %s')
    if not pending:
        return
    ending = lm.close(lm.record.data, pending, lm.timer.decision(pending, take='confirmed'))
    lm.result.update(changed=True, outcome=ending['outcome'], summary=ended(pending, ending))
    lm.result['commit']['state'] = ending['outcome']
    if ending['outcome'] != 'confirmed':
        late = ('the commit-confirm timer of change %s restored the previous MTUs (%s) at %s, %d s after the change'
                % (pending['token'], _steps(ending['restored']), _at(ending), pending['timeout'])
                if ending['outcome'] == 'restored_by_timer' else ended(pending, ending))
        lm.fail('Too late: %s, before this confirmation. The change is not in effect. If the control connection '
                'was fine, raise confirm_timeout (the whole play must fit in it).' % late)
    if ending['drift']:
        lm.warn('after confirming, %s differ from the change' % ', '.join(ending['drift']))


# ---------------------------------------------------------------------------------------------- state=reverted

def reverted(lm):
    """Undo the pending change now, or report that its timer already did."""
    history = lm.load_state().get('history') or [None]
    last = history[-1]
    pending = pending_change(lm, 'no pending change; the last one (%s) ended %s at %s' % (
        last['token'], last['outcome'].replace('_', ' '), time.strftime('%F %T', time.localtime(last['at'])))
        if last else 'no pending change and none recorded', 'would restore %s', last and last['outcome'])
    if not pending:
        return
    ending = lm.close(lm.record.data, pending, lm.timer.decision(pending, take='module'))
    lm.result.update(changed=ending['outcome'] == 'restored_by_module', outcome=ending['outcome'],
                     restored=ending['restored'], record=ending['record'], summary=ended(pending, ending))
    lm.result['commit']['state'] = ending['outcome']


def pending_change(lm, nothing, would, outcome=None):
    """The pending change as common/commit.py pending_in returns it (None: none, or check mode), the listener stopped."""
    pending = lm.load_state().get('pending')
    if not lm.check_mode:
        lm.listener.stop()
    return pending_in(lm.timer, lm.result, pending, nothing, would, outcome)


# ---------------------------------------------------------------------------------------------- state=absent

def absent(lm):
    """Restore the MTUs recorded before the first change, except where someone else changed them since."""
    state = lm.load_state()
    if state.get('pending'):
        reverted(lm)
        state = lm.load_state()
    originals = lm.record.originals()
    committed = state.get('committed', {})
    links = lm.links()
    order = [name for name in reversed(state.get('order', [])) if name in originals]
    order += [name for name in originals if name not in order]
    steps, left = [], []
    for name in order:
        live = links.get(name, {}).get('mtu')
        if name not in links:
            left.append('%s no longer exists' % name)
        elif live == originals[name]:
            continue
        elif name in committed and live != committed[name]:
            left.append('%s is %s, changed by someone else since this role set %s: left alone'
                        % (name, live, committed[name]))
        elif name in [s[0] for s in steps]:
            continue
        else:
            steps.append((name, live, originals[name]))
    # members of a bond follow the bond: restore masters only when the master is in the list
    masters = set(s[0] for s in steps)
    steps = [s for s in steps if links.get(s[0], {}).get('master') not in masters
             or links[links[s[0]]['master']].get('kind') not in linkmtu.PROPAGATING_MASTERS]
    lm.result['diff'] = {'before': ''.join('%s mtu %s\n' % (n, c) for n, c, _p in steps),
                         'after': ''.join('%s mtu %s\n' % (n, prev) for n, _c, prev in steps),
                         'before_header': 'live MTU (ip link)', 'after_header': 'live MTU (ip link)'}
    for text in left:
        lm.warn(text)
    lm.result['changed'] = lm.result['changed'] or bool(steps) or bool(state)
    if lm.check_mode:
        lm.result['summary'] = 'would restore %s' % (', '.join('%s %s' % (n, prev) for n, _c, prev in steps)
                                                     or 'nothing')
        return
    restored, errors = lm.timer.restore(steps)
    if errors:
        lm.fail('Restoring the recorded MTU failed: %s; the record was kept so you can retry.'
                % '; '.join(errors), restored=restored)
    lm.listener.stop()
    lm.drop_state()
    lm.result['restored'] = dict(lm.result.get('restored') or {}, **restored)
    lm.result['summary'] = 'restored %s' % (_steps(restored) or 'nothing (already at the recorded MTU)')


STATES = {'present': present, 'confirmed': confirmed, 'reverted': reverted, 'absent': absent}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', default='present', choices=['present', 'confirmed', 'reverted', 'absent']),
            mtu=dict(type='int'),
            interfaces=dict(type='list', elements='str', default=[]),
            peers=dict(type='list', elements='str', default=[]),
            prove=dict(type='bool', default=True),
            verify=dict(type='bool', default=True),
            listen=dict(type='bool', default=False),
            tcp_proof=dict(type='str', default='auto', choices=['auto', 'required', 'off']),
            proof_port=dict(type='int', default=45219),
            probe_count=dict(type='int', default=3),
            confirm_timeout=dict(type='int', default=180),
            commit_method=dict(type='str', default='auto', choices=['auto', 'systemd', 'process']),
            allow_control_interface=dict(type='bool', default=False),
            control_hosts=dict(type='list', elements='str', default=[]),
            clamp=dict(type='bool', default=False),
            raise_parents=dict(type='bool', default=True),
            allow_lower=dict(type='bool', default=False),
            platform=dict(type='str', default='auto', choices=['auto', 'none', 'aws', 'gcp', 'azure', 'azure-mana']),
            platform_max_mtu=dict(type='int'),
            state_dir=dict(type='path', default=files.STATE_DIR),
        ),
        required_if=[('state', 'present', ('mtu',))],
        supports_check_mode=True,
    )
    check_timeout(module)
    if not checks.is_port(module.params['proof_port']):
        module.fail_json(msg='proof_port: %d is not a TCP port; expected %s.'
                         % (module.params['proof_port'], checks.port_help(default=45219)))
    if module.params['probe_count'] < 1:
        module.fail_json(msg='probe_count: %d; send at least one probe.' % module.params['probe_count'])
    # one state-changing step at a time on the host: the records are read, changed and written under the lock
    with runlock.held(module, module.params['state_dir'], 'link_mtu %s' % module.params['state']):
        link = LinkMtu(module)
        try:
            STATES[module.params['state']](link)
        except RuntimeError as exc:
            link.fail(str(exc))
        module.exit_json(**link.result)


if __name__ == '__main__':
    main()
