# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's runner (module_utils/migrate/runner.py) as the sender's unit runs it - a program of its own - against
a real rsync daemon on loopback (cleartext: the TLS path is the lab's, tests/integration/test_transfer_lab.py): it
walks the tree and its streams copy the parts while the walk still lists it, with a memory that does not grow with
the tree; the names of one inode stay linked across parts; the checksum proof finds a file changed at the receiver
with the same size and time, sends it again and passes; the size proof does not find it and says so; a run killed
with SIGKILL half-way is continued from its partial file; SIGTERM stops it with the partial file kept and the password
file gone."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
from waiting import until

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import plan as _plan
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner

pytestmark = pytest.mark.skipif(not shutil.which('rsync') or os.geteuid() != 0,
                                reason='needs rsync, and root for the daemon\'s chroot')
RUNNER = _runner.__file__
PASSWORD = 'pw with space \\ "quotes\''


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.fixture
def daemon(tmp_path):
    """An rsync daemon on 127.0.0.1 with a writable module 'in' for user 'u': (port, module path)."""
    proc, port, dest = start_daemon(tmp_path)
    yield port, dest
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def shm(tmp_path):
    """A scratch directory in memory (/dev/shm, where it is a tmpfs; else tmp_path): trees of tens of thousands of
    files are made and copied there in seconds."""
    if not os.path.isdir('/dev/shm') or os.statvfs('/dev/shm').f_bavail * os.statvfs('/dev/shm').f_frsize < 2 ** 30:
        yield tmp_path
        return
    path = tempfile.mkdtemp(prefix='bdp-runner-test-', dir='/dev/shm')
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def start_daemon(tmp_path):
    """(the daemon's process, its port, the module's path) under ``tmp_path``."""
    dest = tmp_path / 'dest'
    dest.mkdir()
    secrets = tmp_path / 'secrets'
    secrets.write_text('u:%s\n' % PASSWORD)
    os.chmod(str(secrets), 0o600)
    port = free_port()
    conf = tmp_path / 'rsyncd.conf'
    conf.write_text('use chroot = yes\nreverse lookup = no\nlock file = %s/lock\npid file = %s/pid\n[in]\n'
                    '    path = %s\n    read only = no\n    auth users = u\n    secrets file = %s\n    uid = root\n'
                    '    gid = root\n    hosts allow = 127.0.0.1\n' % (tmp_path, tmp_path, dest, secrets))
    proc = subprocess.Popen(['rsync', '--daemon', '--no-detach', '--address=127.0.0.1', '--port=%d' % port,
                             '--config=%s' % conf], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60          # a loaded machine starts it late; the tests need it listening
    while True:
        try:
            socket.create_connection(('127.0.0.1', port), 0.2).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, 'the test rsync daemon did not start'
            time.sleep(0.1)
    return proc, port, dest


def make_tree(root):
    """A small mixed tree: one 4 MB file, 30 files of 20 kB, one of 100 kB at the top, an empty directory, a
    symbolic link."""
    (root / 'big').mkdir(parents=True)
    (root / 'big' / 'one.bin').write_bytes(os.urandom(4 * 10 ** 6))
    (root / 'top.bin').write_bytes(os.urandom(10 ** 5))
    for index in range(30):
        (root / 'small' / ('d%d' % (index % 3))).mkdir(parents=True, exist_ok=True)
        (root / 'small' / ('d%d' % (index % 3)) / ('f%02d' % index)).write_bytes(os.urandom(20000))
    (root / 'empty').mkdir()
    os.symlink('big/one.bin', str(root / 'link'))
    for top, dummy, dummy_names in os.walk(str(root)):     # directories of 2001, so that a copy's own time shows
        os.utime(top, (10 ** 9, 10 ** 9))


def prepare(tmp_path, port, streams=2, proof='checksum', bwlimit_bps=0, **extra):
    """The run directory as migrate_run leaves it, with the preflight's counts and part limits in the config as the
    role gives them (``extra``: more of the config, such as delete, max_delete, excludes, preserve, part_files)."""
    source, run_dir = tmp_path / 'src', tmp_path / 'run'
    if not source.exists():
        make_tree(source)
    run_dir.mkdir(exist_ok=True)
    planned = _plan.plan(_plan.survey(str(source), extra.get('excludes') or []), streams)
    (run_dir / _runner.PASSWORD).write_text(PASSWORD + '\n')
    os.chmod(str(run_dir / _runner.PASSWORD), 0o600)
    config = dict({'id': 'test', 'source': str(source), 'url': 'rsync://u@127.0.0.1:%d/in/sender/' % port,
                   'transport': 'plain', 'env': {}, 'bytes': planned['bytes'], 'files': planned['files'],
                   'streams': streams, 'part_files': planned['parts']['files'],
                   'part_bytes': planned['parts']['bytes'], 'proof': proof, 'present_bytes': du(tmp_path / 'dest'),
                   'bwlimit_bps': bwlimit_bps}, **extra)
    (run_dir / _runner.CONFIG).write_text(json.dumps(config))
    return source, run_dir


def du(path):
    return sum(os.lstat(os.path.join(top, name)).st_size for top, dummy, names in os.walk(str(path)) for name in names)


def in_transfer(dest):
    """The files rsync is receiving under ``dest`` (its temporary files, .NAME.XXXXXX beside NAME): [(path, size)]."""
    found = []
    for top, dummy, names in os.walk(str(dest)):
        for name in names:
            if name.startswith('.') and len(name.rsplit('.', 1)[-1]) == 6:
                try:
                    found.append((os.path.join(top, name), os.lstat(os.path.join(top, name)).st_size))
                except OSError:
                    pass                # renamed as it was found: received
    return found


def digest(root):
    out = {}
    for top, dummy, names in os.walk(os.fsencode(str(root))):
        for name in names:
            path = os.fsdecode(os.path.join(top, name))
            if os.path.islink(path):
                out[os.path.relpath(path, str(root))] = 'link:' + os.readlink(path)
            else:
                with open(path, 'rb') as handle:
                    out[os.path.relpath(path, str(root))] = hashlib.sha256(handle.read()).hexdigest()
    return out


def run(run_dir, timeout=120):
    return subprocess.run([sys.executable, RUNNER, str(run_dir)], timeout=timeout, check=False).returncode


def test_the_streams_copy_the_tree_and_the_proof_passes(tmp_path, daemon):
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port)
    assert run(run_dir) == 0, _runner.read_state(str(run_dir)).get('message')
    state = _runner.read_state(str(run_dir))
    assert state['state'] == 'done' and state['verified'] is True and state['mismatches'] == 0, state
    # the streams sent the files, the destination pass only made the top directory (not its files: rsync's --dirs)
    assert sum(stream['literal_bytes'] for stream in state['streams']) == state['bytes_total'], state['streams']
    assert digest(source) == digest(dest / 'sender')
    assert (dest / 'sender' / 'empty').is_dir() and os.path.islink(str(dest / 'sender' / 'link'))
    # the last pass gives every directory, the tree's top included, its mode and time
    for path in ('', 'small/d1', 'empty'):
        assert int(os.stat(str(dest / 'sender' / path)).st_mtime) == int(os.stat(str(source / path)).st_mtime), path
    assert len(state['streams']) == 2 and state['bytes_done'] >= state['bytes_total'] * 0.99
    assert state['resent_bytes'] == 0 and not (run_dir / _runner.PASSWORD).exists()
    assert set(state['phases']) == {'destination', 'copying', 'proving', 'directories'}
    assert not [top for top, dirs, dummy in os.walk(str(dest)) if _runner.PARTIAL_DIR in dirs]


def test_a_file_changed_at_the_receiver_with_its_size_and_time_is_found_and_sent_again(tmp_path, daemon):
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port)
    assert run(run_dir) == 0
    victim = dest / 'sender' / 'small' / 'd1' / 'f04'
    info = os.stat(str(victim))
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xff
    victim.write_bytes(bytes(data))
    os.utime(str(victim), ns=(info.st_atime_ns, info.st_mtime_ns))
    source, run_dir = prepare(tmp_path, port, proof='size')
    assert run(run_dir) == 0
    state = _runner.read_state(str(run_dir))
    assert state['verified'] is True and state['mismatches'] == 0       # what the size proof cannot see
    assert digest(source) != digest(dest / 'sender')
    source, run_dir = prepare(tmp_path, port, proof='checksum')
    assert run(run_dir) == 0
    state = _runner.read_state(str(run_dir))
    assert state['mismatches'] == 1 and state['mismatched'] == ['small/d1/f04'] and state['verified'] is True
    assert state['differs_at_receiver'] == 1 and state['differs_at_receiver_names'] == ['small/d1/f04']
    assert state['mismatches_after_resend'] == 0 and state['resent_bytes'] > 0
    assert set(state['phases']) == {'destination', 'copying', 'proving', 'resending', 'proving again', 'directories'}
    assert digest(source) == digest(dest / 'sender')


def test_a_run_killed_half_way_is_continued_from_its_partial_file(tmp_path, daemon):
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port, streams=1, bwlimit_bps=8 * 2 * 10 ** 6)     # 2 MB/s: about 2.5 s
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    partial = dest / 'sender' / 'big' / _runner.PARTIAL_DIR / 'one.bin'
    assert until(lambda: du(dest) >= 10 ** 6, within=120), du(dest)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # rsync keeps what it received when killed with the partial-dir: the SIGKILL of the runner leaves its rsync
    # orphaned; the test kills it the way systemd would kill the unit's cgroup, and the daemon's receiver, finding
    # its connection gone, moves what it received into the partial-dir
    subprocess.run(['pkill', '-9', '-f', 'files-from=%s' % run_dir], check=False)
    assert until(lambda: partial.exists() and not in_transfer(dest)), list(os.walk(str(dest)))
    interrupted = _runner.read_state(str(run_dir))
    assert interrupted['state'] in ('starting', 'copying')
    present = du(dest)
    assert 0 < present < 4 * 10 ** 6 and partial.exists(), (present, list(os.walk(str(dest))))
    source, run_dir = prepare(tmp_path, port, streams=1)
    assert run(run_dir) == 0
    state = _runner.read_state(str(run_dir))
    assert state['verified'] is True and state['runs'] == 2 and digest(source) == digest(dest / 'sender')
    # the part that was there is not sent again (rsync's delta against the partial file)
    assert state['literal_bytes'] <= state['bytes_total'] - present + 64 * 1024, state
    assert state['resent_bytes'] <= 0.05 * present, state


def test_sigterm_stops_the_streams_and_keeps_the_partial_files(tmp_path, daemon):
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port, streams=1, bwlimit_bps=8 * 10 ** 6)
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    # the 4 MB file is on its way (1 MB/s): rsync writes it to a temporary file beside its name
    assert until(lambda: any(size for dummy, size in in_transfer(dest)), within=120), list(os.walk(str(dest)))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 2
    state = _runner.read_state(str(run_dir))
    assert state['state'] == 'stopped' and 'partial files stay' in state['message']
    assert not (run_dir / _runner.PASSWORD).exists()
    partial = dest / 'sender' / 'big' / _runner.PARTIAL_DIR / 'one.bin'
    assert until(lambda: partial.exists() and not in_transfer(dest)), list(os.walk(str(dest)))
    assert 0 < partial.stat().st_size < 4 * 10 ** 6 and not (dest / 'sender' / 'big' / 'one.bin').exists()


def test_a_second_runner_of_a_running_migration_leaves_its_files_alone(tmp_path, daemon):
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port, streams=1, bwlimit_bps=8 * 10 ** 6)
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    assert until(lambda: _runner.running(str(run_dir)))
    assert run(run_dir) == 3                          # the lock is the first one's: nothing of the run is touched
    assert (run_dir / _runner.PASSWORD).exists() and _runner.read_state(str(run_dir))['runs'] == 1
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 2 and not _runner.running(str(run_dir))


def test_a_refused_password_ends_the_run_failed_with_rsyncs_words(tmp_path, daemon):
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port)
    (run_dir / _runner.PASSWORD).write_text('wrong\n')
    assert run(run_dir) == 1
    state = _runner.read_state(str(run_dir))
    assert state['state'] == 'failed' and state['verified'] is None and 'proving' not in state['phases']
    assert 'rsync exit 5' in state['message'] and 'auth failed' in state['message'], state['message']
    assert 'wrong' not in json.dumps(state) and not (run_dir / _runner.PASSWORD).exists()


ODD = ['new\nline', 'back\\#012slash', os.fsdecode(b'bad\xff\xfename'), '-dash', 'tab\tx', 'sp ace', 'cr\rx',
       '\\#134']


def test_any_file_name_survives_the_copy_the_proof_and_the_resend(tmp_path, daemon):
    """rsync prints a name it would not show (a newline, a backslash before #) escaped as \\#ooo: the resend list
    takes the name the file system has."""
    port, dest = daemon
    source = tmp_path / 'src'
    (source / 'odd').mkdir(parents=True)
    for index, name in enumerate(ODD):
        (source / 'odd' / name).write_bytes(os.urandom(1000 + index))
    source, run_dir = prepare(tmp_path, port, streams=3, part_files=2)
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    assert digest(source) == digest(dest / 'sender')
    assert sorted(name for names in parts_of(run_dir).values() for name in names if name.startswith('odd/')) == \
        sorted('odd/' + name for name in ODD)
    for name in ODD:                                     # each changed at the receiver, size and time kept
        victim = dest / 'sender' / 'odd' / name
        info = os.stat(str(victim))
        data = bytearray(victim.read_bytes())
        data[10] ^= 0xff
        victim.write_bytes(bytes(data))
        os.utime(str(victim), ns=(info.st_atime_ns, info.st_mtime_ns))
    source, run_dir = prepare(tmp_path, port, streams=3, part_files=2)
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert state['mismatches'] == len(ODD) and state['mismatches_after_resend'] == 0 and state['verified'] is True
    assert sorted(state['mismatched']) == sorted('odd/' + name for name in ODD)
    assert state['differs_at_receiver'] == len(ODD) and state['changed_at_source'] == 0
    assert digest(source) == digest(dest / 'sender')


def parts_of(run_dir):
    """{part's file name: [names]} of the pass that ran in ``run_dir``."""
    return dict((path.name, [os.fsdecode(name) for name in path.read_bytes().split(b'\0') if name])
                for path in sorted(run_dir.glob('part-*')))


def test_the_streams_start_while_the_tree_is_still_listed(tmp_path, daemon):
    """fpart's live mode: with parts of 100 names and one stream, the first rsync starts as soon as the walk has
    listed the first part, not the tree (the state keeps the walk's figures at that moment), and each part is a
    NUL-separated list of its own, 0600 in the run's 0700 directory, every name in one part."""
    port, dest = daemon
    source = tmp_path / 'src'
    for index in range(800):
        directory = source / ('d%02d' % (index // 100))
        directory.mkdir(parents=True, exist_ok=True)
        (directory / ('f%04d' % index)).write_bytes(b'%d' % index)
    source, run_dir = prepare(tmp_path, port, streams=1, part_files=100)
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    first, walk = state['first_rsync'], state['walk']
    assert first['listed']['state'] == 'listing' and first['listed']['files'] == 100, first
    assert walk['state'] == 'listed' and walk['files'] == 800 and walk['parts'] == 8, walk
    assert walk['ended'] > first['at'] >= walk['started'] and state['first_byte'] >= first['at']
    assert [stream['parts'] for stream in state['streams']] == [8] and state['files_sent'] == 800
    parts = parts_of(run_dir)
    # each part holds 100 files, and the directories met while it was open (not counted in its limits)
    files = dict((part, [name for name in names if '/' in name]) for part, names in parts.items())
    assert len(parts) == 8 and all(len(names) == 100 for names in files.values())
    assert sorted(sum(files.values(), [])) == sorted(os.path.relpath(os.path.join(top, name), str(source))
                                                     for top, dummy, names in os.walk(str(source)) for name in names)
    directories = set(sum(parts.values(), [])) - set(sum(files.values(), []))
    assert sorted(directories) == ['d%02d' % index for index in range(8)]
    assert {oct(os.stat(str(run_dir / name)).st_mode & 0o777) for name in parts} == {'0o600'}
    assert digest(source) == digest(dest / 'sender') and state['verified'] is True


def test_the_walk_holds_no_list_of_the_tree(shm):
    """The preflight's and the runner's peak memory (VmHWM) with 50,000 files is within 1 MiB of theirs with 5,000:
    neither holds the files (a list of their names alone would take more than 100 bytes a file, 4.5 MB more), and the
    runner's reading of rsync's progress (a line per file) does not grow its heap."""
    peaks = {}
    for count in (5000, 50000):
        base = shm / str(count)
        source = base / 'src'
        for index in range(count):
            directory = source / ('d%03d' % (index // 1000))
            if index % 1000 == 0:
                directory.mkdir(parents=True)
            (directory / ('f%06d' % index)).write_bytes(b'')
        code = ('import sys\nfrom ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import plan, runner\n'
                'plan.survey(sys.argv[1])\nprint(runner.peak_kb())\n')
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(_plan.__file__))))))))
        preflight = subprocess.run([sys.executable, '-c', code, str(source)], capture_output=True, text=True,
                                   env=dict(os.environ, PYTHONPATH=root), check=True)
        proc, port, dest = start_daemon(base)
        try:
            dummy, run_dir = prepare(base, port, streams=2)
            assert run(run_dir, timeout=300) == 0, _runner.read_state(str(run_dir))['message']
        finally:
            proc.terminate()
            proc.wait(10)
        state = _runner.read_state(str(run_dir))
        assert state['walk']['files'] == count and state['verified'] is True
        peaks[count] = (int(preflight.stdout), state['peak_rss_kb'])
        shutil.rmtree(str(base))
    assert peaks[50000][0] - peaks[5000][0] < 1024, peaks
    assert peaks[50000][1] - peaks[5000][1] < 1024, peaks


def test_the_names_of_one_inode_stay_linked_across_parts(tmp_path, daemon):
    """rsync -H links the names of one inode only within one transfer: with parts of 4 names on 3 streams, the names
    of an inode, met far apart in the walk, wait until all are met and go into one part; an inode with a name outside
    the tree or excluded goes when the walk ends; each inode's bytes count once."""
    port, dest = daemon
    source, outside = tmp_path / 'src', tmp_path / 'outside'
    for directory in 'abc':
        (source / directory).mkdir(parents=True)
        for index in range(20):
            (source / directory / ('f%02d' % index)).write_bytes(os.urandom(1000 + index))
    outside.mkdir()
    os.link(str(source / 'a' / 'f00'), str(source / 'c' / 'l00'))
    os.link(str(source / 'b' / 'f05'), str(source / 'a' / 'l05'))
    os.link(str(source / 'b' / 'f05'), str(source / 'c' / 'l05b'))
    os.link(str(source / 'a' / 'f09'), str(outside / 'o09'))                        # a name outside the tree
    os.link(str(source / 'b' / 'f07'), str(source / 'b' / 'skip.tmp'))               # an excluded name
    source, run_dir = prepare(tmp_path, port, streams=3, part_files=4, excludes=['*.tmp'])
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    for names in (('a/f00', 'c/l00'), ('b/f05', 'a/l05', 'c/l05b')):
        inodes = set((os.stat(str(dest / 'sender' / name)).st_ino, os.stat(str(dest / 'sender' / name)).st_nlink)
                     for name in names)
        assert len(inodes) == 1 and next(iter(inodes))[1] == len(names), (names, inodes)
        holding = [part for part, listed in parts_of(run_dir).items() if set(names) & set(listed)]
        assert len(holding) == 1 and set(names) <= set(parts_of(run_dir)[holding[0]]), (names, holding)
    assert os.stat(str(dest / 'sender' / 'a' / 'f09')).st_nlink == 1 and not (dest / 'sender' / 'b' / 'skip.tmp').exists()
    assert state['walk']['linked'] == 3 and state['walk']['files'] == 63 and state['walk']['parts'] >= 16
    assert state['bytes_total'] == sum(1000 + index for index in range(20)) * 3
    assert sum(stream['parts'] for stream in state['streams']) == state['walk']['parts']
    expected = digest(source)
    del expected['b/skip.tmp']
    assert len(state['streams']) == 3 and digest(dest / 'sender') == expected


def test_a_file_gone_from_the_source_after_the_walk_listed_it_is_listed_as_vanished_not_a_failure(tmp_path, daemon):
    """The walk runs ahead of the streams: a file of the last part, removed once the walk has listed it and before
    its part starts (one stream at 50 kB/s, a part per file), is what rsync finds vanished."""
    port, dest = daemon
    source = tmp_path / 'src'
    source.mkdir()
    for index in range(12):
        (source / ('f%02d' % index)).write_bytes(os.urandom(20000))
    source, run_dir = prepare(tmp_path, port, streams=1, part_files=1, bwlimit_bps=8 * 50 * 1024)
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    until(lambda: ((_runner.read_state(str(run_dir)) or {}).get('walk') or {}).get('state') == 'listed')
    state = _runner.read_state(str(run_dir))
    assert state['walk']['state'] == 'listed' and sum(item['parts'] for item in state['streams']) < 11, state
    last = parts_of(run_dir)['part-000012'][0]
    (source / last).unlink()
    assert proc.wait(120) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert state['state'] == 'done' and state['verified'] is True
    assert state['vanished'] == 1 and state['vanished_names'] == [last], state
    assert digest(source) == digest(dest / 'sender')


def test_a_file_changed_at_the_source_after_its_copy_is_sent_again_and_counted_apart(tmp_path, daemon):
    """Stream 0 carries the 4 MB file at 2 MB/s; stream 1 the small files at once: one of them changes at the
    source while stream 0 still copies (a live tree), so the proof finds it."""
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port, streams=2, bwlimit_bps=2 * 8 * 2 * 10 ** 6)
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    copied = dest / 'sender' / 'top.bin'
    assert until(copied.exists, within=120)             # rsync renames its temporary file once the copy is whole
    (source / 'top.bin').write_bytes(os.urandom(10 ** 5))
    assert proc.wait(120) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert _runner.read_state(str(run_dir))['phases']['copying'][1] > os.stat(str(source / 'top.bin')).st_mtime
    assert state['mismatched'] == ['top.bin'] and state['changed_at_source'] == 1, state
    assert state['differs_at_receiver'] == 0 and state['verified'] is True
    assert digest(source) == digest(dest / 'sender')


def test_excludes_leave_the_same_paths_out_of_the_copy_the_proof_and_the_deletes(tmp_path, daemon):
    port, dest = daemon
    source = tmp_path / 'src'
    make_tree(source)
    (source / 'cache').mkdir()
    (source / 'cache' / 'c.bin').write_bytes(b'c' * 1000)
    (source / 'small' / 'd0' / 'scratch.tmp').write_bytes(b't' * 1000)
    (dest / 'sender').mkdir(parents=True)
    (dest / 'sender' / 'keep.tmp').write_bytes(b'k')               # excluded: never deleted
    (dest / 'sender' / 'gone.bin').write_bytes(b'g')               # not at the source: deleted
    excludes = ['cache/', '*.tmp']
    source, run_dir = prepare(tmp_path, port, excludes=excludes, delete=True, max_delete=10)
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert state['verified'] is True and state['deleted'] == 1 and state['deleted_names'] == ['gone.bin']
    assert state['extra'] == 0 and state['excludes'] == excludes
    assert not (dest / 'sender' / 'cache').exists() and not (dest / 'sender' / 'small' / 'd0' / 'scratch.tmp').exists()
    assert (dest / 'sender' / 'keep.tmp').exists() and not (dest / 'sender' / 'gone.bin').exists()
    assert state['bytes_total'] == sum(size for dummy, size in digest_sizes(source) if not dummy.endswith('.tmp')
                                       and not dummy.startswith('cache/'))


def digest_sizes(root):
    return [(os.path.relpath(os.path.join(top, name), str(root)), os.lstat(os.path.join(top, name)).st_size)
            for top, dummy, names in os.walk(str(root)) for name in names
            if not os.path.islink(os.path.join(top, name))]


def test_a_mirror_pass_deletes_within_its_guard_and_refuses_past_it_before_anything_moves(tmp_path, daemon):
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port)
    assert run(run_dir) == 0
    first = _runner.read_state(str(run_dir))
    for index in range(3):                                   # the application removed three files
        (source / 'small' / 'd0' / ('f%02d' % (index * 3))).unlink()
    (source / 'new.bin').write_bytes(os.urandom(5000))
    before = digest(dest / 'sender')
    source, run_dir = prepare(tmp_path, port, delete=True, max_delete=2)
    assert run(run_dir) == 1
    refused = _runner.read_state(str(run_dir))
    assert refused['state'] == 'refused' and refused['would_delete'] == 3 and refused['deleted'] == 0
    assert 'would delete 3 files' in refused['message'] and 'migrate_max_delete=2' in refused['message']
    assert digest(dest / 'sender') == before and 'copying' not in refused['phases']
    source, run_dir = prepare(tmp_path, port, delete=True, max_delete=3)
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    mirror = _runner.read_state(str(run_dir))
    assert mirror['deleted'] == 3 and mirror['extra'] == 0 and mirror['verified'] is True
    assert sorted(mirror['deleted_names']) == ['small/d0/f00', 'small/d0/f03', 'small/d0/f06']
    assert digest(source) == digest(dest / 'sender')
    # the passes, each with what it sent and deleted: the first copied the tree, the mirror pass the new file
    history = mirror['history']
    assert [item['state'] for item in history] == ['done', 'refused'] and history[0]['run_id'] is None
    assert history[0]['literal_bytes'] == first['bytes_total'] and history[0]['files_sent'] == first['files']
    assert mirror['summary']['literal_bytes'] == 5000 and mirror['summary']['files_sent'] == 1
    assert mirror['summary']['deleted'] == 3 and mirror['summary']['copy_seconds'] > 0


def test_an_rsync_that_ended_on_its_own_before_the_new_limit_reached_it_finished_its_list(tmp_path):
    """SIGHUP marks each copying rsync whose end the runner has not read yet: one that had already ended by itself
    (exit 0, or 24 for vanished files) finished its part, which counts as done and does not run again; one that the
    SIGTERM stopped is restarted."""
    def stream(argv):
        return _runner.Stream(0, str(tmp_path / 'part-1'), 'copying', argv, dict(os.environ),
                              str(tmp_path / ('%s.log' % argv[0])))

    for argv, restarted in ((['true'], False), (['sh', '-c', 'exit 24'], False), (['sleep', '30'], True)):
        rsync = stream(argv)
        if not restarted:
            os.waitid(os.P_PID, rsync.proc.pid, os.WEXITED | os.WNOWAIT)       # ended, not yet reaped
        rsync.restart = True                                                    # as reload() marks it
        if restarted:
            os.killpg(rsync.proc.pid, signal.SIGTERM)
        while rsync.read():
            pass
        rsync.finish()
        assert rsync.restarted is restarted, argv
        assert rsync.figures()['parts'] == (0 if restarted else 1), argv


STAND_IN = r"""#!/bin/sh
# A stand-in rsync: records each call (its pid, its kind, its list) in calls, runs the real rsync, and runs the hook
# before-KIND or after-KIND of its directory, when there is one, around the first call of that kind (a before hook
# that fails ends the call with its exit code, rsync not run).  KIND: copying (the parts), counting (the dry run of
# the deletes), deleting, proving (the dry run that compares), other.
dir=$(dirname "$0")
list=
for arg; do case $arg in --files-from=*) list=${arg#--files-from=};; esac; done
case " $* " in *" --dry-run "*) dry=yes;; *) dry=;; esac
case " $* " in
    *" --info=progress2,stats2 "*) kind=copying;;
    *" --delete "*) kind=${dry:+counting}; kind=${kind:-deleting};;
    *) kind=${dry:+proving}; kind=${kind:-other};;
esac
printf '%s %s %s\n' "$$" "$kind" "$list" >> "$dir/calls"
if [ -x "$dir/before-$kind" ] && mkdir "$dir/before-$kind.ran" 2>/dev/null; then "$dir/before-$kind" || exit $?; fi
rsync "$@"
rc=$?
if [ -x "$dir/after-$kind" ] && mkdir "$dir/after-$kind.ran" 2>/dev/null; then "$dir/after-$kind"; fi
exit $rc
"""


class StandIn(object):
    """The stand-in rsync (STAND_IN) in ``directory``, with its hooks {name: shell script}."""

    def __init__(self, directory, **hooks):
        self.dir = directory
        directory.mkdir()
        for name, text in dict(hooks, rsync=STAND_IN).items():
            (directory / name.replace('_', '-')).write_text('#!/bin/sh\n' + text if name != 'rsync' else text)
            (directory / name.replace('_', '-')).chmod(0o755)
        self.command = [str(directory / 'rsync')]

    def calls(self, kind=None):
        """[(pid, kind, list)] of the calls so far, of ``kind`` only when given."""
        path = self.dir / 'calls'
        found = [tuple(line.split(' ', 2)) for line in path.read_text().splitlines()] if path.exists() else []
        return [call for call in found if kind in (None, call[1])]


def zombie(pid):
    """Whether ``pid`` has ended and its parent has not read its end yet."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return False


def finished(proc, pid_file=None):
    """After a test with a runner ``proc``: it is gone, and so is the process of ``pid_file``."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if pid_file and pid_file.exists() and pid_file.read_text().strip():
        subprocess.run(['kill', pid_file.read_text().strip()], check=False, stderr=subprocess.DEVNULL)


def new_limit(run_dir, proc, bps):
    """migrate_action=limit as the module does it: the limit into the config, SIGHUP to the runner."""
    config = json.loads((run_dir / _runner.CONFIG).read_text())
    (run_dir / _runner.CONFIG).write_text(json.dumps(dict(config, bwlimit_bps=bps)))
    proc.send_signal(signal.SIGHUP)


def test_a_new_limit_that_comes_after_an_rsync_ended_on_its_own_sends_no_part_twice(tmp_path, daemon):
    """The race of issue 32 in the runner itself: the first part's rsync has ended by itself (exit 0) when SIGHUP
    comes, before the runner read its end (a child of it holds its output open until the new limit's SIGTERM to its
    process group); its part is done and no rsync is given its list again.  Every copying rsync's list, from a
    stand-in rsync that records its calls, is a part of the pass, each given once."""
    port, dest = daemon
    rsync = StandIn(tmp_path / 'bin', after_copying='sleep 300 &\necho $! > "$(dirname "$0")/held"\n')
    source, run_dir = prepare(tmp_path, port, streams=1, part_files=8, command=rsync.command)
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    try:
        assert until((rsync.dir / 'held').exists), rsync.calls()
        first = int(rsync.calls('copying')[0][0])
        assert until(lambda: zombie(first)), 'the first copying rsync did not end on its own'
        new_limit(run_dir, proc, 16 * 10 ** 6)
        assert proc.wait(120) == 0, _runner.read_state(str(run_dir))['message']
    finally:
        finished(proc, rsync.dir / 'held')
    state = _runner.read_state(str(run_dir))
    assert len(state['limits']) == 1 and state['verified'] is True, state
    copied = sorted(os.path.basename(call[2]) for call in rsync.calls('copying'))
    assert copied == sorted(parts_of(run_dir)) and len(copied) > 2, copied
    assert [stream['parts'] for stream in state['streams']] == [len(copied)], state['streams']
    assert digest(source) == digest(dest / 'sender')


def test_a_new_limit_while_the_proof_runs_stops_nothing(tmp_path, daemon):
    """SIGHUP restarts only the copying rsyncs: the proof's rsync, held by the stand-in until the runner has taken
    the new limit (its state shows it), runs on and the pass ends verified, the limit kept for what comes after."""
    port, dest = daemon
    rsync = StandIn(tmp_path / 'bin', before_proving='touch "$(dirname "$0")/proving"\n'
                    'while [ ! -e "$(dirname "$0")/go" ]; do sleep 0.05; done\n')
    source, run_dir = prepare(tmp_path, port, streams=2, command=rsync.command)
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    try:
        assert until((rsync.dir / 'proving').exists), rsync.calls()
        new_limit(run_dir, proc, 16 * 10 ** 6)
        assert until(lambda: (_runner.read_state(str(run_dir)) or {}).get('bwlimit_bps') == 16 * 10 ** 6)
        (rsync.dir / 'go').touch()
        assert proc.wait(120) == 0, _runner.read_state(str(run_dir))['message']
    finally:
        (rsync.dir / 'go').touch()
        finished(proc)
    state = _runner.read_state(str(run_dir))
    assert state['state'] == 'done' and state['verified'] is True and len(state['limits']) == 1, state
    proved = sorted(os.path.basename(call[2]) for call in rsync.calls('proving'))
    assert proved == sorted(parts_of(run_dir)) and digest(source) == digest(dest / 'sender')     # each part once


def test_a_file_the_receiver_gets_after_the_deletes_fails_the_proof_of_a_mirror_pass(tmp_path, daemon):
    """A mirror pass is verified only when the receiver has nothing the source has not: a file that appears at the
    receiver once the deletes ran (an application still writing there) is found by the proof, and the pass fails."""
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port)
    assert run(run_dir) == 0
    late = dest / 'sender' / 'late.bin'
    rsync = StandIn(tmp_path / 'bin', after_deleting='echo late > %s\n' % late)
    source, run_dir = prepare(tmp_path, port, delete=True, max_delete=10, command=rsync.command)
    assert run(run_dir) == 1
    state = _runner.read_state(str(run_dir))
    assert len(rsync.calls('deleting')) == 1 and late.exists()
    assert state['state'] == 'failed' and state['verified'] is False and state['extra'] == 1, state
    assert state['mismatches'] == 0 and state['deleted'] == 0


def test_a_stream_that_ends_with_an_rsync_error_fails_the_pass_before_the_proof(tmp_path, daemon):
    """Exit 1 (rsync's syntax or usage error) of the first copying rsync, as any exit but 0 and 23/24: the pass fails
    with rsync's words, nothing is proven, and a later part does not make it look done."""
    port, dest = daemon
    rsync = StandIn(tmp_path / 'bin', before_copying='echo "rsync: --bogus: unknown option" >&2\nexit 1\n')
    source, run_dir = prepare(tmp_path, port, streams=1, part_files=8, command=rsync.command)
    assert run(run_dir) == 1
    state = _runner.read_state(str(run_dir))
    assert state['state'] == 'failed' and state['verified'] is None and 'proving' not in state['phases'], state
    assert 'rsync exit 1' in state['message'] and 'unknown option' in state['message'], state['message']


def test_a_new_limit_restarts_the_copy_with_it_and_sends_nothing_twice(tmp_path, daemon):
    """migrate_action=limit writes the limit into the config and sends SIGHUP to the runner: its running rsync
    restarts with the new limit and continues from its partial file; the parts done stay done."""
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port, streams=1, bwlimit_bps=8 * 10 ** 6, part_files=8)    # 1 MB/s: 4 s
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    assert until(lambda: du(dest) >= 10 ** 6, within=120), du(dest)
    new_limit(run_dir, proc, 16 * 10 ** 6)
    # the state shows the new limit at once (migrate_action=limit and status read it), not at the next interval
    deadline = time.time() + 1.0
    while time.time() < deadline and (_runner.read_state(str(run_dir)) or {}).get('bwlimit_bps') != 16 * 10 ** 6:
        time.sleep(0.05)
    shown = _runner.read_state(str(run_dir))
    assert shown['bwlimit_bps'] == 16 * 10 ** 6 and shown['state'] == 'copying', shown
    assert proc.wait(60) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert state['verified'] is True and [item[1] for item in state['limits']] == [16 * 10 ** 6]
    assert digest(source) == digest(dest / 'sender')
    # the restarted rsync continued from the partial file (rsync's delta matched what the stopped one had sent) and
    # sent what was left: every byte of the tree was sent once or found in the partial file, none twice
    stream = state['streams'][0]
    assert stream['matched_bytes'] > 0, stream
    assert abs(state['literal_bytes'] + stream['matched_bytes'] - state['bytes_total']) <= 65536, stream
    assert state['resent_bytes'] <= 65536
    assert stream['parts'] == state['walk']['parts'] == len(parts_of(run_dir)) > 1


def test_the_last_pass_copies_nothing_the_proof_has_not_seen(tmp_path, daemon):
    """A directory (with a file) and a file made at the top of the source after the walk: the last pass, which gives
    the directories their times and modes, copies neither (the proof never saw them), and still makes the empty
    directory the walk listed; the next pass's walk finds them, copies and proves them."""
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port, streams=1, part_files=4, bwlimit_bps=8 * 2 * 10 ** 6)     # about 2 s
    proc = subprocess.Popen([sys.executable, RUNNER, str(run_dir)])
    deadline = time.time() + 60
    while time.time() < deadline and ((_runner.read_state(str(run_dir)) or {}).get('walk') or {}).get(
            'state') != 'listed':
        time.sleep(0.05)
    state = _runner.read_state(str(run_dir))
    assert state['walk']['state'] == 'listed' and state['state'] == 'copying', state
    (source / 'late').mkdir()
    (source / 'late' / 'inner.bin').write_bytes(os.urandom(3000))
    (source / 'late.bin').write_bytes(os.urandom(2000))
    assert proc.wait(120) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert state['verified'] is True and 'directories' in state['phases'], state
    assert not (dest / 'sender' / 'late').exists() and not (dest / 'sender' / 'late.bin').exists()
    assert (dest / 'sender' / 'empty').is_dir()
    for path in ('', 'small/d1', 'empty'):
        assert int(os.stat(str(dest / 'sender' / path)).st_mtime) == int(os.stat(str(source / path)).st_mtime), path
    source, run_dir = prepare(tmp_path, port, streams=1)
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert state['verified'] is True and state['files_sent'] == 2 and digest(source) == digest(dest / 'sender')


def test_an_ordinary_pass_sends_nothing_again_and_holds_only_the_trees_bytes_as_there(tmp_path, daemon):
    """A pass after a pass that ended sends what changed: none of it counts as sent again (resent_bytes), and what
    the receiver held of the tree is the tree less what the pass sent, however much the receiver holds that the
    source has not; the pass's own seconds cover its copy and its proof."""
    port, dest = daemon
    source, run_dir = prepare(tmp_path, port)
    assert run(run_dir) == 0
    (source / 'top.bin').write_bytes(os.urandom(10 ** 5))
    (dest / 'sender' / 'gone.bin').write_bytes(os.urandom(10 ** 6))         # deleted at the source, kept there
    source, run_dir = prepare(tmp_path, port)
    assert json.loads((run_dir / _runner.CONFIG).read_text())['present_bytes'] > 10 ** 6 + 4 * 10 ** 6
    assert run(run_dir) == 0, _runner.read_state(str(run_dir))['message']
    state = _runner.read_state(str(run_dir))
    assert state['verified'] is True and state['literal_bytes'] >= 10 ** 5 and state['resent_bytes'] == 0, state
    assert state['tree_present_bytes'] == state['bytes_total'] - state['literal_bytes'] < state['bytes_total']
    summary = state['summary']
    assert summary['pass_seconds'] == round(state['ended'] - state['started'], 3)
    assert summary['pass_seconds'] >= summary['copy_seconds'] + summary['proof_seconds'] > summary['copy_seconds']


def test_the_files_that_vanished_count_in_a_stream_that_failed(tmp_path):
    """An rsync that ends with exit 23 for a device it could not make and for files gone from the source: the pass
    fails, and the files that vanished are counted all the same."""
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    (run_dir / _runner.CONFIG).write_text(json.dumps({'id': 'test', 'source': '/src', 'url': 'rsync://u@127.0.0.1/in/',
                                                      'transport': 'plain', 'bytes': 0, 'files': 0, 'streams': 1,
                                                      'proof': 'checksum'}))
    runner = _runner.Runner(str(run_dir))
    lines = ['rsync: [sender] link_stat "/src/a/gone" failed: No such file or directory (2)',
             'rsync: [generator] mknod "/in/special/char-null" failed: Operation not permitted (1)',
             'file has vanished: "/src/b/also gone"']
    stream = _runner.Stream(0, str(run_dir / 'part-000001'), 'copying',
                            ['sh', '-c', 'printf "%s\\n" "$@" >&2; exit 23', 'sh'] + lines, dict(os.environ),
                            str(run_dir / 'copying.log'))
    while stream.read():
        pass
    stream.finish()
    out = {'failures': [], 'items': [], 'literal': 0}
    runner.ended(stream, None, out)
    assert runner.state['vanished'] == 2 and runner.state['vanished_names'] == ['a/gone', 'b/also gone']
    assert len(out['failures']) == 1 and 'rsync exit 23' in out['failures'][0], out
