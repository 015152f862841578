# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The BDP filters (plugins/filter/bdp.py), called the way Jinja2 calls them."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.filter import bdp as bdp_filter
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp as bdp_utils


@pytest.fixture
def filters():
    return bdp_filter.FilterModule().filters()


@pytest.fixture
def warnings(monkeypatch):
    """Messages passed to Display.warning by the filters."""
    shown = []
    monkeypatch.setattr(bdp_filter.display, 'warning', lambda msg, *args, **kwargs: shown.append(msg))
    return shown


def test_filter_names(filters):
    assert sorted(filters) == ['bdp', 'human_bytes', 'rate_bps', 'rtt_ms', 'tcp_buffer', 'tcp_buffer_plan']
    assert filters['human_bytes'](12250000) == '12.25 MB'
    assert all(callable(function) for function in filters.values())


# --------------------------------------------------------------------------- values

@pytest.mark.parametrize('rate, rtt, expected', [
    ('1g', 98, 12250000),
    ('1g', '98ms', 12250000),
    ('1 Gbit/s', '0.098s', 12250000),
    (1000000000, 98.0, 12250000),
    ('10g', '98000us', 122500000),
])
def test_bdp(filters, rate, rtt, expected):
    assert filters['bdp'](rate, rtt) == expected


def test_bdp_1g_98(filters):
    assert filters['bdp']('1g', 98) == 12250000


def test_tcp_buffer(filters, warnings):
    assert filters['tcp_buffer']('1g', 98) == 98000000
    assert filters['tcp_buffer']('1g', 98, 2) == 24500000
    assert filters['tcp_buffer']('1g', 98, headroom='2.5') == 30625000
    assert warnings == []


def test_tcp_buffer_clamps_and_warns(filters, warnings):
    assert filters['tcp_buffer']('100g', 98) == 2147483647
    assert len(warnings) == 1
    assert 'above the kernel limit 2147483647' in warnings[0]


@pytest.mark.parametrize('value, bps', [('1g', 10 ** 9), ('2.5gbit', 25 * 10 ** 8), ('100mbps', 10 ** 8),
                                        (1000000000, 10 ** 9)])
def test_rate_bps(filters, value, bps):
    assert filters['rate_bps'](value) == bps


@pytest.mark.parametrize('value, ms', [(98, 98.0), ('98ms', 98.0), ('0.098s', 98.0), ('98000us', 98.0),
                                       ('98.5', 98.5)])
def test_rtt_ms(filters, value, ms):
    result = filters['rtt_ms'](value)
    assert result == ms
    assert isinstance(result, float)


def test_tcp_buffer_plan(filters, warnings):
    plan = filters['tcp_buffer_plan']('1g', 98)
    assert plan == bdp_utils.buffer_plan('1g', 98)
    assert plan['buffer_bytes'] == 98000000
    assert plan['netdev_max_backlog'] == 2500
    assert warnings == []


def test_tcp_buffer_plan_memory_guard_from_megabytes(filters, warnings):
    plan = filters['tcp_buffer_plan']('1g', 98, flows=100, mem_total_mb=8192)
    assert plan['warnings'] == [
        "100 flows x 98000000-byte buffers need 9346 MiB, more than 25% of this host's 8192 MiB RAM; "
        "lower the flow count or headroom, or check net.ipv4.tcp_mem (pages) allows it."]
    assert warnings == plan['warnings']          # each warning is shown once


def test_tcp_buffer_plan_mem_total_mb_as_string(filters, warnings):
    plan = filters['tcp_buffer_plan']('1g', 98, flows=10, mem_total_mb='8192')
    assert plan['warnings'] == []


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize('name, args, start, fragment', [
    ('rate_bps', ('1GB',), "rate: '1GB'", 'multiply by 8'),
    ('rate_bps', ('1GB', 'wan_rate'), "wan_rate: '1GB'", 'multiply by 8'),
    ('rate_bps', ('',), "rate: ''", 'is not a number with a unit'),
    ('rate_bps', (None, 'wan_rate'), 'wan_rate: None (NoneType)', 'is not usable'),
    ('rtt_ms', ('98m',), "rtt: '98m'", "unknown unit 'm'"),
    ('rtt_ms', ('11s', 'wan_rtt'), "wan_rtt: '11s'", 'outside 0.001 ms to 10 s'),
    ('bdp', ('1GB', 98), "rate: '1GB'", 'is in bytes'),
    ('bdp', ('1g', 0), 'rtt: 0', 'must be above zero'),
    ('tcp_buffer', ('1g', 98, 1), 'headroom: 1', 'is outside 2 to 64'),
    ('tcp_buffer', ('1g', 98, '4x'), "headroom: '4x'", 'has a unit'),
    ('tcp_buffer', ('5000', 98), "rate: '5000'", 'below 1 Mbit/s'),
])
def test_errors_raise_ansible_filter_error(filters, name, args, start, fragment):
    with pytest.raises(AnsibleFilterError) as info:
        filters[name](*args)
    message = str(info.value)
    assert message.startswith(start), message
    assert fragment in message


def test_unit_error_does_not_leak(filters):
    with pytest.raises(AnsibleFilterError) as info:
        filters['bdp']('fast', 98)
    assert not isinstance(info.value, bdp_utils.UnitError)


NAMES = {'rate': 'bdp_wan_rate', 'rtt': 'bdp_wan_rtt', 'headroom': 'bdp_buffer_headroom', 'flows': 'bdp_flows'}


@pytest.mark.parametrize('kwargs, start', [
    ({'rate': '1GB'}, "bdp_wan_rate: '1GB' is in bytes"),
    ({'rtt': '98 minutes'}, "bdp_wan_rtt: '98 minutes' has an unknown unit"),
    ({'headroom': 65}, 'bdp_buffer_headroom: 65 is outside 2 to 64'),
    ({'flows': 0, 'mem_total_mb': 8192}, 'bdp_flows: 0 is not usable'),
])
def test_tcp_buffer_plan_names_appear_in_errors(filters, kwargs, start):
    args = dict({'rate': '1g', 'rtt': 98}, **kwargs)
    with pytest.raises(AnsibleFilterError) as info:
        filters['tcp_buffer_plan'](names=NAMES, **args)
    assert str(info.value).startswith(start)


# --------------------------------------------------------------------------- memory guard with tcp_mem (issue 7, item 6)

def test_tcp_buffer_plan_checks_tcp_mem_on_the_controller(filters, warnings):
    plan = filters['tcp_buffer_plan']('10g', 98, flows=4, mem_total_mb=16384, tcp_mem='196608 262144 393216')
    assert plan['buffer_bytes'] == 980000000
    assert plan['warnings'] == bdp_utils.memory_plan(4, 980000000, 16 * 2 ** 30, 4096, [196608, 262144, 393216])[
        'warnings']
    assert plan['warnings'][0].startswith('4 flows x 980000000-byte buffers need 3738 MiB (957032 pages of 4096 '
                                          'bytes), above the net.ipv4.tcp_mem pressure mark of 262144 pages')
    assert warnings == plan['warnings']
    # 64 KiB pages hold 16 times more
    assert filters['tcp_buffer_plan']('10g', 98, flows=4, tcp_mem=[196608, 262144, 393216],
                                      page_size=65536)['warnings'] == []


def test_tcp_buffer_plan_takes_flows_as_a_string(filters, warnings):
    # -e tcp_buffers_flows=4 passes '4'
    assert filters['tcp_buffer_plan']('1g', 98, flows='4', mem_total_mb='8192')['warnings'] == []
    with pytest.raises(AnsibleFilterError) as info:
        filters['tcp_buffer_plan']('1g', 98, flows='4.5', names={'flows': 'tcp_buffers_flows'})
    assert str(info.value).startswith("tcp_buffers_flows: '4.5' is not usable; expected a whole number of "
                                      "concurrent flows, 1 or more")


def test_tcp_buffer_plan_clamp_names_the_streams(filters, warnings):
    plan = filters['tcp_buffer_plan']('100g', 300)
    assert plan['buffer_bytes'] == 2147483647
    assert 'at least 4 for the 2 x BDP floor' in warnings[0] and '14 for 8 x BDP' in warnings[0]
