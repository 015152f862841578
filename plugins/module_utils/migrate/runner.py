# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's runner: the program the sender's systemd unit runs (the module migrate_run writes this file, as
it is, into the run's directory and starts it with systemd-run), so that the transfer outlives the controller.

Standard library only: it runs outside Ansible.  The modules import it too, for the names of the run's files and
for read_state().  In the run's directory (root's, 0700): config.json (what to move and where), list-<n> (stream n's
paths, NUL-separated), password (0600, removed when the run ends), the TLS identity it was started with (tls-*,
its own copy: a certificate renewed or re-issued meanwhile does not change a running pass), state.json (what the
controller reads).

    python3 runner.py RUN_DIR

A run is one pass of the migration: with deletes (a mirror), first a dry run that counts what the receiver has and
the source no longer has, refused above the guard before anything moves; then the streams (one rsync each, over TLS
with rsync-ssl, or in cleartext; partial files kept in a partial directory, so that a run after SIGKILL continues
them); then the deletes; then the proof (an rsync dry run of every list with --checksum, or with rsync's size and time
check; with deletes, nothing extra at the receiver), the mismatches sent again and proven again, then a last pass
that gives the directories their times and modes.  A file that vanished from the source meanwhile is listed, not a
failure; a file that changed at the source after its copy is sent again and counted apart from one that differs at
the receiver.  SIGTERM stops the streams (the partial files stay).  Each pass ends with a summary, kept in the next
pass's history, so that the report shows the passes converge.
"""

import fcntl
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time

CONFIG, STATE, PASSWORD, LISTS = 'config.json', 'state.json', 'password', 'list-%d'
DIRS_LIST, RESEND_LIST, TOP_LIST = 'list-dirs', 'list-resend-%d', 'list-top'
# Held (flock) by the runner for its whole life: while it is held, the lists, the config and the password are the
# running migration's, and nothing may write them (migrate_plan and migrate_run try it without waiting).
RUN_LOCK = 'run.lock'
PARTIAL_DIR = '.bdp-migrate-partial'
LOCK_TRIES = 30                 # 3 s
INTERVAL = 2.0                  # seconds between two writes of state.json
IO_TIMEOUT = 300                # rsync --timeout: a stalled connection ends its stream (the next run continues it)
KEEP = 50                       # names kept of each kind (mismatched, vanished, deleted) in the state
PROGRESS_RE = re.compile(rb'^\s*([\d,]+)\s+\d+%.*?(?:xfr#(\d+))?')
STATS = {'literal': rb'Literal data: ([\d,]+)', 'matched': rb'Matched data: ([\d,]+)',
         'files': rb'Number of regular files transferred: ([\d,]+)', 'deleted': rb'Number of deleted files: ([\d,]+)'}
ITEM_RE = re.compile(rb'^([<>c.h*][fdLDS][^ ]*|\*deleting) +(.*)$')
# a file gone from the source after the plan listed it (link_stat, exit 23) or while rsync read it (exit 24)
VANISHED_RE = re.compile(rb'file has vanished: "(.*)"|link_stat "(.*)" failed: No such file or directory \(2\)')
ERROR_LINE = b'rsync: '
VANISHED_RCS = (23, 24)
ESCAPE_RE = re.compile(rb'\\#([0-7]{3})')
# the attributes the streams keep, each with its rsync option (the module's owners are --no-owner --no-group)
ATTRIBUTES = (('acls', '-A'), ('xattrs', '-X'), ('sparse', '-S'))


def nul_list(paths):
    """A file list as rsync's --files-from with --from0 reads it (any byte of a name kept)."""
    return b''.join(path.encode('utf-8', 'surrogateescape') + b'\0' for path in paths)


def unescape(raw):
    """A name as rsync printed it (bytes: \\#ooo for a byte it does not print, and for a backslash before #) as the
    file system holds it, as text (what is not UTF-8 as surrogate escapes, as walk() and nul_list() read it)."""
    return ESCAPE_RE.sub(lambda match: bytes([int(match.group(1), 8)]), raw).decode('utf-8', 'surrogateescape')


def private_dir(path):
    """The run's directory, root's and 0700 (made where missing; a mode changed by hand put back)."""
    if not os.path.isdir(path):
        os.makedirs(path, 0o700)
    os.chmod(path, 0o700)


def read_json(path, default=None):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return default


def write_json(path, data):
    """Atomically, 0600."""
    tmp = '%s.%d.tmp' % (path, os.getpid())
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(handle, 'w') as stream:
        json.dump(data, stream, indent=1, sort_keys=True)
    os.replace(tmp, path)


def read_state(run_dir):
    """The run's state.json, or None."""
    return read_json(os.path.join(run_dir, STATE))


def running(run_dir):
    """Whether a runner holds the run's lock (it runs, whatever systemd says yet)."""
    try:
        handle = os.open(os.path.join(run_dir, RUN_LOCK), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(handle)
    return False


def exit_code(status):
    """The exit code of a wait status; a signal's death is 128 + its number (never 0)."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def number(text):
    return int(text.replace(b',', b'')) if text else 0


def options(config):
    """The rsync options every rsync of ``config`` takes: the attributes it keeps, the partial directory, the
    password file, the time-out and the excludes (the same for the copy, the proof and the deletes)."""
    kept = ['-aH', '--numeric-ids'] + [option for key, option in ATTRIBUTES if (config.get('preserve') or {}).get(key)]
    # a module that does not run as root cannot give files their owners: rsync would end with exit 23 for each
    kept += [] if config.get('owners', True) else ['--no-owner', '--no-group']
    return kept + ['--partial-dir=' + PARTIAL_DIR, '--password-file=' + config['password_file'],
                   '--timeout=%d' % IO_TIMEOUT] + ['--exclude=' + pattern for pattern in config.get('excludes') or []]


def rsync_argv(config, list_path, extra=()):
    """The rsync (or rsync-ssl) command of one stream of ``config`` over the NUL-separated list at ``list_path``
    (None: the whole tree, as the deletes read it)."""
    binary = list(config.get('command') or ['rsync'])       # rsynctls.client_command()'s, through the config
    limit = ['--bwlimit=%dk' % max(1, config['bwlimit_bps'] // 8 // 1024 // config['streams'])] \
        if config.get('bwlimit_bps') else []
    listed = ['--from0', '--files-from=' + list_path] if list_path else []
    ends = [config['source'].rstrip('/') + '/', config['url']]
    return binary + options(config) + listed + limit + list(extra) + ends


def environment(config):
    env = dict(os.environ, LC_ALL='C')
    env.update(config.get('env') or {})
    return env


class Stream(object):
    """One rsync and what it said: bytes and files so far (progress2), its statistics, the items it printed (names
    unescaped), the files it found vanished, its end."""

    def __init__(self, index, argv, env, log, items=False):
        self.index, self.started, self.ended, self.rc = index, time.time(), None, None
        self.bytes, self.files, self.stats, self.cpu, self.max_rss_kb = 0, 0, {}, 0.0, 0
        self.items = [] if items else None
        self.log_path = log
        self.log = open(log, 'ab')
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.buffer = b''

    def feed(self, data):
        self.buffer += data
        parts = re.split(rb'[\r\n]', self.buffer)
        self.buffer = parts.pop()
        for part in parts:
            match = PROGRESS_RE.match(part)
            if match:
                self.bytes = number(match.group(1))
                self.files = number(match.group(2)) or self.files
            for key, pattern in STATS.items():
                found = re.search(pattern, part)
                if found:
                    self.stats[key] = number(found.group(1))
            item = ITEM_RE.match(part) if self.items is not None else None
            if item and (item.group(1) == b'*deleting' or item.group(1)[1:2] == b'f' and item.group(1)[:1] in b'<>c'):
                self.items.append((item.group(1).decode('ascii'), unescape(item.group(2))))

    def finish(self):
        dummy, status, usage = os.wait4(self.proc.pid, 0)
        self.rc = exit_code(status)
        self.cpu = usage.ru_utime + usage.ru_stime
        self.max_rss_kb = usage.ru_maxrss
        self.ended = time.time()
        self.proc.returncode = self.rc
        self.log.close()

    def vanished(self, source):
        """The files that vanished from the source (relative to it), from rsync's log; None when the log has an
        error of another kind (the stream failed)."""
        try:
            with open(self.log_path, 'rb') as handle:
                lines = handle.read().splitlines()
        except (IOError, OSError):
            return None
        prefix = (source.rstrip('/') + '/').encode('utf-8', 'surrogateescape')
        names = []
        for line in lines:
            match = VANISHED_RE.search(line)
            if match:
                name = match.group(1) if match.group(1) is not None else match.group(2)
                names.append(unescape(name[len(prefix):] if name.startswith(prefix) else name))
            elif line.startswith(ERROR_LINE):
                return None
        return names

    def figures(self):
        return {'stream': self.index, 'bytes': self.bytes, 'files': self.stats.get('files', self.files),
                'started': self.started, 'ended': self.ended, 'rc': self.rc, 'cpu_seconds': round(self.cpu, 3),
                'max_rss_kb': self.max_rss_kb,
                'literal_bytes': self.stats.get('literal', 0), 'matched_bytes': self.stats.get('matched', 0)}


class Proof(object):
    """What a pass proves and guards, with the runner's streams (Runner below): the deletes counted before anything
    moves and refused past the guard, the destination made once, the proof with its second sending."""

    def check(self, streams, phase):
        """Raise when one of ``streams`` failed; a file that vanished from the source is kept as such, not a
        failure."""
        for stream in streams:
            names = stream.vanished(self.config['source']) if stream.rc in VANISHED_RCS else None
            if names:
                self.vanished(names)
            elif stream.rc != 0:
                raise RuntimeError('%s: list %d ended with rsync exit %d: %s' % (
                    phase, stream.index, stream.rc, tail(self.run_dir, phase, stream.index)))

    def vanished(self, names):
        known = set(self.state['vanished_names'])
        new = [name for name in names if name not in known]
        self.state['vanished'] += len(new)
        self.state['vanished_names'] = (self.state['vanished_names'] + new)[:KEEP]

    def guard(self):
        """With deletes: count what the pass would delete; refuse (nothing moved, nothing deleted) above
        max_delete."""
        found = self.extraneous('counting deletes')
        if found is None:
            return True                     # stopped: run() says so
        limit = self.config.get('max_delete', -1)
        self.state['would_delete'] = len(found)
        if 0 <= limit < len(found):
            self.state['deleted_names'] = found[:KEEP]
            self.state['message'] = ('this pass would delete %d files in %s, more than migrate_max_delete=%d; nothing '
                                     'was deleted or sent. Check the source (a missing mount?), then give a higher '
                                     'migrate_max_delete (-1: no limit) to allow it.'
                                     % (len(found), self.config['url'], limit))
            return False
        return True

    def destination(self, lists):
        """The destination first, by one rsync: streams that start together would each create it, and the receiver
        of all but the first ends with 'mkdir ... failed: File exists' (rsync exit 11).  The top directory only: '.'
        in a list sends its files too (rsync's --dirs), --exclude=* keeps them back.  False when stopped."""
        if len(lists) < 2:
            return True
        top = os.path.join(self.run_dir, TOP_LIST)
        with open(top, 'wb') as handle:
            handle.write(nul_list(['.']))
        self.check(self.run_streams([top], ['--exclude=*'], phase='destination'), 'destination')
        return not self.stopping

    def extraneous(self, phase, real=False):
        """What the receiver's destination has and the source no longer has (the excludes and the partial files
        kept): counted by a dry run, or deleted (``real``); the names, or None when the runner was stopped."""
        extra = ['--recursive', '--delete', '--existing', '--ignore-existing', '--out-format=%i %n', '-8',
                 '--exclude=' + PARTIAL_DIR + '/']
        if not real:
            extra.append('--dry-run')
        elif self.config.get('max_delete', -1) >= 0:
            extra.append('--max-delete=%d' % self.config['max_delete'])
        streams = self.run_streams([None], extra, phase=phase, items=True)
        if self.stopping:
            return None
        self.check(streams, phase)
        return [name for kind, name in streams[0].items if kind == '*deleting']

    def mismatches(self, lists, phase):
        """The files whose content (proof checksum) or size and time (proof size) differ at the receiver, from a dry
        run of every list at once; None when the runner was stopped meanwhile."""
        extra = ['--dry-run', '--out-format=%i %n', '-8']
        if self.config['proof'] == 'checksum':
            extra.append('--checksum')
        streams = self.run_streams(lists, extra, phase=phase, items=True)
        if self.stopping:
            return None
        self.check(streams, phase)
        return [name for stream in streams for kind, name in stream.items if kind != '*deleting']

    def prove(self, lists):
        """Compare, send the mismatches again, compare them again: verified only at zero (never when stopped), and,
        with deletes, when the receiver has nothing the source has not.  A mismatch whose source changed after the
        copy began (its modification time) changed at the source (a live tree); the others differ at the receiver."""
        found = self.mismatches(lists, 'proving')
        if found is None:
            return
        copied = (self.state['phases'].get('copying') or [time.time()])[0]
        at_source = [name for name in found if changed_since(self.config['source'], name, copied)]
        self.state.update(mismatches=len(found), mismatched=found[:KEEP], changed_at_source=len(at_source),
                          differs_at_receiver=len(found) - len(at_source))
        verified = not found
        if found:
            resend = []
            for index in range(min(len(found), len(lists))):
                path = os.path.join(self.run_dir, RESEND_LIST % index)
                with open(path, 'wb') as handle:
                    handle.write(nul_list(found[index::len(lists)]))
                resend.append(path)
            sent = self.run_streams(resend, ['--info=stats2'] + (['--checksum'] if self.config['proof'] == 'checksum'
                                                                 else []), phase='resending')
            if self.stopping:
                return
            self.check(sent, 'resending')
            self.state['resent_bytes'] += sum(stream.stats.get('literal', 0) for stream in sent)
            left = self.mismatches(resend, 'proving again')
            if left is None:
                return
            self.state['mismatches_after_resend'] = len(left)
            verified = not left
        if self.config.get('delete'):
            extra = self.extraneous('proving deletes')
            if extra is None:
                return
            self.state['extra'] = len(extra)
            verified = verified and not extra
        self.state['verified'] = verified


class Runner(Proof):

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.config = read_json(os.path.join(run_dir, CONFIG))
        if not self.config:
            raise SystemExit('runner: no %s in %s' % (CONFIG, run_dir))
        self.config['password_file'] = os.path.join(run_dir, PASSWORD)
        previous = read_state(run_dir) or {}
        self.state = {'id': self.config['id'], 'run_id': self.config.get('run_id'), 'state': 'starting',
                      'runs': previous.get('runs', 0) + 1, 'plan': self.config.get('plan'),
                      'cpu_before': self.config.get('cpu_before'),
                      'started': time.time(), 'ended': None, 'bytes_total': self.config['bytes'],
                      'files': self.config['files'], 'streams': [], 'bytes_done': 0, 'files_done': 0,
                      'mismatches': None, 'verified': None, 'proof': self.config['proof'], 'resent_bytes': 0,
                      'message': '', 'transport': self.config['transport'],
                      'present_bytes': self.config.get('present_bytes', 0), 'stream_count': self.config['streams'],
                      'phases': {}, 'delete': bool(self.config.get('delete')), 'deleted': 0, 'deleted_names': [],
                      'vanished': 0, 'vanished_names': [], 'changed_at_source': 0, 'differs_at_receiver': 0,
                      'extra': None, 'preserve': self.config.get('preserve') or {},
                      'owners': self.config.get('owners', True), 'excludes': self.config.get('excludes') or [],
                      'history': (previous.get('history') or [])
                      + ([previous['summary']] if previous.get('summary') else [])}
        self.stopping = self.reloading = False
        self.last_write = 0
        self.current = []

    def save(self, force=False):
        now = time.time()
        if force or now - self.last_write >= INTERVAL:
            write_json(os.path.join(self.run_dir, STATE), self.state)
            self.last_write = now

    def run_streams(self, lists, extra=(), phase='copying', items=False, before=None):
        """Run one rsync per list at once (None: the whole tree); [Stream] when all have ended.  ``before``: each
        stream's figures of the rsyncs of its list that ran before in this phase (a restart), added to its own."""
        before = before or [None] * len(lists)
        env = environment(self.config)
        selector = selectors.DefaultSelector()
        streams = self.current = []
        self.state.setdefault('phases', {})[phase] = [time.time(), None]
        for index, path in enumerate(lists):
            if self.stopping:
                break
            stream = Stream(index, rsync_argv(self.config, path, extra), env,
                            os.path.join(self.run_dir, '%s-%d.log' % (phase, index)), items)
            selector.register(stream.proc.stdout, selectors.EVENT_READ, stream)
            streams.append(stream)
        open_pipes = len(streams)
        self.state['state'] = phase
        self.save(force=True)           # a new phase shows at once (status reads it)
        while open_pipes:
            for key, dummy in selector.select(timeout=INTERVAL):
                data = os.read(key.fileobj.fileno(), 65536)
                if data:
                    key.data.feed(data)
                    continue
                selector.unregister(key.fileobj)
                key.fileobj.close()
                key.data.finish()
                open_pipes -= 1
            if phase == 'copying':
                self.figures([add(before[stream.index], stream.figures()) for stream in streams])
            self.save()
        self.state['phases'][phase][1] = time.time()
        self.current = []
        return streams

    def figures(self, streams):
        """Keep the copying streams' figures, and their sums."""
        self.state['streams'] = streams
        self.state['bytes_done'] = sum(stream['bytes'] for stream in streams)
        self.state['files_done'] = sum(stream['files'] for stream in streams)

    def copy(self, lists):
        """The copying phase: [Stream] of its last rsyncs.  A new limit (SIGHUP: migrate_action=limit wrote it into
        the config) restarts the streams with it, each rsync continuing from what the one before sent (the partial
        files, rsync's quick check); each stream's figures add up over its rsyncs."""
        before = None
        while True:
            self.reloading = False
            streams = self.run_streams(lists, ['--info=progress2,stats2'], before=before)
            before = list(self.state['streams'])
            if self.stopping or not self.reloading:
                return streams

    def reload(self, signum, frame):
        """SIGHUP: read the limit from the config again; the copying streams restart with it, later phases take it."""
        limit = (read_json(os.path.join(self.run_dir, CONFIG)) or {}).get('bwlimit_bps', 0) or 0
        self.config['bwlimit_bps'] = limit
        self.state['bwlimit_bps'] = limit
        self.state.setdefault('limits', []).append([time.time(), limit])
        if self.state.get('state') == 'copying':
            self.reloading = True
            self.terminate()

    def stop(self, signum, frame):
        self.stopping = True
        self.state['message'] = 'stopped by signal %d; the partial files stay for the next run' % signum
        self.terminate()

    def terminate(self):
        """SIGTERM to the rsyncs that run (each keeps its partial file)."""
        for stream in self.current:
            if stream.rc is None:           # not poll(): it would reap the process that finish() waits for
                try:
                    os.killpg(stream.proc.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass

    def main(self):
        lock = os.open(os.path.join(self.run_dir, RUN_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
        for attempt in range(LOCK_TRIES):          # running() of a module holds it for an instant
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if attempt == LOCK_TRIES - 1:
                    os.close(lock)
                    return 3                        # another runner of this migration runs: its files are its own
                time.sleep(0.1)
        try:
            return self.run()
        finally:
            try:
                os.unlink(self.config['password_file'])
            except OSError:
                pass
            os.close(lock)

    def run(self):
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        signal.signal(signal.SIGHUP, self.reload)
        lists = [os.path.join(self.run_dir, LISTS % index) for index in range(self.config['streams'])]
        self.save(force=True)
        try:
            if self.config.get('delete') and not self.guard():
                return self.end('refused', 1)
            if self.stopping or not self.destination(lists):
                return self.end('stopped', 2)
            streams = self.copy(lists)
            if self.stopping:
                return self.end('stopped', 2)
            failed = [stream for stream in streams if stream.rc != 0
                      and not (stream.rc in VANISHED_RCS and stream.vanished(self.config['source']))]
            if failed:
                self.state['message'] = '; '.join('stream %d: rsync exit %d: %s' % (
                    stream.index, stream.rc, tail(self.run_dir, 'copying', stream.index)) for stream in failed)
                return self.end('failed', 1)
            self.check(streams, 'copying')
            if self.config.get('delete'):
                deleted = self.extraneous('deleting', real=True)
                if deleted is None:
                    return self.end('stopped', 2)
                self.state['deleted'], self.state['deleted_names'] = len(deleted), deleted[:KEEP]
            self.prove(lists)
            if self.stopping:
                return self.end('stopped', 2)
            directories = self.run_streams([os.path.join(self.run_dir, DIRS_LIST)], phase='directories')
            if self.stopping:
                return self.end('stopped', 2)
            self.check(directories, 'directories')
            return self.end('done' if self.state['verified'] else 'failed', 0 if self.state['verified'] else 1)
        except (RuntimeError, OSError) as exc:
            self.state['message'] = str(exc)
            return self.end('failed', 1)
        except Exception as exc:  # pylint: disable=broad-except
            # never left in a phase that migrate_status would take for an interruption that a new run continues
            self.state['message'] = 'the runner failed: %s: %s' % (type(exc).__name__, exc)
            return self.end('failed', 1)

    def end(self, state, code):
        self.state['state'] = state
        self.state['ended'] = time.time()
        streams = self.state['streams']
        literal = sum(stream.get('literal_bytes', 0) for stream in streams)
        missing = max(0, self.state['bytes_total'] - self.state.get('present_bytes', 0))
        self.state['literal_bytes'] = literal
        # what a pass after an interruption sent of what the receiver held already
        self.state['resent_bytes'] += max(0, literal - missing) if state == 'done' else 0
        self.state['files_sent'] = sum(stream.get('files', 0) for stream in streams)
        self.state['cpu_seconds'] = round(sum(stream.get('cpu_seconds', 0) for stream in streams), 3)
        copying = self.state['phases'].get('copying') or [None, None]
        self.state['summary'] = dict((key, self.state.get(key)) for key in (
            'runs', 'run_id', 'state', 'started', 'ended', 'bytes_done', 'literal_bytes', 'files_sent', 'resent_bytes',
            'deleted', 'vanished', 'changed_at_source', 'differs_at_receiver', 'verified', 'delete', 'proof'))
        self.state['summary']['copy_seconds'] = round(copying[1] - copying[0], 3) if copying[0] and copying[1] \
            else None
        self.save(force=True)
        return code


def add(before, figures):
    """A stream's figures after a restart: what its rsyncs before sent, and the last one's.  An rsync stopped for the
    restart printed no statistics: what it sent is its progress."""
    if not before:
        return figures
    out = dict(figures, started=before['started'])
    before = dict(before, literal_bytes=before.get('literal_bytes') or before.get('bytes', 0))
    for key in ('bytes', 'files', 'literal_bytes', 'matched_bytes', 'cpu_seconds'):
        out[key] = round(before.get(key, 0) + figures.get(key, 0), 3) if key == 'cpu_seconds' else \
            before.get(key, 0) + figures.get(key, 0)
    return out


def changed_since(source, name, moment):
    """Whether the file ``name`` of the source changed (its modification or status time) at or after ``moment``:
    a live tree changed it after its copy began.  A file that is gone changed too."""
    try:
        info = os.lstat(os.path.join(source, name))
    except OSError:
        return True
    return max(info.st_mtime, info.st_ctime) >= moment


def tail(run_dir, phase, index):
    """The last lines of a stream's log (rsync's errors), on one line."""
    try:
        with open(os.path.join(run_dir, '%s-%d.log' % (phase, index)), 'rb') as handle:
            text = handle.read()[-600:].decode('utf-8', 'replace')
    except (IOError, OSError):
        return 'no log'
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith('verify depth')]
    return ' | '.join(lines[-3:]) or 'no message'


if __name__ == '__main__':
    sys.exit(Runner(sys.argv[1]).main())  # pylint: disable=ansible-bad-function
