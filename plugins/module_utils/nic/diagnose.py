# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings to change, named from the host surveys (module_utils/nic/survey.py, the bdp.wan_tune.nic_facts
result) taken on the sender and the receiver before and after a path test that fell short.

``hints(pair, sender, receiver)`` takes a pair as the verify report keeps it (verify_report.normalise: ``source``,
``target``, ``status``, ``fraction``, ``min_fraction``) and, per side, {'before': survey, 'after': survey}; it
returns the report's diagnosis lines for a pair that fell short (verify_report.fell_short).  Counters that rose during the test say where
packets were lost: ring or missed drops (the NIC had no free descriptor), softnet drops (the backlog queue was
full), time squeezes (the softirq ran out of budget).  The settings themselves (a governor that is not
performance, rings below their maximum on a 10G+ NIC) are named too, since they explain a slow path without a drop.
"""

FAST_NIC_MBPS = 10000        # from 10 Gbit/s up, rings below their maximum are worth a mention
PERFORMANCE = 'performance'
RING_HINT = 'raise the rings (nic_rings / ethtool -G %s rx %s tx %s)'
AT_MAX_HINT = ('the rings are at the driver\'s maximum already (rx %d, tx %d), so the host does not drain them fast '
               'enough: spread the NIC\'s interrupts over the CPUs of its NUMA node (irqbalance) or use more queues')
BACKLOG_HINT = 'raise net.core.netdev_max_backlog'
BUDGET_HINT = 'raise net.core.netdev_budget (and net.core.netdev_budget_usecs)'
SOFTNET_BITS, COUNTER_BITS = 32, 64


def rise(before, after, bits=COUNTER_BITS):
    """How much a counter rose from ``before`` to ``after``; 0 when either is unknown.  A 32-bit counter
    (softnet_stat) wraps; a 64-bit one that went down was reset (the interface was made again) and counts 0."""
    if not isinstance(before, int) or not isinstance(after, int):
        return 0
    if bits == SOFTNET_BITS:
        return (after - before) % (1 << bits)
    return max(0, after - before)


def ring_drops(before, after):
    """{counter: rise} of one interface's missed and ring drops: rx_missed_errors (sysfs) and the driver's drop
    counters (ethtool -S), those that rose."""
    rose = {'rx_missed_errors': rise((before.get('counters') or {}).get('rx_missed_errors'),
                                     (after.get('counters') or {}).get('rx_missed_errors'))}
    old = (before.get('driver_drops') or {}).get('counters') or {}
    for name, value in ((after.get('driver_drops') or {}).get('counters') or {}).items():
        rose[name] = rise(old.get(name), value)
    return dict((name, value) for name, value in rose.items() if value)


def softnet_rise(before, after):
    """{'dropped', 'time_squeeze'}: how much each rose over the CPUs, CPU by CPU (a CPU in one survey only counts 0)."""
    old = dict((item['cpu'], item) for item in (before.get('softnet') or {}).get('per_cpu') or [])
    total = {'dropped': 0, 'time_squeeze': 0}
    for item in (after.get('softnet') or {}).get('per_cpu') or []:
        for key in total:
            total[key] += rise((old.get(item['cpu']) or {}).get(key), item.get(key), SOFTNET_BITS)
    return total


def _ring_command(name, facts):
    """What to do about the rings of ``name``: raise them to the maximum, or say that they are there already."""
    rings = facts.get('rings') or {}
    if not rings.get('supported'):
        return RING_HINT % (name, 'MAX', 'MAX') + ', where the driver allows it (ethtool -g %s shows the maximum)' % name
    if rings['rx'] >= rings['rx_max'] and rings['tx'] >= rings['tx_max']:
        return AT_MAX_HINT % (rings['rx_max'], rings['tx_max'])
    return RING_HINT % (name, rings['rx_max'], rings['tx_max'])


def _drop_hints(who, before, after):
    """(the lines for counters that rose on one side during the test, the interfaces with ring drops)."""
    lines, named = [], []
    for name, facts in sorted((after.get('nic') or {}).items()):
        rose = ring_drops((before.get('nic') or {}).get(name) or {}, facts)
        if rose:
            named.append(name)
            lines.append('%s: ring/missed drops on %s rose during the test (%s): %s' % (
                who, name, ', '.join('%s +%d' % item for item in sorted(rose.items())), _ring_command(name, facts)))
    softnet = softnet_rise(before.get('host') or {}, after.get('host') or {})
    if softnet['dropped']:
        lines.append('%s: /proc/net/softnet_stat drops rose by %d during the test (the backlog queue was full): %s'
                     % (who, softnet['dropped'], BACKLOG_HINT))
    if softnet['time_squeeze']:
        lines.append('%s: /proc/net/softnet_stat time_squeeze rose by %d during the test (the softirq ran out of '
                     'budget with packets left): %s' % (who, softnet['time_squeeze'], BUDGET_HINT))
    return lines, named


def _setting_hints(who, facts, named):
    """The lines for settings of one side (its latest survey) that hold a fast path back; ``named``: interfaces
    whose rings a drop line already names."""
    lines = []
    governor = (facts.get('host') or {}).get('governor') or {}
    slow = [name for name in governor.get('governors') or [] if name != PERFORMANCE]
    if governor.get('supported') and slow:
        lines.append('%s: the CPU frequency governor is %s, not %s: set %s (cpupower frequency-set -g %s, or '
                     'scaling_governor in /sys/devices/system/cpu/cpu*/cpufreq)'
                     % (who, ', '.join(governor['governors']), PERFORMANCE, PERFORMANCE, PERFORMANCE))
    for name, nic in sorted((facts.get('nic') or {}).items()):
        rings = nic.get('rings') or {}
        if name in named or not rings.get('supported') or (nic.get('speed_mbps') or 0) < FAST_NIC_MBPS:
            continue
        if rings['rx'] < rings['rx_max'] or rings['tx'] < rings['tx_max']:
            lines.append('%s: the rings of %s are rx %d of %d, tx %d of %d on a %d Mbit/s NIC: %s' % (
                who, name, rings['rx'], rings['rx_max'], rings['tx'], rings['tx_max'], nic['speed_mbps'],
                _ring_command(name, nic)))
    return lines


def hints(pair, sender=None, receiver=None):
    """The diagnosis lines for ``pair``, a pair that fell short (verify_report.fell_short decides), from the surveys
    of its ``sender`` and ``receiver`` ({'before': survey, 'after': survey}, either may be missing)."""
    lines = []
    for role, name, side in (('sender', pair.get('source'), sender), ('receiver', pair.get('target'), receiver)):
        before, after = (side or {}).get('before'), (side or {}).get('after')
        if not after:
            continue
        who = '%s %s' % (role, name)
        drops, named = _drop_hints(who, before, after) if before else ([], [])
        lines.extend(drops + _setting_hints(who, after, named))
    return lines
