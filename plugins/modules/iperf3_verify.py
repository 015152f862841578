#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: iperf3_verify
short_description: Measure TCP throughput to a peer with iperf3 and judge it against the path's ceiling
version_added: 0.1.0
description:
  - Runs one iperf3 TCP test (C(iperf3 -c O(server) -J)) from the host the task runs on to an iperf3 server,
    and returns the sender and receiver rates, retransmits, congestion window, RTT and congestion control that
    iperf3 itself measured.
  - Judges the receiver's goodput against an expectation. By default the expectation is the theoretical
    ceiling of the path, C(min(rate, window x 8 / RTT)), where the window is the smaller of what the sender may
    have in flight (its C(net.ipv4.tcp_wmem) maximum, read on this host when it sends) and what the receiver
    advertises (half of its C(net.ipv4.tcp_rmem) maximum, see O(peer_rmem_max)). O(expected_bps) replaces the
    ceiling by an absolute figure.
  - When the goodput is below O(min_fraction) of the expectation the task fails, and the message names the likely
    limit, decided from the measurement - CPU, a path MTU black hole, the receive or send window, loss with a
    loss-based congestion control, or queueing (bufferbloat) - and what to do about it.
  - A busy server (another test is running) is retried O(retries) times with a random, growing delay. A refused
    or unreachable peer, a missing or too old iperf3 and a run that does not finish within O(timeout) fail with a
    message that says what to do.
  - Never changes anything on the host and never reports changed. The server side is
    M(bdp.wan_tune.iperf3_server), run on the peer with C(delegate_to).
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  server:
    description: Address or name of the peer running the iperf3 server (C(iperf3 -c)).
    type: str
    required: true
  port:
    description:
      - TCP port of the iperf3 server (C(iperf3 -p)); use the RV(bdp.wan_tune.iperf3_server#module:port) it
        returned.
    type: int
    default: 5201
  duration:
    description: Seconds to measure (C(iperf3 -t)), after O(omit), from 1 to 3600.
    type: int
    default: 10
  omit:
    description:
      - Seconds at the start that are sent but not counted (C(iperf3 -O)), to leave slow start out of the result.
        On long paths slow start takes several seconds; raise this for RTTs above 100 ms. From 0 to 600.
    type: int
    default: 2
  parallel:
    description:
      - Parallel TCP streams (C(iperf3 -P)). The window part of the ceiling is per stream, so it is multiplied by
        this number. iperf3 before 3.16 serves all streams from one thread (one CPU core).
    type: int
    default: 1
  reverse:
    description:
      - Let the server send and this host receive (C(iperf3 -R)). The roles in the ceiling swap - this host's
        C(net.ipv4.tcp_rmem) maximum is the receive buffer and O(peer_wmem_max) the send buffer.
    type: bool
    default: false
  congestion:
    description:
      - TCP congestion control for the test sockets (C(iperf3 -C)), for example V(bbr) or V(cubic). Unset, both
        hosts use their default (C(net.ipv4.tcp_congestion_control)). The algorithm must be available on both hosts;
        M(bdp.wan_tune.tcp_congestion) makes it so.
    type: str
  window:
    description:
      - Socket buffer size for the test (C(iperf3 -w)), in bytes or with K, M or G (1024-based, as iperf3 reads it).
      - Normally unset, so that TCP autotuning works, which is what applications get. Setting it turns autotuning
        off; the kernel doubles the value and caps it at C(net.core.wmem_max) / C(net.core.rmem_max), and about half
        of the doubled receive buffer is advertised, so the window is about this value.
    type: raw
  rate:
    description:
      - Link rate of the path in bit/s, as the collection reads rates - C(1g), C(10G), C(2.5gbit), C(500m),
        C(1000000000) (see C(docs/bdp.md)). Part of the ceiling.
    type: raw
  rtt:
    description:
      - Round-trip time of the path, a number in ms (C(98)) or with a unit (C(98ms), C(0.098s), C(98000us)). Needed
        for the window part of the ceiling and to spot queueing.
    type: raw
  expected_bps:
    description:
      - An absolute expectation for the receiver's goodput (bit/s, same forms as O(rate)), used instead of the
        ceiling. Use the link rate here to demand a tuned path (a stock host then fails with the window it is
        limited by).
    type: raw
  min_fraction:
    description: Pass when the receiver's goodput is at least this fraction of the expectation (0 < x <= 1).
    type: float
    default: 0.7
  peer_rmem_max:
    description:
      - The peer's C(net.ipv4.tcp_rmem) maximum, in bytes or as the whole three-field value (C(4096 131072 6291456)),
        for example from the peer's hostvars or C(ansible.builtin.slurp) of C(/proc/sys/net/ipv4/tcp_rmem) on it.
      - Used when the peer receives (O(reverse=false)) and O(window) is unset.
    type: raw
  peer_wmem_max:
    description:
      - The peer's C(net.ipv4.tcp_wmem) maximum, same forms as O(peer_rmem_max). Used when the peer sends
        (O(reverse=true)) and O(window) is unset.
    type: raw
  retries:
    description: How many more times to try while the server is busy with another test.
    type: int
    default: 3
  retry_delay:
    description:
      - Base delay in seconds before retrying a busy server. Attempt N waits O(retry_delay) x 2^(N-1) x a random
        factor from 0.5 to 1.5, so hosts that test the same peer do not retry in step.
    type: float
    default: 5
  connect_timeout:
    description: Seconds to wait for the connection to the server (C(iperf3 --connect-timeout), iperf3 3.2 and later).
    type: float
    default: 5
  timeout:
    description:
      - Seconds one iperf3 run may take before it is killed (C(timeout) from coreutils). Default
        O(duration) + O(omit) + O(connect_timeout) + 30.
    type: int
  iperf3_path:
    description: The iperf3 program. Default - C(iperf3) from the PATH.
    type: path
  credentials:
    description:
      - The handle RV(bdp.wan_tune.iperf3_server#module:credentials) that M(bdp.wan_tune.iperf3_server) returned with
        O(bdp.wan_tune.iperf3_server#module:authenticate=true), for a server only this test can use. The action
        plugin takes the credentials on the controller (they serve one test) and hands them to the module in a
        file; the password reaches iperf3 in its environment (C(IPERF3_PASSWORD)), never in an argument or a log.
      - Check mode leaves them for the real run.
    type: str
  auth_src:
    description:
      - Set by the action plugin, never by a task - the file in the task's remote tmp dir that holds the user name,
        password and public key of O(credentials). The module removes it when it has read it.
    type: path
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: No test is run; the result has RV(measured=false), the command that would run and the ceiling.
  platform:
    details: The ceiling reads this host's buffer maxima from C(/proc/sys/net/ipv4/tcp_wmem) and C(tcp_rmem).
requirements:
  - iperf3 3.1 or later on this host and on the peer (the C(iperf3) package).
  - C(timeout) from coreutils, to bound the run (without it the run is not bounded by O(timeout)).
notes:
  - The receive window is taken as 0.5 x the C(net.ipv4.tcp_rmem) maximum (or of the doubled O(window)). Before
    Linux 6.6, C(net.ipv4.tcp_adv_win_scale=1) reserved exactly half for overhead; 6.6 and later measure a
    per-socket ratio that is about 50 % at MTU 1500 and can be higher with jumbo frames, so 0.5 is the conservative
    assumption (C(docs/bdp.md)). The send window is the whole C(net.ipv4.tcp_wmem) maximum, since in-flight data
    stays in the send buffer with little overhead.
  - The verdict tests, in this order - CPU above 90 % on either side; a congestion window that never grew past
    10 segments while segments were retransmitted (path MTU black hole); a goodput within 20 % of window x 8 / RTT
    for the advertised window iperf3 saw or a configured buffer; retransmits of at least 0.1 % of segments, or a
    Mathis loss limit below the expectation, with a loss-based congestion control (1 % with BBR); a mean RTT at
    least twice the path's RTT and 5 ms above it (queueing). Every cause found is returned in RV(diagnosis); the
    message leads with the first.
  - Loopback and hosts in one network namespace are far faster than any WAN; test across the real path.
seealso:
  - module: bdp.wan_tune.iperf3_server
  - module: bdp.wan_tune.tcp_congestion
  - name: iperf3 manual page
    description: Options and JSON output of iperf3.
    link: https://software.es.net/iperf/invoking.html
"""

EXAMPLES = r"""
- name: Start a one-test iperf3 server on the peer
  bdp.wan_tune.iperf3_server:
    port: 0
  delegate_to: "{{ peer }}"
  register: iperf3_server

- name: Read the peer's receive buffer maximum
  ansible.builtin.slurp:
    src: /proc/sys/net/ipv4/tcp_rmem
  delegate_to: "{{ peer }}"
  register: peer_tcp_rmem

- name: Measure this host -> peer against min(1 Gbit/s, window / 98 ms)
  bdp.wan_tune.iperf3_verify:
    server: "{{ hostvars[peer].ansible_host | default(peer) }}"
    port: "{{ iperf3_server.port }}"
    rate: 1g
    rtt: 98
    peer_rmem_max: "{{ peer_tcp_rmem.content | b64decode }}"
  register: throughput

- name: Demand the link rate (a stock host fails and the message names its window)
  bdp.wan_tune.iperf3_verify:
    server: 198.18.0.2
    expected_bps: 1g
    rtt: 98
    min_fraction: 0.8
    duration: 15
    omit: 3

- name: Measure peer -> this host with BBR and four streams, reporting only
  bdp.wan_tune.iperf3_verify:
    server: 198.18.0.2
    reverse: true
    congestion: bbr
    parallel: 4
  register: reverse_run
"""

RETURN = r"""
measured:
  description: Whether a test ran (false in check mode).
  returned: always
  type: bool
  sample: true
passed:
  description:
    - Whether RV(receiver_bps) reached O(min_fraction) x RV(expectation_bps); null when there is no expectation.
  returned: always
  type: bool
  sample: true
sender_bps:
  description: Sender's rate over the test (iperf3 C(end.sum_sent.bits_per_second)), bit/s.
  returned: always (null when not measured)
  type: int
  sample: 941234567
receiver_bps:
  description:
    - Receiver's goodput over the test (iperf3 C(end.sum_received.bits_per_second)), bit/s. This is what is judged.
  returned: always (null when not measured)
  type: int
  sample: 938765432
retransmits:
  description: Segments the sender retransmitted (C(end.sum_sent.retransmits)); null when iperf3 does not report it.
  returned: always (null when not measured)
  type: int
  sample: 12
max_snd_cwnd_bytes:
  description:
    - Largest congestion window of the sending socket, bytes (iperf3 3.2 and later; in reverse mode from the
      server's result).
  returned: always (null when not measured)
  type: int
  sample: 25165824
max_snd_wnd_bytes:
  description: Largest receive window the receiver advertised, as the sender saw it, bytes (recent iperf3 only).
  returned: always (null when not measured)
  type: int
  sample: 24510464
mean_rtt_ms:
  description: Mean smoothed RTT of the sending socket(s), ms (iperf3 reports microseconds).
  returned: always (null when not measured)
  type: float
  sample: 98.612
min_rtt_ms:
  description: Smallest RTT sample of the sending socket(s), ms.
  returned: always (null when not measured)
  type: float
  sample: 98.02
congestion:
  description:
    - Congestion control of the sending and receiving side (C(sender_tcp_congestion), C(receiver_tcp_congestion));
      null when iperf3 is older than 3.1.4.
  returned: always (null when not measured)
  type: dict
  sample: {"sender": "bbr", "receiver": "bbr"}
cpu_utilization_percent:
  description: CPU use of iperf3 on this host and on the peer (C(host_total), C(remote_total)).
  returned: always (null when not measured)
  type: dict
  sample: {"host_total": 23.4, "remote_total": 31.9}
socket_buffers:
  description:
    - Socket buffer sizes iperf3 reported (C(sock_bufsize) as requested by O(window), C(sndbuf_actual),
      C(rcvbuf_actual)) for this host (local) and the server (remote, when the server runs with -J); null where not
      reported.
  returned: always (null when not measured)
  type: dict
  sample: {"local": {"sock_bufsize": 0, "sndbuf_actual": 16384, "rcvbuf_actual": 131072}, "remote": null}
iperf3_version:
  description: Version of iperf3 on this host.
  returned: when iperf3 is installed
  type: str
  sample: "3.12"
peer_iperf3_version:
  description: Version of the server's iperf3, when the server reports its JSON result.
  returned: always (null when not measured)
  type: str
  sample: "3.12"
ceiling_bps:
  description:
    - Theoretical ceiling min(rate, usable window x 8 x streams / RTT), bit/s; null when neither O(rate) nor O(rtt)
      with a known buffer is given.
  returned: always
  type: int
  sample: 256800000
limit:
  description: What sets RV(ceiling_bps).
  returned: always
  type: str
  sample: receive window (peer net.ipv4.tcp_rmem max)
limits:
  description:
    - Every candidate of the ceiling with its bit/s, lowest first. Window entries also give the buffer, the factor
      used (0.5 receive, 1 send), the usable bytes, where the buffer came from and its host.
  returned: always
  type: list
  elements: dict
  sample:
    - {"name": "receive window (peer net.ipv4.tcp_rmem max)", "bps": 256800000, "buffer_bytes": 6291456,
       "factor": 0.5, "usable_bytes": 3145728, "source": "peer_rmem_max", "host": "198.18.0.2"}
    - {"name": "send window (local net.ipv4.tcp_wmem max)", "bps": 342392163, "buffer_bytes": 4194304,
       "factor": 1.0, "usable_bytes": 4194304, "source": "/proc/sys/net/ipv4/tcp_wmem", "host": "client1"}
    - {"name": "link rate", "bps": 1000000000}
expectation_bps:
  description: What RV(receiver_bps) is judged against - O(expected_bps), else RV(ceiling_bps).
  returned: always
  type: int
  sample: 256800000
expectation:
  description: Where RV(expectation_bps) comes from (V(expected_bps), V(ceiling) or V(none)).
  returned: always
  type: str
  sample: ceiling
fraction:
  description:
    - RV(receiver_bps) / RV(expectation_bps), rounded to 3 places; null without an expectation or a measurement.
  returned: always
  type: float
  sample: 0.962
diagnosis:
  description:
    - The likely limits found in the measurement, most likely first; empty unless the test failed its expectation.
  returned: always
  type: list
  elements: str
  sample: ["receive window on 198.18.0.2 (net.ipv4.tcp_rmem max = 6291456): ..."]
attempts:
  description: iperf3 runs made (more than 1 when the server was busy; 0 in check mode).
  returned: always
  type: int
  sample: 1
command:
  description: The iperf3 command (without the C(timeout) wrapper).
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/iperf3, -c, 198.18.0.2, -p, "5201", -t, "10", -O, "2", -P, "1", -J, --get-server-output]
"""

import json
import os
import platform
import random
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import sysctl
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import throughput

CPU_BUSY = 90.0            # percent of a core
LOSS_HIGH = 0.001          # 0.1 % of segments retransmitted
LOSS_HIGH_BBR = 0.01       # BBR keeps its rate up to a few per cent of loss
QUEUE_FACTOR = 2           # mean RTT this many times the path's RTT ...
QUEUE_MIN_MS = 5           # ... and at least this much above it
TINY_CWND_SEGMENTS = 10    # the initial window: a cwnd that never grew past it
NOT_LOSS_BASED = ('bbr', 'bbr2', 'bbr3', 'vegas', 'nv', 'cdg', 'dctcp')
TIMEOUT_RCS = (124, 137)   # timeout(1): timed out, killed after --kill-after
FIGURES = ('sender_bps', 'receiver_bps', 'retransmits', 'max_snd_cwnd_bytes', 'max_snd_wnd_bytes', 'mean_rtt_ms',
           'min_rtt_ms', 'congestion', 'cpu_utilization_percent', 'socket_buffers', 'peer_iperf3_version')


def _mbps(bps):
    return bdp.human_rate(int(bps)) if bps is not None else 'unknown'


def _ms(value):
    return ('%.3f' % float(value)).rstrip('0').rstrip('.')


class Verdict(object):
    """The verdict of a measurement: what limited it (diagnose, window_message) and pass or fail (judge).
    A mixin of Verify, whose parameters, plan and result it reads."""

    def diagnose(self, fig):
        """Likely limits, most likely first, each a message that says what to do."""
        found = []
        reverse = self.params['reverse']
        here = 'this host (%s)' % self.host
        sender_host, receiver_host = (self.server, here) if reverse else (here, self.server)
        rbps = fig['receiver_bps']
        streams = fig['streams'] or self.params['parallel']
        cpu = fig['cpu_utilization_percent'] or {}
        for key, where in (('host_total', here), ('remote_total', self.server)):
            value = cpu.get(key)
            if value is not None and value > CPU_BUSY:
                found.append('CPU on %s: iperf3 used %.0f%% of a core, so the host, not the path, set the pace; '
                             'check CPU frequency scaling and interrupt load there, and use parallel streams with '
                             'iperf3 3.16 or later (older versions run all streams in one thread).' % (where, value))
        mss = fig['mss'] or throughput.DEFAULT_MSS
        retrans = fig['retransmits']
        segments = (fig['sender_bytes'] or 0) / float(mss)
        loss = retrans / segments if retrans is not None and segments else None
        seconds = fig['seconds'] or self.params['duration']
        cwnd = fig['max_snd_cwnd_bytes']
        if cwnd is not None and retrans and cwnd <= TINY_CWND_SEGMENTS * mss:
            found.append('path MTU black hole: the congestion window never grew past %d bytes (%d segments of %d) '
                         'while %d segments were retransmitted, which is what large packets dropped without an ICMP '
                         '"fragmentation needed" look like. Set net.ipv4.tcp_mtu_probing = 1 (the bdp.wan_tune.'
                         'tcp_buffers role sets it) and check the path MTU (ping -M do -s 1472 %s).'
                         % (cwnd, cwnd // mss, mss, retrans, self.server))
        rtt_ms = fig['mean_rtt_ms'] or (float(self.rtt) if self.rtt is not None else None)
        named = set()
        advertised = fig['max_snd_wnd_bytes']
        if self.window is None and rtt_ms and advertised and throughput.near_window(rbps, advertised, rtt_ms,
                                                                                    streams):
            found.append(self.window_message('receive', receiver_host, advertised, rtt_ms, streams, rbps,
                                             measured=True))
            named.add('receive')
        for item in self.result['limits']:
            side = item['name'].split(' ', 1)[0]
            if 'usable_bytes' not in item or side in named or not rtt_ms:
                continue
            if throughput.near_window(rbps, item['usable_bytes'], rtt_ms, streams):
                found.append(self.window_message(side, item['host'] if item['host'] != self.host else here,
                                                 item, rtt_ms, streams, rbps))
                named.add(side)
        algorithm = (fig['congestion'] or {}).get('sender') or (self.params['congestion'] if not reverse else None)
        loss_based = algorithm is not None and algorithm.lower() not in NOT_LOSS_BASED
        if loss is not None and retrans:
            limit = throughput.mathis_bps(mss, rtt_ms, loss) if rtt_ms else None
            expectation = self.result['expectation_bps']
            share = '%d retransmits (%.3f%% of segments, %.1f/s)' % (retrans, loss * 100, retrans / seconds)
            if loss_based and (loss >= LOSS_HIGH or (limit is not None and expectation and limit < expectation)):
                found.append('loss with %s: %s cap a loss-based congestion control on this path%s. Enable BBR '
                             '(bdp.wan_tune.bbr) on the sending host, %s, and find the loss (interface errors, '
                             'policers, a shallow bottleneck buffer).'
                             % (algorithm.upper(), share,
                                ' (Mathis limit %s at %s ms)' % (_mbps(limit), _ms(rtt_ms)) if limit else '',
                                sender_host))
            elif loss >= (LOSS_HIGH_BBR if not loss_based else LOSS_HIGH):
                found.append('loss: %s even with %s; find the loss on the path (interface errors, a policer, a '
                             'shallow bottleneck buffer) - congestion control cannot make up for it.'
                             % (share, algorithm or 'the sender\'s congestion control'))
        base = float(self.rtt) if self.rtt is not None else fig['min_rtt_ms']
        mean = fig['mean_rtt_ms']
        if base and mean and mean >= QUEUE_FACTOR * base and mean - base >= QUEUE_MIN_MS:
            found.append('queueing (bufferbloat): the mean RTT was %s ms against the path\'s %s ms, so a queue at the '
                         'bottleneck filled; use BBR with fq (bdp.wan_tune.bbr) on the sender, put fq_codel or cake on '
                         'the bottleneck, and check that rate is the real bottleneck rate.' % (_ms(mean), _ms(base)))
        if not found:
            found.append('no single cause stands out (no CPU, window, loss or queueing signature). Check that rate and '
                         'rtt describe the real path, look for competing traffic or a policer, and compare with '
                         'reverse: true and parallel: 4.')
        return found

    def window_message(self, side, host, item, rtt_ms, streams, rbps, measured=False):
        per_stream = '' if streams == 1 else ' x %d streams' % streams
        if measured:
            buffer_max = self.peer_rmem if not self.params['reverse'] else self.local_max('net.ipv4.tcp_rmem')
            setting = 'net.ipv4.tcp_rmem max = %s' % (buffer_max if buffer_max else
                                                      'unknown; pass peer_rmem_max or read it there')
            return ('receive window on %s (%s): it advertised at most %d bytes, and %d x 8%s / %s ms = %s, which is '
                    'what arrived (%s). Raise net.ipv4.tcp_rmem max on %s to at least 2 x BDP with the '
                    'bdp.wan_tune.tcp_buffers role.'
                    % (host, setting, item, item, per_stream, _ms(rtt_ms),
                       _mbps(int(item * 8 * streams * 1000 / rtt_ms)), _mbps(rbps), host))
        usable = item['usable_bytes']
        rate = _mbps(int(usable * 8 * streams * 1000 / rtt_ms))
        if item['source'] == 'window' or 'window option' in item['name']:
            return ('%s window set by the window option (-w %d, %s): %d usable bytes x 8%s / %s ms = %s, which is what '
                    'arrived (%s). Leave window unset so autotuning works, or raise it to at least the BDP.'
                    % (side, self.window, item['name'], usable, per_stream, _ms(rtt_ms), rate, _mbps(rbps)))
        key = 'net.ipv4.tcp_rmem' if side == 'receive' else 'net.ipv4.tcp_wmem'
        share = '' if item['factor'] == 1 else ' x %s usable' % _ms(item['factor'])
        return ('%s window on %s (%s max = %d): %d%s x 8%s / %s ms = %s, which is what arrived (%s). '
                'Raise %s max on %s to at least 2 x BDP with the bdp.wan_tune.tcp_buffers role.'
                % (side, host, key, item['buffer_bytes'], item['buffer_bytes'], share, per_stream,
                   _ms(rtt_ms), rate, _mbps(rbps), key, host))

    def judge(self, doc):
        fig = iperf3.summarize(doc)
        for key in FIGURES:
            self.result[key] = fig[key]
        self.result['iperf3_version'] = self.result.get('iperf3_version') or fig['iperf3_version']
        self.result['measured'] = True
        rbps = fig['receiver_bps']
        where = '%s port %d' % (self.server, self.params['port'])
        if not rbps:
            self.fail('iperf3 to %s finished without a receiver rate (end.sum_received); the test carried no data. '
                      'Run it again, and check the server\'s log (bdp.wan_tune.iperf3_server returns its path).'
                      % where)
        expectation = self.result['expectation_bps']
        figures = '%s received (sender %s, %s retransmits)' % (_mbps(rbps), _mbps(fig['sender_bps']),
                                                               'no' if not fig['retransmits'] else fig['retransmits'])
        self.result['diagnosis'] = []
        if expectation is None:
            self.result['fraction'] = None
            self.result['msg'] = ('iperf3 to %s: %s. Not judged: give rate and rtt (the ceiling) or expected_bps.'
                                  % (where, figures))
            return
        fraction = float(rbps) / expectation
        self.result['fraction'] = round(fraction, 3)
        self.result['passed'] = fraction >= self.params['min_fraction']
        source = ('expected_bps' if self.result['expectation'] == 'expected_bps'
                  else 'ceiling, limit: %s' % self.result['limit'])
        summary = ('iperf3 to %s: %s, %s%% of the expectation %s (%s)'
                   % (where, figures, ('%.0f' if fraction >= 0.1 else '%.2g') % (fraction * 100),
                      _mbps(expectation), source))
        if self.result['passed']:
            self.result['msg'] = '%s; passed (min_fraction %s).' % (summary, self.params['min_fraction'])
            if self.result['expectation'] == 'ceiling' and self.result['limit'] != 'link rate' and self.rate:
                self.module.warn('The ceiling %s is set by the %s, below the link rate %s; raise that buffer with '
                                 'the bdp.wan_tune.tcp_buffers role to use the link, and pass expected_bps: %s to '
                                 'demand it.'
                                 % (_mbps(expectation), self.result['limit'], _mbps(self.rate), self.params['rate']))
            return
        diagnosis = self.diagnose(fig)
        self.result['diagnosis'] = diagnosis
        also = '' if len(diagnosis) == 1 else ' Also seen: %s' % ' | '.join(diagnosis[1:])
        self.fail('%s - below min_fraction %s. Likely limit: %s%s'
                  % (summary, self.params['min_fraction'], diagnosis[0], also))


class Iperf3Run(object):
    """iperf3 itself: its version, the command line, the time limit, and the run with its error messages.
    A mixin of Verify, whose parameters and plan it reads."""

    def version(self, path):
        version = iperf3.binary_version(self.module, path, self.fail)
        self.result['iperf3_version'] = iperf3.version_string(version)
        return version

    def command(self, path, version, auth=None):
        """iperf3's command line; ``auth`` is (username, public key path) for a server with authentication."""
        p = self.params
        argv = [path, '-c', self.server, '-p', str(p['port']), '-t', str(p['duration']), '-O', str(p['omit']),
                '-P', str(p['parallel']), '-J', '--get-server-output']
        if auth:
            argv += iperf3.client_auth_args(*auth)
        if p['reverse']:
            argv.append('-R')
        if p['congestion']:
            argv += ['-C', p['congestion']]
        if self.window is not None:
            argv += ['-w', str(self.window)]
        if version is None or version[:2] >= iperf3.CONNECT_TIMEOUT_VERSION:
            argv += ['--connect-timeout', str(int(p['connect_timeout'] * 1000))]
        return argv

    def timeout(self):
        p = self.params
        if p['timeout'] is not None:
            return p['timeout']
        return int(p['duration'] + p['omit'] + p['connect_timeout'] + 30)

    def error_message(self, kind, error):
        server, port = self.server, self.params['port']
        if kind == iperf3.REFUSED:
            return ('Nothing listens on %s port %d (%s). Is the iperf3 server running? Start one for this test with '
                    'bdp.wan_tune.iperf3_server and delegate_to: %s (it serves one test, then exits), and pass the '
                    'port it returns.' % (server, port, error, server))
        if kind == iperf3.UNREACHABLE:
            return ('Cannot reach %s port %d (%s). Check that %s is up and routed from this host, that a firewall '
                    'lets TCP port %d through, and that the iperf3 server is running (bdp.wan_tune.iperf3_server with '
                    'delegate_to: %s).' % (server, port, error, server, port, server))
        if kind == iperf3.RESOLVE:
            return ('Cannot resolve %s (%s); give its address, or a name this host resolves.' % (server, error))
        if kind == iperf3.AUTH:
            return ('The iperf3 server on %s port %d refused this test\'s credentials (%s). Start a new server with '
                    'authenticate: true for each test and pass its credentials; check that the clocks of both hosts '
                    'agree within 10 s (iperf3 refuses older credentials).' % (server, port, error))
        if kind == iperf3.CONGESTION:
            return ('iperf3 could not use congestion control %r (%s). Make it available on this host and on %s with '
                    'bdp.wan_tune.tcp_congestion (algorithm: %s), or leave congestion unset to use the default.'
                    % (self.params['congestion'], error, server, self.params['congestion']))
        return 'iperf3 to %s port %d failed: %s' % (server, port, error)

    def take_auth(self, directory):
        """(username, public key path, password) from the file the action plugin transferred (removed once read);
        the public key is written 0600 into ``directory``. None without credentials."""
        if not self.params['auth_src']:
            return None
        try:
            secret = json.loads(files.take_secret(self.params['auth_src']).decode('utf-8'))
            username, password, public = secret['username'], secret['password'], secret['public_key']
        except (IOError, OSError, ValueError, KeyError, TypeError):
            self.fail('The credentials file the action plugin transferred could not be read; nothing was measured.')
        key = os.path.join(directory, 'public.pem')
        files.write_atomic(self.module, key, public, mode=0o600)
        return username, key, password

    def run(self, path, version):
        """Run iperf3 (with the credentials, if any, in a private directory removed afterwards)."""
        directory = tempfile.mkdtemp(prefix='bdp-wan-tune-iperf3-')
        try:
            auth = self.take_auth(directory)
            return self.run_iperf3(path, version, auth)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def run_iperf3(self, path, version, auth):
        argv = self.command(path, version, auth[:2] if auth else None)
        self.result['command'] = argv
        environ = {'LC_ALL': 'C', 'LANG': 'C'}
        if auth:
            environ[iperf3.PASSWORD_ENV] = auth[2]
        wrapper = self.module.get_bin_path('timeout')
        limit = self.timeout()
        full = [wrapper, '-k', '5', str(limit)] + argv if wrapper else argv
        if not wrapper:
            self.module.warn('timeout (coreutils) is not installed; the iperf3 run is not bounded by timeout=%d.'
                             % limit)
        attempts, waited = 0, 0.0
        while True:
            attempts += 1
            self.result['attempts'] = attempts
            rc, out, err = self.module.run_command(full, environ_update=environ)
            if wrapper and rc in TIMEOUT_RCS:
                self.fail('iperf3 to %s port %d did not finish within %d s and was stopped. The peer may have stopped '
                          'answering mid-test, or a firewall passes the control connection but not the data '
                          'connections (TCP port %d); check the path, or raise timeout if the test is meant to run '
                          'longer.' % (self.server, self.params['port'], limit, self.params['port']),
                          rc=rc, stderr=err)
            try:
                doc = iperf3.parse_output(out)
            except iperf3.OutputError as exc:
                text = ' '.join((err or '').split())[:300]
                kind = iperf3.classify_error(text)
                if text and kind != iperf3.OTHER:
                    doc = {'error': text}
                else:
                    self.fail('%s%s (exit code %d).' % (exc, '; stderr: %s' % text if text else '', rc),
                              rc=rc, stdout=out, stderr=err)
            error = doc.get('error')
            if not error:
                return doc
            kind = iperf3.classify_error(error)
            if kind == iperf3.BUSY and attempts <= self.params['retries']:
                delay = self.params['retry_delay'] * 2 ** (attempts - 1) * random.uniform(0.5, 1.5)
                waited += delay
                time.sleep(delay)
                continue
            if kind == iperf3.BUSY:
                self.fail('The iperf3 server on %s port %d was busy with another test in all %d attempts (waited '
                          '%.0f s between them). Run the tests one after another (serial: 1 or throttle: 1), or give '
                          'each client its own server (bdp.wan_tune.iperf3_server with port: 0 picks a free port).'
                          % (self.server, self.params['port'], attempts, waited), error=error)
            self.fail(self.error_message(kind, error), error=error, error_kind=kind)


class Verify(Verdict, Iperf3Run):
    """One call of the module: the inputs and the windows; iperf3 is Iperf3Run's, the verdict Verdict's."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.server = self.params['server']
        self.host = platform.node() or 'this host'
        self.result = {'changed': False, 'measured': False, 'passed': None, 'ceiling_bps': None, 'limit': None,
                       'limits': [], 'expectation_bps': None, 'expectation': 'none', 'command': [],
                       'fraction': None, 'diagnosis': [], 'attempts': 0}
        self.result.update((key, None) for key in FIGURES)

    def fail(self, msg, **extra):
        self.result.update(extra)
        self.module.fail_json(msg=msg, **self.result)

    # ------------------------------------------------------------ inputs
    def validate(self):
        p = self.params
        rules = (('port', checks.is_port(p['port']), checks.port_help(default=5201)),
                 ('duration', 1 <= p['duration'] <= iperf3.DURATION_MAX, iperf3.DURATION_HELP),
                 ('omit', 0 <= p['omit'] <= iperf3.OMIT_MAX, iperf3.OMIT_HELP),
                 ('parallel', checks.is_streams(p['parallel']), checks.streams_help(default=1)),
                 ('min_fraction', 0 < p['min_fraction'] <= 1, 'a fraction above 0 and at most 1, e.g. 0.7'),
                 ('retries', 0 <= p['retries'] <= 100, 'a count from 0 to 100'),
                 ('retry_delay', 0 <= p['retry_delay'] <= 3600, 'seconds from 0 to 3600'),
                 ('connect_timeout', 0 < p['connect_timeout'] <= 600, 'seconds above 0, at most 600'))
        for name, good, accepted in rules:
            if not good:
                self.fail('%s: %r is out of range; expected %s.' % (name, p[name], accepted))
        if p['timeout'] is not None and p['timeout'] < 1:
            self.fail('timeout: %r is out of range; expected seconds, at least duration + omit + 5.' % p['timeout'])
        if not self.server.strip():
            self.fail('server: give the address or name of the host running the iperf3 server.')
        try:
            self.rate = bdp.parse_rate(p['rate'], 'rate') if p['rate'] not in (None, '') else None
            self.rtt = bdp.parse_rtt(p['rtt'], 'rtt') if p['rtt'] not in (None, '') else None
            self.expected = (bdp.parse_rate(p['expected_bps'], 'expected_bps')
                             if p['expected_bps'] not in (None, '') else None)
            self.window = throughput.parse_size(p['window'], 'window') if p['window'] not in (None, '') else None
            self.peer_rmem = (throughput.buffer_max(p['peer_rmem_max'], 'peer_rmem_max')
                              if p['peer_rmem_max'] not in (None, '') else None)
            self.peer_wmem = (throughput.buffer_max(p['peer_wmem_max'], 'peer_wmem_max')
                              if p['peer_wmem_max'] not in (None, '') else None)
        except bdp.UnitError as exc:
            self.fail(str(exc))

    @staticmethod
    def local_max(key, field=-1):
        try:
            value = sysctl.read_live(key)
        except (IOError, OSError):
            return None
        fields = (value or '').split()
        return bdp.read_whole(fields[field]) if fields else None

    def windows(self):
        """The buffers that bound the window of each stream, per side."""
        reverse, found = self.params['reverse'], []
        send_host, recv_host = (self.server, self.host) if reverse else (self.host, self.server)
        if self.window is not None:
            # SO_SNDBUF / SO_RCVBUF: the kernel caps the request at net.core.[wr]mem_max and doubles it.
            size = self.window
            for side, key, factor, host in (('send', 'net.core.wmem_max', throughput.SEND_WINDOW_FACTOR, send_host),
                                            ('receive', 'net.core.rmem_max', throughput.RECEIVE_WINDOW_FACTOR,
                                             recv_host)):
                local = (side == 'receive') == reverse
                cap = self.local_max(key) if local else None
                if cap is not None and cap < size:
                    name = '%s window (%s %s caps the window option)' % (side, 'local', key)
                    found.append(throughput.window_limit(name, 2 * cap, factor, '/proc/sys/' + key.replace('.', '/'),
                                                         host))
                else:
                    found.append(throughput.window_limit('%s window (window option -w %d)' % (side, size), 2 * size,
                                                         factor, 'window', host))
            return found
        if not reverse:
            wmem = self.local_max('net.ipv4.tcp_wmem')
            if wmem:
                found.append(throughput.window_limit('send window (local net.ipv4.tcp_wmem max)', wmem,
                                                     throughput.SEND_WINDOW_FACTOR, '/proc/sys/net/ipv4/tcp_wmem',
                                                     self.host))
            if self.peer_rmem:
                found.append(throughput.window_limit('receive window (peer net.ipv4.tcp_rmem max)', self.peer_rmem,
                                                     throughput.RECEIVE_WINDOW_FACTOR, 'peer_rmem_max', self.server))
        else:
            rmem = self.local_max('net.ipv4.tcp_rmem')
            if rmem:
                found.append(throughput.window_limit('receive window (local net.ipv4.tcp_rmem max)', rmem,
                                                     throughput.RECEIVE_WINDOW_FACTOR, '/proc/sys/net/ipv4/tcp_rmem',
                                                     self.host))
            if self.peer_wmem:
                found.append(throughput.window_limit('send window (peer net.ipv4.tcp_wmem max)', self.peer_wmem,
                                                     throughput.SEND_WINDOW_FACTOR, 'peer_wmem_max', self.server))
        return found

    def plan(self):
        ceiling = throughput.ceiling(self.rate, self.rtt, self.windows(), self.params['parallel'])
        self.result.update(ceiling_bps=ceiling['ceiling_bps'], limit=ceiling['limit'], limits=ceiling['limits'])
        if self.expected is not None:
            self.result.update(expectation_bps=self.expected, expectation='expected_bps')
        elif ceiling['ceiling_bps'] is not None:
            self.result.update(expectation_bps=ceiling['ceiling_bps'], expectation='ceiling')

    def main(self):
        self.validate()
        self.plan()
        path = iperf3.find_binary(self.module, self.params['iperf3_path'])
        if self.module.check_mode:
            version = self.version(path) if path else None
            self.result['command'] = self.command(path or 'iperf3', version)
            if not path:
                self.module.warn('iperf3 is not installed on this host; the real run fails unless an earlier task '
                                 'installs it (%s).' % iperf3.INSTALL_HINT)
            self.result['msg'] = ('Check mode: no measurement was made (a test would send data to %s port %d for '
                                  '%d s); the ceiling is %s (%s).'
                                  % (self.server, self.params['port'], self.params['omit'] + self.params['duration'],
                                     _mbps(self.result['ceiling_bps']), self.result['limit'] or 'no rate or rtt'))
            self.module.exit_json(**self.result)
        if not path:
            self.fail('iperf3 was not found on this host%s; %s.'
                      % (' at %s' % self.params['iperf3_path'] if self.params['iperf3_path'] else '',
                         iperf3.INSTALL_HINT))
        version = self.version(path)
        doc = self.run(path, version)
        self.judge(doc)
        self.module.exit_json(**self.result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            server=dict(type='str', required=True),
            port=dict(type='int', default=5201),
            duration=dict(type='int', default=10),
            omit=dict(type='int', default=2),
            parallel=dict(type='int', default=1),
            reverse=dict(type='bool', default=False),
            congestion=dict(type='str'),
            window=dict(type='raw'),
            rate=dict(type='raw'),
            rtt=dict(type='raw'),
            expected_bps=dict(type='raw'),
            min_fraction=dict(type='float', default=0.7),
            peer_rmem_max=dict(type='raw'),
            peer_wmem_max=dict(type='raw'),
            retries=dict(type='int', default=3),
            retry_delay=dict(type='float', default=5),
            connect_timeout=dict(type='float', default=5),
            timeout=dict(type='int'),
            iperf3_path=dict(type='path'),
            credentials=dict(type='str'),
            auth_src=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    Verify(module).main()


if __name__ == '__main__':
    main()
