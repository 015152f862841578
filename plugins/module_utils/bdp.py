# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link-rate and RTT parsing, bandwidth-delay product and socket-buffer sizing.

This is the single implementation of the collection's arithmetic.  Filters,
modules, roles and the lab all call it, so a rate means the same thing
everywhere.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, InvalidOperation, ROUND_CEILING, ROUND_HALF_UP

# Linux stores socket buffer sizes in an int: larger values are refused.
INT_MAX = 2147483647
MIN_RATE_BPS = 10 ** 6              # 1 Mbit/s: below this a bare number is almost surely a unit slip
MAX_RATE_BPS = 16 * 10 ** 11        # 1.6 Tbit/s
MIN_RTT_MS = Decimal('0.001')       # 1 microsecond
MAX_RTT_MS = Decimal(10000)         # 10 s
MIN_HEADROOM = Decimal(2)           # Linux keeps part of each socket buffer for overhead
MAX_HEADROOM = Decimal(64)          # beyond this the buffers mostly waste memory
DEFAULT_HEADROOM = 8                # docs/bdp.md, 'Choosing the default headroom' (WAN-lab benchmark)
BACKLOG_MIN = 1000                  # the kernel's default net.core.netdev_max_backlog
BACKLOG_MAX = 250000                # ESnet's figure for 100 Gbit/s hosts
BACKLOG_WINDOW_BITS = 400000        # 30 ms of 1500-byte packets: rate / (1500 * 8 / 0.030)

RATE_HELP = ("a number in bit/s (1000000000), or a number with k, m, g or t and optionally "
             "bit, bps or b/s (1g, 10G, 2.5gbit, 500m, 100mbps)")
RTT_HELP = "a number in milliseconds (98, 98.5), or with a unit: 98ms, 0.098s, 98000us"

_NUMBER = re.compile(r'^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([^\s0-9.].*?)?\s*$')
_PREFIX = {'': 0, 'k': 3, 'm': 6, 'g': 9, 't': 12}
_BIT_SUFFIXES = ('', 'b', 'bit', 'bits', 'bps', 'b/s', 'bit/s', 'bits/s')
_BYTE_SUFFIXES = ('B', 'Bps', 'B/s', 'byte', 'bytes', 'Byte', 'Bytes', 'byte/s', 'bytes/s')
_RTT_UNITS = {'': 1, 'ms': 1, 'msec': 1, 's': 1000, 'sec': 1000,
              'us': Decimal('0.001'), 'usec': Decimal('0.001'), u'\u00b5s': Decimal('0.001')}


class UnitError(ValueError):
    """A value the collection cannot use; the message names the variable, the value and what is accepted."""


# Longest value text shown in a message; longer values show their start and their length.
SHOW_CHARS = 40
# Longest string _number() reads: no rate, RTT or headroom needs more, and longer text is not parsed at all.
MAX_NUMBER_CHARS = 100
# Decimal exponents beyond this are far outside every accepted range; refused before any arithmetic.
MAX_EXPONENT = 30
HEADROOM_HELP = 'a number of BDPs from 2 (the floor) to 64, e.g. 8'


def _fmt(value):
    """How a message shows ``value``: strings quoted, huge values cut to their start and their length."""
    if isinstance(value, str):
        text = str.__str__(value)
        if len(text) > SHOW_CHARS:
            return '%r... (%d characters)' % (text[:SHOW_CHARS], len(text))
        return repr(text)
    if isinstance(value, int) and not isinstance(value, bool):
        text = format(Decimal(value), 'f')          # not str(): Python refuses ints of more than 4300 digits
    else:
        text = str(value)
    return text if len(text) <= SHOW_CHARS else '%s... (%d characters)' % (text[:SHOW_CHARS], len(text))


def _kind(value):
    """The built-in type of ``value`` by its plain name (tagged Ansible values show as str, list, dict, ...)."""
    for klass in type(value).__mro__:
        if klass.__module__ == 'builtins' and klass is not object:
            return klass.__name__
    return 'object'


def _number(value, name, accepted):
    """Split ``value`` into (Decimal number, unit string) or raise UnitError."""
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float, str)):
        raise UnitError('%s: %s (%s) is not usable; expected %s.'
                        % (name, _fmt(value), _kind(value), accepted))
    if isinstance(value, str):
        if len(value) > MAX_NUMBER_CHARS:
            raise UnitError('%s: %s is too long to be a number with a unit; expected %s.'
                            % (name, _fmt(value), accepted))
        match = _NUMBER.match(value)
        if not value.strip() or not match:
            raise UnitError('%s: %s is not a number with a unit; expected %s.' % (name, _fmt(value), accepted))
        number, unit = match.group(1), match.group(2) or ''
    else:
        if isinstance(value, float) and not math.isfinite(value):
            raise UnitError('%s: %s is not a finite number; expected %s.' % (name, value, accepted))
        number, unit = (value if isinstance(value, int) else repr(value)), ''
    try:
        number = Decimal(number)
    except (InvalidOperation, ValueError, ArithmeticError):
        raise UnitError('%s: %s is not a number; expected %s.' % (name, _fmt(value), accepted))
    # 1e999999999 would overflow the arithmetic below (decimal.Overflow), and 1e9999 would print 10000 digits
    if number and not -MAX_EXPONENT <= number.adjusted() <= MAX_EXPONENT:
        raise UnitError('%s: %s is far too %s (about 10^%d); expected %s.'
                        % (name, _fmt(value), 'large' if number.adjusted() > 0 else 'small',
                           number.adjusted(), accepted))
    return number, unit


def _arithmetic(func):
    """Turn any arithmetic error of a parser (decimal.Overflow, ...) into a UnitError naming the variable and value."""
    @functools.wraps(func)
    def parse(value, name=func.__defaults__[0]):
        try:
            return func(value, name)
        except ArithmeticError:
            raise UnitError('%s: %s is not a usable number; expected %s.'
                            % (name, _fmt(value), _HELP[func.__name__]))
    return parse


@_arithmetic
def parse_rate(value, name='rate'):
    """Return a link rate in bit/s (int) from ``1g``, ``2.5gbit``, ``500m``, ``100mbps`` or a bare number in bit/s."""
    number, unit = _number(value, name, RATE_HELP)
    prefix, suffix = (unit[:1], unit[1:]) if unit[:1].lower() in 'kmgt' and unit[:1] else ('', unit)
    if suffix in _BYTE_SUFFIXES or (suffix[:1] == 'B' and suffix.lower() not in ('bit', 'bits', 'bit/s', 'bits/s')):
        raise UnitError('%s: %s is in bytes (B), but a link rate is in bits per second; '
                        'multiply by 8 (%s %sB/s is %s%sbit) and pass %s.'
                        % (name, _fmt(value), number, prefix, _strip(number * 8), prefix.lower(), RATE_HELP))
    if suffix.lower() not in _BIT_SUFFIXES:
        raise UnitError('%s: %s has an unknown unit %s; expected %s.' % (name, _fmt(value), _fmt(unit), RATE_HELP))
    bps = number * (Decimal(10) ** _PREFIX[prefix.lower()])
    if bps <= 0:
        raise UnitError('%s: %s must be above zero; expected %s.' % (name, _fmt(value), RATE_HELP))
    if bps < MIN_RATE_BPS:
        raise UnitError('%s: %s is %s bit/s, below 1 Mbit/s; a bare number is bit/s, so write 100m '
                        'for 100 Mbit/s or 1g for 1 Gbit/s.' % (name, _fmt(value), _strip(bps)))
    if bps > MAX_RATE_BPS:
        raise UnitError('%s: %s is %s bit/s, above the 1.6 Tbit/s this collection accepts; '
                        'expected %s.' % (name, _fmt(value), _strip(bps), RATE_HELP))
    return int(bps.to_integral_value(rounding=ROUND_CEILING))


@_arithmetic
def parse_rtt(value, name='rtt'):
    """Return a round-trip time in milliseconds (Decimal) from ``98``, ``98ms``, ``0.098s`` or ``98000us``."""
    number, unit = _number(value, name, RTT_HELP)
    if unit.lower() not in _RTT_UNITS and unit not in _RTT_UNITS:
        raise UnitError('%s: %s has an unknown unit %s; expected %s.' % (name, _fmt(value), _fmt(unit), RTT_HELP))
    ms = number * _RTT_UNITS.get(unit, _RTT_UNITS.get(unit.lower()))
    if ms <= 0:
        raise UnitError('%s: %s must be above zero; expected %s.' % (name, _fmt(value), RTT_HELP))
    if ms < MIN_RTT_MS or ms > MAX_RTT_MS:
        raise UnitError('%s: %s is %s ms, outside 0.001 ms to 10 s; expected %s.'
                        % (name, _fmt(value), _strip(ms), RTT_HELP))
    return ms


@_arithmetic
def parse_headroom(value, name='headroom'):
    """Return a buffer headroom factor (Decimal, 2 to 64) from a number."""
    number, unit = _number(value, name, HEADROOM_HELP)
    if unit:
        raise UnitError('%s: %s has a unit; expected %s.' % (name, _fmt(value), HEADROOM_HELP))
    if number < MIN_HEADROOM:
        raise UnitError('%s: %s is outside 2 to 64; Linux keeps part of each socket buffer for overhead, '
                        'so less than 2 x BDP cannot fill the path. Expected %s.' % (name, _fmt(value), HEADROOM_HELP))
    if number > MAX_HEADROOM:
        raise UnitError('%s: %s is outside 2 to 64; above 64 x BDP the buffers mostly waste memory (the path holds '
                        '1 x BDP in flight, and 8 already keeps BBR near line rate at 1 %% loss). '
                        'Expected %s.' % (name, _fmt(value), HEADROOM_HELP))
    return number


_HELP = {'parse_rate': RATE_HELP, 'parse_rtt': RTT_HELP, 'parse_headroom': HEADROOM_HELP}


def _strip(number):
    """Format a Decimal without exponent or trailing zeros."""
    text = format(number.normalize(), 'f') if number == number.to_integral_value() else format(number, 'f')
    return text.rstrip('0').rstrip('.') if '.' in text else text


def bdp_bytes(rate, rtt, rate_name='rate', rtt_name='rtt'):
    """Bandwidth-delay product in bytes: rate (bit/s) x RTT (s) / 8, rounded up."""
    bps = parse_rate(rate, rate_name)
    ms = parse_rtt(rtt, rtt_name)
    return int((Decimal(bps) * ms / 8000).to_integral_value(rounding=ROUND_CEILING))


def netdev_backlog(rate_bps):
    """net.core.netdev_max_backlog holding ~30 ms of 1500-byte packets at line rate, within 1000..250000."""
    return max(BACKLOG_MIN, min(BACKLOG_MAX, -(-int(rate_bps) // BACKLOG_WINDOW_BITS)))


def buffer_plan(rate, rtt, headroom=DEFAULT_HEADROOM, flows=None, mem_total_bytes=None, memory_share=0.25,
                names=None):
    """Size socket buffers for one path.

    Returns a dict with the inputs in canonical units, the BDP, the buffer size
    (``headroom`` x BDP, clamped at INT_MAX), the netdev backlog and a list of
    warnings (clamping, memory guard).  ``names`` maps 'rate', 'rtt', 'headroom',
    'flows' to the variable names used in error messages.
    """
    names = dict({'rate': 'rate', 'rtt': 'rtt', 'headroom': 'headroom', 'flows': 'flows'}, **(names or {}))
    bps = parse_rate(rate, names['rate'])
    ms = parse_rtt(rtt, names['rtt'])
    factor = parse_headroom(headroom, names['headroom'])
    bdp = int((Decimal(bps) * ms / 8000).to_integral_value(rounding=ROUND_CEILING))
    wanted = int((factor * bdp).to_integral_value(rounding=ROUND_CEILING))
    warnings = []
    size = min(wanted, INT_MAX)
    if wanted > INT_MAX:
        # the highest rate at which INT_MAX still holds the given multiple of the BDP
        reach = dict((f, _strip((Decimal(INT_MAX) / f * 8000 / ms / 10 ** 6).quantize(Decimal(1))))
                     for f in (factor, MIN_HEADROOM))
        warnings.append('%s x BDP is %d bytes, above the kernel limit %d; buffers are clamped to %d, which still '
                        'gives %s x BDP up to %s Mbit/s and the 2 x BDP floor up to %s Mbit/s at %s ms.'
                        % (_strip(factor), wanted, INT_MAX, INT_MAX, _strip(factor), reach[factor],
                           reach[MIN_HEADROOM], _strip(ms)))
    if flows is not None:
        if isinstance(flows, bool) or not isinstance(flows, int) or flows < 1:
            raise UnitError('%s: %s is not usable; expected a whole number of concurrent flows, 1 or more.'
                            % (names['flows'], _fmt(flows)))
        if mem_total_bytes and flows * size > Decimal(str(memory_share)) * int(mem_total_bytes):
            warnings.append('%d flows x %d-byte buffers need %d MiB, more than %s%% of this host\'s %d MiB RAM; '
                            'lower the flow count or headroom, or check net.ipv4.tcp_mem (pages) allows it.'
                            % (flows, size, flows * size // 2 ** 20, _strip(Decimal(str(memory_share)) * 100),
                               int(mem_total_bytes) // 2 ** 20))
    formula = '%s x BDP = %d bytes (%s); BDP = %s x %s ms / 8 = %d bytes (%s)' % (
        _strip(factor), size, human_bytes(size), human_rate(bps), _strip(ms), bdp, human_bytes(bdp))
    return {
        'formula': formula,
        'rate_bps': bps,
        'rtt_ms': float(ms),
        'bdp_bytes': bdp,
        'headroom': float(factor),
        'buffer_bytes': size,
        'clamped': wanted > INT_MAX,
        'netdev_max_backlog': netdev_backlog(bps),
        'warnings': warnings,
    }


def human_bytes(count):
    """12250000 -> '12.25 MB', 1225000000 -> '1.225 GB' (decimal units, as rates are decimal)."""
    for unit, scale in (('GB', 10 ** 9), ('MB', 10 ** 6), ('kB', 10 ** 3)):
        if count >= scale:
            return '%s %s' % (_strip((Decimal(count) / scale).quantize(Decimal('0.001'), ROUND_HALF_UP)), unit)
    return '%d B' % count


def human_rate(bps):
    """1000000000 -> '1 Gbit/s'."""
    for unit, scale in (('Tbit/s', 10 ** 12), ('Gbit/s', 10 ** 9), ('Mbit/s', 10 ** 6), ('kbit/s', 10 ** 3)):
        if bps >= scale:
            return '%s %s' % (_strip((Decimal(bps) / scale).quantize(Decimal('0.001'), ROUND_HALF_UP)), unit)
    return '%d bit/s' % bps
