# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""iperf3_verify: run over recorded iperf3 output (run_command mocked), the ceiling from a fake /proc/sys,
the verdict messages, retries, failures, check mode, and one real test over 127.0.0.1 with iperf3_server."""

from __future__ import annotations

import json
import os
import random
import shutil
import time

import pytest

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.modules import iperf3_server
from ansible_collections.bdp.wan_tune.plugins.modules import iperf3_verify

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        'fixtures', 'iperf3')
VERSION_312 = 'iperf 3.12 (cJSON 1.7.15)\nLinux vm 6.18.44 #1 SMP x86_64\n'
BINS = {'iperf3': '/usr/bin/iperf3', 'timeout': '/usr/bin/timeout'}
PEER = '198.18.0.2'


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def doc(name='iperf3-3.12-forward.json'):
    return json.loads(fixture(name))


def wan(receiver_bps, rtt_us=98400, min_rtt_us=98100, cwnd=24500000, snd_wnd=24500000, retransmits=0,
        congestion='bbr', host_cpu=12.0, remote_cpu=15.0, mss=1448, seconds=10.0):
    """The recorded forward run, turned into a 1 Gbit/s, 98 ms WAN result with these figures."""
    result = doc()
    result['start']['tcp_mss_default'] = mss
    sent = int(receiver_bps * seconds / 8)
    for block in (result['end']['sum_sent'], result['end']['streams'][0]['sender']):
        block.update(bits_per_second=float(receiver_bps), bytes=sent, seconds=seconds, retransmits=retransmits)
    for block in (result['end']['sum_received'], result['end']['streams'][0]['receiver']):
        block.update(bits_per_second=float(receiver_bps), bytes=sent, seconds=seconds)
    result['end']['streams'][0]['sender'].update(max_snd_cwnd=cwnd, max_snd_wnd=snd_wnd, mean_rtt=rtt_us,
                                                 min_rtt=min_rtt_us, max_rtt=rtt_us + 500)
    result['end']['sender_tcp_congestion'] = result['end']['receiver_tcp_congestion'] = congestion
    result['end']['cpu_utilization_percent'].update(host_total=host_cpu, remote_total=remote_cpu)
    return json.dumps(result, indent='\t')


class Runner(object):
    """Stands in for AnsibleModule.run_command: answers --version, then the queued iperf3 outputs."""

    def __init__(self, outputs, version=VERSION_312):
        self.outputs = list(outputs)
        self.version = version
        self.calls = []

    def __call__(self, module, args, **kwargs):
        self.calls.append(list(args))
        if args[-1] == '--version':
            return (0, self.version, '') if isinstance(self.version, str) else self.version
        item = self.outputs.pop(0)
        return item if isinstance(item, tuple) else (0, item, '')

    @property
    def runs(self):
        return [call for call in self.calls if call[-1] != '--version']


@pytest.fixture
def iperf(monkeypatch, proc):
    """Mock iperf3: returns a function that queues outputs; /proc/sys holds stock buffers."""
    proc.set('net.ipv4.tcp_wmem', '4096\t16384\t4194304')
    proc.set('net.ipv4.tcp_rmem', '4096\t131072\t6291456')
    proc.set('net.core.wmem_max', '212992')
    proc.set('net.core.rmem_max', '212992')
    bins = dict(BINS)
    sleeps = []
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path',
                        lambda self, name, required=False, opt_dirs=None: bins.get(name))
    monkeypatch.setattr(iperf3_verify.time, 'sleep', sleeps.append)
    monkeypatch.setattr(iperf3_verify.platform, 'node', lambda: 'client1')

    def install(*outputs, **kwargs):
        runner = Runner(outputs, **kwargs)

        def run_command(module, args, **kwargs):
            return runner(module, args, **kwargs)

        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
        runner.bins, runner.sleeps = bins, sleeps
        return runner

    return install


def verify(run_module, **args):
    args.setdefault('server', PEER)
    return run_module(iperf3_verify.main, args)


# --------------------------------------------------------------------------- a passing run

def test_pass_returns_the_figures_and_never_changed(run_module, iperf):
    runner = iperf(fixture('iperf3-3.12-forward.json'))
    result = verify(run_module, rate='1g', rtt=0.5)
    recorded = doc()
    assert result['rc'] == 0 and result['changed'] is False and result['passed'] is True
    assert result['measured'] is True
    assert result['receiver_bps'] == int(round(recorded['end']['sum_received']['bits_per_second']))
    assert result['sender_bps'] == int(round(recorded['end']['sum_sent']['bits_per_second']))
    assert result['retransmits'] == recorded['end']['sum_sent']['retransmits']
    assert result['max_snd_cwnd_bytes'] == recorded['end']['streams'][0]['sender']['max_snd_cwnd']
    assert result['mean_rtt_ms'] == recorded['end']['streams'][0]['sender']['mean_rtt'] / 1000.0
    assert result['congestion'] == {'sender': 'bbr', 'receiver': 'bbr'}
    assert result['iperf3_version'] == '3.12' and result['peer_iperf3_version'] == '3.12'
    assert result['socket_buffers']['local']['rcvbuf_actual'] == 131072
    assert result['expectation'] == 'ceiling' and result['expectation_bps'] == 10 ** 9
    assert result['fraction'] == round(result['receiver_bps'] / 1e9, 3)
    assert result['diagnosis'] == [] and result['attempts'] == 1
    assert 'passed' in result['msg']
    assert runner.runs == [['/usr/bin/timeout', '-k', '5', '47', '/usr/bin/iperf3', '-c', PEER, '-p', '5201',
                            '-t', '10', '-O', '2', '-P', '1', '-J', '--get-server-output',
                            '--connect-timeout', '5000']]
    assert result['command'] == runner.runs[0][4:]


def test_options_reach_iperf3(run_module, iperf):
    runner = iperf(fixture('iperf3-3.12-reverse.json'))
    result = verify(run_module, port=5299, duration=3, omit=1, parallel=4, reverse=True, congestion='cubic',
                    window='4M', connect_timeout=2.5, timeout=60, expected_bps='1m')
    assert result['rc'] == 0
    assert runner.runs[0] == ['/usr/bin/timeout', '-k', '5', '60', '/usr/bin/iperf3', '-c', PEER, '-p', '5299',
                              '-t', '3', '-O', '1', '-P', '4', '-J', '--get-server-output', '-R', '-C', 'cubic',
                              '-w', '4194304', '--connect-timeout', '2500']


def test_runs_without_timeout_binary_with_a_warning(run_module, iperf):
    runner = iperf(fixture('iperf3-3.12-forward.json'))
    del runner.bins['timeout']
    result = verify(run_module, rate='1g')
    assert runner.runs[0][0] == '/usr/bin/iperf3'
    assert any('timeout (coreutils) is not installed' in msg for msg in result['warning_msgs'])


def test_old_iperf3_gets_no_connect_timeout_and_none_for_missing_figures(run_module, iperf):
    runner = iperf(fixture('iperf3-3.1.3-forward.json'), version='iperf 3.1.3\n')
    result = verify(run_module, rate='1g', rtt=1)
    assert '--connect-timeout' not in runner.runs[0]
    assert result['passed'] is True and result['iperf3_version'] == '3.1.3'
    assert result['max_snd_cwnd_bytes'] is None and result['mean_rtt_ms'] is None
    assert result['congestion'] == {'sender': None, 'receiver': None}


def test_newer_iperf3_layout(run_module, iperf):
    iperf(fixture('iperf3-3.16-forward.json'), version='iperf 3.16 (cJSON 1.7.15)\n')
    result = verify(run_module, expected_bps='1g')
    assert result['passed'] is True and result['congestion'] == {'sender': 'bbr', 'receiver': 'cubic'}
    assert result['peer_iperf3_version'] == '3.16' and result['expectation'] == 'expected_bps'


@pytest.mark.parametrize('name', ['broken-warning-before-json.json', 'broken-concatenated.json',
                                  'broken-nan.json'])
def test_broken_but_readable_output(run_module, iperf, name):
    iperf(fixture(name))
    result = verify(run_module, rate='1g')
    assert result['rc'] == 0 and result['receiver_bps'] == int(round(
        doc()['end']['sum_received']['bits_per_second']))


def test_no_expectation_measures_without_judging(run_module, iperf):
    iperf(fixture('iperf3-3.12-forward.json'))
    result = verify(run_module)
    assert result['rc'] == 0 and result['passed'] is None and result['fraction'] is None
    assert result['ceiling_bps'] is None and result['expectation'] == 'none'
    assert 'Not judged: give rate and rtt' in result['msg']


# --------------------------------------------------------------------------- the ceiling

def test_ceiling_window_limited_by_local_wmem(run_module, iperf):
    iperf(wan(330000000))
    result = verify(run_module, rate='1g', rtt=98)
    assert result['limit'] == 'send window (local net.ipv4.tcp_wmem max)'
    assert result['ceiling_bps'] == 342392163 == result['expectation_bps']
    assert result['passed'] is True
    assert any('set by the send window (local net.ipv4.tcp_wmem max), below the link rate 1 Gbit/s' in msg
               and 'pass expected_bps: 1g to demand it' in msg for msg in result['warning_msgs'])


def test_ceiling_link_limited_by_tuned_buffers(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(940000000))
    result = verify(run_module, rate='1g', rtt=98, peer_rmem_max='4096 131072 49000000')
    assert result['limit'] == 'link rate' and result['ceiling_bps'] == 10 ** 9
    assert [item['name'] for item in result['limits']] == [
        'link rate', 'receive window (peer net.ipv4.tcp_rmem max)', 'send window (local net.ipv4.tcp_wmem max)']
    assert result['limits'][1]['usable_bytes'] == 24500000 and result['limits'][1]['factor'] == 0.5
    assert result['limits'][1]['host'] == PEER and result['passed'] is True and result['warning_msgs'] == []


def test_ceiling_receive_window_from_peer_rmem(run_module, iperf):
    iperf(wan(250000000, snd_wnd=3145728))
    result = verify(run_module, rate='1g', rtt=98, peer_rmem_max=6291456)
    assert result['limit'] == 'receive window (peer net.ipv4.tcp_rmem max)'
    assert result['ceiling_bps'] == 256794122


def test_ceiling_reverse_swaps_roles(run_module, iperf):
    iperf(fixture('iperf3-3.12-reverse.json'))
    result = verify(run_module, rate='1g', rtt=98, reverse=True, peer_wmem_max='4096 16384 4194304',
                    peer_rmem_max=49000000)
    names = [item['name'] for item in result['limits']]
    assert names == ['receive window (local net.ipv4.tcp_rmem max)', 'send window (peer net.ipv4.tcp_wmem max)',
                     'link rate']
    assert result['ceiling_bps'] == 256794122                 # this host's stock tcp_rmem max 6 MiB x 0.5
    assert result['limits'][1]['host'] == PEER and result['limits'][0]['host'] == 'client1'


def test_ceiling_with_window_option_capped_by_local_core_max(run_module, iperf):
    iperf(fixture('iperf3-3.12-window.json'))
    result = verify(run_module, rate='1g', rtt=98, window='4M', peer_rmem_max=49000000)
    limits = dict((item['name'], item) for item in result['limits'])
    # the peer doubles 4 MiB and advertises half of it; this host's net.core.wmem_max (212992) caps its send buffer
    assert limits['receive window (window option -w 4194304)']['usable_bytes'] == 4194304
    assert limits['send window (local net.core.wmem_max caps the window option)']['buffer_bytes'] == 2 * 212992
    assert result['limit'] == 'send window (local net.core.wmem_max caps the window option)'


def test_parallel_streams_raise_the_window_ceiling(run_module, iperf):
    iperf(fixture('iperf3-3.12-parallel-cubic.json'))
    result = verify(run_module, rate='10g', rtt=98, parallel=4)
    assert result['ceiling_bps'] == 4 * 342392163 + 1


# --------------------------------------------------------------------------- verdicts

def failed(result):
    assert result['rc'] == 1 and result['failed'] is True and result['passed'] is False
    assert result['changed'] is False and result['measured'] is True
    return result['msg']


def test_verdict_receive_window_on_the_server(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(250000000, snd_wnd=3145728))
    result = verify(run_module, expected_bps='1g', rtt=98, peer_rmem_max='4096 131072 6291456')
    msg = failed(result)
    assert 'Likely limit: receive window on %s (net.ipv4.tcp_rmem max = 6291456)' % PEER in msg
    assert 'bdp.wan_tune.tcp_buffers' in msg and result['fraction'] == 0.25
    assert result['diagnosis'][0].startswith('receive window on %s' % PEER)


def test_verdict_receive_window_from_configured_rmem_when_iperf3_does_not_report_it(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(250000000, snd_wnd=0))
    msg = failed(verify(run_module, expected_bps='1g', rtt=98, peer_rmem_max=6291456))
    assert 'Likely limit: receive window on %s (net.ipv4.tcp_rmem max = 6291456): 6291456 x 0.5 usable' % PEER in msg


def test_verdict_send_window_on_this_host(run_module, iperf):
    iperf(wan(330000000))
    msg = failed(verify(run_module, expected_bps='1g', rtt=98, peer_rmem_max=49000000))
    assert 'Likely limit: send window on this host (client1) (net.ipv4.tcp_wmem max = 4194304)' in msg
    assert 'Raise net.ipv4.tcp_wmem max on this host (client1)' in msg


def test_verdict_window_option(run_module, iperf, proc):
    proc.set('net.core.wmem_max', '67108864')
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(300000000, snd_wnd=20000000))
    msg = failed(verify(run_module, expected_bps='1g', rtt=98, window='3600K'))
    assert 'window set by the window option (-w 3686400' in msg and 'Leave window unset' in msg


def test_verdict_window_option_is_named_even_when_the_advertised_window_matches(run_module, iperf, proc):
    proc.set('net.core.wmem_max', '67108864')
    iperf(wan(300000000, snd_wnd=3686400))
    msg = failed(verify(run_module, expected_bps='1g', rtt=98, window='3600K', peer_rmem_max=6291456))
    assert 'Likely limit: receive window set by the window option (-w 3686400' in msg
    assert 'tcp_rmem' not in msg.split('Also seen')[0]


def test_verdict_loss_with_cubic(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(105000000, retransmits=95, congestion='cubic'))
    result = verify(run_module, rate='1g', rtt=98, peer_rmem_max=49000000)
    msg = failed(result)
    assert 'Likely limit: loss with CUBIC: 95 retransmits' in msg
    assert 'Enable BBR (bdp.wan_tune.bbr) on the sending host, this host (client1)' in msg


def test_verdict_loss_with_reno_in_reverse_names_the_peer_as_sender(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_rmem', '4096 131072 49000000')
    iperf(wan(105000000, retransmits=400, congestion='reno'))
    msg = failed(verify(run_module, rate='1g', rtt=98, reverse=True, peer_wmem_max=49000000))
    assert 'loss with RENO' in msg and 'on the sending host, %s' % PEER in msg


def test_verdict_heavy_loss_with_bbr(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(300000000, retransmits=5000))
    msg = failed(verify(run_module, rate='1g', rtt=98, peer_rmem_max=49000000))
    assert 'Likely limit: loss: 5000 retransmits' in msg and 'even with bbr' in msg


def test_verdict_queueing(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(400000000, rtt_us=320000, congestion='cubic'))
    msg = failed(verify(run_module, rate='1g', rtt=98, peer_rmem_max=49000000))
    assert 'Likely limit: queueing (bufferbloat): the mean RTT was 320 ms against the path\'s 98 ms' in msg


def test_verdict_queueing_without_rtt_uses_the_smallest_rtt_sample(run_module, iperf):
    iperf(wan(400000000, rtt_us=320000, min_rtt_us=98000, snd_wnd=60000000))
    msg = failed(verify(run_module, expected_bps='1g'))
    assert 'queueing (bufferbloat): the mean RTT was 320 ms against the path\'s 98 ms' in msg


@pytest.mark.parametrize('host_cpu, remote_cpu, where', [(99.5, 20, 'this host (client1)'), (10, 97, PEER)])
def test_verdict_cpu(run_module, iperf, proc, host_cpu, remote_cpu, where):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(500000000, host_cpu=host_cpu, remote_cpu=remote_cpu, retransmits=2000, congestion='cubic'))
    result = verify(run_module, rate='1g', rtt=98, peer_rmem_max=49000000)
    msg = failed(result)
    assert 'Likely limit: CPU on %s: iperf3 used' % where in msg
    assert 'Also seen: loss with CUBIC' in msg and len(result['diagnosis']) == 2


def test_verdict_path_mtu_black_hole(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(400000, cwnd=14480, retransmits=40, rtt_us=99000))
    msg = failed(verify(run_module, rate='1g', rtt=98, peer_rmem_max=49000000))
    assert 'Likely limit: path MTU black hole: the congestion window never grew past 14480 bytes (10 segments' in msg
    assert 'tcp_mtu_probing = 1' in msg and 'ping -M do -s 1472 %s' % PEER in msg


def test_verdict_without_a_clear_cause(run_module, iperf, proc):
    proc.set('net.ipv4.tcp_wmem', '4096 16384 49000000')
    iperf(wan(500000000))
    msg = failed(verify(run_module, rate='1g', rtt=98, peer_rmem_max=49000000, min_fraction=0.9))
    assert 'Likely limit: no single cause stands out' in msg and 'below min_fraction 0.9' in msg


def test_no_receiver_rate_fails(run_module, iperf):
    broken = doc()
    broken['end']['sum_received']['bits_per_second'] = 0
    iperf(json.dumps(broken))
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and 'without a receiver rate' in result['msg']


# --------------------------------------------------------------------------- errors and retries

def test_busy_server_is_retried_with_growing_jittered_delays(run_module, iperf):
    busy = fixture('iperf3-3.12-busy.json')
    runner = iperf(busy, busy, fixture('iperf3-3.12-forward.json'))
    result = verify(run_module, rate='1g', retry_delay=4)
    assert result['rc'] == 0 and result['attempts'] == 3 and len(runner.runs) == 3
    first, second = runner.sleeps
    assert 2 <= first <= 6 and 4 <= second <= 12


def test_busy_server_fails_after_the_retries_naming_the_peer(run_module, iperf):
    busy = fixture('iperf3-3.12-busy.json')
    runner = iperf(busy, busy, busy)
    result = verify(run_module, rate='1g', retries=2, port=5202)
    assert result['rc'] == 1 and result['attempts'] == 3 and len(runner.sleeps) == 2
    assert 'The iperf3 server on %s port 5202 was busy with another test in all 3 attempts' % PEER in result['msg']
    assert 'port: 0' in result['msg']


def test_refused(run_module, iperf):
    runner = iperf(fixture('iperf3-3.12-refused.json'))
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and len(runner.runs) == 1 and runner.sleeps == []
    assert result['msg'].startswith('Nothing listens on %s port 5201 (unable to connect to server: Connection '
                                    'refused). Is the iperf3 server running?' % PEER)
    assert 'bdp.wan_tune.iperf3_server and delegate_to: %s' % PEER in result['msg']
    assert result['error_kind'] == 'refused'


def test_refused_on_stderr_only(run_module, iperf):
    iperf((1, '', 'iperf3: error - unable to connect to server: Connection refused\n'))
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and 'Is the iperf3 server running?' in result['msg']


def test_unreachable(run_module, iperf):
    iperf(fixture('broken-error-only.json'))
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and result['msg'].startswith('Cannot reach %s port 5201 (unable to connect to server: '
                                                          'No route to host)' % PEER)


def test_congestion_control_unavailable(run_module, iperf):
    iperf(fixture('iperf3-3.12-congestion-unavailable.json'))
    result = verify(run_module, rate='1g', congestion='nosuchcc')
    assert result['rc'] == 1 and "could not use congestion control 'nosuchcc'" in result['msg']
    assert 'bdp.wan_tune.tcp_congestion (algorithm: nosuchcc)' in result['msg']


def test_timeout(run_module, iperf):
    iperf((124, fixture('broken-truncated.json'), ''))
    result = verify(run_module, rate='1g', duration=5, omit=0)
    assert result['rc'] == 1
    assert result['msg'].startswith('iperf3 to %s port 5201 did not finish within 40 s and was stopped' % PEER)


def test_truncated_output(run_module, iperf):
    iperf((0, fixture('broken-truncated.json'), ''))
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and 'ends in the middle of its JSON result' in result['msg']


def test_other_error_text(run_module, iperf):
    iperf((1, '', 'iperf3: parameter error - some option is odd\n'))
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and 'printed no JSON result' in result['msg'] and 'parameter error' in result['msg']


def test_iperf3_missing(run_module, iperf):
    runner = iperf()
    del runner.bins['iperf3']
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and runner.calls == []
    assert result['msg'].startswith('iperf3 was not found on this host; install the iperf3 package')


def test_iperf3_path_missing(run_module, iperf, tmp_path):
    iperf()
    result = verify(run_module, rate='1g', iperf3_path=str(tmp_path / 'iperf3'))
    assert result['rc'] == 1 and 'not found on this host at %s' % (tmp_path / 'iperf3') in result['msg']


def test_iperf3_too_old(run_module, iperf):
    runner = iperf(version='iperf 3.0.11\n')
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and runner.runs == []
    assert 'iperf3 3.0.11 on this host is older than 3.1' in result['msg']


def test_iperf2_is_not_iperf3(run_module, iperf):
    iperf(version='iperf version 2.1.8 (12 August 2022) pthreads\n')
    result = verify(run_module, rate='1g')
    assert result['rc'] == 1 and 'which is not iperf3' in result['msg']


@pytest.mark.parametrize('args, text', [
    ({'rate': '1GB'}, "rate: '1GB' is in bytes"),
    ({'rtt': '1min'}, "rtt: '1min' has an unknown unit"),
    ({'expected_bps': '100'}, 'expected_bps: \'100\' is 100 bit/s'),
    ({'window': 'big'}, "window: 'big' is not a size"),
    ({'peer_rmem_max': 'lots'}, "peer_rmem_max: 'lots' is not a buffer size"),
    ({'min_fraction': 0}, 'min_fraction: 0.0 is out of range'),
    ({'min_fraction': 1.5}, 'min_fraction: 1.5 is out of range'),
    ({'port': 0}, 'port: 0 is out of range'),
    ({'parallel': 0}, 'parallel: 0 is out of range'),
    ({'server': ' '}, 'server: give the address'),
])
def test_bad_options_fail_before_any_run(run_module, iperf, args, text):
    runner = iperf()
    result = verify(run_module, **args)
    assert result['rc'] == 1 and text in result['msg'] and runner.calls == []


# --------------------------------------------------------------------------- check mode

def test_check_mode_measures_nothing(run_module, iperf):
    runner = iperf()
    result = verify(run_module, rate='1g', rtt=98, _ansible_check_mode=True)
    assert result['rc'] == 0 and result['changed'] is False and result['measured'] is False
    assert runner.runs == []
    assert result['msg'].startswith('Check mode: no measurement was made')
    assert result['ceiling_bps'] == 342392163 and result['command'][:3] == ['/usr/bin/iperf3', '-c', PEER]
    assert result['receiver_bps'] is None and result['passed'] is None and result['attempts'] == 0
    assert result['congestion'] is None and result['fraction'] is None and result['diagnosis'] == []


def test_check_mode_warns_when_iperf3_is_missing(run_module, iperf):
    runner = iperf()
    del runner.bins['iperf3']
    result = verify(run_module, rate='1g', _ansible_check_mode=True)
    assert result['rc'] == 0 and runner.calls == []
    assert any('iperf3 is not installed on this host' in msg for msg in result['warning_msgs'])


# --------------------------------------------------------------------------- real run over 127.0.0.1

@pytest.mark.skipif(shutil.which('iperf3') is None, reason='iperf3 is not installed')
def test_end_to_end_over_loopback(run_module, tmp_path, monkeypatch):
    """iperf3_server starts a one-test server on a free port; iperf3_verify measures against it for real."""
    monkeypatch.setattr(iperf3_server, 'default_pid_dir', lambda: str(tmp_path / 'run'))
    first = random.randrange(40000, 59990)          # a random block, so parallel runs of the suite do not collide
    started = run_module(iperf3_server.main, {'port': 0, 'port_range': [first, first + 9], 'idle_timeout': 30,
                                              'user': 'root'})   # the unprivileged server: test_iperf3_guest.py
    assert started['rc'] == 0 and started['changed'] is True, started['msg']
    pid, port = started['pid'], started['port']
    try:
        result = run_module(iperf3_verify.main, {'server': '127.0.0.1', 'port': port, 'duration': 1, 'omit': 0,
                                                 'rate': '1g', 'rtt': '0.1ms', 'retries': 0})
        assert result['rc'] == 0, result['msg']
        assert result['passed'] is True and result['measured'] is True and result['changed'] is False
        assert result['receiver_bps'] > 10 ** 8 and result['sender_bps'] > 10 ** 8
        assert result['iperf3_version'] and result['peer_iperf3_version'] == result['iperf3_version']
        assert result['max_snd_cwnd_bytes'] > 0 and result['mean_rtt_ms'] > 0
        assert result['socket_buffers']['remote'] is not None        # the server runs with -J
        deadline = time.time() + 5
        while iperf3_server.iperf3_process(pid) and time.time() < deadline:
            time.sleep(0.1)
        assert not iperf3_server.iperf3_process(pid), 'the one-off server should exit after its test'
    finally:
        stopped = run_module(iperf3_server.main, {'port': port, 'state': 'absent'})
    assert stopped['rc'] == 0 and stopped['changed'] is False and stopped['stopped'] == []
    assert started['logfile'] in stopped['removed'] and not os.path.exists(started['logfile'])
