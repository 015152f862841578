# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration in the WAN lab: playbooks/migrate.yml from lab host A to the rsync daemon over TLS on lab host B,
behind `make migrate` (a benchmark) and tests/integration/test_transfer_lab.py (resume, a controller killed, a
corrupted file), both on the transfer lab's set-up (tests/lab/transfer.py: the rsync daemon on B with transport
both, module xfer, A's client certificate of the migration transfer-lab).

`make migrate [RATE=1g RTT=98 LOSS=0 MTU=9000 STREAMS=4 SIZE=3g]` builds a mixed tree in A (a third of SIZE in
one file, a third in files of 5 MB, a third in files of 0.5 MB: at 3g, one 1 GB file, 200 of 5 MB and 2000 of
0.5 MB), tunes both hosts, and migrates it twice over TLS, with one stream and with STREAMS, the receiver emptied
in between; it writes results/migrate-bench-<time>.json (the report of each run, and the delay line's drops during
each) and .md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position
import transfer  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp  # noqa: E402
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import target as _target  # noqa: E402

PLAYBOOK = os.path.join(wanlab.REPO_ROOT, 'playbooks', 'migrate.yml')
TREE = transfer.BASE + '/tree'
SMALL_TREE = transfer.BASE + '/small-tree'
LAB_NAME = 'bdp-lab-migrate'


def unit(lab):
    return _target.unit_name(lab.host_name('B'), transfer.MODULE)


def dest(lab):
    """Where A's tree lands in B: the module's path, in a directory named after A."""
    return '%s/%s' % (transfer.DEST, lab.host_name('A'))


def prepare(lab, workdir, source):
    """The host variables of the migration beside the transfer lab's inventory: A sends ``source`` to B."""
    os.makedirs(os.path.join(workdir, 'host_vars'), exist_ok=True)
    for host, extra in (('A', {'migrate_source': source, 'migrate_target': lab.host_name('B')}), ('B', {})):
        with open(os.path.join(workdir, 'host_vars', lab.host_name(host) + '.json'), 'w') as handle:
            json.dump(dict(extra, wan_address=lab.address(host)), handle)
    return os.path.join(workdir, 'reports')


def argv(files, reports, extra=None, options=()):
    variables = dict({'migrate_become': False, 'migrate_report_dir': reports, 'migrate_interval': 5}, **(extra or {}))
    return [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', files['inventory'], PLAYBOOK,
            '-e', json.dumps(variables)] + list(options)


def run(files, reports, extra=None, check=True, options=()):
    """playbooks/migrate.yml (``options``: more of ansible-playbook's, such as --check); (exit code, output)."""
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    proc = subprocess.run(argv(files, reports, extra, options), env=env, text=True, check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    if check and proc.returncode != 0:
        raise transfer.TransferError('migrate.yml %s failed (exit %d):\n%s' % (
            json.dumps(extra or {}), proc.returncode, proc.stdout[-4000:]))
    return proc.returncode, proc.stdout


def start(files, reports, extra=None):
    """playbooks/migrate.yml in the background (a controller to kill): the Popen."""
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    return subprocess.Popen(argv(files, reports, extra), env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def latest(reports):
    """The newest report's JSON."""
    paths = sorted(glob.glob(os.path.join(reports, 'migrate-*.json')), key=os.path.getmtime)
    with open(paths[-1]) as handle:
        return json.load(handle)


def received(lab):
    """The bytes B holds under the destination, partial files included."""
    out = transfer.sh(lab, 'B', 'du -sb --apparent-size %s 2>/dev/null | cut -f1 || echo 0' % dest(lab)).stdout
    return int(out.strip() or 0)


def wait_for(lab, nbytes, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if received(lab) >= nbytes:
            return
        time.sleep(0.5)
    raise transfer.TransferError('B did not receive %d bytes in %d s' % (nbytes, timeout))


def make_tree(lab, size_bytes):
    """The mixed tree in A: a third of the bytes in one file, a third in files of 5 MB, a third in files of 0.5 MB."""
    third = size_bytes // 3
    script = ['set -e', 'mkdir -p %s/big %s/medium %s/small' % (TREE, TREE, TREE),
              'head -c %d /dev/urandom > %s/big/one.bin' % (third, TREE),
              'for i in $(seq 1 %d); do head -c 5000000 /dev/urandom > %s/medium/m$i.bin; done'
              % (max(1, third // 5000000), TREE),
              'for i in $(seq 1 %d); do d=%s/small/d$((i %% 20)); mkdir -p $d; head -c 500000 /dev/urandom > '
              '$d/s$i.bin; done' % (max(1, third // 500000), TREE)]
    transfer.sh(lab, 'A', '\n'.join(script), timeout=3600)


# The application's work between two passes, in A (Python: any tree size in one process): every 100th file of the
# tree rewritten, every 200th removed.
CHURN = r"""
import os, sys
files = sorted(os.path.join(top, name) for top, dummy, names in os.walk(sys.argv[1]) for name in names)
changed = [path for index, path in enumerate(files) if index % 100 == 50]
removed = [path for index, path in enumerate(files) if index % 200 == 0]
for path in changed:
    size = os.path.getsize(path)
    with open(path, 'r+b') as handle:
        handle.write(os.urandom(min(size, 4096)))
for path in removed:
    os.unlink(path)
print('%d %d %d' % (len(files), len(changed), len(removed)))
"""
# A tree of small files (make migrate SMALL_FILES=N): N files of 4 kB in directories of 1000.
SMALL = r"""
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
for index in range(count):
    directory = os.path.join(root, 'd%04d' % (index // 1000))
    if index % 1000 == 0:
        os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, 'f%07d' % index), 'wb') as handle:
        handle.write(os.urandom(4096))
"""


def timed(files, reports, extra):
    """A pass, its report, and the controller's peak memory so far (ansible-playbook's, the largest child)."""
    start = time.monotonic()
    run(files, reports, extra)
    report = latest(reports)
    report['playbook_seconds'] = round(time.monotonic() - start, 1)
    report['controller_peak_kb'] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return report


def cutover(lab, files, reports, args):
    """The bulk is there (the run before); a pass after the application changed 1 % of the files and removed 0.5 %,
    and the final pass with deletes and the checksum proof: {pass2, final, churn}."""
    total, changed, removed = [int(x) for x in transfer.sh(lab, 'A', 'python3 - %s' % TREE, stdin=CHURN).stdout.split()]
    out = {'churn': {'files': total, 'changed': changed, 'removed': removed}}
    out['pass2'] = timed(files, reports, {'migrate_streams': args.streams, 'rate': args.rate})
    out['final'] = timed(files, reports, {'migrate_streams': args.streams, 'rate': args.rate, 'migrate_delete': True,
                                          'migrate_max_delete': -1})
    return out


def small_files(lab, files, reports, args, count):
    """``count`` files of 4 kB: files per second, the time to the first rsync and the first byte (from the runner's
    start), the preflight's, the runner's and the controller's peak memory."""
    transfer.sh(lab, 'A', 'rm -rf %s && mkdir -p %s && python3 - %s %d' % (SMALL_TREE, SMALL_TREE, SMALL_TREE, count),
                stdin=SMALL, timeout=3600)
    transfer.sh(lab, 'B', 'rm -rf %s' % dest(lab))
    report = timed(files, reports, {'migrate_source': SMALL_TREE, 'migrate_hosts': lab.host_name('A'),
                                    'rate': args.rate})
    return report


def bench(args):
    """`make migrate`: one stream and N over TLS on the mixed tree; results/migrate-bench-<time>.json and .md."""
    size_bytes = wanlab.parse_bytes(args.size, '--size (SIZE)')
    lab = wanlab.Lab(rate=args.rate, rtt=args.rtt, loss=args.loss, mtu=args.mtu, hosts='containers', name=args.name,
                     log=lambda msg: print('migrate: lab: ' + msg, file=sys.stderr))
    result = {'link': wanlab.describe(lab.config), 'rate_bps': lab.config['rate_bps'], 'rtt_ms': lab.config['rtt_ms'],
              'loss_pct': lab.config['loss_pct'], 'mtu': lab.config['mtu'], 'size_bytes': size_bytes,
              'streams': args.streams, 'runs': {}, 'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
              'command': 'make migrate RATE=%s RTT=%s LOSS=%s MTU=%s STREAMS=%s SIZE=%s' % (
                  args.rate, args.rtt, args.loss, args.mtu, args.streams, args.size)}
    with lab, tempfile.TemporaryDirectory(prefix='bdp-migrate-') as workdir:
        for host in 'AB':
            transfer.sh(lab, host, 'mkdir -p %s && mount -t tmpfs -o size=%d,mode=0755 tmpfs %s && mkdir -p %s %s'
                        % (transfer.BASE, size_bytes + args.small_files * 8192 + 2 * 10 ** 8, transfer.BASE,
                           transfer.SRC, transfer.DEST))
        make_tree(lab, size_bytes)
        files, dummy = transfer.setup_transports(lab, workdir, 8, quiet=True)
        transfer.tune(lab, files, args)
        reports = prepare(lab, workdir, TREE)
        for label, streams in (('one', '1'), ('n', args.streams)):
            transfer.sh(lab, 'B', 'rm -rf %s' % dest(lab))
            before = lab.counters()
            run(files, reports, {'migrate_streams': streams, 'rate': args.rate})
            after = lab.counters()
            report = latest(reports)
            report['delay_line_drops'] = dict((key, after.get(key, 0) - before.get(key, 0))
                                              for key in transfer.LINE_COUNTERS)
            result['runs'][label] = report
            print('migrate: %s stream(s): %s in %s s, %s, %s' % (
                report['streams'], bdp.human_bytes(report['bytes']), report['seconds'],
                bdp.human_rate(report['goodput_bps'] or 0), 'verified' if report['verified'] else 'NOT verified'),
                file=sys.stderr)
        result['cutover'] = cutover(lab, files, reports, args)
        if args.small_files:
            result['small_files'] = small_files(lab, files, reports, args, args.small_files)
    os.makedirs(args.results, exist_ok=True)
    path = os.path.join(args.results, 'migrate-bench-%s.json' % time.strftime('%Y%m%d-%H%M%S'))
    with open(path, 'w') as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
    with open(path[:-len('.json')] + '.md', 'w') as handle:
        handle.write(markdown(result))
    print(markdown(result) + 'results: %s' % os.path.relpath(path, wanlab.REPO_ROOT))
    return result


def markdown(result):
    ceiling = result['rate_bps'] * (result['mtu'] - 52) / float(result['mtu'])
    lines = ['# make migrate: %s, %s mixed tree' % (result['link'], bdp.human_bytes(result['size_bytes'])), '',
             '`%s`; the ceiling rate x (MTU - 52) / MTU = %s.' % (result['command'], bdp.human_rate(int(ceiling))),
             '', '| run | streams | goodput | of the ceiling | copy s | start-up s | proof s | verified | queue drops |'
             ' sender CPU s/GB | receiver CPU s/GB |', '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|']
    for label, run_ in sorted(result['runs'].items()):
        goodput = run_.get('goodput_bps') or 0
        lines.append('| %s | %s | %s | %.0f %% | %s | %s | %s | %s | %s | %s | %s |' % (
            label, run_['streams'], bdp.human_rate(goodput), 100.0 * goodput / ceiling, run_['seconds'],
            run_['startup_seconds'], run_['proof_seconds'], run_['verified'],
            run_['delay_line_drops'].get('queue_drops'), run_['sender_cpu_seconds_per_gb'],
            run_['receiver_cpu_seconds_per_gb']))
    cut = result.get('cutover')
    if cut:
        lines += ['', '## Passes to a cut-over', '',
                  'After the bulk (the run above), the application changed %d of the %d files (1 %%) and removed %d '
                  '(0.5 %%); then a pass, and the final pass with `migrate_delete: true` and the checksum proof.'
                  % (cut['churn']['changed'], cut['churn']['files'], cut['churn']['removed']), '',
                  '| pass | sent | files sent | deleted | copy s | proof s | whole pass s | goodput | verified |',
                  '|---|---:|---:|---:|---:|---:|---:|---:|---|']
        for label, item in (('bulk (%s streams)' % result['runs']['n']['streams'], result['runs']['n']),
                            ('after 1 % changed, 0.5 % removed', cut['pass2']), ('final, with deletes', cut['final'])):
            lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                label, bdp.human_bytes(item.get('sent_bytes') or 0), item.get('files_sent'), item.get('deleted') or 0,
                item['seconds'], item['proof_seconds'], item.get('total_seconds'),
                bdp.human_rate(item.get('goodput_bps') or 0), item['verified']))
    small = result.get('small_files')
    if small:
        lines += ['', '## Small files', '',
                  '| files | bytes | files per second | goodput | copy s | start-up s | first rsync s | first byte s | '
                  'parts | preflight peak memory | runner peak memory | controller peak memory | verified |',
                  '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
                  '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s MB | %s MB | %s MB | %s |' % (
                      small['files'], bdp.human_bytes(small['bytes']), small['files_per_second'],
                      bdp.human_rate(small.get('goodput_bps') or 0), small['seconds'], small['startup_seconds'],
                      small['first_rsync_seconds'], small['first_byte_seconds'], small['parts'],
                      round((small['plan'].get('peak_memory_kb') or 0) / 1024.0, 1),
                      round((small['runner_peak_rss_kb'] or 0) / 1024.0, 1),
                      round(small['controller_peak_kb'] / 1024.0, 1), small['verified'])]
    return '\n'.join(lines) + '\n'


def parse_args(argv_=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rate', default='1g')
    parser.add_argument('--rtt', default='98')
    parser.add_argument('--loss', default='0')
    parser.add_argument('--mtu', default='9000')
    parser.add_argument('--size', default='3g', help='bytes of the mixed tree (default 3g)')
    parser.add_argument('--streams', default='4', help='the streams of the second run: a number or auto (default 4)')
    parser.add_argument('--name', default=LAB_NAME)
    parser.add_argument('--results', default=transfer.RESULTS)
    parser.add_argument('--small-files', type=int, default=0, help='also a tree of this many files of 4 kB (0: none)')
    parser.add_argument('--quiet', action='store_true')
    return parser.parse_args(argv_)


if __name__ == '__main__':
    try:
        bench(parse_args())
    except (wanlab.LabError, transfer.TransferError) as exc:
        raise SystemExit('migrate: %s' % exc)
