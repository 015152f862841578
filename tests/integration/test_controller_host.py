# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run playbooks/wan_tune.yml against the controller itself (the initial network namespace).

Containers cannot write net.core.* (they belong to the host kernel), so this is where the
host-owned keys are proven: written live and to the drop-in file, idempotent, and restored
by tcp_buffers_state=absent. Whatever happens, the test puts every key back as it found it.
Each run also prints its job artifacts (ANSIBLE_SHOW_CUSTOM_STATS): the wan_tune artifact is checked on the same runs.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import pytest

from procsys import proc, read, write


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'wan_tune.yml')
KEYS = ('net.core.rmem_max', 'net.core.wmem_max', 'net.core.netdev_max_backlog', 'net.ipv4.tcp_rmem',
        'net.ipv4.tcp_wmem', 'net.ipv4.tcp_mtu_probing', 'net.ipv4.tcp_window_scaling', 'net.ipv4.tcp_sack',
        'net.ipv4.tcp_timestamps', 'net.ipv4.tcp_moderate_rcvbuf', 'net.ipv4.tcp_congestion_control')
BUFFER = 98000000  # 8 x BDP (the default headroom) for 1 Gbit/s x 98 ms

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='writes /proc/sys: needs root on the controller')


@pytest.fixture
def host(tmp_path):
    if not os.stat(proc('net.core.rmem_max')).st_mode & 0o200:
        pytest.fail('not in the initial network namespace: net.core.rmem_max is read-only here')
    before = dict((key, read(key)) for key in KEYS)
    files = {
        'tcp_buffers_sysctl_file': str(tmp_path / '90-bdp-wan-tune-test-buffers.conf'),
        'bbr_sysctl_file': str(tmp_path / '90-bdp-wan-tune-test-bbr.conf'),
        'bbr_modules_load_file': str(tmp_path / 'bdp-wan-tune-test.conf'),
    }

    def run(*args, expect_rc=0):
        cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), PLAYBOOK,
               '-i', 'controller,', '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
               '-e', 'wan_tune_become=false rate=1g rtt=98']
        for name, value in files.items():
            cmd += ['-e', '%s=%s' % (name, value)]
        proc_ = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=600, check=False,
                               env=dict(os.environ, ANSIBLE_SHOW_CUSTOM_STATS='1'))
        output = proc_.stdout + proc_.stderr
        assert proc_.returncode == expect_rc, output
        recap = re.search(r'^controller\s*:.*changed=(\d+).*failed=(\d+)', output, re.M)
        return output, int(recap.group(1)) if recap else None

    try:
        yield before, files, run
    finally:
        for key, value in before.items():
            if read(key) != value:
                write(key, value)
        subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), PLAYBOOK,
                        '-i', 'controller,', '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
                        '-e', 'wan_tune_become=false tcp_buffers_state=absent',
                        '-e', 'tcp_buffers_sysctl_file=%s' % files['tcp_buffers_sysctl_file'], '-t', 'tcp_buffers'],
                       capture_output=True, timeout=600, check=False)
        for key, value in before.items():
            if read(key) != value:
                write(key, value)


def artifacts(output):
    """The job's artifacts of a run, as the default callback prints them with ANSIBLE_SHOW_CUSTOM_STATS (the line
    RUN: of CUSTOM STATS, JSON); AWX and ansible-runner keep the same in the playbook_on_stats event."""
    found = re.search(r'^\tRUN: (.*)$', output, re.M)
    assert found, output
    return json.loads(found.group(1))


PLAN = {'state': 'present', 'rate_bps': 10 ** 9, 'rtt_ms': 98.0, 'bdp_bytes': BUFFER // 8, 'headroom': 8.0,
        'buffer_bytes': BUFFER}
# An earlier verify job's artifacts (a stock run), as AWX passes them to the next job of a workflow.
STOCK = {'label': 'stock', 'id': '20261122T194500Z', 'time': '2026-11-22T19:45:00Z', 'passed': False,
         'check_mode': False, 'pairs': [{'key': 'controller -> peer', 'status': 'FAIL', 'receiver_bps': 289606000}]}


def test_net_core_keys_written_idempotent_and_restored(host, tmp_path):
    before, files, run = host
    if int(before['net.core.rmem_max']) >= BUFFER:
        pytest.fail('the controller already has net.core.rmem_max >= %d; nothing to prove' % BUFFER)

    output, changed = run('--check', '--diff')
    assert changed and changed > 0, output
    assert 'net.core.rmem_max = %d' % BUFFER in output, output
    assert dict((key, read(key)) for key in KEYS) == before, 'check mode changed live values'
    assert not os.path.exists(files['tcp_buffers_sysctl_file'])
    applied = artifacts(output)['wan_tune']['controller']
    assert (applied['check_mode'], applied['changed'], applied['tcp_buffers']) == (True, True, PLAN), applied

    output, changed = run()
    assert changed and changed > 0, output
    # what the run applied, for the next job (set_stats, wan_tune); the set_stats task itself changed nothing
    applied = artifacts(output)
    assert list(applied) == ['wan_tune'] and list(applied['wan_tune']) == ['controller']
    assert applied['wan_tune']['controller'] == {
        'state': 'present', 'check_mode': False, 'changed': True, 'tcp_buffers': PLAN,
        'bbr': {'state': 'present', 'congestion_control': 'bbr',
                'qdisc': applied['wan_tune']['controller']['bbr']['qdisc']},
        'jumbo_mtu': None, 'nic': None, 'rsync_daemon': None}
    assert applied['wan_tune']['controller']['bbr']['qdisc'] in ('fq', None)    # none without sch_fq (this machine)
    assert re.search(r"TASK \[Keep what the run applied to this host in the job's artifacts \(wan_tune\)\] \**\n"
                     r"ok: \[controller\]", output), output
    earlier = tmp_path / 'artifacts.json'
    earlier.write_text(json.dumps(dict(applied, verify=STOCK, verify_baseline=STOCK)))
    for key in ('net.core.rmem_max', 'net.core.wmem_max'):
        assert read(key) == str(BUFFER)
    for key in ('net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem'):
        low, default, high = read(key).split()
        assert [low, default] == before[key].split()[:2], 'min/default must stay as the host had them'
        assert int(high) == max(BUFFER, int(before[key].split()[2]))
    assert int(read('net.core.netdev_max_backlog')) == max(2500, int(before['net.core.netdev_max_backlog']))
    with open(files['tcp_buffers_sysctl_file']) as handle:
        text = handle.read()
    assert 'net.core.rmem_max = %d' % BUFFER in text
    assert 'BDP = 1 Gbit/s x 98 ms / 8 = 12250000 bytes' in text
    assert text.startswith('#\n# Ansible managed')

    # the re-run is the next job of a workflow: the earlier jobs' artifacts as extra variables are not refused
    output, changed = run('-e', '@%s' % earlier)
    assert changed == 0, 'second run changed something:\n' + output
    assert artifacts(output)['wan_tune']['controller']['changed'] is False

    output, changed = run('-e', 'tcp_buffers_state=absent', '-t', 'tcp_buffers')
    assert changed and changed > 0, output
    assert not os.path.exists(files['tcp_buffers_sysctl_file'])
    applied = artifacts(output)['wan_tune']['controller']
    assert (applied['changed'], applied['tcp_buffers'], applied['bbr']) == (True, {'state': 'absent'}, None), applied
    for key in KEYS:
        assert read(key) == before[key], '%s not restored' % key


def module_executions(output):
    """The remote module executions of a -vvv run, in order: each AnsiballZ payload the connection ran."""
    return re.findall(r"^<controller> EXEC .*?python[0-9.]* \S*/AnsiballZ_(\w+)\.py", output, re.M)


def test_a_no_op_run_costs_one_module_execution_per_host_whatever_the_keys(host):
    """Fleet cost (docs/fleet.md): a no-op re-run makes one remote module execution per host for bbr and tcp_buffers
    together (bbr hands its kernel + default + socket check to the tcp_buffers call), and the count does not grow
    with the number of keys. With one of the roles left out by tags, the other makes its own call."""
    before, files, run = host
    output, changed = run()
    assert changed and changed > 0, output
    no_pipelining = ('-e', 'ansible_pipelining=false', '-vvv')     # the payload file names appear in -vvv
    output, changed = run(*no_pipelining)
    assert changed == 0, output
    assert module_executions(output) == ['sysctl_dropin'], output
    # 4 keys fewer (the companions off) and one more (tcp_mem fitted): the same executions (check mode: no change)
    for extra in ('tcp_buffers_companions=false', 'tcp_buffers_fit_tcp_mem=true tcp_buffers_flows=64'):
        output, changed = run('--check', '-e', extra, *no_pipelining)
        assert module_executions(output) == ['sysctl_dropin'], output
    # one role alone: no hand-over
    output, changed = run('--check', '--tags', 'bbr', *no_pipelining)
    assert changed == 0, output
    assert module_executions(output) == ['tcp_congestion'], output
    output, changed = run('--check', '--skip-tags', 'bbr', *no_pipelining)
    assert changed == 0, output
    assert module_executions(output) == ['sysctl_dropin'], output


@pytest.mark.parametrize('extra, message', [
    ('rate=1GB', "tcp_buffers_rate (-e rate=...): '1GB' is in bytes"),
    ('rtt=0', "tcp_buffers_rtt (-e rtt=...): '0' must be above zero"),
    ('rtt=11s', "tcp_buffers_rtt (-e rtt=...): '11s' is 11000 ms, outside 0.001 ms to 10 s"),
    ('tcp_buffers_headroom=1', "tcp_buffers_headroom: '1' is outside 2 to 64"),
])
def test_bad_input_fails_before_any_change(host, extra, message):
    before, files, run = host
    output, changed = run('-e', extra, expect_rc=2)
    assert message in output, output
    assert dict((key, read(key)) for key in KEYS) == before
    assert not any(os.path.exists(path) for path in files.values())


def test_a_failed_rollback_step_does_not_stop_the_others(host):
    """bbr's rollback fails (its record asks for an algorithm the kernel refuses); tcp_buffers is still rolled back,
    the run fails at the end naming the step, and a second rollback finishes once the cause is gone."""
    before, files, run = host
    cc = 'net.ipv4.tcp_congestion_control'
    run()
    bbr_record = os.path.join('/var/lib/bdp_wan_tune', os.path.basename(files['bbr_sysctl_file']) + '.json')
    record = {'original': {}}
    if os.path.exists(bbr_record):
        with open(bbr_record) as handle:
            record = json.load(handle)
    real = dict(record, original=dict(record.get('original', {}), **{cc: before[cc]}))
    broken = dict(record, original=dict(record.get('original', {}), **{cc: 'nosuchcc'}))

    def write_record(content):
        with open(bbr_record, 'w') as handle:
            json.dump(content, handle)

    write_record(broken)            # what was there before: an algorithm this kernel does not have
    output, _changed = run('-e', 'wan_tune_state=absent', expect_rc=2)
    assert ('The rollback is incomplete on controller: bbr: congestion control and default qdisc: Restoring %s to '
            'nosuchcc failed' % cc) in output, output
    # the buffers were rolled back all the same; the bbr file stays for the retry, with bbr live
    assert not os.path.exists(files['tcp_buffers_sysctl_file'])
    for key in KEYS:
        if key != cc:
            assert read(key) == before[key], '%s not restored' % key
    assert read(cc) == 'bbr'
    assert os.path.exists(files['bbr_sysctl_file'])
    write_record(real)              # the cause is fixed: the retry finishes
    output, changed = run('-e', 'wan_tune_state=absent')
    assert not os.path.exists(files['bbr_sysctl_file']) and not os.path.exists(bbr_record)
    assert read(cc) == before[cc]


def test_rtt_auto_measures_records_and_rolls_back(host):
    """rtt=auto over loopback: TCP handshakes to a closed port (the reset comes back after one round trip), the
    plan sized for the rounded-up RTT, the RTT recorded and kept by a second run (0 changed), the record removed
    by the rollback. Loopback's 0.1 ms gives buffers below the host's own, so the floors keep every live value."""
    before, files, run = host
    record = '/var/lib/bdp_wan_tune/path_probe.json'
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    args = ('-e', 'rtt=auto', '-e', 'wan_peer=127.0.0.1', '-e', 'tcp_buffers_probe_port=%d' % port, '-t', 'tcp_buffers')
    output, changed = run(*args, '--check')
    assert 'measured: RTT 0.1 ms (measured 0.' in output and '127.0.0.1 median' in output, output
    assert not os.path.exists(record), 'check mode wrote the record'
    output, changed = run(*args)
    assert changed and changed > 0, output
    assert 'BDP = 1 Gbit/s x 0.1 ms / 8' in output, output
    with open(record) as handle:
        assert json.load(handle) == {'127.0.0.1': 0.1}
    with open(files['tcp_buffers_sysctl_file']) as handle:
        assert 'RTT auto (0.1 ms measured)' in handle.read()
    for key in ('net.core.rmem_max', 'net.ipv4.tcp_rmem'):
        assert read(key) == before[key], 'the floor did not keep %s' % key
    output, changed = run(*args)
    assert changed == 0, 'second rtt=auto run changed something:\n' + output
    output, changed = run('-e', 'tcp_buffers_state=absent', '-t', 'tcp_buffers')
    assert not os.path.exists(record) and not os.path.exists(files['tcp_buffers_sysctl_file'])


HOLDER = r'''
import sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import runlock
fd = runlock.acquire(sys.argv[2], 'the test holder')
print('held', flush=True)
sys.stdin.read()                # until the test closes stdin
runlock.release(fd, sys.argv[2])
'''


def test_a_second_run_waits_briefly_then_fails_while_another_holds_the_lock(host):
    """Two runs at once on one host (issue 15): while another run's step holds the host's lock
    (/var/lib/bdp_wan_tune/run.lock, here a process of this test), the run's first state-changing step waits, then
    fails with "another bdp.wan_tune run holds the lock since ..." and changes nothing."""
    before, files, run = host
    sys.path.insert(0, os.path.join(ROOT, 'tests'))
    from collection_path import collections_base
    lock = '/var/lib/bdp_wan_tune/run.lock'
    state_dir_existed = os.path.isdir('/var/lib/bdp_wan_tune')
    holder = subprocess.Popen([sys.executable, '-c', HOLDER, collections_base(), lock], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'held'
        output, changed = run(expect_rc=2)
        assert re.search(r'another bdp\.wan_tune run holds the lock since 20\S+Z \(pid %d, the test holder\)'
                         % holder.pid, output), output
        assert 'Waited 10 s; nothing was changed by this step.' in output
        assert dict((key, read(key)) for key in KEYS) == before
        assert not any(os.path.exists(path) for path in files.values())
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert not os.path.exists(lock)
    assert os.path.isdir('/var/lib/bdp_wan_tune') == state_dir_existed
    output, changed = run()                     # the lock is free again: the run goes through
    assert changed and changed > 0, output
