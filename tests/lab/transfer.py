# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The transfer lab behind `make transfer`: file transports across the WAN lab, stock against tuned.

The same tree of incompressible files goes from lab host A to lab host B with each transport: scp and
rsync over the distribution's OpenSSH (one stream, and SSH_STREAMS parallel streams), rsync to the rsync
daemon in cleartext and over TLS (the collection's TLS client to the role's stunnel, with the client certificate the role
issued to A), each with one stream and with STREAMS parallel streams (the files split into lists of about
equal size, one rsync each), and HPN-SSH where both hosts have it. First on stock hosts, then again after
playbooks/wan_tune.yml. Every copy is checked with sha256sum at the receiver; a mismatch fails the run. CPU
per process is sampled in both hosts (/proc/PID/stat) to tell a transport limited by a core from one
limited by its window; each parallel stream's start and end, and the delay line's drops, show where the
time goes. The TLS session's protocol, cipher and verification come from the client's own handshake
(openssl s_client -brief). Prints a table and writes results/transfer-<timestamp>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wanlab  # noqa: E402  pylint: disable=wrong-import-position
import demo  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp  # noqa: E402
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls  # noqa: E402

ROOT = wanlab.REPO_ROOT
RESULTS = os.path.join(ROOT, 'results')
LAB_NAME = 'bdp-lab-xfer'
METHODS = ('scp', 'rsync_ssh', 'rsync_ssh_parallel', 'rsync_daemon', 'rsync_daemon_parallel', 'rsync_tls',
           'rsync_tls_parallel', 'hpnssh')
LABELS = {
    'scp': 'scp (OpenSSH)',
    'rsync_ssh': 'rsync over SSH (OpenSSH)',
    'rsync_ssh_parallel': 'rsync over SSH, %d streams',
    'rsync_daemon': 'rsync daemon, 1 stream (cleartext)',
    'rsync_daemon_parallel': 'rsync daemon, %d streams (cleartext)',
    'rsync_tls': 'rsync daemon over TLS, 1 stream',
    'rsync_tls_parallel': 'rsync daemon over TLS, %d streams',
    'hpnssh': 'HPN-SSH (hpnscp)',
}
SSH_METHODS = ('scp', 'rsync_ssh')
TLS_METHODS = ('rsync_tls', 'rsync_tls_parallel')
# Parallel methods and the result key that gives their number of streams.
PARALLEL = {'rsync_ssh_parallel': 'ssh_streams', 'rsync_daemon_parallel': 'streams', 'rsync_tls_parallel': 'streams'}
# OpenSSH's channel window, CHAN_SES_WINDOW_DEFAULT in channels.h (64 x 32 KiB; OpenSSH 9.2 and 10.x)
SSH_WINDOW_BYTES = 2 * 1024 * 1024
CPU_LIMIT_CORES = 0.9           # a process that used this share of a core over the transfer counts as CPU-bound
FILE_BYTES = 128 * 2 ** 20      # about this much per file in the tree; the parallel streams share the files out
MAX_FILES = 64
# The transfer's processes at both ends run at this nice value, so that other work on the machine the lab
# shares does not starve them: the lab measures the path and the transports, not the neighbours.
NICE = -20
STEADY_WINDOW_S = 3.0          # the steady rate is the best rate over this long (30 round trips at 98 ms)
TOP_PROCESSES = 3               # processes per host kept in the JSON
BASE = '/srv/xfer'              # a tmpfs in each lab host: no disk in the measurement
SRC = BASE + '/src'
DEST = BASE + '/in'
MANIFEST = BASE + '/manifest.sha256'
PARTS = BASE + '/parts'
MODULE = 'xfer'
RSYNC_USER = 'xfer'
PASSWORD_FILE = '/root/.xfer-rsync.pass'
TLS_PORT = 874
# The lab's migration, and where the rsync_daemon role puts its files (module_utils/transfer/rsynctls.py layout, the one place):
# the role's own stunnel instance on B (it starts rsync for each connection), A's trust anchor, certificate and key.
TLS_MIGRATION = 'transfer-lab'
TLS = rsynctls.layout(TLS_MIGRATION, port=TLS_PORT)
TLS_UNIT = TLS['service']
# The collection's TLS client runs `openssl s_client ... -quiet` as rsync's RSYNC_CONNECT_PROG; the lab's runs this
# wrapper in A in its place, which adds -brief: it prints the session's protocol, cipher suite and verification result
# on stderr (never on the data stream).
OPENSSL_BRIEF = '/usr/local/bin/openssl-brief'
HPN_PORT = 2222
NO_HPNSSH = ('no HPN-SSH binary (hpnscp in host A, hpnsshd in host B): there is no HPN-SSH package for Debian 12; '
             'provide hpn_ssh_package_files (docs/hpn_ssh.md)')
SAMPLER = r'''
import json, os, re, select, subprocess, sys, time
me = str(os.getpid())
peer = sys.argv[1] if len(sys.argv) > 1 else ''
acked = {}
series = []
def snap():
    out = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or pid == me:
            continue
        try:
            with open('/proc/%s/stat' % pid) as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rindex(')') + 2:].split()
        out[pid] = [data[data.index('(') + 1:data.rindex(')')], int(fields[11]) + int(fields[12])]
    if peer:
        text = subprocess.run(['ss', '-tinH', 'dst', peer], capture_output=True, text=True, check=False).stdout
        for conn, count in re.findall(r'(\S+:\d+)\s+\S+:\d+.*?\n.*?bytes_acked:(\d+)', text):
            acked[conn] = max(acked.get(conn, 0), int(count))
        series.append([time.monotonic(), sum(acked.values())])
    return out
first = snap()
seen = dict(first)
print('ready', flush=True)
while not select.select([sys.stdin], [], [], 0.2)[0]:
    seen.update(snap())
seen.update(snap())
print(json.dumps({'clk_tck': os.sysconf('SC_CLK_TCK'), 'first': first, 'last': seen, 'acked': series}))
'''


class TransferError(RuntimeError):
    """A transfer that must fail the run (a checksum mismatch, a lab that does not work)."""


# --------------------------------------------------------------------------- pure helpers (unit-tested)

def window_ceiling_bps(window_bytes, rtt_ms):
    """The most a fixed window carries per round trip: 2 MiB / 98 ms = 171 Mbit/s."""
    return window_bytes * 8 / (float(rtt_ms) / 1000.0)


def file_count(size_bytes, streams):
    """Files of about FILE_BYTES, at least one per stream, a multiple of ``streams``, at most MAX_FILES.

    Few large files, because scp (SFTP in OpenSSH 9) spends about five round trips on each file."""
    count = max(streams, min(MAX_FILES, -(-size_bytes // FILE_BYTES)))
    return min(MAX_FILES, -(-count // streams) * streams)


def file_sizes(size_bytes, count):
    """``count`` sizes adding up to ``size_bytes`` (the first ones one byte larger)."""
    count = max(1, min(count, size_bytes))
    base, extra = divmod(size_bytes, count)
    return [base + (1 if i < extra else 0) for i in range(count)]


def split_streams(files, streams):
    """Share (name, size) pairs out into ``streams`` lists of about equal bytes (largest first, to the lightest)."""
    groups = [[] for dummy in range(max(1, min(streams, len(files))))]
    loads = [0] * len(groups)
    for name, size in sorted(files, key=lambda item: (-item[1], item[0])):
        lightest = loads.index(min(loads))
        groups[lightest].append(name)
        loads[lightest] += size
    return [sorted(group) for group in groups]


def cpu_usage(sample, seconds, top=TOP_PROCESSES):
    """Cores used per process over a transfer of ``seconds`` from a sampler's first and last snapshots.

    A process not in the first snapshot started during the transfer and counts from zero. Returns the
    ``top`` busiest as [{'pid', 'comm', 'cores'}], busiest first."""
    if seconds <= 0:
        return []
    tck = float(sample['clk_tck'])
    used = []
    for pid, (comm, ticks) in sample['last'].items():
        start = sample['first'].get(pid, [comm, 0])[1]
        cores = (ticks - start) / tck / seconds
        if cores > 0:
            used.append({'pid': int(pid), 'comm': comm, 'cores': round(cores, 3)})
    used.sort(key=lambda item: (-item['cores'], item['pid']))
    return used[:top]


def steady_bps(series, window=STEADY_WINDOW_S):
    """The highest rate over ``window`` seconds in a series of [time, bytes acked] samples of the sender's
    connections (``ss -ti`` in A): the transport's steady rate, free of its handshake and of slow start, and
    of moments when the machine the lab shares did not run the transfer's processes. None without enough samples."""
    best = None
    start = 0
    for end in range(len(series)):
        while start + 1 < end and series[end][0] - series[start + 1][0] >= window:
            start += 1              # the shortest span of at least ``window`` that ends at ``end``
        span = series[end][0] - series[start][0]
        if span >= window:
            rate = (series[end][1] - series[start][1]) * 8 / span
            best = rate if best is None else max(best, rate)
    return round(best) if best is not None else None


def tls_session(stderr):
    """{'protocol', 'cipher', 'verified', 'sessions'} from what `openssl s_client -brief` printed for every connection
    of a TLS transfer (one per stream), or None when it printed no session. ``verified`` is true only when every
    session's server certificate was verified against the trust anchor; protocol and cipher are those of the first
    session, with every distinct one listed when the streams disagree."""
    protocols = re.findall(r'^Protocol version: (\S+)$', stderr, re.M)
    ciphers = re.findall(r'^Ciphersuite: (\S+)$', stderr, re.M)
    verdicts = re.findall(r'^Verification: (.+)$', stderr, re.M)
    if not protocols:
        return None
    return {'protocol': ' '.join(sorted(set(protocols), key=protocols.index)),
            'cipher': ' '.join(sorted(set(ciphers), key=ciphers.index)) or None,
            'verified': len(verdicts) == len(protocols) and all(v.strip() == 'OK' for v in verdicts),
            'sessions': len(protocols)}


def stream_times(stderr, start):
    """Each parallel stream's [start, end] in seconds from the command's ``start``, from its 'stream N START END'
    lines: shows the streams' start-up and how evenly they finish."""
    found = re.findall(r'^stream (\d+) ([\d.]+) ([\d.]+)$', stderr, re.M)
    return [[round(float(begin) - start, 3), round(float(end) - start, 3)]
            for _number, begin, end in sorted(found, key=lambda item: int(item[0]))]


def is_cpu_limited(run):
    """True when a process at either end used a whole core (CPU_LIMIT_CORES) during this run."""
    return any(proc['cores'] >= CPU_LIMIT_CORES for host in ('A', 'B') for proc in run.get('cpu', {}).get(host, []))


def summarize_method(stock, tuned):
    """The JSON entry of one transport from its stock and tuned runs (dicts with bps, error, cpu, ...)."""
    errors = ['%s: %s' % (phase, run['error']) for phase, run in (('stock', stock), ('tuned', tuned))
              if run.get('error')]
    if stock.get('error') and stock.get('error') == tuned.get('error'):
        errors = [stock['error']]
    entry = {
        'stock_bps': stock.get('bps'), 'tuned_bps': tuned.get('bps'),
        'cpu_limited': is_cpu_limited(stock) or is_cpu_limited(tuned),
        'error': '; '.join(errors) or None,
        'stock': stock, 'tuned': tuned,
    }
    if 'tls' in stock or 'tls' in tuned:
        # the tuned session, the one the table's tuned figure comes from (the stock one when tuned failed)
        entry['tls'] = tuned.get('tls') or stock.get('tls')
    return entry


def label(method, result):
    return LABELS[method] % result[PARALLEL[method]] if method in PARALLEL else LABELS[method]


def _mbit(bps):
    return '%.0f' % (bps / 1e6) if bps is not None else '-'


def _share(bps, rate_bps):
    return '%.0f %%' % (100.0 * bps / rate_bps) if bps is not None else '-'


def _steady(entry):
    return '%s / %s' % tuple(_mbit((entry.get(phase) or {}).get('steady_bps')) for phase in ('stock', 'tuned'))


def rows(result):
    """Table rows: transport, stock and tuned goodput in Mbit/s and as a share of the link, the steady rates,
    CPU-bound, note."""
    out = []
    for method in METHODS:
        entry = result['methods'][method]
        note = entry['error'] or ''
        if method in SSH_METHODS and not note:
            note = 'SSH window ceiling %s Mbit/s' % _mbit(result['ssh_window_ceiling_bps'])
        if method == 'rsync_ssh_parallel' and not note:
            note = '%d x the SSH window ceiling = %s Mbit/s' % (
                result['ssh_streams'], _mbit(result['ssh_streams'] * result['ssh_window_ceiling_bps']))
        if entry.get('tls') and not note:
            tls = entry['tls']
            note = '%s %s, server certificate %s' % (
                tls['protocol'], tls['cipher'], 'verified' if tls['verified'] else 'NOT verified')
        out.append((label(method, result), _mbit(entry['stock_bps']),
                    _share(entry['stock_bps'], result['rate_bps']), _mbit(entry['tuned_bps']),
                    _share(entry['tuned_bps'], result['rate_bps']), _steady(entry),
                    'yes' if entry['cpu_limited'] else 'no', note))
    return out


HEADER = ('transport', 'stock Mbit/s', 'stock share', 'tuned Mbit/s', 'tuned share', 'steady stock / tuned',
          'CPU-bound', 'note')
COLUMNS = len(HEADER) - 1       # the note goes under the table


def table(result):
    """The plain-text table printed at the end of `make transfer`."""
    body = [row[:COLUMNS] for row in rows(result)]
    width = [max(len(r[i]) for r in body + [HEADER[:COLUMNS]]) for i in range(COLUMNS)]
    lines = ['  '.join(('%-*s' if i == 0 else '%*s') % (width[i], cell) for i, cell in enumerate(r))
             for r in [HEADER[:COLUMNS]] + body]
    notes = ['%s: %s' % (r[0], r[COLUMNS]) for r in rows(result) if r[COLUMNS]]
    steady = 'steady: the best %g s of the sender\'s bytes acked (ss -ti), in Mbit/s' % STEADY_WINDOW_S
    return '\n'.join(lines + ['', steady] + notes)


def markdown(result):
    """The same table in Markdown, with the link and the command."""
    lines = ['# Transfer lab: %s, %s of incompressible data in %d files' % (
        result['link'], bdp.human_bytes(result['size_bytes']), result['files']), '',
        'Command: `%s`. Measured %s. Share: of the link rate (%s). CPU-bound: a process at either end used '
        'at least %.0f %% of a core during the stock or the tuned run. Goodput: the bytes of the files over the time '
        'of the whole command. Steady: the best %g s of the sender\'s bytes acked (`ss -ti`).' % (
            result['command'], result['finished'], bdp.human_rate(result['rate_bps']), 100 * CPU_LIMIT_CORES,
            STEADY_WINDOW_S),
        '', '| ' + ' | '.join(HEADER) + ' |', '|---|' + '---:|' * 5 + '---|---|']
    lines += ['| ' + ' | '.join(r) + ' |' for r in rows(result)]
    lines += ['', 'CPU per process in the tuned run, in cores (1.00 = a whole core), the busiest %d per host: what '
              'encryption and each transport cost.' % TOP_PROCESSES, '',
              '| transport | A (sender) | B (receiver) |', '|---|---|---|']
    lines += ['| %s | %s | %s |' % row for row in cpu_rows(result)]
    return '\n'.join(lines) + '\n'


def cpu_rows(result):
    """(transport, A's busiest processes, B's) of the tuned runs: 'ssh 0.52, sshd 0.31'."""
    out = []
    for method in METHODS:
        cpu = (result['methods'][method].get('tuned') or {}).get('cpu')
        if cpu:
            out.append((label(method, result),) + tuple(
                ', '.join('%s %.2f' % (proc['comm'], proc['cores']) for proc in cpu.get(host, [])) or '-'
                for host in 'AB'))
    return out


# --------------------------------------------------------------------------- the lab hosts

def sh(lab, host, script, check=True, timeout=600, stdin=None):
    """Run a shell script in lab host A or B; raise TransferError when it fails and ``check``."""
    proc = lab.exec(host, ['bash', '-c', script], timeout=timeout, input=stdin)
    if check and proc.returncode != 0:
        raise TransferError('host %s: %s failed (exit %d): %s' % (
            host, script.splitlines()[0][:120], proc.returncode, (proc.stderr + proc.stdout).strip()[-2000:]))
    return proc


def make_data(lab, size_bytes, streams, ssh_streams):
    """The tree of incompressible files in A (on a tmpfs), its checksum manifest in both hosts, the stream lists
    (PARTS/<number of streams>/<stream>) for both numbers of streams."""
    counts = sorted(set([streams, ssh_streams]))
    sizes = file_sizes(size_bytes, file_count(size_bytes, lcm(counts)))
    names = ['f%03d.bin' % i for i in range(len(sizes))]
    margin = 256 * 2 ** 20           # the migration checks add files of 100 MB (tests/integration/test_transfer_lab.py)
    for host in 'AB':
        sh(lab, host, 'mkdir -p %s && mount -t tmpfs -o size=%d,mode=0755 tmpfs %s && mkdir -p %s %s %s'
           % (BASE, size_bytes + margin, BASE, SRC, DEST, PARTS))
    script = ['set -e', 'renice -n %d -p $$ >/dev/null' % NICE, 'cd ' + SRC]
    script += ['head -c %d /dev/urandom > %s' % (size, name) for name, size in zip(names, sizes)]
    script += ['sha256sum %s > %s' % (' '.join(names), MANIFEST)]
    sh(lab, 'A', '\n'.join(script), timeout=1800)
    manifest = sh(lab, 'A', 'cat ' + MANIFEST).stdout
    sh(lab, 'B', 'cat > ' + MANIFEST, stdin=manifest)
    used = {}
    for count in counts:
        groups = split_streams(list(zip(names, sizes)), count)
        sh(lab, 'A', 'mkdir -p %s/%d' % (PARTS, count))
        for number, group in enumerate(groups):
            sh(lab, 'A', 'cat > %s/%d/%d' % (PARTS, count, number), stdin='\n'.join(group) + '\n')
        used[count] = len(groups)
    return {'files': len(names), 'streams': used[streams], 'ssh_streams': used[ssh_streams]}


def lcm(numbers):
    """The least common multiple: a file count every number of streams divides."""
    out = 1
    for number in numbers:
        out = out * number // math.gcd(out, number)
    return out


def setup_transports(lab, workdir, streams, quiet=False):
    """The transports' servers in B and their clients in A: sshd with a key for root; the rsync daemon through
    playbooks/wan_tune.yml --tags rsync_daemon (the receiver's group_vars: rsync_daemon=true, module xfer, user xfer,
    writable, for A only);
    HPN-SSH's sshd on port 2222 where B has it. Returns the inventory file for tune() and what was set up."""
    sh(lab, 'A', 'mkdir -p -m 0700 /root/.ssh && rm -f /root/.ssh/id_ed25519* && '
                 'ssh-keygen -q -t ed25519 -N "" -f /root/.ssh/id_ed25519')
    sh(lab, 'B', 'mkdir -p -m 0700 /root/.ssh && cat > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys'
       ' && systemctl start ssh', stdin=sh(lab, 'A', 'cat /root/.ssh/id_ed25519.pub').stdout)
    sh(lab, 'A', 'ssh-keyscan -t ed25519 %s > /root/.ssh/known_hosts' % lab.address('B'), timeout=60)
    # awkward on purpose (a backslash, both quotes, a space, a $): a search for its random part finds any escaped form
    core = os.urandom(12).hex()
    password = '%s \\ "q\' $x' % core
    files = {'inventory': os.path.join(workdir, 'inventory.ini'), 'password': password, 'password_core': core}
    demo.write_inventory(lab, files['inventory'])
    # The receiver's group variables (next to the inventory, never on the command line: they hold the password):
    # the playbook's opt-in rsync_daemon=true and the daemon's module, as an operator would write them.
    os.makedirs(os.path.join(workdir, 'group_vars'), exist_ok=True)
    # transport both: the cleartext rows measure 873, the TLS rows 874 (mutual TLS: A gets its client certificate
    # from the role as a listed sender); the migration CA lives on B, the receiver.
    receiver = {'rsync_daemon': True, 'rsync_daemon_streams': streams, 'rsync_daemon_transport': 'both',
                'rsync_daemon_tls_migration': TLS_MIGRATION,
                'rsync_daemon_tls_senders': [lab.host_name('A')], 'rsync_daemon_tls_names': [lab.address('B')],
                'rsync_daemon_modules': [{'name': 'xfer', 'path': DEST, 'comment': 'transfer lab', 'read_only': False,
                                          'auth_users': ['xfer'], 'hosts_allow': [lab.address('A')], 'uid': 'root',
                                          'gid': 'root', 'numeric_ids': True}],
                'rsync_daemon_users': [{'name': 'xfer', 'password': password}]}
    path = os.path.join(workdir, 'group_vars', 'receiver.json')
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as handle:
        json.dump(receiver, handle)
    # Stock hosts with the transport: the playbook with only the rsync_daemon tag (no tuning).
    demo.ansible_playbook(['-i', files['inventory'], demo.PLAYBOOK, '--tags', 'rsync_daemon'], quiet=quiet)
    sh(lab, 'A', 'umask 077 && cat > ' + PASSWORD_FILE, stdin=password + '\n')
    sh(lab, 'A', 'cat > %s && chmod 0755 %s' % (OPENSSL_BRIEF, OPENSSL_BRIEF),
       stdin='#!/bin/sh\n# the TLS client\'s s_client, with the session summary on stderr\nexec openssl "$@" -brief\n')
    hpn = sh(lab, 'A', 'command -v hpnscp', check=False).returncode == 0 and \
        sh(lab, 'B', 'command -v hpnsshd', check=False).returncode == 0
    if hpn:
        sh(lab, 'B', 'cp /root/.ssh/authorized_keys /root/.ssh/authorized_keys2; '
                     '$(command -v hpnsshd) -p %d' % HPN_PORT)
        sh(lab, 'A', 'ssh-keyscan -p %d -t ed25519 %s >> /root/.ssh/known_hosts' % (HPN_PORT, lab.address('B')),
           timeout=60)
    renice_servers(lab)
    return files, {'transport_setup': 'ssh keys; rsync daemon: playbooks/wan_tune.yml with rsync_daemon=true',
                   'hpnssh': hpn}


def renice_servers(lab):
    """The servers in B (and so the processes they start for each transfer) at NICE."""
    sh(lab, 'B', 'renice -n %d -p $(systemctl show -P MainPID ssh) $(systemctl show -P MainPID rsync) '
                 '$(systemctl show -P MainPID %s) $(pgrep -x hpnsshd) >/dev/null' % (NICE, TLS_UNIT))


def commands(lab, method, streams, ssh_streams=8):
    """The shell command in A that copies SRC to DEST/<method> on B (a parallel method: one rsync per list of files
    in PARTS/<streams>, each printing 'stream N START END' on stderr).

    One long connection per stream: a work queue with a connection per file (xargs -P) was measured slower at
    1 Gbit/s and 98 ms (711 against 815 Mbit/s with four tuned streams, 26077 against 5505 queue drops), since every
    new connection repeats its handshakes and BBR's startup overshoot."""
    dst = lab.address('B')
    ssh_opts = '-o BatchMode=yes'
    rsync_ssh = 'rsync -a -e "ssh %s"' % ssh_opts
    daemon = 'rsync -a --password-file=%s' % PASSWORD_FILE
    client = rsynctls.layout(TLS_MIGRATION, port=TLS_PORT, receiver=lab.host_name('B'))
    program = client['env_vars'][rsynctls.CONNECT_PROG]        # the collection's client, with OPENSSL_BRIEF for openssl
    tls = '%s=%s %s -a --password-file=%s' % (
        rsynctls.CONNECT_PROG, rsynctls.shell_word(OPENSSL_BRIEF + program[len(rsynctls.S_CLIENT[0]):]),
        ' '.join(client['command']), PASSWORD_FILE)
    url = 'rsync://%s@%s/%s' % (RSYNC_USER, dst, MODULE)
    single = {'scp': 'scp -q -r %s %s root@%s:%s/scp' % (ssh_opts, SRC, dst, DEST),
              'rsync_ssh': '%s %s/ root@%s:%s/rsync_ssh/' % (rsync_ssh, SRC, dst, DEST),
              'rsync_daemon': '%s %s/ %s/rsync_daemon/' % (daemon, SRC, url),
              'rsync_tls': '%s %s/ %s/rsync_tls/' % (tls, SRC, url),
              'hpnssh': 'hpnscp -q -r -P %d %s %s root@%s:%s/hpnssh' % (HPN_PORT, ssh_opts, SRC, dst, DEST)}
    if method in single:
        return single[method]
    parallel = {'rsync_ssh_parallel': (rsync_ssh, 'root@%s:%s' % (dst, DEST), ssh_streams),
                'rsync_daemon_parallel': (daemon, url, streams),
                'rsync_tls_parallel': (tls, url, streams)}
    if method not in parallel:
        raise ValueError(method)
    client, target, count = parallel[method]
    # each stream's stderr in a file of its own, printed whole after the streams: four openssl summaries written to one
    # pipe at once can interleave within a line
    jobs = ['( s=$(date +%%s.%%N); %s --files-from=%s/%d/%d %s/ %s/%s/ 2>"$err/%d"; rc=$?; '
            'echo "stream %d $s $(date +%%s.%%N)" >>"$err/%d"; exit $rc ) & pids="$pids $!"'
            % (client, PARTS, count, n, SRC, target, method, n, n, n) for n in range(count)]
    return '\n'.join(['pids=""', 'err=$(mktemp -d)'] + jobs + [
        'rc=0', 'for p in $pids; do wait $p || rc=1; done', 'cat "$err"/* >&2; rm -rf "$err"', 'exit $rc'])


class Sampler(object):
    """CPU per process in one lab host, from before a transfer to after it (SAMPLER, run with python3)."""

    def __init__(self, lab, host, peer=''):
        argv = lab._exec_argv(host, ['python3', '-c', SAMPLER, peer], stdin=True)  # pylint: disable=protected-access
        self.proc = subprocess.Popen(argv,  # pylint: disable=consider-using-with
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=wanlab.podman_env())
        if self.proc.stdout.readline().strip() != 'ready':
            raise TransferError('host %s: the CPU sampler did not start' % host)

    def stop(self):
        out, _err = self.proc.communicate('stop\n', timeout=60)
        return json.loads(out)


LINE_COUNTERS = ('queue_drops', 'random_drops', 'late_packets')


def line_drops(lab):
    """The delay line's A -> B drop counters now (cumulative)."""
    counters = lab.counters()['a_to_b']
    return dict((key, counters.get(key, 0)) for key in LINE_COUNTERS)


def run_method(lab, method, streams, size_bytes, ssh_streams=8):
    """One copy A -> B: its goodput, the busiest processes in both hosts, checked with sha256sum at B; for a TLS
    method the session (tls_session), for a parallel one each stream's times, and the delay line's drops."""
    dest = '%s/%s' % (DEST, method)
    sh(lab, 'B', 'rm -rf %s' % dest)
    if method in PARALLEL:
        sh(lab, 'B', 'mkdir -p %s' % dest)
    drops = line_drops(lab)
    samplers = {'A': Sampler(lab, 'A', lab.address('B')), 'B': Sampler(lab, 'B')}
    timed = 'renice -n %d -p $$ >/dev/null\nstart=$(date +%%s.%%N)\n( %s ) >&2\nrc=$?\nend=$(date +%%s.%%N)\n' \
        'echo "$start $end"\nexit $rc' % (NICE, commands(lab, method, streams, ssh_streams))
    proc = sh(lab, 'A', timed, check=False, timeout=7200)
    samples = {host: sampler.stop() for host, sampler in samplers.items()}
    extra = {}
    if method in TLS_METHODS:
        extra['tls'] = tls_session(proc.stderr)
    if proc.returncode != 0:
        return dict(extra, bps=None, error='exit %d: %s' % (proc.returncode, proc.stderr.strip()[-500:]))
    start, end = (float(x) for x in proc.stdout.split()[-2:])
    seconds = end - start
    now = line_drops(lab)
    extra['line_drops'] = dict((key, now[key] - drops[key]) for key in LINE_COUNTERS)
    if method in PARALLEL:
        extra['streams'] = stream_times(proc.stderr, start)
    check = sh(lab, 'B', 'cd %s && nice -n %d sha256sum --quiet -c %s' % (dest, NICE // 2, MANIFEST), check=False,
               timeout=1800)
    if check.returncode != 0:
        raise TransferError('%s: checksum mismatch at the receiver: %s' % (method, (check.stdout + check.stderr)[-1000:]))
    sh(lab, 'B', 'rm -rf %s' % dest)
    cpu = {host: cpu_usage(sample, seconds) for host, sample in samples.items()}
    return dict(extra, bps=round(size_bytes * 8 / seconds), seconds=round(seconds, 3), verified=True,
                steady_bps=steady_bps(samples['A'].get('acked', [])), cpu=cpu, error=None)


def run_phase(lab, phase, result, hpn, log):
    runs = {}
    for method in METHODS:
        if method == 'hpnssh' and not hpn:
            runs[method] = {'bps': None, 'error': NO_HPNSSH}
            continue
        runs[method] = run_method(lab, method, result['streams'], result['size_bytes'], result['ssh_streams'])
        run = runs[method]
        log('%s %-22s %s' % (phase, method, 'error: ' + run['error'] if run['error'] else '%s Mbit/s in %.1f s, '
                             'busiest: %s' % (_mbit(run['bps']), run['seconds'], ', '.join(
                                 '%s %s %.2f' % (h, p['comm'], p['cores']) for h in 'AB' for p in run['cpu'][h][:1]))))
    return runs


def tune(lab, files, args):
    """playbooks/wan_tune.yml on both hosts: the tuning, and the rsync daemon on the receiver (no change expected)."""
    demo.ansible_playbook(['-i', files['inventory'], demo.PLAYBOOK, '-e', json.dumps({'rate': args.rate, 'rtt': args.rtt})],
                          quiet=args.quiet)
    renice_servers(lab)


def transfer(args, log=None, after=None):
    """The whole lab run; returns the result and writes results/transfer-<timestamp>.json and .md.  ``after(lab,
    files, workdir)``, when given, runs in the tuned lab before it goes (its return value is the result's
    ``after``): tests/integration/test_transfer_lab.py runs the migration's checks there, on the same set-up."""
    log = log or (lambda msg: print('transfer: ' + msg, file=sys.stderr))
    size_bytes = wanlab.parse_bytes(args.size, '--size (SIZE)')
    if size_bytes < 2 ** 20:
        raise wanlab.LabError('--size (SIZE): %r is below 1 MiB; expected e.g. 2g or 400m' % (args.size,))
    lab = wanlab.Lab(rate=args.rate, rtt=args.rtt, loss=args.loss, mtu=args.mtu, hosts='containers', name=args.name,
                     log=lambda msg: log('lab: ' + msg))
    config = lab.config
    result = {'rate_bps': config['rate_bps'], 'rtt_ms': config['rtt_ms'], 'loss_pct': config['loss_pct'],
              'mtu': config['mtu'], 'size_bytes': size_bytes, 'streams': args.streams, 'link': wanlab.describe(config),
              'ssh_window_bytes': SSH_WINDOW_BYTES, 'cpu_limit_cores': CPU_LIMIT_CORES, 'nice': NICE, 'command': args.command,
              'ssh_window_ceiling_bps': round(window_ceiling_bps(SSH_WINDOW_BYTES, config['rtt_ms'])),
              'started': time.strftime('%Y-%m-%dT%H:%M:%S%z')}
    with lab, tempfile.TemporaryDirectory(prefix='bdp-xfer-') as workdir:
        started = time.monotonic()
        result.update(make_data(lab, size_bytes, args.streams, args.ssh_streams))
        log('%s of random data in %d files in host A (%.0f s)'
            % (bdp.human_bytes(size_bytes), result['files'], time.monotonic() - started))
        log('the transports: ssh keys, the rsync daemon through playbooks/wan_tune.yml --tags rsync_daemon')
        files, setup = setup_transports(lab, workdir, result['streams'], args.quiet)
        result.update(setup)
        stock = run_phase(lab, 'stock', result, result['hpnssh'], log)
        log('applying playbooks/wan_tune.yml -e "rate=%s rtt=%s" (receiver: rsync_daemon=true)' % (args.rate, args.rtt))
        tune(lab, files, args)
        tuned = run_phase(lab, 'tuned', result, result['hpnssh'], log)
        result['delay_line'] = lab.counters()
        if after:
            result['after'] = after(lab, files, workdir)
    result['methods'] = {method: summarize_method(stock[method], tuned[method]) for method in METHODS}
    result['finished'] = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    os.makedirs(args.results, exist_ok=True)
    path = os.path.join(args.results, 'transfer-%s.json' % time.strftime('%Y%m%d-%H%M%S'))
    with open(path, 'w') as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
    with open(path[:-len('.json')] + '.md', 'w') as handle:
        handle.write(markdown(result))
    result['path'] = path
    print('\n%s, %s in %d files\n%s\nresults: %s'
          % (result['link'], bdp.human_bytes(size_bytes), result['files'], table(result), os.path.relpath(path, ROOT)))
    return result


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rate', default='1g', help='link rate (default 1g)')
    parser.add_argument('--rtt', default='98', help='round-trip time in ms (default 98)')
    parser.add_argument('--loss', default='0', help='random loss in percent (default 0)')
    parser.add_argument('--mtu', default='9000', help='MTU of the lab link (default 9000)')
    parser.add_argument('--size', default='2g', help='bytes of data per transfer: 2g, 400m, 2GiB (default 2g)')
    parser.add_argument('--streams', type=int, default=4,
                        help='parallel rsync daemon streams, cleartext and TLS (default 4)')
    parser.add_argument('--ssh-streams', type=int, default=8, help='parallel rsync over SSH streams (default 8)')
    parser.add_argument('--name', default=LAB_NAME, help='lab name (default %s)' % LAB_NAME)
    parser.add_argument('--results', default=RESULTS, help='folder for the JSON and Markdown (default results/)')
    parser.add_argument('--quiet', action='store_true', help='no ansible-playbook output unless it fails')
    args = parser.parse_args(argv)
    for name, value in (('--streams (STREAMS)', args.streams), ('--ssh-streams (SSH_STREAMS)', args.ssh_streams)):
        if value < 1 or value > MAX_FILES:
            parser.error('%s: %d is outside 1 to %d' % (name, value, MAX_FILES))
    args.command = 'make transfer RATE=%s RTT=%s LOSS=%s MTU=%s SIZE=%s STREAMS=%d SSH_STREAMS=%d' % (
        args.rate, args.rtt, args.loss, args.mtu, args.size, args.streams, args.ssh_streams)
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        transfer(args)
    except (wanlab.LabError, TransferError) as exc:
        raise SystemExit('transfer: %s' % exc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
