# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The transfer lab end to end (tests/lab/transfer.py, `make transfer`) at 1 Gbit/s and 98 ms with 400 MB.

Loose bounds only (the table in docs/migration.md comes from a full `make transfer`):

* scp stays near OpenSSH's channel window ceiling, 2 MiB / RTT = 171 Mbit/s, before and after tuning: its
  steady rate (the best 3 s of the sender's bytes acked, from ss -ti) is between 60 % and 110 % of it (a
  window of 2 MiB cannot carry more, whatever the kernel allows), and its goodput over the whole command
  (SSH handshake, slow start and SFTP's round trips per file included) is not above it;
* after tuning, the rsync daemon's single stream carries at least 3 x what scp carries, in cleartext and over TLS;
* the TLS transfers were TLS 1.3 sessions whose server certificate the client verified against the migration
  CA (from the client's own handshake), with an AEAD cipher;
* every copy was checked with sha256sum at the receiver, and the JSON has what the issue lists.

Then, on the same tuned lab and its TLS set-up, the migration (playbooks/migrate.yml, tests/lab/migrate.py) of the
transfer's tree from A to B, at most 200 Mbit/s (migrate_bwlimit), so that it can be interrupted:

* a controller killed (SIGKILL) while it waits leaves the migration running on A; migrate_action=status comes back to
  it at once (migrate_wait's default for status: the migration still runs when it returns, 0 changed), and a run
  while it runs says so and starts nothing (the run's id stays);
* a file changed on B after the copy, with its size and time kept, is found by the checksum proof and sent again;
* the migration's unit killed with SIGKILL about half-way is continued by the next run from the partial files: it
  sends again at most 5 % of what B held, and the unit's end removed the password file; the report has its fields;
* no password in the output of a run or in A's journal and files (the password file is gone at the end).
"""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(TESTS, 'lab'), TESTS]
import migrate  # noqa: E402  pylint: disable=wrong-import-position
import transfer  # noqa: E402  pylint: disable=wrong-import-position
import wanlab  # noqa: E402  pylint: disable=wrong-import-position
from waiting import until  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the lab needs root (namespaces, TUN, podman)')
NAME = 'bdp-lab-xfer-test'
# the migrations' private directories on A (below wan_tune_state_dir's default)
RUN_DIRS = '/var/lib/bdp_wan_tune/migrate'


def mine(left):
    return [item for item in left if NAME in item]


def migration_checks(lab, files, workdir):
    """The migration's lab checks (see the module's docstring), in the transfer lab before it goes."""
    transfer.sh(lab, 'B', 'rm -rf %s/*' % transfer.DEST)
    reports = migrate.prepare(lab, workdir, transfer.SRC)
    out = {'outputs': []}
    # a controller killed while it waits: the unit goes on, and migrate_action=status comes back to it
    controller = migrate.start(files, reports, {'migrate_bwlimit': '300m', 'migrate_streams': '2'})
    migrate.wait_for(lab, 80 * 10 ** 6)
    os.killpg(controller.pid, signal.SIGKILL)
    controller.wait()
    # the rate of the running migration changed for the working hours (migrate_action=limit): the runner takes it
    config = '%s/%s/config.json' % (RUN_DIRS, migrate.unit(lab).replace('.service', ''))
    run_id = json.loads(transfer.sh(lab, 'A', 'cat %s' % config).stdout)['run_id']
    rc, output = migrate.run(files, reports, {'migrate_action': 'limit', 'migrate_bwlimit': '80m'})
    out['outputs'].append(output)
    # the runner writes the new limit into its state when it takes the SIGHUP; the last state read when it never does
    state = state_when(lab, lambda found: found.get('bwlimit_bps') == 80 * 10 ** 6)
    out['limited'] = {'said': 'at most 80 Mbit/s from now on' in output, 'state': state.get('bwlimit_bps'),
                      'config': json.loads(transfer.sh(lab, 'A', 'cat %s' % config).stdout)['bwlimit_bps'],
                      'same_run': state.get('run_id') == run_id, 'phase': state.get('state')}
    rc, output = migrate.run(files, reports, {'migrate_action': 'status'})
    out['status_after_kill'] = [line for line in output.splitlines() if 'bdp-migrate-' in line and 'copying' in line]
    out['status_at_once'] = {'running': transfer.sh(lab, 'A', 'systemctl is-active --quiet %s' % migrate.unit(lab),
                                                    check=False).returncode == 0,
                             'changed': sorted(set(line.split('changed=')[1].split()[0] for line in output.splitlines()
                                                   if 'changed=' in line))}
    out['outputs'].append(output)
    # a run while it runs comes back to it: the same run (its id in the config), not a second start
    rc, output = migrate.run(files, reports, {'migrate_wait': False})
    out['rerun_while_running'] = {'said': 'runs already' in output and 'not started twice' in output,
                                  'same_run': json.loads(transfer.sh(lab, 'A', 'cat %s' % config).stdout)['run_id']
                                  == run_id}
    out['outputs'].append(output)
    # the unit killed with SIGKILL half-way: the next run continues from the partial files
    migrate.wait_for(lab, 200 * 10 ** 6)
    transfer.sh(lab, 'A', 'systemctl kill -s KILL %s' % migrate.unit(lab))
    # ended: its processes gone and its ExecStopPost run (B's receiver keeps what it had when the sender went)
    assert until(lambda: unit_state(lab) in ('failed', 'inactive'), within=120, every=0.5), unit_state(lab)
    out['held_at_kill'] = migrate.received(lab)
    # the unit's ExecStopPost removes the password file even when its runner could not
    out['password_after_kill'] = transfer.sh(lab, 'A', 'ls %s/*/password 2>/dev/null' % RUN_DIRS,
                                             check=False).stdout.split()
    rc, output = migrate.run(files, reports)
    out['resumed'] = migrate.latest(reports)
    out['outputs'].append(output)
    # a file changed on B with its size and time kept: found by the proof and sent again
    victim = '%s/%s' % (migrate.dest(lab), sorted(transfer.sh(lab, 'A', 'ls %s' % transfer.SRC).stdout.split())[0])
    transfer.sh(lab, 'B', 't=$(stat -c %%Y %s); printf X | dd of=%s bs=1 seek=1000 conv=notrunc 2>/dev/null; '
                          'touch -d @$t %s' % (victim, victim, victim))
    rc, output = migrate.run(files, reports)
    out['corrupted'] = migrate.latest(reports)
    out['outputs'].append(output)
    out.update(lifecycle_checks(lab, files, reports, out['outputs']))
    out.update(attribute_checks(lab, files, reports, out['outputs']))
    # the password: in no output, not in A's journal, and in no file of A but the transfer lab's own password file
    # (its random part: that finds it escaped too)
    out['leaks'] = [output for output in out['outputs'] if files['password_core'] in output]
    out['journal'] = transfer.sh(lab, 'A', 'journalctl --no-pager -o export | grep -caF -f -',
                                 stdin=files['password_core'],
                                 check=False).stdout.strip()
    out['files'] = transfer.sh(lab, 'A', 'grep -rlaF -f - /etc /var /tmp /root /run 2>/dev/null',
                               stdin=files['password_core'], check=False).stdout.split()
    return out


def state_of(lab):
    return json.loads(transfer.sh(lab, 'A', 'cat %s/%s/state.json' % (
        RUN_DIRS, migrate.unit(lab).replace('.service', ''))).stdout)


def state_when(lab, condition, within=60):
    """The runner's state on A once ``condition(state)`` holds; the last one read when it did not within ``within``
    seconds."""
    seen = []

    def holds():
        seen.append(state_of(lab))
        return condition(seen[-1])
    until(holds, within=within, every=0.5)
    return seen[-1]


def unit_state(lab):
    """The migration's unit on A as systemctl is-active says it (active, deactivating, failed, inactive...)."""
    return transfer.sh(lab, 'A', 'systemctl is-active %s || true' % migrate.unit(lab)).stdout.strip()


def until_ended(lab, timeout=120):
    """Wait for the migration's unit on A to end; its runner's state."""
    until(lambda: transfer.sh(lab, 'A', 'systemctl is-active --quiet %s' % migrate.unit(lab),
                              check=False).returncode != 0, within=timeout, every=1)
    return state_of(lab)


def lifecycle_checks(lab, files, reports, outputs):
    """What a migration meets besides its copy: --check (the plan, nothing started, nothing sent), the preflight's
    refusals (no room for the tree with migrate_margin; a client certificate that ends before the migration would),
    migrate_action=stop and the run after it, a re-run that would move the receiver to another migration while it
    copies (refused), and the receiver's daemon restarted while it copies."""
    out = {}
    before = state_of(lab)
    transfer.sh(lab, 'A', 'head -c 100000000 /dev/urandom > %s/late.bin' % transfer.SRC)
    rc, output = migrate.run(files, reports, options=['--check'])
    outputs.append(output)
    out['checked'] = {'rc': rc, 'plan': 'stream(s)' in output and 'files,' in output,
                      'same_run': state_of(lab)['run_id'] == before['run_id'],
                      'at_b': transfer.sh(lab, 'B', 'ls %s/late.bin' % migrate.dest(lab), check=False).returncode == 0}
    # 100 TB (a sparse file) the receiver has no room for, at 1 Mbit/s: longer than the client certificate lasts
    transfer.sh(lab, 'A', 'truncate -s 100T %s/huge.bin' % transfer.SRC)
    rc, output = migrate.run(files, reports, {'migrate_rate': '1m'}, check=False)
    outputs.append(output)
    transfer.sh(lab, 'A', 'rm %s/huge.bin' % transfer.SRC)
    out['refused_room'] = {'rc': rc, 'room': 'and 5 % margin, migrate_margin' in output,
                           'certificate': 'before the migration would end with a margin' in output,
                           'nothing_moved': 'Nothing was moved.' in output,
                           'same_run': state_of(lab)['run_id'] == before['run_id']}
    # migrate_action=stop while it copies: stopped, the partial file kept; the next run continues and proves it
    rc, output = migrate.run(files, reports, {'migrate_bwlimit': '40m', 'migrate_wait': False})
    outputs.append(output)
    migrate.wait_for(lab, migrate.received(lab) + 20 * 10 ** 6)
    rc, output = migrate.run(files, reports, {'migrate_action': 'stop'})
    outputs.append(output)
    stopped = until_ended(lab, 30)
    out['stopped'] = {'said': 'stopped' in output, 'state': stopped['state'],
                      'partial': transfer.sh(lab, 'B', 'ls -A %s/.bdp-migrate-partial' % migrate.dest(lab),
                                             check=False).stdout.split()}
    rc, output = migrate.run(files, reports)
    outputs.append(output)
    out['after_stop'] = migrate.latest(reports)
    # the receiver's daemon restarted while it copies (its connections cut): that pass fails, the next continues
    transfer.sh(lab, 'A', 'rm %s/late.bin; head -c 100000000 /dev/urandom > %s/restart.bin' % (
        transfer.SRC, transfer.SRC))
    rc, output = migrate.run(files, reports, {'migrate_bwlimit': '10m', 'migrate_wait': False})
    outputs.append(output)
    migrate.wait_for(lab, migrate.received(lab) + 20 * 10 ** 6)
    # the receiver moved to another migration while this one copies: refused before any change, the copy goes on
    moved = transfer.demo.ansible_playbook(['-i', files['inventory'], transfer.demo.PLAYBOOK, '--tags', 'rsync_daemon',
                                            '-e', json.dumps({'rsync_daemon_tls_migration': 'another'})],
                                           quiet=True, check=False)
    outputs.append(moved.stdout)
    out['moved'] = {'rc': moved.returncode, 'said': 'transfer(s) in flight' in moved.stdout,
                    'nothing_changed': 'changed=0' in moved.stdout and 'changed=1' not in moved.stdout,
                    'running': transfer.sh(lab, 'A', 'systemctl is-active --quiet %s' % migrate.unit(lab),
                                           check=False).returncode == 0 and state_of(lab)['state'] == 'copying'}
    transfer.sh(lab, 'B', 'systemctl restart %s' % transfer.TLS_UNIT)
    out['cut'] = until_ended(lab)
    rc, output = migrate.run(files, reports)
    outputs.append(output)
    out['after_restart'] = migrate.latest(reports)
    transfer.sh(lab, 'A', 'rm %s/restart.bin' % transfer.SRC)
    transfer.sh(lab, 'B', 'rm %s/late.bin %s/restart.bin' % (migrate.dest(lab), migrate.dest(lab)))
    return out


# What a POSIX tree has (issue 31), made in A by Python: an ACL with a named user, an extended attribute, a file of
# 10 MB with 1 MB of data (holes kept), two names of one inode in two directories, names with a newline, a leading
# dash and a backslash before #, a file of another owner and group, and an excluded file.
SPECIAL = r"""
import os, struct
base = '%s/special'
os.makedirs(base + '/sub', exist_ok=True)
def write(name, data):
    with open(os.path.join(base, name), 'wb') as handle:
        handle.write(data)
write('acl.txt', b'acl')
os.setxattr(base + '/acl.txt', 'system.posix_acl_access', struct.pack('<I', 2) + b''.join(
    struct.pack('<HHI', tag, perm, ident) for tag, perm, ident in
    ((0x01, 6, 0xffffffff), (0x02, 4, 1234), (0x04, 4, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 0, 0xffffffff))))
write('xattr.txt', b'xattr')
os.setxattr(base + '/xattr.txt', 'user.bdp_wan_tune', b'migrated')
with open(base + '/sparse.bin', 'wb') as handle:
    handle.truncate(10 ** 7)
    handle.seek(5 * 10 ** 6)
    handle.write(os.urandom(10 ** 6))
write('linked-a', os.urandom(300000))
os.link(base + '/linked-a', base + '/sub/linked-b')
for name in ('new\nline.txt', '-dash', 'back\\#012slash', 'one', 'two', 'three'):
    write(name, os.urandom(1000))
write('owned', b'owned')
os.chown(base + '/owned', 1234, 2345)
write('junk.tmp', b'excluded')
"""
# Read at B: each name's (inode, links, uid, gid, blocks, size, ACL, user attribute) as JSON.
LOOK = r"""
import json, os, sys
base = sys.argv[1]
out = {}
for top, dirs, names in os.walk(base):
    for name in names:
        path = os.path.join(top, name)
        info = os.lstat(path)
        def attr(key):
            try:
                return os.getxattr(path, key).hex()
            except OSError:
                return None
        out[os.path.relpath(path, base)] = [info.st_ino, info.st_nlink, info.st_uid, info.st_gid, info.st_blocks,
                                            info.st_size, attr('system.posix_acl_access'), attr('user.bdp_wan_tune')]
print(json.dumps(out))
"""


def look(lab, host, base):
    return json.loads(transfer.sh(lab, host, 'python3 - %s' % base, stdin=LOOK).stdout)


def attribute_checks(lab, files, reports, outputs):
    """Over TLS through the playbook: the attributes the tree has, names rsync escapes, an exclude; then a mirror
    pass refused past its guard and one within it."""
    out = {}
    transfer.sh(lab, 'A', 'python3 -', stdin=SPECIAL % transfer.SRC)
    rc, output = migrate.run(files, reports, {'migrate_exclude': ['*.tmp']})
    outputs.append(output)
    out['attributes_run'] = migrate.latest(reports)
    out['attributes_a'] = look(lab, 'A', transfer.SRC + '/special')
    out['attributes_b'] = look(lab, 'B', migrate.dest(lab) + '/special')
    # the application removes three files; B has one that the source never had, and an excluded one
    transfer.sh(lab, 'A', 'cd %s/special && rm -f one two three' % transfer.SRC)
    transfer.sh(lab, 'B', 'cd %s/special && echo x > extra-at-b && echo k > keep.tmp' % migrate.dest(lab))
    rc, output = migrate.run(files, reports, {'migrate_delete': True, 'migrate_max_delete': 3,
                                              'migrate_exclude': ['*.tmp']}, check=False)
    outputs.append(output)
    out['refused'] = {'rc': rc, 'report': migrate.latest(reports), 'said': 'would delete 4 files' in output,
                      'left': sorted(look(lab, 'B', migrate.dest(lab) + '/special'))}
    rc, output = migrate.run(files, reports, {'migrate_delete': True, 'migrate_max_delete': 4,
                                              'migrate_exclude': ['*.tmp']})
    outputs.append(output)
    out['mirror'] = migrate.latest(reports)
    out['mirror_b'] = sorted(look(lab, 'B', migrate.dest(lab) + '/special'))
    return out


def test_rsync_daemon_in_cleartext_and_over_tls_beats_scp_which_stays_at_its_window(tmp_path):
    assert not mine(wanlab.leftovers()), 'lab %s is already running' % NAME
    args = transfer.parse_args(['--rate', '1g', '--rtt', '98', '--size', '400m', '--streams', '4',
                                '--name', NAME, '--results', str(tmp_path), '--quiet'])
    try:
        result = transfer.transfer(args, after=migration_checks)
    finally:
        left = mine(wanlab.leftovers())
        if left:
            wanlab.teardown(NAME)
    assert not left, 'the lab left things behind: %s' % left

    methods = result['methods']
    assert set(methods) == set(transfer.METHODS)
    ceiling = 2 * 2 ** 20 * 8 / 0.098
    for phase in ('stock', 'tuned'):
        scp = methods['scp'][phase]
        assert 0.6 * ceiling <= scp['steady_bps'] <= 1.1 * ceiling, (phase, scp['steady_bps'], ceiling)
        assert scp['bps'] <= 1.1 * ceiling, (phase, scp['bps'], ceiling)
    for method in ('rsync_daemon', 'rsync_tls'):
        assert methods[method]['tuned_bps'] >= 3 * methods['scp']['tuned_bps'], \
            (method, methods[method]['tuned_bps'], methods['scp']['tuned_bps'])
    for method in transfer.TLS_METHODS:
        tls = methods[method]['tls']
        assert tls['protocol'] == 'TLSv1.3' and tls['verified'] is True, (method, tls)
        assert tls['cipher'] in ('TLS_AES_256_GCM_SHA384', 'TLS_AES_128_GCM_SHA256', 'TLS_CHACHA20_POLY1305_SHA256')
        assert tls['sessions'] == (1 if method == 'rsync_tls' else 4), (method, tls)
    for method in transfer.PARALLEL:
        streams = methods[method]['tuned']['streams']
        assert len(streams) == (8 if method == 'rsync_ssh_parallel' else 4), (method, streams)
    for method in [m for m in transfer.METHODS if m != 'hpnssh']:
        entry = methods[method]
        assert entry['error'] is None, (method, entry['error'])
        assert entry['stock']['verified'] and entry['tuned']['verified']
        assert isinstance(entry['cpu_limited'], bool)
    if not result['hpnssh']:
        assert 'no HPN-SSH package for Debian 12' in methods['hpnssh']['error']
        assert methods['hpnssh']['stock_bps'] is None and methods['hpnssh']['tuned_bps'] is None

    written = list(tmp_path.glob('transfer-*.json'))
    assert len(written) == 1 and written[0].with_suffix('.md').exists()
    saved = json.loads(written[0].read_text())
    assert saved['rate_bps'] == 10 ** 9 and saved['rtt_ms'] == 98.0 and saved['loss_pct'] == 0
    assert saved['mtu'] == 9000 and saved['size_bytes'] == 400 * 10 ** 6 and saved['streams'] == 4
    assert saved['ssh_streams'] == 8
    for entry in saved['methods'].values():
        assert set(entry) >= {'stock_bps', 'tuned_bps', 'cpu_limited', 'error'}
    for method in transfer.TLS_METHODS:
        assert set(saved['methods'][method]['tls']) >= {'protocol', 'cipher', 'verified'}

    checks = result['after']
    assert checks['status_after_kill'], 'migrate_action=status did not find the migration running after the ' \
        'controller was killed:\n' + checks['outputs'][0][-3000:]
    assert checks['status_at_once'] == {'running': True, 'changed': ['0']}, checks['status_at_once']
    assert checks['rerun_while_running'] == {'said': True, 'same_run': True}, checks['rerun_while_running']
    assert checks['password_after_kill'] == [], checks['password_after_kill']
    assert checks['limited'] == {'said': True, 'state': 80 * 10 ** 6, 'config': 80 * 10 ** 6, 'same_run': True,
                                 'phase': 'copying'}, checks['limited']
    resumed = checks['resumed']
    assert resumed['state'] == 'done' and resumed['verified'] is True and resumed['mismatches'] == 0, resumed
    for key in ('bytes', 'files', 'seconds', 'goodput_bps', 'streams', 'transport', 'verified', 'mismatches',
                'resent_bytes', 'per_stream', 'sender_cpu_seconds_per_gb', 'receiver_cpu_seconds_per_gb'):
        assert key in resumed, key
    assert resumed['transport'] == 'tls' and resumed['bytes'] == 400 * 10 ** 6 and resumed['runs'] == 2
    assert 0 < checks['held_at_kill'] < 400 * 10 ** 6, checks['held_at_kill']
    assert resumed['resent_bytes'] <= 0.05 * checks['held_at_kill'], (resumed['resent_bytes'], checks['held_at_kill'])
    corrupted = checks['corrupted']
    assert corrupted['mismatches'] == 1 and corrupted['verified'] is True and corrupted['resent_bytes'] > 0, corrupted
    # --check, the preflight's refusals, stop and the run after it, the receiver's daemon restarted (issue 31)
    assert checks['checked'] == {'rc': 0, 'plan': True, 'same_run': True, 'at_b': False}, checks['checked']
    assert checks['refused_room'] == {'rc': 2, 'room': True, 'certificate': True, 'nothing_moved': True,
                                      'same_run': True}, checks['refused_room']
    assert checks['stopped']['said'] and checks['stopped']['state'] == 'stopped', checks['stopped']
    assert checks['stopped']['partial'], checks['stopped']            # the partial file stays for the next run
    after_stop = checks['after_stop']
    assert after_stop['state'] == 'done' and after_stop['verified'] is True, after_stop
    assert after_stop['resent_bytes'] <= 0.05 * 100 * 10 ** 6, after_stop['resent_bytes']
    # a re-run that would move the receiver to another migration mid-copy is refused, and the copy goes on
    assert checks['moved'] == {'rc': 2, 'said': True, 'nothing_changed': True, 'running': True}, checks['moved']
    assert checks['cut']['state'] in ('failed', 'interrupted'), checks['cut']['state']
    after_restart = checks['after_restart']
    assert after_restart['state'] == 'done' and after_restart['verified'] is True, after_restart
    # the daemon's restart cut the receiving rsync: the next run sends the file it was writing again, not the tree
    assert after_restart['sent_bytes'] <= 1.1 * 100 * 10 ** 6, after_restart['sent_bytes']
    # what a POSIX tree has arrives as it was (issue 31)
    run_ = checks['attributes_run']
    assert run_['verified'] is True and run_['state'] == 'done', run_
    for kept in ('owners and groups (by number)', 'ACLs', 'extended attributes', 'holes of sparse files',
                 'hard links'):
        assert kept in run_['kept'], (kept, run_['kept'], run_['not_kept'])
    source, received = checks['attributes_a'], checks['attributes_b']
    assert sorted(received) == sorted(name for name in source if not name.endswith('.tmp')), sorted(received)
    for name, entry in source.items():
        if name.endswith('.tmp'):
            continue
        assert received[name][1:4] + received[name][5:] == entry[1:4] + entry[5:], (name, received[name], entry)
    assert received['acl.txt'][6] is not None and received['xattr.txt'][7] == b'migrated'.hex()
    assert received['owned'][2:4] == [1234, 2345]
    assert received['linked-a'][0] == received['sub/linked-b'][0] and received['linked-a'][1] == 2
    assert received['sparse.bin'][4] * 512 < 2 * 10 ** 6, received['sparse.bin']          # holes kept
    assert {'new\nline.txt', '-dash', 'back\\#012slash'} <= set(received)
    # a mirror pass past its guard is refused before anything is sent or deleted; within it, it deletes
    refused = checks['refused']
    assert refused['rc'] != 0 and refused['said'] and refused['report']['state'] == 'refused', refused['report']
    assert {'one', 'two', 'three', 'extra-at-b', 'keep.tmp'} <= set(refused['left'])
    mirror = checks['mirror']
    assert mirror['verified'] is True and mirror['deleted'] == 4 and mirror['extra'] == 0, mirror
    assert 'keep.tmp' in checks['mirror_b'] and not {'one', 'two', 'three', 'extra-at-b'} & set(checks['mirror_b'])
    assert [item['state'] for item in mirror['passes']][-2:] == ['refused', 'done'] and mirror['passes'][-1]['delete']
    assert checks['leaks'] == [] and checks['journal'] == '0', checks['journal']
    assert checks['files'] == [transfer.PASSWORD_FILE], checks['files']
