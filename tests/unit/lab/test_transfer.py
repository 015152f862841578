# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The transfer lab's own logic (tests/lab/transfer.py): the window arithmetic, the file tree and its split
into streams, CPU per process from /proc samples, the JSON entry of a transport, the table and the Markdown.
The lab run itself is tests/integration/test_transfer_lab.py."""

from __future__ import annotations

import os
import re
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO_ROOT, 'tests', 'lab'))

import transfer  # noqa: E402  pylint: disable=wrong-import-position,import-error
import wanlab  # noqa: E402  pylint: disable=wrong-import-position,import-error


def test_ssh_window_ceiling_is_171_mbit_at_98_ms():
    assert transfer.SSH_WINDOW_BYTES == 2097152
    assert round(transfer.window_ceiling_bps(transfer.SSH_WINDOW_BYTES, 98) / 1e6, 1) == 171.2
    assert round(transfer.window_ceiling_bps(transfer.SSH_WINDOW_BYTES, 28) / 1e6, 1) == 599.2


@pytest.mark.parametrize('size, streams, files', [
    (2 * 10 ** 9, 4, 16),           # 15 files of 128 MiB, rounded up to a multiple of 4
    (400 * 10 ** 6, 4, 4),          # 3 files of 128 MiB, but at least one per stream
    (10 ** 6, 1, 1),
    (10 ** 12, 4, 64),              # at most 64
    (2 * 10 ** 9, 5, 15),           # 15 is already a multiple of 5
])
def test_file_count(size, streams, files):
    assert transfer.file_count(size, streams) == files


def test_file_sizes_add_up():
    sizes = transfer.file_sizes(1001, 4)
    assert sizes == [251, 250, 250, 250] and sum(sizes) == 1001
    assert transfer.file_sizes(3, 8) == [1, 1, 1]


def test_split_streams_balances_bytes_and_keeps_every_file():
    files = [('a', 100), ('b', 90), ('c', 10), ('d', 10), ('e', 5)]
    groups = transfer.split_streams(files, 2)
    assert sorted(sum(groups, [])) == ['a', 'b', 'c', 'd', 'e']
    loads = [sum(dict(files)[name] for name in group) for group in groups]
    assert max(loads) - min(loads) <= 5, groups
    assert transfer.split_streams(files[:2], 4) == [['a'], ['b']]       # no empty stream


def test_cpu_usage_counts_new_processes_from_zero_and_ignores_idle_ones():
    sample = {'clk_tck': 100,
              'first': {'1': ['systemd', 500], '40': ['sshd', 10]},
              'last': {'1': ['systemd', 500], '40': ['sshd', 12], '77': ['sshd', 950], '78': ['rsync', 300]}}
    used = transfer.cpu_usage(sample, 10.0)
    assert used == [{'pid': 77, 'comm': 'sshd', 'cores': 0.95}, {'pid': 78, 'comm': 'rsync', 'cores': 0.3},
                    {'pid': 40, 'comm': 'sshd', 'cores': 0.002}]
    assert transfer.cpu_usage(sample, 0) == []
    assert transfer.is_cpu_limited({'cpu': {'A': [], 'B': used}})
    assert not transfer.is_cpu_limited({'cpu': {'A': used[1:], 'B': []}})
    assert not transfer.is_cpu_limited({'bps': None, 'error': 'x'})


def run(bps, cores=0.1, error=None):
    if error:
        return {'bps': None, 'error': error}
    return {'bps': bps, 'seconds': 10.0, 'verified': True, 'error': None, 'steady_bps': bps * 1.1,
            'cpu': {'A': [{'pid': 9, 'comm': 'ssh', 'cores': cores}], 'B': []}}


def test_summarize_method():
    entry = transfer.summarize_method(run(150e6), run(160e6, cores=0.97))
    assert entry['stock_bps'] == 150e6 and entry['tuned_bps'] == 160e6
    assert entry['cpu_limited'] is True and entry['error'] is None
    same = transfer.summarize_method(run(0, error='no binary'), run(0, error='no binary'))
    assert same['error'] == 'no binary' and same['stock_bps'] is None and same['cpu_limited'] is False
    one = transfer.summarize_method(run(150e6), run(0, error='exit 12: broken pipe'))
    assert one['error'] == 'tuned: exit 12: broken pipe' and one['stock_bps'] == 150e6


TLS = {'protocol': 'TLSv1.3', 'cipher': 'TLS_AES_256_GCM_SHA384', 'verified': True, 'sessions': 1}


def tls_run(bps, tls=None):
    return dict(run(bps), tls=tls or TLS)


def result():
    methods = {
        'scp': transfer.summarize_method(run(150e6), run(160e6)),
        'rsync_ssh': transfer.summarize_method(run(164e6), run(165e6)),
        'rsync_ssh_parallel': transfer.summarize_method(run(900e6), run(910e6)),
        'rsync_daemon': transfer.summarize_method(run(210e6), run(950e6)),
        'rsync_daemon_parallel': transfer.summarize_method(run(800e6), run(960e6, cores=1.0)),
        'rsync_tls': transfer.summarize_method(tls_run(205e6), tls_run(940e6)),
        'rsync_tls_parallel': transfer.summarize_method(tls_run(790e6), tls_run(955e6, dict(TLS, verified=False))),
        'hpnssh': transfer.summarize_method(run(0, error=transfer.NO_HPNSSH), run(0, error=transfer.NO_HPNSSH)),
    }
    return {'rate_bps': 10 ** 9, 'rtt_ms': 98.0, 'streams': 4, 'ssh_streams': 8, 'size_bytes': 2 * 10 ** 9,
            'files': 16,
            'link': '1 Gbit/s, 98 ms RTT', 'command': 'make transfer', 'finished': '2026-11-23 00:00 UTC',
            'ssh_window_ceiling_bps': round(transfer.window_ceiling_bps(transfer.SSH_WINDOW_BYTES, 98)),
            'methods': methods}


def test_table_rows_and_markdown():
    rows = transfer.rows(result())
    assert [r[0] for r in rows] == ['scp (OpenSSH)', 'rsync over SSH (OpenSSH)', 'rsync over SSH, 8 streams',
                                    'rsync daemon, 1 stream (cleartext)', 'rsync daemon, 4 streams (cleartext)',
                                    'rsync daemon over TLS, 1 stream', 'rsync daemon over TLS, 4 streams',
                                    'HPN-SSH (hpnscp)']
    assert rows[0][1:7] == ('150', '15 %', '160', '16 %', '165 / 176', 'no')
    assert rows[0][7] == 'SSH window ceiling 171 Mbit/s'
    assert rows[2][7] == '8 x the SSH window ceiling = 1370 Mbit/s'
    assert rows[3][1:5] == ('210', '21 %', '950', '95 %')
    assert rows[4][6] == 'yes'
    assert rows[5][1:5] == ('205', '20 %', '940', '94 %')
    assert rows[5][7] == 'TLSv1.3 TLS_AES_256_GCM_SHA384, server certificate verified'
    assert rows[6][7].endswith('server certificate NOT verified')
    assert rows[7][1:7] == ('-', '-', '-', '-', '- / -', 'no') and 'no HPN-SSH package for Debian 12' in rows[7][7]
    text = transfer.table(result())
    assert text.splitlines()[0].split() == ['transport', 'stock', 'Mbit/s', 'stock', 'share', 'tuned', 'Mbit/s',
                                            'tuned', 'share', 'steady', 'stock', '/', 'tuned', 'CPU-bound']
    assert 'HPN-SSH (hpnscp): no HPN-SSH binary' in text
    md = transfer.markdown(result())
    assert '| rsync daemon, 1 stream (cleartext) | 210 | 21 % | 950 | 95 % | 231 / 1045 | no |  |' in md
    assert md.count('\n|') == 10 + 9     # header, rule, eight transports; then the CPU table: header, rule, seven
    assert '| rsync daemon over TLS, 1 stream | ssh 0.10 | - |' in md


def test_commands_name_the_transports():
    class Lab(object):
        @staticmethod
        def address(host):
            return wanlab.ADDR[host]

        @staticmethod
        def host_name(host):
            return 'bdp-lab-' + host.lower()
    lab = Lab()
    assert transfer.commands(lab, 'scp', 4).startswith('scp -q -r -o BatchMode=yes /srv/xfer/src root@198.18.0.2:')
    assert 'rsync://xfer@198.18.0.2/xfer/rsync_daemon/' in transfer.commands(lab, 'rsync_daemon', 4)
    parallel = transfer.commands(lab, 'rsync_daemon_parallel', 3)
    assert parallel.count('--files-from=/srv/xfer/parts/3/') == 3 and 'wait $p || rc=1' in parallel
    assert 'echo "stream 2 $s $(date +%s.%N)" >>"$err/2"' in parallel and 'cat "$err"/* >&2' in parallel
    tls = transfer.commands(lab, 'rsync_tls', 4)
    # the collection's TLS client (rsynctls.client_command) with the lab's openssl wrapper, which adds -brief
    assert tls.startswith('RSYNC_CONNECT_PROG="/usr/local/bin/openssl-brief s_client -quiet -verify_quiet '
                          '-verify_return_error -tls1_3 -CAfile /etc/bdp-wan-tune/rsync-tls-client/transfer-lab/'
                          'bdp-lab-b/ca.crt -cert /etc/bdp-wan-tune/rsync-tls-client/transfer-lab/bdp-lab-b/host.crt '
                          '-key /etc/bdp-wan-tune/rsync-tls-client/transfer-lab/bdp-lab-b/host.key -servername \'%H\' '
                          '-verify_hostname \'%H\' -connect \'[%H]:874\'" rsync -M--no-msgs2stderr -a --password-file=')
    assert tls.endswith('rsync://xfer@198.18.0.2/xfer/rsync_tls/') and 'rsync-ssl' not in tls
    assert transfer.commands(lab, 'rsync_tls_parallel', 4).count('RSYNC_CONNECT_PROG=') == 4
    ssh = transfer.commands(lab, 'rsync_ssh_parallel', 4, ssh_streams=8)
    assert ssh.count('--files-from=/srv/xfer/parts/8/') == 8 and 'root@198.18.0.2:/srv/xfer/in/rsync_ssh_parallel/' in ssh
    with pytest.raises(ValueError):
        transfer.commands(lab, 'ftp', 1)


def test_size_and_streams_are_checked():
    assert wanlab.parse_bytes('400m', '--size') == 400 * 10 ** 6
    assert wanlab.parse_bytes('2GiB', '--size') == 2 * 2 ** 30
    with pytest.raises(wanlab.LabError, match='--size: .* is not a byte count'):
        wanlab.parse_bytes('2 gallons', '--size')
    with pytest.raises(SystemExit):
        transfer.parse_args(['--streams', '0'])
    with pytest.raises(SystemExit):
        transfer.parse_args(['--ssh-streams', '65'])
    assert transfer.parse_args(['--size', '400m']).command == \
        'make transfer RATE=1g RTT=98 LOSS=0 MTU=9000 SIZE=400m STREAMS=4 SSH_STREAMS=8'


def test_steady_bps_is_the_best_rate_over_the_window():
    # 1 s of handshake, then 2 MiB per 0.098 s (171 Mbit/s) for 4 s, then a stall of 2 s
    series = [[t / 10.0, 0] for t in range(11)]
    series += [[1.0 + t / 10.0, round(t / 10.0 * 2097152 / 0.098)] for t in range(1, 41)]
    series += [[5.0 + t / 10.0, series[-1][1]] for t in range(1, 21)]
    assert round(transfer.steady_bps(series, 3.0) / 1e6) == 171
    assert transfer.steady_bps(series[:20], 3.0) is None         # under 3 s of samples
    assert transfer.steady_bps([], 3.0) is None
    whole = (series[-1][1] - series[0][1]) * 8 / (series[-1][0] - series[0][0])
    assert whole < 0.6 * transfer.steady_bps(series, 3.0)


def test_sampler_reads_bytes_acked_from_ss():
    text = ('ESTAB 0      2033256    198.18.0.1:50410   198.18.0.2:22  \n'
            '\t cubic wscale:7,7 rto:300 rtt:99.186/0.272 bytes_sent:827981261 bytes_acked:825948006 segs_out:1\n'
            'ESTAB 0      0    198.18.0.1:50412   198.18.0.2:873  \n'
            '\t bbr wscale:11,11 rto:304 bytes_acked:229 bytes_received:200\n')
    regex = transfer.SAMPLER.split("re.findall(r'")[1].split("', text)")[0]
    assert re.findall(regex, text) == [('198.18.0.1:50410', '825948006'), ('198.18.0.1:50412', '229')]


def test_tls_session_from_s_client_brief():
    one = ('verify depth is 4\nCONNECTION ESTABLISHED\nProtocol version: TLSv1.3\nCiphersuite: TLS_AES_256_GCM_SHA384\n'
           'Peer certificate: CN = receiver\nVerification: OK\nVerified peername: 198.18.0.2\n')
    assert transfer.tls_session(one) == TLS
    four = transfer.tls_session(one * 4)
    assert four['sessions'] == 4 and four['verified'] is True and four['protocol'] == 'TLSv1.3'
    failed = one * 3 + one.replace('Verification: OK', 'Verification error: unable to get local issuer certificate')
    assert transfer.tls_session(failed)['verified'] is False
    assert transfer.tls_session(one + one.replace('TLSv1.3', 'TLSv1.2'))['protocol'] == 'TLSv1.3 TLSv1.2'
    assert transfer.tls_session('rsync: connection refused\n') is None


def test_stream_times_and_file_counts_for_both_stream_numbers():
    err = 'stream 1 100.5 110.0\nrsync: noise\nstream 0 100.25 109.5\n'
    assert transfer.stream_times(err, 100.0) == [[0.25, 9.5], [0.5, 10.0]]
    assert transfer.lcm([4, 8]) == 8 and transfer.lcm([3, 8]) == 24 and transfer.lcm([4]) == 4
    assert transfer.file_count(400 * 10 ** 6, transfer.lcm([4, 8])) == 8
