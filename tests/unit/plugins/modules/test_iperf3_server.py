# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""iperf3_server: /proc/net/tcp reading and port choice, option checks, check mode and missing iperf3 (mocked),
and real one-test servers on 127.0.0.1 (skipped without iperf3): start, replace, idle exit, stop, port clashes.

Real servers get a pid directory in tmp_path and a block of free ports found at run time (so parallel runs of the
suite do not collide); every server a test starts is stopped at the end of that test by its pid, whatever the
test's outcome.
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import signal
import socket
import time

import pytest

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.modules import iperf3_server

HAVE_IPERF3 = shutil.which('iperf3') is not None
real = pytest.mark.skipif(not HAVE_IPERF3, reason='iperf3 is not installed')
RANGE = [5260, 5279]      # for the mocked tests, which start nothing


def free_block(size=12):
    """[first, last] of ``size`` consecutive ports nobody listens on, from a random start in 40000-59999."""
    for attempt in range(50):
        first = random.randrange(40000, 60000 - size)
        if all(iperf3_server.bind_error(port) is None for port in range(first, first + size)):
            return [first, first + size - 1]
    pytest.skip('no block of %d free ports found in %d tries' % (size, attempt + 1))


TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 100 0 0 10 0
   1: 0100007F:1451 0100007F:D2F4 01 00000000:00000000 00:00000000 00000000     0        0 1002 1 0 20 4 30 10 -1
   2: 0100007F:1452 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1003 1 0 100 0 0 10 0
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1453 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2001 1 0 100 0 0 10 0
"""


# --------------------------------------------------------------------------- /proc reading

@pytest.fixture
def fake_proc(tmp_path, monkeypatch):
    root = tmp_path / 'proc'
    (root / 'net').mkdir(parents=True)
    (root / 'net' / 'tcp').write_text(TCP)
    (root / 'net' / 'tcp6').write_text(TCP6)
    monkeypatch.setattr(iperf3_server, 'PROC', str(root))

    def process(pid, inodes, argv=b'iperf3\0-s\0'):
        fd = root / str(pid) / 'fd'
        fd.mkdir(parents=True)
        for number, inode in enumerate(inodes):
            os.symlink('socket:[%s]' % inode, str(fd / str(number)))
        os.symlink('/dev/null', str(fd / '99'))
        (root / str(pid) / 'cmdline').write_bytes(argv)

    return process


def test_sockets_reads_tcp_and_tcp6(fake_proc):
    assert iperf3_server.sockets(0x1451) == [('0A', '1001'), ('01', '1002')]
    assert iperf3_server.sockets(0x1453) == [('0A', '2001')]
    assert iperf3_server.sockets(5999) == []


def test_listening_matches_the_servers_own_socket(fake_proc):
    fake_proc(100, ['1001'])
    fake_proc(200, ['1003'])
    assert iperf3_server.listening(100, 0x1451)
    assert not iperf3_server.listening(200, 0x1451)      # someone else listens there
    assert iperf3_server.listening(200, 0x1452)
    assert iperf3_server.listening(300, 0x1451)          # fds unreadable: any listener counts


def test_serving_sees_an_established_connection(fake_proc):
    assert iperf3_server.serving(0x1451)
    assert not iperf3_server.serving(0x1452)


def test_iperf3_process_checks_the_program(fake_proc):
    fake_proc(100, [])
    fake_proc(200, [], argv=b'/usr/bin/python3\0server.py\0')
    assert iperf3_server.iperf3_process(100)
    assert not iperf3_server.iperf3_process(200)
    assert not iperf3_server.iperf3_process(999999)


def test_bind_error():
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(('127.0.0.1', 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        assert iperf3_server.bind_error(port, '127.0.0.1') == 'in use'
        assert iperf3_server.bind_error(port) is not None
    finally:
        holder.close()
    assert iperf3_server.bind_error(port, '127.0.0.1') is None
    assert iperf3_server.bind_error(port, 'no-such-host.invalid').startswith('cannot resolve no-such-host.invalid')


def test_read_pid(tmp_path):
    path = tmp_path / 'x.pid'
    assert iperf3_server.read_pid(str(path)) is None
    path.write_text('4711')              # iperf3 writes no newline
    assert iperf3_server.read_pid(str(path)) == 4711
    path.write_text('garbage\n')
    assert iperf3_server.read_pid(str(path)) is None


# --------------------------------------------------------------------------- module, mocked

@pytest.fixture
def pid_dir(tmp_path, monkeypatch):
    directory = tmp_path / 'run'
    monkeypatch.setattr(iperf3_server, 'default_pid_dir', lambda: str(directory))
    return directory


@pytest.fixture
def mocked(monkeypatch, pid_dir):
    """iperf3 that answers --version and 'starts' (exit 0) without starting anything."""
    state = {'bins': {'iperf3': '/usr/bin/iperf3'}, 'version': 'iperf 3.12 (cJSON 1.7.15)\n', 'calls': []}

    def run_command(module, args, **kwargs):
        state['calls'].append(list(args))
        if args[-1] == '--version':
            return 0, state['version'], ''
        return 0, '', ''

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                        lambda self, name, required=False, opt_dirs=None: state['bins'].get(name))
    return state


def server(run_module, **args):
    """The module with user: root unless the test gives one (the tests of the unprivileged server give it)."""
    args.setdefault('user', 'root')
    return run_module(iperf3_server.main, args)


def test_check_mode_starts_nothing(run_module, mocked, pid_dir):
    result = server(run_module, port=5265, bind='127.0.0.1', idle_timeout=30, _ansible_check_mode=True, user='nobody')
    assert result['rc'] == 0 and result['changed'] is True and result['pid'] is None
    assert result['msg'].startswith('Check mode: an iperf3 server for one test would start on port 5265')
    assert mocked['calls'] == [['/usr/bin/iperf3', '--version']]
    pidfile = str(pid_dir / 'iperf3-5265.pid')
    nobody = pwd.getpwnam('nobody')
    prefix = ['setpriv', '--reuid=%d' % nobody.pw_uid, '--regid=%d' % nobody.pw_gid, '--clear-groups',
              '--no-new-privs', '--'] if os.geteuid() == 0 else []
    assert result['user'] == ('nobody' if os.geteuid() == 0 else None)
    assert result['command'] == prefix + [
        '/usr/bin/iperf3', '-s', '-1', '-D', '-J', '-p', '5265', '--idle-timeout', '30', '-I', pidfile, '--logfile',
        str(pid_dir / 'iperf3-5265.log'), '-B', '127.0.0.1']
    assert not pid_dir.exists()


def test_check_mode_picks_the_port_that_would_be_used(run_module, mocked):
    result = server(run_module, port=0, port_range=RANGE, idle_timeout=0, _ansible_check_mode=True)
    assert result['rc'] == 0 and RANGE[0] <= result['port'] <= RANGE[1]
    assert '--idle-timeout' not in result['command']


def test_check_mode_warns_when_iperf3_is_missing(run_module, mocked):
    mocked['bins'].clear()
    result = server(run_module, port=5265, _ansible_check_mode=True)
    assert result['rc'] == 0 and result['changed'] is True
    assert any('iperf3 is not installed' in msg for msg in result['warning_msgs'])


def test_iperf3_missing(run_module, mocked):
    mocked['bins'].clear()
    result = server(run_module, port=5265)
    assert result['rc'] == 1 and result['msg'].startswith('iperf3 was not found on this host; install the iperf3 '
                                                          'package')


def test_iperf3_too_old(run_module, mocked):
    mocked['version'] = 'iperf 3.0.11\n'
    result = server(run_module, port=5265)
    assert result['rc'] == 1 and 'older than 3.1' in result['msg']


def test_before_311_warns_that_idle_timeout_does_not_end_the_server(run_module, mocked):
    mocked['version'] = 'iperf 3.9 (cJSON 1.7.13)\n'
    result = server(run_module, port=5265, startup_timeout=0.2)
    assert any('restarts a one-off server after the idle timeout' in msg for msg in result['warning_msgs'])
    # the mocked iperf3 starts nothing, so the wait ends with a message that says where to look
    assert result['rc'] == 1 and 'did not listen on port 5265 within 0.2 s' in result['msg']
    assert 'Check the log' in result['msg']


def test_start_failure_names_idle_timeout(run_module, mocked, monkeypatch):
    def run_command(module, args, **kwargs):
        if args[-1] == '--version':
            return 0, 'iperf 3.1.3\n', ''
        return 1, '', "iperf3: unrecognized option '--idle-timeout'\n"

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    result = server(run_module, port=5265)
    assert result['rc'] == 1 and 'does not know --idle-timeout' in result['msg'] and 'idle_timeout: 0' in result['msg']


@pytest.mark.parametrize('args, text', [
    ({'port': 70000}, 'port: 70000 is out of range'),
    ({'port': 0, 'port_range': [5300, 5200]}, 'port_range: [5300, 5200] is not [first, last]'),
    ({'port': 0, 'port_range': [5300]}, 'port_range: [5300] is not [first, last]'),
    ({'port': 0, 'pidfile': '/tmp/x.pid'}, 'pidfile names one server, so give a port'),
    ({'idle_timeout': -1}, 'idle_timeout must be 0 or more'),
])
def test_bad_options(run_module, mocked, args, text):
    result = server(run_module, **args)
    assert result['rc'] == 1 and text in result['msg'] and mocked['calls'] == []


def test_refuses_a_pid_directory_others_can_write(run_module, mocked, pid_dir):
    pid_dir.mkdir()
    os.chmod(str(pid_dir), 0o777)
    result = server(run_module, port=5265)
    assert result['rc'] == 1 and 'writable by others' in result['msg']


def test_absent_never_kills_a_process_that_is_not_iperf3(run_module, mocked, pid_dir):
    pid_dir.mkdir(mode=0o700)
    pidfile = pid_dir / 'iperf3-5265.pid'
    pidfile.write_text(str(os.getpid()))                 # this test process: python, not iperf3
    result = server(run_module, port=5265, state='absent')
    assert result['rc'] == 0 and result['changed'] is False and result['stopped'] == []
    assert result['removed'] == [str(pidfile)] and not pidfile.exists()
    assert 'leftover files were removed' in result['msg']


def test_absent_without_anything_to_do(run_module, mocked):
    result = server(run_module, port=5265, state='absent')
    assert result['rc'] == 0 and result['changed'] is False and result['removed'] == []
    assert result['msg'] == 'No iperf3 server of this module was running.'


# --------------------------------------------------------------------------- real servers

@pytest.fixture
def ports():
    return free_block()


@pytest.fixture
def started(monkeypatch):
    """Pids of the servers a test starts; stopped by pid afterwards (only ours)."""
    pids = []
    yield pids
    for pid in pids:
        if iperf3_server.iperf3_process(pid):
            os.kill(pid, signal.SIGKILL)


def start(run_module, started, **args):
    args.setdefault('user', 'root')
    result = run_module(iperf3_server.main, args)
    if result.get('pid'):
        started.append(result['pid'])
    return result


def wait_gone(pid, seconds=5.0):
    deadline = time.time() + seconds
    while iperf3_server.iperf3_process(pid) and time.time() < deadline:
        time.sleep(0.1)
    return not iperf3_server.iperf3_process(pid)


@real
def test_start_listen_and_stop(run_module, pid_dir, ports, started):
    result = start(run_module, started, port=0, port_range=ports, bind='127.0.0.1', idle_timeout=60)
    assert result['rc'] == 0, result['msg']
    pid, port = result['pid'], result['port']
    assert result['changed'] is True and ports[0] <= port <= ports[1]
    assert iperf3_server.listening(pid, port)
    assert result['pidfile'] == str(pid_dir / ('iperf3-%d.pid' % port))
    assert iperf3_server.read_pid(result['pidfile']) == pid
    assert oct(os.stat(str(pid_dir)).st_mode & 0o777) == '0o700'
    assert result['msg'] == ('iperf3 server (pid %d) listens on port %d for one test; it exits after the test or '
                             'after 60 s without one.' % (pid, port))
    stopped = run_module(iperf3_server.main, {'port': port, 'state': 'absent'})
    assert stopped['rc'] == 0 and stopped['changed'] is True
    assert stopped['stopped'] == [{'pid': pid, 'pidfile': result['pidfile'], 'port': port}]
    assert wait_gone(pid, 1) and not os.path.exists(result['pidfile'])


@real
def test_second_start_replaces_a_waiting_server(run_module, pid_dir, ports, started):
    first = start(run_module, started, port=ports[0] + 1)
    assert first['rc'] == 0, first['msg']
    second = start(run_module, started, port=ports[0] + 1)
    assert second['rc'] == 0, second['msg']
    assert second['replaced_pid'] == first['pid'] and second['pid'] != first['pid']
    assert wait_gone(first['pid'], 1) and iperf3_server.listening(second['pid'], ports[0] + 1)


@real
def test_a_server_serving_a_test_is_not_killed(run_module, pid_dir, ports, started):
    """A client connected to the server (an established connection on its port, as a test's control connection
    is): a second start is refused, and the first server lives on."""
    first = start(run_module, started, port=ports[0] + 2)
    assert first['rc'] == 0, first['msg']
    client = socket.create_connection(('127.0.0.1', ports[0] + 2), timeout=5)
    try:
        deadline = time.time() + 5
        while time.time() < deadline and not iperf3_server.serving(ports[0] + 2):
            time.sleep(0.05)
        assert iperf3_server.serving(ports[0] + 2)
        second = start(run_module, started, port=ports[0] + 2)
        assert second['rc'] == 1 and 'is serving a test now' in second['msg'] and 'port: 0' in second['msg']
        assert iperf3_server.iperf3_process(first['pid'])
    finally:
        client.close()


@real
def test_idle_timeout_ends_an_unused_server(run_module, pid_dir, ports, started):
    result = start(run_module, started, port=ports[0] + 3, idle_timeout=1)
    assert result['rc'] == 0, result['msg']
    version = tuple(int(part) for part in result['iperf3_version'].split('.')[:2])
    if version < (3, 11):
        pytest.skip('iperf3 before 3.11 restarts a one-off server after the idle timeout')
    assert wait_gone(result['pid'], 5), 'the one-off server should exit after its idle timeout'
    cleaned = run_module(iperf3_server.main, {'port': ports[0] + 3, 'state': 'absent'})
    assert cleaned['rc'] == 0 and cleaned['changed'] is False and cleaned['stopped'] == []
    assert not os.path.exists(result['logfile'])


@real
def test_port_used_by_another_program(run_module, pid_dir, ports, started):
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(('0.0.0.0', ports[0] + 4))
    holder.listen(1)
    try:
        taken = start(run_module, started, port=ports[0] + 4)
        assert taken['rc'] == 1 and taken['msg'].startswith('Port %d is in use by another program' % (ports[0] + 4))
        picked = start(run_module, started, port=0, port_range=[ports[0] + 4, ports[0] + 6])
        assert picked['rc'] == 0 and picked['port'] == ports[0] + 5
    finally:
        holder.close()


@real
def test_port_zero_skips_ports_with_waiting_servers_and_absent_stops_them_all(run_module, pid_dir, ports, started):
    first = start(run_module, started, port=0, port_range=[ports[0] + 7, ports[0] + 9])
    second = start(run_module, started, port=0, port_range=[ports[0] + 7, ports[0] + 9])
    assert first['rc'] == 0 and second['rc'] == 0
    assert (first['port'], second['port']) == (ports[0] + 7, ports[0] + 8)
    gone = run_module(iperf3_server.main, {'port': 0, 'state': 'absent'})
    assert gone['rc'] == 0 and gone['changed'] is True
    assert sorted(item['pid'] for item in gone['stopped']) == sorted([first['pid'], second['pid']])
    assert wait_gone(first['pid'], 1) and wait_gone(second['pid'], 1)


def test_bind_to_an_address_this_host_does_not_have(run_module, mocked):
    result = server(run_module, port=RANGE[0] + 10, bind='192.0.2.123')
    assert result['rc'] == 1 and len(mocked['calls']) == 1          # only --version ran
    assert result['msg'].startswith('Cannot listen on port %d: 192.0.2.123 is not an address of this host'
                                    % (RANGE[0] + 10))
    assert 'Give bind an address of this host' in result['msg']
