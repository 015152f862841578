# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The path proof: probe parsing, bisection, the verdict and its messages, the TCP exchange and listener."""

from __future__ import annotations

import re
import socket
import struct
import subprocess
import sys

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuproof


class FakePath(object):
    """A path that carries packets up to ``path_mtu`` bytes (IPv4), answering probes like IcmpProber.probe."""

    def __init__(self, path_mtu, reachable=True, too_big=None, rtt_ms=20.0):
        self.path_mtu = path_mtu
        self.reachable = reachable
        self.too_big = too_big
        self.rtt_ms = rtt_ms
        self.sizes = []

    def __call__(self, payload, count, timeout):
        self.sizes.append(payload)
        fits = self.reachable and payload + 28 <= self.path_mtu
        return {'payload': payload, 'packet': payload + 28, 'sent': count, 'received': 1 if fits else 0,
                'rtt_ms': self.rtt_ms if fits else None, 'error': None,
                'too_big_mtu': self.too_big if not fits and self.reachable else None}


def exchange(snd_mss=8948, rcv_mss=8948, echoed=None, ran=True, reason=None, retrans=0):
    def run(port, timeout):
        result = {'ran': ran, 'port': port, 'bytes': 262144, 'echoed': 262144 if echoed is None else echoed,
                  'reason': reason, 'seconds': 0.1}
        if ran:
            result.update(snd_mss=snd_mss, rcv_mss=rcv_mss, total_retrans=retrans, timestamps=True)
        return result
    return run


@pytest.fixture
def prove(monkeypatch):
    """mtuproof.prove with its ICMP prober replaced by a fake path (``prober=``); the product always probes for real."""
    def run(*args, **kwargs):
        path = kwargs.pop('prober')

        class Prober(object):
            def __init__(self, address, family):
                self.probe = path

            def close(self):
                pass

        monkeypatch.setattr(mtuproof, 'IcmpProber', Prober)
        return mtuproof.prove(*args, **kwargs)
    return run


def test_bisect_finds_the_boundary_within_the_step():
    ok, bad, probed = mtuproof.bisect(lambda size: size <= 1472, 1472, 8972, step=8)
    assert ok == 1472 and 1472 < bad <= 1480
    assert len(probed) <= 12


def test_bisect_stops_after_max_probes():
    ok, bad, probed = mtuproof.bisect(lambda size: size <= 4000, 56, 65000, step=1, max_probes=5)
    assert len(probed) == 5 and ok <= 4000 < bad


def test_proof_passes_with_icmp_and_tcp_at_full_size(prove):
    path = FakePath(9000)
    result = prove('198.18.0.2', 4, 9000, 1500, port=45219, prober=path, exchange=exchange())
    assert result['ok']
    assert path.sizes == [56, 8972]                 # a small probe, then the full size only
    assert result['summary'] == ('9000-byte DF ICMP packets (payload 8972) answered in 20.0 ms; TCP exchanged 262144 '
                                 'bytes both ways with 8948-byte segments (sent) / 8948 (received), 0 resent')


def test_proof_finds_the_black_hole_and_says_what_got_through(prove):
    path = FakePath(1500)
    result = prove('198.18.0.2', 4, 9000, 1500, port=45219, prober=path, exchange=exchange())
    assert not result['ok']
    icmp = result['icmp']
    assert icmp['largest_ok'] == 1472 and icmp['largest_ok_packet'] == 1500
    assert 1472 < icmp['smallest_failed'] <= 1480
    assert result['summary'].startswith('8972-byte DF ICMP payload (9000-byte packets, the full MTU 9000) got no '
                                        'reply; the largest that got through is 1472 (1500-byte packets), ')
    assert result['summary'].endswith('Reproduce: ping -M do -s 8972 -c 3 198.18.0.2')
    assert result['tcp'] is None                    # no TCP exchange over a broken path


def test_proof_reports_a_routers_next_hop_mtu(prove):
    result = prove('198.18.0.2', 4, 9000, 1500, prober=FakePath(4000, too_big=4000), tcp='off')
    assert 'a router on the path reported next-hop MTU 4000' in result['summary']
    assert result['icmp']['largest_ok_packet'] > 3990


def test_proof_of_an_unreachable_peer(prove):
    result = prove('198.18.0.9', 4, 9000, 1500, prober=FakePath(9000, reachable=False))
    assert not result['ok']
    assert result['summary'].startswith('198.18.0.9 does not answer even a small (84-byte) ICMP echo')


def test_proof_fails_when_tcp_uses_small_segments(prove):
    result = prove('198.18.0.2', 4, 9000, 1500, port=45219, prober=FakePath(9000),
                   exchange=exchange(snd_mss=1448, rcv_mss=1448))
    assert not result['ok']
    assert 'this host sent 1448-byte segments, not 8948' in result['summary']
    assert 'about MTU 1500' in result['summary']


def test_proof_fails_when_tcp_stalls(prove):
    result = prove('198.18.0.2', 4, 9000, 1500, port=45219, prober=FakePath(9000),
                   exchange=exchange(echoed=17896, reason='stalled: 17896 of 262144 bytes came back'))
    assert not result['ok'] and 'stalled' in result['summary']


def test_tcp_auto_notes_a_missing_listener_and_required_fails(prove):
    refused = exchange(ran=False, reason='nothing listens on 198.18.0.2 port 45219 (connection refused)')
    result = prove('198.18.0.2', 4, 9000, 1500, port=45219, prober=FakePath(9000), exchange=refused)
    assert result['ok'] and 'no TCP exchange (nothing listens' in result['summary']
    result = prove('198.18.0.2', 4, 9000, 1500, port=45219, prober=FakePath(9000), exchange=refused,
                   tcp='required')
    assert not result['ok'] and 'the TCP exchange is required and could not run' in result['summary']


def test_judge_tcp():
    ok = mtuproof.judge_tcp({'ran': True, 'bytes': 10, 'echoed': 10, 'snd_mss': 8948, 'rcv_mss': 8948,
                             'timestamps': True}, 9000)
    assert ok['ok'] and ok['expected_mss'] == 8948
    no_ts = mtuproof.judge_tcp({'ran': True, 'bytes': 10, 'echoed': 10, 'snd_mss': 8960, 'rcv_mss': 8960,
                                'timestamps': False}, 9000)
    assert no_ts['ok'] and no_ts['expected_mss'] == 8960
    small_back = mtuproof.judge_tcp({'ran': True, 'bytes': 10, 'echoed': 10, 'snd_mss': 8948, 'rcv_mss': 1448,
                                     'timestamps': True}, 9000)
    assert not small_back['ok'] and 'the largest segment from the peer carried 1448 bytes' in small_back['reason']
    assert mtuproof.judge_tcp({'ran': False}, 9000)['ok'] is None


def _icmp4(kind, code, rest, payload=b''):
    return bytes(bytearray([0x45] + [0] * 19)) + struct.pack('!BBH', kind, code, 0) + rest + payload


def test_icmp_parsing(monkeypatch):
    prober = mtuproof.IcmpProber.__new__(mtuproof.IcmpProber)
    prober.family, prober.ident = 4, 0x1234
    reply = _icmp4(0, 0, struct.pack('!HH', 0x1234, 7), b'x' * 100)
    assert prober._parse(reply) == ('reply', 7, 100, None)
    assert prober._parse(_icmp4(0, 0, struct.pack('!HH', 0x9999, 7), b'x')) is None     # not ours
    inner = bytes(bytearray([0x45] + [0] * 19)) + struct.pack('!BBHHH', 8, 0, 0, 0x1234, 8)
    too_big = _icmp4(3, 4, struct.pack('!HH', 0, 1500), inner)
    assert prober._parse(too_big) == ('too_big', 8, None, 1500)
    prober.family = 6
    assert prober._parse(struct.pack('!BBHHH', 129, 0, 0, 0x1234, 9) + b'y' * 8952) == ('reply', 9, 8952, None)
    ptb = struct.pack('!BBHI', 2, 0, 0, 1280) + b'\0' * 40 + struct.pack('!BBHHH', 128, 0, 0, 0x1234, 10)
    assert prober._parse(ptb) == ('too_big', 10, None, 1280)


def test_icmp_checksum():
    # RFC 1071 example words
    assert mtuproof._checksum(bytes(bytearray([0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]))) == 0x220d
    packet = struct.pack('!BBHHH', 8, 0, 0, 1, 1) + b'abc'
    checksum = mtuproof._checksum(packet)
    assert mtuproof._checksum(packet[:2] + struct.pack('!H', checksum) + packet[4:]) == 0


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.fixture
def listener():
    started = []

    def start(allowed='127.0.0.1', lifetime=20):
        port = _free_port()
        proc = subprocess.Popen([sys.executable, '-c', mtuproof.LISTENER, str(port), str(lifetime), allowed,
                                 str(2 ** 20), 'test-marker'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        started.append(proc)
        assert proc.stdout.readline().decode().startswith('ready')
        return port

    yield start
    for proc in started:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_tcp_exchange_with_the_listener(listener):
    port = listener()
    result = mtuproof.tcp_exchange('127.0.0.1', 4, port, nbytes=200000, timeout=10)
    assert result['ran'] and result['echoed'] == 200000 and result['reason'] is None
    assert result['snd_mss'] > 0 and result['rcv_mss'] > 0 and 'total_retrans' in result


def test_tcp_exchange_refused_and_unlisted_source(listener):
    port = _free_port()
    refused = mtuproof.tcp_exchange('127.0.0.1', 4, port, timeout=3)
    assert not refused['ran'] and 'connection refused' in refused['reason']
    port = listener(allowed='198.18.0.1')           # 127.0.0.1 is not one of its peers
    result = mtuproof.tcp_exchange('127.0.0.1', 4, port, nbytes=1000, timeout=30)
    assert result['ran'] and result['echoed'] == 0
    # The listener closes the connection at once rather than leaving it to stall until the timeout ('stalled: ...').
    # Which way the close reaches tcp_exchange depends on whether the request was still unread when the listener
    # closed (a reset) and on whether tcp_exchange was still sending or already reading; on loopback mostly the
    # send fails with EPIPE.
    assert re.match(r'(the listener closed the connection after 0 of 1000 bytes'
                    r'|failed after 0 of 1000 bytes: (Broken pipe|Connection reset by peer))$', result['reason']), \
        result['reason']
