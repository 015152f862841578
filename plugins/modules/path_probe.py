#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: path_probe
short_description: Measure the round-trip time to peers and the link rate towards them, for rtt=auto and rate=auto
version_added: 0.2.0
description:
  - With O(rtt=true), times O(count) TCP handshakes (or pings) to each of O(peers) and takes the median per peer. A
    refused connection counts, since the peer's reset comes back after one round trip, so O(port) need not be
    open. The host's RTT is the longest of the peers' medians, because its buffers must fill the longest path it
    serves.
  - Measured values jitter from run to run. The RTT used is kept from the previous run while the new median stays
    within O(tolerance) of it, so that a re-run does not change the buffer sizes by a few bytes; otherwise the
    median is rounded up to a whole millisecond (0.1 ms below 10 ms). The value used is recorded in
    O(state_dir)/path_probe.json, per set of peers.
  - With O(rate=true), reads the speed the kernel reports for the interface that routes to the first peer (the
    default route's without peers). Virtual devices report none; the module then fails and says what to set.
  - Only the record changes the host, and only outside check mode. With O(state=absent) the record is removed.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  peers:
    description: Addresses or host names of the peers, as this host reaches them over the path to measure.
    type: list
    elements: str
    default: []
  rtt:
    description: Measure the round-trip time.
    type: bool
    default: true
  rate:
    description: Read the link rate of the interface towards the peers.
    type: bool
    default: false
  method:
    description: V(tcp) times TCP handshakes to O(port); V(ping) uses ICMP echo (needs C(ping) on the host).
    type: str
    choices: [tcp, ping]
    default: tcp
  port:
    description: TCP port of the handshakes. Open or closed both answer; a firewall that drops it does not.
    type: int
    default: 22
  count:
    description: Handshakes or pings per peer; the median is used.
    type: int
    default: 5
  timeout:
    description: Seconds to wait for one answer.
    type: float
    default: 3
  tolerance:
    description: Keep the previous RTT while the new median is within this share of it (0.25 is 25 %).
    type: float
    default: 0.25
  state_dir:
    description: Directory of the record of the RTT used.
    type: path
    default: /var/lib/bdp_wan_tune
  state:
    description: V(present) measures; V(absent) removes the record.
    type: str
    choices: [present, absent]
    default: present
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Measures in check mode too (it only reads), and does not write the record.
notes:
  - The handshake time includes the time the peer's kernel takes to answer, which is microseconds; an overloaded
    peer or a path with a middlebox that answers for it (a proxy, a SYN cookie load balancer) measures less than
    the path.
seealso:
  - name: docs/bdp.md
    description: How the RTT and rate size the buffers.
    link: https://github.com/bdp-wan-tune/bdp.wan_tune/blob/main/docs/bdp.md
"""

EXAMPLES = r"""
- name: Measure the RTT to the peers and the NIC speed
  bdp.wan_tune.path_probe:
    peers: [198.18.0.2, 198.18.0.3]
    rate: true
  register: path

- name: Show it
  ansible.builtin.debug:
    msg: "{{ path.summary }}"
"""

RETURN = r"""
rtt_ms:
  description: The RTT to size for, in ms (see O(tolerance)). Absent with O(rtt=false).
  returned: when rtt is true and state is present
  type: float
  sample: 98.0
measured_rtt_ms:
  description: The longest of the peers' median RTTs, as measured now.
  returned: when rtt is true and state is present
  type: float
  sample: 98.27
rtt_reason:
  description: Why RTT_MS is what it is.
  returned: when rtt is true and state is present
  type: str
  sample: measured 98.27 ms, rounded up
peers:
  description: Per peer, the samples and their median in ms.
  returned: when rtt is true and state is present
  type: list
  elements: dict
  sample: [{"peer": "198.18.0.2", "samples_ms": [98.2, 98.3, 98.2], "median_ms": 98.2, "method": "tcp"}]
interface:
  description: The interface towards the first peer (the default route's without peers).
  returned: when rate is true
  type: str
  sample: eth1
speed_mbps:
  description: The link speed the kernel reports for INTERFACE, in Mbit/s.
  returned: when rate is true
  type: int
  sample: 10000
rate_bps:
  description: SPEED_MBPS in bit/s.
  returned: when rate is true
  type: int
  sample: 10000000000
summary:
  description: One line saying what was measured and what is used.
  returned: always
  type: str
  sample: "RTT 98 ms (measured 98.27 ms, rounded up; 198.18.0.2 median 98.27 ms of 5 tcp)"
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import pathprobe


def measure_peer(module, peer):
    """{peer, samples_ms, median_ms, method} or {peer, error}."""
    params = module.params
    samples, errors = [], []
    if params['method'] == 'ping':
        rc, out, err = module.run_command(['ping', '-n', '-c', str(params['count']), '-i', '0.2',
                                           '-W', str(max(1, int(round(params['timeout'])))), peer])
        samples = pathprobe.parse_ping(out)
        if not samples:
            errors.append((err or out or 'no reply').strip().splitlines()[-1])
    else:
        for dummy in range(params['count']):
            try:
                samples.append(pathprobe.tcp_handshake_ms(peer, params['port'], params['timeout']))
            except (OSError, ValueError) as exc:
                errors.append(str(exc) or exc.__class__.__name__)
    entry = {'peer': peer, 'method': params['method'], 'samples_ms': [round(s, 3) for s in samples]}
    if samples:
        entry['median_ms'] = round(pathprobe.median(samples), 3)
    else:
        entry['error'] = errors[-1] if errors else 'no answer'
    return entry


def measure_rtt(module, result):
    params = module.params
    if not params['peers']:
        module.fail_json(msg='rtt=auto needs peers to measure the round-trip time to: set wan_peers (or wan_peer) '
                             'for the host, tcp_buffers_rtt_peers, or put its peers in the same play.', **result)
    entries = [measure_peer(module, peer) for peer in params['peers']]
    result['peers'] = entries
    failed = [e for e in entries if 'error' in e]
    if failed:
        module.fail_json(msg='rtt=auto: no %s answer from %s (%s). Check that the peer is reachable over the path '
                             '(a firewall that drops port %d: use method ping or another port), or set rtt=<ms>.'
                             % (params['method'], ', '.join(e['peer'] for e in failed),
                                '; '.join(e['error'] for e in failed), params['port']), **result)
    measured = max(e['median_ms'] for e in entries)
    path = os.path.join(params['state_dir'], pathprobe.RECORD_NAME)
    record = files.load_record(path)
    key = pathprobe.peers_key(params['peers'])
    previous = record.get(key)
    used, why = pathprobe.rtt_used(measured, previous if isinstance(previous, (int, float)) else None,
                                   params['tolerance'])
    result.update(rtt_ms=used, measured_rtt_ms=measured, rtt_reason=why)
    if record.get(key) != used:
        result['changed'] = True
        if not module.check_mode:
            record[key] = used
            files.save_record(module, path, record)
    return 'RTT %s ms (%s; %s)' % (pathprobe.fmt_ms(used), why, ', '.join(
        '%s median %.2f ms of %d %s' % (e['peer'], e['median_ms'], len(e['samples_ms']), e['method'])
        for e in entries))


def measure_rate(module, result):
    peers = module.params['peers']
    if peers:
        rc, out, err = module.run_command(['ip', 'route', 'get', peers[0]])
        where = 'the route to %s' % peers[0]
    else:
        rc, out, err = module.run_command(['ip', 'route', 'show', 'default'])
        where = 'the default route'
    interface = pathprobe.parse_route_dev(out) if rc == 0 else None
    if not interface:
        module.fail_json(msg='rate=auto: could not find the interface of %s (%s). Set rate=<link rate>, such as '
                             'rate=10g.' % (where, (err or out).strip() or 'no route'), **result)
    speed = pathprobe.read_speed_mbps(interface)
    if speed is None:
        module.fail_json(msg='rate=auto: the kernel reports no link speed for %s, the interface of %s (a virtual '
                             'or paravirtual device does not know the rate of the path). Set rate=<link rate>, such '
                             'as rate=10g.' % (interface, where), interface=interface, **result)
    result.update(interface=interface, speed_mbps=speed, rate_bps=speed * 1000000)
    return 'rate %d Mbit/s (link speed of %s, the interface of %s)' % (speed, interface, where)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            peers=dict(type='list', elements='str', default=[]),
            rtt=dict(type='bool', default=True),
            rate=dict(type='bool', default=False),
            method=dict(type='str', choices=['tcp', 'ping'], default='tcp'),
            port=dict(type='int', default=22),
            count=dict(type='int', default=5),
            timeout=dict(type='float', default=3),
            tolerance=dict(type='float', default=pathprobe.DEFAULT_TOLERANCE),
            state_dir=dict(type='path', default=files.STATE_DIR),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = {'changed': False}
    if params['state'] == 'absent':
        path = os.path.join(params['state_dir'], pathprobe.RECORD_NAME)
        result['changed'] = os.path.exists(path)
        if result['changed'] and not module.check_mode:
            files.save_record(module, path, {})
        result['summary'] = 'record removed' if result['changed'] else 'no record'
        module.exit_json(**result)
    if not 1 <= params['count'] <= 100 or params['timeout'] <= 0 or not 0 <= params['tolerance'] < 1:
        module.fail_json(msg='count must be 1 to 100, timeout above 0 and tolerance from 0 to below 1 (got %r, %r, '
                             '%r).' % (params['count'], params['timeout'], params['tolerance']))
    if not checks.is_port(params['port']):
        module.fail_json(msg='port: %r is out of range; expected %s.' % (params['port'], checks.port_help(default=22)))
    parts = []
    if params['rate']:
        parts.append(measure_rate(module, result))
    if params['rtt']:
        parts.append(measure_rtt(module, result))
    result['summary'] = '; '.join(parts) or 'nothing to measure'
    module.exit_json(**result)


if __name__ == '__main__':
    main()
