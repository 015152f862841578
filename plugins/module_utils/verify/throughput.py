# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one TCP path can carry: the window-limited ceiling min(rate, window / RTT) and the
figures used to judge a measurement against it.

Rates and RTTs are parsed by bdp.py (the collection's one parser); this file adds only the
inverse of the BDP (the throughput a given window allows at a given RTT) and the factors
that turn a buffer maximum into the window TCP can really use.
"""

import math
import re
from decimal import Decimal, ROUND_FLOOR

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp

# Share of a receive buffer (net.ipv4.tcp_rmem max, or the kernel's doubled SO_RCVBUF) that
# Linux advertises as window.  tcp_adv_win_scale=1 (the default before 6.6) kept exactly half
# for per-packet overhead; 6.6 and later measure a per-socket len/truesize ratio that is about
# 50 % at MTU 1500 and can be higher with large MTUs or GRO.  0.5 is the documented,
# conservative assumption of the collection (docs/bdp.md): it never promises more than the
# kernel of the usual 1500-byte path advertises.
RECEIVE_WINDOW_FACTOR = Decimal('0.5')
# Share of a send buffer (net.ipv4.tcp_wmem max) that can be in flight.  Unacknowledged data
# stays in the send buffer, and the kernel charges it by skb truesize; with TSO/GSO skbs of up
# to 64 KB that overhead is a few per cent, so the whole buffer is the upper bound.  (The
# project lab's stock run - tcp_wmem max 4 MiB, 98 ms - reached 263-273 Mbit/s, more than a
# factor of 0.5 would allow, and matches the receive limit instead.)
SEND_WINDOW_FACTOR = Decimal(1)
# A measurement within this fraction of window / RTT is "at the window".
WINDOW_MATCH = Decimal('0.2')
# The Mathis et al. constant sqrt(3/2) for the loss-limited throughput of Reno-like TCP.
MATHIS_C = Decimal('1.22')
DEFAULT_MSS = 1448
# IPv4 (20) + TCP (20) + timestamp option (12) bytes in front of each segment's payload.
TCP_IP_OVERHEAD = 52

SIZE_HELP = ("bytes (4194304), or a number with K, M or G (1024-based, as iperf3 -w reads it: "
             "512K, 4M)")
_SIZE = re.compile(r'^\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)(?:i?[bB])?\s*$')
_SIZE_SCALE = {'': 1, 'k': 2 ** 10, 'm': 2 ** 20, 'g': 2 ** 30}


def parse_size(value, name='window'):
    """Bytes (int) from 4194304, '4194304', '512K', '4M' or '4MiB' (1024-based, like iperf3 -w)."""
    if isinstance(value, bool) or value is None:
        raise bdp.UnitError('%s: %r is not a size; expected %s.' % (name, value, SIZE_HELP))
    match = _SIZE.match(str(value))
    if not match:
        raise bdp.UnitError('%s: %r is not a size; expected %s.' % (name, value, SIZE_HELP))
    size = int((Decimal(match.group(1)) * _SIZE_SCALE[match.group(2).lower()]).to_integral_value(ROUND_FLOOR))
    if size < 1024 or size > bdp.INT_MAX:
        raise bdp.UnitError('%s: %r is %d bytes, outside 1024 to %d; expected %s.'
                            % (name, value, size, bdp.INT_MAX, SIZE_HELP))
    return size


def buffer_max(value, name):
    """The maximum of a buffer sysctl: 6291456, '6291456', '4096 131072 6291456' or [4096, 131072, 6291456]
    (the last field of net.ipv4.tcp_rmem / tcp_wmem)."""
    if isinstance(value, (list, tuple)):
        fields = [str(item) for item in value]
    else:
        fields = str(value).split() if value is not None and not isinstance(value, bool) else []
    maximum = bdp.read_whole(fields[-1]) if fields else None
    if maximum is None or maximum < 1:
        raise bdp.UnitError('%s: %s is not a buffer size; expected bytes (6291456) or the whole net.ipv4.tcp_rmem / '
                            'tcp_wmem value ("4096 131072 6291456").' % (name, bdp.show_value(value)))
    return maximum


def _rtt_ms(rtt, name):
    """An RTT in ms: a Decimal is one bdp.parse_rtt already returned; anything else is parsed by it."""
    return rtt if isinstance(rtt, Decimal) else bdp.parse_rtt(rtt, name)


def window_bps(window_bytes, rtt, factor=1, streams=1, rtt_name='rtt'):
    """Throughput (bit/s, int) that ``streams`` flows with ``window_bytes`` x ``factor`` each carry per RTT."""
    ms = _rtt_ms(rtt, rtt_name)
    usable = Decimal(int(window_bytes)) * Decimal(factor)
    return int((usable * 8 * int(streams) * 1000 / ms).to_integral_value(ROUND_FLOOR))


def window_limit(name, buffer_bytes, factor, source, host):
    """One candidate window: the buffer, the share TCP can use and where the buffer came from."""
    return {'name': name, 'buffer_bytes': int(buffer_bytes), 'factor': float(factor),
            'usable_bytes': int((Decimal(int(buffer_bytes)) * Decimal(factor)).to_integral_value(ROUND_FLOOR)),
            'source': source, 'host': host}


def ceiling(rate=None, rtt=None, windows=(), streams=1, rate_name='rate', rtt_name='rtt'):
    """The theoretical ceiling of a path: min(rate, usable window x 8 x streams / RTT).

    ``windows`` are dicts from window_limit().  Windows need an RTT; without one only the rate
    counts.  Returns {'ceiling_bps', 'limit', 'limits'} where ``limits`` lists every candidate
    with its bit/s, lowest first; ceiling_bps and limit are None when nothing is known.
    """
    limits = []
    if rate is not None:
        limits.append({'name': 'link rate', 'bps': bdp.parse_rate(rate, rate_name)})
    if rtt is not None:
        ms = _rtt_ms(rtt, rtt_name)
        for window in windows:
            item = dict(window)
            item['bps'] = window_bps(window['usable_bytes'], ms, 1, streams, rtt_name)
            limits.append(item)
    limits.sort(key=lambda item: item['bps'])
    if not limits:
        return {'ceiling_bps': None, 'limit': None, 'limits': []}
    return {'ceiling_bps': limits[0]['bps'], 'limit': limits[0]['name'], 'limits': limits}


def near_window(measured_bps, window_bytes, rtt_ms, streams=1):
    """True when the measurement is within WINDOW_MATCH of window x 8 x streams / RTT."""
    if not measured_bps or not window_bytes or not rtt_ms:
        return False
    expected = Decimal(int(window_bytes)) * 8 * int(streams) * 1000 / Decimal(str(rtt_ms))
    return abs(Decimal(str(measured_bps)) - expected) <= WINDOW_MATCH * expected


def mathis_bps(mss, rtt_ms, loss_ratio):
    """Loss-limited throughput of Reno-like TCP (Mathis et al. 1997): MSS x 8 / RTT x 1.22 / sqrt(p)."""
    if not mss or not rtt_ms or not loss_ratio or loss_ratio <= 0:
        return None
    return int(Decimal(int(mss)) * 8 * 1000 / Decimal(str(rtt_ms)) * MATHIS_C
               / Decimal(str(math.sqrt(loss_ratio))))


def goodput_bps(rate, mtu, rate_name='rate'):
    """The most TCP payload a link of ``rate`` carries with ``mtu``-byte IP packets (IPv4, timestamps):
    rate x (MTU - 52) / MTU, e.g. 1 Gbit/s at MTU 9000 -> 994222222 bit/s, at MTU 1500 -> 965333333."""
    bps = bdp.parse_rate(rate, rate_name)
    return int(Decimal(bps) * (int(mtu) - TCP_IP_OVERHEAD) / int(mtu))
