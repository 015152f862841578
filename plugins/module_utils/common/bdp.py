# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Link-rate and RTT parsing, bandwidth-delay product and socket-buffer sizing.

This is the single implementation of the collection's arithmetic.  Filters,
modules, roles and the lab all call it, so a rate means the same thing
everywhere.
"""

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


def show_value(value):
    """How a message shows ``value``, the one display of the collection's messages: booleans and null in YAML words,
    strings quoted (newlines escaped), huge values cut to their start and their length."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if value is None:
        return 'null (empty)'
    return _fmt(value)


def yaml_kind(value):
    """What a value is, in YAML words (a refused value is never shown whole)."""
    if isinstance(value, bool):
        return 'a boolean'
    if value is None:
        return 'empty (null)'
    if isinstance(value, (int, float)):
        return 'a number'
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, dict):
        return 'a mapping'
    if isinstance(value, (list, tuple)):
        return 'a list'
    return 'not a plain value'


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


# net.ipv4.tcp_mem counts pages.  The kernel's boot-time default (tcp_init_mem) is pressure = free buffer pages / 16
# (about 1/16 of RAM), min = 3/4 x pressure and max = 2 x min = 3/2 x pressure (about 3/32 of RAM).
PAGE_SIZE = 4096
TCP_MEM_KEY = 'net.ipv4.tcp_mem'
TCP_MEM_MAX_RATIO = (3, 2)          # max = ceil(pressure x 3 / 2), the kernel's own ratio
MIB = 2 ** 20
FLOWS_HELP = ("a whole number of concurrent flows, 1 or more: 4, or the same digits as a string ('4', as "
              "-e tcp_buffers_flows=4 passes it)")
MEMORY_SHARE_HELP = 'a share of RAM above 0 and at most 1, e.g. 0.25'
FRACTION_HELP = 'a fraction above 0 and at most 1, such as 0.7'
TCP_MEM_HELP = 'three whole numbers of pages, min pressure max, as in /proc/sys/net/ipv4/tcp_mem'
_DIGITS = re.compile(r'^\s*\+?([0-9]{1,18})\s*$')


def buffer_plan(rate, rtt, headroom=DEFAULT_HEADROOM, flows=None, mem_total_bytes=None, memory_share=0.25,
                names=None, tcp_mem_pages=None, page_size=PAGE_SIZE):
    """Size socket buffers for one path.

    Returns a dict with the inputs in canonical units, the BDP, the buffer size
    (``headroom`` x BDP, clamped at INT_MAX), the netdev backlog and a list of
    warnings (clamping, memory guard).  ``names`` maps 'rate', 'rtt', 'headroom',
    'flows', 'memory_share' to the variable names used in error messages.

    The memory guard runs when ``flows`` is given together with ``mem_total_bytes`` or ``tcp_mem_pages``
    (see memory_plan); ``flows`` alone is only checked.
    """
    names = dict({'rate': 'rate', 'rtt': 'rtt', 'headroom': 'headroom', 'flows': 'flows',
                  'memory_share': 'memory_share'}, **(names or {}))
    bps = parse_rate(rate, names['rate'])
    ms = parse_rtt(rtt, names['rtt'])
    factor = parse_headroom(headroom, names['headroom'])
    bdp = int((Decimal(bps) * ms / 8000).to_integral_value(rounding=ROUND_CEILING))
    wanted = int((factor * bdp).to_integral_value(rounding=ROUND_CEILING))
    warnings = []
    size = min(wanted, INT_MAX)
    if wanted > INT_MAX:
        warnings.append(_clamp_warning(factor, bdp, wanted, ms))
    if flows is not None:
        flows = flow_count(flows, names['flows'])
        if mem_total_bytes or tcp_mem_pages is not None:
            warnings.extend(memory_plan(flows, size, mem_total_bytes or None, page_size, tcp_mem_pages, memory_share,
                                        names=names)['warnings'])
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


def streams_needed(total_bytes):
    """Parallel TCP streams whose buffers, at most INT_MAX bytes each, add up to ``total_bytes``."""
    return max(1, -(-int(total_bytes) // INT_MAX))


def _clamp_warning(factor, bdp, wanted, ms):
    # the highest rate at which INT_MAX still holds the given multiple of the BDP
    reach = dict((f, _strip((Decimal(INT_MAX) / f * 8000 / ms / 10 ** 6).quantize(Decimal(1))))
                 for f in (factor, MIN_HEADROOM))
    head = ('%s x BDP is %d bytes, above the kernel limit %d; buffers are clamped to %d'
            % (_strip(factor), wanted, INT_MAX, INT_MAX))
    floor = int(MIN_HEADROOM) * bdp
    if floor <= INT_MAX:
        return ('%s, which still gives %s x BDP up to %s Mbit/s and the 2 x BDP floor up to %s Mbit/s at %s ms.'
                % (head, _strip(factor), reach[factor], reach[MIN_HEADROOM], _strip(ms)))
    # below the floor: one stream cannot fill the path, whatever the buffer
    streams = 'at least %d for the 2 x BDP floor (2 x BDP / %d, rounded up)' % (streams_needed(floor), INT_MAX)
    held = '2 x BDP only up to %s Mbit/s' % reach[MIN_HEADROOM]
    if factor != MIN_HEADROOM:
        streams += ' and %d for %s x BDP (%s x BDP / %d, rounded up)' % (
            streams_needed(wanted), _strip(factor), _strip(factor), INT_MAX)
        held += ', %s x BDP up to %s Mbit/s' % (_strip(factor), reach[factor])
    return ('%s, below the 2 x BDP floor of %d bytes, so one TCP stream cannot fill this path at %s ms (a clamped '
            'buffer holds %s). Split the transfer over parallel streams: %s.'
            % (head, floor, _strip(ms), held, streams))


def flow_count(value, name='flows'):
    """Concurrent flows (int, 1 or more) from an int or a string of digits ('4', as ``-e tcp_buffers_flows=4`` passes
    it).  Whole floats (4.0) are taken as well; fractions, units, booleans and anything else are refused."""
    number = read_whole(value)
    if number is None and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    if number is None or number < 1:
        raise UnitError('%s: %s is not usable; expected %s.' % (name, _fmt(value), FLOWS_HELP))
    return number


def read_whole(value):
    """The collection's one whole-number reader: an int, or a string of digits as ``-e key=4`` passes it (spaces
    around and a leading + allowed, at most 18 digits); None for anything else (booleans are not numbers)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        match = _DIGITS.match(str.__str__(value))
        return int(match.group(1)) if match else None
    return None


def _whole(value, name, accepted, minimum=1):
    """A whole number (read_whole) of at least ``minimum``, or UnitError."""
    number = read_whole(value)
    if number is None or number < minimum:
        raise UnitError('%s: %s is not usable; expected %s.' % (name, _fmt(value), accepted))
    return number


def parse_memory_share(value, name='memory_share'):
    """The memory guard's share of RAM (Decimal, above 0 and at most 1), exactly as memory_plan reads it; or
    UnitError."""
    return _share(value, name)


def parse_fraction(value, name='fraction'):
    """A fraction above 0 and at most 1 (Decimal), such as the share of its expectation a path test must reach."""
    return _share(value, name, FRACTION_HELP)


def _share(value, name, accepted=None):
    accepted = accepted or MEMORY_SHARE_HELP
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InvalidOperation
        share = Decimal(str(value).strip())
    except (InvalidOperation, ValueError, ArithmeticError):
        raise UnitError('%s: %s is not usable; expected %s.' % (name, _fmt(value), accepted))
    if not share.is_finite() or not 0 < share <= 1:
        raise UnitError('%s: %s is outside 0 to 1; expected %s.' % (name, _fmt(value), accepted))
    return share


def tcp_mem_fields(value, name=TCP_MEM_KEY):
    """[min, pressure, max] (ints, pages) from '287901 383869 575802' or a list of three; None stays None."""
    if value is None:
        return None
    fields = value.split() if isinstance(value, str) else value
    if not isinstance(fields, (list, tuple)) or len(fields) != 3:
        raise UnitError('%s: %s is not usable; expected %s.' % (name, _fmt(value), TCP_MEM_HELP))
    return [_whole(field, name, TCP_MEM_HELP, minimum=0) for field in fields]


def _mib(count):
    return '%d MiB' % (count // MIB)


def _percent(share):
    return '%s%%' % _strip(share * 100)


def memory_plan(flows, buffer_bytes, mem_total_bytes=None, page_size=PAGE_SIZE, tcp_mem_pages=None,
                memory_share=0.25, fit_tcp_mem=False, names=None):
    """The memory guard: ``flows`` full buffers of ``buffer_bytes`` against the host's TCP memory limit and RAM.

    ``tcp_mem_pages``: the host's net.ipv4.tcp_mem (min, pressure, max in pages of ``page_size`` bytes), as text or a
    list; ``mem_total_bytes``: MemTotal.  Either may be None (unknown): its check is left out.

    Warnings: flows x buffer above the tcp_mem pressure mark (past it the kernel shrinks every TCP socket's buffers),
    and above ``memory_share`` of RAM.  The dict also holds ``proposed_tcp_mem``, the opt-in rule that makes the flows
    fit: pressure = max(pressure, ceil(flows x buffer / page size)), max = max(max, ceil(pressure x 3 / 2)), min
    unchanged, never lowering a field, and max never above ``memory_share`` of RAM (then capped there, or at the
    host's own higher max, and ``tcp_mem_capped``; pressure is never above max).  It needs both tcp_mem and
    MemTotal, and equals tcp_mem when the flows already fit.  With ``fit_tcp_mem`` the caller applies it: the
    pressure warning is left out, and a capped rule warns instead.
    """
    names = dict({'flows': 'flows', 'memory_share': 'memory_share'}, **(names or {}))
    flows = flow_count(flows, names['flows'])
    size = _whole(buffer_bytes, 'buffer_bytes', 'a buffer size in bytes, 1 or more')
    page = _whole(page_size, 'page_size', 'the page size in bytes, e.g. 4096')
    mem = None if mem_total_bytes is None else _whole(mem_total_bytes, 'mem_total_bytes', 'the RAM size in bytes')
    tcp_mem = tcp_mem_fields(tcp_mem_pages)
    share = _share(memory_share, names['memory_share'])
    needed = flows * size
    needed_pages = -(-needed // page)
    need = '%d flows x %d-byte buffers' % (flows, size)
    plan = {
        'flows': flows, 'buffer_bytes': size, 'needed_bytes': needed, 'page_size': page, 'needed_pages': needed_pages,
        'mem_total_bytes': mem, 'memory_share': float(share),
        'share_bytes': int(share * mem) if mem else None,
        'tcp_mem': tcp_mem,
        'tcp_mem_pressure_bytes': tcp_mem[1] * page if tcp_mem else None,
        'tcp_mem_max_bytes': tcp_mem[2] * page if tcp_mem else None,
        'fits_tcp_mem': needed_pages <= tcp_mem[1] if tcp_mem else None,
        'fits_memory_share': needed <= share * mem if mem else None,
        'proposed_tcp_mem': None,
        'tcp_mem_capped': False,
    }
    plan['fits'] = plan['fits_tcp_mem'] is not False and plan['fits_memory_share'] is not False
    summary = ['%s = %s (%d pages of %d bytes)' % (need, _mib(needed), needed_pages, page)]
    warnings = []
    if tcp_mem:
        pressure, high = tcp_mem[1], tcp_mem[2]
        summary.append('%s %s pages (pressure %s, max %s)'
                       % (TCP_MEM_KEY, ' '.join(str(field) for field in tcp_mem), _mib(pressure * page),
                          _mib(high * page)))
        if mem:
            plan['proposed_tcp_mem'], plan['tcp_mem_capped'] = _fit_tcp_mem(tcp_mem, needed_pages, share, mem, page)
        proposed = plan['proposed_tcp_mem']
        if needed_pages > pressure and not (fit_tcp_mem and proposed):
            fix = 'lower the flow count or the headroom'
            if proposed:
                fix += (', or opt in to raising %s to fit (tcp_buffers_fit_tcp_mem: true; module option '
                        'memory_guard.fit_tcp_mem), which would set it to %s'
                        % (TCP_MEM_KEY, ' '.join(str(field) for field in proposed)))
                if plan['tcp_mem_capped']:
                    fix += ' (max capped at %s of RAM)' % _percent(share)
            warnings.append(
                '%s need %s (%d pages of %d bytes), above the %s pressure mark of %d pages (%s; max %d pages, %s). '
                'Past pressure the kernel shrinks the buffers of all TCP sockets and stops autotuning, so these flows '
                'cannot all grow to full size: %s.'
                % (need, _mib(needed), needed_pages, page, TCP_MEM_KEY, pressure, _mib(pressure * page), high,
                   _mib(high * page), fix))
        if fit_tcp_mem and plan['tcp_mem_capped']:
            new_pressure, new_high = proposed[1], proposed[2]
            ratio_high = -(-max(pressure, needed_pages) * TCP_MEM_MAX_RATIO[0] // TCP_MEM_MAX_RATIO[1])
            short = ''
            if new_pressure < needed_pages:
                short = ', and pressure at %d pages (%s), below the %d pages the flows need' % (
                    new_pressure, _mib(new_pressure * page), needed_pages)
            warnings.append(
                '%s do not fit with the kernel\'s margin within %s of this host\'s %s RAM: raising the %s pressure '
                'mark to %d pages (%s) for them needs max %d pages (%s; 3/2 x pressure, the kernel\'s own ratio), so '
                'max is capped at %d pages (%s)%s; %s is set to %s. Lower the flow count or the headroom, or raise '
                'tcp_buffers_memory_share if the host can spare the memory.'
                % (need, _percent(share), _mib(mem), TCP_MEM_KEY, max(pressure, needed_pages),
                   _mib(max(pressure, needed_pages) * page), ratio_high, _mib(ratio_high * page), new_high,
                   _mib(new_high * page), short, TCP_MEM_KEY, ' '.join(str(field) for field in proposed)))
    if mem:
        summary.append('%s of RAM = %s' % (_percent(share), _mib(int(share * mem))))
        if needed > share * mem:
            warnings.append('%d flows x %d-byte buffers need %d MiB, more than %s of this host\'s %d MiB RAM; '
                            'lower the flow count or headroom, or check net.ipv4.tcp_mem (pages) allows it.'
                            % (flows, size, needed // MIB, _percent(share), mem // MIB))
    plan['summary'] = '; '.join(summary)
    plan['warnings'] = warnings
    return plan


def _fit_tcp_mem(tcp_mem, needed_pages, share, mem, page):
    """(proposed [min, pressure, max], capped): see memory_plan."""
    low, pressure, high = tcp_mem
    if needed_pages <= pressure:
        return list(tcp_mem), False
    cap = int(share * mem) // page
    new_pressure = needed_pages
    ratio_high = -(-new_pressure * TCP_MEM_MAX_RATIO[0] // TCP_MEM_MAX_RATIO[1])
    if ratio_high <= max(high, cap):
        return [low, new_pressure, max(high, ratio_high)], False
    # the share of RAM (or the host's own higher max) is the ceiling; pressure cannot be above max
    new_high = max(high, cap)
    return [low, max(pressure, min(new_pressure, new_high)), new_high], True


def _human(value, units, base):
    """``value`` in the largest of ``units`` ((unit, scale), largest first) it reaches, else whole in ``base``."""
    for unit, scale in units:
        if value >= scale:
            return '%s %s' % (_strip((Decimal(value) / scale).quantize(Decimal('0.001'), ROUND_HALF_UP)), unit)
    return '%d %s' % (value, base)


def human_bytes(count):
    """12250000 -> '12.25 MB', 1225000000 -> '1.225 GB' (decimal units, as rates are decimal)."""
    return _human(count, (('GB', 10 ** 9), ('MB', 10 ** 6), ('kB', 10 ** 3)), 'B')


def human_rate(bps):
    """1000000000 -> '1 Gbit/s'."""
    return _human(bps, (('Tbit/s', 10 ** 12), ('Gbit/s', 10 ** 9), ('Mbit/s', 10 ** 6), ('kbit/s', 10 ** 3)), 'bit/s')


# Booleans as Ansible's ``bool`` filter reads them (the roles read every boolean that way); -e passes strings.
BOOL_TRUE = ('true', 'yes', 'on', '1')
BOOL_FALSE = ('false', 'no', 'off', '0')
# What read_bool accepts, in the words of every message about a boolean.
BOOL_HELP = 'true or false (also yes/no, on/off or 1/0, in any case)'


def read_bool(value):
    """True or False as Ansible's ``bool`` filter reads ``value``; None when it is not a boolean."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in BOOL_TRUE + BOOL_FALSE:
        return value.lower() in BOOL_TRUE
    return None
