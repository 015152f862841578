# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rate/RTT parsing, BDP and buffer sizing (plugins/module_utils/common/bdp.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import UnitError

NAN = float('nan')
INF = float('inf')
GIB = 2 ** 30


def shown(value):
    """How an error message must show ``value``: strings quoted, everything else as str()."""
    return repr(value) if isinstance(value, str) else str(value)


def assert_names_value_and_help(message, name, value, accepted):
    assert message.startswith(name + ': '), message
    assert shown(value) in message, message
    assert accepted in message, message


# --------------------------------------------------------------------------- rates

@pytest.mark.parametrize('value, bps', [
    ('1g', 10 ** 9),
    ('10G', 10 ** 10),
    ('2.5gbit', 25 * 10 ** 8),
    ('500m', 5 * 10 ** 8),
    ('100mbps', 10 ** 8),
    ('100Mbps', 10 ** 8),
    ('1000000000', 10 ** 9),
    ('1e9', 10 ** 9),
    (1000000000, 10 ** 9),
    (1e9, 10 ** 9),
    (2.5e9, 25 * 10 ** 8),
    ('1 Gbit/s', 10 ** 9),
    ('1Gb', 10 ** 9),
    ('10 Gb/s', 10 ** 10),
    ('100 Mbit', 10 ** 8),
    ('40gbits', 4 * 10 ** 10),
    ('25000kbit', 25 * 10 ** 6),
    ('  1g  ', 10 ** 9),
    ('+1g', 10 ** 9),
    ('.5g', 5 * 10 ** 8),
    ('1GBIT', 10 ** 9),              # an upper-case "BIT" is still bits
    ('1m', 10 ** 6),                 # the lower limit is accepted
    ('1000000', 10 ** 6),
    ('1.6t', 16 * 10 ** 11),         # the upper limit is accepted
    ('1.6Tbit/s', 16 * 10 ** 11),
    ('1.0000001m', 1000001),         # fractions of a bit/s round up
])
def test_parse_rate_accepts(value, bps):
    result = bdp.parse_rate(value)
    assert result == bps
    assert isinstance(result, int) and not isinstance(result, bool)


RATE_HELP = bdp.RATE_HELP
BYTES_HINT = 'multiply by 8'


@pytest.mark.parametrize('value, fragment, accepted', [
    ('', 'is not a number with a unit', RATE_HELP),
    ('   ', 'is not a number with a unit', RATE_HELP),
    ('g', 'is not a number with a unit', RATE_HELP),
    ('nan', 'is not a number with a unit', RATE_HELP),
    ('inf', 'is not a number with a unit', RATE_HELP),
    ('0', 'must be above zero', RATE_HELP),
    (0, 'must be above zero', RATE_HELP),
    ('0g', 'must be above zero', RATE_HELP),
    ('-1g', 'must be above zero', RATE_HELP),
    (-1000000000, 'must be above zero', RATE_HELP),
    (NAN, 'is not a finite number', RATE_HELP),
    (INF, 'is not a finite number', RATE_HELP),
    (-INF, 'is not a finite number', RATE_HELP),
    ('1x', "has an unknown unit 'x'", RATE_HELP),
    ('10 gigabit', "has an unknown unit 'gigabit'", RATE_HELP),
    ('1gib', "has an unknown unit 'gib'", RATE_HELP),
    ('1.7t', 'above the 1.6 Tbit/s', RATE_HELP),
    ('2T', 'above the 1.6 Tbit/s', RATE_HELP),
    (2e12, 'above the 1.6 Tbit/s', RATE_HELP),
    (10 ** 20, 'above the 1.6 Tbit/s', RATE_HELP),
    ('999999', 'is 999999 bit/s, below 1 Mbit/s', 'write 100m for 100 Mbit/s or 1g for 1 Gbit/s'),
    (100, 'is 100 bit/s, below 1 Mbit/s', 'write 100m for 100 Mbit/s or 1g for 1 Gbit/s'),
    (1.5, 'is 1.5 bit/s, below 1 Mbit/s', 'write 100m for 100 Mbit/s or 1g for 1 Gbit/s'),
    (True, '(bool) is not usable', RATE_HELP),
    (False, '(bool) is not usable', RATE_HELP),
    (None, '(NoneType) is not usable', RATE_HELP),
    ([1], '(list) is not usable', RATE_HELP),
    ({'rate': '1g'}, '(dict) is not usable', RATE_HELP),
])
def test_parse_rate_rejects(value, fragment, accepted):
    with pytest.raises(UnitError) as info:
        bdp.parse_rate(value, 'wan_rate')
    message = str(info.value)
    assert fragment in message
    assert_names_value_and_help(message, 'wan_rate', value, accepted)


@pytest.mark.parametrize('value, conversion', [
    ('1GB', '(1 GB/s is 8gbit)'),
    ('1GBps', '(1 GB/s is 8gbit)'),
    ('1 MB/s', '(1 MB/s is 8mbit)'),
    ('125MB', '(125 MB/s is 1000mbit)'),
    ('1.5GB', '(1.5 GB/s is 12gbit)'),
    ('10 kBytes', '(10 kB/s is 80kbit)'),
    ('1000B', '(1000 B/s is 8000bit)'),
    ('1GBPS', '(1 GB/s is 8gbit)'),
])
def test_parse_rate_bytes_are_refused_with_times_eight_hint(value, conversion):
    with pytest.raises(UnitError) as info:
        bdp.parse_rate(value, 'wan_rate')
    message = str(info.value)
    assert 'is in bytes (B)' in message
    assert 'bits per second' in message
    assert BYTES_HINT in message
    assert conversion in message
    assert_names_value_and_help(message, 'wan_rate', value, RATE_HELP)


def test_parse_rate_default_name():
    with pytest.raises(UnitError, match=r"^rate: 'fast' "):
        bdp.parse_rate('fast')


def test_unit_error_is_a_value_error():
    assert issubclass(UnitError, ValueError)


# --------------------------------------------------------------------------- RTTs

@pytest.mark.parametrize('value, ms', [
    (98, Decimal(98)),
    ('98', Decimal(98)),
    ('98ms', Decimal(98)),
    ('98 ms', Decimal(98)),
    ('98MS', Decimal(98)),
    ('98msec', Decimal(98)),
    ('0.098s', Decimal(98)),
    ('0.098 sec', Decimal(98)),
    (98.5, Decimal('98.5')),
    ('98.5', Decimal('98.5')),
    ('98000us', Decimal(98)),
    ('98000usec', Decimal(98)),
    (u'98000\u00b5s', Decimal(98)),
    ('10s', Decimal(10000)),          # the upper limit is accepted
    (10000, Decimal(10000)),
    ('0.001', Decimal('0.001')),      # the lower limit (1 us) is accepted
    ('1us', Decimal('0.001')),
])
def test_parse_rtt_accepts(value, ms):
    result = bdp.parse_rtt(value)
    assert isinstance(result, Decimal)
    assert result == ms


RTT_HELP = bdp.RTT_HELP


@pytest.mark.parametrize('value, fragment', [
    ('', 'is not a number with a unit'),
    ('  ', 'is not a number with a unit'),
    ('nan', 'is not a number with a unit'),
    ('fast', 'is not a number with a unit'),
    ('0', 'must be above zero'),
    (0, 'must be above zero'),
    (0.0, 'must be above zero'),
    ('-5', 'must be above zero'),
    (-98, 'must be above zero'),
    (NAN, 'is not a finite number'),
    (INF, 'is not a finite number'),
    ('98m', "has an unknown unit 'm'"),
    ('98 minutes', "has an unknown unit 'minutes'"),
    ('98ns', "has an unknown unit 'ns'"),
    ('10001', 'is 10001 ms, outside 0.001 ms to 10 s'),
    (10000.5, 'is 10000.5 ms, outside 0.001 ms to 10 s'),
    ('11s', 'is 11000 ms, outside 0.001 ms to 10 s'),
    ('0.0001', 'is 0.0001 ms, outside 0.001 ms to 10 s'),
    ('0.5us', 'is 0.0005 ms, outside 0.001 ms to 10 s'),
    (True, '(bool) is not usable'),
    (None, '(NoneType) is not usable'),
    ([98], '(list) is not usable'),
    ({'rtt': 98}, '(dict) is not usable'),
])
def test_parse_rtt_rejects(value, fragment):
    with pytest.raises(UnitError) as info:
        bdp.parse_rtt(value, 'wan_rtt')
    message = str(info.value)
    assert fragment in message
    assert_names_value_and_help(message, 'wan_rtt', value, RTT_HELP)


# --------------------------------------------------------------------------- headroom

@pytest.mark.parametrize('value, factor', [
    (2, Decimal(2)),
    (4, Decimal(4)),
    ('4', Decimal(4)),
    (4.0, Decimal(4)),
    (2.5, Decimal('2.5')),
    (64, Decimal(64)),
])
def test_parse_headroom_accepts(value, factor):
    assert bdp.parse_headroom(value) == factor


HEADROOM_HELP = 'a number of BDPs from 2 (the floor) to 64'


@pytest.mark.parametrize('value, fragment', [
    (1, 'is outside 2 to 64'),
    (1.99, 'is outside 2 to 64'),
    ('1.5', 'is outside 2 to 64'),
    (0, 'is outside 2 to 64'),
    (-4, 'is outside 2 to 64'),
    (64.5, 'is outside 2 to 64'),
    (65, 'is outside 2 to 64'),
    ('100', 'is outside 2 to 64'),
    ('4x', 'has a unit'),
    ('4 BDP', 'has a unit'),
    ('4ms', 'has a unit'),
    ('', 'is not a number with a unit'),
    (NAN, 'is not a finite number'),
    (True, '(bool) is not usable'),
    (None, '(NoneType) is not usable'),
    ([4], '(list) is not usable'),
])
def test_parse_headroom_rejects(value, fragment):
    with pytest.raises(UnitError) as info:
        bdp.parse_headroom(value, 'wan_headroom')
    message = str(info.value)
    assert fragment in message
    assert_names_value_and_help(message, 'wan_headroom', value, HEADROOM_HELP)


def test_headroom_below_two_explains_the_kernel_overhead():
    with pytest.raises(UnitError, match='less than 2 x BDP cannot fill the path'):
        bdp.parse_headroom(1)


# --------------------------------------------------------------------------- BDP

@pytest.mark.parametrize('rate, rtt, expected', [
    ('1g', 98, 12250000),
    ('1g', '98ms', 12250000),
    ('1g', '0.098s', 12250000),
    ('1g', '98000us', 12250000),
    (1000000000, 98.0, 12250000),
    ('1 Gbit/s', 98, 12250000),
    ('10g', 98, 122500000),
    ('100m', 20, 250000),
    ('1g', 98.5, 12312500),
    ('1m', '1us', 1),                  # 0.125 bytes rounds up to 1
    ('1m', 1, 125),
])
def test_bdp_bytes(rate, rtt, expected):
    result = bdp.bdp_bytes(rate, rtt)
    assert result == expected
    assert isinstance(result, int) and not isinstance(result, bool)


def test_bdp_bytes_is_exact_for_1g_98ms():
    assert bdp.bdp_bytes('1g', 98) == 12250000


def test_bdp_bytes_errors_use_the_given_names():
    with pytest.raises(UnitError, match=r"^link_rate: '1GB' is in bytes"):
        bdp.bdp_bytes('1GB', 98, rate_name='link_rate', rtt_name='path_rtt')
    with pytest.raises(UnitError, match=r"^path_rtt: '98m' has an unknown unit"):
        bdp.bdp_bytes('1g', '98m', rate_name='link_rate', rtt_name='path_rtt')


# --------------------------------------------------------------------------- netdev backlog

@pytest.mark.parametrize('rate_bps, backlog', [
    (10 ** 9, 2500),
    (10 ** 10, 25000),
    (10 ** 11, 250000),
    (10 ** 8, 1000),          # below the kernel default: the default is kept
    (10 ** 6, 1000),
    (25 * 10 ** 8, 6250),
    (4 * 10 ** 11, 250000),   # capped
    (1000000001, 2501),       # rounds up
])
def test_netdev_backlog(rate_bps, backlog):
    assert bdp.netdev_backlog(rate_bps) == backlog


# --------------------------------------------------------------------------- buffer plan

def test_buffer_plan_1g_98ms_default_headroom():
    plan = bdp.buffer_plan('1g', 98)
    assert plan == {
        'formula': '8 x BDP = 98000000 bytes (98 MB); BDP = 1 Gbit/s x 98 ms / 8 = 12250000 bytes (12.25 MB)',
        'rate_bps': 1000000000,
        'rtt_ms': 98.0,
        'bdp_bytes': 12250000,
        'headroom': 8.0,
        'buffer_bytes': 98000000,
        'clamped': False,
        'netdev_max_backlog': 2500,
        'warnings': [],
    }
    assert bdp.DEFAULT_HEADROOM == 8


def test_buffer_plan_headroom_2():
    plan = bdp.buffer_plan('1g', '98ms', headroom=2)
    assert plan['buffer_bytes'] == 24500000
    assert plan['bdp_bytes'] == 12250000
    assert plan['headroom'] == 2.0
    assert plan['formula'].startswith('2 x BDP = 24500000 bytes (24.5 MB); ')


def test_buffer_plan_fractional_headroom_and_rtt_units():
    plan = bdp.buffer_plan('2.5gbit', '0.098s', headroom='2.5')
    assert plan['rate_bps'] == 2500000000
    assert plan['rtt_ms'] == 98.0
    assert plan['bdp_bytes'] == 30625000
    assert plan['buffer_bytes'] == 76562500
    assert plan['netdev_max_backlog'] == 6250
    assert plan['formula'] == ('2.5 x BDP = 76562500 bytes (76.563 MB); '
                               'BDP = 2.5 Gbit/s x 98 ms / 8 = 30625000 bytes (30.625 MB)')


@pytest.mark.parametrize('rate, backlog', [
    ('1g', 2500), ('10g', 25000), ('100g', 250000), ('100m', 1000),
])
def test_buffer_plan_netdev_backlog_scales_with_rate(rate, backlog):
    assert bdp.buffer_plan(rate, 98)['netdev_max_backlog'] == backlog


def test_buffer_plan_clamps_at_int_max_with_a_warning():
    plan = bdp.buffer_plan('100g', 98)
    assert plan['bdp_bytes'] == 1225000000
    assert plan['buffer_bytes'] == bdp.INT_MAX == 2147483647
    assert plan['clamped'] is True
    # 2 x BDP = 2450000000 is above the limit too: one stream cannot fill the path (issue 7, item 6)
    assert plan['warnings'] == [
        '8 x BDP is 9800000000 bytes, above the kernel limit 2147483647; buffers are clamped to 2147483647, '
        'below the 2 x BDP floor of 2450000000 bytes, so one TCP stream cannot fill this path at 98 ms (a clamped '
        'buffer holds 2 x BDP only up to 87652 Mbit/s, 8 x BDP up to 21913 Mbit/s). Split the transfer over parallel '
        'streams: at least 2 for the 2 x BDP floor (2 x BDP / 2147483647, rounded up) and 5 for 8 x BDP '
        '(8 x BDP / 2147483647, rounded up).']
    # the rates at which the clamped buffer still holds 8 and 2 BDPs: INT_MAX / factor per RTT
    assert round(bdp.INT_MAX / 8 * 8 / 0.098 / 1e6) == 21913
    assert round(bdp.INT_MAX / 2 * 8 / 0.098 / 1e6) == 87652
    assert plan['formula'].startswith('8 x BDP = 2147483647 bytes (2.147 GB); ')


def test_buffer_plan_not_clamped_just_below_int_max():
    plan = bdp.buffer_plan('10g', 98, headroom=4)      # 490000000 bytes
    assert plan['clamped'] is False
    assert plan['buffer_bytes'] == 490000000
    assert plan['warnings'] == []


def test_buffer_plan_memory_guard_warns():
    plan = bdp.buffer_plan('1g', 98, headroom=4, flows=100, mem_total_bytes=8 * GIB)
    assert plan['buffer_bytes'] == 49000000
    assert plan['warnings'] == [
        "100 flows x 49000000-byte buffers need 4673 MiB, more than 25% of this host's 8192 MiB RAM; "
        "lower the flow count or headroom, or check net.ipv4.tcp_mem (pages) allows it."]


def test_buffer_plan_memory_guard_share_is_configurable():
    plan = bdp.buffer_plan('1g', 98, flows=10, mem_total_bytes=8 * GIB, memory_share=0.05)
    assert len(plan['warnings']) == 1
    assert 'more than 5% of' in plan['warnings'][0]


@pytest.mark.parametrize('flows, mem', [
    (10, 8 * GIB),          # 490 MB of 8 GiB
    (1, 8 * GIB),
    (100, None),            # memory unknown: no guard
    (None, 8 * GIB),        # flows unknown: no guard
    (10, 490000000 * 4),    # exactly the share: not more than it
])
def test_buffer_plan_memory_guard_silent(flows, mem):
    assert bdp.buffer_plan('1g', 98, headroom=4, flows=flows, mem_total_bytes=mem)['warnings'] == []


@pytest.mark.parametrize('flows', [0, -1, 1.5, '4.5', '0', 'four', '4 flows', '', True, [], {}])
def test_buffer_plan_flows_must_be_a_positive_int(flows):
    with pytest.raises(UnitError) as info:
        bdp.buffer_plan('1g', 98, flows=flows, mem_total_bytes=8 * GIB, names={'flows': 'wan_flows'})
    message = str(info.value)
    assert message.startswith('wan_flows: %s is not usable' % shown(flows))
    assert 'a whole number of concurrent flows, 1 or more' in message


@pytest.mark.parametrize('kwargs, name, fragment', [
    ({'rate': '1GB'}, 'wan_rate', 'is in bytes'),
    ({'rtt': '98m'}, 'wan_rtt', 'unknown unit'),
    ({'headroom': 1}, 'wan_headroom', 'is outside 2 to 64'),
    ({'headroom': '4x'}, 'wan_headroom', 'has a unit'),
    ({'flows': 0}, 'wan_flows', 'is not usable'),
])
def test_buffer_plan_errors_use_the_given_names(kwargs, name, fragment):
    args = dict({'rate': '1g', 'rtt': 98}, **kwargs)
    names = {'rate': 'wan_rate', 'rtt': 'wan_rtt', 'headroom': 'wan_headroom', 'flows': 'wan_flows'}
    with pytest.raises(UnitError) as info:
        bdp.buffer_plan(names=names, **args)
    assert str(info.value).startswith(name + ': ')
    assert fragment in str(info.value)


def test_buffer_plan_partial_names_keep_the_defaults():
    with pytest.raises(UnitError, match=r"^rtt: 'x'"):
        bdp.buffer_plan('1g', 'x', names={'rate': 'wan_rate'})


# --------------------------------------------------------------------------- human formats

@pytest.mark.parametrize('count, text', [
    (12250000, '12.25 MB'), (49000000, '49 MB'), (2147483647, '2.147 GB'), (1225000000, '1.225 GB'),
    (30625000, '30.625 MB'), (76562500, '76.563 MB'),
    (1500, '1.5 kB'), (999, '999 B'), (0, '0 B'),
])
def test_human_bytes(count, text):
    assert bdp.human_bytes(count) == text


@pytest.mark.parametrize('bps, text', [
    (10 ** 9, '1 Gbit/s'), (25 * 10 ** 8, '2.5 Gbit/s'), (10 ** 8, '100 Mbit/s'),
    (16 * 10 ** 11, '1.6 Tbit/s'), (1500, '1.5 kbit/s'), (12, '12 bit/s'),
])
def test_human_rate(bps, text):
    assert bdp.human_rate(bps) == text


# --------------------------------------------------------------------------- huge and odd values (issue 7)

@pytest.mark.parametrize('parse, value, fragment', [
    (bdp.parse_rate, '1e999999999', "'1e999999999' is far too large (about 10^999999999)"),
    (bdp.parse_rate, '1e9999', "'1e9999' is far too large (about 10^9999)"),
    (bdp.parse_rate, '1e-9999g', "'1e-9999g' is far too small (about 10^-9999)"),
    (bdp.parse_rate, 1e308, '1e+308 is far too large (about 10^308)'),
    (bdp.parse_rtt, '1e999999999', "'1e999999999' is far too large"),
    (bdp.parse_rtt, '1e-999999999s', "'1e-999999999s' is far too small"),
    (bdp.parse_headroom, '1e999999999', "'1e999999999' is far too large"),
])
def test_huge_exponents_are_refused_before_any_arithmetic(parse, value, fragment):
    with pytest.raises(UnitError) as info:
        parse(value, 'wan_value')
    message = str(info.value)
    assert message.startswith('wan_value: ')
    assert fragment in message
    assert 'expected ' in message
    assert len(message) < 300
    assert 'decimal' not in message and '<class' not in message


@pytest.mark.parametrize('parse', [bdp.parse_rate, bdp.parse_rtt, bdp.parse_headroom])
def test_long_strings_are_shortened_and_not_parsed(parse):
    with pytest.raises(UnitError) as info:
        parse('9' * 32000, 'wan_value')
    message = str(info.value)
    assert message.startswith("wan_value: '%s'... (32000 characters) is too long" % ('9' * 40))
    assert len(message) < 400


def test_huge_ints_are_shortened():
    with pytest.raises(UnitError) as info:
        bdp.parse_rate(10 ** 5000, 'wan_rate')
    message = str(info.value)
    assert message.startswith('wan_rate: 1%s... (5001 characters) is far too large' % ('0' * 39))
    assert len(message) < 400


def test_arithmetic_errors_become_unit_errors(monkeypatch):
    monkeypatch.setattr(bdp, '_number', lambda value, name, accepted: (Decimal('Infinity') * 0, ''))
    with pytest.raises(UnitError, match=r"^wan_rtt: '98' is not a usable number; expected a number in milliseconds"):
        bdp.parse_rtt('98', 'wan_rtt')


class _AnsibleTaggedList(list):
    """Stands in for ansible-core 2.19's tagged lists."""


def test_tagged_types_show_their_builtin_name():
    with pytest.raises(UnitError) as info:
        bdp.parse_rate(_AnsibleTaggedList(['1g']), 'wan_rate')
    assert "['1g'] (list) is not usable" in str(info.value)
    assert 'Tagged' not in str(info.value)


@pytest.mark.parametrize('value', [64.5, 65, '100', 1000, '1e3'])
def test_headroom_above_64_has_its_own_reason(value):
    with pytest.raises(UnitError) as info:
        bdp.parse_headroom(value, 'wan_headroom')
    message = str(info.value)
    assert_names_value_and_help(message, 'wan_headroom', value, HEADROOM_HELP)
    assert 'above 64 x BDP the buffers mostly waste memory' in message
    assert 'cannot fill the path' not in message


@pytest.mark.parametrize('value', [1, 1.99, '0'])
def test_headroom_below_2_keeps_its_reason(value):
    with pytest.raises(UnitError) as info:
        bdp.parse_headroom(value, 'wan_headroom')
    assert 'less than 2 x BDP cannot fill the path' in str(info.value)
    assert 'waste memory' not in str(info.value)


def test_parsers_keep_their_names_and_keyword_arguments():
    assert bdp.parse_rate.__name__ == 'parse_rate'
    assert bdp.parse_rate('1g', name='x') == 10 ** 9
    assert bdp.parse_rtt(98) == Decimal(98)


# --------------------------------------------------------------------------- memory guard and tcp_mem (issue 7, item 6)

PAGE = 4096
# The kernel's boot-time tcp_mem (tcp_init_mem) from L = pages / 16: min 3/4 x L, pressure L, max 2 x min = 3/2 x L.
TCP_MEM_16G = [196608, 262144, 393216]        # 16 GiB = 4194304 pages: L = 262144 (1 GiB), max 1.5 GiB
TCP_MEM_32G = [393216, 524288, 786432]        # 32 GiB
BUFFER_10G_98 = 980000000                     # 8 x BDP at 10 Gbit/s, 98 ms


def kernel_tcp_mem(mem_bytes, page=PAGE):
    limit = mem_bytes // page // 16
    return [limit // 4 * 3, limit, limit // 4 * 3 * 2]


def test_the_test_tcp_mem_values_are_the_kernels_formula():
    assert kernel_tcp_mem(16 * GIB) == TCP_MEM_16G
    assert kernel_tcp_mem(32 * GIB) == TCP_MEM_32G
    assert TCP_MEM_16G[2] * PAGE == 1.5 * GIB                       # max about 3/32 of RAM
    assert TCP_MEM_16G[1] * PAGE == GIB                             # pressure about 1/16 of RAM


PRESSURE_16G = (
    '4 flows x 980000000-byte buffers need 3738 MiB (957032 pages of 4096 bytes), above the net.ipv4.tcp_mem '
    'pressure mark of 262144 pages (1024 MiB; max 393216 pages, 1536 MiB). Past pressure the kernel shrinks the '
    'buffers of all TCP sockets and stops autotuning, so these flows cannot all grow to full size: lower the flow '
    'count or the headroom, or opt in to raising net.ipv4.tcp_mem to fit (tcp_buffers_fit_tcp_mem: true; module '
    'option memory_guard.fit_tcp_mem), which would set it to 196608 957032 1048576 (max capped at 25% of RAM).')
CAPPED_16G = (
    "4 flows x 980000000-byte buffers do not fit with the kernel's margin within 25% of this host's 16384 MiB RAM: "
    "raising the net.ipv4.tcp_mem pressure mark to 957032 pages (3738 MiB) for them needs max 1435548 pages "
    "(5607 MiB; 3/2 x pressure, the kernel's own ratio), so max is capped at 1048576 pages (4096 MiB); "
    "net.ipv4.tcp_mem is set to 196608 957032 1048576. Lower the flow count or the headroom, or raise "
    "tcp_buffers_memory_share if the host can spare the memory.")


def test_memory_plan_10g_98ms_4_flows_16gib_host_warns_about_tcp_mem():
    """The issue's case: the RAM-share guard is silent (3738 MiB < 4096 MiB), but tcp_mem pressure is 1 GiB."""
    plan = bdp.memory_plan(4, BUFFER_10G_98, 16 * GIB, PAGE, '196608\t262144\t393216')
    assert plan == {
        'flows': 4, 'buffer_bytes': 980000000, 'needed_bytes': 3920000000, 'page_size': 4096,
        'needed_pages': 957032,                                   # ceil(3920000000 / 4096) = ceil(957031.25)
        'mem_total_bytes': 17179869184, 'memory_share': 0.25, 'share_bytes': 4294967296,
        'tcp_mem': TCP_MEM_16G, 'tcp_mem_pressure_bytes': 1073741824, 'tcp_mem_max_bytes': 1610612736,
        'fits_tcp_mem': False, 'fits_memory_share': True, 'fits': False,
        # pressure 957032; max would be ceil(957032 x 3 / 2) = 1435548, above 25 % of RAM = 1048576 pages: capped
        'proposed_tcp_mem': [196608, 957032, 1048576], 'tcp_mem_capped': True,
        'summary': ('4 flows x 980000000-byte buffers = 3738 MiB (957032 pages of 4096 bytes); net.ipv4.tcp_mem '
                    '196608 262144 393216 pages (pressure 1024 MiB, max 1536 MiB); 25% of RAM = 4096 MiB'),
        'warnings': [PRESSURE_16G],
    }


def test_memory_plan_fit_on_16gib_is_capped_at_the_share_and_warns():
    plan = bdp.memory_plan(4, BUFFER_10G_98, 16 * GIB, PAGE, TCP_MEM_16G, fit_tcp_mem=True)
    assert plan['proposed_tcp_mem'] == [196608, 957032, 1048576]
    assert plan['tcp_mem_capped'] is True
    assert plan['warnings'] == [CAPPED_16G]


def test_memory_plan_fit_on_32gib_follows_the_rule_exactly():
    plan = bdp.memory_plan(4, BUFFER_10G_98, 32 * GIB, PAGE, TCP_MEM_32G, fit_tcp_mem=True)
    # pressure = max(524288, 957032); max = max(786432, ceil(957032 x 3 / 2)) = 1435548 <= 2097152 (25 % of RAM)
    assert plan['proposed_tcp_mem'] == [393216, 957032, 1435548]
    assert plan['tcp_mem_capped'] is False
    assert plan['warnings'] == []
    # without fit_tcp_mem the same proposal is named in the warning
    plain = bdp.memory_plan(4, BUFFER_10G_98, 32 * GIB, PAGE, TCP_MEM_32G)
    assert plain['proposed_tcp_mem'] == [393216, 957032, 1435548]
    assert plain['warnings'] == [
        '4 flows x 980000000-byte buffers need 3738 MiB (957032 pages of 4096 bytes), above the net.ipv4.tcp_mem '
        'pressure mark of 524288 pages (2048 MiB; max 786432 pages, 3072 MiB). Past pressure the kernel shrinks the '
        'buffers of all TCP sockets and stops autotuning, so these flows cannot all grow to full size: lower the flow '
        'count or the headroom, or opt in to raising net.ipv4.tcp_mem to fit (tcp_buffers_fit_tcp_mem: true; module '
        'option memory_guard.fit_tcp_mem), which would set it to 393216 957032 1435548.']


def test_memory_plan_1g_98ms_fits_the_kernel_default():
    plan = bdp.memory_plan(4, 98000000, 16 * GIB, PAGE, TCP_MEM_16G, fit_tcp_mem=True)
    assert plan['needed_pages'] == 95704                       # 392000000 / 4096 = 95703.125
    assert plan['fits'] is True and plan['fits_tcp_mem'] is True and plan['fits_memory_share'] is True
    assert plan['proposed_tcp_mem'] == TCP_MEM_16G             # nothing to raise
    assert plan['warnings'] == []


@pytest.mark.parametrize('tcp_mem, proposed', [
    ([196608, 2000000, 3000000], [196608, 2000000, 3000000]),   # the host's pressure already fits: unchanged
    ([196608, 262144, 3000000], [196608, 957032, 3000000]),     # its max already holds 3/2 x pressure: kept
    ([500000, 600000, 700000], [500000, 957032, 1435548]),      # min is never touched
])
def test_memory_plan_fit_never_lowers_a_field(tcp_mem, proposed):
    plan = bdp.memory_plan(4, BUFFER_10G_98, 32 * GIB, PAGE, tcp_mem, fit_tcp_mem=True)
    assert plan['proposed_tcp_mem'] == proposed
    assert plan['tcp_mem_capped'] is False
    assert all(new >= old for new, old in zip(plan['proposed_tcp_mem'], tcp_mem))


def test_memory_plan_keeps_a_host_max_above_the_share():
    # the host's own max (1200000 pages) is above 25 % of 16 GiB (1048576): kept, never lowered to the share
    plan = bdp.memory_plan(4, BUFFER_10G_98, 16 * GIB, PAGE, [196608, 262144, 1200000], fit_tcp_mem=True)
    assert plan['proposed_tcp_mem'] == [196608, 957032, 1200000]
    assert plan['tcp_mem_capped'] is True
    assert 'so max is capped at 1200000 pages (4687 MiB)' in plan['warnings'][0]


def test_memory_plan_flows_beyond_the_share_cap_pressure_too():
    plan = bdp.memory_plan(100, 98000000, 16 * GIB, PAGE, TCP_MEM_16G, fit_tcp_mem=True)
    assert plan['needed_pages'] == 2392579
    assert plan['proposed_tcp_mem'] == [196608, 1048576, 1048576]        # pressure never above max
    assert plan['warnings'] == [
        "100 flows x 98000000-byte buffers do not fit with the kernel's margin within 25% of this host's 16384 MiB "
        "RAM: raising the net.ipv4.tcp_mem pressure mark to 2392579 pages (9346 MiB) for them needs max 3588869 pages "
        "(14019 MiB; 3/2 x pressure, the kernel's own ratio), so max is capped at 1048576 pages (4096 MiB), and "
        "pressure at 1048576 pages (4096 MiB), below the 2392579 pages the flows need; net.ipv4.tcp_mem is set to "
        "196608 1048576 1048576. Lower the flow count or the headroom, or raise tcp_buffers_memory_share if the host "
        "can spare the memory.",
        "100 flows x 98000000-byte buffers need 9346 MiB, more than 25% of this host's 16384 MiB RAM; "
        "lower the flow count or headroom, or check net.ipv4.tcp_mem (pages) allows it."]


def test_memory_plan_share_changes_the_cap():
    plan = bdp.memory_plan(4, BUFFER_10G_98, 16 * GIB, PAGE, TCP_MEM_16G, memory_share='0.5', fit_tcp_mem=True)
    assert plan['proposed_tcp_mem'] == [196608, 957032, 1435548]          # 1435548 <= 2097152 pages (50 %)
    assert plan['warnings'] == []


def test_memory_plan_pressure_is_compared_in_bytes_of_the_page_size():
    # exactly the pressure mark: fits; one byte more: the pressure warning
    assert bdp.memory_plan(1, 262144 * PAGE, None, PAGE, TCP_MEM_16G)['warnings'] == []
    assert len(bdp.memory_plan(1, 262144 * PAGE + 1, None, PAGE, TCP_MEM_16G)['warnings']) == 1
    # 64 KiB pages (arm64, ppc64le): the same tcp_mem holds 16 times more
    assert bdp.memory_plan(4, BUFFER_10G_98, None, 65536, TCP_MEM_16G)['fits_tcp_mem'] is True


def test_memory_plan_with_unknown_inputs():
    only_ram = bdp.memory_plan(4, BUFFER_10G_98, 16 * GIB)
    assert only_ram['tcp_mem'] is None and only_ram['fits_tcp_mem'] is None
    assert only_ram['proposed_tcp_mem'] is None and only_ram['warnings'] == []
    only_tcp_mem = bdp.memory_plan(4, BUFFER_10G_98, None, PAGE, TCP_MEM_16G, fit_tcp_mem=True)
    assert only_tcp_mem['fits_memory_share'] is None and only_tcp_mem['proposed_tcp_mem'] is None
    # no proposal without RAM to cap it: the pressure warning stays, with no tcp_mem to opt in to
    assert only_tcp_mem['warnings'][0].endswith('so these flows cannot all grow to full size: lower the flow count '
                                                'or the headroom.')


@pytest.mark.parametrize('flows, count', [(4, 4), ('4', 4), (' 4 ', 4), ('+4', 4), (4.0, 4), ('0004', 4)])
def test_flows_accept_whole_numbers_and_their_strings(flows, count):
    assert bdp.flow_count(flows) == count
    assert bdp.memory_plan(flows, 1000)['flows'] == count
    assert bdp.buffer_plan('1g', 98, flows=flows, mem_total_bytes=8 * GIB)['warnings'] == []


@pytest.mark.parametrize('flows', ['4.0', '1e3', '-4', '4 flows', 'four', '', 0, 1.5, float('nan'), True, None,
                                   '9' * 19])
def test_flows_refuse_the_rest_and_say_what_is_accepted(flows):
    with pytest.raises(UnitError) as info:
        bdp.flow_count(flows, 'tcp_buffers_flows')
    message = str(info.value)
    assert message.startswith('tcp_buffers_flows: ')
    assert "a whole number of concurrent flows, 1 or more: 4, or the same digits as a string ('4', as " \
           "-e tcp_buffers_flows=4 passes it)" in message


@pytest.mark.parametrize('kwargs, start', [
    ({'memory_share': 0}, 'memory_share: 0 is outside 0 to 1'),
    ({'memory_share': '1.5'}, "memory_share: '1.5' is outside 0 to 1"),
    ({'memory_share': 'half'}, "memory_share: 'half' is not usable"),
    ({'tcp_mem_pages': '1 2'}, "net.ipv4.tcp_mem: '1 2' is not usable; expected three whole numbers of pages"),
    ({'tcp_mem_pages': [1, 2, 'x']}, "net.ipv4.tcp_mem: 'x' is not usable"),
    ({'page_size': 0}, 'page_size: 0 is not usable'),
    ({'buffer_bytes': -1}, 'buffer_bytes: -1 is not usable'),
])
def test_memory_plan_bad_inputs(kwargs, start):
    args = dict({'flows': 4, 'buffer_bytes': BUFFER_10G_98, 'mem_total_bytes': 16 * GIB}, **kwargs)
    with pytest.raises(UnitError) as info:
        bdp.memory_plan(**args)
    assert str(info.value).startswith(start), str(info.value)


def test_buffer_plan_memory_guard_with_tcp_mem():
    plan = bdp.buffer_plan('10g', 98, flows='4', mem_total_bytes=16 * GIB, tcp_mem_pages=TCP_MEM_16G)
    assert plan['buffer_bytes'] == BUFFER_10G_98
    assert plan['warnings'] == [PRESSURE_16G]
    # the RAM share alone stays silent: the gap
    assert bdp.buffer_plan('10g', 98, flows=4, mem_total_bytes=16 * GIB)['warnings'] == []


# --------------------------------------------------------------------------- clamp below the 2 x BDP floor

def test_clamp_100g_300ms_names_the_parallel_streams():
    plan = bdp.buffer_plan('100g', 300)
    assert plan['bdp_bytes'] == 3750000000                                # 3.75 GB
    assert plan['buffer_bytes'] == bdp.INT_MAX
    assert bdp.streams_needed(2 * 3750000000) == 4                        # 7.5 GB / 2147483647 = 3.49
    assert bdp.streams_needed(8 * 3750000000) == 14                       # 30 GB / 2147483647 = 13.97
    assert plan['warnings'] == [
        '8 x BDP is 30000000000 bytes, above the kernel limit 2147483647; buffers are clamped to 2147483647, below '
        'the 2 x BDP floor of 7500000000 bytes, so one TCP stream cannot fill this path at 300 ms (a clamped buffer '
        'holds 2 x BDP only up to 28633 Mbit/s, 8 x BDP up to 7158 Mbit/s). Split the transfer over parallel streams: '
        'at least 4 for the 2 x BDP floor (2 x BDP / 2147483647, rounded up) and 14 for 8 x BDP '
        '(8 x BDP / 2147483647, rounded up).']


def test_clamp_below_the_floor_with_headroom_2_names_one_count():
    (warning,) = bdp.buffer_plan('100g', 300, headroom=2)['warnings']
    assert warning == (
        '2 x BDP is 7500000000 bytes, above the kernel limit 2147483647; buffers are clamped to 2147483647, below '
        'the 2 x BDP floor of 7500000000 bytes, so one TCP stream cannot fill this path at 300 ms (a clamped buffer '
        'holds 2 x BDP only up to 28633 Mbit/s). Split the transfer over parallel streams: at least 4 for the '
        '2 x BDP floor (2 x BDP / 2147483647, rounded up).')


def test_clamp_above_the_floor_keeps_its_message():
    # 10g, 300 ms: 8 x BDP = 3 GB is clamped, but 2 x BDP = 750 MB fits, so one stream still fills the path
    assert bdp.buffer_plan('10g', 300)['warnings'] == [
        '8 x BDP is 3000000000 bytes, above the kernel limit 2147483647; buffers are clamped to 2147483647, which '
        'still gives 8 x BDP up to 7158 Mbit/s and the 2 x BDP floor up to 28633 Mbit/s at 300 ms.']


@pytest.mark.parametrize('total, streams', [(1, 1), (bdp.INT_MAX, 1), (bdp.INT_MAX + 1, 2), (0, 1)])
def test_streams_needed(total, streams):
    assert bdp.streams_needed(total) == streams
