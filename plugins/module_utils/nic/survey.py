# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read-only host survey of the NIC and host settings that decide whether a 10G+ host reaches the line.

Per interface: driver, link speed, ring sizes (current and maximum), interrupt coalescing, transmit queue length,
root qdisc, NUMA node and the drop counters; per host: the CPU frequency governors, whether irqbalance runs and
the /proc/net/softnet_stat totals.  Everything is read from sysfs, procfs and the SIOCETHTOOL ioctl
(module_utils/nic/ethtool.py); nothing is written.  What a host or driver does not offer (no cpufreq in a VM, no
rings on virtio or veth) is reported as unsupported, with the reason, never as an error.  The hints drawn from two
surveys (before and after a test) are in diagnose.py; the module is plugins/modules/nic_facts.py.
"""

import glob
import os

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import links as stacking
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.links import SYS_CLASS_NET, driver
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import pathprobe
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import qdisc

CPU_DIR = '/sys/devices/system/cpu'
PROC = '/proc'
# The interface's own drop counters (/sys/class/net/NAME/statistics): missed for want of a ring slot, dropped by
# the stack (a full backlog included) and dropped on the way out.
COUNTERS = ('rx_missed_errors', 'rx_dropped', 'tx_dropped')
# /proc/net/softnet_stat, one line per online CPU in hex (net/core/net-procfs.c): 0 processed, 1 dropped (the
# backlog queue was full, net.core.netdev_max_backlog), 2 time_squeeze (the softirq ran out of
# net.core.netdev_budget or netdev_budget_usecs with work left), 3-8 zero, 9 received_rps, 10 flow_limit_count,
# then since Linux 5.10 11 the backlog length and 12 the CPU's number (before, the line's position is the number).
SOFTNET_COLUMNS = ('processed', 'dropped', 'time_squeeze')
SOFTNET_CPU_COLUMN = 12
IRQBALANCE = 'irqbalance'


def read_int(path):
    """The integer in the file ``path``, or None when it is missing, unreadable or not a number."""
    text = files.read_text(path)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def link(name, sys_class_net=SYS_CLASS_NET):
    """What sysfs says of interface ``name``: driver ('none' when virtual), speed_mbps (None when the kernel reports
    none), tx_queue_len, numa_node (None when the device has no node) and the drop counters."""
    base = os.path.join(sys_class_net, name)
    numa = read_int(os.path.join(base, 'device', 'numa_node'))
    return {'driver': driver(name, sys_class_net) or 'none',
            'speed_mbps': pathprobe.read_speed_mbps(name, sys_class_net),
            'tx_queue_len': read_int(os.path.join(base, 'tx_queue_len')),
            'numa_node': numa if numa is not None and numa >= 0 else None,
            'counters': dict((key, read_int(os.path.join(base, 'statistics', key))) for key in COUNTERS)}


def interface(name, qdisc_text=None, sys_class_net=SYS_CLASS_NET):
    """The survey of one interface: link() and the ethtool queries (rings, coalescing, driver_drops) and the root
    qdisc from the text of ``tc qdisc show dev NAME`` (None: tc is not installed, the qdisc is not known)."""
    facts = link(name, sys_class_net)
    facts['rings'] = ethtool.rings(name)
    facts['coalescing'] = ethtool.coalescing(name)
    facts['driver_drops'] = ethtool.drop_counters(name)
    facts['qdisc'] = qdisc.Tree(name, qdisc_text).describe() if qdisc_text is not None else None
    return facts


def carriers(links, requested):
    """[(name, reason)]: the ``requested`` (name, reason) pairs and, below each, the devices that carry its packets
    to the wire (a VLAN's or macvlan's parent, a bond's, team's or bridge's members), whose rings and drops count.

    ``links`` is linkmtu.parse_links() of ``ip -d -j link show``."""
    found, queue = [], list(requested)
    while queue:
        name, reason = queue.pop(0)
        if name in [item[0] for item in found]:
            continue
        found.append((name, reason))
        link_ = links.get(name) or {}
        kind = link_.get('kind')
        if kind in stacking.STACKED_KINDS and link_.get('parent') in links:
            queue.append((link_['parent'], 'parent of %s %s' % (kind, name)))
        elif kind in stacking.PROPAGATING_MASTERS + stacking.PORT_MASTERS:
            queue.extend((member, 'member of %s %s' % (kind, name)) for member in stacking.members(links, name))
    return found


def governors(cpu_dir=CPU_DIR):
    """The CPU frequency governors in use: {'supported': True, 'governors': distinct names, 'cpus': how many CPUs
    have one}, or {'supported': False, 'reason'} where there is no cpufreq (a VM, or scaling off in the firmware)."""
    found = {}
    for path in glob.glob(os.path.join(cpu_dir, 'cpu[0-9]*', 'cpufreq', 'scaling_governor')):
        value = (files.read_text(path) or '').strip()
        if value:
            found[value] = found.get(value, 0) + 1
    if not found:
        return {'supported': False, 'reason': 'unsupported: no cpufreq (%s/cpu*/cpufreq/scaling_governor is absent: '
                                              'a VM, or frequency scaling is off in the firmware)' % cpu_dir}
    return {'supported': True, 'governors': sorted(found), 'cpus': sum(found.values())}


def irqbalance_running(proc=PROC):
    """True when a process named irqbalance runs (its /proc/PID/comm), whatever started it."""
    try:
        entries = os.listdir(proc)
    except OSError:
        return False
    return any((files.read_text(os.path.join(proc, entry, 'comm')) or '').strip() == IRQBALANCE
               for entry in entries if entry.isdigit())


def parse_softnet(text):
    """/proc/net/softnet_stat as {'supported', 'cpus', 'processed', 'dropped', 'time_squeeze', 'per_cpu'}: the
    totals over the CPUs and, per CPU, {'cpu', 'processed', 'dropped', 'time_squeeze'} (32-bit counters that wrap)."""
    per_cpu = []
    for index, line in enumerate((text or '').splitlines()):
        try:
            values = [int(field, 16) for field in line.split()]
        except ValueError:
            continue
        if len(values) < len(SOFTNET_COLUMNS):
            continue
        cpu = values[SOFTNET_CPU_COLUMN] if len(values) > SOFTNET_CPU_COLUMN else index
        per_cpu.append(dict(zip(SOFTNET_COLUMNS, values), cpu=cpu))
    totals = dict((key, sum(item[key] for item in per_cpu)) for key in SOFTNET_COLUMNS)
    return dict(totals, supported=bool(per_cpu), cpus=len(per_cpu), per_cpu=per_cpu)


def host(proc=PROC, cpu_dir=CPU_DIR):
    """The host's part of the survey: governor, irqbalance and softnet."""
    return {'governor': governors(cpu_dir), 'irqbalance': irqbalance_running(proc),
            'softnet': parse_softnet(files.read_text(os.path.join(proc, 'net', 'softnet_stat')))}


def _setting(facts, show):
    """``show(facts)`` of a supported query, else 'unsupported'."""
    return show(facts) if facts.get('supported') else 'unsupported'


def rings_text(rings):
    """'rx 256 of 4096, tx 256 of 4096' (current of maximum), or 'unsupported'."""
    return _setting(rings or {}, lambda r: 'rx %(rx)d of %(rx_max)d, tx %(tx)d of %(tx_max)d' % r)


def describe(name, facts):
    """One line of an interface's survey, for people."""
    speed = facts.get('speed_mbps')
    return '%s: driver %s, %s, rings %s, coalescing %s, txqueuelen %s, qdisc %s, NUMA node %s' % (
        name, facts.get('driver'), '%d Mbit/s' % speed if speed else 'speed not reported',
        rings_text(facts.get('rings')),
        _setting(facts.get('coalescing') or {}, lambda c: 'adaptive rx %s tx %s, rx-usecs %d' % (
            'on' if c['adaptive_rx'] else 'off', 'on' if c['adaptive_tx'] else 'off', c['rx_usecs'])),
        facts.get('tx_queue_len'), facts.get('qdisc') or 'unknown (no tc)',
        'none' if facts.get('numa_node') is None else facts['numa_node'])


def describe_host(facts):
    """One line of the host's survey, for people."""
    governor, softnet = facts['governor'], facts['softnet']
    return 'governor %s, irqbalance %s, softnet over %d CPU%s: %d dropped, %d time squeezes' % (
        ', '.join(governor['governors']) if governor.get('supported') else governor['reason'],
        'running' if facts['irqbalance'] else 'not running', softnet['cpus'], '' if softnet['cpus'] == 1 else 's',
        softnet['dropped'], softnet['time_squeeze'])
