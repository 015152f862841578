# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""iperf3 output parsing (module_utils/verify/iperf3.py) and the window-limited ceiling (module_utils/verify/throughput.py).

Fixtures in tests/unit/fixtures/iperf3:

* iperf3-3.12-*.json are recorded on the project machine (iperf 3.12, Linux 6.18, 127.0.0.1) with the command
  lines the modules build: a server ``iperf3 -s -1 -D -J`` (as bdp.wan_tune.iperf3_server starts it) and a client
  ``iperf3 -c 127.0.0.1 -t 3 -O 1 -P 1 -J --get-server-output --connect-timeout 5000`` (forward), plus -R
  (reverse), -P 2 -C cubic, -w 262144, no server (refused), a second client during a test (busy) and
  -C nosuchcc (congestion-unavailable).  3.12 exits 0 even on these errors; only the JSON tells.
* iperf3-3.1.3-forward.json is hand-made in the 3.1.3 layout: no sender/receiver_tcp_congestion (added in
  3.1.4), no sock_bufsize/sndbuf_actual/rcvbuf_actual (3.2), no max_snd_cwnd/min_rtt/mean_rtt, no "sender"
  flags, server output as text.
* iperf3-3.16-forward.json is the 3.12 recording in the 3.16 layout (bidir and fqrate in test_start) with
  different sender and receiver congestion controls.
* broken-*.json are the 3.12 recording broken the ways iperf3 output breaks: warnings before the JSON, a
  partial object before the full one, nan / -nan literals, output cut off, an error-only object.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import throughput

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'iperf3')


def text(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def summary(name):
    return iperf3.summarize(iperf3.parse_output(text(name)))


# --------------------------------------------------------------------------- versions

@pytest.mark.parametrize('output, version, string', [
    ('iperf 3.12 (cJSON 1.7.15)\nLinux vm 6.18.44 #1 SMP x86_64\n', (3, 12, 0), '3.12'),
    ('iperf 3.1.3\nLinux client 3.10.0-514.el7.x86_64\n', (3, 1, 3), '3.1.3'),
    ('iperf 3.16+ (cJSON 1.7.15)\n', (3, 16, 0), '3.16'),
    ('iperf 3.0.11\n', (3, 0, 11), '3.0.11'),
    ('iperf 3.9 (cJSON 1.7.13)', (3, 9, 0), '3.9'),
])
def test_parse_version(output, version, string):
    assert iperf3.parse_version(output) == version
    assert iperf3.version_string(version) == string


@pytest.mark.parametrize('output', ['iperf version 2.1.8 (12 August 2022) pthreads', '', None, 'command not found'])
def test_parse_version_refuses_other_programs(output):
    assert iperf3.parse_version(output) is None


# --------------------------------------------------------------------------- recorded 3.12 output

def test_forward_run_figures():
    fig = summary('iperf3-3.12-forward.json')
    doc = json.loads(text('iperf3-3.12-forward.json'))
    assert fig['iperf3_version'] == '3.12'
    assert fig['peer_iperf3_version'] == '3.12'
    assert fig['sender_bps'] == int(round(doc['end']['sum_sent']['bits_per_second']))
    assert fig['receiver_bps'] == int(round(doc['end']['sum_received']['bits_per_second']))
    assert fig['retransmits'] == doc['end']['sum_sent']['retransmits']
    sender = doc['end']['streams'][0]['sender']
    assert fig['max_snd_cwnd_bytes'] == sender['max_snd_cwnd']
    assert fig['max_snd_wnd_bytes'] == sender['max_snd_wnd']
    assert fig['mean_rtt_ms'] == round(sender['mean_rtt'] / 1000.0, 3)     # iperf3 reports microseconds
    assert fig['min_rtt_ms'] == round(sender['min_rtt'] / 1000.0, 3)
    assert fig['congestion'] == {'sender': 'bbr', 'receiver': 'bbr'}
    assert fig['cpu_utilization_percent']['host_total'] == doc['end']['cpu_utilization_percent']['host_total']
    assert fig['socket_buffers']['local'] == {'sock_bufsize': 0, 'sndbuf_actual': 16384, 'rcvbuf_actual': 131072}
    assert fig['socket_buffers']['remote'] == {'sock_bufsize': 0, 'sndbuf_actual': 16384, 'rcvbuf_actual': 131072}
    assert fig['mss'] == 32768 and fig['streams'] == 1 and fig['reverse'] is False


def test_reverse_run_takes_sender_figures_from_the_server():
    doc = json.loads(text('iperf3-3.12-reverse.json'))
    local = doc['end']['streams'][0]['sender']
    assert local['max_snd_cwnd'] == 0 and local['mean_rtt'] == 0        # the client did not send
    remote = doc['server_output_json']['end']['streams'][0]['sender']
    fig = summary('iperf3-3.12-reverse.json')
    assert fig['reverse'] is True
    assert fig['max_snd_cwnd_bytes'] == remote['max_snd_cwnd'] > 0
    assert fig['mean_rtt_ms'] == round(remote['mean_rtt'] / 1000.0, 3)
    assert fig['retransmits'] == doc['end']['sum_sent']['retransmits']
    assert fig['receiver_bps'] == int(round(doc['end']['sum_received']['bits_per_second']))


def test_reverse_without_server_json_leaves_figures_unknown():
    doc = json.loads(text('iperf3-3.12-reverse.json'))
    del doc['server_output_json']
    fig = iperf3.summarize(doc)
    assert fig['max_snd_cwnd_bytes'] is None and fig['mean_rtt_ms'] is None
    assert fig['socket_buffers']['remote'] is None
    assert fig['receiver_bps'] > 0


def test_parallel_streams_take_the_largest_cwnd_and_mean_rtt():
    doc = json.loads(text('iperf3-3.12-parallel-cubic.json'))
    senders = [stream['sender'] for stream in doc['end']['streams']]
    fig = summary('iperf3-3.12-parallel-cubic.json')
    assert fig['streams'] == 2
    assert fig['max_snd_cwnd_bytes'] == max(item['max_snd_cwnd'] for item in senders)
    assert fig['mean_rtt_ms'] == round(sum(item['mean_rtt'] for item in senders) / 2 / 1000.0, 3)
    assert fig['congestion'] == {'sender': 'cubic', 'receiver': 'cubic'}


def test_window_run_reports_the_doubled_socket_buffers():
    fig = summary('iperf3-3.12-window.json')
    assert fig['socket_buffers']['local'] == {'sock_bufsize': 262144, 'sndbuf_actual': 524288,
                                              'rcvbuf_actual': 524288}
    assert fig['max_snd_wnd_bytes'] < 524288


@pytest.mark.parametrize('name, kind', [
    ('iperf3-3.12-refused.json', iperf3.REFUSED),
    ('iperf3-3.12-busy.json', iperf3.BUSY),
    ('iperf3-3.12-congestion-unavailable.json', iperf3.CONGESTION),
    ('broken-error-only.json', iperf3.UNREACHABLE),
])
def test_error_objects(name, kind):
    doc = iperf3.parse_output(text(name))
    assert doc['error']
    assert iperf3.classify_error(doc['error']) == kind
    assert iperf3.summarize(doc)['receiver_bps'] is None


@pytest.mark.parametrize('message, kind', [
    ('the server is busy running a test. try again later', iperf3.BUSY),
    ('unable to connect to server: Connection refused', iperf3.REFUSED),
    ('unable to connect to server: No route to host', iperf3.UNREACHABLE),
    ('unable to connect to server - server may have stopped running or use a different port, firewall issue, '
     'etc.: Operation now in progress', iperf3.UNREACHABLE),
    ('unable to connect to server: Connection timed out', iperf3.UNREACHABLE),
    ('unable to connect to server: Name or service not known', iperf3.RESOLVE),
    ('unable to set TCP_CONGESTION: Supplied congestion control algorithm not supported on this host',
     iperf3.CONGESTION),
    ('control socket has closed unexpectedly', iperf3.OTHER),
    ('', iperf3.OTHER),
    (None, iperf3.OTHER),
])
def test_classify_error(message, kind):
    assert iperf3.classify_error(message) == kind


# --------------------------------------------------------------------------- other versions

def test_old_313_layout_gives_none_for_missing_fields():
    fig = summary('iperf3-3.1.3-forward.json')
    assert fig['iperf3_version'] == '3.1.3'
    assert fig['receiver_bps'] == 939509928 and fig['sender_bps'] == 940348757
    assert fig['retransmits'] == 3
    assert fig['max_snd_cwnd_bytes'] is None and fig['max_snd_wnd_bytes'] is None
    assert fig['mean_rtt_ms'] is None and fig['min_rtt_ms'] is None
    assert fig['congestion'] == {'sender': None, 'receiver': None}
    assert fig['socket_buffers'] == {'local': None, 'remote': None}
    assert fig['peer_iperf3_version'] is None
    assert fig['mss'] == 1448


def test_new_316_layout():
    fig = summary('iperf3-3.16-forward.json')
    assert fig['iperf3_version'] == '3.16' and fig['peer_iperf3_version'] == '3.16'
    assert fig['congestion'] == {'sender': 'bbr', 'receiver': 'cubic'}
    assert fig['max_snd_wnd_bytes'] > 0 and fig['max_snd_cwnd_bytes'] > 0


# --------------------------------------------------------------------------- broken output

def test_warning_text_before_the_json():
    assert text('broken-warning-before-json.json').startswith('warning:')
    assert summary('broken-warning-before-json.json') == summary('iperf3-3.12-forward.json')


def test_concatenated_objects_take_the_last_with_results():
    objects, truncated = iperf3.json_objects(text('broken-concatenated.json'))
    assert len(objects) == 2 and not truncated
    assert objects[0]['end'] == {}
    assert summary('broken-concatenated.json') == summary('iperf3-3.12-forward.json')


def test_cut_off_object_before_and_after_a_complete_one():
    full = text('iperf3-3.12-forward.json')
    expected = summary('iperf3-3.12-forward.json')
    assert iperf3.summarize(iperf3.parse_output(full[:3000] + '\n' + full)) == expected
    assert iperf3.summarize(iperf3.parse_output(full + '\n' + full[:3000])) == expected


def test_nested_objects_of_a_broken_object_are_not_taken_as_the_result():
    # server_output_json has an "end" of its own; a damaged client object must not be replaced by it
    full = text('iperf3-3.12-forward.json')
    damaged = full.replace('"sum_sent":', '"sum_sent" oops', 1)
    with pytest.raises(iperf3.OutputError):
        iperf3.parse_output(damaged)


def test_complete_result_then_error_object_keeps_the_result():
    full = text('iperf3-3.12-forward.json')
    doc = iperf3.parse_output(full + '{\n\t"error":\t"control socket has closed unexpectedly"\n}\n')
    assert 'error' not in doc and iperf3.has_results(doc)


def test_nan_literals_become_none():
    with pytest.raises(ValueError):
        json.loads(text('broken-nan.json'))
    fig = summary('broken-nan.json')
    assert fig['cpu_utilization_percent'] == {'host_total': None, 'remote_total': None}
    assert fig['receiver_bps'] == summary('iperf3-3.12-forward.json')['receiver_bps']


def test_nan_inside_strings_is_kept():
    doc = iperf3.parse_output('{"error": "nan -nan inf", "end": {"sum_sent": {"bits_per_second": -nan}}}')
    assert doc['error'] == 'nan -nan inf'
    assert doc['end']['sum_sent']['bits_per_second'] is None


def test_receiver_nan_is_none_not_zero():
    doc = iperf3.parse_output('{"end": {"sum_sent": {"bits_per_second": 1e9}, '
                              '"sum_received": {"bits_per_second": nan}}}')
    assert iperf3.summarize(doc)['receiver_bps'] is None


def test_truncated_output():
    with pytest.raises(iperf3.OutputError, match='middle of its JSON'):
        iperf3.parse_output(text('broken-truncated.json'))


@pytest.mark.parametrize('output', ['', None, 'iperf3: error - unable to connect to server: Connection refused\n'])
def test_no_json_at_all(output):
    with pytest.raises(iperf3.OutputError, match='no JSON'):
        iperf3.parse_output(output)


def test_stray_braces_in_warning_text():
    full = text('iperf3-3.12-forward.json')
    doc = iperf3.parse_output('iperf3: warning - report interval too large {see -i}\n' + full)
    assert iperf3.has_results(doc)


# --------------------------------------------------------------------------- throughput.py: the ceiling

def test_window_limited_by_a_stock_send_buffer():
    # 1 Gbit/s, 98 ms, this host's net.ipv4.tcp_wmem max 4 MiB: 4194304 x 8 / 0.098 s = 342 Mbit/s < 1 Gbit/s
    send = throughput.window_limit('send window (local net.ipv4.tcp_wmem max)', 4194304,
                                   throughput.SEND_WINDOW_FACTOR, '/proc/sys/net/ipv4/tcp_wmem', 'client')
    result = throughput.ceiling('1g', 98, [send])
    assert result['limit'] == 'send window (local net.ipv4.tcp_wmem max)'
    assert result['ceiling_bps'] == 342392163
    assert [item['name'] for item in result['limits']] == ['send window (local net.ipv4.tcp_wmem max)', 'link rate']


def test_link_limited_with_tuned_buffers():
    # 4 x BDP = 49000000 bytes: 49000000 x 8 / 0.098 s = 4 Gbit/s > 1 Gbit/s
    send = throughput.window_limit('send window (local net.ipv4.tcp_wmem max)', 49000000,
                                   throughput.SEND_WINDOW_FACTOR, '/proc/sys/net/ipv4/tcp_wmem', 'client')
    receive = throughput.window_limit('receive window (peer net.ipv4.tcp_rmem max)', 49000000,
                                      throughput.RECEIVE_WINDOW_FACTOR, 'peer_rmem_max', 'peer')
    result = throughput.ceiling('1g', 98, [send, receive])
    assert result['limit'] == 'link rate' and result['ceiling_bps'] == 10 ** 9
    assert receive['usable_bytes'] == 24500000
    assert result['limits'][1]['bps'] == 2000000000


def test_receive_window_is_half_the_rmem_max():
    # stock tcp_rmem max 6 MiB: 3145728 usable bytes, 256.8 Mbit/s at 98 ms (docs/bdp.md: "about 250 Mbit/s")
    assert throughput.RECEIVE_WINDOW_FACTOR == Decimal('0.5')
    receive = throughput.window_limit('receive window (peer net.ipv4.tcp_rmem max)', 6291456,
                                      throughput.RECEIVE_WINDOW_FACTOR, 'peer_rmem_max', 'peer')
    assert receive['usable_bytes'] == 3145728
    result = throughput.ceiling('1g', '98ms', [receive])
    assert result['ceiling_bps'] == 256794122 and result['limit'].startswith('receive window')


def test_streams_multiply_the_window_part_only():
    send = throughput.window_limit('send window', 4194304, 1, 'x', 'h')
    result = throughput.ceiling('1g', 98, [send], streams=4)
    assert result['limit'] == 'link rate'
    assert result['limits'][1]['bps'] == 4 * 342392163 + 1       # floor of the exact product


def test_ceiling_without_rtt_is_the_rate_and_without_anything_none():
    send = throughput.window_limit('send window', 4194304, 1, 'x', 'h')
    assert throughput.ceiling('10g', None, [send]) == {
        'ceiling_bps': 10 ** 10, 'limit': 'link rate', 'limits': [{'name': 'link rate', 'bps': 10 ** 10}]}
    assert throughput.ceiling(None, None, [send]) == {'ceiling_bps': None, 'limit': None, 'limits': []}
    assert throughput.ceiling(None, 98, [send])['limit'] == 'send window'


def test_ceiling_uses_bdp_parsing():
    with pytest.raises(bdp.UnitError, match='in bytes'):
        throughput.ceiling('1GB', 98)
    with pytest.raises(bdp.UnitError, match='unknown unit'):
        throughput.ceiling('1g', '1min')
    # an RTT bdp.parse_rtt already returned (Decimal) is taken as is
    assert throughput.window_bps(4194304, bdp.parse_rtt('0.098s')) == throughput.window_bps(4194304, 98)


@pytest.mark.parametrize('value, size', [
    (4194304, 4194304), ('4194304', 4194304), ('512K', 524288), ('4M', 4194304), ('4m', 4194304),
    ('4MiB', 4194304), ('1.5M', 1572864), ('1G', 1073741824),
])
def test_parse_size(value, size):
    assert throughput.parse_size(value) == size


@pytest.mark.parametrize('value', ['4 MB/s', 'lots', '', None, True, 100, '3G'])
def test_parse_size_refuses(value):
    with pytest.raises(bdp.UnitError, match='window'):
        throughput.parse_size(value)


@pytest.mark.parametrize('value, size', [
    (6291456, 6291456), ('6291456', 6291456), ('4096 131072 6291456', 6291456), ('4096\t131072\t6291456\n', 6291456),
    ([4096, 131072, 6291456], 6291456),
])
def test_buffer_max(value, size):
    assert throughput.buffer_max(value, 'peer_rmem_max') == size


@pytest.mark.parametrize('value', ['', 'big', None, True, '4096 131072 -1', [], 0])
def test_buffer_max_refuses(value):
    with pytest.raises(bdp.UnitError, match='peer_rmem_max'):
        throughput.buffer_max(value, 'peer_rmem_max')


def test_near_window():
    # 3145728 bytes per 98 ms = 256.8 Mbit/s; within 20 %: 205.4 .. 308.2 Mbit/s
    assert throughput.near_window(250e6, 3145728, 98)
    assert throughput.near_window(210e6, 3145728, 98)
    assert not throughput.near_window(200e6, 3145728, 98)
    assert not throughput.near_window(940e6, 3145728, 98)
    assert throughput.near_window(4 * 250e6, 3145728, 98, streams=4)
    assert not throughput.near_window(None, 3145728, 98)


def test_mathis_limit():
    # 1448-byte segments, 98 ms, 0.1 % loss: 1448 x 8 / 0.098 x 1.22 / 0.0316 = 4.56 Mbit/s (Reno)
    assert 4500000 < throughput.mathis_bps(1448, 98, 0.001) < 4600000
    assert throughput.mathis_bps(1448, 98, 0) is None
