# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commit-confirm timer of link_mtu (and, through a subclass, nic_settings): arm it before a change, disarm it
on confirmation, decide races.

The timer is a transient systemd timer where systemd runs, else a detached ``sleep`` process with a pid
file; either runs the script from ``CommitTimer.script`` (linkmtu.revert_script here, nic/commit.py's for the
rings), which restores the previous values unless the change is confirmed in time.  Whoever creates the decision directory first (the script or the module)
decides; ``mkdir`` is atomic, so the other backs off.

The run directory (default /run/bdp_wan_tune, cleared at boot) holds the script, the pid file and the
decision marker; the state directory holds the revert log.  RUN_DIR is not an option: the unit tests patch the
constant (docs/testing.md).
"""

import errno
import json
import os
import shutil
import signal
import time

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu

RUN_DIR = '/run/bdp_wan_tune'
REVERT_LOG = 'jumbo_mtu-reverts.log'
UNIT_PREFIX = 'bdp-wan-tune-mtu-'


def ensure_run_dir():
    """The run directory, created (mode 0755) if missing."""
    directory = RUN_DIR
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    return directory


def spawn_detached(argv, ready_pipe=False):
    """Start ``argv`` in its own session, detached from this module (no stdio, no fds), without waiting.

    Returns (pid, read end of a pipe that is the child's stdout, or None).  The child outlives the
    module run: the commit-confirm timer and the proof listener must.
    """
    read_fd, write_fd = os.pipe() if ready_pipe else (None, None)
    pid = os.fork()
    if pid == 0:                                    # the child
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(write_fd if ready_pipe else null, 1)
            os.dup2(null, 2)
            os.closerange(3, 65536)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)                           # pylint: disable=protected-access
    if ready_pipe:
        os.close(write_fd)
    return pid, read_fd


def reap(pid):
    """Collect the child if it has already exited; returns its exit status or None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except OSError:
        return None
    if not done:
        return None
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)


def boot_id():
    return (files.read_text('/proc/sys/kernel/random/boot_id') or '').strip()


def public(commit, status):
    """The commit record as the module returns it (``commit``): no paths, the changes as dicts."""
    keys = ('token', 'method', 'unit', 'pid', 'timeout', 'armed_at', 'deadline')
    out = dict((key, commit[key]) for key in keys if key in commit)
    out['state'] = status
    out['changes'] = [{'interface': name, 'before': before, 'after': after}
                      for name, before, after in commit.get('changes', [])]
    return out


class CommitTimer(object):
    """Arms, disarms and decides the commit-confirm timer of one host; ``set_mtu(name, mtu)`` restores.

    The class attributes name what is the MTU's; a subclass for another setting gives its own names, script and
    interpreter."""

    NAME = 'jumbo_mtu'                  # the files in the run directory: NAME-TOKEN.sh, .decided, .pid
    SUFFIX = '.sh'
    UNIT_PREFIX = UNIT_PREFIX
    REVERT_LOG = REVERT_LOG
    DESCRIPTION = 'bdp.wan_tune.jumbo_mtu commit-confirm: restore the MTU unless confirmed'

    def __init__(self, module, state_dir, set_mtu):
        self.module = module
        self.state_dir = state_dir
        self.set_mtu = set_mtu
        self.interpreter = '/bin/sh'

    def script(self, token, revert_steps, decided, log, deadline):
        """The text of the script the timer runs (with ``self.interpreter``)."""
        return linkmtu.revert_script(token, revert_steps, decided, log, deadline)

    def arm(self, token, revert_steps, timeout, method):
        directory = ensure_run_dir()
        script = os.path.join(directory, '%s-%s%s' % (self.NAME, token, self.SUFFIX))
        decided = os.path.join(directory, '%s-%s.decided' % (self.NAME, token))
        log = os.path.join(self.state_dir, self.REVERT_LOG)
        deadline = time.time() + timeout
        with open(script, 'w') as handle:
            handle.write(self.script(token, revert_steps, decided, log, deadline))
        os.chmod(script, 0o700)
        systemd = os.path.isdir('/run/systemd/system') and self.module.get_bin_path('systemd-run')
        if method == 'systemd' and not systemd:
            raise RuntimeError('commit_method=systemd, but systemd is not running here (no /run/systemd/system)')
        commit = {'token': token, 'script': script, 'decided': decided, 'timeout': timeout, 'armed_at': time.time(),
                  'deadline': deadline, 'boot_id': boot_id(), 'revert_steps': revert_steps}
        if method != 'process' and systemd:
            unit = self.UNIT_PREFIX + token
            rc, out, err = self.module.run_command([
                systemd, '--unit', unit, '--description', self.DESCRIPTION,
                '--on-active=%ds' % timeout, '--timer-property=AccuracySec=1s', '--collect',
                self.interpreter, script])
            if rc != 0:
                raise RuntimeError('systemd-run could not arm the timer: %s' % (err or out).strip())
            rc, out, _err = self.module.run_command(['systemctl', 'is-active', unit + '.timer'])
            if out.strip() != 'active':
                raise RuntimeError('the timer %s.timer is %r, not active' % (unit, out.strip()))
            commit.update(method='systemd', unit=unit)
        else:
            pid, _pipe = spawn_detached(['/bin/sh', '-c', 'sleep %d; exec "$1" "$0"' % timeout, script,
                                         self.interpreter])
            with open(os.path.join(directory, '%s-%s.pid' % (self.NAME, token)), 'w') as handle:
                handle.write('%d\n' % pid)
            commit.update(method='process', pid=pid)
            time.sleep(0.05)
            status = reap(pid)
            if status is not None:
                raise RuntimeError('the timer process exited at once (rc %s)' % status)
        return commit

    def alive(self, commit):
        if commit.get('method') == 'systemd':
            rc, out, _err = self.module.run_command(['systemctl', 'is-active', commit['unit'] + '.timer'])
            return out.strip() in ('active', 'activating')
        pid = commit.get('pid')
        cmdline = files.read_text('/proc/%s/cmdline' % pid) if pid else None
        return bool(cmdline and commit['script'] in cmdline)

    def disarm(self, commit):
        if commit.get('method') == 'systemd':
            self.module.run_command(['systemctl', 'stop', commit['unit'] + '.timer'])
            self.module.run_command(['systemctl', 'reset-failed', commit['unit'] + '.timer', commit['unit'] + '.service'])
        elif commit.get('pid') and self.alive(commit):
            try:
                os.killpg(commit['pid'], signal.SIGTERM)
            except OSError:
                pass
        for path in (commit.get('script'), os.path.join(os.path.dirname(commit.get('script') or '/'),
                                                        '%s-%s.pid' % (self.NAME, commit.get('token')))):
            if path and os.path.exists(path):
                os.unlink(path)

    @staticmethod
    def claim(commit, by):
        """Take the decision for the pending change: True if this call decides, False if the timer already did."""
        try:
            os.mkdir(commit['decided'])
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                return False
            if exc.errno == errno.ENOENT and not os.path.isdir(os.path.dirname(commit['decided'])):
                return True     # /run was cleared: rebooted, the timer is gone with it
            raise
        with open(os.path.join(commit['decided'], 'by'), 'w') as handle:
            handle.write(by + '\n')
        return True

    @staticmethod
    def decided_by(commit):
        text = files.read_text(os.path.join(commit['decided'], 'by'))
        if text is None:
            return 'timer' if os.path.isdir(commit['decided']) else None
        return text.strip()

    @staticmethod
    def stale(pending):
        """A pending change whose timer cannot fire any more (the host rebooted) and that nobody decided."""
        return pending.get('boot_id') and pending['boot_id'] != boot_id()

    def revert_records(self):
        records = []
        for line in (files.read_text(os.path.join(self.state_dir, self.REVERT_LOG)) or '').splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        return records

    def outcome(self, pending, decided=None):
        """linkmtu.outcome of a pending change someone else (the timer, a reboot) decided."""
        return linkmtu.outcome(pending, decided or self.decided_by(pending) or 'timer', self.revert_records())

    def log_revert(self, token, by, restored):
        path = os.path.join(self.state_dir, self.REVERT_LOG)
        lines = (files.read_text(path) or '').splitlines()[-49:]
        lines.append(json.dumps({'token': token, 'by': by, 'at': int(time.time()),
                                 'restored': ' '.join('%s=%s' % item for item in sorted(restored.items())),
                                 'rc': 0, 'failed': ''}))
        with open(path, 'w') as handle:
            handle.write('\n'.join(lines) + '\n')

    def restore(self, steps):
        """Apply revert steps [(name, current, previous)]; returns (restored dict, errors)."""
        restored, errors = {}, []
        for name, _current, previous in steps:
            try:
                self.set_mtu(name, previous)
                restored[name] = previous
            except RuntimeError as exc:
                errors.append(str(exc))
        return restored, errors

    # ------------------------------------------------------------------ the record of the pending change
    @staticmethod
    def _ended(state, commit, outcome, forget):
        """Record how ``commit`` ended in ``state``; with ``forget``, originals it did not commit are dropped."""
        if forget:
            names = [step[0] for step in commit['changes']] + list(commit.get('follows', {}))
            originals = state.get('original', {})
            committed = state.get('committed', {})
            for name in names:
                if name not in committed:
                    originals.pop(name, None)
        state.setdefault('history', []).append({'token': commit['token'], 'outcome': outcome,
                                                'at': int(time.time())})
        state['history'] = state['history'][-20:]
        state['pending'] = None
        try:
            shutil.rmtree(commit['decided'])
        except OSError:
            pass

    def finish(self, state, commit, outcome):
        """This call decided ``commit`` (confirmed or restored by the module): record it and log a restore.

        The caller saves ``state``.
        """
        self._ended(state, commit, outcome, outcome != 'confirmed')
        if outcome != 'confirmed':
            self.log_revert(commit['token'], 'module', dict((name, prev) for name, _c, prev in commit['revert_steps']))

    def drop(self, state, pending, outcome):
        """Forget a pending change the timer (or a reboot) already ended: disarm, record it.  The caller saves."""
        self.disarm(pending)
        self._ended(state, pending, outcome, True)
