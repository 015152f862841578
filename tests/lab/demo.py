# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The before/after demonstration behind `make demo`.

Without an inventory: two lab hosts joined by an emulated long fat link (tests/lab/wanlab.py),
single-stream throughput measured with bdp.wan_tune.iperf3_verify, playbooks/wan_tune.yml applied
through Ansible, throughput measured again, a table printed and the results written as JSON to
results/. With an inventory: the playbook runs against it, nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp  # noqa: E402
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3  # noqa: E402
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import throughput  # noqa: E402

ROOT = wanlab.REPO_ROOT
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'wan_tune.yml')
MEASURE = os.path.join(ROOT, 'tests', 'lab', 'measure.yml')
RESULTS = os.path.join(ROOT, 'results')


def ansible_playbook(argv, quiet=False, check=True):
    """Run ansible-playbook from the interpreter's venv; output to the terminal unless quiet (then in the returned
    CompletedProcess's stdout).  A failure ends the run unless ``check`` is false."""
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')] + argv
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    proc = subprocess.run(cmd, env=env, text=True, check=False,
                          stdout=subprocess.PIPE if quiet else None, stderr=subprocess.STDOUT if quiet else None)
    if check and proc.returncode != 0:
        raise SystemExit('ansible-playbook %s failed (exit %d)%s'
                         % (' '.join(argv), proc.returncode, (':\n' + proc.stdout[-4000:]) if quiet else ''))
    return proc


def write_inventory(lab, path):
    lines = ['[sender]', lab.host_name('A') + ' lab_address=' + lab.address('A'),
             '[receiver]', lab.host_name('B') + ' lab_address=' + lab.address('B'),
             '[lab:children]', 'sender', 'receiver',
             '[lab:vars]', 'ansible_connection=podman_nsenter',
             'ansible_python_interpreter=/usr/bin/python3', 'wan_tune_become=false']
    with open(path, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')


def field(value, index=2):
    return int(value.split()[index])


def measure(inventory, workdir, label, args):
    out = os.path.join(workdir, label + '.json')
    ansible_playbook(['-i', inventory, MEASURE, '-e', json.dumps({
        'measure_out': out, 'rate': args.rate, 'rtt': args.rtt, 'duration': args.duration, 'omit': args.omit})],
        quiet=True)
    with open(out) as handle:
        data = json.load(handle)
    result = data['measurement']
    return {
        'bps': result['receiver_bps'],
        'sender_bps': result['sender_bps'],
        'retransmits': result['retransmits'],
        'mean_rtt_ms': result.get('mean_rtt_ms'),
        'congestion_control': data['sender']['tcp_congestion_control'],
        'tcp_rmem_max': field(data['receiver']['tcp_rmem']),
        'tcp_wmem_max': field(data['sender']['tcp_wmem']),
        'window_ceiling_bps': result.get('ceiling_bps'),
        'limit': result.get('limit'),
        'passed': bool(result.get('passed')),
        'verdict': result.get('msg', ''),
    }


def mbit(bps):
    return '%.0f' % (bps / 1e6) if bps is not None else '-'


def table(result):
    before, after = result['before'], result['after']
    rows = [
        ('goodput (Mbit/s)', mbit(before['bps']), mbit(after['bps'])),
        ('share of link ceiling', '%.0f %%' % (100.0 * before['bps'] / result['ceiling_bps']),
         '%.0f %%' % (100.0 * after['bps'] / result['ceiling_bps'])),
        ('retransmits', str(before['retransmits']), str(after['retransmits'])),
        ('congestion control', before['congestion_control'], after['congestion_control']),
        ('tcp_rmem max (receiver)', bdp.human_bytes(before['tcp_rmem_max']), bdp.human_bytes(after['tcp_rmem_max'])),
        ('tcp_wmem max (sender)', bdp.human_bytes(before['tcp_wmem_max']), bdp.human_bytes(after['tcp_wmem_max'])),
        ('window ceiling (Mbit/s)', mbit(before['window_ceiling_bps']), mbit(after['window_ceiling_bps'])),
        ('limited by', before['limit'] or '-', after['limit'] or '-'),
    ]
    width = [max(len(row[i]) for row in rows + [('', 'before', 'after')]) for i in range(3)]
    lines = ['%-*s  %*s  %*s' % (width[0], '', width[1], 'before', width[2], 'after')]
    lines += ['%-*s  %*s  %*s' % (width[0], a, width[1], b, width[2], c) for a, b, c in rows]
    return '\n'.join(lines)


def demo(args):
    lab = wanlab.Lab(rate=args.rate, rtt=args.rtt, loss=args.loss, mtu=args.mtu, hosts='containers',
                     log=lambda msg: print('lab: ' + msg, file=sys.stderr))
    config = lab.config
    result = {
        'rate_bps': config['rate_bps'], 'rtt_ms': config['rtt_ms'], 'loss_pct': config['loss_pct'],
        'mtu': config['mtu'], 'duration_s': args.duration,
        'ceiling_bps': throughput.goodput_bps(config['rate_bps'], config['mtu']),
        'bdp_bytes': bdp.bdp_bytes(config['rate_bps'], config['rtt_ms']),
        'link': wanlab.describe(config),
        'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
    }
    print('lab: %s; link goodput ceiling %s' % (result['link'], bdp.human_rate(result['ceiling_bps'])), file=sys.stderr)
    with lab, tempfile.TemporaryDirectory(prefix='bdp-demo-') as workdir:
        inventory = os.path.join(workdir, 'inventory.ini')
        write_inventory(lab, inventory)
        print('\n== before: stock distribution settings, measuring %d s ==' % args.duration, file=sys.stderr)
        result['before'] = measure(inventory, workdir, 'before', args)
        print('== applying playbooks/wan_tune.yml -e "rate=%s rtt=%s" ==' % (args.rate, args.rtt), file=sys.stderr)
        ansible_playbook(['-i', inventory, PLAYBOOK, '-e', json.dumps({'rate': args.rate, 'rtt': args.rtt})])
        print('== after: measuring %d s ==' % args.duration, file=sys.stderr)
        result['after'] = measure(inventory, workdir, 'after', args)
        result['delay_line'] = lab.counters()
    result['speedup'] = round(result['after']['bps'] / result['before']['bps'], 2) if result['before']['bps'] else None
    os.makedirs(args.results, exist_ok=True)
    name = 'demo-%s-%s-%sms.json' % (time.strftime('%Y%m%d-%H%M%S'), args.rate, args.rtt)
    path = os.path.join(args.results, name)
    with open(path, 'w') as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
    print('\n%s, single TCP stream, %d s\n%s' % (result['link'], args.duration, table(result)))
    print('\nverdict after tuning: %s' % ('PASS' if result['after']['passed'] else 'FAIL: ' + result['after']['verdict']))
    print('results: %s' % os.path.relpath(path, ROOT))
    return result


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rate', default='1g', help='link rate (default 1g)')
    parser.add_argument('--rtt', default='98', help='round-trip time in ms (default 98)')
    parser.add_argument('--loss', default='0', help='random loss in percent (default 0)')
    parser.add_argument('--mtu', default='9000', help='MTU of the lab link (default 9000)')
    parser.add_argument('--duration', type=int, default=15, help='seconds per measurement (default 15)')
    parser.add_argument('--omit', type=int, default=3, help='seconds of slow start left out (default 3)')
    parser.add_argument('--inventory', default='', help='run the playbook against this inventory instead of the lab')
    parser.add_argument('--results', default=RESULTS, help='folder for the JSON results (default results/)')
    args = parser.parse_args(argv)
    if args.duration < 1 or args.duration > iperf3.DURATION_MAX:
        parser.error('--duration (DURATION): %d is not %s' % (args.duration, iperf3.DURATION_HELP))
    if args.omit < 0 or args.omit > iperf3.OMIT_MAX:
        parser.error('--omit: %d is not %s' % (args.omit, iperf3.OMIT_HELP))
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.inventory:
        ansible_playbook(['-i', args.inventory, PLAYBOOK, '-e', json.dumps({'rate': args.rate, 'rtt': args.rtt})])
        return 0
    try:
        demo(args)
    except wanlab.LabError as exc:
        raise SystemExit('demo: %s' % exc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
