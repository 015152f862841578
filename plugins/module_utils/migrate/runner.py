# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's runner: the program the sender's systemd unit runs (the module migrate_run writes this file, as
it is, into the run's directory with its two helpers, tree.py and excludes.py, and starts it with systemd-run), so
that the transfer outlives the controller.

Standard library only: it runs outside Ansible.  The modules import it too, for the names of the run's files and
for read_state().  In the run's directory (root's, 0700): config.json (what to move and where), password (0600,
removed when the run ends), the TLS identity it was started with (tls-*, its own copy: a certificate renewed or
re-issued meanwhile does not change a running pass), state.json (what the controller reads), and what the pass
writes as it goes (0600): part-<n> (a part's names, NUL-separated), list-dirs, resend-part-<n> (the proof's
mismatches), the rsyncs' logs.

    python3 runner.py RUN_DIR

A run is one pass of the migration: with deletes (a mirror), first a dry run that counts what the receiver has and
the source no longer has, refused above the guard before anything moves; then the copy: the runner walks the tree
(tree.py, the excludes applied) and cuts it into parts while it walks (fpart's live mode: a part closes at
part_files names or part_bytes bytes), and each part goes to the first free of the N stream slots (one rsync
--files-from per part, over TLS (rsync with openssl s_client as its connect program) or in cleartext; a slot runs its parts one after another), so that
the first bytes move while the tree is still being listed, and no list of the whole tree is ever held; the names of
a hard-linked inode wait until all are met (or the walk ends) and go into one part, since rsync -H links names only
within one transfer.  Then the deletes; then the proof (an rsync dry run of every part with --checksum, or with
rsync's size and time check, N at a time; with deletes, nothing extra at the receiver), the mismatches sent again and
proven again, then a last pass that gives the directories their times and modes (rsync --existing
--ignore-existing: the copy made every directory the walk listed, and this pass makes and copies nothing, so that
what the pass copies, the proof has seen; what the source gains after the walk is the next pass's).  A file that
vanished from the source meanwhile is listed, not a failure (counted in a stream that failed too); a file that
changed at the source after its copy is sent again and counted apart from one that differs at the receiver.
SIGHUP restarts the running rsyncs with a new limit (the parts done stay done), SIGTERM stops them (the partial files
stay).  Each pass ends with a summary, kept in the next pass's history, so that the report shows the passes
converge.
"""

import collections
import fcntl
import glob
import json
import os
import re
import selectors
import signal
import stat
import subprocess
import sys
import time

if __name__ == '__main__':      # the runner's own copy, in the run's directory beside tree.py (never another version's)
    import tree as _tree  # pylint: disable=import-error
else:
    from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import tree as _tree

CONFIG, STATE, PASSWORD, PART = 'config.json', 'state.json', 'password', 'part-%06d'
DIRS_LIST, TOP_LIST = 'list-dirs', 'list-top'
# what a pass writes as it goes, removed when the next one starts (list-* of the versions that planned lists)
SCRATCH = ('part-*', 'resend-*', 'left-*', '*-tree', '*.log', 'list-[0-9]*', 'list-resend-*')
# Held (flock) by the runner for its whole life: while it is held, the config and the password are the running
# migration's, and nothing may write them (migrate_run tries it without waiting).
RUN_LOCK = 'run.lock'
PARTIAL_DIR = '.bdp-migrate-partial'
LOCK_TRIES = 30                 # 3 s
INTERVAL = 2.0                  # seconds between two writes of state.json
WALK_SLICE = 0.05               # seconds of walking between two looks at the rsyncs
IO_TIMEOUT = 300                # rsync --timeout: a stalled connection ends its stream (the next run continues it)
KEEP = 50                       # names kept of each kind (mismatched, vanished, deleted) in the state
# A part closes at PART_FILES names or PART_BYTES bytes (docs/migration.md, "Parts"): each part is one rsync, one
# connection, whose handshakes and slow start cost about a second on a long path, and whose file list both ends hold
# in memory; a tree smaller than N parts of these is cut into N parts (part_limits()), so that every stream has one.
PART_FILES = 20000
PART_BYTES = 8 * 2 ** 30
TREE = ''                       # a list that is the whole tree (the deletes)
PROGRESS_RE = re.compile(rb'\s*([\d,]+)\s+\d+%(?:.*?xfr#(\d+))?')
STATS = dict((key, re.compile(pattern)) for key, pattern in (
    ('literal', rb'Literal data: ([\d,]+)'), ('matched', rb'Matched data: ([\d,]+)'),
    ('files', rb'Number of regular files transferred: ([\d,]+)'), ('deleted', rb'Number of deleted files: ([\d,]+)')))
READ = 65536                    # bytes of an rsync's output read at once, into its stream's own buffer
ITEM_RE = re.compile(rb'^([<>c.h*][fdLDS][^ ]*|\*deleting) +(.*)$')
# a file gone from the source after the walk listed it (link_stat, exit 23) or while rsync read it (exit 24)
VANISHED_RE = re.compile(rb'file has vanished: "(.*)"|link_stat "(.*)" failed: No such file or directory \(2\)')
ERROR_LINE = b'rsync: '
VANISHED_RCS = (23, 24)
ESCAPE_RE = re.compile(rb'\\#([0-7]{3})')
# the attributes the streams keep, each with its rsync option (the module's owners are --no-owner --no-group)
ATTRIBUTES = (('acls', '-A'), ('xattrs', '-X'), ('sparse', '-S'))
SUMMED = ('bytes', 'files', 'literal_bytes', 'matched_bytes', 'parts')
# the phases of the proof and of what it sent again (their seconds are the proof's)
PROOF_PHASES = ('proving', 'resending')
# the states a run ends in that leave nothing half-sent: a pass after one of them is an ordinary pass, after any other
# it continues an interrupted one (what it sends of what the receiver held is sent again)
WHOLE = (None, 'done', 'refused')


def encode(path):
    return path.encode('utf-8', 'surrogateescape')


def nul_list(paths):
    """A file list as rsync's --files-from with --from0 reads it (any byte of a name kept)."""
    return b''.join(encode(path) + b'\0' for path in paths)


def unescape(raw):
    """A name as rsync printed it (bytes: \\#ooo for a byte it does not print, and for a backslash before #) as the
    file system holds it (bytes)."""
    return ESCAPE_RE.sub(lambda match: bytes([int(match.group(1), 8)]), raw)


def private_dir(path):
    """The run's directory, root's and 0700 (made where missing; a mode changed by hand put back)."""
    if not os.path.isdir(path):
        os.makedirs(path, 0o700)
    os.chmod(path, 0o700)


def private_file(path):
    """``path`` opened for writing (binary), new and 0600 from its first byte."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), 'wb')


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


def part_limits(names, total, streams):
    """(names, bytes) at which a part closes, for a tree of ``names`` names and ``total`` bytes (the preflight's
    counts) on ``streams`` streams: at most PART_FILES and PART_BYTES, cut so that the tree makes a whole number of
    rounds of ``streams`` parts of about equal size (every stream has work to the end)."""
    def limit(amount, most):
        rounds = -(-amount // (most * max(1, streams)))          # at least one part per stream
        return max(1, -(-amount // (rounds * max(1, streams)))) if amount > 0 else most
    return limit(names, PART_FILES), limit(total, PART_BYTES)


def peak_kb(pid='self'):
    """The peak resident set of a process (VmHWM), in kB, or None when it is gone.  Not getrusage()'s ru_maxrss: the
    kernel carries the high-water mark of the process that forked across exec, so an rsync (or a runner) would show
    at least its parent's."""
    try:
        with open('/proc/%s/status' % pid) as handle:
            for line in handle:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except (IOError, OSError, ValueError):
        pass
    return None


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
    # device nodes given up (migrate_preserve without devices); a config without the key is -a's, as before it
    kept += [] if (config.get('preserve') or {}).get('devices', True) else ['--no-devices']
    return kept + ['--partial-dir=' + PARTIAL_DIR, '--password-file=' + config['password_file'],
                   '--timeout=%d' % IO_TIMEOUT] + ['--exclude=' + pattern for pattern in config.get('excludes') or []]


def stream_limit_kib(bwlimit_bps, streams):
    """The --bwlimit of each of ``streams`` rsyncs, in KiB/s, of a migration held to ``bwlimit_bps`` (the plan's
    estimate takes the same figure)."""
    return max(1, bwlimit_bps // 8 // 1024 // streams)


def rsync_argv(config, list_path, extra=()):
    """The rsync command of one stream of ``config`` over the NUL-separated list at ``list_path``
    (TREE: the whole tree, as the deletes read it)."""
    binary = list(config.get('command') or ['rsync'])       # rsynctls.client_command()'s, through the config
    limit = ['--bwlimit=%dk' % stream_limit_kib(config['bwlimit_bps'], config['streams'])] \
        if config.get('bwlimit_bps') else []
    listed = ['--from0', '--files-from=' + list_path] if list_path else []
    ends = [config['source'].rstrip('/') + '/', config['url']]
    return binary + options(config) + listed + limit + list(extra) + ends


def environment(config):
    env = dict(os.environ, LC_ALL='C')
    env.update(config.get('env') or {})
    return env


class Stream(object):
    """One rsync of slot ``index`` over one list and what it said: bytes and files so far (progress2), its
    statistics, the names it itemized (unescaped, written NUL-separated to ``items``: the proof's mismatches, the
    deletes; counted, the first KEEP kept), the files it found vanished, its end."""

    def __init__(self, index, list_path, phase, argv, env, log, items=None):
        self.index, self.list_path, self.phase, self.log_path = index, list_path, phase, log
        self.started, self.ended, self.rc, self.restart = time.time(), None, None, False
        self.bytes, self.files, self.stats, self.cpu, self.max_rss_kb, self.sampled = 0, 0, {}, 0.0, None, 0
        self.items_path, self.count, self.names = items, 0, []
        self.items = private_file(items) if items else None
        self.log = private_file(log)
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.buffer, self.chunk = bytearray(), bytearray(READ)

    def read(self):
        """Read what rsync printed (into the stream's own buffers: with progress2, rsync prints a line per file, and
        a new bytes object for each read fragments the runner's heap); 0 at its end."""
        count = os.readv(self.proc.stdout.fileno(), [self.chunk])
        if count:
            self.feed(memoryview(self.chunk)[:count])
        return count

    def feed(self, data):
        """Take rsync's output: its itemized names, its statistics, and of its progress lines the last."""
        buffer = self.buffer
        buffer += data
        end = max(buffer.rfind(b'\r'), buffer.rfind(b'\n'))
        if end < 0:
            return
        for line in bytes(buffer[:end]).splitlines() if self.items is not None else ():
            item = ITEM_RE.match(line)
            if item and (item.group(1) == b'*deleting' or item.group(1)[1:2] == b'f' and item.group(1)[:1] in b'<>c'):
                name = unescape(item.group(2))
                self.items.write(name + b'\0')
                self.count += 1
                if len(self.names) < KEEP:
                    self.names.append(name.decode('utf-8', 'surrogateescape'))
        last = buffer.rfind(b'% ', 0, end)
        match = PROGRESS_RE.match(buffer, max(buffer.rfind(b'\r', 0, last), buffer.rfind(b'\n', 0, last)) + 1,
                                  end) if last >= 0 else None
        if match:
            self.bytes = number(match.group(1))
            self.files = number(match.group(2)) or self.files
        if buffer.find(b': ', 0, end) >= 0:
            for key, pattern in STATS.items():
                found = pattern.search(buffer, 0, end)
                if found:
                    self.stats[key] = number(found.group(1))
        del buffer[:end + 1]

    def sample(self, now):
        """The rsync's peak memory so far, read at most every INTERVAL / 4 seconds (not at its end: the kernel frees
        its memory before its output closes, so a part shorter than that may show none)."""
        if now - self.sampled >= INTERVAL / 4:
            self.sampled = now
            self.max_rss_kb = max(self.max_rss_kb or 0, peak_kb(self.proc.pid) or 0) or None

    def finish(self):
        dummy, status, usage = os.wait4(self.proc.pid, 0)
        self.rc = exit_code(status)
        self.cpu = usage.ru_utime + usage.ru_stime
        self.ended = time.time()
        self.proc.returncode = self.rc
        self.log.close()
        if self.items:
            self.items.close()

    def vanished(self, source):
        """([the files that vanished from the source (relative to it)], whether rsync's log has an error of another
        kind (the stream failed, and its vanished files count all the same))."""
        try:
            with open(self.log_path, 'rb') as handle:
                lines = handle.read().splitlines()
        except (IOError, OSError):
            return [], True
        prefix = encode(source.rstrip('/') + '/')
        names, failed = [], False
        for line in lines:
            match = VANISHED_RE.search(line)
            if match:
                name = match.group(1) if match.group(1) is not None else match.group(2)
                names.append(unescape(name[len(prefix):] if name.startswith(prefix) else name).decode(
                    'utf-8', 'surrogateescape'))
            elif line.startswith(ERROR_LINE):
                failed = True
        return names, failed

    @property
    def restarted(self):
        """Stopped for a new limit: marked by SIGHUP and ended by its SIGTERM.  An rsync that ended on its own before
        the signal (its end not read yet when SIGHUP came) finished its list: exit 0, or 23/24 for vanished files."""
        return self.restart and self.rc is not None and self.rc not in (0,) + VANISHED_RCS

    def figures(self):
        """The figures of this rsync; one stopped for a new limit (restarted) printed no statistics: what it sent is
        its progress, and its list runs again (no part done)."""
        restarted = self.restarted
        return {'stream': self.index, 'bytes': self.bytes, 'files': self.stats.get('files', self.files),
                'started': self.started, 'ended': self.ended, 'rc': None if restarted else self.rc,
                'cpu_seconds': round(self.cpu, 3), 'max_rss_kb': self.max_rss_kb, 'parts': 0 if restarted else 1,
                'literal_bytes': self.bytes if restarted else self.stats.get('literal', 0),
                'matched_bytes': self.stats.get('matched', 0), 'part': os.path.basename(self.list_path or '')}


class Parts(object):
    """The tree cut into parts while it is walked (fpart's live mode): a part closes at ``part_files`` names or
    ``part_bytes`` bytes (a file that would take it past the bytes starts the next one), and is written, NUL-separated,
    to part-<n> in the run's directory; the directories go to list-dirs as they are met (the last pass gives them
    their modes and times) and into the open part (not counted in its limits: the copy makes them).  A file with
    more than one name waits, by its inode, until all its names are met (or the walk ends), and then goes with them
    into one part: memory holds those names and the walk's stack only.
    ``walk`` is the state's figures of the walk, counted as it goes (each inode's bytes once)."""

    def __init__(self, run_dir, config, walk):
        self.run_dir, self.config, self.walk = run_dir, config, walk
        self.max_files = int(config.get('part_files') or PART_FILES)
        self.max_bytes = int(config.get('part_bytes') or PART_BYTES)
        self.handle, self.files, self.bytes, self.paths = None, 0, 0, []

    def __iter__(self):
        """None after each entry (the walk goes on), a part's path when the part closes."""
        walk, linked = self.walk, {}
        with private_file(os.path.join(self.run_dir, DIRS_LIST)) as dirs:
            dirs.write(b'.\0')                      # the tree's top directory gets its mode and times too
            for path, dummy, info in _tree.walk(self.config['source'], self.config.get('excludes') or []):
                names, size = [path], 0
                if info is None:
                    dirs.write(encode(path) + b'\0')
                    walk['dirs'] += 1
                    self.directory(path)
                    names = []
                elif not stat.S_ISREG(info.st_mode):
                    walk['others'] += 1
                elif info.st_nlink > 1:
                    walk['files'] += 1
                    names, size = self.link(linked, path, info)
                else:
                    walk['files'] += 1
                    walk['bytes'] += info.st_size
                    size = info.st_size
                yield from self.add(names, size)
                yield None
        for names, size, dummy in list(linked.values()):     # inodes with names outside the tree (or excluded)
            yield from self.add(names, size)
        if self.handle:
            yield self.close()
        walk.update(state='listed', ended=time.time())

    def link(self, linked, path, info):
        """([names], bytes) of the hard-linked inode of ``path`` once all its names are met, else ([], 0)."""
        key = (info.st_dev, info.st_ino)
        if key not in linked:
            linked[key] = ([], info.st_size, info.st_nlink)
            self.walk['bytes'] += info.st_size
        else:
            self.walk['linked'] += 1
        names, size, count = linked[key]
        names.append(path)
        if len(names) < count:
            return [], 0
        del linked[key]
        return names, size

    def directory(self, path):
        """A directory goes into the open part as well, not counted in its limits: the copy makes it (an empty one
        too), and the last pass, which gives the directories their times and modes, makes and copies nothing (what
        it would copy, the proof would not have seen)."""
        self.part().write(nul_list([path]))

    def part(self):
        """The open part (a new one when none is open)."""
        if not self.handle:
            self.paths.append(os.path.join(self.run_dir, PART % (len(self.paths) + 1)))
            self.handle = private_file(self.paths[-1])
        return self.handle

    def add(self, names, size):
        """Put ``names`` (of one inode: ``size`` bytes) into the open part: the parts it closed."""
        closed = []
        if not names:
            return closed
        if self.handle and (self.files + len(names) > self.max_files or self.bytes + size > self.max_bytes):
            closed.append(self.close())
        self.part().write(nul_list(names))
        self.files += len(names)
        self.bytes += size
        if self.files >= self.max_files or self.bytes >= self.max_bytes:
            closed.append(self.close())
        return closed

    def close(self):
        self.handle.close()
        self.handle, self.files, self.bytes = None, 0, 0
        self.walk['parts'] = len(self.paths)
        return self.paths[-1]


class Slots(object):
    """The runner's rsyncs (Runner below): at most N at once, each list on the first free of N slots."""

    def run_streams(self, lists, extra=(), phase='copying', items=None, gate=None):
        """Run one rsync per list that ``lists`` yields (a list's path; TREE: the whole tree; None: none ready yet,
        the walk goes on), at most config['streams'] at once, each on the first free slot.  ``items``: the prefix of
        the file each rsync writes its itemized names to.  ``gate``: the list that runs alone before the others (the
        destination, made once, while the walk goes on).  The copy's figures go to the state's streams, each slot's
        added up over its rsyncs; a list whose rsync was stopped for a new limit runs again.  {failures (messages),
        items [(file, count, first names)], literal (bytes sent)}."""
        env, selector = environment(self.config), selectors.DefaultSelector()
        slots = self.current = [None] * self.config['streams']
        totals, ready, lists, listing = [None] * len(slots), collections.deque(), iter(lists), True
        out = {'failures': [], 'items': [], 'literal': 0}

        def start(index, path, kind):
            stream = Stream(index, path, kind, rsync_argv(self.config, path, ['--exclude=*'] if kind == 'destination'
                                                          else extra), env,
                            os.path.join(self.run_dir, '%s-%s.log' % (kind, os.path.basename(path) or 'tree')),
                            os.path.join(self.run_dir, items + (os.path.basename(path) or 'tree')) if items else None)
            selector.register(stream.proc.stdout, selectors.EVENT_READ, stream)
            self.state['phases'].setdefault(kind, [stream.started, None])
            if kind == 'copying' and not self.state.get('first_rsync'):
                self.state['first_rsync'] = {'at': stream.started, 'listed': dict(self.state['walk'])}
            return stream

        self.state['phases'][phase] = [time.time(), None]
        self.state['state'] = phase
        if gate:
            gate = slots[0] = start(0, gate, 'destination')
        self.save(force=True)           # a new phase shows at once (status reads it)
        while True:
            free = [] if gate else [index for index, stream in enumerate(slots) if stream is None]
            try:
                listing = listing and not (self.stopping or out['failures']) and self.take(lists, ready, len(free))
            except (OSError, _tree.TreeError) as exc:
                out['failures'].append('listing the tree: %s' % exc)
                listing = False
            while free and ready and not (self.stopping or out['failures']):
                index = free.pop(0)
                slots[index] = start(index, ready.popleft(), phase)
            if not any(slots) and (self.stopping or out['failures'] or not (listing or ready)):
                break
            for key, dummy in selector.select(timeout=0 if listing else INTERVAL):
                stream = key.data
                if stream.read():
                    continue
                selector.unregister(key.fileobj)
                key.fileobj.close()
                stream.finish()
                slots[stream.index] = None
                if stream is gate:
                    gate = None
                    self.state['phases']['destination'][1] = stream.ended
                elif phase == 'copying':
                    totals[stream.index] = add(totals[stream.index], stream.figures())
                self.ended(stream, ready, out)
            for stream in slots:
                if stream:
                    stream.sample(time.time())
            if phase == 'copying':
                self.figures([add(totals[index], slots[index].figures() if slots[index] and slots[index] is not gate
                                  else None) for index in range(len(slots))])
            self.save()
        self.state['phases'][phase][1] = time.time()
        self.current = []
        selector.close()
        return out

    def take(self, lists, ready, free):
        """Step ``lists`` until ``free`` lists are ready (walk on for WALK_SLICE seconds when no slot is free);
        False once it has ended."""
        deadline = time.time() + WALK_SLICE
        while time.time() < deadline and (not free or len(ready) < free):
            item = next(lists, False)
            if item is False:
                return False
            if item is not None:
                ready.append(item)
        return True

    def ended(self, stream, ready, out):
        """Take the end of ``stream``: its items, what it sent, its list again when it was stopped for a new limit,
        its vanished files (not a failure), or its failure."""
        if stream.restarted and not self.stopping:
            ready.appendleft(stream.list_path)
            return
        if stream.items_path:
            out['items'].append((stream.items_path, stream.count, stream.names))
        out['literal'] += stream.stats.get('literal', 0)
        names, failed = stream.vanished(self.config['source']) if stream.rc else ([], False)
        self.vanished(names)            # counted in a stream that failed too
        if stream.rc != 0 and (failed or not names or stream.rc not in VANISHED_RCS) and not self.stopping:
            out['failures'].append('%s: stream %d (%s) ended with rsync exit %d: %s' % (
                stream.phase, stream.index, os.path.basename(stream.list_path) or 'the whole tree', stream.rc,
                tail(stream.log_path)))

    def vanished(self, names):
        known = set(self.state['vanished_names'])
        new = [name for name in names if name not in known]
        self.state['vanished'] += len(new)
        self.state['vanished_names'] = (self.state['vanished_names'] + new)[:KEEP]

    def figures(self, streams):
        """Keep the copying slots' figures, and their sums; the moment the first byte moved; the tree's total once
        it is listed."""
        walk = self.state['walk']
        if walk['state'] == 'listed' and walk['ended'] != self.state.get('listed'):
            self.state.update(bytes_total=walk['bytes'], files=walk['files'], listed=walk['ended'])
            self.save(force=True)
        self.state['streams'] = [stream for stream in streams if stream]
        self.state['bytes_done'] = sum(stream['bytes'] for stream in self.state['streams'])
        self.state['files_done'] = sum(stream['files'] for stream in self.state['streams'])
        if self.state['bytes_done'] and not self.state.get('first_byte'):
            self.state['first_byte'] = time.time()


class Proof(Slots):
    """What a pass proves and guards: the deletes counted before anything moves and refused past the guard, the
    proof with its second sending."""

    def guard(self):
        """With deletes: count what the pass would delete; refuse (nothing moved, nothing deleted) above
        max_delete."""
        found = self.extraneous('counting deletes')
        if found is None:
            return True                     # stopped: run() says so
        limit = self.config.get('max_delete', -1)
        self.state['would_delete'] = found[0]
        if 0 <= limit < found[0]:
            self.state['deleted_names'] = found[1]
            self.state['message'] = ('this pass would delete %d files in %s, more than migrate_max_delete=%d; nothing '
                                     'was deleted or sent. Check the source (a missing mount?), then give a higher '
                                     'migrate_max_delete (-1: no limit) to allow it.'
                                     % (found[0], self.config['url'], limit))
            return False
        return True

    def itemized(self, lists, extra, phase, prefix):
        """What rsync itemizes for ``lists`` (N at a time) with ``extra``: [(the file of the names, count, the first
        names)], None when stopped; RuntimeError when an rsync failed."""
        result = self.run_streams(lists, extra + ['--out-format=%i %n', '-8'], phase=phase, items=prefix)
        if self.stopping:
            return None
        check(result)
        return result['items']

    def extraneous(self, phase, real=False):
        """What the receiver's destination has and the source no longer has (the excludes and the partial files
        kept): counted by a dry run, or deleted (``real``); (count, the first names), or None when stopped."""
        extra = ['--recursive', '--delete', '--existing', '--ignore-existing', '--exclude=' + PARTIAL_DIR + '/']
        if not real:
            extra.append('--dry-run')
        elif self.config.get('max_delete', -1) >= 0:
            extra.append('--max-delete=%d' % self.config['max_delete'])
        found = self.itemized([TREE], extra, phase, phase.replace(' ', '-') + '-')
        return found and found[0][1:]

    def prove(self, parts):
        """Compare (a dry run of each part, N at a time), send the mismatches again, compare them again: verified
        only at zero (never when stopped), and, with deletes, when the receiver has nothing the source has not.  A
        mismatch whose source changed after the copy began (its modification time) changed at the source (a live
        tree); the others differ at the receiver."""
        checksum = ['--checksum'] if self.config['proof'] == 'checksum' else []
        found = self.itemized(parts, ['--dry-run'] + checksum, 'proving', 'resend-')
        if found is None:
            return
        count = sum(item[1] for item in found)
        copied = (self.state['phases'].get('copying') or [time.time()])[0]
        at_source, at_receiver = 0, []
        for name in (name for item in found for name in read_list(item[0])):
            if changed_since(self.config['source'], name, copied):
                at_source += 1
            elif len(at_receiver) < KEEP:
                at_receiver.append(name)
        self.state.update(mismatches=count, mismatched=[name for item in found for name in item[2]][:KEEP],
                          changed_at_source=at_source, differs_at_receiver=count - at_source,
                          differs_at_receiver_names=at_receiver)
        verified = not count
        if count:
            resend = [item[0] for item in found if item[1]]
            sent = self.run_streams(resend, ['--info=stats2'] + checksum, phase='resending')
            if self.stopping:
                return
            check(sent)
            self.state['resent_bytes'] += sent['literal']
            left = self.itemized(resend, ['--dry-run'] + checksum, 'proving again', 'left-')
            if left is None:
                return
            self.state['mismatches_after_resend'] = sum(item[1] for item in left)
            verified = not self.state['mismatches_after_resend']
        if self.config.get('delete'):
            extra = self.extraneous('proving deletes')
            if extra is None:
                return
            self.state['extra'] = extra[0]
            verified = verified and not extra[0]
        self.state['verified'] = verified


class Runner(Proof):

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.config = read_json(os.path.join(run_dir, CONFIG))
        if not self.config:
            raise SystemExit('runner: no %s in %s' % (CONFIG, run_dir))
        self.config['password_file'] = os.path.join(run_dir, PASSWORD)
        previous = read_state(run_dir) or {}
        self.continues = previous.get('state') not in WHOLE      # the run before was interrupted
        self.state = {'id': self.config['id'], 'run_id': self.config.get('run_id'), 'state': 'starting',
                      'runs': previous.get('runs', 0) + 1, 'plan': self.config.get('plan'),
                      'cpu_before': self.config.get('cpu_before'),
                      'started': time.time(), 'ended': None, 'bytes_total': self.config['bytes'],
                      'files': self.config['files'], 'streams': [], 'bytes_done': 0, 'files_done': 0,
                      'walk': {'state': 'listing', 'files': 0, 'bytes': 0, 'dirs': 0, 'others': 0, 'linked': 0,
                               'parts': 0, 'started': None, 'ended': None},
                      'first_rsync': None, 'first_byte': None, 'peak_rss_kb': 0,
                      'mismatches': None, 'verified': None, 'proof': self.config['proof'], 'resent_bytes': 0,
                      'message': '', 'transport': self.config['transport'],
                      'present_bytes': self.config.get('present_bytes', 0), 'stream_count': self.config['streams'],
                      'phases': {}, 'delete': bool(self.config.get('delete')), 'deleted': 0, 'deleted_names': [],
                      'vanished': 0, 'vanished_names': [], 'changed_at_source': 0, 'differs_at_receiver': 0,
                      'differs_at_receiver_names': [], 'bwlimit_bps': self.config.get('bwlimit_bps') or 0,
                      'bwlimit_start_bps': self.config.get('bwlimit_bps') or 0,
                      'extra': None, 'preserve': self.config.get('preserve') or {},
                      'owners': self.config.get('owners', True), 'excludes': self.config.get('excludes') or [],
                      'history': (previous.get('history') or [])
                      + ([previous['summary']] if previous.get('summary') else [])}
        self.stopping = False
        self.last_write = 0
        self.current = []

    def save(self, force=False):
        now = time.time()
        if force or now - self.last_write >= INTERVAL:
            self.state['peak_rss_kb'] = peak_kb()
            write_json(os.path.join(self.run_dir, STATE), self.state)
            self.last_write = now

    def copy(self):
        """The copying phase: the walk's parts on the N slots as they close, the destination made first (alone,
        while the walk goes on) when there are several; the parts, or None when it failed or was stopped."""
        parts = Parts(self.run_dir, self.config, self.state['walk'])
        self.state['walk']['started'] = time.time()
        gate = None
        if self.config['streams'] > 1:
            gate = os.path.join(self.run_dir, TOP_LIST)
            with private_file(gate) as handle:
                handle.write(nul_list(['.']))
        result = self.run_streams(parts, ['--info=progress2,stats2'], gate=gate)
        if result['failures']:
            self.state['message'] = '; '.join(result['failures'])
        return None if self.stopping or result['failures'] else parts.paths

    def reload(self, signum, frame):
        """SIGHUP: read the limit from the config again; the copying rsyncs restart with it (their parts run again,
        each continuing from what the one before sent: the partial files, rsync's quick check), later phases take
        it."""
        limit = (read_json(os.path.join(self.run_dir, CONFIG)) or {}).get('bwlimit_bps', 0) or 0
        self.config['bwlimit_bps'] = limit
        self.state['bwlimit_bps'] = limit
        self.state.setdefault('limits', []).append([time.time(), limit])
        self.last_write = 0             # the loop's next save() writes the new limit at once (status reads it)
        for stream in self.current:
            if stream and stream.phase == 'copying' and stream.rc is None:
                stream.restart = True
        self.terminate(restarting=True)

    def stop(self, signum, frame):
        self.stopping = True
        self.state['message'] = 'stopped by signal %d; the partial files stay for the next run' % signum
        self.terminate()

    def terminate(self, restarting=False):
        """SIGTERM to the rsyncs that run (each keeps its partial file); ``restarting``: those to restart only."""
        for stream in self.current:
            if stream and stream.rc is None and (stream.restart or not restarting):   # not poll(): finish() reaps
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
        for pattern in SCRATCH:
            for path in glob.glob(os.path.join(glob.escape(self.run_dir), pattern)):
                os.unlink(path)
        self.save(force=True)
        try:
            if self.config.get('delete') and not self.guard():
                return self.end('refused', 1)
            parts = None if self.stopping else self.copy()
            if parts is None:
                return self.end('stopped', 2) if self.stopping else self.end('failed', 1)
            self.state['copied'] = True          # every part of the tree went through the copy
            if self.config.get('delete'):
                deleted = self.extraneous('deleting', real=True)
                if deleted is None:
                    return self.end('stopped', 2)
                self.state['deleted'], self.state['deleted_names'] = deleted
            self.prove(parts)
            if self.stopping:
                return self.end('stopped', 2)
            check(self.run_streams([os.path.join(self.run_dir, DIRS_LIST)], ['--existing', '--ignore-existing'],
                                   phase='directories'))
            if self.stopping:
                return self.end('stopped', 2)
            return self.end('done' if self.state['verified'] else 'failed', 0 if self.state['verified'] else 1)
        except (RuntimeError, OSError, _tree.TreeError) as exc:
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
        copying = self.state['phases'].get('copying') or [None, None]
        literal = sum(stream.get('literal_bytes', 0) for stream in streams)
        missing = max(0, self.state['bytes_total'] - self.state.get('present_bytes', 0))
        self.state['literal_bytes'] = literal
        # what a pass after an interruption sent of what the receiver held already (an ordinary pass sends what
        # changed: nothing of it is sent again)
        self.state['resent_bytes'] += max(0, literal - missing) if state == 'done' and self.continues else 0
        if self.state.get('copied'):
            # what the receiver held of the tree before the pass: what the whole copy did not have to send (rsync's
            # quick check skipped it, or its delta matched it), never what the source no longer has
            self.state['tree_present_bytes'] = max(0, self.state['bytes_total'] - literal)
        self.state['files_sent'] = sum(stream.get('files', 0) for stream in streams)
        self.state['cpu_seconds'] = round(sum(stream.get('cpu_seconds', 0) for stream in streams), 3)
        self.state['summary'] = dict((key, self.state.get(key)) for key in (
            'runs', 'run_id', 'state', 'started', 'ended', 'bytes_done', 'literal_bytes', 'files_sent', 'resent_bytes',
            'deleted', 'vanished', 'changed_at_source', 'differs_at_receiver', 'verified', 'delete', 'proof'))
        self.state['summary'].update(copy_seconds=round(copying[1] - copying[0], 3) if copying[0] and copying[1]
                                     else None,
                                     proof_seconds=proof_seconds(self.state['phases']),
                                     pass_seconds=round(self.state['ended'] - self.state['started'], 3))
        self.save(force=True)
        return code


def add(before, figures):
    """A slot's figures over its rsyncs: what those before sent, and the last one's (its start the first one's, its
    rsync exit the first that was not 0)."""
    if not before or not figures:
        return before or figures
    out = dict(figures, started=before['started'],
               max_rss_kb=max(before['max_rss_kb'] or 0, figures['max_rss_kb'] or 0) or None,
               cpu_seconds=round(before['cpu_seconds'] + figures['cpu_seconds'], 3),
               rc=before['rc'] if before['rc'] not in (0, None) else figures['rc'] if figures['rc'] is not None
               else before['rc'])
    for key in SUMMED:
        out[key] = before.get(key, 0) + figures.get(key, 0)
    return out


def check(result):
    """Raise when an rsync of ``result`` (run_streams()) failed."""
    if result['failures']:
        raise RuntimeError('; '.join(result['failures']))


def proof_seconds(phases):
    """The seconds of the proof and of what it sent again (the proof's phases of a run's ``phases``), or None."""
    spans = [value for key, value in phases.items() if key.startswith(PROOF_PHASES)]
    return round(sum(end - start for start, end in spans if start and end), 3) if spans else None


def read_list(path):
    """The names of a NUL-separated list, as text (surrogate escapes for what is not UTF-8)."""
    with open(path, 'rb') as handle:
        return [name.decode('utf-8', 'surrogateescape') for name in handle.read().split(b'\0') if name]


def changed_since(source, name, moment):
    """Whether the file ``name`` of the source changed (its modification or status time) at or after ``moment``:
    a live tree changed it after its copy began.  A file that is gone changed too."""
    try:
        info = os.lstat(os.path.join(source, name))
    except OSError:
        return True
    return max(info.st_mtime, info.st_ctime) >= moment


def tail(log_path):
    """The last lines of a stream's log (rsync's errors), on one line."""
    try:
        with open(log_path, 'rb') as handle:
            text = handle.read()[-600:].decode('utf-8', 'replace')
    except (IOError, OSError):
        return 'no log'
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith('verify depth')]
    return ' | '.join(lines[-3:]) or 'no message'


if __name__ == '__main__':
    sys.exit(Runner(sys.argv[1]).main())  # pylint: disable=ansible-bad-function
