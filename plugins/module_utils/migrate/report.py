# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's progress line and report: the figures of one run from the runner's state, as JSON, Markdown and
one HTML page.  Pure functions: the module bdp.wan_tune.migrate_report writes the files.

Goodput is the files' bytes over the copying phase (from the first stream's start to the last one's end); the
start-up (the plan, the certificates, the unit) and the proof are reported beside it, not in it.
"""

import html
import json
import time

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import human_bytes, human_rate

SCHEMA = 1
GB = 10 ** 9
STREAM_FIELDS = ('stream', 'bytes', 'started', 'ended', 'rc', 'cpu_seconds', 'literal_bytes')


def mbit(bps):
    return human_rate(int(bps)) if bps else '-'


def progress_line(progress, now):
    """'1.2 GB of 2.4 GB (50 %), 812 Mbit/s, ETA 12 s (copying, 4 streams)' from the runner's state."""
    if not progress:
        return 'starting'
    done, total = progress.get('bytes_done') or 0, progress.get('bytes_total') or 0
    there = min(total, done + (progress.get('present_bytes') or 0))      # a run after an interruption
    started = (progress.get('phases') or {}).get('copying', [progress.get('started')])[0] or now
    elapsed = max(now - started, 0.001)
    rate = done * 8.0 / elapsed
    line = '%s of %s (%d %%), %s' % (human_bytes(there), human_bytes(total), 100 * there // total if total else 100,
                                     mbit(rate))
    if progress.get('state') == 'copying' and rate > 0 and total > there:
        line += ', ETA %d s' % ((total - there) * 8.0 / rate)
    return '%s (%s, %d stream%s)' % (line, progress.get('state'), len(progress.get('streams') or []),
                                     '' if len(progress.get('streams') or []) == 1 else 's')


def build(status, target, sender, receiver_cpu_after=None, when=None):
    """The report of one run: the fields docs/migration.md lists.  ``receiver_cpu_after``: the receiver's daemon's
    CPU time in ns now (the runner's state holds it from before the run).  ``when`` defaults to the run's end (its
    start when it has none, as after SIGKILL), so that the report of one run has one name however often it is
    read."""
    progress = status.get('progress') or {}
    moment = progress.get('ended') or progress.get('started') or time.time()
    when = when or time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(moment))
    plan = progress.get('plan') or {}
    before = progress.get('cpu_before')
    receiver_cpu_seconds = (receiver_cpu_after - before) / 1e9 \
        if isinstance(before, int) and isinstance(receiver_cpu_after, int) and receiver_cpu_after >= before else None
    phases = progress.get('phases') or {}
    copying = phases.get('copying') or [None, None]
    # the proof and what it sent again (proving, resending, proving again); the destination made before the copy
    # counts to its start-up
    proving = [value for key, value in sorted(phases.items()) if key.startswith(('proving', 'resending'))]
    seconds = (copying[1] - copying[0]) if copying[0] and copying[1] else None
    moved = progress.get('bytes_done') or 0
    total = progress.get('bytes_total') or plan.get('bytes') or 0
    gigabytes = float(total) / GB if total else 0
    run = {
        'schema': SCHEMA, 'when': when,
        'run_id': progress.get('run_id'), 'sender': sender, 'receiver': target.get('receiver'), 'module': target.get('module'),
        'destination': target.get('dest'), 'transport': target.get('transport'), 'state': status.get('state'),
        'bytes': total, 'files': progress.get('files', plan.get('files')),
        'streams': progress.get('stream_count', plan.get('streams')),
        'seconds': round(seconds, 3) if seconds else None,
        'goodput_bps': int(moved * 8 / seconds) if seconds else None,
        'startup_seconds': round(copying[0] - progress['started'], 3) if copying[0] and progress.get('started')
        else None,
        'proof_seconds': round(sum(end - start for start, end in proving if start and end), 3) if proving else None,
        'total_seconds': round(progress['ended'] - progress['started'], 3) if progress.get('ended') else None,
        'proof': progress.get('proof'), 'verified': progress.get('verified'),
        'mismatches': progress.get('mismatches'), 'resent_bytes': progress.get('resent_bytes'),
        'literal_bytes': progress.get('literal_bytes'), 'present_bytes': progress.get('present_bytes'),
        'runs': progress.get('runs'), 'message': progress.get('message') or '',
        'per_stream': [dict((key, stream.get(key)) for key in STREAM_FIELDS)
                       for stream in progress.get('streams') or []],
        'plan': dict((key, plan.get(key)) for key in ('streams', 'streams_reason', 'per_stream', 'largest', 'bound',
                                                      'seconds')),
        'sender_cpu_seconds_per_gb': round(progress['cpu_seconds'] / gigabytes, 3)
        if progress.get('cpu_seconds') is not None and gigabytes else None,
        'receiver_cpu_seconds_per_gb': round(receiver_cpu_seconds / gigabytes, 3)
        if receiver_cpu_seconds is not None and gigabytes else None,
    }
    if target.get('owners') is False:
        run['owners_note'] = ('the module %s does not run as root (its uid), so the files got its owner and group, '
                              'not their own; give the module uid: root and gid: root to keep them'
                              % target.get('module'))
    if run['proof'] == 'size':
        run['proof_note'] = ('proof size: sizes and modification times compared, not the content; a file changed on '
                             'the receiver with the same size and time is not found (use migrate_proof=checksum)')
    return run


def verdict(run):
    if run['state'] != 'done':
        return 'NOT DONE (%s)' % run['state']
    if run['verified']:
        return 'VERIFIED (%s)' % run['proof']
    return 'NOT VERIFIED (%d mismatches)' % (run['mismatches'] or 0)


def markdown(run):
    lines = ['# Migration %s -> %s:%s (%s)' % (run['sender'], run['receiver'], run['module'], run['when']), '',
             '**%s**%s' % (verdict(run), ': ' + run['message'] if run['message'] else ''), '',
             '| figure | value |', '|---|---|']
    rows = [('destination', run['destination']), ('transport', run['transport']),
            ('bytes', human_bytes(run['bytes'] or 0)), ('files', run['files']), ('streams', run['streams']),
            ('goodput', mbit(run['goodput_bps'])), ('copy seconds', run['seconds']),
            ('start-up seconds', run['startup_seconds']), ('proof seconds', run['proof_seconds']),
            ('proof', run['proof']), ('verified', run['verified']), ('mismatches', run['mismatches']),
            ('bytes sent again', human_bytes(run['resent_bytes'] or 0)), ('runs', run['runs']),
            ('sender CPU s per GB', run['sender_cpu_seconds_per_gb']),
            ('receiver CPU s per GB', run['receiver_cpu_seconds_per_gb'])]
    lines += ['| %s | %s |' % (key, '-' if value is None else value) for key, value in rows]
    for note in ('proof_note', 'owners_note'):
        if run.get(note):
            lines += ['', run[note]]
    if run['plan'].get('bound'):
        lines += ['', 'Plan: ' + run['plan']['bound']]
    lines += ['', '| stream | bytes | seconds | rsync exit | CPU s |', '|---:|---:|---:|---:|---:|']
    for stream in run['per_stream']:
        seconds = stream['ended'] - stream['started'] if stream.get('ended') and stream.get('started') else None
        cells = (stream['stream'], human_bytes(stream['bytes'] or 0), '%.1f' % seconds if seconds else '-',
                 stream['rc'], stream['cpu_seconds'])
        lines.append('| %s | %s | %s | %s | %s |' % cells)
    return '\n'.join(lines) + '\n'


def html_page(run):
    body = html.escape(markdown(run))
    return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Migration %s</title>\n'
            '<style>body{font-family:sans-serif;margin:2em} pre{background:#f6f6f6;padding:1em}</style></head>\n'
            '<body><h1>%s</h1>\n<pre>%s</pre>\n<script type="application/json" id="run">%s</script>\n</body></html>\n'
            % (html.escape(run['when']), html.escape(verdict(run)), body,
               json.dumps(run, sort_keys=True).replace('</', '<\\/')))


def file_stem(run):
    return 'migrate-%s-%s-%s' % (run['when'].replace(':', '').replace('-', ''), run['sender'], run['receiver'])
