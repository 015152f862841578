# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The WAN lab (tests/lab/wanlab.py): option checks, the delay line, clean-up.

The delay-line tests use AF_UNIX datagram socket pairs, which behave like TUN
fds (one packet per read/write), so they need neither root nor /dev/net/tun.
The due times are asserted exactly on a fake clock: one Direction of the line,
whose ingest(now) and flush(now) take the time as an argument.  The threaded
tests then run the real loop and assert only order, counts and lower bounds
(a packet is never early; a loaded machine can only make it late).  How late
the line delivers is measured by the lab benchmarks (tests/lab/benchmark.py
records late_packets, late_max_ms and iperf3's mean RTT per run), not asserted.
The tests at the end build a real netns lab and are skipped unless running as
root with /dev/net/tun and ip(8).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'lab'))

import wanlab  # noqa: E402  pylint: disable=wrong-import-position,import-error
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp  # noqa: E402  pylint: disable=wrong-import-position

A_IP = bytes([198, 18, 0, 1])
B_IP = bytes([198, 18, 0, 2])


def ipv4(size, src=A_IP, dst=B_IP, ident=0):
    """A packet of ``size`` bytes that looks like IPv4 (enough for the delay line's address check)."""
    header = struct.pack('!BBHHHBBH4s4s', 0x45, 0, size, ident & 0xffff, 0, 64, 17, 0, src, dst)
    return header + b'\0' * (size - len(header))


def ident_of(packet):
    return struct.unpack('!H', packet[4:6])[0]


# --------------------------------------------------------------------------- validation

def test_defaults():
    cfg = wanlab.validate()
    assert cfg['rate_bps'] == 10 ** 9
    assert cfg['rtt_ms'] == 98.0
    assert cfg['owd_s'] == pytest.approx(0.049)
    assert cfg['loss_pct'] == 0
    assert cfg['mtu'] == cfg['path_mtu'] == 9000
    assert cfg['bdp_bytes'] == bdp.bdp_bytes('1g', 98) == 12250000
    assert cfg['queue_bytes'] == 12250000          # auto = 1 x BDP
    assert cfg['hosts'] == 'containers'
    assert cfg['stock_cc'] == 'cubic'


def test_queue_auto_is_at_least_64_packets():
    cfg = wanlab.validate(rate='10m', rtt=1, mtu=1500)
    assert cfg['queue_bytes'] == 64 * 1500


@pytest.mark.parametrize('value, expected', [('4000000', 4000000), ('4m', 4000000), ('4MiB', 4 * 2 ** 20),
                                             (50000, 50000), ('auto', 12250000)])
def test_queue_values(value, expected):
    assert wanlab.validate(queue=value)['queue_bytes'] == expected


def test_rate_and_rtt_come_from_module_utils_bdp():
    """The lab has no parser of its own: its messages are bdp.parse_rate/parse_rtt's, named after the option."""
    for kwargs, parser, value, name in (({'rate': '1GB'}, bdp.parse_rate, '1GB', '--rate'),
                                        ({'rate': '0'}, bdp.parse_rate, '0', '--rate'),
                                        ({'rtt': '-5'}, bdp.parse_rtt, '-5', '--rtt'),
                                        ({'rtt': 0}, bdp.parse_rtt, 0, '--rtt')):
        with pytest.raises(bdp.UnitError) as expected:
            parser(value, name)
        with pytest.raises(wanlab.LabError) as got:
            wanlab.validate(**kwargs)
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize('kwargs, option, shown, accepted', [
    ({'rate': '0'}, '--rate', "'0'", 'above zero'),
    ({'rate': 'fast'}, '--rate', "'fast'", '1g'),
    ({'rate': '1GB'}, '--rate', "'1GB'", 'bits per second'),
    ({'rtt': 0}, '--rtt', '0', 'above zero'),
    ({'rtt': '-98'}, '--rtt', "'-98'", 'above zero'),
    ({'rtt': '98min'}, '--rtt', "'98min'", 'milliseconds'),
    ({'loss': 101}, '--loss', '101', '0 to 100'),
    ({'loss': '100.5%'}, '--loss', "'100.5%'", '0 to 100'),
    ({'loss': -0.1}, '--loss', '-0.1', '0 to 100'),
    ({'loss': 'some'}, '--loss', "'some'", '0 to 100'),
    ({'loss': float('nan')}, '--loss', 'nan', '0 to 100'),
    ({'mtu': 575}, '--mtu', '575', '576 to 65535'),
    ({'mtu': 65536}, '--mtu', '65536', '576 to 65535'),
    ({'mtu': '9k'}, '--mtu', "'9k'", '576 to 65535'),
    ({'path_mtu': 500}, '--path-mtu', '500', '576 to 65535'),
    ({'queue': 100}, '--queue', '100', 'auto'),
    ({'queue': '12 apples'}, '--queue', "'12 apples'", 'auto'),
    ({'hosts': 'vms'}, '--hosts', "'vms'", 'containers, netns'),
    ({'name': 'wan-a'}, '--name', "'wan-a'", 'bdp-lab'),
    ({'name': 'bdp-lab-A'}, '--name', "'bdp-lab-A'", 'bdp-lab'),
    ({'seed': 'x'}, '--seed', "'x'", 'whole number'),
    ({'rt_priority': 100}, '--rt-priority', '100', 'SCHED_FIFO'),
    ({'txqueuelen': 0}, '--txqueuelen', '0', 'packet count'),
])
def test_bad_options_name_option_value_and_accepted(kwargs, option, shown, accepted):
    with pytest.raises(wanlab.LabError) as err:
        wanlab.validate(**kwargs)
    message = str(err.value)
    assert message.startswith(option + ': '), message
    assert shown in message, message
    assert accepted in message, message


def test_loss_accepts_percent_sign_and_bounds():
    assert wanlab.validate(loss='0.1%')['loss_pct'] == 0.1
    assert wanlab.validate(loss=100)['loss_pct'] == 100
    assert wanlab.validate(loss=0)['loss_pct'] == 0


def test_cli_refuses_bad_option_before_creating_anything(tmp_path, monkeypatch, capsys):
    def forbidden(*_a, **_k):
        raise AssertionError('nothing may run before the options are checked')
    monkeypatch.setattr(subprocess, 'run', forbidden)
    monkeypatch.setattr(subprocess, 'Popen', forbidden)
    monkeypatch.setattr(wanlab, 'write_sysctl', forbidden)
    for argv in (['up', '--rate', '0'], ['up', '--rtt', '-1'], ['up', '--loss', '150'], ['up', '--mtu', '100'],
                 ['up', '--path-mtu', '500'], ['up', '--rate', 'lots']):
        assert wanlab.main(argv + ['--state-dir', str(tmp_path), '--hosts', 'netns']) == 2
        err = capsys.readouterr().err
        assert 'wanlab: error: %s: ' % argv[1] in err, err
    assert os.listdir(str(tmp_path)) == []


def test_cli_name_and_state_dir_after_the_subcommand():
    args = wanlab.parse_args(['up', '--name', 'bdp-lab-x', '--state-dir', '/tmp/x', '--rate', '2g'])
    assert (args.name, args.state_dir, args.rate) == ('bdp-lab-x', '/tmp/x', '2g')
    args = wanlab.parse_args(['--name', 'bdp-lab-y', 'status'])
    assert args.name == 'bdp-lab-y'
    args = wanlab.parse_args(['status'])
    assert (args.name, args.state_dir) == ('bdp-lab', wanlab.DEFAULT_STATE_DIR)
    args = wanlab.parse_args(['exec', 'A', '--', 'ip', '-br', 'addr'])
    assert wanlab._strip_dashdash(args.argv) == ['ip', '-br', 'addr']


# --------------------------------------------------------------------------- the delay line on a fake clock

class Bench(object):
    """Direction a_to_b of a DelayLine (its loop not running) between two datagram socket pairs.

    The test is the clock: it calls ingest(now) and flush(now) with times of its choosing, so due times are
    asserted exactly and nothing sleeps.  The config is what wanlab.validate() returns, as the line gets it.
    """

    def __init__(self, **options):
        self.config = wanlab.validate(**dict({'hosts': 'netns'}, **options))
        self.sender, tun_in = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        tun_out, self.receiver = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socks = (self.sender, tun_in, tun_out, self.receiver)
        for sock in self._socks:
            sock.setblocking(False)         # like the TUN fds; a full queue raises rather than hanging the test
        self.line = wanlab.DelayLine(tun_in.fileno(), tun_out.fileno(), self.config)
        self.d = self.line.a_to_b

    def send(self, *packets):
        for packet in packets:
            self.sender.send(packet)

    def delivered(self):
        """The idents of the packets the direction has written so far (and not yet collected)."""
        got = []
        while True:
            try:
                got.append(ident_of(self.receiver.recv(70000)))
            except BlockingIOError:
                return got

    def close(self):
        self.line.close()
        for sock in self._socks:
            sock.close()


@contextlib.contextmanager
def bench(**options):
    b = Bench(**options)
    try:
        yield b
    finally:
        b.close()


SER_1000_AT_1G = 1000 * 8 / 1e9        # s: a 1000-byte packet on the wire at 1 Gbit/s (8 us)


@pytest.mark.parametrize('rtt, owd', [(60, 0.030), (98, 0.049), ('0.5', 0.00025)])
def test_direction_one_way_delay_is_half_the_rtt(rtt, owd):
    with bench(rate='1g', rtt=rtt, mtu=1500) as b:
        b.send(ipv4(1000, ident=1))
        assert b.d.ingest(100.0) == 1
        due = b.d.flush(100.0)
        # serialised at the rate, then held for half the RTT
        assert due == pytest.approx(100.0 + SER_1000_AT_1G + owd, abs=1e-9)
        assert b.d.flush(due - 1e-6) == due              # a microsecond early: still held
        assert b.delivered() == []
        assert b.d.flush(due) is None                    # due: written
        assert b.delivered() == [1]
        c = b.d.counters()
        assert (c['packets'], c['bytes'], c['delivered_packets'], c['delivered_bytes']) == (1, 1000, 1, 1000)
        assert (c['in_flight'], c['late_packets']) == (0, 0)


def test_direction_serialises_at_the_rate():
    # 8 Mbit/s = 1 byte/us: a 1000-byte packet takes 1 ms on the wire; one-way delay 1 ms
    with bench(rate='8m', rtt=2, mtu=1500) as b:
        b.send(*[ipv4(1000, ident=i) for i in range(5)])
        assert b.d.ingest(50.0) == 5
        dues, order = [], []
        due = b.d.flush(50.0)
        while due is not None:
            assert b.d.flush(due - 1e-6) == due and b.delivered() == []
            dues.append(due)
            due = b.d.flush(due)
            order += b.delivered()
        assert order == [0, 1, 2, 3, 4]                  # one at a time, in the order they came
        assert dues == pytest.approx([50.0 + 0.001 * (i + 1) + 0.001 for i in range(5)], abs=1e-9)
        # the link is idle again: a later packet departs one serialisation after it arrives, not after the others
        b.send(ipv4(1000, ident=5))
        b.d.ingest(60.0)
        assert b.d.flush(60.0) == pytest.approx(60.0 + 0.001 + 0.001, abs=1e-9)


def test_direction_lowered_delay_never_reorders():
    with bench(rate='1g', rtt=600, mtu=1500) as b:         # one-way delay 300 ms
        b.send(ipv4(1000, ident=1))
        b.d.ingest(10.0)
        first = b.d.flush(10.0)
        assert first == pytest.approx(10.0 + SER_1000_AT_1G + 0.300, abs=1e-9)
        # the control socket's 'set' (DelayLine.set_link) with a validated link: one-way delay 1 ms
        b.line.set_link(wanlab.validate(rate='1g', rtt=2, mtu=1500, hosts='netns'))
        assert b.d.owd == b.line.b_to_a.owd == 0.001
        b.send(ipv4(1000, ident=2))
        b.d.ingest(10.005)                                  # on its own due at 10.006008: it may not overtake
        assert [due for due, dummy in b.d.q] == [first, first]
        assert b.d.flush(10.006008) == first and b.delivered() == []
        assert b.d.flush(first) is None
        assert b.delivered() == [1, 2]
        # once the earlier packets are out, the new delay applies in full
        b.send(ipv4(1000, ident=3))
        b.d.ingest(11.0)
        assert b.d.flush(11.0) == pytest.approx(11.0 + SER_1000_AT_1G + 0.001, abs=1e-9)


def test_direction_tail_drops_over_the_queue_limit():
    # 1 Mbit/s: a 1000-byte packet takes 8 ms on the wire; the bottleneck queue holds 3000 bytes
    with bench(rate='1m', rtt=2, mtu=1000, queue=3000) as b:
        b.send(*[ipv4(1000, ident=i) for i in range(10)])
        assert b.d.ingest(20.0) == 10
        c = b.d.counters()
        assert (c['packets'], c['in_flight'], c['queue_drops'], c['queue_max_bytes']) == (10, 3, 7, 3000)
        # 8 ms later the first has been serialised: the queue has room for exactly one more
        b.send(ipv4(1000, ident=10), ipv4(1000, ident=11))
        assert b.d.ingest(20.008) == 2
        c = b.d.counters()
        assert (c['packets'], c['in_flight'], c['queue_drops'], c['queue_max_bytes']) == (12, 4, 8, 3000)
        dues = []
        due = b.d.flush(20.008)
        while due is not None:
            dues.append(due)
            due = b.d.flush(due)
        assert b.delivered() == [0, 1, 2, 10]
        assert dues == pytest.approx([20.0 + 0.008 * (i + 1) + 0.001 for i in range(4)], abs=1e-9)
        c = b.d.counters()
        assert (c['delivered_packets'], c['random_drops'], c['oversize_drops'], c['write_errors']) == (4, 0, 0, 0)


def test_direction_counts_late_writes():
    with bench(rate='1g', rtt=2, mtu=1500) as b:
        b.send(ipv4(1000, ident=1))
        b.d.ingest(5.0)
        due = b.d.flush(5.0)
        b.d.flush(due + wanlab.LATE_S / 2)                  # within LATE_S: on time
        b.send(ipv4(1000, ident=2))
        b.d.ingest(6.0)
        due = b.d.flush(6.0)
        b.d.flush(due + 0.005)                               # 5 ms after its due time
        assert b.delivered() == [1, 2]
        c = b.d.counters()
        assert (c['delivered_packets'], c['late_packets'], c['late_max_ms']) == (2, 1, 5.0)


# --------------------------------------------------------------------------- the delay line's own loop (threaded)

WAIT = 60.0      # s: how long a threaded test waits for what it expects (a deadline, never an assertion)


class Wire(object):
    """A DelayLine between two datagram socket pairs standing in for the TUN devices of A and B."""

    def __init__(self, control_name=None, **options):
        self.config = wanlab.validate(**dict({'hosts': 'netns'}, **options))
        self.host_a, tun_a = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.host_b, tun_b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for sock in (self.host_a, self.host_b, tun_a, tun_b):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        tun_a.setblocking(False)
        tun_b.setblocking(False)
        self._tuns = (tun_a, tun_b)
        self.control = None
        if control_name:
            self.control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.control.bind(wanlab.control_address(control_name))
            self.control.listen(4)
        self.line = wanlab.DelayLine(tun_a.fileno(), tun_b.fileno(), self.config, control=self.control)
        self.thread = threading.Thread(target=self.line.run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def close(self):
        self.line.stop()
        self.thread.join(5)
        assert not self.thread.is_alive()
        self.line.close()
        for sock in (self.host_a, self.host_b) + self._tuns + ((self.control,) if self.control else ()):
            sock.close()

    @staticmethod
    def recv(sock, count, limit=WAIT):
        """``count`` packets from ``sock``, each with the time it was read (never before it arrived)."""
        got = []
        sock.settimeout(limit)
        while len(got) < count:
            packet = sock.recv(70000)
            got.append((time.monotonic(), packet))
        return got

    def settle(self, direction, sent, limit=WAIT):
        """The counters of ``direction`` once the line has written or dropped every one of the ``sent`` packets.

        The line's thread counts a burst after writing it, so a reader may see the packets first: this waits
        (for a loaded machine, up to ``limit`` s) instead of reading the counters at once.
        """
        deadline = time.monotonic() + limit
        while True:
            c = self.line.counters()[direction]
            done = c['delivered_packets'] + c['write_errors'] + c['random_drops'] + c['oversize_drops'] \
                + c['queue_drops'] + c['foreign_drops']
            if (c['packets'] == done == sent and c['in_flight'] == 0) or time.monotonic() > deadline:
                return c
            time.sleep(0.005)

    @staticmethod
    def waiting(sock):
        """The packets already written to ``sock`` (without waiting for more)."""
        got = []
        sock.setblocking(False)
        while True:
            try:
                got.append(sock.recv(70000))
            except BlockingIOError:
                return got


@contextlib.contextmanager
def wire(start=True, **options):
    w = Wire(**options)
    if start:
        w.start()
    try:
        yield w
    finally:
        w.close()


def test_one_way_delay_is_half_the_rtt():
    with wire(rate='1g', rtt=60, mtu=1500) as w:
        sent = time.monotonic()
        w.host_a.send(ipv4(1000))
        (arrived, pkt), = w.recv(w.host_b, 1)
        assert pkt == ipv4(1000)
        # Never early: the line holds a packet for half the RTT.  No upper bound: a loaded machine delays the
        # loop's wake-up; the exact due time is test_direction_one_way_delay_is_half_the_rtt's (fake clock), and
        # how late the line delivers is measured by the lab benchmarks (tests/lab/benchmark.py), not asserted.
        assert arrived - sent >= 0.030
        sent = time.monotonic()
        w.host_b.send(ipv4(100, src=B_IP, dst=A_IP))
        (arrived, pkt), = w.recv(w.host_a, 1)
        assert arrived - sent >= 0.030
        c = w.settle('a_to_b', 1)
        assert c['packets'] == c['delivered_packets'] == 1 and c['bytes'] == 1000
        c = w.settle('b_to_a', 1)
        assert c['packets'] == c['delivered_packets'] == 1 and c['bytes'] == 100


def test_serialisation_at_the_emulated_rate_and_fifo_order():
    # 8 Mbit/s = 1 byte/us: five 1000-byte packets need 5 ms on the wire
    with wire(start=False, rate='8m', rtt='0.002', mtu=1500) as w:
        for i in range(5):
            w.host_a.send(ipv4(1000, ident=i))
        sent = time.monotonic()
        w.start()
        got = w.recv(w.host_b, 5)
        assert [ident_of(p) for dummy, p in got] == [0, 1, 2, 3, 4]
        # lower bounds only (arrival times can only be late, never early); the exact departures 1 ms apart are
        # test_direction_serialises_at_the_rate's (fake clock)
        assert got[-1][0] - sent >= 0.0049
        assert got[0][0] - sent >= 0.0009
        assert w.settle('a_to_b', 5)['delivered_packets'] == 5 and w.waiting(w.host_b) == []


def test_bottleneck_queue_tail_drop():
    # 1 Mbit/s, 3000-byte queue: of ten 1000-byte packets read in one batch, three fit
    with wire(start=False, rate='1m', rtt='0.002', mtu=1000, queue=3000) as w:
        for i in range(10):
            w.host_a.send(ipv4(1000, ident=i))
        w.start()
        c = w.settle('a_to_b', 10)
        assert [ident_of(p) for p in w.waiting(w.host_b)] == [0, 1, 2]
        assert (c['packets'], c['delivered_packets'], c['queue_drops']) == (10, 3, 7)
        assert c['random_drops'] == c['oversize_drops'] == c['write_errors'] == 0
        assert c['queue_max_bytes'] <= 3000


def test_path_mtu_black_hole():
    with wire(rate='1g', rtt='0.002', mtu=9000, path_mtu=1500) as w:
        w.host_a.send(ipv4(1501))
        w.host_a.send(ipv4(1500, ident=7))
        c = w.settle('a_to_b', 2)
        assert [ident_of(p) for p in w.waiting(w.host_b)] == [7]
        assert c['oversize_drops'] == 1 and c['delivered_packets'] == 1


def test_only_lab_addresses_cross():
    with wire(rate='1g', rtt='0.002', mtu=1500) as w:
        w.host_a.send(ipv4(100, dst=bytes([10, 88, 0, 1])))          # podman's default bridge
        w.host_a.send(ipv4(100, src=bytes([192, 168, 1, 1])))
        w.host_a.send(b'\x60' + b'\0' * 59)                            # IPv6
        w.host_a.send(ipv4(100, dst=bytes([198, 19, 255, 1]), ident=3))  # still 198.18.0.0/15
        c = w.settle('a_to_b', 4)
        assert [ident_of(p) for p in w.waiting(w.host_b)] == [3]
        assert c['foreign_drops'] == 3


def test_random_loss_all_none_and_seeded():
    with wire(start=False, rate='1g', rtt='0.002', mtu=1500, loss=100) as w:
        for i in range(20):
            w.host_a.send(ipv4(200, ident=i))
        w.start()
        assert w.settle('a_to_b', 20)['random_drops'] == 20
        assert w.waiting(w.host_b) == []

    def survivors(seed):
        with wire(start=False, rate='1g', rtt='0.002', mtu=1500, loss=50, seed=seed) as w:
            for i in range(60):
                w.host_a.send(ipv4(200, ident=i))
            w.start()
            c = w.settle('a_to_b', 60)
            assert c['random_drops'] + c['delivered_packets'] == 60
            return [ident_of(p) for p in w.waiting(w.host_b)]
    first = survivors(42)
    assert first == survivors(42)
    assert 10 < len(first) < 50
    assert first != survivors(43)


def test_directions_are_independent():
    # A -> B is full (queue drops), B -> A is untouched
    with wire(start=False, rate='1m', rtt='0.002', mtu=1000, queue=1000) as w:
        for i in range(5):
            w.host_a.send(ipv4(1000, ident=i))
            w.host_b.send(ipv4(100, src=B_IP, dst=A_IP, ident=i))
        w.start()
        assert w.settle('a_to_b', 5)['queue_drops'] == 4
        assert w.settle('b_to_a', 5)['queue_drops'] == 0
        assert len(w.waiting(w.host_b)) == 1
        assert len(w.waiting(w.host_a)) == 5


def test_control_socket_set_link_counters_reset_and_no_reordering():
    name = 'bdp-lab-pytest-ctl%d' % os.getpid()
    # the old one-way delay (300 ms) is far from the new one (1 ms), so that a loaded machine cannot blur them
    with wire(control_name=name, rate='1g', rtt=600, mtu=1500) as w:
        assert wanlab.control_request(name, {'op': 'ping'})['ok']
        w.host_a.send(ipv4(100, ident=1))                  # due in 300 ms
        new = wanlab.validate(rate='1g', rtt=2, mtu=1500)
        reply = wanlab.control_request(name, {'op': 'set', 'link': new})
        assert reply['counters']['link']['rtt_ms'] == 2
        assert w.line.a_to_b.owd == w.line.b_to_a.owd == 0.001     # the new one-way delay, in both directions
        time.sleep(0.005)
        w.host_a.send(ipv4(100, ident=2))                  # due in 1 ms, but may not overtake
        got = w.recv(w.host_b, 2)
        assert [ident_of(p) for dummy, p in got] == [1, 2]
        # The due times under the new delay are test_direction_lowered_delay_never_reorders's (fake clock): here only
        # that the packet arrives, no sooner than the new one-way delay.
        sent = time.monotonic()
        w.host_a.send(ipv4(100, ident=3))
        (arrived, dummy), = w.recv(w.host_b, 1)
        assert arrived - sent >= 0.001
        w.settle('a_to_b', 3)
        counters = wanlab.control_request(name, {'op': 'counters'})['counters']
        assert counters['a_to_b']['delivered_packets'] == 3
        assert wanlab.control_request(name, {'op': 'reset'})['counters']['a_to_b']['packets'] == 0
        with pytest.raises(wanlab.LabError):
            wanlab.control_request(name, {'op': 'explode'})


def test_delay_line_carries_a_stream_in_order():
    """2000 MTU-size packets at an unlimited rate: every one is delivered, in order.

    An AF_UNIX datagram socket queues only net.unix.max_dgram_qlen (10)
    packets, unlike a TUN device, so the sender keeps at most 8 outstanding.
    """
    with wire(rate='100g', rtt='0.002', mtu=9000) as w:
        w.host_b.settimeout(WAIT)
        received = []
        sent = 0
        while len(received) < 2000:
            while sent < 2000 and sent - len(received) < 8:
                w.host_a.send(ipv4(9000, ident=sent))
                sent += 1
            received.append(ident_of(w.host_b.recv(70000)))
        assert received == list(range(2000))
        c = w.settle('a_to_b', 2000)
        assert c['write_errors'] == 0 and c['queue_drops'] == 0
        assert c['delivered_bytes'] == 2000 * 9000


# --------------------------------------------------------------------------- host sysctl restore and clean-up

def test_restore_host_sysctls_only_if_unchanged_since(monkeypatch):
    live = {}
    monkeypatch.setattr(wanlab, 'read_sysctl', lambda key, netns_path=None: live[key])
    monkeypatch.setattr(wanlab, 'write_sysctl', lambda key, value, netns_path=None: live.__setitem__(key, value))
    record = {wanlab.ALLOWED_CC_KEY: {'original': 'reno bbr', 'set': 'reno bbr cubic'}}
    live[wanlab.ALLOWED_CC_KEY] = 'reno bbr cubic'
    wanlab.restore_host_sysctls(record)
    assert live[wanlab.ALLOWED_CC_KEY] == 'reno bbr'
    live[wanlab.ALLOWED_CC_KEY] = 'reno bbr cubic htcp'             # someone else changed it meanwhile
    notes = wanlab.restore_host_sysctls(record)
    assert live[wanlab.ALLOWED_CC_KEY] == 'reno bbr cubic htcp'
    assert 'left alone' in notes[0]


def test_host_record_survives_a_lost_state_dir(tmp_path, monkeypatch):
    """What up changed on the host is also kept in a per-boot record; down restores from it, leftovers shows it."""
    record = str(tmp_path / 'host.json')
    monkeypatch.setattr(wanlab, 'HOST_RECORD', record)
    live = {wanlab.ALLOWED_CC_KEY: 'reno bbr cubic'}
    monkeypatch.setattr(wanlab, 'read_sysctl', lambda key, netns_path=None: live[key])
    monkeypatch.setattr(wanlab, 'write_sysctl', lambda key, value, netns_path=None: live.__setitem__(key, value))
    name = 'bdp-lab-pytest-rec%d' % os.getpid()
    monkeypatch.setattr(wanlab, 'list_netns', lambda prefix=wanlab.PREFIX: [])        # no other lab is up
    monkeypatch.setattr(wanlab, 'list_containers', lambda prefix=wanlab.PREFIX: [])
    wanlab._update_host_record(name, {wanlab.ALLOWED_CC_KEY: {'original': 'reno bbr', 'set': 'reno bbr cubic'}})
    assert any('changed by lab %s' % name in f for f in wanlab.leftovers(str(tmp_path / 'state')))
    done = wanlab.teardown(name, str(tmp_path / 'state'))
    assert live[wanlab.ALLOWED_CC_KEY] == 'reno bbr'
    assert any('restored' in d for d in done)
    assert not os.path.exists(record)
    assert not [f for f in wanlab.leftovers(str(tmp_path / 'state')) if name in f]


def test_host_sysctls_pass_to_a_lab_that_is_still_up(tmp_path, monkeypatch):
    """A lab that goes down while another is up leaves CUBIC allowed: the other lab's containers still need it."""
    record = str(tmp_path / 'host.json')
    monkeypatch.setattr(wanlab, 'HOST_RECORD', record)
    live = {wanlab.ALLOWED_CC_KEY: 'reno bbr cubic'}
    monkeypatch.setattr(wanlab, 'read_sysctl', lambda key, netns_path=None: live[key])
    monkeypatch.setattr(wanlab, 'write_sysctl', lambda key, value, netns_path=None: live.__setitem__(key, value))
    first, second = 'bdp-lab-pytest-first%d' % os.getpid(), 'bdp-lab-pytest-second%d' % os.getpid()
    up = ['%s-a' % second, '%s-b' % second]
    monkeypatch.setattr(wanlab, 'list_netns', lambda prefix=wanlab.PREFIX: list(up))
    monkeypatch.setattr(wanlab, 'list_containers', lambda prefix=wanlab.PREFIX: [])
    entry = {wanlab.ALLOWED_CC_KEY: {'original': 'reno bbr', 'set': 'reno bbr cubic'}}
    wanlab._update_host_record(first, entry)
    done = wanlab.teardown(first, str(tmp_path / 'state'))
    assert live[wanlab.ALLOWED_CC_KEY] == 'reno bbr cubic'
    assert 'host sysctls %s left to lab %s, which is still up' % (wanlab.ALLOWED_CC_KEY, second) in done
    assert wanlab._load_host_record(record) == {second: entry}
    del up[:]
    done = wanlab.teardown(second, str(tmp_path / 'state'))          # the last lab down restores
    assert live[wanlab.ALLOWED_CC_KEY] == 'reno bbr'
    assert not os.path.exists(record)


def test_teardown_of_nothing_is_idempotent(tmp_path):
    name = 'bdp-lab-pytest-none%d' % os.getpid()
    assert wanlab.teardown(name, str(tmp_path)) == []
    assert wanlab.teardown(name, str(tmp_path)) == []


def test_state_file_round_trip(tmp_path):
    wanlab.save_state(str(tmp_path), 'bdp-lab-x', {'a': 1})
    assert wanlab.load_state(str(tmp_path), 'bdp-lab-x') == {'a': 1}
    assert wanlab.load_state(str(tmp_path), 'bdp-lab-y') is None
    assert 'state file %s' % os.path.join(str(tmp_path), 'bdp-lab-x.json') in wanlab.leftovers(str(tmp_path))


# --------------------------------------------------------------------------- a real lab (netns), root only

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists('/dev/net/tun') or shutil.which('ip') is None,
    reason='needs root, /dev/net/tun and ip(8)')


def _mine(found, name):
    return [f for f in found if name in f]


@needs_root
def test_netns_lab_end_to_end(tmp_path):
    name = 'bdp-lab-pytest%d' % (os.getpid() % 100000)
    allowed_before = wanlab.read_sysctl(wanlab.ALLOWED_CC_KEY)
    lab = wanlab.Lab(rate='100m', rtt=20, mtu=9000, hosts='netns', name=name, state_dir=str(tmp_path), seed=1)
    try:
        lab.up()
        assert lab.state['probe_rtt_ms'] >= 20
        for host in 'AB':
            assert lab.sysctl(host, 'net.ipv4.tcp_rmem') == '4096 131072 6291456'
            assert lab.sysctl(host, 'net.ipv4.tcp_wmem') == '4096 16384 4194304'
            assert lab.sysctl(host, 'net.ipv4.tcp_congestion_control') == 'cubic'
        assert 'cubic' in wanlab.read_sysctl(wanlab.ALLOWED_CC_KEY).split()
        out = lab.exec('A', ['ip', '-j', 'addr', 'show', 'dev', 'wan0'], check=True).stdout
        info = json.loads(out)[0]
        assert info['mtu'] == 9000
        assert [(a['local'], a['prefixlen']) for a in info['addr_info'] if a['family'] == 'inet'] == [('198.18.0.1', 30)]
        assert not [a for a in info['addr_info'] if a['family'] == 'inet6']
        routes = lab.exec('A', ['ip', '-j', 'route'], check=True).stdout
        assert [r['dst'] for r in json.loads(routes)] == ['198.18.0.0/30']

        # a TCP transfer over the link, sockets made in each namespace from this process
        with wanlab.in_netns(lab.netns_path('B')):
            server = socket.create_server(('198.18.0.2', 0))
        port = server.getsockname()[1]
        with wanlab.in_netns(lab.netns_path('A')):
            client = socket.socket()
        payload = os.urandom(1 << 20)
        start = time.monotonic()
        client.connect(('198.18.0.2', port))
        assert time.monotonic() - start >= 0.020
        conn = server.accept()[0]
        sender = threading.Thread(target=client.sendall, args=(payload,))
        sender.start()
        got = b''
        conn.settimeout(20)
        while len(got) < len(payload):
            got += conn.recv(1 << 20)
        sender.join()
        assert got == payload
        for sock in (client, conn, server):
            sock.close()
        c = lab.counters()
        assert c['a_to_b']['bytes'] > len(payload)
        for direction in ('a_to_b', 'b_to_a'):
            assert c[direction]['random_drops'] == c[direction]['oversize_drops'] == 0
            assert c[direction]['write_errors'] == 0
        assert c['kernel']['A']['tx_dropped'] == c['kernel']['B']['tx_dropped'] == 0

        # change the link in place: longer RTT, 1500-byte path MTU (black hole for bigger packets)
        lab.set_link(rtt=60, path_mtu=1500)
        assert lab.probe_rtt() >= 0.060
        with wanlab.in_netns(lab.netns_path('B')):
            udp_b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            udp_b.bind(('198.18.0.2', 0))
        with wanlab.in_netns(lab.netns_path('A')):
            udp_a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp_a.sendto(b'x' * 4000, udp_b.getsockname())
        udp_a.sendto(b'y' * 1000, udp_b.getsockname())
        udp_b.settimeout(2)
        assert udp_b.recv(9000) == b'y' * 1000
        udp_a.close()
        udp_b.close()
        assert lab.counters()['a_to_b']['oversize_drops'] == 1

        status = wanlab.status(name, str(tmp_path))
        assert status['up'] and status['config']['rtt_ms'] == 60 and status['config']['path_mtu'] == 1500
        assert wanlab.main(['status', '--name', name, '--state-dir', str(tmp_path)]) == 0
    finally:
        lab.down()
    assert not os.path.exists('/run/netns/%s-a' % name)
    assert not wanlab.delay_line_pids(name)
    assert wanlab.read_sysctl(wanlab.ALLOWED_CC_KEY) == allowed_before
    assert _mine(wanlab.leftovers(str(tmp_path)), name) == []
    assert lab.down() == []                                 # idempotent
    assert wanlab.status(name, str(tmp_path))['up'] is False


@needs_root
def test_failed_up_removes_what_it_created(tmp_path, monkeypatch):
    name = 'bdp-lab-pytestf%d' % (os.getpid() % 100000)
    allowed_before = wanlab.read_sysctl(wanlab.ALLOWED_CC_KEY)

    def broken(self, host):
        raise wanlab.LabError('injected failure on %s' % host)
    monkeypatch.setattr(wanlab.Lab, '_configure_link', broken)
    lab = wanlab.Lab(rate='100m', rtt=10, hosts='netns', name=name, state_dir=str(tmp_path))
    with pytest.raises(wanlab.LabError, match='injected'):
        lab.up()
    assert _mine(wanlab.leftovers(str(tmp_path)), name) == []
    assert wanlab.read_sysctl(wanlab.ALLOWED_CC_KEY) == allowed_before


@needs_root
def test_sigterm_during_up_removes_what_it_created(tmp_path, monkeypatch):
    name = 'bdp-lab-pytests%d' % (os.getpid() % 100000)

    def interrupted(self, host):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
        raise AssertionError('the signal handler should have interrupted up()')
    monkeypatch.setattr(wanlab.Lab, '_configure_link', interrupted)
    lab = wanlab.Lab(rate='100m', rtt=10, hosts='netns', name=name, state_dir=str(tmp_path))
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        lab.up()
    assert signal.getsignal(signal.SIGTERM) == handler
    assert _mine(wanlab.leftovers(str(tmp_path)), name) == []


@needs_root
def test_down_finds_leftovers_without_state(tmp_path):
    """A stale or deleted state file does not stop down: it finds <name>-a/-b and the delay line by name."""
    name = 'bdp-lab-pytestd%d' % (os.getpid() % 100000)
    lab = wanlab.Lab(rate='100m', rtt=10, hosts='netns', name=name, state_dir=str(tmp_path), stock_cc='reno')
    lab.up()
    try:
        os.unlink(wanlab.state_file(str(tmp_path), name))
        assert _mine(wanlab.leftovers(str(tmp_path)), name)
    finally:
        done = wanlab.teardown(name, str(tmp_path))
    assert any('stopped delay line' in d for d in done)
    assert any('deleted netns' in d for d in done)
    assert _mine(wanlab.leftovers(str(tmp_path)), name) == []
