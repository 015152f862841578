# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One state-changing step at a time per host: the lock every module that writes the collection's records holds.

Two runs at once on one host used to race on the records (read, change, write), and the last one silently won. Each
module that changes the host now holds an exclusive lock (flock) on ``<state_dir>/run.lock`` for its whole
execution; the file also says who holds it and since when. A second run's step waits up to ``wait`` seconds, then
fails with "another bdp.wan_tune run holds the lock since ...". The kernel drops an flock when its process ends, so
a run that dies leaves no stale lock. The holder removes the file when it is done (and the state directory when
that is then empty, as the records do: a rolled-back host keeps nothing), so a waiter checks after locking that it
holds the file that is still there. Check mode changes nothing and takes no lock.

    with runlock.held(module, state_dir, 'sysctl_dropin present'):
        ...   # read the record, change the host, write the record
"""

import contextlib
import errno
import fcntl
import json
import os
import time

LOCK_NAME = 'run.lock'
WAIT = 10           # seconds a step waits for another run's step before it fails


def describe(path):
    """Who holds the lock at ``path``, from what the holder wrote into it: 'since 2026-11-25T11:40:19Z (pid 4242,
    sysctl_dropin)'; 'since an unknown time' when it wrote nothing readable."""
    try:
        with open(path) as handle:
            holder = json.loads(handle.read() or '{}')
    except (IOError, OSError, ValueError):
        holder = {}
    if not isinstance(holder, dict) or not holder.get('since'):
        return 'since an unknown time'
    return 'since %s (pid %s, %s)' % (holder.get('since'), holder.get('pid', '?'), holder.get('step', '?'))


def acquire(path, step, wait=WAIT, sleep=time.sleep, clock=time.time):
    """Open and lock ``path`` (created 0600); the open file, or raise LockHeld after ``wait`` seconds."""
    directory = os.path.dirname(path)
    deadline = clock() + wait
    while True:
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except (IOError, OSError) as exc:
            if exc.errno == errno.ENOENT:       # the holder removed the directory just now
                continue
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(fd, path):
                break
            os.close(fd)                        # the holder removed this file when it was done: take the new one
            continue
        except (IOError, OSError) as exc:
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            if clock() >= deadline:
                raise LockHeld('another bdp.wan_tune run holds the lock %s: its step is still changing this host. '
                               'Waited %d s; nothing was changed by this step. Run again when it has finished (the '
                               'lock is %s; it goes away with the process that holds it).'
                               % (describe(path), wait, path))
            sleep(0.2)
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({'since': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()), 'pid': os.getpid(),
                             'step': step}).encode('utf-8'))
    return fd


def _same_file(fd, path):
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except (IOError, OSError):
        return False


def release(fd, path):
    """Remove the lock file (and its directory when nothing else is in it), then unlock."""
    try:
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
    except (IOError, OSError):
        pass                                    # the directory holds records: it stays
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class LockHeld(Exception):
    """Another run's step holds the lock."""


@contextlib.contextmanager
def held(module, state_dir, step, wait=WAIT):
    """Hold the host's lock around a step (not in check mode); fail_json when another run holds it too long."""
    if module.check_mode:
        yield
        return
    path = os.path.join(state_dir, LOCK_NAME)
    try:
        fd = acquire(path, step, wait)
    except LockHeld as exc:
        module.fail_json(msg=str(exc), changed=False)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot take the lock %s for this step (%s); nothing was changed by this step. The '
                             'steps that change the host need root (become).' % (path, exc), changed=False)
    try:
        yield
    finally:
        release(fd, path)
