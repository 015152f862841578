# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode changes nothing, anywhere (issue 38): both hosts of a WAN lab (bdp-lab-check, 100 Mbit/s, 20 ms)
snapshotted before and after `--check` of each shipped playbook with every opt-in the lab can run.

Set-up: the transfer lab's transports (tests/lab/transfer.py: playbooks/wan_tune.yml --tags rsync_daemon with
rsync_daemon=true on B, module xfer over TLS, A a listed sender) and a small tree in A with migrate_source set
(tests/lab/migrate.py), so that the migration and the verification have something to check against.

The snapshot (SNAPSHOT, one Python process per host): every file's path, type, mode, owner, size, mtime and sha256
under /etc, the state directory, the collection's /run directories, the rsync module's path, the migration's
source, /usr/local, /root, /tmp and /var/tmp; `nft list ruleset`, the net.* keys of `sysctl -a`, each link's MTU
(`ip -d link`), and the bdp-* units of `systemctl list-units --all`. Left out: only the time of /tmp and
/root/.ansible/tmp, where Ansible's module files come and go (TIME_EXCLUDED); nothing else was needed.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import time

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(TESTS, 'lab'), TESTS, os.path.join(TESTS, 'integration')]
import demo  # noqa: E402  pylint: disable=wrong-import-position
import migrate  # noqa: E402  pylint: disable=wrong-import-position
import test_jumbo_lab as jumbo_lab  # noqa: E402  pylint: disable=wrong-import-position
import transfer  # noqa: E402  pylint: disable=wrong-import-position
import wanlab  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the lab needs root (namespaces, TUN, podman)')
NAME = 'bdp-lab-check'
ROOT = wanlab.REPO_ROOT
VERIFY = os.path.join(ROOT, 'playbooks', 'verify.yml')
RATE = {'rate': '100m', 'rtt': 20}

# Left out, each with why (nothing else was needed, measured on 2026-12-07): the time of these directories (their
# entries are all compared): Ansible makes its module files there and
# removes them (ansible.cfg's remote_tmp, the connection's /tmp), which moves the directory's time and leaves nothing.
TIME_EXCLUDED = {
    '/tmp': "Ansible's module payloads come and go there",
    '/root/.ansible/tmp': "Ansible's remote_tmp: each task's directory comes and goes there",
}
# the state directory (wan_tune_state_dir's default), the collection's /run directories; the module path and the
# migration's source are added from the transfer lab's layout
PATHS = ['/etc', '/var/lib/bdp_wan_tune', '/run/bdp-wan-tune', '/run/bdp_wan_tune', transfer.DEST, transfer.SRC,
         # and where else a role could leave a file: programs and the admin's home, the scratch directories
         '/usr/local', '/root', '/tmp', '/var/tmp']

SNAPSHOT = r"""
import hashlib, json, os, stat, subprocess, sys
paths, timeless = json.loads(sys.argv[1])
files = {}
def entry(path):
    info = os.lstat(path)
    kind = stat.S_IFMT(info.st_mode)
    item = [kind, stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, info.st_size,
            None if path in timeless else info.st_mtime_ns]
    if stat.S_ISREG(info.st_mode):
        digest = hashlib.sha256()
        with open(path, 'rb') as handle:
            for block in iter(lambda: handle.read(1 << 20), b''):
                digest.update(block)
        item.append(digest.hexdigest())
    elif stat.S_ISLNK(info.st_mode):
        item.append(os.readlink(path))
    return item
for top in paths:
    if not os.path.lexists(top):
        files[top] = None
        continue
    files[top] = entry(top)
    for base, dirs, names in os.walk(top):
        for name in dirs + names:
            path = os.path.join(base, name)
            files[path] = entry(path)
def run(*cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.stdout
sysctl = [line for line in run('sysctl', '-a').splitlines() if line.startswith('net.')]
links = {}
for line in run('ip', '-d', '-o', 'link').splitlines():
    words = line.split()
    links[words[1].rstrip(':')] = words[words.index('mtu') + 1]
units = run('systemctl', 'list-units', '--all', '--no-legend', '--plain', 'bdp-*').splitlines()
print(json.dumps({'files': files, 'nft': run('nft', 'list', 'ruleset'), 'sysctl': sysctl, 'mtu': links,
                  'units': sorted(units)}))
"""


def snapshot(lab):
    """Both hosts' snapshot: {host: {...}}."""
    out = {}
    for host in 'AB':
        proc = lab.exec(host, ['python3', '-', json.dumps([PATHS, sorted(TIME_EXCLUDED)])],
                        input=SNAPSHOT, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out[host] = json.loads(proc.stdout)
    return out


def differences(before, after):
    """Every difference between two snapshots, one line each."""
    out = []
    for host in 'AB':
        one, two = before[host], after[host]
        for path in sorted(set(one['files']) | set(two['files'])):
            if one['files'].get(path, 'absent') != two['files'].get(path, 'absent'):
                out.append('%s: %s: %s -> %s' % (host, path, one['files'].get(path, 'absent'),
                                                 two['files'].get(path, 'absent')))
        for key in ('nft', 'sysctl', 'units'):
            old = one[key].splitlines() if isinstance(one[key], str) else one[key]
            new = two[key].splitlines() if isinstance(two[key], str) else two[key]
            out += ['%s: %s: %s' % (host, key, line) for line in difflib.unified_diff(old, new, lineterm='', n=0)
                    if line[:1] in '+-' and line[:3] not in ('+++', '---')]
        if one['mtu'] != two['mtu']:
            out.append('%s: mtu: %s -> %s' % (host, one['mtu'], two['mtu']))
    return out


# (label, playbook, extra variables): every --check run, in this order
CASES = [
    ('wan_tune', demo.PLAYBOOK, dict(RATE)),
    ('wan_tune rsync_daemon jumbo canary', demo.PLAYBOOK,
     dict(RATE, mtu=9000, wan_tune_canary=True, verify_pair_group='lab', verify_duration=3)),
    ('wan_tune nic', demo.PLAYBOOK, dict(RATE, nic=True)),
    ('wan_tune absent', demo.PLAYBOOK, dict(RATE, wan_tune_state='absent')),
    ('verify', VERIFY, dict(RATE, verify_pair_group='lab', verify_duration=3, verify_omit=1)),
    ('migrate', migrate.PLAYBOOK, {}),
    ('migrate delete', migrate.PLAYBOOK, {'migrate_delete': True, 'migrate_max_delete': -1,
                                          'migrate_exclude': ['*.tmp']}),
]


@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    assert not [item for item in wanlab.leftovers() if NAME in item], 'lab %s is already running' % NAME
    lab_ = wanlab.Lab(rate=RATE['rate'], rtt=RATE['rtt'], mtu=1500, path_mtu=9000, hosts='containers', name=NAME)
    workdir = str(tmp_path_factory.mktemp('check'))
    with lab_:
        for host in 'AB':
            transfer.sh(lab_, host, 'mkdir -p %s %s' % (transfer.SRC, transfer.DEST))
            # systemd-networkd manages wan0, as on a real host: jumbo_mtu's check predicts its drop-in
            jumbo_lab.networkd_manages_wan0(jumbo_lab.JumboLab(lab_, None), host)
        transfer.sh(lab_, 'A', 'cd %s && for i in 1 2 3; do head -c 100000 /dev/urandom > f$i.bin; done && '
                               'mkdir -p sub && echo small > sub/small.txt' % transfer.SRC)
        files, dummy = transfer.setup_transports(lab_, workdir, 2, quiet=True)
        files['reports'] = migrate.prepare(lab_, workdir, transfer.SRC)
        files['workdir'] = workdir
        yield lab_, files
    left = [item for item in wanlab.leftovers() if NAME in item]
    assert not left, 'the lab left things behind: %s' % left


def run_check(files, playbook, extra):
    if playbook == migrate.PLAYBOOK:
        return migrate.run(files, files['reports'], extra, check=False, options=['--check'])
    proc = demo.ansible_playbook(['-i', files['inventory'], playbook, '-e', json.dumps(extra), '--check'],
                                 quiet=True, check=False)
    return proc.returncode, proc.stdout


@pytest.mark.parametrize('label,playbook,extra', CASES, ids=[case[0] for case in CASES])
def test_check_mode_changes_nothing_on_either_host(lab, label, playbook, extra):
    lab_, files = lab
    before = snapshot(lab_)
    started = time.monotonic()
    rc, output = run_check(files, playbook, extra)
    seconds = time.monotonic() - started
    after = snapshot(lab_)
    found = differences(before, after)
    print(output)
    print('%s --check: exit %d in %.0f s, %d difference(s)' % (label, rc, seconds, len(found)))
    assert rc == 0, output[-4000:]
    assert not found, '%s --check changed the hosts:\n%s' % (label, '\n'.join(found))


def test_the_snapshot_sees_a_file_a_sysctl_a_unit_and_an_mtu_change(lab):
    """The instrument itself: a change of each kind between two snapshots is found (then undone)."""
    lab_, dummy = lab
    before = snapshot(lab_)
    for host in 'AB':
        print(host, dict((top, len([path for path in before[host]['files'] if path.startswith(top)])) for top in PATHS))
    # what the cases compare is there: the module's path in B, the tree in A, the rsync daemon's TLS unit in B
    assert before['B']['files'][transfer.DEST] and before['A']['files'][transfer.SRC + '/sub/small.txt']
    assert [unit for unit in before['B']['units'] if unit.startswith('bdp-')], before['B']['units']
    transfer.sh(lab_, 'B', 'touch %s/probe && sysctl -qw net.ipv4.tcp_notsent_lowat=131073 && ip link set dev wan0 mtu '
                           '1400 && systemd-run -q --unit bdp-check-probe sleep 600' % transfer.DEST)
    try:
        found = differences(before, snapshot(lab_))
    finally:
        transfer.sh(lab_, 'B', 'rm -f %s/probe; sysctl -qw net.ipv4.tcp_notsent_lowat=%s; ip link set dev wan0 mtu 1500; '
                               'systemctl stop bdp-check-probe' % (
                                   transfer.DEST, [line.split(' = ')[1] for line in before['B']['sysctl']
                                                   if line.startswith('net.ipv4.tcp_notsent_lowat =')][0]))
    text = '\n'.join(found)
    for words in ('B: %s/probe: absent' % transfer.DEST, 'B: %s: ' % transfer.DEST,
                  'B: sysctl: +net.ipv4.tcp_notsent_lowat = 131073', "'wan0': '1400'", 'B: units: +bdp-check-probe'):
        assert words in text, (words, text)
    assert not [line for line in found if line.startswith('A:')], text
