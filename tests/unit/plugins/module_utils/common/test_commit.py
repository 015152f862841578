# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commit-confirm timer (module_utils/common/commit.py), for real, once: armed with the process backend (this
machine's PID 1 is not systemd) and a 1 s timeout inside a network namespace of the test's own, the detached timer
fires by itself, runs its script, which puts back the real MTU of a veth device (one with a name that is shell code
too) and writes the decision marker and the revert log; a confirmation in time disarms it and nothing is put back.
The arming program runs in the namespace (``ip netns exec``), so that the timer and its script are there too; the
script gets no PYTHONPATH, so it must be self-contained.  Then the decisions and the end of a pending change, on
files only."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

import pytest
from waiting import until

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit

HOSTILE = '`touch${IFS}P`'          # a valid interface name that is shell code
# What the modules do, in the namespace: arm the timer with a real AnsibleModule (its run_command and get_bin_path),
# then make the change (link_mtu's MTU setting, through the real ``ip``); or take a decision and end the change.
PROGRAM = r'''
import json, os, sys
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu

commit.RUN_DIR, state_dir, action, arg = sys.argv[1:5]
with patch_module_args({}):
    module = basic.AnsibleModule(argument_spec={})


def run_ip(args, check=True):
    rc, out, err = module.run_command(['ip'] + args)
    if check and rc:
        raise RuntimeError(err)
    return rc, out, err


timer = commit.Timer(module, state_dir, linkmtu.MtuSetting(run_ip))
os.environ.pop('PYTHONPATH', None)          # the timer's script gets none: it imports only what it carries
if action == 'arm':
    steps, timeout = json.loads(arg), int(sys.argv[5])
    pending = timer.arm(steps, timeout, 'process')
    for name, mtu, _previous in steps:
        timer.setting.set(name, mtu)
    print(json.dumps(pending))
else:
    pending = json.loads(arg)
    by = timer.decision(pending, take=action or None)
    print(json.dumps({'by': by, 'ending': timer.end(pending, by) if by != 'waiting' else None}))
'''


def in_netns(netns, tmp_path, *args):
    done = subprocess.run(['ip', 'netns', 'exec', netns, sys.executable, '-c', PROGRAM, str(tmp_path / 'run'),
                           str(tmp_path)] + [str(arg) for arg in args], capture_output=True, text=True,
                          check=False, cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def mtu(netns, name):
    shown = subprocess.run(['ip', '-n', netns, '-j', 'link', 'show', 'dev', name], capture_output=True, text=True,
                           check=True)
    return json.loads(shown.stdout)[0]['mtu']


def sleeping(pending):
    """Whether the timer process still waits (its command line holds the script; a zombie's is empty)."""
    try:
        with open('/proc/%d/cmdline' % pending['pid'], 'rb') as handle:
            return pending['script'].encode() in handle.read()
    except OSError:
        return False


@pytest.fixture
def two_veths(veth_netns):
    made = subprocess.run(['ip', '-n', veth_netns, 'link', 'add', HOSTILE, 'type', 'veth', 'peer', 'name', 'bdp2'],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip('cannot add a veth pair: %s' % made.stderr.strip())
    return veth_netns


def test_the_timer_fires_by_itself_and_puts_the_mtu_back(two_veths, tmp_path):
    netns = two_veths
    steps = [['bdp0', 9000, 1500], [HOSTILE, 4000, 1500]]
    started = time.time()
    pending = in_netns(netns, tmp_path, 'arm', json.dumps(steps), 1)
    assert pending['method'] == 'process' and pending['script'].endswith('.py')
    assert (mtu(netns, 'bdp0'), mtu(netns, HOSTILE)) == (9000, 4000)
    log = tmp_path / 'jumbo_mtu-reverts.log'
    assert until(log.exists), 'the timer did not fire'
    fired = time.time() - started
    record, = [json.loads(line) for line in log.read_text().splitlines()]
    assert record == {'token': pending['token'], 'by': 'timer', 'at': record['at'], 'rc': 0, 'failed': '',
                      'restored': 'bdp0=1500 %s=1500' % HOSTILE}
    assert (mtu(netns, 'bdp0'), mtu(netns, HOSTILE)) == (1500, 1500)
    assert open(os.path.join(pending['decided'], 'by')).read() == 'timer\n'
    assert fired >= 1 and not (tmp_path / 'P').exists()            # not before its time
    # a confirmation now is too late: the module reads what the timer did, and leaves its script alone
    late = in_netns(netns, tmp_path, 'confirmed', json.dumps(pending))
    assert late['by'] == 'timer' and late['ending'] == {
        'outcome': 'restored_by_timer', 'restored': {'bdp0': 1500, HOSTILE: 1500}, 'failed': [], 'errors': [],
        'at': record['at'], 'record': record}
    assert (mtu(netns, 'bdp0'), mtu(netns, HOSTILE)) == (1500, 1500)


def test_a_confirmation_in_time_disarms_the_timer_and_nothing_is_put_back(veth_netns, tmp_path):
    netns = veth_netns
    pending = in_netns(netns, tmp_path, 'arm', json.dumps([['bdp0', 9000, 1500]]), 2)
    assert mtu(netns, 'bdp0') == 9000 and sleeping(pending)
    confirmed = in_netns(netns, tmp_path, 'confirmed', json.dumps(pending))
    assert confirmed['by'] == 'confirmed' and confirmed['ending']['outcome'] == 'confirmed'
    assert open(os.path.join(pending['decided'], 'by')).read() == 'confirmed\n'
    assert os.listdir(str(tmp_path / 'run')) == [os.path.basename(pending['decided'])]     # script and pid file gone
    assert until(lambda: not sleeping(pending)), 'the timer process was not stopped'
    time.sleep(max(pending['deadline'] + 1 - time.time(), 0))
    assert mtu(netns, 'bdp0') == 9000 and not (tmp_path / 'jumbo_mtu-reverts.log').exists()


# ----------------------------------------------------------------------------- decisions and endings, files only

class Value(commit.Setting):
    NAME, UNIT_PREFIX, WHAT = 'test', 'bdp-wan-tune-test-', 'value'

    def __init__(self):
        self.values, self.refuse = {}, ()

    def set(self, name, value):
        if name in self.refuse:
            raise RuntimeError('%s refused' % name)
        self.values[name] = value

    @staticmethod
    def describe(steps):
        return ' '.join('%s=%s' % (name, previous) for name, _current, previous in steps)


@pytest.fixture
def timer(tmp_path, monkeypatch):
    monkeypatch.setattr(commit, 'RUN_DIR', str(tmp_path / 'run'))
    os.mkdir(commit.RUN_DIR)
    found = commit.Timer(None, str(tmp_path), Value())
    found.pending = {'token': 'T1', 'decided': found.path('T1', '.decided'), 'boot_id': commit.boot_id(),
                     'revert_steps': [['a', 2, 1], ['b', 20, 10]], 'changes': [['a', 1, 2], ['b', 10, 20]]}
    return found


class Refused(Exception):
    pass


class Module(object):
    """What check_timeout reads of a module: its confirm_timeout, and fail_json."""

    def __init__(self, confirm_timeout):
        self.params = {'confirm_timeout': confirm_timeout}

    @staticmethod
    def fail_json(msg):
        raise Refused(msg)


def test_the_shortest_confirm_timeout_is_accepted_and_a_second_less_refused():
    commit.check_timeout(Module(commit.MIN_TIMEOUT))
    with pytest.raises(Refused) as info:
        commit.check_timeout(Module(commit.MIN_TIMEOUT - 1))
    assert str(info.value).startswith('confirm_timeout: %d s is too short' % (commit.MIN_TIMEOUT - 1))


def signalled(pid):
    """Whether ``pid`` (a child of this test) has ended or has a signal pending: read from /proc at once, so that a
    signal that was sent shows before the process next runs."""
    try:
        with open('/proc/%d/status' % pid) as handle:
            fields = dict(line.split(':', 1) for line in handle.read().splitlines() if ':' in line)
    except OSError:
        return True
    return fields['State'].split()[0] == 'Z' or any(int(fields[key], 16) for key in ('SigPnd', 'ShdPnd'))


def test_a_timer_pid_that_now_belongs_to_another_process_is_not_signalled(timer):
    """The pending change recorded the timer's pid; the timer has ended and the pid is another process's (no
    script in its command line): disarming it sends no signal to that process or its group, and removes the
    script and pid files.  The timer that still runs its script is stopped."""
    script = os.path.join(commit.RUN_DIR, 'test-T1.py')
    open(script, 'w').close()
    other, _pipe = commit.spawn_detached(['/bin/sleep', '300'])                    # the pid's new owner
    running, _pipe = commit.spawn_detached(['/bin/sh', '-c', 'sleep 300', script])  # the timer, running its script
    try:
        until(lambda: script in (commit.files.read_text('/proc/%d/cmdline' % running) or ''))
        timer.disarm(dict(timer.pending, method='process', pid=other, script=script))
        assert not signalled(other) and commit.reap(other) is None
        assert os.listdir(commit.RUN_DIR) == []
        open(script, 'w').close()
        timer.disarm(dict(timer.pending, method='process', pid=running, script=script))
        assert signalled(running)
    finally:
        for pid in (other, running):
            os.killpg(pid, 9)
            os.waitpid(pid, 0)


def test_whoever_takes_the_decision_first_decides(timer):
    pending = timer.pending
    assert timer.decision(pending) == 'waiting'
    assert timer.decision(pending, take='confirmed') == 'confirmed'
    assert timer.decision(pending, take='module') == 'confirmed'        # taken: a later call finishes it
    assert commit.fire(timer.data('T1', pending['revert_steps']), timer.setting.set) is None
    assert timer.setting.values == {}


def test_a_marker_without_its_word_is_the_timers_and_a_reboot_ends_it(timer):
    pending = timer.pending
    os.mkdir(pending['decided'])                 # the script was stopped between its mkdir and its write
    assert timer.decision(pending, take='confirmed') == 'timer'
    assert timer.decision(dict(pending, boot_id='an-earlier-boot'), take='confirmed') is None
    ending = timer.end(dict(pending, boot_id='an-earlier-boot'), None)
    assert (ending['outcome'], ending['restored']) == ('restored_by_reboot', {'a': 1, 'b': 10})


def test_the_module_puts_back_what_it_can_and_logs_it(timer):
    timer.setting.refuse = ('b',)
    assert timer.decision(timer.pending, take='module') == 'module'
    ending = timer.end(timer.pending, 'module')
    assert (ending['outcome'], ending['restored'], ending['failed'], ending['errors']) == (
        'restored_by_module', {'a': 1}, ['b'], ['b refused'])
    record, = [json.loads(line) for line in open(timer.log_path)]
    assert (record['by'], record['restored'], record['rc'], record['failed']) == ('module', 'a=1 b=10', 1, 'b')


def test_what_the_timer_could_not_put_back_is_read_from_its_record(timer):
    timer.setting.refuse = ('a',)
    record = commit.fire(timer.data('T1', timer.pending['revert_steps']), timer.setting.set)
    assert (record['rc'], record['failed'], timer.setting.values) == (1, 'a', {'b': 10})
    ending = timer.end(timer.pending, timer.decision(timer.pending, take='confirmed'))
    assert (ending['outcome'], ending['restored'], ending['failed'], ending['record']) == (
        'restored_by_timer', {'b': 10}, ['a'], record)


def test_a_systemd_timer_that_decided_is_stopped_and_its_service_left_to_finish(timer):
    """The elapsed timer unit goes (as a timer disarmed in time does), the service that runs the script is not
    stopped: ``systemctl stop`` of the .timer leaves it running."""
    calls = []
    timer.module = type('Module', (), {'run_command': lambda self, args: calls.append(args) or (0, '', '')})()
    pending = dict(timer.pending, method='systemd', unit='bdp-wan-tune-test-T1')
    os.mkdir(pending['decided'])
    assert timer.end(pending, timer.decision(pending, take='confirmed'))['outcome'] == 'restored_by_timer'
    assert calls == [['systemctl', 'stop', 'bdp-wan-tune-test-T1.timer'],
                     ['systemctl', 'reset-failed', 'bdp-wan-tune-test-T1.timer', 'bdp-wan-tune-test-T1.service']]


def test_a_word_still_being_written_is_the_timers_and_its_script_is_left_to_run(timer):
    """The timer's script has created the marker and its ``by`` file but not yet written "timer" in it (or a timer
    of the earlier version, whose shell wrote the word with ``echo``): the module reads the timer's decision, not a
    reboot's, and does not stop the script that is putting the values back."""
    script = os.path.join(commit.RUN_DIR, 'test-T1.py')
    open(script, 'w').close()
    pid, _pipe = commit.spawn_detached(['/bin/sh', '-c', 'sleep 30', script])     # the timer, running its script
    try:
        pending = dict(timer.pending, method='process', pid=pid, script=script)
        os.mkdir(pending['decided'])
        open(os.path.join(pending['decided'], 'by'), 'w').close()
        assert timer.decision(pending, take='confirmed') == 'timer'
        assert timer.end(pending, timer.decision(pending))['outcome'] == 'restored_by_timer'
        time.sleep(0.1)
        assert commit.reap(pid) is None, 'the running script was stopped'
    finally:
        os.killpg(pid, 9)
        os.waitpid(pid, 0)


@contextlib.contextmanager
def run_full(monkeypatch):
    """/run full: writing a decision marker's ``by`` file fails with ENOSPC; every other open() is the real one."""
    real_open = open

    def full(path, *args, **kwargs):
        if str(path).endswith(os.sep + 'by'):
            raise OSError(28, 'No space left on device')
        return real_open(path, *args, **kwargs)
    with monkeypatch.context() as patched:
        patched.setattr('builtins.open', full)
        yield


def test_the_timer_puts_back_even_when_it_cannot_write_its_word(timer, monkeypatch):
    """/run full: the marker is made (the decision is the timer's) but its ``by`` file cannot be written; the
    values go back all the same (the earlier version's shell script went on after a failed echo)."""
    with run_full(monkeypatch):
        record = commit.fire(timer.data('T1', timer.pending['revert_steps']), timer.setting.set)
    assert record and record['rc'] == 0 and timer.setting.values == {'a': 1, 'b': 10}
    assert timer.decision(timer.pending, take='confirmed') == 'timer'


def test_the_module_decides_even_when_it_cannot_write_its_word(timer, monkeypatch):
    """/run full when the module confirms or puts back: its mkdir took the decision (the timer backs off), so the
    call goes on and ends the change, instead of failing with a traceback and leaving a marker without a word that
    the next run would read as the timer's put-back."""
    with run_full(monkeypatch):
        assert timer.decision(timer.pending, take='module') == 'module'
    ending = timer.end(timer.pending, 'module')
    assert (ending['outcome'], ending['restored']) == ('restored_by_module', {'a': 1, 'b': 10})
    assert commit.fire(timer.data('T1', timer.pending['revert_steps']), timer.setting.set) is None


def test_a_script_that_would_not_run_under_the_timer_is_refused_before_the_change(timer, tmp_path, monkeypatch):
    """The timer runs its script isolated (python -I) in systemd's bare environment, not the module's: a script whose
    imports load only through the module's PYTHONPATH is refused when it is armed (nothing armed, nothing left), so
    that no change is made that nothing could put back."""
    helper = tmp_path / 'lib'
    helper.mkdir()
    (helper / 'bdp_only_on_pythonpath.py').write_text('VALUE = 1\n')
    monkeypatch.setenv('PYTHONPATH', str(helper))
    timer.setting.SOURCE = 'import bdp_only_on_pythonpath\n\n\ndef set_value(name, value):\n    pass\n'
    with pytest.raises(RuntimeError) as info:
        timer.arm([['a', 2, 1]], 30, 'process')
    assert 'does not run with %s in a bare environment' % sys.executable in str(info.value)
    assert 'bdp_only_on_pythonpath' in str(info.value)
    assert os.listdir(commit.RUN_DIR) == []
