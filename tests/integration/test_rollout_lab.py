# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measured path and rollout controls of playbooks/wan_tune.yml in the WAN lab (lab name bdp-lab-rollout,
1 Gbit/s, 98 ms), as users run it:

* rtt=auto: each host measures its RTT to the other over the emulated link (TCP handshakes to a closed port), sizes
  its buffers for it, records it; a second run changes nothing; the rollback removes the record.
* the canary: with batches and -e wan_tune_canary=true the first batch is verified with iperf3 after tuning. A
  verdict that fails (a declared rate of 10 Gbit/s that the 1 Gbit/s link cannot carry) stops the play before the
  next batch, whose host is never contacted, after the report was written; with wan_tune_canary_rollback the
  first batch is back at its stock values.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'lab'))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position
from labenv import ansible_env  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the lab needs root (namespaces, TUN, podman)')

NAME = 'bdp-lab-rollout'
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'wan_tune.yml')
RECORD = '/var/lib/bdp_wan_tune/path_probe.json'


class RolloutLab(object):
    def __init__(self, lab, inventory):
        self.lab = lab
        self.inventory = inventory

    def playbook(self, *args, inventory=None):
        cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', inventory or self.inventory,
               PLAYBOOK, '-e', json.dumps({'wan_tune_become': False})]
        proc = subprocess.run(cmd + list(args), capture_output=True, text=True, env=ansible_env(), timeout=900,
                              check=False)
        out = proc.stdout + proc.stderr
        recap = dict((host, (int(changed), int(unreachable), int(failed))) for host, changed, unreachable, failed in
                     re.findall(r'^(\S+)\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)', out, re.M))
        return proc.returncode, out, recap

    def sh(self, host, command):
        proc = self.lab.exec(host, ['sh', '-c', command], timeout=60)
        assert proc.returncode == 0, '%s on %s: %s%s' % (command, host, proc.stdout, proc.stderr)
        return proc.stdout.strip()

    def rmem_max(self, host):
        return int(self.sh(host, 'cat /proc/sys/net/ipv4/tcp_rmem').split()[2])


@pytest.fixture(scope='module')
def rlab(tmp_path_factory):
    assert not [item for item in wanlab.leftovers() if NAME in item], 'lab %s already exists' % NAME
    lab = wanlab.Lab(rate='1g', rtt=98, mtu=9000, hosts='containers', name=NAME)
    lab.up()
    try:
        inventory = str(tmp_path_factory.mktemp('rollout') / 'inventory.ini')
        with open(inventory, 'w') as handle:
            handle.write('[lab]\n%s wan_address=%s\n%s wan_address=%s\n[lab:vars]\n'
                         'ansible_connection=podman_nsenter\n'
                         'ansible_python_interpreter=/usr/bin/python3\n'
                         % (lab.host_name('A'), lab.address('A'), lab.host_name('B'), lab.address('B')))
        yield RolloutLab(lab, inventory)
    finally:
        lab.down()
        left = [item for item in wanlab.leftovers() if NAME in item]
        assert not left, 'the lab left things behind: %s' % left


def test_rtt_auto_measures_the_link_sizes_records_and_rolls_back(rlab):
    stock = dict((host, rlab.rmem_max(host)) for host in 'AB')
    rc, out, recap = rlab.playbook('-e', 'rate=1g rtt=auto')
    assert rc == 0, out
    used = dict((float(ms), float(measured)) for ms, measured in
                re.findall(r'measured: RTT ([0-9.]+) ms \(measured ([0-9.]+) ms, rounded up;', out))
    assert len(re.findall(r'measured: RTT', out)) == 2, out
    for ms, measured in used.items():
        assert 98.0 <= measured < 110.0 and measured <= ms < measured + 1, out
    for host in 'AB':
        record = json.loads(rlab.sh(host, 'cat %s' % RECORD))
        peer = rlab.lab.address('B' if host == 'A' else 'A')
        assert list(record) == [peer]
        # 8 x 1 Gbit/s x RTT / 8 = RTT in ms x 1000000 bytes
        assert rlab.rmem_max(host) == int(round(record[peer] * 1000000)), (host, record)
    rc, out, recap = rlab.playbook('-e', 'rate=1g rtt=auto')
    assert rc == 0 and all(counts[0] == 0 for counts in recap.values()), 'second run changed something:\n' + out
    rc, out, recap = rlab.playbook('-e', 'wan_tune_state=absent')
    assert rc == 0, out
    for host in 'AB':
        assert rlab.rmem_max(host) == stock[host]
        assert rlab.lab.exec(host, ['test', '-e', RECORD]).returncode != 0


def canary_inventory(rlab, tmp_path):
    """A and B test to each other; a third host, in the second batch, does not exist: contacting it would show as
    unreachable in the recap."""
    lab = rlab.lab
    path = str(tmp_path / 'canary.ini')
    with open(path, 'w') as handle:
        handle.write('[lab]\n%s wan_address=%s wan_peer=%s\n%s wan_address=%s wan_peer=%s\n'
                     'later ansible_host=%s-nonexistent\n[lab:vars]\n'
                     'ansible_connection=podman_nsenter\n'
                     'ansible_python_interpreter=/usr/bin/python3\n'
                     % (lab.host_name('A'), lab.address('A'), lab.host_name('B'), lab.host_name('B'), lab.address('B'),
                        lab.host_name('A'), NAME))
    return path


def canary_args(tmp_path, rate):
    return ('-e', json.dumps({'rate': rate, 'rtt': 98, 'wan_tune_serial': '2,100%', 'wan_tune_canary': True,
                              'wan_tune_canary_rollback': True, 'verify_duration': 5, 'verify_omit': 2,
                              'verify_report_dir': str(tmp_path / 'reports')}))


def test_a_failing_canary_stops_the_rollout_and_rolls_the_first_batch_back(rlab, tmp_path):
    stock = dict((host, rlab.rmem_max(host)) for host in 'AB')
    inventory = canary_inventory(rlab, tmp_path)
    # 10 Gbit/s declared on the lab's 1 Gbit/s link: the verdict against min(rate, window / RTT) fails
    rc, out, recap = rlab.playbook(*canary_args(tmp_path, '10g'), inventory=inventory)
    assert rc != 0, out
    assert 'The canary failed: 2 of 2 path tests of the first batch failed' in out, out
    assert 'the next batch was not started. The first batch was rolled back.' in out, out
    assert recap['later'] == (0, 0, 0), 'the second batch was started:\n' + out
    for host in 'AB':
        assert rlab.rmem_max(host) == stock[host], 'the first batch was not rolled back'
    runs = sorted((tmp_path / 'reports').glob('run-*-canary.json'))
    assert len(runs) == 1, out
    report = json.loads(runs[0].read_text())
    text = json.dumps(report)
    assert text.count('"FAIL"') >= 2 and (tmp_path / 'reports' / 'report.html').exists()


def test_a_passing_canary_lets_the_rollout_go_on(rlab, tmp_path):
    inventory = canary_inventory(rlab, tmp_path)
    rc, out, recap = rlab.playbook(*canary_args(tmp_path, '1g'), inventory=inventory)
    # the canary passes; the second batch is started and its only host does not exist
    assert 'The canary failed' not in out, out
    assert recap['later'][1] == 1, 'the second batch was not started:\n' + out
    assert len(list((tmp_path / 'reports').glob('run-*-canary.json'))) == 1
    for host in 'AB':
        assert rlab.rmem_max(host) == 98000000
    rc, out, recap = rlab.playbook('-e', 'wan_tune_state=absent', '--limit', 'lab:!later', inventory=inventory)
    assert rc == 0, out
