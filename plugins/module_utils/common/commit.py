# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Commit-confirm, the one mechanism of link_mtu (the MTU) and nic_settings (the rings): a change that may cut the
Ansible connection is made only under a timer, armed on the host before the change, that puts the previous values
back by itself unless the change is confirmed in time over a new connection.

The timer is a transient systemd timer (unit ``Setting.UNIT_PREFIX`` + token) where systemd runs, else a detached
``sleep`` process with a pid file.  Either runs a Python script written by ``Timer.arm``: the setting's
``source()`` (a function ``set_value(name, value)``) and the source of ``fire``, every value as JSON data,
self-contained (it imports what it uses: the module's other imports are not there).  Whoever creates the decision
directory first decides (``mkdir`` is atomic): the script, or the module confirming (``confirmed``) or putting back
(``module``); the other backs off.  The marker stays in the run directory until boot, so that a timer that fires
late backs off too.

A setting supplies only its names and how to set and describe its value (a ``Setting``); the decisions, the
put-back, the revert log (``NAME-reverts.log`` in the state directory, a JSON line per put-back) and the end of a
pending change are here.  The run directory (/run/bdp_wan_tune, cleared at boot) holds the script, the pid file
and the marker.  RUN_DIR is not an option: the unit tests move the constant (docs/testing.md).
"""

import errno
import inspect
import json
import os
import random
import signal
import subprocess
import sys
import time

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files

RUN_DIR = '/run/bdp_wan_tune'
MIN_TIMEOUT = 10        # seconds: confirm_timeout, from the change to a confirmation over a new connection
PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
# The script: comments, its own imports, the setting's set_value, fire() and TAIL (DATA is the JSON of Timer.data).
HEAD = 'import json\nimport os\nimport sys\nimport time\n\n'
TAIL = '''

DATA = json.loads(%r)
if sys.argv[1:] == ['--check']:         # Timer.arm: it runs, in a bare environment, before the change
    sys.exit(0)
os.environ['PATH'] = DATA['path']
RECORD = fire(DATA, set_value)
if RECORD:
    try:
        import syslog
        syslog.openlog('bdp-wan-tune')
        syslog.syslog('%%s (rc %%d)' %% (DATA['journal'], RECORD['rc']))
    except Exception:  # pylint: disable=broad-except
        pass
sys.exit(RECORD['rc'] if RECORD else 0)
'''


def fire(data, set_value):
    """The timer's work, run by its script (which carries the source of this function) when the time is up: take
    the decision (mkdir is atomic: whoever creates the directory first decides, this or the module, and the other
    backs off), put back every value of ``data['steps']`` with the setting's ``set_value(name, value)``, each even
    after a failure, and append the record to the revert log.  Returns the record, or None when it backed off."""
    try:
        os.mkdir(data['decided'])
    except OSError:
        return None
    try:
        with open(os.path.join(data['decided'], 'by'), 'w') as handle:
            handle.write('timer\n')
    except OSError:
        pass            # /run full: the marker alone is the timer's decision, and the values go back all the same
    failed = []
    for name, value in data['steps']:
        try:
            set_value(name, value)
        except Exception:  # pylint: disable=broad-except
            failed.append(name)
    record = {'token': data['token'], 'by': 'timer', 'at': int(time.time()), 'restored': data['restored'],
              'rc': 1 if failed else 0, 'failed': ' '.join(failed)}
    with open(data['log'], 'a') as handle:
        handle.write(json.dumps(record) + '\n')
    return record


def ensure_run_dir():
    """The run directory, created (mode 0755) if missing."""
    if not os.path.isdir(RUN_DIR):
        os.makedirs(RUN_DIR, 0o755)
    return RUN_DIR


def spawn_detached(argv, ready_pipe=False):
    """Start ``argv`` in its own session, detached from this module (no stdio, no fds), without waiting.

    Returns (pid, read end of a pipe that is the child's stdout, or None).  The child outlives the module run: the
    commit-confirm timer and link_mtu's proof listener must.
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


def check_timeout(module):
    """Fail, before any change, when the module's confirm_timeout is too short to confirm over a new connection."""
    if module.params['confirm_timeout'] < MIN_TIMEOUT:
        module.fail_json(msg='confirm_timeout: %d s is too short to confirm over a new connection; use %d or more. '
                         'Nothing was changed.' % (module.params['confirm_timeout'], MIN_TIMEOUT))


def boot_id():
    return (files.read_text('/proc/sys/kernel/random/boot_id') or '').strip()


def check_script(interpreter, script):
    """Run the script with ``--check`` as the timer will run it (isolated: no PYTHON* variables, no user site; a
    bare environment, as systemd's): its imports and its data must load, or the timer could not put anything
    back.  RuntimeError (before any change) when they do not."""
    try:
        done = subprocess.run([interpreter, '-I', script, '--check'], env={'PATH': PATH}, capture_output=True,
                              text=True, check=False, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError('the timer\'s script could not be run with %s: %s' % (interpreter, exc))
    if done.returncode != 0:
        raise RuntimeError('the timer\'s script does not run with %s in a bare environment (rc %d: %s); a timer '
                           'could not put anything back' % (interpreter, done.returncode,
                                                            (done.stderr or done.stdout).strip()[-300:]))


def stale(pending):
    """A pending change armed before the last boot: its timer is gone with the boot."""
    return bool(pending.get('boot_id')) and pending['boot_id'] != boot_id()


def pending_in(timer, result, pending, nothing, would, outcome=None):
    """``pending`` (the module's pending change) with its ``timer`` in ``result`` (``commit``); None when there is
    none (the summary says ``nothing``, the outcome is ``outcome``) or in check mode (``would``, with the token)."""
    if not pending:
        result.update(summary=nothing, outcome=outcome)
        return None
    result['commit'] = timer.public(pending, 'pending')
    if timer.module.check_mode:
        result.update(changed=True, summary=would % pending['token'])
        return None
    return pending


class Setting(object):
    """What the timer needs of one setting.  NAME names its files (NAME-TOKEN.py, .pid and .decided in the run
    directory, NAME-reverts.log in the state directory) and the journal line; UNIT_PREFIX the systemd units; WHAT
    is what is put back, for people; source() is Python source that defines ``set_value(name, value)`` for the
    script (raising on failure).  A subclass adds ``set(name, value)``, which sets the value in the module
    (RuntimeError or OSError on failure), and ``describe(steps)``, the values of ``steps`` [(name, current,
    previous)] put back in one line (the log's "restored").  The names are those of the hosts already tuned: a
    timer armed by an earlier version is found by the unit or pid its pending change recorded."""

    NAME = UNIT_PREFIX = WHAT = SOURCE = None

    def source(self):
        return self.SOURCE


class Timer(object):
    """Arms, disarms and decides the commit-confirm timer of one setting on this host, and ends a pending change.

    A pending change is the dict ``arm`` returns (the module records it): token, script, decided (the marker's
    path), timeout, armed_at, deadline, boot_id, revert_steps [(name, current, previous)], method, unit or pid."""

    def __init__(self, module, state_dir, setting):
        self.module = module
        self.setting = setting
        self.log_path = os.path.join(state_dir, '%s-reverts.log' % setting.NAME)

    def path(self, token, suffix):
        return os.path.join(RUN_DIR, '%s-%s%s' % (self.setting.NAME, token, suffix))

    def arm(self, revert_steps, timeout, method):
        """Write the script and start the timer that runs it after ``timeout`` seconds; RuntimeError or OSError
        when it cannot be armed (nothing is changed then)."""
        token = '%s-%06x' % (time.strftime('%Y%m%d-%H%M%S'), random.randint(0, 0xffffff))
        ensure_run_dir()
        script, interpreter = self.path(token, '.py'), sys.executable or '/usr/bin/python3'
        deadline = time.time() + timeout
        with open(script, 'w') as handle:
            handle.write(self.script(token, revert_steps, deadline))
        os.chmod(script, 0o700)
        try:
            check_script(interpreter, script)
        except RuntimeError:
            os.unlink(script)
            raise
        systemd = os.path.isdir('/run/systemd/system') and self.module.get_bin_path('systemd-run')
        if method == 'systemd' and not systemd:
            raise RuntimeError('commit_method=systemd, but systemd is not running here (no /run/systemd/system)')
        pending = {'token': token, 'script': script, 'decided': self.path(token, '.decided'), 'timeout': timeout,
                   'armed_at': time.time(), 'deadline': deadline, 'boot_id': boot_id(), 'revert_steps': revert_steps}
        if method != 'process' and systemd:
            unit = self.setting.UNIT_PREFIX + token
            rc, out, err = self.module.run_command([
                systemd, '--unit', unit, '--description', 'bdp.wan_tune.%s commit-confirm: put the %s back unless '
                'confirmed' % (self.setting.NAME, self.setting.WHAT), '--on-active=%ds' % timeout,
                '--timer-property=AccuracySec=1s', '--collect', interpreter, '-I', script])
            if rc != 0:
                raise RuntimeError('systemd-run could not arm the timer: %s' % (err or out).strip())
            rc, out, _err = self.module.run_command(['systemctl', 'is-active', unit + '.timer'])
            if out.strip() != 'active':
                raise RuntimeError('the timer %s.timer is %r, not active' % (unit, out.strip()))
            pending.update(method='systemd', unit=unit)
        else:
            pid, _pipe = spawn_detached(['/bin/sh', '-c', 'sleep %d; exec "$1" -I "$0"' % timeout, script,
                                         interpreter])
            with open(self.path(token, '.pid'), 'w') as handle:
                handle.write('%d\n' % pid)
            pending.update(method='process', pid=pid)
            time.sleep(0.05)
            status = reap(pid)
            if status is not None:
                raise RuntimeError('the timer process exited at once (rc %s)' % status)
        return pending

    def data(self, token, revert_steps):
        """Everything the script knows, as JSON data: the steps as [name, previous], the paths, the texts."""
        restored = self.setting.describe(revert_steps)
        return {'token': str(token), 'decided': self.path(token, '.decided'), 'log': self.log_path,
                'restored': restored, 'steps': [[name, previous] for name, _current, previous in revert_steps],
                'path': PATH, 'journal': '%s: %s change %s not confirmed in time; put back %s'
                % (self.setting.NAME, self.setting.WHAT, token, restored)}

    def script(self, token, revert_steps, deadline):
        """The text of the script: what it puts back in comments (JSON: ASCII, no line break), its imports, the
        setting's ``set_value``, fire() and the data.  Self-contained: it imports what it uses, nothing else."""
        data = self.data(token, revert_steps)
        return ('# bdp.wan_tune.%s commit-confirm for change %s.\n# Unless the change is confirmed before %s, put back: '
                '%s\n' % (self.setting.NAME, json.dumps(data['token']), time.strftime(
                    '%Y-%m-%d %H:%M:%S %Z', time.localtime(deadline)), json.dumps(data['restored']))
                + HEAD + self.setting.source() + '\n\n# --- module_utils/common/commit.py\n'
                + inspect.getsource(fire) + TAIL % json.dumps(data))

    def disarm(self, pending, kill=True):
        """Stop the timer and remove its script and pid file (the decision marker stays until boot).  Without
        ``kill``, a timer process that runs its script is left to finish it (a systemd timer stops either way: its
        service, which runs the script, is not stopped with it)."""
        if pending.get('method') == 'systemd':
            self.module.run_command(['systemctl', 'stop', pending['unit'] + '.timer'])
            self.module.run_command(['systemctl', 'reset-failed', pending['unit'] + '.timer',
                                     pending['unit'] + '.service'])
        script = pending.get('script') or ''
        cmdline = files.read_text('/proc/%s/cmdline' % pending['pid']) if pending.get('pid') else None
        if kill and script and script in (cmdline or ''):
            try:
                os.killpg(pending['pid'], signal.SIGTERM)       # the timer's process group, found by its script
            except OSError:
                pass
        pid_file = os.path.join(os.path.dirname(script), '%s-%s.pid' % (self.setting.NAME, pending.get('token')))
        for path in (script, pid_file):
            if script and os.path.exists(path):
                os.unlink(path)

    @staticmethod
    def claim(pending, by):
        """Take the decision for the pending change: True if this call decides, False if another one did."""
        try:
            os.mkdir(pending['decided'])
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                return False
            if exc.errno == errno.ENOENT and not os.path.isdir(os.path.dirname(pending['decided'])):
                return True     # /run was cleared: rebooted, the timer is gone with it
            raise
        try:
            with open(os.path.join(pending['decided'], 'by'), 'w') as handle:
                handle.write(by + '\n')
        except OSError:
            pass        # /run full: the mkdir decided (the timer backs off); this call goes on and ends the change
        return True

    def decision(self, pending, take=None):
        """Who decided ``pending``: 'confirmed', 'module' (put back by a module call), 'timer', None (a reboot
        ended it) or 'waiting' (nobody yet).  With ``take`` ('confirmed' or 'module'), this call takes the decision
        if nobody has; a decision taken by a call that was cut short before it ended the change is returned too,
        so that the caller finishes it."""
        if stale(pending):
            return None
        if take and self.claim(pending, take):
            return take
        text = (files.read_text(os.path.join(pending['decided'], 'by')) or '').strip()
        if text in ('confirmed', 'module', 'timer'):
            return text
        # a marker without its word (or with the word half written): the script took it and is putting back now,
        # or stopped between its mkdir and its write; either way the timer's, and its script is not stopped
        return 'timer' if os.path.isdir(pending['decided']) else 'waiting'

    def record_of(self, pending):
        """The timer's line of the revert log for ``pending``, or None."""
        found = None
        for line in (files.read_text(self.log_path) or '').splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and item.get('token') == pending['token']:
                found = item
        return found

    def restore(self, steps):
        """Set back the values of ``steps`` [(name, current, previous)] in this module, each even after a failure;
        returns (restored {name: previous}, errors [text])."""
        restored, errors = {}, []
        for name, _current, previous in steps:
            try:
                self.setting.set(name, previous)
                restored[name] = previous
            except (RuntimeError, OSError) as exc:
                errors.append(str(exc))
        return restored, errors

    def end(self, pending, by, steps=None):
        """Carry out the decision ``by`` (decision()) on ``pending``: 'confirmed' keeps the change; 'module' puts
        back ``steps`` (default: every step of the change) now and logs it; 'timer' and None (a reboot) read what
        they did.  The timer is disarmed; one that decided is left to finish its script.

        Returns {'outcome': 'confirmed', 'restored_by_module', 'restored_by_timer' or 'restored_by_reboot',
        'restored': {name: previous} put back, 'failed': [names not put back], 'errors': [texts], 'at': the
        timer's time or None, 'record': the timer's log line or None}."""
        steps = pending['revert_steps'] if steps is None else steps
        ending = {'outcome': 'confirmed', 'restored': {}, 'failed': [], 'errors': [], 'at': None, 'record': None}
        if by == 'module':
            ending['restored'], ending['errors'] = self.restore(steps)
            ending['failed'] = [name for name, _current, _previous in steps if name not in ending['restored']]
            self.log(pending['token'], steps, ending['failed'])
            ending['outcome'] = 'restored_by_module'
        elif by != 'confirmed':
            record = self.record_of(pending) if by == 'timer' else None
            ending['failed'] = (record.get('failed') or '').split() if record and record.get('rc') else []
            ending.update(outcome='restored_by_timer' if by == 'timer' else 'restored_by_reboot', record=record,
                          at=record.get('at') if record else None, restored=dict(
                              (name, previous) for name, _c, previous in steps if name not in ending['failed']))
        self.disarm(pending, kill=by != 'timer')
        return ending

    def log(self, token, steps, failed):
        """Append the module's own put-back to the revert log (its last 50 lines are kept)."""
        lines = (files.read_text(self.log_path) or '').splitlines()[-49:]
        lines.append(json.dumps({'token': token, 'by': 'module', 'at': int(time.time()),
                                 'restored': self.setting.describe(steps), 'rc': 1 if failed else 0,
                                 'failed': ' '.join(failed)}))
        with open(self.log_path, 'w') as handle:
            handle.write('\n'.join(lines) + '\n')

    def public(self, pending, status):
        """The pending change as the modules return it (``commit``): no paths, the changes as dicts."""
        keys = ('token', 'method', 'unit', 'pid', 'timeout', 'armed_at', 'deadline')
        out = dict((key, pending[key]) for key in keys if key in pending)
        out.update(state=status, restores=self.setting.describe(pending['revert_steps']),
                   changes=[{'interface': name, 'before': before, 'after': after}
                            for name, before, after in pending.get('changes', [])])
        return out
