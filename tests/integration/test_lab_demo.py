# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The demonstration end to end: lab hosts from stock settings, iperf3_verify before,
playbooks/wan_tune.yml through Ansible, iperf3_verify after, nothing left behind.

Loose bounds only (the exact figures are the benchmark's business): at 1 Gbit/s and 98 ms
the tuned single stream must carry at least twice the stock figure and at least 70 % of
the line rate.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'lab'))
import demo  # noqa: E402  pylint: disable=wrong-import-position
import wanlab  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='the lab needs root (namespaces, TUN, podman)')


def test_tuning_at_least_doubles_single_stream_throughput(tmp_path):
    assert not wanlab.leftovers(), 'a lab is already running: %s' % wanlab.leftovers()
    try:
        result = demo.demo(demo.parse_args(['--rate', '1g', '--rtt', '98', '--duration', '10',
                                            '--results', str(tmp_path)]))
    finally:
        left = wanlab.leftovers()
        if left:
            wanlab.teardown()
    assert not left, 'the lab left things behind: %s' % left

    before, after = result['before'], result['after']
    assert before['congestion_control'] == 'cubic' and before['tcp_rmem_max'] == 6291456
    assert after['congestion_control'] == 'bbr' and after['tcp_rmem_max'] == 98000000
    assert after['bps'] >= 2 * before['bps'], (before['bps'], after['bps'])
    assert after['bps'] >= 0.7 * 1e9, after['bps']
    assert after['passed'], after['verdict']

    written = list(tmp_path.glob('demo-*.json'))
    assert len(written) == 1
    saved = json.loads(written[0].read_text())
    for key in ('rate_bps', 'rtt_ms', 'loss_pct', 'mtu', 'ceiling_bps'):
        assert key in saved
    for side in ('before', 'after'):
        assert set(saved[side]) >= {'bps', 'retransmits', 'congestion_control', 'tcp_rmem_max', 'tcp_wmem_max'}
