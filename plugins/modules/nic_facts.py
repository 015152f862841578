#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: nic_facts
short_description: Survey the NIC and host settings that decide whether a 10G+ host reaches the line (read-only)
version_added: 0.4.0
description:
  - Reads, per interface, the driver, the link speed, the ring sizes (current and maximum, as C(ethtool -g) shows
    them), interrupt coalescing (C(ethtool -c)), the transmit queue length, the root qdisc, the NUMA node of the
    NIC and the drop counters (C(/sys/class/net/IF/statistics) and the driver's drop and missed counters of
    C(ethtool -S)).
  - Reads, per host, the CPU frequency governors, whether irqbalance runs, and the C(/proc/net/softnet_stat)
    totals (drops and time squeezes).
  - The interfaces are those named in O(interfaces), or those that carry the routes to O(peers) (C(ip route get),
    as M(bdp.wan_tune.link_mtu) finds them). Below a VLAN, macvlan, bond, team or bridge, the devices that carry
    its packets to the wire are surveyed too, with the reason.
  - The ring, coalescing and statistics queries use the SIOCETHTOOL ioctl, so the C(ethtool) program is not needed.
    A query the driver does not implement (virtio-net or veth rings, coalescing on some drivers) and a host without
    cpufreq (most VMs) are reported as unsupported, with the reason; they never fail the task.
  - Changes nothing and always returns C(changed=false). Two calls, before and after a path test, give the counters
    that rose during it; the verify report's diagnosis names the setting to change from them.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  interfaces:
    description: The interfaces to survey. Empty means the interfaces that route to O(peers).
    type: list
    elements: str
    default: []
  peers:
    description: Addresses or host names of the peers; the interfaces that route to them are surveyed when
      O(interfaces) is empty.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Reads the same in check mode; it never changes anything.
notes:
  - Needs C(ip) from iproute2 to find the interfaces; C(tc) for the root qdisc (without it the qdisc is null).
  - Runs without root; the ethtool queries it makes are those any user may make.
seealso:
  - module: bdp.wan_tune.iperf3_verify
  - module: bdp.wan_tune.verify_report
  - name: The host survey (docs/verify.md)
    description: Each field, and how to check it by hand.
    link: https://github.com/bdp-wan-tune/bdp.wan_tune/blob/main/docs/verify.md#host-survey
"""

EXAMPLES = r"""
- name: Survey the interfaces towards the peers
  bdp.wan_tune.nic_facts:
    peers: [198.18.0.2]
  register: survey

- name: Show the rings of each interface
  ansible.builtin.debug:
    msg: "{{ item.key }}: {{ item.value.rings }}"
  loop: "{{ survey.nic | dict2items }}"

- name: Survey named interfaces
  bdp.wan_tune.nic_facts:
    interfaces: [ens4]
"""

RETURN = r"""
interfaces:
  description: The interfaces surveyed, in order.
  returned: always
  type: list
  elements: str
  sample: [ens4]
nic:
  description:
    - Per interface, what the survey read. V(reason) says why it was surveyed.
    - V(driver) is the kernel driver, C(none) for a virtual device. V(speed_mbps) is null when the kernel reports no
      link speed. V(numa_node) is null when the device has none (a single-node host, a virtual device).
    - V(rings) (rx, rx_max, tx, tx_max), V(coalescing) (adaptive_rx, adaptive_tx, rx_usecs, tx_usecs) and
      V(driver_drops) (counters) each carry V(supported); when it is false, V(reason) says why.
    - V(counters) are rx_missed_errors, rx_dropped and tx_dropped from C(/sys/class/net/IF/statistics) (null when
      unreadable). V(qdisc) is the root qdisc, C(mq/fq) for fq under mq, null when C(tc) is not installed.
  returned: always
  type: dict
  sample:
    ens4:
      reason: route to 198.18.0.2
      driver: e1000e
      speed_mbps: 1000
      tx_queue_len: 1000
      numa_node: null
      qdisc: fq_codel
      rings: {supported: true, rx: 256, rx_max: 4096, tx: 256, tx_max: 4096}
      coalescing: {supported: true, adaptive_rx: false, adaptive_tx: false, rx_usecs: 3, tx_usecs: 0}
      driver_drops: {supported: true, counters: {rx_missed_errors: 0, rx_no_buffer_count: 0}}
      counters: {rx_missed_errors: 0, rx_dropped: 0, tx_dropped: 0}
host:
  description:
    - V(governor) is V(supported) with the distinct V(governors) and the number of V(cpus) that have one, or
      V(supported=false) with the V(reason) (no cpufreq). V(irqbalance) is true when a process named irqbalance
      runs.
    - V(softnet) has the totals over the CPUs of C(/proc/net/softnet_stat) (processed, dropped, time_squeeze), the
      number of V(cpus) and the same V(per_cpu).
  returned: always
  type: dict
  sample:
    governor: {supported: false, reason: "unsupported: no cpufreq (...)"}
    irqbalance: false
    softnet: {supported: true, cpus: 2, processed: 120, dropped: 0, time_squeeze: 3,
              per_cpu: [{cpu: 0, processed: 100, dropped: 0, time_squeeze: 1},
                        {cpu: 1, processed: 20, dropped: 0, time_squeeze: 2}]}
summary:
  description: One line per interface and one for the host, for people.
  returned: always
  type: str
  sample: "ens4: driver e1000e, 1000 Mbit/s, rings rx 256 of 4096, tx 256 of 4096, ...; host: governor ..."
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuplan
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey


def requested(module, links, run_ip):
    """[(interface, reason)] as asked: the named interfaces, else those that route to the peers."""
    params = module.params
    if not params['interfaces'] and not params['peers']:
        module.fail_json(msg='Nothing to survey: set interfaces (the interfaces to read) or peers (their routes name '
                             'the interfaces).')
    try:
        pairs, errors = mtuplan.requested(links, run_ip, params['interfaces'], params['peers'])
    except linkmtu.MtuError as exc:
        module.fail_json(msg=str(exc) if params['interfaces'] else 'No interface to survey: %s' % exc)
    for error in errors:
        module.warn('%s That peer\'s interface is not surveyed.' % error)
    return pairs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interfaces=dict(type='list', elements='str', default=[]),
            peers=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    run_ip = mtuplan.ip_runner(module, module.get_bin_path('ip', required=True))
    tc = module.get_bin_path('tc')
    links = mtuplan.links(run_ip)
    nic = {}
    for name, reason in survey.carriers(links, requested(module, links, run_ip)):
        text = None
        if tc:
            rc, out, _err = module.run_command([tc, 'qdisc', 'show', 'dev', name])
            text = out if rc == 0 else None
        nic[name] = dict(survey.interface(name, text), reason=reason)
    host = survey.host()
    lines = [survey.describe(name, facts) for name, facts in nic.items()]
    module.exit_json(changed=False, interfaces=list(nic), nic=nic, host=host,
                     summary='; '.join(lines + ['host: ' + survey.describe_host(host)]))


if __name__ == '__main__':
    main()
