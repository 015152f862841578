# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs from AWX: a workflow of six jobs through the engine AWX uses, ansible-runner, with the project's execution
environment (``make ee``) as the container of every job, each in a fresh container and a fresh private data directory
(a fresh controller: nothing of one job's disk reaches the next), against the two WAN-lab hosts reached over SSH.

The EE's network: a namespace of its own with a bridge to a second interface of each lab host (198.18.6.0/24), on
which sshd answers; the lab's emulated link (500 Mbit/s, 100 ms) carries the tests and the migration between the
hosts. What one job leaves for the next travels only as job artifacts (set_stats), handed on as extra variables as an
AWX workflow does:

1. verify, labelled stock (verify_expect=rate: a stock host falls short of the link) - its artifacts hold the verdicts
   and the baseline;
2. wan_tune with the rsync daemon on B (A is its sender): the migration CA is made on B, nothing on the controller;
3. migrate, started without waiting (migrate_wait=false, at most 100 Mbit/s, so that it runs for a while): its
   artifacts hold the running migration's state and progress, and the only change is the start;
4. wan_tune again, while the migration runs: 0 changed on every host, nothing issued, and the migration keeps
   running (the same run, stunnel's main process the same);
5. verify, with the stock baseline from job 1's artifacts (verify_baseline): both pairs pass, and the report names
   the baseline;
6. migrate again, once the first migration has ended: it proves the copy (checksums) and its report is in the
   artifacts.

Every job leaves nothing in its private data directory but what ansible-runner writes (the artifacts), Ansible's own
temporary directory and the reports for people (results/ under the project directory), which no later job reads;
the password of the rsync user reaches no artifact, no event and no output. The figures go
to the job's JSON (times of the jobs, files left) for the stop note; the test asserts no timing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'lab'))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import target as _target  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
IMAGE = os.environ.get('BDP_EE_IMAGE', 'localhost/bdp-wan-tune-ee:latest')
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'containers.conf'))
NAME = 'bdp-lab-ee'
CTL = NAME + '-ctl'                     # the EE's network namespace
CTL_ADDR = {'A': '198.18.6.1', 'B': '198.18.6.2', 'ee': '198.18.6.254'}
RATE, RTT = '500m', 100
SOURCE, MODULE_PATH = '/srv/ee-source', '/srv/ee-in'
TREE_MB = 1200                          # at 100 Mbit/s about 100 s: it outlasts job 4
MIGRATION = 'ee-lab'
RESULTS = os.path.join(ROOT, 'results', 'ee-runner.json')
REPORTS = ('project/results/verify/', 'project/results/migrate/')

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason='the lab needs root (namespaces, TUN, podman)'),
              pytest.mark.skipif(shutil.which('podman') is None, reason='podman is not installed')]


def ip(*args, netns=None):
    subprocess.run(['ip'] + (['-n', netns] if netns else []) + [str(a) for a in args], check=True,
                   capture_output=True, text=True)


def sh(lab, host, script, check=True, timeout=300):
    proc = lab.exec(host, ['sh', '-c', script], timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError('%s: %s: rc %d\n%s%s' % (host, script, proc.returncode, proc.stdout, proc.stderr))
    return proc.stdout


def inventory(lab, password):
    """The inventory of every job: A sends its tree to B's rsync daemon over TLS; each tests its path to the other."""
    def host(name, peer):
        return {'ansible_host': CTL_ADDR[name], 'wan_address': lab.address(name), 'wan_peer': peer.lower()}
    b = dict(host('B', 'A'), rsync_daemon_tls_migration=MIGRATION, rsync_daemon_users=[
        {'name': 'migrate', 'password': password}], rsync_daemon_modules=[
        {'name': 'incoming', 'path': MODULE_PATH, 'read_only': False, 'auth_users': ['migrate'],
         'hosts_allow': [lab.address('A')], 'uid': 'root', 'gid': 'root', 'numeric_ids': True}])
    return {'all': {'hosts': {'a': dict(host('A', 'B'), migrate_source=SOURCE), 'b': b},
                    'vars': {'ansible_user': 'root', 'ansible_python_interpreter': '/usr/bin/python3'}}}


@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    """The lab, sshd on both hosts with a key of the test's, and the EE's network namespace bridged to them."""
    if subprocess.run(['podman', 'image', 'exists', IMAGE], env=ENV, check=False).returncode != 0:
        pytest.fail('no image %s: run make ee (scripts/build-ee.sh)' % IMAGE, pytrace=False)
    wanlab.teardown(NAME)
    subprocess.run(['ip', 'netns', 'delete', CTL], check=False, capture_output=True)
    work = tmp_path_factory.mktemp('ee')
    key = str(work / 'id_ed25519')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'bdp-ee-runner', '-f', key], check=True)
    the_lab = wanlab.Lab(rate=RATE, rtt=RTT, hosts='containers', name=NAME)
    try:
        the_lab.up()
        ip('netns', 'add', CTL)
        ip('link', 'set', 'lo', 'up', netns=CTL)
        ip('link', 'add', 'br0', 'type', 'bridge', netns=CTL)
        ip('addr', 'add', CTL_ADDR['ee'] + '/24', 'dev', 'br0', netns=CTL)
        ip('link', 'set', 'br0', 'up', netns=CTL)
        with open(key + '.pub') as handle:
            pub = handle.read().strip()
        for host in 'AB':
            pid = the_lab.state['container_pids'][host]
            ip('link', 'add', 'ctl0', 'netns', pid, 'type', 'veth', 'peer', 'name', 'p-' + host.lower(), 'netns', CTL)
            ip('link', 'set', 'p-' + host.lower(), 'master', 'br0', 'up', netns=CTL)
            sh(the_lab, host, 'ip addr add %s/24 dev ctl0 && ip link set ctl0 up && mkdir -p -m 0700 /root/.ssh && '
                              'echo "%s" > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys && '
                              'systemctl start ssh' % (CTL_ADDR[host], pub))
        sh(the_lab, 'A', 'mkdir -p %s/big %s/small && for i in $(seq 1 %d); do head -c 100000000 /dev/urandom '
                         '> %s/big/f$i; done && for i in $(seq 1 200); do head -c 40000 /dev/urandom > %s/small/s$i; '
                         'done' % (SOURCE, SOURCE, TREE_MB // 100, SOURCE, SOURCE), timeout=600)
        sh(the_lab, 'B', 'mkdir -p %s' % MODULE_PATH)
        yield the_lab, key
    finally:
        subprocess.run(['ip', 'netns', 'delete', CTL], check=False, capture_output=True)
        wanlab.teardown(NAME)


class Job(object):
    """One job: a fresh private data directory (inventory, the project's playbook, the SSH key, extra variables) and
    ``ansible-runner run --process-isolation`` with the EE image in the EE's network namespace."""

    def __init__(self, work, number, playbook, inventory_data, key, extravars):
        self.dir = os.path.join(str(work), 'job%d' % number)
        self.ident = 'job%d' % number
        for sub in ('project', 'inventory', 'env'):
            os.makedirs(os.path.join(self.dir, sub))
        with open(os.path.join(self.dir, 'project', playbook + '.yml'), 'w') as handle:
            handle.write('---\n- name: bdp.wan_tune.%s from the collection in the execution environment\n'
                         '  ansible.builtin.import_playbook: bdp.wan_tune.%s\n' % (playbook, playbook))
        with open(os.path.join(self.dir, 'inventory', 'hosts.yml'), 'w') as handle:
            yaml.safe_dump(inventory_data, handle)
        shutil.copy(key, os.path.join(self.dir, 'env', 'ssh_key'))
        with open(os.path.join(self.dir, 'env', 'extravars'), 'w') as handle:
            json.dump(extravars, handle)
        with open(os.path.join(self.dir, 'env', 'envvars'), 'w') as handle:
            json.dump({'ANSIBLE_HOST_KEY_CHECKING': 'False', 'ANSIBLE_PIPELINING': 'True',
                       'ANSIBLE_SSH_ARGS': '-o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=5'},
                      handle)
        self.inputs = self.files()
        self.playbook = playbook + '.yml'

    def files(self):
        return set(os.path.relpath(os.path.join(path, name), self.dir)
                   for path, dummy, names in os.walk(self.dir) for name in names)

    def run(self):
        start = time.monotonic()
        proc = subprocess.run(
            [os.path.join(BIN, 'ansible-runner'), 'run', self.dir, '-p', self.playbook, '--ident', self.ident,
             '--process-isolation', '--process-isolation-executable', 'podman', '--container-image', IMAGE,
             '--container-option=--network=ns:/run/netns/%s' % CTL],
            env=ENV, capture_output=True, text=True, check=False, timeout=1800)
        self.seconds = round(time.monotonic() - start, 1)
        self.output = proc.stdout + proc.stderr
        artifacts = os.path.join(self.dir, 'artifacts', self.ident)
        with open(os.path.join(artifacts, 'rc')) as handle:
            self.rc = int(handle.read().strip())
        self.events = []
        events = os.path.join(artifacts, 'job_events')
        for name in sorted(os.listdir(events), key=lambda item: int(item.split('-')[0])):
            with open(os.path.join(events, name)) as handle:
                self.events.append(json.load(handle))
        stats = [event for event in self.events if event.get('event') == 'playbook_on_stats']
        self.stats = stats[-1]['event_data'] if stats else {}
        self.artifacts = self.stats.get('artifact_data') or {}
        # what the job left in its private data directory besides its inputs, ansible-runner's artifacts and
        # Ansible's own temporary directory
        self.left = sorted(path for path in self.files() - self.inputs
                           if not path.startswith(('artifacts/', '.ansible/tmp/', '.ansible/cp/')))
        return self

    def changed(self):
        return dict((host, self.stats.get('changed', {}).get(host, 0)) for host in ('a', 'b'))

    def summary(self):
        return {'rc': self.rc, 'seconds': self.seconds, 'changed': self.changed(), 'left': self.left}


def leaks(directory, password):
    """The files of a job's private data directory that hold the password, as it is or escaped as JSON escapes it."""
    forms = (password, json.dumps(password)[1:-1])
    found = []
    for path, dummy, names in os.walk(directory):
        for name in names:
            with open(os.path.join(path, name), errors='replace') as handle:
                text = handle.read()
            if any(form in text for form in forms) and name != 'hosts.yml':
                found.append(os.path.join(path, name))
    return found


def migration_state(lab):
    unit = _target.unit_name('b', 'incoming')
    run_dir = '/var/lib/bdp_wan_tune/migrate/' + unit.replace('.service', '')
    active = sh(lab, 'A', 'systemctl is-active %s || true' % unit).strip()
    config = sh(lab, 'A', 'cat %s/config.json 2>/dev/null || echo {}' % run_dir)
    return active, json.loads(config).get('run_id')


def test_a_workflow_of_jobs_in_the_execution_environment_needs_nothing_of_the_controller(lab, tmp_path):
    the_lab, key = lab
    password = 'ee-%s \\ "q\' $x' % os.urandom(8).hex()
    hosts = inventory(the_lab, password)
    base = {'rate': RATE, 'rtt': RTT}
    verify = dict(base, verify_expect='rate', verify_duration=5, verify_omit=2)
    jobs = []

    def job(playbook, extravars):
        jobs.append(Job(tmp_path, len(jobs) + 1, playbook, hosts, key, extravars).run())
        return jobs[-1]

    # 1. the stock baseline
    stock = job('verify', dict(verify, verify_label='stock', verify_fail_on_error=False))
    assert stock.rc == 0, stock.output[-3000:]
    assert stock.artifacts['verify']['label'] == 'stock' and 'verify_baseline' in stock.artifacts
    assert sorted(pair['status'] for pair in stock.artifacts['verify']['pairs']) == ['FAIL', 'FAIL'], stock.artifacts

    # 2. tuning and the rsync daemon: the CA is made on B
    tuned = job('wan_tune', dict(base, rsync_daemon=True))
    assert tuned.rc == 0, tuned.output[-3000:]
    assert set(tuned.artifacts['wan_tune']) == {'a', 'b'}, tuned.artifacts
    ca = sh(the_lab, 'B', 'stat -c "%%U %%a" /var/lib/bdp_wan_tune/rsync-tls-ca/%s/ca.key' % MIGRATION).split()
    assert ca == ['root', '600'], ca
    serials = sh(the_lab, 'A', 'openssl x509 -noout -serial -in /etc/bdp-wan-tune/rsync-tls-client/%s/b/host.crt'
                 % MIGRATION)

    # 3. the migration, started and left running
    started = job('migrate', dict(base, migrate_wait=False, migrate_bwlimit='100m'))
    assert started.rc == 0, started.output[-3000:]
    before = migration_state(the_lab)
    stunnel = sh(the_lab, 'B', 'systemctl show -P MainPID bdp-rsync-tls')
    assert before[0] == 'active', before
    running = started.artifacts['migrate']['a']
    assert running['active'] is True and running['state'] not in ('done', 'failed', None), running
    assert running['run_id'] == before[1] and running['progress'] and running['bwlimit_bps'] == 100 * 10 ** 6
    assert started.changed() == {'a': 1, 'b': 0}, started.output[-5000:]

    # 4. tuning again while it runs: nothing changes, nothing is issued, the migration goes on
    again = job('wan_tune', dict(base, rsync_daemon=True))
    after = migration_state(the_lab)
    assert again.rc == 0, again.output[-3000:]
    assert again.changed() == {'a': 0, 'b': 0}, again.output[-5000:]
    assert after == before, (before, after)
    assert sh(the_lab, 'B', 'systemctl show -P MainPID bdp-rsync-tls') == stunnel
    assert sh(the_lab, 'A', 'openssl x509 -noout -serial -in /etc/bdp-wan-tune/rsync-tls-client/%s/b/host.crt'
              % MIGRATION) == serials
    deadline = time.monotonic() + 900
    while migration_state(the_lab)[0] in ('active', 'activating', 'deactivating') and time.monotonic() < deadline:
        time.sleep(5)
    assert migration_state(the_lab)[0] != 'active', 'the migration did not end within 15 minutes'

    # 5. verify with the stock baseline of job 1, handed on as an extra variable (as an AWX workflow does)
    checked = job('verify', dict(verify, verify_baseline=stock.artifacts['verify_baseline']))
    assert checked.rc == 0, checked.output[-3000:]
    pairs = checked.artifacts['verify']['pairs']
    stock_bps = dict((pair['key'], pair['receiver_bps']) for pair in stock.artifacts['verify_baseline']['pairs'])
    assert [pair['status'] for pair in pairs] == ['PASS', 'PASS'], pairs
    assert all(pair['baseline_bps'] == stock_bps[pair['key']] for pair in pairs), (pairs, stock_bps)
    assert 'verify_baseline' not in checked.artifacts

    # 6. the migration once more: it proves the copy, and its report is in the artifacts
    moved = job('migrate', dict(base, migrate_interval=5))
    assert moved.rc == 0, moved.output[-3000:]
    report = moved.artifacts['migrate']['a']
    assert report['state'] == 'done' and report['verified'], report

    # a fresh controller every time, and each job worked: what a job leaves in its directory, besides the artifacts
    # and Ansible's tmp, is its report for people (results/verify, results/migrate under the project directory, the
    # working directory of a job), which no later job read
    assert [path for item in jobs for path in item.left if not path.startswith(REPORTS)] == []
    assert [item.ident for item in jobs if item.left] == ['job1', 'job5', 'job6']
    leaked = [item.ident for item in jobs if leaks(item.dir, password)]
    assert leaked == [], 'the password is in the artifacts of %s' % leaked
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    summary = dict((item.ident, dict(item.summary(), playbook=item.playbook)) for item in jobs)
    with open(RESULTS, 'w') as handle:
        json.dump({'image': IMAGE, 'jobs': summary, 'seconds': round(sum(item.seconds for item in jobs), 1)}, handle,
                  indent=1, sort_keys=True)
