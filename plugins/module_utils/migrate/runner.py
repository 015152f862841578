# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's runner: the program the sender's systemd unit runs (the module migrate_run writes this file, as
it is, into the run's directory and starts it with systemd-run), so that the transfer outlives the controller.

Standard library only: it runs outside Ansible.  The modules import it too, for the names of the run's files and
for read_state().  In the run's directory (root's, 0700): config.json (what to move and where), list-<n> (stream n's
paths, NUL-separated), password (0600, removed when the run ends), state.json (what the controller reads).

    python3 runner.py RUN_DIR

A run: the streams (one rsync each, over TLS with rsync-ssl, or in cleartext; partial files kept in a partial
directory, so that a run after SIGKILL continues them), then the proof (an rsync dry run of every list with
--checksum, or with rsync's size and time check), the mismatches sent again and proven again, then a last pass that
gives the directories their times and modes.  SIGTERM stops the streams (the partial files stay).
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
PROGRESS_RE = re.compile(rb'^\s*([\d,]+)\s+\d+%')
STATS = {'literal': rb'Literal data: ([\d,]+)', 'matched': rb'Matched data: ([\d,]+)'}
ITEM_RE = re.compile(r'^([<>c.h*][fdLDS][^ ]*) (.*)$')


def nul_list(paths):
    """A file list as rsync's --files-from with --from0 reads it (any byte of a name kept)."""
    return b''.join(path.encode('utf-8', 'surrogateescape') + b'\0' for path in paths)


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


def rsync_argv(config, list_path, extra=()):
    """The rsync (or rsync-ssl) command of one stream of ``config`` over the NUL-separated list at ``list_path``."""
    binary = ['rsync-ssl', '--type=openssl', config.get('server_messages', '-M--no-msgs2stderr')] \
        if config['transport'] == 'tls' else ['rsync']
    limit = ['--bwlimit=%dk' % max(1, config['bwlimit_bps'] // 8 // 1024 // config['streams'])] \
        if config.get('bwlimit_bps') else []
    # a module that does not run as root cannot give files their owners: rsync would end with exit 23 for each
    limit += [] if config.get('owners', True) else ['--no-owner', '--no-group']
    return binary + ['-aH', '--numeric-ids', '--partial-dir=' + PARTIAL_DIR, '--from0', '--files-from=' + list_path,
                     '--password-file=' + config['password_file'], '--timeout=%d' % config.get('io_timeout', 300)] \
        + limit + list(extra) + [config['source'].rstrip('/') + '/', config['url']]


def environment(config):
    env = dict(os.environ, LC_ALL='C')
    env.update(config.get('env') or {})
    return env


class Stream(object):
    """One rsync and what it said: bytes so far (progress2), its statistics, its end."""

    def __init__(self, index, argv, env, log, items=False):
        self.index, self.started, self.ended, self.rc = index, time.time(), None, None
        self.bytes, self.stats, self.cpu, self.items = 0, {}, 0.0, [] if items else None
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
            for key, pattern in STATS.items():
                found = re.search(pattern, part)
                if found:
                    self.stats[key] = number(found.group(1))
            item = ITEM_RE.match(part.decode('utf-8', 'surrogateescape')) if self.items is not None else None
            if item and item.group(1)[1] == 'f' and item.group(1)[0] in '<>c':
                self.items.append(item.group(2))

    def finish(self):
        dummy, status, usage = os.wait4(self.proc.pid, 0)
        self.rc = exit_code(status)
        self.cpu = usage.ru_utime + usage.ru_stime
        self.ended = time.time()
        self.proc.returncode = self.rc
        self.log.close()

    def figures(self):
        return {'stream': self.index, 'bytes': self.bytes, 'started': self.started, 'ended': self.ended,
                'rc': self.rc, 'cpu_seconds': round(self.cpu, 3), 'literal_bytes': self.stats.get('literal', 0),
                'matched_bytes': self.stats.get('matched', 0)}


class Runner(object):

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
                      'files': self.config['files'], 'streams': [], 'bytes_done': 0, 'mismatches': None,
                      'verified': None, 'proof': self.config['proof'], 'resent_bytes': 0, 'message': '',
                      'transport': self.config['transport'], 'present_bytes': self.config.get('present_bytes', 0),
                      'stream_count': self.config['streams'], 'phases': {},
                      'history': (previous.get('history') or [])
                      + ([previous['summary']] if previous.get('summary') else [])}
        self.stopping = False
        self.last_write = 0
        self.current = []

    def save(self, force=False):
        now = time.time()
        if force or now - self.last_write >= INTERVAL:
            write_json(os.path.join(self.run_dir, STATE), self.state)
            self.last_write = now

    def run_streams(self, lists, extra=(), phase='copying', stagger=0.0, items=False):
        """Run one rsync per list at once; [Stream] when all have ended."""
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
            if stagger:
                time.sleep(stagger)
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
                self.state['streams'] = [stream.figures() for stream in streams]
                self.state['bytes_done'] = sum(stream.bytes for stream in streams)
            self.save()
        self.state['phases'][phase][1] = time.time()
        self.current = []
        return streams

    def stop(self, signum, frame):
        self.stopping = True
        self.state['message'] = 'stopped by signal %d; the partial files stay for the next run' % signum
        for stream in self.current:
            if stream.rc is None:           # not poll(): it would reap the process that finish() waits for
                try:
                    os.killpg(stream.proc.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass

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
        return [item for stream in streams for item in stream.items]

    def check(self, streams, phase):
        """Raise when one of ``streams`` failed."""
        for stream in streams:
            if stream.rc != 0:
                raise RuntimeError('%s: list %d ended with rsync exit %d: %s' % (
                    phase, stream.index, stream.rc, tail(self.run_dir, phase, stream.index)))

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
        lists = [os.path.join(self.run_dir, LISTS % index) for index in range(self.config['streams'])]
        self.save(force=True)
        try:
            if len(lists) > 1:
                # The destination first, by one rsync: streams that start together would each create it, and the
                # receiver of all but the first ends with 'mkdir ... failed: File exists' (rsync exit 11).  The top
                # directory only: '.' in a list sends its files too (rsync's --dirs), --exclude=* keeps them back.
                top = os.path.join(self.run_dir, TOP_LIST)
                with open(top, 'wb') as handle:
                    handle.write(nul_list(['.']))
                self.check(self.run_streams([top], ['--exclude=*'], phase='destination'), 'destination')
                if self.stopping:
                    return self.end('stopped', 2)
            streams = self.run_streams(lists, ['--info=progress2,stats2'], stagger=self.config.get('stagger', 0.0))
            self.state['streams'] = [stream.figures() for stream in streams]
            self.state['bytes_done'] = sum(stream.bytes for stream in streams)
            failed = [stream for stream in streams if stream.rc != 0]
            if self.stopping:
                return self.end('stopped', 2)
            if failed:
                self.state['message'] = '; '.join('stream %d: rsync exit %d: %s' % (
                    stream.index, stream.rc, tail(self.run_dir, 'copying', stream.index)) for stream in failed)
                return self.end('failed', 1)
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

    def prove(self, lists):
        """Compare, send the mismatches again, compare them again: verified only at zero (never when stopped)."""
        found = self.mismatches(lists, 'proving')
        if found is None:
            return
        self.state['mismatches'] = len(found)
        self.state['mismatched'] = found[:50]
        if not found:
            self.state['verified'] = True
            return
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
        self.state['verified'] = not left

    def end(self, state, code):
        self.state['state'] = state
        self.state['ended'] = time.time()
        streams = self.state['streams']
        literal = sum(stream.get('literal_bytes', 0) for stream in streams)
        missing = max(0, self.state['bytes_total'] - self.state.get('present_bytes', 0))
        self.state['literal_bytes'] = literal
        self.state['resent_bytes'] += max(0, literal - missing) if state == 'done' else 0
        self.state['cpu_seconds'] = round(sum(stream.get('cpu_seconds', 0) for stream in streams), 3)
        self.state['summary'] = dict((key, self.state.get(key)) for key in (
            'runs', 'state', 'started', 'ended', 'bytes_done', 'literal_bytes', 'resent_bytes', 'verified'))
        self.save(force=True)
        return code


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
