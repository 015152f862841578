# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measure a path from the host: round-trip time to peers, and the link rate of the interface towards them.

``rtt=auto`` and ``rate=auto`` of the tcp_buffers role use it through the path_probe module.  The round-trip time
of one peer is the median of several TCP handshakes (a refused connection answers after one round trip too) or
pings; the host's RTT is the longest of its peers' medians, since its buffers must fill the longest path it serves.
Measured values jitter, so the value used is kept from the previous run while the new median stays within a
tolerance of it: otherwise every run would change the buffer sizes by a few bytes.
"""

import errno
import math
import os
import re
import socket
import time

AUTO = 'auto'
RECORD_NAME = 'path_probe.json'
DEFAULT_TOLERANCE = 0.25
# Errors that arrive after one round trip: the peer's kernel answered (RST), so the handshake was timed.
ANSWERED = (errno.ECONNREFUSED, errno.ECONNRESET)
_PING_TIME = re.compile(r'\btime[=<]([0-9.]+) ?ms\b')
_ROUTE_DEV = re.compile(r'\bdev (\S+)')


def is_auto(value):
    """True when a rate or RTT input asks for a measurement (the string ``auto``, any case)."""
    return isinstance(value, str) and value.strip().lower() == AUTO


def median(values):
    """The median of a non-empty list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def tcp_handshake_ms(address, port, timeout, family=socket.AF_UNSPEC, clock=time.monotonic):
    """One TCP handshake to ``address``:``port`` in ms; a refusal counts (it came back after one round trip).

    Raises OSError (socket.timeout included) when no answer came back.
    """
    infos = socket.getaddrinfo(address, port, family, socket.SOCK_STREAM)
    family, kind, proto, dummy, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.settimeout(timeout)
    try:
        started = clock()
        try:
            sock.connect(sockaddr)
        except OSError as exc:
            if exc.errno not in ANSWERED:
                raise
        return (clock() - started) * 1000.0
    finally:
        sock.close()


def parse_ping(text):
    """The per-reply times (ms) of ``ping`` output."""
    return [float(value) for value in _PING_TIME.findall(text or '')]


def parse_route_dev(text):
    """The device of ``ip route get`` or ``ip route show default`` output, or None."""
    match = _ROUTE_DEV.search(text or '')
    return match.group(1) if match else None


def read_speed_mbps(interface, sys_class_net='/sys/class/net'):
    """The link speed the kernel reports for ``interface`` in Mbit/s, or None when it reports none.

    Virtual devices (veth, bridges, VLANs, tun, most paravirtual NICs) report -1 or fail the read.
    """
    try:
        with open(os.path.join(sys_class_net, interface, 'speed')) as handle:
            speed = int(handle.read().strip())
    except (IOError, OSError, ValueError):
        return None
    return speed if speed > 0 else None


def rtt_used(measured_ms, previous_ms=None, tolerance=DEFAULT_TOLERANCE):
    """(RTT to size for in ms, why): the previous value while the new median is within ``tolerance`` of it.

    A new value is rounded up to a whole millisecond (0.1 ms below 10 ms), so the plan shows a plain number.
    """
    if previous_ms and previous_ms / (1.0 + tolerance) <= measured_ms <= previous_ms * (1.0 + tolerance):
        return previous_ms, 'kept %s ms from the previous run (measured %.2f ms is within %d %% of it)' % (
            fmt_ms(previous_ms), measured_ms, round(tolerance * 100))
    step = 0.1 if measured_ms < 10 else 1.0
    value = math.ceil(measured_ms / step - 1e-9) * step
    value = round(max(value, 0.1), 1)
    if previous_ms:
        why = 'measured %.2f ms, more than %d %% away from the previous %s ms' % (
            measured_ms, round(tolerance * 100), fmt_ms(previous_ms))
    else:
        why = 'measured %.2f ms, rounded up' % measured_ms
    return value, why


def fmt_ms(value):
    return ('%.1f' % value).rstrip('0').rstrip('.')


def peers_key(peers):
    """The record key of a set of peers (order does not matter)."""
    return ','.join(sorted(peers))
