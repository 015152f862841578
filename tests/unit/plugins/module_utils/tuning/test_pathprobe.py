# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/tuning/pathprobe.py: medians, the RTT kept between runs, ping and route parsing, link speeds, and real
TCP handshakes over loopback (a listening port and a closed one)."""

from __future__ import annotations

import socket

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import pathprobe


@pytest.mark.parametrize('value, auto', [('auto', True), (' AUTO ', True), ('1g', False), (98, False), (None, False)])
def test_is_auto(value, auto):
    assert pathprobe.is_auto(value) is auto


def test_median():
    assert pathprobe.median([3.0, 1.0, 2.0]) == 2.0
    assert pathprobe.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert pathprobe.median([98.4, 250.0, 98.2, 98.3, 98.1]) == 98.3     # one late answer does not move it


@pytest.mark.parametrize('measured, previous, used, why', [
    (98.27, None, 98.0 + 1, 'rounded up'),
    (98.0, None, 98.0, 'rounded up'),
    (0.0312, None, 0.1, 'rounded up'),
    (4.23, None, 4.3, 'rounded up'),
    (101.5, 99.0, 99.0, 'kept 99 ms from the previous run'),
    (80.0, 99.0, 99.0, 'kept 99 ms'),                      # 99 / 1.25 = 79.2
    (78.0, 99.0, 78.0, 'more than 25 % away from the previous 99 ms'),
    (124.0, 99.0, 124.0, 'more than 25 %'),
])
def test_rtt_used(measured, previous, used, why):
    value, reason = pathprobe.rtt_used(measured, previous)
    assert value == pytest.approx(used)
    assert why in reason


def test_rtt_used_is_stable_under_jitter():
    first, dummy = pathprobe.rtt_used(98.31)
    for jitter in (97.9, 98.0, 98.6, 99.4, 110.0):
        assert pathprobe.rtt_used(jitter, first)[0] == first


def test_parse_ping():
    text = ('PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.\n'
            '64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=98.3 ms\n'
            '64 bytes from 198.18.0.2: icmp_seq=2 ttl=64 time=98.1 ms\n'
            '64 bytes from 127.0.0.1: icmp_seq=3 ttl=64 time<0.1 ms\n'
            'rtt min/avg/max/mdev = 98.1/98.2/98.3/0.1 ms\n')
    assert pathprobe.parse_ping(text) == [98.3, 98.1, 0.1]
    assert pathprobe.parse_ping('') == []


def test_parse_route_dev():
    assert pathprobe.parse_route_dev('198.18.0.2 dev wan0 src 198.18.0.1 uid 0 \n    cache \n') == 'wan0'
    assert pathprobe.parse_route_dev('default via 10.0.0.1 dev ens3 proto dhcp metric 100\n') == 'ens3'
    assert pathprobe.parse_route_dev('') is None


def test_read_speed(tmp_path):
    for name, text in (('eth0', '10000\n'), ('veth0', '-1\n'), ('tun0', 'x\n')):
        (tmp_path / name).mkdir()
        (tmp_path / name / 'speed').write_text(text)
    assert pathprobe.read_speed_mbps('eth0', str(tmp_path)) == 10000
    assert pathprobe.read_speed_mbps('veth0', str(tmp_path)) is None
    assert pathprobe.read_speed_mbps('tun0', str(tmp_path)) is None
    assert pathprobe.read_speed_mbps('missing', str(tmp_path)) is None


def test_handshake_to_a_listening_port_and_a_closed_one():
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        assert 0 <= pathprobe.tcp_handshake_ms('127.0.0.1', port, 2) < 1000
    finally:
        listener.close()
    # the port is closed now: the reset answers after one round trip, which is timed too
    assert 0 <= pathprobe.tcp_handshake_ms('127.0.0.1', port, 2) < 1000


def test_handshake_times_with_the_clock():
    ticks = iter([10.0, 10.0983])
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    try:
        ms = pathprobe.tcp_handshake_ms('127.0.0.1', listener.getsockname()[1], 2, clock=lambda: next(ticks))
    finally:
        listener.close()
    assert ms == pytest.approx(98.3)


def test_peers_key_ignores_order():
    assert pathprobe.peers_key(['b', 'a']) == pathprobe.peers_key(['a', 'b']) == 'a,b'
