# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What nic_settings changes, planned from what the host has now (read-only): rings, interrupt coalescing, the
transmit queue length per interface, the CPU frequency governor per host, and the guards that refuse a ring or
coalescing change (it resets many NICs: the link drops for a moment) while a transfer runs.

Every plan entry is {'before', 'after', 'status', 'reason'}, status one of ``changed`` (or would be, in
check mode), ``ok`` (already so, or kept as asked), ``unsupported`` (the driver or host cannot), ``not_applicable``
(the setting has no effect here) or ``kept_higher`` (the host had more before bdp.wan_tune first changed it, and
allow_lower is false).  The originals come from the module's record; a value is never planned below its original
unless allow_lower, but follows the module's own inputs down to it.
"""

import glob
import os

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import tcptable
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as migrate_runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import qdisc

# Root qdiscs whose queue is the device's transmit queue length (txqueuelen); fq, fq_codel and cake have their own
# limits (limit, flow_limit, memory_limit), noqueue has no queue at all.
FIFO = ('pfifo_fast', 'pfifo', 'bfifo')
MULTIQUEUE = ('mq', 'multiq')
PERFORMANCE = 'performance'
RSYNC_PORTS = (rsyncd.PORT, rsyncd.TLS_PORT)
MIGRATE_DIR = 'migrate'
MIGRATE_UNITS = 'bdp-migrate-*.service'


class SettingsError(Exception):
    """An option value that is not accepted; the message names the option, the value and what is accepted."""


# What each option takes, the one rule the module and the controller's preflight (validate_inputs) read: its words,
# the least and the greatest whole number.  Rings: descriptors per queue; the largest rings of real drivers are
# 8192 (ixgbe, ena), 16384 (ice) and 32768 (bnxt rx), the ioctl field is a u32.  txqueuelen: packets; a million
# is far above any use (the default is 1000).  Coalescing: rx-usecs; 100 ms is far above any use (drivers take
# 0 to a few thousand).
WORDS = {'rings': (('max', 'keep'), 1, 65536), 'txqueuelen': (('keep',), 1, 1000000),
         'coalescing': (('adaptive', 'keep'), 0, 100000)}


def accepted(option):
    """What ``option`` takes, in a message's words: max, keep or a whole number from 1 to 65536."""
    words, minimum, maximum = WORDS[option]
    return '%s or a whole number from %d to %d' % (', '.join(words), minimum, maximum)


def choice(option, value, name=None):
    """``value`` of ``option`` (rings, txqueuelen, coalescing) as one of its words or a whole number from its least
    to its greatest; SettingsError otherwise, naming ``name`` (the variable the user set; default the option)."""
    words, minimum, maximum = WORDS[option]
    text = str(value).strip().lower()
    if text in words:
        return text
    try:
        number = int(text)
    except ValueError:
        number = None
    if isinstance(value, bool) or number is None or not minimum <= number <= maximum:
        raise SettingsError('%s: %r is not accepted; expected %s.' % (name or option, value, accepted(option)))
    return number


def entry(before, after, reason='', status=None):
    """A plan entry; the status is 'changed' or 'ok' from before and after unless given."""
    return {'before': before, 'after': after, 'status': status or ('ok' if before == after else 'changed'),
            'reason': reason}


def _floor(wanted, original, allow_lower):
    """(the target, whether it was kept at the original): never below ``original`` unless ``allow_lower``."""
    if allow_lower or original is None or wanted >= original:
        return wanted, False
    return original, True


def plan_rings(current, option, original, allow_lower):
    """The rings entry from ethtool.rings() ``current``, the option ('max', 'keep' or a number) and the recorded
    ``original`` ({'rx', 'tx'} or None: the current values are the original)."""
    if not current.get('supported'):
        return entry(None, None, current.get('reason', ''), 'unsupported')
    before = {'rx': current['rx'], 'tx': current['tx']}
    if not current['rx_max'] and not current['tx_max']:
        return entry(before, before, 'the driver reports no maximum ring size', 'unsupported')
    if option == 'keep':
        return entry(before, before, 'kept as it is (rings=keep)')
    original = original or before
    after, reasons, kept = {}, [], False
    for side in ('rx', 'tx'):
        limit = current['%s_max' % side]
        if not limit:
            after[side] = before[side]      # the driver has no such ring
            continue
        wanted = limit if option == 'max' else min(option, limit)
        if option != 'max' and option > limit:
            reasons.append('%s capped at the driver maximum %d' % (side, limit))
        after[side], lower = _floor(wanted, original.get(side), allow_lower)
        if lower:
            kept = True
            reasons.append('%s kept at %d, what the host had before bdp.wan_tune first changed it (allow_lower=true '
                           'lowers it)' % (side, after[side]))
    status = 'kept_higher' if kept and after == before else None
    return entry(before, after, '; '.join(reasons), status)


def plan_coalescing(current, option, refused=None):
    """The coalescing entry from ethtool.coalescing() ``current`` and the option ('adaptive', 'keep' or rx-usecs).
    Each field the option sets (adaptive rx, adaptive tx, rx-usecs) is planned on its own: one the driver refused
    before (``refused``: refusals() of the record) stays as it is, and when nothing else changes the entry is
    'unsupported' up front."""
    if not current.get('supported'):
        return entry(None, None, current.get('reason', ''), 'unsupported')
    before = dict((key, current[key]) for key in ('adaptive_rx', 'adaptive_tx', 'rx_usecs'))
    if option == 'keep':
        return entry(before, before, 'kept as it is (coalescing=keep)')
    after, skipped = dict(before), []
    for field, value in wanted_coalescing(option):
        known = (refused or {}).get('coalescing.' + field)
        if known and known.get('value') == value and before[field] != value:
            skipped.append(known.get('reason', 'refused by the driver before'))
        else:
            after[field] = value
    reasons = ['adaptive rx and tx' if option == 'adaptive' else 'fixed rx-usecs %d, adaptive rx off' % option]
    return entry(before, after, '; '.join(reasons + skipped), 'unsupported' if skipped and after == before else None)


def wanted_coalescing(option):
    """[(field, value)] the coalescing option ('adaptive' or rx-usecs) sets, in the order they are set."""
    if option == 'adaptive':
        return [('adaptive_rx', True), ('adaptive_tx', True)]
    return [('adaptive_rx', False), ('rx_usecs', option)]


def known_refusal(planned, refused, setting):
    """``planned`` (an entry) made 'unsupported' up front when the driver refused that very value before
    (``refused``: refusals() of the record; ``setting``: 'rings')."""
    known = (refused or {}).get(setting)
    if planned['status'] == 'changed' and known and known.get('value') == planned['after']:
        planned.update(after=planned['before'], status='unsupported', reason=known.get('reason', ''))
    return planned


def settle(planned, settled):
    """``planned`` (an entry) made 'ok' when the driver took another value for this very request before and the
    interface still has it (a ring size rounded to the driver's step): ``settled`` {'asked', 'took'} of the
    record."""
    if (planned['status'] == 'changed' and settled and settled.get('asked') == planned['after']
            and settled.get('took') == planned['before']):
        reason = 'the driver took %s for %s' % (show(settled['took']), show(settled['asked']))
        planned.update(after=planned['before'], status='ok',
                       reason='; '.join(part for part in (planned['reason'], reason) if part))
    return planned


def show(value):
    """A setting's value for people: 'rx 256 tx 256', 'adaptive rx on tx on, rx-usecs 3', '1000'."""
    if isinstance(value, dict) and 'rx' in value:
        return 'rx %s tx %s' % (value['rx'], value['tx'])
    if isinstance(value, dict) and 'adaptive_rx' in value:
        return 'adaptive rx %s tx %s, rx-usecs %s' % (
            'on' if value['adaptive_rx'] else 'off', 'on' if value.get('adaptive_tx') else 'off', value['rx_usecs'])
    return '%s' % value


def queue_length_used(name, qdisc_text):
    """(whether the root qdisc of ``name`` queues up to txqueuelen, why not) from ``tc qdisc show dev NAME``."""
    if qdisc_text is None:
        return False, 'the root qdisc is unknown (tc is not installed), so it is not known to use txqueuelen'
    items = qdisc.parse(qdisc_text)
    tree = qdisc.Tree(name, items)
    kinds = [tree.kind]
    if tree.kind in MULTIQUEUE:
        major = tree.root['handle'].split(':', 1)[0] or '0'
        kinds = [item['kind'] for item in items if item['parent'] != 'root'
                 and (item['parent'].split(':', 1)[0] or '0') == major]
    described = tree.describe() if tree.kind != 'multiq' else 'multiq/%s' % '+'.join(sorted(set(kinds)))
    if kinds and all(kind in FIFO for kind in kinds):
        return True, ''
    if tree.kind in ('none', 'noqueue'):
        return False, 'the root qdisc is noqueue: the device has no transmit queue'
    return False, ('the root qdisc is %s, which keeps its own limit (fq, fq_codel and cake have their own; only '
                   'pfifo_fast, pfifo and bfifo queue up to txqueuelen)' % described)


def plan_txqueuelen(name, current, qdisc_text, option, original, allow_lower):
    """The txqueuelen entry from the live length ``current``, the qdisc and the option ('keep' or a number)."""
    if current is None:
        return entry(None, None, 'the transmit queue length cannot be read', 'unsupported')
    if option == 'keep':
        return entry(current, current, 'kept as it is (txqueuelen=keep)')
    used, why = queue_length_used(name, qdisc_text)
    if not used:
        return entry(current, current, why, 'not_applicable')
    after, kept = _floor(option, current if original is None else original, allow_lower)
    if kept:
        reason = ('kept at %d, what the host had before bdp.wan_tune first changed it (allow_lower=true lowers it)'
                  % after)
        return entry(current, after, reason, 'kept_higher' if after == current else None)
    return entry(current, after)


def governors(cpu_dir=survey.CPU_DIR):
    """{path of scaling_governor: (the governor, whether 'performance' is available)} per CPU with cpufreq."""
    found = {}
    for path in sorted(glob.glob(os.path.join(cpu_dir, 'cpu[0-9]*', 'cpufreq', 'scaling_governor'))):
        value = (files.read_text(path) or '').strip()
        offered = (files.read_text(os.path.join(os.path.dirname(path), 'scaling_available_governors')) or '').split()
        if value:
            found[path] = (value, PERFORMANCE in offered)
    return found


def plan_governor(found, option, cpu_dir=survey.CPU_DIR):
    """The governor entry (before and after: the distinct governors) and {path: governor} to write."""
    if not found:
        return entry(None, None, survey.governors(cpu_dir).get('reason', 'no cpufreq'), 'unsupported'), {}
    before = ', '.join(sorted(set(value for value, _offered in found.values())))
    if option == 'keep':
        return entry(before, before, 'kept as it is (governor=keep)'), {}
    writes = dict((path, PERFORMANCE) for path, (value, offered) in found.items() if offered and value != PERFORMANCE)
    if not any(offered for _value, offered in found.values()):
        return entry(before, before, 'the cpufreq driver does not offer "performance" (scaling_available_governors)',
                     'unsupported'), {}
    after = ', '.join(sorted(set(PERFORMANCE if offered else value for value, offered in found.values())))
    missing = len([1 for _value, offered in found.values() if not offered])
    return entry(before, after, '%d CPU(s) do not offer "performance"' % missing if missing else ''), writes


# ------------------------------------------------------------------------------------------------ the guards

def tcp_connections(proc=survey.PROC):
    """[(local address, local port, remote address, remote port)] of the established TCP connections of this
    network namespace."""
    return [(item.local, item.local_port, item.remote, item.remote_port) for item in tcptable.sockets(proc)
            if item.state == tcptable.ESTABLISHED]


def rsync_transfers(proc=survey.PROC, ports=RSYNC_PORTS):
    """The established TCP connections of rsync daemon transfers (either end on a port of ``ports``), as
    'local port N -> remote port M' texts."""
    return ['%s port %d -> %s port %d' % item for item in tcp_connections(proc) if item[1] in ports
            or item[3] in ports]


def migrations(state_dir, run_command=None, systemctl=None):
    """The migrations of the collection that run on this host (the sender): a runner that holds its run's lock
    under ``state_dir``/migrate/, or an active bdp-migrate-*.service."""
    found = []
    base = os.path.join(state_dir, MIGRATE_DIR)
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        run_dir = os.path.join(base, name)
        if migrate_runner.running(run_dir):
            found.append('the migration %s (its runner holds %s)' % (name, os.path.join(run_dir, migrate_runner.RUN_LOCK)))
    if run_command and systemctl:
        rc, out, _err = run_command([systemctl, 'list-units', '--state=active', '--plain', '--no-legend',
                                     MIGRATE_UNITS])
        for line in out.splitlines() if rc == 0 else []:
            unit = line.split()[0] if line.split() else ''
            if unit and not any(unit.replace('.service', '') in item for item in found):
                found.append('the migration unit %s' % unit)
    return found
