# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report of the bdp.wan_tune.verify role: one run of path tests as JSON, Markdown and one HTML page.

A run is the list of pairs the role tested, each with the registered result of bdp.wan_tune.iperf3_verify
(or the error that stopped the test).  ``normalise()`` turns one into the report's fixed set of figures,
``build_run()`` makes the run, and the renderers read the runs kept in the report directory: the HTML page draws
one plot per run (goodput against ceiling per pair) and, for a run not labelled ``stock``, the latest earlier
``stock`` measurement of the same pair as its baseline.  With the host surveys (bdp.wan_tune.nic_facts, taken on
each host before and after the tests), a run also keeps ``hosts``, shown in a Hosts section, and the diagnosis of
a pair that fell short names the setting to change (module_utils/nic/diagnose.py).  Everything here is pure: the
module (plugins/modules/verify_report.py) does the reading and the atomic writing.

A run also leaves a compact ``summary()`` for the job's artifacts (``artifacts()``: ``verify``, and for a stock run
``verify_baseline``), which an AWX workflow passes to its next job as extra variables.  ``given_baseline()`` reads
such a stock summary back (the verify role's ``verify_baseline``), the one reader of it: the role's check before any
test (the validate_inputs action) and the report module both call it.  The given run competes with the stock runs of
the report directory by the rule of ``baseline()``.
"""

import datetime
import json
import math
import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import diagnose
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey

SCHEMA = 1
STOCK = 'stock'
LABEL_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$')
LABEL_HELP = '1 to 40 letters, digits, ".", "_" or "-", starting with a letter or digit (stock, tuned, canary-1)'
RUN_FILE_RE = re.compile(r'^run-\d{8}T\d{6}Z(?:-\d+)?-[A-Za-z0-9_.-]+\.json$')
PASS, FAIL, ERROR, CHECK, UNJUDGED = 'PASS', 'FAIL', 'ERROR', 'CHECK MODE', 'NOT JUDGED'
FAILED = (FAIL, ERROR)
# Figures copied from the iperf3_verify result as they are.
FIGURES = ('receiver_bps', 'sender_bps', 'retransmits', 'ceiling_bps', 'limit', 'expectation_bps', 'expectation',
           'fraction', 'mean_rtt_ms', 'min_rtt_ms', 'congestion', 'iperf3_version')
# What a run keeps of each bdp.wan_tune.nic_facts result, and when the role takes one.
SURVEY_KEYS = ('interfaces', 'nic', 'host')
SURVEY_SIDES = ('before', 'after')
# The job's artifacts (ansible.builtin.set_stats): the run's summary, and a stock run's summary as the baseline that
# a later run reads back from the variable of the same name.
ARTIFACT, BASELINE_ARTIFACT = 'verify', 'verify_baseline'
# What the summary keeps of each pair (retransmits only where the test counted them), with the stock baseline the
# report shows beside it (null for none).
SUMMARY_PAIR_KEYS = ('key', 'source', 'target', 'address', 'status', 'receiver_bps', 'ceiling_bps', 'expectation_bps',
                     'limit', 'diagnosis', 'retransmits', 'rate_bps', 'rtt_ms', 'streams', 'duration', 'baseline_bps',
                     'baseline_run')
MEASURED = (PASS, FAIL, UNJUDGED)
TIME_FORMAT = '%Y-%m-%dT%H:%M:%SZ'
BASELINE_HELP = ('the verify_baseline artifact of a run labelled stock: a mapping with id, time (UTC, '
                 'YYYY-MM-DDThh:mm:ssZ), label stock and pairs, each pair a mapping with key and receiver_bps (as AWX '
                 'passes it on, or a file holds it: -e @file.json with {"verify_baseline": {...}}), or its JSON text; '
                 '{} for none')


class ReportError(ValueError):
    """An input the report cannot use; the message names it."""


def check_label(label, name='verify_label'):
    if not isinstance(label, str) or not LABEL_RE.match(label):
        raise ReportError('%s: %s is not a run label; expected %s.' % (name, bdp.show_value(label), LABEL_HELP))
    return label


def pair_key(source, target):
    return '%s -> %s' % (source, target)


def _int_or_none(value):
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _window_bytes(limits, side):
    for item in limits or []:
        if str(item.get('name', '')).startswith(side + ' window') and 'buffer_bytes' in item:
            return _int_or_none(item['buffer_bytes'])
    return None


def normalise(entry, check_mode=False):
    """One tested pair as the report keeps it.

    ``entry``: {'pair': the role's plan of the pair (source, target, address, rate, rtt_ms, rtt_source, streams,
    duration, omit, min_fraction, expect), 'result': the registered iperf3_verify result ({} when it did not run),
    'error': the message of the task that stopped the test, or empty}.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get('pair'), dict):
        raise ReportError('results: each item needs a "pair" mapping (source, target, ...); got %s.'
                          % bdp.show_value(entry))
    pair, result = entry['pair'], entry.get('result') or {}
    if not pair.get('source') or not pair.get('target'):
        raise ReportError('results: a pair needs "source" and "target" (inventory names); got %s.'
                          % bdp.show_value(pair))
    out = {'source': str(pair['source']), 'target': str(pair['target']), 'address': pair.get('address'),
           'key': pair_key(pair['source'], pair['target'])}
    for name in ('rate', 'rtt_ms', 'rtt_source', 'streams', 'duration', 'omit', 'min_fraction', 'expect'):
        out[name] = pair.get(name)
    try:
        out['rate_bps'] = bdp.parse_rate(pair['rate'], 'rate') if pair.get('rate') not in (None, '') else None
    except bdp.UnitError:
        out['rate_bps'] = None
    for name in FIGURES:
        out[name] = result.get(name)
    for name in ('receiver_bps', 'sender_bps', 'retransmits', 'ceiling_bps', 'expectation_bps'):
        out[name] = _int_or_none(out[name])
    out['receive_buffer_bytes'] = _window_bytes(result.get('limits'), 'receive')
    out['send_buffer_bytes'] = _window_bytes(result.get('limits'), 'send')
    out['measured'] = bool(result.get('measured')) and out['receiver_bps'] is not None
    out['diagnosis'] = [str(item) for item in result.get('diagnosis') or []]
    error = str(entry.get('error') or '').strip()
    out['msg'] = error or str(result.get('msg') or '').strip()
    if out['measured']:
        passed = result.get('passed')
        out['status'] = UNJUDGED if passed is None else (PASS if passed else FAIL)
    elif check_mode and not error:
        out['status'] = CHECK
    else:
        out['status'] = ERROR
        if not out['diagnosis']:
            out['diagnosis'] = [out['msg'] or 'the test did not run']
    out['passed'] = {PASS: True, FAIL: False, ERROR: False}.get(out['status'])
    return out


def _survey(result):
    """(survey, error) of one registered bdp.wan_tune.nic_facts result: its interfaces, nic and host, or None with
    the message of a survey that failed or could not reach the host ('' for one that was skipped or not taken)."""
    if not isinstance(result, dict) or not result or result.get('skipped'):
        return None, ''
    if isinstance(result.get('nic'), dict) and isinstance(result.get('host'), dict):
        return dict((key, result.get(key)) for key in SURVEY_KEYS), ''
    return None, str(result.get('msg') or 'the survey returned nothing').strip()


def normalise_hosts(surveys):
    """The run's ``hosts``, {host: {'before': survey or None, 'after': survey or None, 'errors': [messages]}}, from
    ``surveys``: {'before': {host: nic_facts result}, 'after': {host: nic_facts result}}; None when no survey was
    taken (the role's verify_host_survey is false).  A host whose surveys were both skipped is left out."""
    if surveys is None:
        return None
    if not isinstance(surveys, dict) or not all(isinstance(surveys.get(side) or {}, dict) for side in SURVEY_SIDES):
        raise ReportError('surveys: %s is not {"before": {host: nic_facts result}, "after": {...}}.'
                          % bdp.show_value(surveys))
    hosts = {}
    for side in SURVEY_SIDES:
        for name, result in (surveys.get(side) or {}).items():
            found, error = _survey(result)
            entry = hosts.setdefault(str(name), {'before': None, 'after': None, 'errors': []})
            entry[side] = found
            if error:
                entry['errors'].append('the survey %s the tests failed: %s' % (side, error))
    return dict((name, entry) for name, entry in hosts.items()
                if entry['before'] or entry['after'] or entry['errors'])


def build_run(entries, label, when, check_mode=False, surveys=None):
    """The run: its id (from ``when``, a UTC datetime), label, pairs and what failed; with ``surveys`` (see
    normalise_hosts) its hosts too, and the diagnosis of each pair that fell short gains the hints of its hosts."""
    check_label(label)
    if not isinstance(entries, list):
        raise ReportError('results: %s is not a list of tested pairs.' % bdp.show_value(entries))
    pairs = [normalise(entry, check_mode) for entry in entries]
    hosts = normalise_hosts(surveys)
    for pair in pairs:
        if fell_short(pair):
            pair['diagnosis'] += diagnose.hints(pair, (hosts or {}).get(pair['source']),
                                                (hosts or {}).get(pair['target']))
    failed = [pair for pair in pairs if pair['status'] in FAILED]
    return {'schema': SCHEMA, 'id': when.strftime('%Y%m%dT%H%M%SZ'), 'time': when.strftime(TIME_FORMAT),
            'order': when.timestamp(),
            'label': label, 'check_mode': bool(check_mode), 'pairs': pairs,
            'failed_pairs': [pair['key'] for pair in failed],
            'passed': None if check_mode or not pairs else not failed, 'hosts': hosts}


def run_file_name(run, taken=()):
    """run-<id>[-n]-<label>.json, not one of ``taken``."""
    name, number = 'run-%s-%s.json' % (run['id'], run['label']), 1
    while name in taken:
        number += 1
        name = 'run-%s-%d-%s.json' % (run['id'], number, run['label'])
    return name


def parse_run(text):
    """A run from its JSON text, or None when it is not a run of this report."""
    try:
        run = json.loads(text)
    except ValueError:
        return None
    if not isinstance(run, dict) or run.get('schema') != SCHEMA or not isinstance(run.get('pairs'), list):
        return None
    return run


def _when(run):
    """What orders runs: the exact time of the run (``order``), then its time in seconds and its file name."""
    return (run.get('order') or 0, run.get('time', ''), run.get('file', ''))


def sort_runs(runs):
    """Oldest first."""
    return sorted(runs, key=_when)


def is_stock(run):
    """Whether ``run`` can be a stock baseline: labelled ``stock`` and measured (not check mode)."""
    return run.get('label') == STOCK and not run.get('check_mode')


def baseline(runs, run, key, given=None):
    """The pair ``key`` of the latest ``stock`` run before ``run`` that measured it, or None: of ``runs`` and the
    stock run ``given`` (given_baseline()).  The same run in both is the directory's: its exact time is never before
    the whole second of its summary, and on a tie its file name sorts last.  A run written with its baselines
    (``baseline_run`` in its pairs) keeps the one it was written with."""
    if run.get('label') == STOCK:
        return None
    recorded = [pair for pair in run.get('pairs', []) if pair.get('key') == key and 'baseline_run' in pair]
    if recorded:
        pair = recorded[0]
        return None if pair['baseline_run'] is None else {
            'key': key, 'receiver_bps': pair.get('baseline_bps'), 'run_id': pair['baseline_run']}
    found = None
    for other in sort_runs(list(runs) + ([given] if given else [])):
        if other is run or _when(other) >= _when(run) or not is_stock(other):
            continue
        for pair in other.get('pairs', []):
            if pair.get('key') == key and pair.get('measured'):
                found = dict(pair, run_id=other.get('id'), run_time=other.get('time'))
    return found


def record_baselines(run, runs, given=None):
    """Write into each pair of ``run`` its stock baseline (``baseline_bps`` and ``baseline_run``, null when there is
    none), as its report shows it, so that the run's JSON keeps it and a later page shows it the same way whatever
    is given then."""
    for pair in run['pairs']:
        base = baseline(runs, run, pair['key'], given)
        pair['baseline_bps'] = base['receiver_bps'] if base else None
        pair['baseline_run'] = base['run_id'] if base else None
    return run


# ----------------------------------------------------------------------------- artifacts

def summary(run):
    """The run as the job's artifact keeps it: label, id, time, passed, check_mode and per pair its verdict and
    figures (SUMMARY_PAIR_KEYS), without the iperf3 output or the host surveys."""
    pairs = []
    for pair in run['pairs']:
        item = dict((name, pair.get(name)) for name in SUMMARY_PAIR_KEYS)
        if item['retransmits'] is None:
            del item['retransmits']
        pairs.append(item)
    return {'label': run['label'], 'id': run['id'], 'time': run['time'], 'passed': run['passed'],
            'check_mode': bool(run.get('check_mode')), 'pairs': pairs}


def artifacts(run):
    """The job's artifacts of a run (set_stats, per_host false): ``verify``, its summary; for a stock run that
    measured (not check mode) also ``verify_baseline``, the same summary, which a later run reads back."""
    found = {ARTIFACT: summary(run)}
    if is_stock(run):
        found[BASELINE_ARTIFACT] = found[ARTIFACT]
    return found


def _refuse(name, reason):
    return ReportError('%s: %s; expected %s.' % (name, reason, BASELINE_HELP))


def _bps(value):
    """A goodput in bit/s as a summary holds it (a whole number, or a whole float from JSON), or None; False when
    it is no such number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 \
            or value != int(value):
        return False
    return int(value)


def _given_pair(name, index, pair):
    if not isinstance(pair, dict):
        raise _refuse(name, 'pairs[%d] is %s, not a pair of a verify summary' % (index, bdp.yaml_kind(pair)))
    key = pair.get('key')
    if not isinstance(key, str) or not key.strip():
        raise _refuse(name, 'pairs[%d] has no key (the pair, such as "a -> b"); it has %s'
                      % (index, ', '.join(sorted(str(item) for item in pair)) or 'nothing'))
    bps = _bps(pair.get('receiver_bps'))
    if bps is False:
        raise _refuse(name, 'pairs[%d] (%s) has receiver_bps %s, not a whole number of bit/s'
                      % (index, key, bdp.show_value(pair.get('receiver_bps'))))
    measured = pair['measured'] if 'measured' in pair else pair.get('status', PASS) in MEASURED
    return {'key': key, 'receiver_bps': bps, 'measured': bool(measured) and bps is not None}


def given_baseline(value, name=BASELINE_ARTIFACT):
    """The stock run given as ``value`` (the role's verify_baseline): a summary of artifacts() (or a run file of a
    report directory), as a mapping or its JSON text; None for none ({}, '' or null).  Returned as a run that
    baseline() takes (``given`` true, ordered by its time).  A value that is not a measured stock run is refused
    with a ReportError naming ``name``, what the value is and what is accepted."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError:
            raise _refuse(name, '%s is a string that is not JSON text' % bdp.show_value(value))
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise _refuse(name, 'is %s, not a verify summary' % bdp.yaml_kind(value))
    if not isinstance(value.get('pairs'), list):
        raise _refuse(name, 'is a mapping without a pairs list (its keys: %s), not a verify summary'
                      % ', '.join(sorted(str(key) for key in value)))
    run_id, label = value.get('id'), value.get('label')
    if not isinstance(run_id, str) or not run_id.strip():
        raise _refuse(name, 'the summary has no run id (id: %s)' % bdp.show_value(run_id))
    if label != STOCK:
        raise _refuse(name, 'run %s is labelled %s, not stock, so it is no stock baseline'
                      % (run_id, bdp.show_value(label)))
    if value.get('check_mode'):
        raise _refuse(name, 'run %s ran in check mode and measured nothing' % run_id)
    try:
        when = datetime.datetime.strptime(str(value.get('time')), TIME_FORMAT).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        raise _refuse(name, 'run %s has no time to order it by (time: %s)' % (run_id, bdp.show_value(value.get('time'))))
    order = value.get('order')
    if isinstance(order, bool) or not isinstance(order, (int, float)):
        order = when.timestamp()
    pairs = [_given_pair(name, index, pair) for index, pair in enumerate(value['pairs'])]
    return {'schema': SCHEMA, 'id': run_id, 'time': when.strftime(TIME_FORMAT), 'order': order, 'label': STOCK,
            'check_mode': False, 'pairs': pairs, 'given': True}


def mbit(bps):
    return '-' if bps is None else '%.1f' % (bps / 1e6)


def percent(fraction):
    return '-' if fraction is None else '%.0f %%' % (float(fraction) * 100)


def one_line(pair):
    """One line for a pair: what it carried against what, and the verdict."""
    head = '%s (%s): ' % (pair['key'], pair.get('address') or pair['target'])
    if pair['status'] == CHECK:
        return head + 'check mode, not tested (%s s, %s stream%s); ceiling %s Mbit/s (%s)' % (
            pair.get('duration'), pair.get('streams'), '' if pair.get('streams') == 1 else 's',
            mbit(pair.get('ceiling_bps')), pair.get('limit') or 'unknown')
    if pair['status'] == ERROR:
        return head + 'ERROR: ' + (pair['diagnosis'][0] if pair['diagnosis'] else 'not measured')
    text = head + '%s Mbit/s of ceiling %s Mbit/s (%s), expectation %s Mbit/s: %s' % (
        mbit(pair['receiver_bps']), mbit(pair['ceiling_bps']), pair.get('limit') or 'unknown',
        mbit(pair['expectation_bps']), pair['status'])
    if pair['status'] == FAIL and pair['diagnosis']:
        text += '. Likely limit: ' + pair['diagnosis'][0]
    return text


def failure_message(run):
    """The message of a run with failed pairs: each pair and its diagnosis."""
    failed = [pair for pair in run['pairs'] if pair['status'] in FAILED]
    return ('%d of %d path test%s failed (run %s, label %s): %s' % (
        len(failed), len(run['pairs']), '' if len(run['pairs']) == 1 else 's', run['id'], run['label'],
        ' | '.join(one_line(pair) for pair in failed)))


def fell_short(pair):
    """The pair failed, or was measured below its min_fraction without a verdict (its hosts' surveys may say why)."""
    if pair.get('status') == FAIL:
        return True
    fraction, least = pair.get('fraction'), pair.get('min_fraction')
    return (pair.get('status') == UNJUDGED and fraction is not None and least is not None
            and float(fraction) < float(least))


def shows_diagnosis(pair):
    """Whether the report shows the pair's diagnosis: it failed, or fell short of its min_fraction unjudged."""
    return pair['status'] in FAILED or fell_short(pair)


# ----------------------------------------------------------------------------- Hosts

HOSTS_NOTE = ('Surveyed by bdp.wan_tune.nic_facts on each host of the play before the first test and after the '
              'last. Drops and time squeezes: what rose between the two surveys (over every test of the host), or '
              'the count since boot where only one survey was taken.')
NO_SURVEY = 'No host survey in this run (verify_host_survey: false).'
HOST_COLUMNS = (('host', 'Host'), ('survey', 'Survey'), ('governor', 'CPU governor'), ('irqbalance', 'irqbalance'),
                ('softnet_drops', 'Softnet drops'), ('time_squeezes', 'Time squeezes'))
NIC_COLUMNS = (('host', 'Host'), ('interface', 'Interface'), ('driver', 'Driver'), ('speed', 'Speed (Mbit/s)'),
               ('rings', 'Rings (current of maximum)'), ('tx_queue_len', 'txqueuelen'), ('qdisc', 'Root qdisc'),
               ('numa_node', 'NUMA node'), ('ring_drops', 'Ring/missed drops'))


def _count(value, since_boot):
    return ('%d since boot' % value) if since_boot else '+%d' % value


def _ring_drops(before, after):
    """The ring/missed drops of one interface: the counters that rose from ``before`` (None: only one survey), else
    the counters above zero since boot; 'unknown' when the interface reports none."""
    counters = after.get('counters') or {}
    if not isinstance(counters.get('rx_missed_errors'), int) and not (after.get('driver_drops') or {}).get('supported'):
        return 'unknown'
    if before is not None:
        rose = diagnose.ring_drops(before, after)
        return ', '.join('%s +%d' % item for item in sorted(rose.items())) or 'none'
    found = dict((after.get('driver_drops') or {}).get('counters') or {}, rx_missed_errors=counters.get('rx_missed_errors'))
    text = ', '.join('%s %d' % (key, value) for key, value in sorted(found.items()) if isinstance(value, int) and value)
    return (text + ' since boot') if text else 'none since boot'


def _nic_row(host, name, facts, before):
    speed = facts.get('speed_mbps')
    return {'host': host, 'interface': '%s (%s)' % (name, facts['reason']) if facts.get('reason') else name,
            'driver': facts.get('driver') or '-', 'speed': str(speed) if speed else 'not reported',
            'rings': survey.rings_text(facts.get('rings')),
            'tx_queue_len': '-' if facts.get('tx_queue_len') is None else str(facts['tx_queue_len']),
            'qdisc': facts.get('qdisc') or 'unknown (no tc)',
            'numa_node': 'none' if facts.get('numa_node') is None else str(facts['numa_node']),
            'ring_drops': _ring_drops(before, facts)}


def _host_row(name, entry):
    """One host of the Hosts section (see host_rows)."""
    before, after = entry.get('before'), entry.get('after')
    latest, both = after or before, bool(before and after)
    row = {'host': name, 'errors': list(entry.get('errors') or []), 'nics': []}
    if not latest:
        row.update((key, '-') for key, _title in HOST_COLUMNS[2:])
        row['survey'] = 'not surveyed'
        return row
    row['survey'] = 'before and after the tests' if both else 'before the tests only' if before else 'after the tests only'
    facts = latest.get('host') or {}
    governor, softnet = facts.get('governor') or {}, facts.get('softnet') or {}
    row['governor'] = ', '.join(governor.get('governors') or []) if governor.get('supported') else 'unsupported'
    row['irqbalance'] = 'running' if facts.get('irqbalance') else 'not running'
    if not softnet.get('supported'):
        row['softnet_drops'] = row['time_squeezes'] = 'unknown'
    else:
        counts = diagnose.softnet_rise(before.get('host') or {}, facts) if both else softnet
        row['softnet_drops'] = _count(counts['dropped'], not both)
        row['time_squeezes'] = _count(counts['time_squeeze'], not both)
    nics, earlier = latest.get('nic') or {}, (before.get('nic') or {}) if both else {}
    order = [nic for nic in latest.get('interfaces') or [] if nic in nics]
    for nic in order + sorted(set(nics) - set(order)):
        row['nics'].append(_nic_row(name, nic, nics[nic], earlier.get(nic)))
    return row


def host_rows(run):
    """The Hosts section of a run, one item per host of its pairs (in their order) and per other host surveyed:
    the text of each column of HOST_COLUMNS, 'errors' (a survey that failed) and 'nics' (one item per interface
    surveyed, the text of each column of NIC_COLUMNS); None when the run took no survey.  Markdown and HTML show
    the same text."""
    hosts = run.get('hosts')
    if hosts is None:
        return None
    names = []
    for name in [item for pair in run['pairs'] for item in (pair['source'], pair['target'])] + sorted(hosts):
        if name not in names:
            names.append(name)
    return [_host_row(name, hosts.get(name) or {}) for name in names]


# ----------------------------------------------------------------------------- the pages

def _verdict(run):
    """(the page's verdict word, the Markdown line's verdict)."""
    if run.get('check_mode'):
        return 'check mode', 'check mode, nothing measured'
    if not run['pairs']:
        return 'no pairs', 'no pairs'
    if run.get('passed'):
        return PASS, PASS
    return FAIL, 'FAIL: %s' % ', '.join(run.get('failed_pairs') or [])


def _pair_view(pair, run, runs):
    base = baseline(runs, run, pair['key'])
    return {'key': pair['key'], 'address': str(pair.get('address') or ''), 'status': pair['status'],
            'goodput': mbit(pair.get('receiver_bps')), 'ceiling': mbit(pair.get('ceiling_bps')),
            'limit': pair.get('limit') or '-', 'expectation': mbit(pair.get('expectation_bps')),
            'share': percent(pair.get('fraction')),
            'baseline': '%s (%s)' % (mbit(base['receiver_bps']), base['run_id']) if base else '-',
            'problem': shows_diagnosis(pair),
            'diagnosis': (' | '.join(pair['diagnosis']) or pair.get('msg') or '') if shows_diagnosis(pair) else '',
            'path': '%s %s, %s ms (%s), %s stream%s' % (
                pair['key'], pair.get('rate'), pair.get('rtt_ms'), pair.get('rtt_source') or 'given',
                pair.get('streams'), '' if pair.get('streams') == 1 else 's'),
            'receiver_bps': pair.get('receiver_bps'), 'ceiling_bps': pair.get('ceiling_bps'),
            'rate_bps': pair.get('rate_bps'), 'baseline_bps': base['receiver_bps'] if base else None}


def _hosts_view(run):
    """The Hosts section: None for a run kept before the surveys existed (no 'hosts'), 'rows' None for a run that
    took none."""
    if 'hosts' not in run:
        return None
    rows = host_rows(run)
    return {'rows': rows, 'nics': [nic for row in rows or [] for nic in row['nics']],
            'errors': ['%s: %s' % (row['host'], error) for row in rows or [] for error in row['errors']]}


def run_view(run, runs):
    """What the pages show of one run: text only, the same for Markdown and HTML (the role's templates)."""
    verdict, line = _verdict(run)
    return {'file': run.get('file', run['id']), 'id': run['id'], 'label': run['label'], 'time': run['time'],
            'verdict': verdict, 'verdict_line': line, 'failed_pairs': list(run.get('failed_pairs') or []),
            'pairs': [_pair_view(pair, run, runs) for pair in run['pairs']], 'hosts': _hosts_view(run)}


def page(run, runs, limit=20):
    """The model of the role's templates/report.md.j2 (``latest``: ``run``) and report.html.j2 (``runs``: the newest
    ``limit`` of ``runs``, newest first, and ``kept``: how many there are)."""
    shown = list(reversed(sort_runs(runs)))[:limit]
    return {'latest': run_view(run, runs), 'runs': [run_view(item, runs) for item in shown], 'kept': len(runs),
            'hosts_note': HOSTS_NOTE, 'no_survey': NO_SURVEY, 'host_columns': [list(item) for item in HOST_COLUMNS],
            'nic_columns': [list(item) for item in NIC_COLUMNS]}
