# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's progress line and report: the figures of one pass from the runner's state, with the table of the
passes before it.  Pure functions: the module bdp.wan_tune.migrate_report writes the JSON, and the migrate role's
templates render the Markdown and HTML pages from it (the rows below, so that both show the same).

Goodput is what the pass sent (rsync's literal data) over its copying phase (from the start of the walk that lists
the tree, which the streams follow, to the last stream's end), and files per second the files it sent over the same
time; what the receiver had already is shown beside them, not in them; the start-up (the preflight, the
certificates, the unit) and the proof are reported apart, and so is the time to the first rsync and the first byte.
"""

import time

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import human_bytes, human_rate
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner

SCHEMA = 2
GB = 10 ** 9
STREAM_FIELDS = ('stream', 'bytes', 'files', 'parts', 'started', 'ended', 'rc', 'cpu_seconds', 'literal_bytes',
                 'max_rss_kb')
PASS_FIELDS = ('runs', 'run_id', 'state', 'started', 'ended', 'copy_seconds', 'proof_seconds', 'pass_seconds',
               'literal_bytes', 'files_sent', 'deleted', 'vanished', 'changed_at_source', 'differs_at_receiver',
               'verified', 'delete', 'proof')
# the head of the table of the passes (report.md.j2, report.html.j2): the cells of rows()['passes']
PASS_HEAD = ('pass', 'started (UTC)', 'state', 'deletes', 'sent', 'files sent', 'deleted', 'vanished',
             'changed at the source', 'differs at the receiver', 'copy s', 'proof s', 'whole pass s', 'goodput',
             'files/s', 'verified')
# What a pass always keeps (rsync -aH --numeric-ids), and what depends on the receiver (migrate_preserve).
ALWAYS = ('permissions', 'times of files and directories', 'symbolic links', 'hard links',
          'special files (FIFOs, sockets)')


def mbit(bps):
    return human_rate(int(bps)) if bps else '-'


def progress_line(progress, now):
    """'1.2 GB of 2.4 GB (50 %), 2300 of 3000 files (450/s), 812 Mbit/s, ETA 12 s (copying, 4 streams)' from the
    runner's state; while the runner still lists the tree, the totals are the preflight's and the line says how much
    is listed so far."""
    if not progress:
        return 'starting'
    done, total = progress.get('bytes_done') or 0, progress.get('bytes_total') or 0
    there = min(total, done + (progress.get('present_bytes') or 0))      # a run after an interruption
    started = (progress.get('phases') or {}).get('copying', [progress.get('started')])[0] or now
    elapsed = max(now - started, 0.001)
    rate = done * 8.0 / elapsed
    line = '%s of %s (%d %%), %s of %s files (%d/s), %s' % (
        human_bytes(there), human_bytes(total), 100 * there // total if total else 100,
        progress.get('files_done') or 0, progress.get('files') or 0, (progress.get('files_done') or 0) / elapsed,
        mbit(rate))
    if progress.get('state') == 'copying' and rate > 0 and total > there:
        line += ', ETA %d s' % ((total - there) * 8.0 / rate)
    walk = progress.get('walk') or {}
    listing = '; still listing the tree: %s files, %s so far (the totals are the preflight\'s)' % (
        walk.get('files', 0), human_bytes(walk.get('bytes', 0))) if walk.get('state') == 'listing' \
        and progress.get('state') == 'copying' else ''
    return '%s (%s, %d stream%s%s)' % (line, progress.get('state'), len(progress.get('streams') or []),
                                       '' if len(progress.get('streams') or []) == 1 else 's', listing)


def kept(progress, target):
    """([what the pass kept], [what it did not, and why]) from the runner's state and the destination."""
    preserve = progress.get('preserve') or {}
    found = (progress.get('plan') or {}).get('attributes') or {}
    yes, no = list(ALWAYS), []
    owners = target.get('owners', True)
    if owners:
        yes.append('owners and groups (by number)')
    else:
        no.append('owners and groups: the module %s does not run as root (its uid), so the files got its owner and '
                  'group; give the module uid: root and gid: root to keep them' % target.get('module'))
    # device nodes only where the pass kept them: a run state of before migrate_preserve's devices says nothing
    if preserve.get('devices') and owners:
        yes.append('device nodes')
    elif found.get('devices') and 'devices' in preserve:
        no.append('device nodes: %s (%d entries of the tree are device nodes)' % (
            'the module does not run as root' if preserve['devices'] else 'left out of migrate_preserve',
            found['devices']))
    for key, name in (('acls', 'ACLs'), ('xattrs', 'extended attributes')):
        if preserve.get(key):
            yes.append(name)
        elif found.get(key):
            no.append('%s: the receiver\'s filesystem does not take them (%d entries of the tree have them)'
                      % (name, found[key]))
    if preserve.get('sparse'):
        yes.append('holes of sparse files')
    elif found.get('sparse'):
        no.append('holes of sparse files: left out of migrate_preserve (%d files have them)' % found['sparse'])
    return yes, no


def passes(progress):
    """The passes of the migration, oldest first, this one last: [{pass figures (PASS_FIELDS), goodput_bps}]."""
    out = []
    for item in list(progress.get('history') or []) + ([progress['summary']] if progress.get('summary') else []):
        row = dict((key, item.get(key)) for key in PASS_FIELDS)
        if row['pass_seconds'] is None and row['started'] and (row['ended'] or 0) >= row['started']:  # older runner
            row['pass_seconds'] = round(row['ended'] - row['started'], 3)
        seconds = row.get('copy_seconds')
        row['goodput_bps'] = int((row.get('literal_bytes') or 0) * 8 / seconds) if seconds else None
        row['files_per_second'] = round((row.get('files_sent') or 0) / seconds, 1) if seconds else None
        out.append(row)
    return out


def build(status, target, sender, receiver_cpu_after=None, when=None):
    """The report of one pass: the fields docs/migration.md lists.  ``receiver_cpu_after``: the receiver's daemon's
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
    seconds = (copying[1] - copying[0]) if copying[0] and copying[1] else None
    files_sent = progress.get('files_sent')
    sent = progress.get('literal_bytes')
    sent = sent if sent is not None else progress.get('bytes_done') or 0
    total = progress.get('bytes_total') or plan.get('bytes') or 0
    # what the receiver held of the tree: the runner's count once its copy went through the tree, else what the
    # receiver held in all (its files that the source has not too), never more than the tree
    present = progress.get('tree_present_bytes')
    if present is None and progress.get('present_bytes') is not None:
        present = min(progress['present_bytes'], total)
    gigabytes = float(total) / GB if total else 0
    yes, no = kept(progress, target)
    run = {
        'schema': SCHEMA, 'when': when,
        'run_id': progress.get('run_id'), 'sender': sender, 'receiver': target.get('receiver'),
        'module': target.get('module'), 'destination': target.get('dest'), 'transport': target.get('transport'),
        'state': status.get('state'), 'bytes': total, 'files': progress.get('files', plan.get('files')),
        'streams': progress.get('stream_count', plan.get('streams')),
        'seconds': round(seconds, 3) if seconds else None,
        'sent_bytes': sent, 'files_sent': files_sent,
        'goodput_bps': int(sent * 8 / seconds) if seconds else None,
        'files_per_second': round(files_sent / seconds, 1) if seconds and files_sent is not None else None,
        'first_rsync_seconds': since(progress, progress.get('first_rsync')),
        'first_byte_seconds': since(progress, progress.get('first_byte')),
        'listed_at_first_rsync': ((progress.get('first_rsync') or {}).get('listed') or {}).get('files'),
        'runner_peak_rss_kb': progress.get('peak_rss_kb'), 'parts': (progress.get('walk') or {}).get('parts'),
        'startup_seconds': round(copying[0] - progress['started'], 3) if copying[0] and progress.get('started')
        else None,
        # the proof and what it sent again (proving, resending, proving again, proving deletes); the destination made
        # before the copy counts to its start-up
        'proof_seconds': _runner.proof_seconds(phases),
        'total_seconds': round(progress['ended'] - progress['started'], 3) if progress.get('ended') else None,
        'proof': progress.get('proof'), 'verified': progress.get('verified'),
        'mismatches': progress.get('mismatches'), 'resent_bytes': progress.get('resent_bytes'),
        'changed_at_source': progress.get('changed_at_source'),
        'differs_at_receiver': progress.get('differs_at_receiver'),
        'differs_at_receiver_names': progress.get('differs_at_receiver_names') or [],
        'mismatches_after_resend': progress.get('mismatches_after_resend'),
        'limits': progress.get('limits') or [],
        'bwlimit_bps': progress.get('bwlimit_start_bps', progress.get('bwlimit_bps')),
        'vanished': progress.get('vanished'), 'vanished_names': progress.get('vanished_names') or [],
        'delete': progress.get('delete'), 'deleted': progress.get('deleted'),
        'deleted_names': progress.get('deleted_names') or [], 'would_delete': progress.get('would_delete'),
        'extra': progress.get('extra'), 'excludes': progress.get('excludes') or [],
        'literal_bytes': progress.get('literal_bytes'), 'present_bytes': present,
        'runs': progress.get('runs'), 'message': progress.get('message') or '',
        'kept': yes, 'not_kept': no, 'passes': passes(progress),
        'per_stream': [dict((key, stream.get(key)) for key in STREAM_FIELDS)
                       for stream in progress.get('streams') or []],
        'plan': dict((key, plan.get(key)) for key in ('streams', 'streams_reason', 'parts', 'largest', 'bound',
                                                      'seconds', 'linked', 'attributes', 'peak_memory_kb')),
        'sender_cpu_seconds_per_gb': round(progress['cpu_seconds'] / gigabytes, 3)
        if progress.get('cpu_seconds') is not None and gigabytes else None,
        'receiver_cpu_seconds_per_gb': round(receiver_cpu_seconds / gigabytes, 3)
        if receiver_cpu_seconds is not None and gigabytes else None,
    }
    if run['proof'] == 'size':
        run['proof_note'] = ('proof size: sizes and modification times compared, not the content; a file changed on '
                             'the receiver with the same size and time is not found (use migrate_proof=checksum)')
    run['verdict'] = verdict(run)
    run['rows'] = rows(run)
    run['line'] = closing(run)
    return run


def since(progress, moment):
    """Seconds from the runner's start to ``moment`` (a time, or the first rsync's {at}), or None."""
    moment = moment.get('at') if isinstance(moment, dict) else moment
    return round(moment - progress['started'], 3) if moment and progress.get('started') else None


def verdict(run):
    if run['state'] != 'done':
        return 'NOT DONE (%s)' % (run['state'] or 'never ran')
    if run['verified']:
        return 'VERIFIED (%s)' % _dash(run['proof'])
    return 'NOT VERIFIED (%d mismatches)' % (run['mismatches'] or 0)


def _dash(value):
    return '-' if value is None else str(value)


def _seconds(value):
    return '-' if value is None else '%.1f' % value


def rows(run):
    """The rows the report's pages show, as text: {summary: [[figure, value]], passes: [[cells]], streams:
    [[cells]]} (the templates escape them)."""
    summary = [
        ('destination', run['destination']), ('transport', run['transport']),
        ('tree', '%s in %s files%s' % (human_bytes(run['bytes'] or 0), _dash(run['files']),
                                       ' (%d more names of hard-linked files)' % run['plan']['linked']
                                       if run['plan'].get('linked') else '')),
        ('already at the receiver before this pass (of the tree)',
         None if run['present_bytes'] is None else human_bytes(run['present_bytes'])),
        ('sent in this pass', '%s in %s files' % (human_bytes(run['sent_bytes'] or 0),
                                                  '-' if run['files_sent'] is None else run['files_sent'])),
        ('goodput of this pass', mbit(run['goodput_bps'])),
        ('files per second', _dash(run['files_per_second'])),
        ('whole pass seconds (the runner\'s start to its end, the proof done)', _seconds(run['total_seconds'])),
        ('copy seconds', _seconds(run['seconds'])),
        ('start-up seconds', _seconds(run['startup_seconds'])), ('proof seconds', _seconds(run['proof_seconds'])),
        ('time to the first rsync, s', '-' if run['first_rsync_seconds'] is None else '%s (%s files listed)' % (
            _seconds(run['first_rsync_seconds']), _dash(run['listed_at_first_rsync']))),
        ('time to the first byte, s', _seconds(run['first_byte_seconds'])),
        ('streams', '%s (%s parts)' % (_dash(run['streams']), _dash(run['parts']))),
        ('proof', run['proof']),
        ('mismatches found by the proof', '-' if run['mismatches'] is None else
         '%d: %s changed at the source during the pass, %s differed at the receiver' % (
             run['mismatches'], run['changed_at_source'] or 0, run['differs_at_receiver'] or 0)),
        ('differed at the receiver, sent again', _dash(run['differs_at_receiver'])),
        ('bytes sent again (the proof\'s second sending, and after an interruption)',
         human_bytes(run['resent_bytes'] or 0)),
        ('vanished from the source during the pass', run['vanished'] or 0),
        ('deleted at the receiver', ('%d%s' % (run['deleted'] or 0, '' if run['extra'] is None else
                                               ', %d left that the source has not' % run['extra']))
         if run['delete'] else 'no (migrate_delete: false)'),
        ('excluded', ', '.join(run['excludes']) or 'nothing'),
        ('rate limit', limits(run)),
        ('passes', len(run['passes'])),
        ('sender CPU s per GB', '-' if run['sender_cpu_seconds_per_gb'] is None else run['sender_cpu_seconds_per_gb']),
        ('runner peak memory', _dash(run['runner_peak_rss_kb'] and human_bytes(run['runner_peak_rss_kb'] * 1024))),
        ('receiver CPU s per GB', '-' if run['receiver_cpu_seconds_per_gb'] is None
         else run['receiver_cpu_seconds_per_gb'])]
    table = []
    for item in run['passes']:
        when = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(item['started'])) if item.get('started') else '-'
        table.append([_dash(item['runs']), when, item['state'] or '-', 'yes' if item['delete'] else 'no',
                      human_bytes(item['literal_bytes'] or 0), str(item['files_sent'] or 0), str(item['deleted'] or 0),
                      str(item['vanished'] or 0), str(item['changed_at_source'] or 0),
                      str(item['differs_at_receiver'] or 0), _seconds(item['copy_seconds']),
                      _seconds(item['proof_seconds']), _seconds(item['pass_seconds']), mbit(item['goodput_bps']),
                      _dash(item['files_per_second']), {True: 'yes', False: 'no'}.get(item['verified'], '-')])
    streams = []
    for stream in run['per_stream']:
        seconds = stream['ended'] - stream['started'] if stream.get('ended') and stream.get('started') else None
        streams.append([_dash(stream['stream']), human_bytes(stream['bytes'] or 0), str(stream.get('files') or 0),
                        str(stream.get('parts') or 0), _seconds(seconds), _dash(stream['rc']),
                        _dash(stream['cpu_seconds'])])
    return {'summary': [[key, _dash(value)] for key, value in summary], 'passes_head': list(PASS_HEAD),
            'passes': table, 'streams': streams, 'names': names(run)}


def names(run):
    """The lists of names the pages show, each [heading (with the whole count), [the first names]]: the files that
    differed at the receiver and were sent again, those that vanished from the source, those deleted at the receiver
    (or that a refused pass would have deleted)."""
    refused = run['state'] == 'refused'
    out = []
    for heading, listed, count in (
            ('Differed at the receiver, sent again', run['differs_at_receiver_names'], run['differs_at_receiver']),
            ('Vanished from the source during the pass', run['vanished_names'], run['vanished']),
            ('Would have been deleted at the receiver, refused' if refused else 'Deleted at the receiver',
             run['deleted_names'], run['would_delete'] if refused else run['deleted'])):
        count = max(count or 0, len(listed))
        if count:
            out.append(['%s (%d%s)' % (heading, count, '' if count == len(listed) else
                                       ', the first %d below' % len(listed) if listed else ', names not kept'),
                        list(listed)])
    return out


def limits(run):
    """The rate limit of the pass: at its start, and each change (migrate_action=limit) with its time (UTC)."""
    def rate(bps):
        return mbit(bps) if bps else 'no limit'
    text = rate(run['bwlimit_bps']) + (' at the start' if run['limits'] else '')
    for moment, bps in run['limits']:
        text += '; %s from %s' % (rate(bps), time.strftime('%H:%M:%S', time.gmtime(moment)))
    return text


def closing(run):
    """What the playbook's last line says of the pass (after the sender, the receiver and the state): every figure
    it has, none it has not."""
    words = 'pass %s' % run['runs'] if run['runs'] is not None else 'this pass'
    words += ' sent %s in %s files' % (human_bytes(run['sent_bytes'] or 0), run['files_sent'] or 0)
    if run['present_bytes'] is not None:
        words += ' (%s of the tree there before)' % human_bytes(run['present_bytes'])
    seconds = [text % value for text, value in (('%.1f s of copy', run['seconds']),
                                                ('%.1f s of proof', run['proof_seconds']),
                                                ('%.1f s in all', run['total_seconds'])) if value is not None]
    words += (' in ' + ', '.join(seconds)) if seconds else ''
    figures = [mbit(run['goodput_bps'])] if run['goodput_bps'] else []
    figures += ['%s stream(s)' % run['streams']] if run['streams'] is not None else []
    figures.append('verified' if run['verified'] else 'NOT verified')
    words += ', ' + ', '.join(figures)
    if run['differs_at_receiver']:
        words += '; %d file(s) differed at the receiver and were sent again%s' % (
            run['differs_at_receiver'], ' (repaired)' if run['verified'] and not run['mismatches_after_resend']
            else '')
    if run['changed_at_source']:
        words += '; %d changed at the source during the pass (sent again)' % run['changed_at_source']
    if run['delete'] and run['state'] != 'refused':
        words += '; %d deleted' % (run['deleted'] or 0)
    if run['vanished']:
        words += '; %d vanished from the source' % run['vanished']
    if run['message']:
        words += '; ' + run['message']
    return words


def file_stem(run):
    return 'migrate-%s-%s-%s' % (run['when'].replace(':', '').replace('-', ''), run['sender'], run['receiver'])
