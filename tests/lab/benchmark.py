# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The WAN-lab benchmark behind `make benchmark`: a scenario matrix over the emulated link.

Sections: throughput versus buffer size (with the window / RTT curve), CUBIC versus BBR under
random loss, buffer headroom (2, 4, 8 x BDP) under loss, MTU 1500 versus 9000, and stock versus
tuned for several rate/RTT pairs. Writes results.json, benchmarks.md and benchmarks.png.

Every run is one single-stream iperf3 test between the two lab hosts (bare network namespaces:
the kernel's TCP is the same as in containers, and they start in 0.2 s). Tuned buffers are
the ones the tcp_buffers role computes (module_utils/common/bdp.buffer_plan), set with sysctl; the
demonstration (make demo) is what proves the playbook itself.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp  # noqa: E402
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import throughput  # noqa: E402

STOCK_RMEM = '4096 131072 6291456'
STOCK_WMEM = '4096 16384 4194304'
MB = 10 ** 6


def scenarios(quick=False):
    """(section, label, link and host settings) for every run, in the order they run."""
    runs = []
    bdp98 = bdp.bdp_bytes('1g', 98)
    default98 = bdp.buffer_plan('1g', 98)['buffer_bytes']      # what the tcp_buffers role sets by default
    sweep = [1, 2, 4, 6.29, 8, 12.25, 16, 24.5, 36.75, 49, 98]
    if quick:
        sweep = [2, 6.29, 24.5, 49]
    for size in sweep:
        runs.append(('buffers', '%g MB' % size, dict(rate='1g', rtt=98, buffer=int(size * MB), cc='bbr')))
    for loss in (0, 0.1, 1):
        for cc in ('cubic', 'bbr'):
            runs.append(('loss', '%s, %g %% loss' % (cc, loss),
                         dict(rate='1g', rtt=98, loss=loss, buffer=default98, cc=cc)))
    for loss in (0, 0.1, 1):
        for factor in (2, 4, 8):
            runs.append(('headroom', '%d x BDP, %g %% loss' % (factor, loss),
                         dict(rate='1g', rtt=98, loss=loss, buffer=factor * bdp98, cc='bbr', headroom=factor)))
    for mtu in (1500, 9000):
        runs.append(('mtu', 'MTU %d' % mtu, dict(rate='1g', rtt=98, mtu=mtu, buffer=default98, cc='bbr')))
    for rate, rtt in (('1g', 28), ('1g', 98), ('500m', 150)):
        tuned = bdp.buffer_plan(rate, rtt)['buffer_bytes']
        runs.append(('stock_tuned', '%s / %d ms stock' % (rate, rtt), dict(rate=rate, rtt=rtt, buffer=None,
                                                                           cc='cubic')))
        runs.append(('stock_tuned', '%s / %d ms tuned' % (rate, rtt), dict(rate=rate, rtt=rtt, buffer=tuned,
                                                                           cc='bbr')))
    return runs


def configure(lab, settings):
    """Link and both hosts for one run; returns the full settings with defaults filled in."""
    full = dict(loss=0, mtu=9000, headroom=None)
    full.update(settings)
    lab.set_link(rate=full['rate'], rtt=full['rtt'], loss=full['loss'], path_mtu=full['mtu'], queue='auto')
    rmem = STOCK_RMEM if full['buffer'] is None else '4096 131072 %d' % full['buffer']
    wmem = STOCK_WMEM if full['buffer'] is None else '4096 16384 %d' % full['buffer']
    for host in 'AB':
        lab.exec(host, ['ip', 'link', 'set', 'dev', wanlab.TUN_NAME, 'mtu', str(full['mtu'])], check=True)
        lab.exec(host, ['ip', 'tcp_metrics', 'flush', 'all'], check=False)
        lab.sysctl(host, 'net.ipv4.tcp_rmem', rmem)
        lab.sysctl(host, 'net.ipv4.tcp_wmem', wmem)
        lab.sysctl(host, 'net.ipv4.tcp_congestion_control', full['cc'])
    full['tcp_rmem'], full['tcp_wmem'] = rmem, wmem
    return full


def measure(lab, section, label, settings, seconds, omit, port=5201):
    full = configure(lab, settings)
    lab.reset_counters()
    result = lab.iperf3(seconds=seconds, omit=omit, port=port)
    counters = lab.counters()
    forward = counters['a_to_b']
    kernel = counters.get('kernel') or {}
    own_drops = sum(d['write_errors'] for d in (forward, counters['b_to_a'])) + \
        sum((k or {}).get('tx_dropped', 0) for k in kernel.values())
    rmem_max = int(full['tcp_rmem'].split()[2])
    ceiling = throughput.ceiling(full['rate'], full['rtt'], [throughput.window_limit(
        'receive window', rmem_max, throughput.RECEIVE_WINDOW_FACTOR, 'net.ipv4.tcp_rmem', 'B')])
    record = {
        'section': section, 'label': label,
        'rate_bps': bdp.parse_rate(full['rate']), 'rtt_ms': float(bdp.parse_rtt(full['rtt'])),
        'loss_pct': full['loss'], 'mtu': full['mtu'], 'congestion_control': full['cc'],
        'headroom': full['headroom'], 'tcp_rmem': full['tcp_rmem'], 'tcp_wmem': full['tcp_wmem'],
        'buffer_bytes': rmem_max, 'bdp_bytes': bdp.bdp_bytes(full['rate'], full['rtt']),
        'receiver_bps': result['receiver_bps'], 'sender_bps': result['sender_bps'],
        'retransmits': result['retransmits'], 'mean_rtt_ms': result['mean_rtt_ms'],
        'congestion_seen': result['congestion']['sender'],
        'goodput_ceiling_bps': throughput.goodput_bps(full['rate'], full['mtu']),
        'window_ceiling_bps': ceiling['ceiling_bps'], 'window_limit': ceiling['limit'],
        'link_random_drops': forward['random_drops'], 'link_queue_drops': forward['queue_drops'],
        'lab_own_drops': own_drops, 'late_packets': forward['late_packets'], 'late_max_ms': forward['late_max_ms'],
        'seconds': seconds, 'omit': omit,
    }
    return record


def mbit(bps):
    return '%.0f' % (bps / 1e6) if bps is not None else '-'


SECTIONS = (
    ('buffers', 'Throughput versus buffer size (1 Gbit/s, 98 ms, BBR)',
     ('buffer', 'x BDP', 'Mbit/s', 'window/RTT ceiling', 'retransmits', 'mean RTT ms')),
    ('loss', 'CUBIC versus BBR under random loss (1 Gbit/s, 98 ms, default buffers: %d x BDP)' % bdp.DEFAULT_HEADROOM,
     ('run', 'Mbit/s', 'retransmits', 'random drops', 'mean RTT ms')),
    ('headroom', 'Buffer headroom under loss (1 Gbit/s, 98 ms, BBR)',
     ('run', 'Mbit/s', 'retransmits', 'queue drops', 'mean RTT ms')),
    ('mtu', 'MTU 1500 versus 9000 (1 Gbit/s, 98 ms, BBR, default buffers: %d x BDP)' % bdp.DEFAULT_HEADROOM,
     ('run', 'Mbit/s', 'goodput ceiling', 'retransmits', 'mean RTT ms')),
    ('stock_tuned', 'Stock (CUBIC, 6 MiB / 4 MiB) versus tuned (BBR, default buffers: %d x BDP)' % bdp.DEFAULT_HEADROOM,
     ('run', 'buffer', 'Mbit/s', 'share of line', 'retransmits')),
)


def row(section, rec):
    rtt = '%.0f' % rec['mean_rtt_ms'] if rec['mean_rtt_ms'] else '-'
    if section == 'buffers':
        return (bdp.human_bytes(rec['buffer_bytes']), '%.2f' % (rec['buffer_bytes'] / rec['bdp_bytes']),
                mbit(rec['receiver_bps']), mbit(min(rec['window_ceiling_bps'], rec['goodput_ceiling_bps'])),
                str(rec['retransmits']), rtt)
    if section == 'loss':
        return (rec['label'], mbit(rec['receiver_bps']), str(rec['retransmits']), str(rec['link_random_drops']), rtt)
    if section == 'headroom':
        return (rec['label'], mbit(rec['receiver_bps']), str(rec['retransmits']), str(rec['link_queue_drops']), rtt)
    if section == 'mtu':
        return (rec['label'], mbit(rec['receiver_bps']), mbit(rec['goodput_ceiling_bps']), str(rec['retransmits']),
                rtt)
    return (rec['label'], bdp.human_bytes(rec['buffer_bytes']), mbit(rec['receiver_bps']),
            '%.0f %%' % (100.0 * rec['receiver_bps'] / rec['rate_bps']), str(rec['retransmits']))


def markdown(report, command):
    lines = ['# WAN-lab benchmark', '',
             'Generated by %s on %s (%s, kernel %s, %d CPUs); each run is one single TCP stream, %d s '
             '(first %d s left out), through the userspace delay line of tests/lab/wanlab.py. Rates in '
             'Mbit/s of TCP goodput at the receiver. Machine-readable: [benchmarks/results.json]'
             '(benchmarks/results.json); plot: [benchmarks/benchmarks.png](benchmarks/benchmarks.png).'
             % (command, report['finished'], report['machine'], report['kernel'], report['cpus'],
                report['seconds'], report['omit']), '',
             'The lab\'s own drops (delay-line write errors and TUN tx drops) were %d over all runs; queue drops '
             'are the emulated bottleneck\'s tail drops (queue = 1 x BDP) and random drops the emulated loss.'
             % sum(rec['lab_own_drops'] for rec in report['runs']), '',
             '![benchmark plots](benchmarks/benchmarks.png)', '']
    for key, title, header in SECTIONS:
        recs = [rec for rec in report['runs'] if rec['section'] == key]
        if not recs:
            continue
        lines += ['## ' + title, '', '| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
        lines += ['| ' + ' | '.join(row(key, rec)) + ' |' for rec in recs]
        lines.append('')
    return '\n'.join(lines)


def plot(report, path):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

    runs = report['runs']
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    sweep = [rec for rec in runs if rec['section'] == 'buffers']
    ax = axes[0][0]
    if sweep:
        rtt, rate, goodput = sweep[0]['rtt_ms'], sweep[0]['rate_bps'], sweep[0]['goodput_ceiling_bps']
        sizes = [0.25 * MB * i for i in range(1, 4 * 100 + 1)]
        curve = [min(goodput, throughput.window_bps(size, rtt, throughput.RECEIVE_WINDOW_FACTOR)) / 1e6
                 for size in sizes]
        ax.plot([size / MB for size in sizes], curve, '--', color='grey',
                label='min(goodput, 0.5 x buffer / RTT)')
        ax.plot([size / MB for size in sizes],
                [min(goodput, throughput.window_bps(size, rtt)) / 1e6 for size in sizes], ':', color='grey',
                label='min(goodput, buffer / RTT)')
        ax.plot([rec['buffer_bytes'] / MB for rec in sweep], [rec['receiver_bps'] / 1e6 for rec in sweep], 'o-',
                label='measured (BBR)')
        for factor in (2, bdp.DEFAULT_HEADROOM):
            ax.axvline(factor * sweep[0]['bdp_bytes'] / MB, color='tab:green', alpha=0.3)
        ax.set_xlabel('tcp_rmem / tcp_wmem max (MB); green: 2 x BDP (floor) and %d x BDP (default)'
                      % bdp.DEFAULT_HEADROOM)
        ax.set_ylabel('Mbit/s')
        ax.set_title('Throughput vs buffer, %s, %.0f ms' % (bdp.human_rate(rate), rtt))
        ax.legend(fontsize=8)

    def bars(ax, section, title):
        recs = [rec for rec in runs if rec['section'] == section]
        ax.bar(range(len(recs)), [rec['receiver_bps'] / 1e6 for rec in recs],
               color=['tab:orange' if rec['congestion_control'] == 'cubic' else 'tab:blue' for rec in recs])
        ax.set_xticks(range(len(recs)))
        ax.set_xticklabels([rec['label'] for rec in recs], rotation=35, ha='right', fontsize=8)
        ax.set_ylabel('Mbit/s')
        ax.set_title(title)

    bars(axes[0][1], 'loss', 'CUBIC (orange) vs BBR (blue) under loss')
    bars(axes[1][0], 'headroom', 'Buffer headroom under loss (BBR)')
    bars(axes[1][1], 'stock_tuned', 'Stock vs tuned')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=int, default=15, help='seconds per run (default 15)')
    parser.add_argument('--omit', type=int, default=3, help='seconds of slow start left out (default 3)')
    parser.add_argument('--quick', action='store_true', help='a smaller matrix, for trying the tool')
    parser.add_argument('--section', action='append', choices=[key for key, title, header in SECTIONS],
                        help='re-measure only these sections (repeatable); the others are kept from the last report')
    parser.add_argument('--out', default=os.path.join(wanlab.REPO_ROOT, 'docs'),
                        help='where benchmarks.md and benchmarks/ go (default docs/)')
    parser.add_argument('--replot', action='store_true', help='only re-render the Markdown and PNG from results.json')
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    folder = os.path.join(args.out, 'benchmarks')
    if args.replot:
        with open(os.path.join(folder, 'results.json')) as handle:
            report = json.load(handle)
        write_report(report, args.out, report['command'])
        return 0
    runs = [run for run in scenarios(args.quick) if not args.section or run[0] in args.section]
    command = '`make benchmark%s`' % (' BENCH_ARGS="%s"' % ' '.join(argv) if argv else '')
    report = {'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'seconds': args.seconds, 'omit': args.omit,
              'machine': platform.node() and 'Linux %s' % platform.machine(), 'kernel': platform.release(),
              'cpus': os.cpu_count(), 'command': command, 'runs': []}

    def log(msg):
        print('benchmark: ' + msg, file=sys.stderr)

    with wanlab.Lab(rate='1g', rtt=98, hosts='netns', name='bdp-lab-bench', log=log) as lab:
        for number, (section, label, settings) in enumerate(runs, 1):
            # a fresh port per run: the previous one-off server may still be closing its listener
            rec = measure(lab, section, label, settings, args.seconds, args.omit, port=5201 + number)
            report['runs'].append(rec)
            log('%2d/%d %-12s %-28s %6s Mbit/s, %d retransmits, lab own drops %d'
                % (number, len(runs), section, label, mbit(rec['receiver_bps']), rec['retransmits'] or 0,
                   rec['lab_own_drops']))
    report['finished'] = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    os.makedirs(folder, exist_ok=True)
    previous = os.path.join(folder, 'results.json')
    if args.section and os.path.exists(previous):
        # re-measure some sections: keep the other sections' runs from the last report
        with open(previous) as handle:
            last = json.load(handle)
        kept = [rec for rec in last['runs'] if rec['section'] not in args.section]
        first = last['command'].split(', then ')[0].strip('`')
        command = report['command'] = '`%s`, then %s' % (first, command)
        order = [key for key, title, header in SECTIONS]
        report['runs'] = sorted(kept + report['runs'], key=lambda rec: order.index(rec['section']))
    with open(os.path.join(folder, 'results.json'), 'w') as handle:
        json.dump(report, handle, indent=2, sort_keys=True)
    write_report(report, args.out, command)
    log('wrote %s, %s and %s' % (os.path.join(args.out, 'benchmarks.md'), os.path.join(folder, 'results.json'),
                                 os.path.join(folder, 'benchmarks.png')))
    return 0


def write_report(report, out, command):
    plot(report, os.path.join(out, 'benchmarks', 'benchmarks.png'))
    with open(os.path.join(out, 'benchmarks.md'), 'w') as handle:
        handle.write(markdown(report, command) + '\n')


if __name__ == '__main__':
    sys.exit(main())
