# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/verify.yml against hosts that are all the controller (local connection, iperf3 over loopback only):
bad inputs stop the run before any test and name the variable, a receiver that cannot run a server is an ERROR pair
that does not stop the others, and the run fails after writing the report; verify_fail_on_error=false exits 0.
A stock run's job artifacts (set_stats: verify, verify_baseline), taken from ansible-runner's events as AWX takes
them, give a later run with a fresh report directory its stock baseline."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERIFY = os.path.join(ROOT, 'playbooks', 'verify.yml')
PYTHON = sys.executable


def playbook(tmp_path, *argv):
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('\n'.join([
        '[pair]',
        'h1 wan_peer=h3',
        'h2 wan_peers="[\'h1\']"',
        'h3 ansible_python_interpreter=/nonexistent/python',
        '[pair:vars]', 'ansible_connection=local', 'jumbo_mtu_address=127.0.0.1',
        '[all:vars]', 'ansible_python_interpreter=%s' % PYTHON]) + '\n')
    cmd = [os.path.join(os.path.dirname(PYTHON), 'ansible-playbook'), '-i', str(inventory), VERIFY, '-l', 'h1,h2',
           '-e', json.dumps({'rate': '1g', 'rtt': '1', 'verify_duration': 1, 'verify_omit': 0,
                             'verify_report_dir': str(tmp_path / 'report')})] + list(argv)
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false')
    return subprocess.run(cmd, env=env, text=True, capture_output=True, check=False, timeout=600)


def survey_blocks(stdout):
    """The output of each survey task of the role (its TASK line up to the next TASK or PLAY line)."""
    return [block.split('\nTASK [')[0].split('\nPLAY ')[0]
            for block in stdout.split('TASK [bdp.wan_tune.verify : Survey this host')[1:]]


@pytest.mark.parametrize('extra, message', [
    (['-e', 'verify_streams=0'], 'verify_streams: 0 is out of range; expected a whole number of streams from 1 to 128.'),
    (['-e', 'rtt=auto'], 'verify_rtt (-e rtt=...) is auto, but this host has no fact tcp_buffers_measured_rtt_ms'),
    (['-e', 'verify_peers=h9'], 'verify_peers (from wan_peer / wan_peers): ["h9"] not in the inventory'),
    (['-e', 'verify_label=a/b'], 'verify_label: "a/b" is not a run label'),
    (['-e', 'rate=1GB'], 'verify_rate (-e rate=...)'),
    (['-e', 'verify_pair_group=nogroup'], 'verify_pair_group: "nogroup" is not a group of the inventory'),
    (['-e', 'verify_baseline=[1]'], 'verify_baseline: is a list, not a verify summary; expected the verify_baseline '
                                    'artifact of a run labelled stock'),
    (['-e', json.dumps({'verify_baseline': {'label': 'stock', 'id': '20261122T194500Z', 'time': '2026-11-22T19:45:00Z',
                                            'pairs': [{'status': 'PASS', 'receiver_bps': 1}]}})],
     'verify_baseline: pairs[0] has no key'),
])
def test_bad_inputs_stop_before_any_test(tmp_path, extra, message):
    proc = playbook(tmp_path, *extra)
    assert proc.returncode != 0 and message in proc.stdout, proc.stdout[-3000:]
    assert 'Start a one-test iperf3 server' not in proc.stdout
    assert not (tmp_path / 'report').exists()


def test_an_error_pair_does_not_stop_the_others_and_fails_after_the_report(tmp_path):
    proc = playbook(tmp_path)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert '"msg": "h1 -> h3 (127.0.0.1): ERROR: Start a one-test iperf3 server on the receiver, for the sender only failed:' in proc.stdout
    assert '"msg": "h2 -> h1 (127.0.0.1): PASS: iperf3 to 127.0.0.1' in proc.stdout
    assert '1 of 2 path tests failed' in proc.stdout and 'h1 -> h3 (127.0.0.1): ERROR' in proc.stdout
    runs = [name for name in os.listdir(str(tmp_path / 'report')) if name.startswith('run-')]
    run = json.loads((tmp_path / 'report' / runs[0]).read_text())
    assert run['failed_pairs'] == ['h1 -> h3'] and run['passed'] is False
    # the host survey ran on both hosts of the play, before and after the tests; over loopback it finds no NIC
    # (the peers' address is the host's own), which the report shows and which stopped no test
    surveys = survey_blocks(proc.stdout)
    assert len(surveys) == 2 and all('ok: [h1]' in block and 'ok: [h2]' in block for block in surveys)
    assert sorted(run['hosts']) == ['h1', 'h2']
    for name in ('h1', 'h2'):
        assert run['hosts'][name]['before'] is None and run['hosts'][name]['after'] is None
        assert [error.split(': ')[0] for error in run['hosts'][name]['errors']] == [
            'the survey before the tests failed', 'the survey after the tests failed']
        assert 'No interface to survey: peer 127.0.0.1 (127.0.0.1) is an address of this host' in \
            run['hosts'][name]['errors'][0]
    assert '\n## Hosts\n' in (tmp_path / 'report' / 'report.md').read_text()

    proc = playbook(tmp_path, '-e', 'verify_fail_on_error=false', '-e', 'verify_label=second',
                    '-e', 'verify_host_survey=false')
    assert proc.returncode == 0, proc.stdout[-3000:]
    runs = [name for name in os.listdir(str(tmp_path / 'report')) if name.startswith('run-')]
    second = [name for name in runs if name.endswith('-second.json')]
    assert len(runs) == 2 and len(second) == 1
    assert json.loads((tmp_path / 'report' / second[0]).read_text())['hosts'] is None
    # the report's files are the controller's: written, and no change of the host in whose name they are written
    assert 'changed: [h1 -> localhost]' not in proc.stdout
    assert 'ok: [h1 -> localhost] => (item=%s)' % (tmp_path / 'report' / 'report.html') in proc.stdout
    surveys = survey_blocks(proc.stdout)
    assert len(surveys) == 2 and all('ok: [' not in block and 'skipping: [h1]' in block for block in surveys)


@pytest.fixture
def isolated(tmp_path):
    """A network namespace with only loopback: the playbook runs in it, so the unreachable peer's address
    (198.18.0.0/15) has no route and no packet leaves the machine ("Network is unreachable" at once)."""
    if os.geteuid() != 0:
        pytest.skip('creates a network namespace: needs root')
    name = 'bdp-verify-%d' % os.getpid()
    subprocess.run(['ip', 'netns', 'add', name], check=True)
    try:
        subprocess.run(['ip', '-n', name, 'link', 'set', 'lo', 'up'], check=True)
        yield ['ip', 'netns', 'exec', name]
    finally:
        subprocess.run(['ip', 'netns', 'delete', name], check=False)


def test_an_unreachable_peer_is_an_error_pair_and_the_others_and_the_report_still_run(tmp_path, isolated):
    """Issue 15: a peer that is in the inventory, and in the play, but unreachable (ssh to an address nothing
    answers). Its pair is an ERROR with the reason, the other pairs run, the report is written, the run fails after
    it (it used to end in "object of type 'HostVarsVars' has no attribute '__verify_report'", with no report)."""
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('\n'.join([
        '[pair]',
        'h1 wan_peers="[\'h3\', \'h2\']" ansible_connection=local',
        'h2 wan_peer=h1 ansible_connection=local',
        'h3 ansible_host=198.18.251.7 ansible_connection=ssh ansible_user=root ansible_ssh_timeout=3 '
        'ansible_ssh_retries=0',
        '[all:vars]', 'ansible_python_interpreter=%s' % PYTHON]) + '\n')
    cmd = isolated + [os.path.join(os.path.dirname(PYTHON), 'ansible-playbook'), '-i', str(inventory), VERIFY,
                      '-e', json.dumps({'rate': '1g', 'rtt': '1', 'verify_duration': 1, 'verify_omit': 0,
                                        'verify_report_dir': str(tmp_path / 'report'),
                                        'verify_peer_addresses': {'h1': '127.0.0.1', 'h2': '127.0.0.1'}})]
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_HOST_KEY_CHECKING='false')
    proc = subprocess.run(cmd, env=env, text=True, capture_output=True, check=False, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-4000:]
    assert 'HostVarsVars' not in output, output[-4000:]
    assert '"msg": "h1 -> h3 (198.18.251.7): ERROR: Reach the receiver failed: h3 is unreachable:' in output, \
        output[-4000:]
    assert '"msg": "h1 -> h2 (127.0.0.1): PASS' in output, output[-4000:]
    assert '"msg": "h2 -> h1 (127.0.0.1): PASS' in output, output[-4000:]
    assert '1 of 3 path tests failed' in output, output[-4000:]
    runs = [name for name in os.listdir(str(tmp_path / 'report')) if name.startswith('run-')]
    assert len(runs) == 1, runs
    run = json.loads((tmp_path / 'report' / runs[0]).read_text())
    assert run['failed_pairs'] == ['h1 -> h3'] and run['passed'] is False
    assert (tmp_path / 'report' / 'report.html').exists() and (tmp_path / 'report' / 'report.md').exists()
    # its host survey could not reach it either: shown in the report, without taking it out of the play
    assert [error.split(': ')[0] for error in run['hosts']['h3']['errors']] == [
        'the survey before the tests failed', 'the survey after the tests failed'], run['hosts']['h3']


# ----------------------------------------------------------------------------- job artifacts (AWX, ansible-runner)

def run_job(tmp_path, name, report, *argv):
    """One job of playbooks/verify.yml on h1 <-> h2 over loopback: (exit code, output, the job's artifacts).

    Through ansible-runner where it is installed, as AWX runs a job: the artifacts are the event_data.artifact_data
    of the playbook_on_stats event in artifacts/<ident>/job_events/*.json. Without it, ansible-playbook prints them
    (ANSIBLE_SHOW_CUSTOM_STATS, the line RUN: of CUSTOM STATS)."""
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('\n'.join([
        '[pair]', 'h1 wan_peer=h2', 'h2 wan_peer=h1',
        '[pair:vars]', 'ansible_connection=local', 'jumbo_mtu_address=127.0.0.1',
        '[all:vars]', 'ansible_python_interpreter=%s' % PYTHON]) + '\n')
    args = ['-i', str(inventory), '-e', json.dumps({
        'rate': '1g', 'rtt': '1', 'verify_duration': 1, 'verify_omit': 0, 'verify_host_survey': False,
        'verify_report_dir': str(report)})] + list(argv)
    env = {'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_LOCALHOST_WARNING': 'false',
           'PATH': os.path.dirname(PYTHON) + os.pathsep + os.environ['PATH']}
    try:
        import ansible_runner
    except ImportError:
        ansible_runner = None
    if ansible_runner is None:
        proc = subprocess.run([os.path.join(os.path.dirname(PYTHON), 'ansible-playbook'), VERIFY] + args,
                              env=dict(os.environ, ANSIBLE_SHOW_CUSTOM_STATS='1', **env), text=True,
                              capture_output=True, check=False, timeout=600)
        found = re.search(r'^\tRUN: (.*)$', proc.stdout, re.M)
        return proc.returncode, proc.stdout, json.loads(found.group(1)) if found else {}
    private = tmp_path / ('runner-' + name)
    private.mkdir()
    result = ansible_runner.run(private_data_dir=str(private), playbook=VERIFY, cmdline=shlex.join(args),
                                envvars=env, quiet=True, timeout=600)
    stats = [event for event in result.events if event.get('event') == 'playbook_on_stats']
    assert len(stats) == 1, result.stdout.read()
    # where AWX reads them: the job's event files
    files = [path for path in (private / 'artifacts' / result.config.ident / 'job_events').iterdir()
             if json.loads(path.read_text()).get('event') == 'playbook_on_stats']
    assert len(files) == 1
    return result.rc, result.stdout.read(), stats[0]['event_data']['artifact_data']


def report_of(directory):
    """The one run file of a report directory, and its report.md."""
    runs = [name for name in os.listdir(str(directory)) if name.startswith('run-')]
    assert len(runs) == 1, runs
    return json.loads((directory / runs[0]).read_text()), (directory / 'report.md').read_text()


def test_the_stock_baseline_travels_as_a_job_artifact_to_a_fresh_report_directory(tmp_path):
    """AWX: verify (verify_label=stock) -> wan_tune -> verify, each job in a fresh execution environment. The stock
    job's artifacts are passed to the later job as extra variables (-e @artifacts.json here); its report directory
    starts empty, and its report shows the stock baseline all the same."""
    rc, output, artifacts = run_job(tmp_path, 'stock', tmp_path / 'job1', '-e', 'verify_label=stock')
    assert rc == 0, output[-3000:]
    assert sorted(artifacts) == ['verify', 'verify_baseline'], artifacts
    stock = artifacts['verify_baseline']
    assert stock == artifacts['verify'] and stock['label'] == 'stock' and stock['check_mode'] is False
    stock_run, _text = report_of(tmp_path / 'job1')
    assert stock['id'] == stock_run['id'] and stock['time'] == stock_run['time'] and stock['passed'] is True
    assert [pair['key'] for pair in stock['pairs']] == ['h1 -> h2', 'h2 -> h1']
    for pair, kept in zip(stock['pairs'], stock_run['pairs']):
        assert pair['status'] == 'PASS' and pair['receiver_bps'] == kept['receiver_bps'] > 0
        assert pair['address'] == '127.0.0.1' and pair['rate_bps'] == 10 ** 9 and pair['duration'] == 1
        assert 'hosts' not in pair and 'msg' not in pair and 'sender_bps' not in pair
    (tmp_path / 'artifacts.json').write_text(json.dumps(artifacts))

    # the later job: every artifact of the earlier one as an extra variable (none is refused), a new report directory
    rc, output, artifacts = run_job(tmp_path, 'tuned', tmp_path / 'job2', '-e', '@%s' % (tmp_path / 'artifacts.json'),
                                    '-e', 'verify_label=tuned')
    assert rc == 0, output[-3000:]
    assert sorted(artifacts) == ['verify'] and artifacts['verify']['label'] == 'tuned'
    run, text = report_of(tmp_path / 'job2')
    by_key = dict((pair['key'], pair) for pair in stock['pairs'])
    for pair in run['pairs']:
        base = by_key[pair['key']]
        assert pair['baseline_run'] == stock['id'] and pair['baseline_bps'] == base['receiver_bps']
        row = [line for line in text.splitlines() if line.startswith('| %s |' % pair['key'])][0]
        assert row.endswith('| %.1f (%s) | PASS |' % (base['receiver_bps'] / 1e6, stock['id'])), row

    # without it, a fresh directory has no baseline
    rc, output, artifacts = run_job(tmp_path, 'alone', tmp_path / 'job3', '-e', 'verify_label=tuned')
    assert rc == 0, output[-3000:]
    run, text = report_of(tmp_path / 'job3')
    assert [pair['baseline_run'] for pair in run['pairs']] == [None, None]
    assert [line.endswith('| - | PASS |') for line in text.splitlines() if line.startswith('| h')] == [True, True]
