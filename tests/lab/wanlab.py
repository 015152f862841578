# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""WAN lab: two lab hosts joined by an emulated long fat link.

This machine has no netem, so the link is a userspace delay line between two
TUN devices, one in each host's network namespace.  The delay line is a
single-threaded select loop that emulates a bottleneck of ``rate`` bit/s with a
finite tail-drop queue, a one-way delay of RTT/2, random loss and a path-MTU
black hole, independently in each direction.

Command line (see docs/lab.md)::

    python3 tests/lab/wanlab.py up --rate 1g --rtt 98 [--loss 0.1] [--mtu 9000] ...
    python3 tests/lab/wanlab.py status
    python3 tests/lab/wanlab.py exec A -- iperf3 -c 198.18.0.2
    python3 tests/lab/wanlab.py set --rtt 50
    python3 tests/lab/wanlab.py down
    python3 tests/lab/wanlab.py leftovers

Python API::

    from wanlab import Lab
    with Lab(rate='1g', rtt=98, hosts='netns') as lab:
        lab.exec('B', ['iperf3', '-s', '-1', '-D'])
        ...

Standard library only (ctypes for setns/prctl).  Linux, root.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import fcntl
import gc
import json
import math
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import collection_path  # noqa: E402  pylint: disable=wrong-import-position

collection_path.ensure_importable()
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import sysctl  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3  # noqa: E402  pylint: disable=wrong-import-position

PREFIX = 'bdp-lab'
DEFAULT_NAME = 'bdp-lab'
DEFAULT_STATE_DIR = os.path.join(REPO_ROOT, '.cache', 'lab')
IMAGE = 'localhost/bdp-wan-tune-debian12:latest'
CONTAINERS_CONF = os.path.join(REPO_ROOT, 'scripts', 'containers.conf')
TUN_NAME = 'wan0'
ADDR = {'A': '198.18.0.1', 'B': '198.18.0.2'}
PREFIXLEN = 30
TXQUEUELEN = 10000           # wan0 transmit ring; tun drops (tx_dropped) when the delay line falls behind
RT_PRIORITY = 10            # SCHED_FIFO priority of the delay line (0: normal scheduling)
HOST_KINDS = ('containers', 'netns')
STOCK_SYSCTLS = (
    ('net.ipv4.tcp_rmem', '4096 131072 6291456'),
    ('net.ipv4.tcp_wmem', '4096 16384 4194304'),
)
ALLOWED_CC_KEY = 'net.ipv4.tcp_allowed_congestion_control'
# Host sysctls changed by a lab are also recorded here (tmpfs, per boot), so that
# down can restore them even when the state directory was deleted.
HOST_RECORD = '/run/bdp-lab-host-sysctls.json'
MIN_MTU = 576
MAX_MTU = 65535
QUEUE_MIN_PACKETS = 64
BATCH = 64                  # packets read from one TUN per wake-up
LATE_S = 0.001              # a packet delivered later than this after its due time counts as late
READY_TIMEOUT = 15.0
BOOT_TIMEOUT = 120.0

# Linux ABI
CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454ca
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
PR_SET_NAME = 15
PR_SET_TIMERSLACK = 29

_NAME_RE = re.compile(r'^bdp-lab(-[a-z0-9]+)*$')
_QUEUE_RE = re.compile(r'^\s*([0-9]+)\s*([a-zA-Z]*)\s*$')
_QUEUE_UNITS = {'': 1, 'b': 1, 'k': 10 ** 3, 'kb': 10 ** 3, 'm': 10 ** 6, 'mb': 10 ** 6,
                'kib': 2 ** 10, 'mib': 2 ** 20, 'g': 10 ** 9, 'gb': 10 ** 9, 'gib': 2 ** 30}
BYTES_HELP = 'a byte count (4000000, 4m, 4MiB, 2g)'
QUEUE_HELP = "'auto' (1 x BDP, at least %d packets) or a byte count (4000000, 4m, 4MiB)" % QUEUE_MIN_PACKETS


class LabError(ValueError):
    """A lab error; the message says what went wrong and, for options, what is accepted."""


# --------------------------------------------------------------------------- validation

def _loss(value):
    accepted = 'a percentage from 0 to 100 (0.1 means one packet in a thousand)'
    text = value.strip().rstrip('%').strip() if isinstance(value, str) else value
    try:
        if isinstance(text, bool):
            raise ValueError
        pct = float(text)
    except (TypeError, ValueError):
        raise LabError('--loss: %r is not a number; expected %s.' % (value, accepted))
    if not math.isfinite(pct) or pct < 0 or pct > 100:
        raise LabError('--loss: %r is outside 0..100 %%; expected %s.' % (value, accepted))
    return pct


def _mtu(value, option, upper=MAX_MTU):
    return _whole(value, option, MIN_MTU, upper, 'a whole number of bytes from %d to %d' % (MIN_MTU, upper))


def parse_bytes(value, option, accepted=BYTES_HELP):
    """A byte count: 4000000, 4m (decimal), 4MiB (binary), 2g; LabError naming ``option`` otherwise."""
    if isinstance(value, bool):
        raise LabError('%s: %r is not usable; expected %s.' % (option, value, accepted))
    if isinstance(value, int):
        return value
    match = _QUEUE_RE.match(str(value))
    if not match or match.group(2).lower() not in _QUEUE_UNITS:
        raise LabError('%s: %r is not a byte count; expected %s.' % (option, value, accepted))
    return int(match.group(1)) * _QUEUE_UNITS[match.group(2).lower()]


def _queue(value, mtu, bdp_bytes):
    if value is None or (isinstance(value, str) and value.strip().lower() == 'auto'):
        return max(bdp_bytes, QUEUE_MIN_PACKETS * mtu)
    if isinstance(value, bool):
        raise LabError('--queue: %r is not usable; expected %s.' % (value, QUEUE_HELP))
    size = parse_bytes(value, '--queue', QUEUE_HELP)
    if size < mtu:
        raise LabError('--queue: %r is %d bytes, less than one %d-byte packet (--mtu); expected %s.'
                       % (value, size, mtu, QUEUE_HELP))
    return size


def validate(rate='1g', rtt=98, loss=0, mtu=9000, path_mtu=None, queue='auto', hosts='containers',
             name=DEFAULT_NAME, stock_cc='cubic', seed=None, rt_priority=RT_PRIORITY, txqueuelen=TXQUEUELEN):
    """Check every option before anything is created; return the link configuration in canonical units."""
    try:
        rate_bps = bdp.parse_rate(rate, '--rate')
        rtt_ms = bdp.parse_rtt(rtt, '--rtt')
    except bdp.UnitError as exc:
        raise LabError(str(exc)) from exc
    loss_pct = _loss(loss)
    mtu = _mtu(mtu, '--mtu')
    path_mtu = mtu if path_mtu is None else _mtu(path_mtu, '--path-mtu')
    bdp_bytes = bdp.bdp_bytes(rate_bps, str(rtt_ms), '--rate', '--rtt')
    queue_bytes = _queue(queue, mtu, bdp_bytes)
    if hosts not in HOST_KINDS:
        raise LabError('--hosts: %r is not a host kind; expected one of %s.' % (hosts, ', '.join(HOST_KINDS)))
    if not isinstance(name, str) or not _NAME_RE.match(name) or len(name) > 40:
        raise LabError('--name: %r is not usable; expected %r or %r followed by -word parts '
                       '(lower case letters and digits), at most 40 characters.' % (name, PREFIX, PREFIX))
    if not isinstance(stock_cc, str) or not re.match(r'^[a-z0-9_]+$', stock_cc):
        raise LabError('--stock-cc: %r is not a congestion control name; expected e.g. cubic, reno, bbr.'
                       % (stock_cc,))
    if seed is not None:
        try:
            if isinstance(seed, bool):
                raise ValueError
            seed = int(seed)
        except (TypeError, ValueError):
            raise LabError('--seed: %r is not a whole number.' % (seed,))
    rt_priority = _whole(rt_priority, '--rt-priority', 0, 99, '0 (normal scheduling) or a SCHED_FIFO priority 1..99')
    txqueuelen = _whole(txqueuelen, '--txqueuelen', 16, 1000000, 'a packet count from 16 to 1000000')
    return {
        'rate_bps': rate_bps,
        'rtt_ms': float(rtt_ms),
        'owd_s': float(rtt_ms) / 2000.0,
        'loss_pct': loss_pct,
        'mtu': mtu,
        'path_mtu': path_mtu,
        'queue': 'auto' if queue is None or (isinstance(queue, str) and queue.strip().lower() == 'auto') else queue,
        'queue_bytes': queue_bytes,
        'bdp_bytes': bdp_bytes,
        'hosts': hosts,
        'name': name,
        'stock_cc': stock_cc,
        'seed': seed,
        'rt_priority': rt_priority,
        'txqueuelen': txqueuelen,
    }


def _whole(value, option, low, high, accepted):
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        number = int(value)
    except (TypeError, ValueError):
        raise LabError('%s: %r is not a whole number; expected %s.' % (option, value, accepted))
    if number < low or number > high:
        raise LabError('%s: %r is outside %d..%d; expected %s.' % (option, value, low, high, accepted))
    return number


def describe(config):
    """One line: '1 Gbit/s, 98 ms RTT, loss 0 %, MTU 9000, path MTU 9000, queue 12.25 MB'."""
    return '%s, %g ms RTT, loss %g %%, MTU %d, path MTU %d, queue %s (BDP %s)' % (
        bdp.human_rate(config['rate_bps']), config['rtt_ms'], config['loss_pct'], config['mtu'],
        config['path_mtu'], bdp.human_bytes(config['queue_bytes']), bdp.human_bytes(config['bdp_bytes']))


# --------------------------------------------------------------------------- Linux plumbing

_LIBC = None


def _libc():
    global _LIBC  # pylint: disable=global-statement
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def setns(fd, nstype=CLONE_NEWNET):
    """libc setns(2); Python 3.11 has no os.setns."""
    if _libc().setns(int(fd), int(nstype)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, 'setns: %s' % os.strerror(err))


def _prctl(option, arg):
    _libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0))


def set_process_name(name):
    """Set the comm name (first 15 bytes) shown by ps and /proc/PID/comm."""
    buf = ctypes.create_string_buffer(name.encode()[:15])
    _libc().prctl(ctypes.c_int(PR_SET_NAME), buf, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


@contextlib.contextmanager
def in_netns(path):
    """Run the body (and any subprocess it starts, and sockets it creates) in the network namespace at ``path``."""
    home = os.open('/proc/thread-self/ns/net', os.O_RDONLY | os.O_CLOEXEC)
    try:
        target = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            setns(home)
    finally:
        os.close(home)


def open_tun(netns_path, name=TUN_NAME):
    """Create TUN device ``name`` (IFF_TUN | IFF_NO_PI) in the namespace at ``netns_path``; return its non-blocking fd."""
    with in_netns(netns_path):
        fd = os.open('/dev/net/tun', os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            fcntl.ioctl(fd, TUNSETIFF, struct.pack('16sH22x', name.encode(), IFF_TUN | IFF_NO_PI))
        except OSError:
            os.close(fd)
            raise
    return fd


def read_sysctl(key, netns_path=None):
    ctx = in_netns(netns_path) if netns_path else contextlib.nullcontext()
    with ctx:
        with open(sysctl.key_path(key)) as handle:
            return ' '.join(handle.read().split())


def write_sysctl(key, value, netns_path=None):
    ctx = in_netns(netns_path) if netns_path else contextlib.nullcontext()
    with ctx:
        try:
            with open(sysctl.key_path(key), 'w') as handle:
                handle.write('%s\n' % value)
        except OSError as exc:
            raise LabError('cannot set %s = %r%s: %s'
                           % (key, value, ' in %s' % netns_path if netns_path else ' on the host',
                              exc.strerror or exc))


def netdev_stats(netns_path, dev=TUN_NAME):
    """Kernel counters of ``dev`` in that namespace from /proc/self/net/dev (None when absent)."""
    try:
        with in_netns(netns_path):
            with open('/proc/self/net/dev') as handle:
                lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines[2:]:
        ifname, dummy, rest = line.partition(':')
        if ifname.strip() == dev:
            f = [int(x) for x in rest.split()]
            return {'rx_bytes': f[0], 'rx_packets': f[1], 'rx_errors': f[2], 'rx_dropped': f[3],
                    'tx_bytes': f[8], 'tx_packets': f[9], 'tx_errors': f[10], 'tx_dropped': f[11]}
    return None


def _run(argv, check=True, env=None, timeout=120, netns_path=None, capture=True, input_text=None):
    ctx = in_netns(netns_path) if netns_path else contextlib.nullcontext()
    try:
        with ctx:
            proc = subprocess.run(argv, capture_output=capture, text=True, env=env, timeout=timeout,
                                  input=input_text, check=False)
    except FileNotFoundError:
        raise LabError('%s: command not found' % argv[0])
    except subprocess.TimeoutExpired:
        raise LabError('%s: no answer within %s s' % (' '.join(argv), timeout))
    if check and proc.returncode != 0:
        raise LabError('%s failed (exit %d): %s' % (' '.join(argv), proc.returncode,
                                                    ((proc.stderr or '') + (proc.stdout or '')).strip()))
    return proc


def podman_env():
    env = dict(os.environ)
    env.setdefault('CONTAINERS_CONF', CONTAINERS_CONF)
    return env


def _have_podman():
    return shutil.which('podman') is not None


def _proc_cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            return handle.read().split(b'\0')
    except OSError:
        return None


def _proc_comm(pid):
    try:
        with open('/proc/%d/comm' % pid) as handle:
            return handle.read().strip()
    except OSError:
        return None


def _all_pids():
    return [int(p) for p in os.listdir('/proc') if p.isdigit()]


def delay_line_pids(name=None):
    """PIDs of delay-line daemons (all, or those of lab ``name``)."""
    found = []
    for pid in _all_pids():
        if pid == os.getpid():
            continue
        argv = _proc_cmdline(pid)
        if not argv or b'_serve' not in argv or not any(a.endswith(b'wanlab.py') for a in argv):
            continue
        if name is not None:
            try:
                if argv[argv.index(b'--name') + 1].decode() != name:
                    continue
            except (ValueError, IndexError):
                continue
        found.append(pid)
    return found


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def _kill(pids, grace=3.0):
    pids = [p for p in pids if _pid_alive(p)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_pid_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def list_netns(prefix=PREFIX):
    try:
        names = os.listdir('/run/netns')
    except OSError:
        return []
    return sorted(n for n in names if n == prefix or n.startswith(prefix + '-'))


def list_containers(prefix=PREFIX):
    if not _have_podman():
        return []
    proc = _run(['podman', 'ps', '-a', '--format', '{{.Names}}'], check=False, env=podman_env(), timeout=60)
    return sorted(n for n in proc.stdout.split() if n == prefix or n.startswith(prefix + '-'))


def netns_pids(netns_path):
    """PIDs whose network namespace is the one at ``netns_path`` (like ``ip netns pids``)."""
    try:
        target = os.stat(netns_path)
    except OSError:
        return []
    pids = []
    for pid in _all_pids():
        try:
            st = os.stat('/proc/%d/ns/net' % pid)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            pids.append(pid)
    return pids


# --------------------------------------------------------------------------- the delay line

class Direction(object):
    """One direction of the link: read packets from ``rfd``, write them to ``wfd`` when due.

    A packet arriving at ``now`` departs the bottleneck at
    ``max(now, previous departure) + size * 8 / rate`` and is written at that
    departure + one-way delay.  The queue backlog at ``now`` is the bytes not
    yet serialised, ``(previous departure - now) * rate / 8``; a packet that
    would take it above ``queue_bytes`` is tail-dropped.
    """

    __slots__ = ('name', 'rfd', 'wfd', 'bufsize', 'rnd', 'q', 'last_dep', 'last_deliver',
                 'spb', 'bps8', 'owd', 'loss', 'path_mtu', 'qlimit',
                 'rx_packets', 'rx_bytes', 'tx_packets', 'tx_bytes', 'drop_random', 'drop_oversize',
                 'drop_queue', 'drop_foreign', 'write_errors', 'late_packets', 'late_max', 'queue_max')

    def __init__(self, name, rfd, wfd, config, rnd, bufsize=65536):
        self.name = name
        self.rfd = rfd
        self.wfd = wfd
        self.bufsize = bufsize
        self.rnd = rnd
        self.q = collections.deque()
        self.last_dep = 0.0
        self.last_deliver = 0.0
        self.reset()
        self.configure(config)

    def reset(self):
        self.rx_packets = self.rx_bytes = self.tx_packets = self.tx_bytes = 0
        self.drop_random = self.drop_oversize = self.drop_queue = self.drop_foreign = self.write_errors = 0
        self.late_packets = 0
        self.late_max = 0.0
        self.queue_max = 0.0

    def configure(self, config):
        self.spb = 8.0 / config['rate_bps']         # seconds per byte
        self.bps8 = config['rate_bps'] / 8.0        # bytes per second
        self.owd = config['owd_s']
        self.loss = config['loss_pct'] / 100.0
        self.path_mtu = config['path_mtu']
        self.qlimit = config['queue_bytes']

    def ingest(self, now):
        """Read up to BATCH packets and schedule them; return the number read."""
        read = os.read
        rfd = self.rfd
        bufsize = self.bufsize
        append = self.q.append
        rnd = self.rnd.random
        spb = self.spb
        bps8 = self.bps8
        owd = self.owd
        loss = self.loss
        path_mtu = self.path_mtu
        qlimit = self.qlimit
        dep = self.last_dep
        last = self.last_deliver
        packets = nbytes = 0
        backlog_max = self.queue_max
        try:
            for dummy in range(BATCH):
                pkt = read(rfd, bufsize)
                size = len(pkt)
                packets += 1
                nbytes += size
                if size > path_mtu:
                    self.drop_oversize += 1
                    continue
                # Only IPv4 between lab addresses (198.18.0.0/15) crosses the link.
                if size < 20 or pkt[0] >> 4 != 4 or pkt[12] != 198 or pkt[13] | 1 != 19 \
                        or pkt[16] != 198 or pkt[17] | 1 != 19:
                    self.drop_foreign += 1
                    continue
                if dep <= now:
                    dep = now
                else:
                    backlog = int((dep - now) * bps8 + 0.5) + size     # whole bytes: no float creep
                    if backlog > qlimit:
                        self.drop_queue += 1
                        continue
                    if backlog > backlog_max:
                        backlog_max = backlog
                dep += size * spb
                if loss and rnd() < loss:       # lost on the wire after the bottleneck
                    self.drop_random += 1
                    continue
                due = dep + owd
                if due < last:                  # the delay was lowered: never reorder
                    due = last
                last = due
                append((due, pkt))
        except BlockingIOError:
            pass
        finally:
            self.last_dep = dep
            self.last_deliver = last
            self.rx_packets += packets
            self.rx_bytes += nbytes
            self.queue_max = backlog_max
        return packets

    def flush(self, now):
        """Write every packet that is due; return the time the next one is due (or None)."""
        q = self.q
        if not q:
            return None
        due = q[0][0]
        if due > now:
            return due
        write = os.write
        wfd = self.wfd
        popleft = q.popleft
        packets = nbytes = late = 0
        late_max = self.late_max
        try:
            while True:
                lateness = now - due
                if lateness > LATE_S:
                    late += 1
                    if lateness > late_max:
                        late_max = lateness
                pkt = popleft()[1]
                try:
                    write(wfd, pkt)
                    packets += 1
                    nbytes += len(pkt)
                except OSError:
                    self.write_errors += 1
                if not q:
                    return None
                due = q[0][0]
                if due > now:
                    return due
        finally:
            self.tx_packets += packets
            self.tx_bytes += nbytes
            self.late_packets += late
            self.late_max = late_max

    def counters(self):
        return {
            'packets': self.rx_packets, 'bytes': self.rx_bytes,
            'delivered_packets': self.tx_packets, 'delivered_bytes': self.tx_bytes,
            'random_drops': self.drop_random, 'oversize_drops': self.drop_oversize,
            'queue_drops': self.drop_queue, 'foreign_drops': self.drop_foreign,
            'write_errors': self.write_errors, 'in_flight': len(self.q),
            'late_packets': self.late_packets, 'late_max_ms': round(self.late_max * 1000, 3),
            'queue_max_bytes': int(self.queue_max),
        }


class DelayLine(object):
    """Both directions between TUN fds ``fd_a`` and ``fd_b`` in one select loop.

    ``control`` is an optional listening unix socket; each connection sends
    one JSON request line and gets one JSON reply line.
    """

    def __init__(self, fd_a, fd_b, config, control=None, bufsize=65536):
        self.config = dict(config)
        rnd = random.Random(config.get('seed'))
        self.a_to_b = Direction('a_to_b', fd_a, fd_b, self.config, rnd, bufsize)
        self.b_to_a = Direction('b_to_a', fd_b, fd_a, self.config, rnd, bufsize)
        self.control = control
        self.started = time.time()
        self.stopping = False
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def stop(self):
        """Ask the loop to finish (thread- and signal-safe)."""
        self.stopping = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b'x')

    def wakeup_fd(self):
        return self._wake_w

    def set_link(self, changes):
        """Apply new rate_bps / owd_s / loss_pct / path_mtu / queue_bytes; packets in flight keep their times."""
        for key in ('rate_bps', 'owd_s', 'rtt_ms', 'loss_pct', 'path_mtu', 'queue_bytes', 'queue', 'bdp_bytes'):
            if key in changes:
                self.config[key] = changes[key]
        self.a_to_b.configure(self.config)
        self.b_to_a.configure(self.config)

    def reset(self):
        """Zero the counters (not the queues), e.g. between benchmark runs."""
        for d in (self.a_to_b, self.b_to_a):
            d.reset()

    def counters(self):
        return {'a_to_b': self.a_to_b.counters(), 'b_to_a': self.b_to_a.counters(),
                'uptime_s': round(time.time() - self.started, 3), 'pid': os.getpid(),
                'link': {k: self.config[k] for k in ('rate_bps', 'rtt_ms', 'loss_pct', 'path_mtu', 'queue_bytes')}}

    def _serve_control(self):
        try:
            conn = self.control.accept()[0]
        except OSError:
            return
        with conn:
            conn.settimeout(2.0)
            try:
                data = b''
                while not data.endswith(b'\n') and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                request = json.loads(data.decode() or '{}')
                op = request.get('op')
                if op == 'counters':
                    reply = {'ok': True, 'counters': self.counters()}
                elif op == 'set':
                    self.set_link(request.get('link', {}))
                    reply = {'ok': True, 'counters': self.counters()}
                elif op == 'reset':
                    self.reset()
                    reply = {'ok': True, 'counters': self.counters()}
                elif op == 'stop':
                    self.stopping = True
                    reply = {'ok': True, 'counters': self.counters()}
                elif op == 'ping':
                    reply = {'ok': True, 'pid': os.getpid()}
                else:
                    reply = {'ok': False, 'error': 'unknown op %r' % (op,)}
                conn.sendall(json.dumps(reply).encode() + b'\n')
            except (OSError, ValueError) as exc:
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({'ok': False, 'error': str(exc)}).encode() + b'\n')

    def run(self):
        """The loop: write what is due, sleep until the next due time or a readable fd, read a batch."""
        a = self.a_to_b
        b = self.b_to_a
        fa = a.rfd
        fb = b.rfd
        wake = self._wake_r
        ctl = self.control.fileno() if self.control is not None else -1
        fds = [fa, fb, wake] + ([ctl] if ctl >= 0 else [])
        sel = select.select
        clock = time.monotonic
        while not self.stopping:
            now = clock()
            ta = a.flush(now)
            tb = b.flush(now)
            if ta is None:
                due = tb
            elif tb is None or ta < tb:
                due = ta
            else:
                due = tb
            if due is None:
                timeout = None
            else:
                timeout = due - clock()
                if timeout < 0:
                    timeout = 0
            ready = sel(fds, (), (), timeout)[0]
            if not ready:
                continue
            now = clock()
            for fd in ready:
                if fd == fa:
                    a.ingest(now)
                elif fd == fb:
                    b.ingest(now)
                elif fd == wake:
                    with contextlib.suppress(OSError):
                        os.read(wake, 4096)
                elif fd == ctl:
                    self._serve_control()

    def close(self):
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def control_address(name):
    """Abstract unix socket of lab ``name``'s delay line (no file to clean up)."""
    return '\0%s-ctl' % name


def control_request(name, request, timeout=5.0):
    """Send one JSON request to the delay line of lab ``name``; return its reply (raises OSError if none)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(control_address(name))
        sock.sendall(json.dumps(request).encode() + b'\n')
        data = b''
        while not data.endswith(b'\n'):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    reply = json.loads(data.decode())
    if not reply.get('ok'):
        raise LabError('delay line: %s' % reply.get('error'))
    return reply


def serve(name, netns_a, netns_b, config, ready_fd=1):
    """The delay-line daemon: open both TUNs, say ready on ``ready_fd``, loop until told to stop."""
    set_process_name('%s-delay' % name if len('%s-delay' % name) <= 15 else 'bdp-lab-delay')
    with contextlib.suppress(Exception):
        _prctl(PR_SET_TIMERSLACK, 1)            # 1 ns: wake up when the next packet is due, not 50 us later
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        control.bind(control_address(name))
    except OSError as exc:
        os.write(ready_fd, (json.dumps({'ready': False, 'pid': os.getpid(),
                                        'error': 'control socket: %s (another delay line for %s running?)'
                                        % (exc, name)}) + '\n').encode())
        return 1
    control.listen(8)
    try:
        fd_a = open_tun(netns_a)
        fd_b = open_tun(netns_b)
    except OSError as exc:
        os.write(ready_fd, (json.dumps({'ready': False, 'error': 'TUN: %s' % exc}) + '\n').encode())
        return 1
    if config.get('rt_priority'):
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(config['rt_priority'])))
        except OSError as exc:
            sys.stderr.write('SCHED_FIFO %s refused (%s): running with normal scheduling\n'
                             % (config['rt_priority'], exc))
    line = DelayLine(fd_a, fd_b, config, control=control, bufsize=max(65536, config['mtu']))
    signal.set_wakeup_fd(line.wakeup_fd())
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *args: line.stop())
    # The loop makes no reference cycles; a full collection over the interpreter's
    # objects would stall packets for milliseconds.
    gc.collect()
    gc.freeze()
    gc.disable()
    os.write(ready_fd, (json.dumps({'ready': True, 'pid': os.getpid()}) + '\n').encode())
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    if ready_fd != 2:
        os.dup2(devnull, ready_fd)
    os.close(devnull)
    sys.stderr.write('%s delay line %d up: %s\n' % (time.strftime('%F %T'), os.getpid(), describe(config)))
    sys.stderr.flush()
    try:
        line.run()
    finally:
        sys.stderr.write('%s delay line %d stopping; counters %s\n'
                         % (time.strftime('%F %T'), os.getpid(), json.dumps(line.counters())))
        sys.stderr.flush()
        os.close(fd_a)
        os.close(fd_b)
        control.close()
        line.close()
    return 0


# --------------------------------------------------------------------------- host-side state and teardown

def state_file(state_dir, name):
    return os.path.join(state_dir, '%s.json' % name)


def load_state(state_dir, name):
    try:
        with open(state_file(state_dir, name)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def save_state(state_dir, name, state):
    os.makedirs(state_dir, exist_ok=True)
    path = state_file(state_dir, name)
    tmp = path + '.tmp'
    with open(tmp, 'w') as handle:
        json.dump(state, handle, indent=2, sort_keys=True)
        handle.write('\n')
    os.replace(tmp, path)


def _load_host_record(path=None):
    try:
        with open(path or HOST_RECORD) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def _update_host_record(name, entries, path=None):
    """Set (entries: dict) or forget (entries: None) what lab ``name`` changed on the host."""
    path = path or HOST_RECORD
    record = _load_host_record(path)
    if entries:
        record[name] = entries
    else:
        record.pop(name, None)
    with contextlib.suppress(OSError):
        if record:
            tmp = path + '.tmp'
            with open(tmp, 'w') as handle:
                json.dump(record, handle, indent=2, sort_keys=True)
            os.replace(tmp, path)
        elif os.path.exists(path):
            os.unlink(path)


def _host_name(name, host):
    return '%s-%s' % (name, host.lower())


def _canonical_host(host):
    text = str(host).strip().upper()
    if text not in ('A', 'B'):
        raise LabError('host: %r is not a lab host; expected A or B.' % (host,))
    return text


def restore_host_sysctls(record, log=None):
    """Put back host sysctls changed by ``up``; only where nobody changed them since.  Returns notes."""
    notes = []
    for key, entry in sorted((record or {}).items()):
        try:
            current = read_sysctl(key)
        except OSError as exc:
            notes.append('%s: cannot read (%s), left alone' % (key, exc))
            continue
        if current == entry['set']:
            write_sysctl(key, entry['original'])
            notes.append('host %s restored to %r' % (key, entry['original']))
        elif current == entry['original']:
            notes.append('host %s already %r' % (key, current))
        else:
            notes.append('host %s is %r, changed by someone else since the lab set %r: left alone (was %r)'
                         % (key, current, entry['set'], entry['original']))
    if log:
        for note in notes:
            log(note)
    return notes


def teardown(name=DEFAULT_NAME, state_dir=None, log=None):
    """Remove everything of lab ``name``: delay line, namespaces, containers, host sysctls, state file.

    Idempotent; works from the state file and, when that is missing or stale,
    by looking for ``<name>-a``/``<name>-b`` and delay-line processes by name.
    Returns a list of what it did.
    """
    state_dir = state_dir or DEFAULT_STATE_DIR
    log = log or (lambda msg: None)
    done = []
    state = load_state(state_dir, name) or {}

    # 1. the delay line (closing its TUN fds removes both wan0 devices)
    with contextlib.suppress(OSError, ValueError, LabError):
        control_request(name, {'op': 'stop'}, timeout=2.0)
    pids = set(delay_line_pids(name))
    if state.get('delay_line_pid') and _pid_alive(state['delay_line_pid']):
        argv = _proc_cmdline(state['delay_line_pid']) or []
        if b'_serve' in argv:
            pids.add(state['delay_line_pid'])
    if pids:
        _kill(sorted(pids))
        done.append('stopped delay line %s' % ', '.join(str(p) for p in sorted(pids)))

    # 2. network namespaces (kill what runs in them first, e.g. iperf3 -D)
    for host in ('A', 'B'):
        ns = _host_name(name, host)
        path = '/run/netns/%s' % ns
        if os.path.exists(path):
            inside = netns_pids(path)
            if inside:
                _kill(inside, grace=2.0)
            proc = _run(['ip', 'netns', 'delete', ns], check=False)
            if proc.returncode == 0:
                done.append('deleted netns %s' % ns)
            else:
                done.append('could not delete netns %s: %s' % (ns, proc.stderr.strip()))

    # 3. containers
    if _have_podman():
        present = set(list_containers(name))
        for host in ('A', 'B'):
            cname = _host_name(name, host)
            if cname in present:
                proc = _run(['podman', 'rm', '-f', '-t', '3', cname], check=False, env=podman_env(), timeout=120)
                done.append('removed container %s' % cname if proc.returncode == 0
                            else 'could not remove container %s: %s' % (cname, proc.stderr.strip()))

    # 4. host sysctls (from the state file, or the per-boot record if the state is gone); while another lab is up it
    #    still needs them (its containers start with the stock CUBIC), so the record passes to that lab instead
    changed = state.get('host_sysctls') or _load_host_record().get(name)
    others = sorted(set(item[:-2] for item in list_netns() + list_containers() if item[-2:] in ('-a', '-b')) - {name})
    if changed and others:
        _update_host_record(others[0], dict(_load_host_record().get(others[0]) or {}, **changed))
        done.append('host sysctls %s left to lab %s, which is still up' % (', '.join(sorted(changed)), others[0]))
    else:
        for note in restore_host_sysctls(changed):
            done.append(note)
    _update_host_record(name, None)

    # 5. state
    path = state_file(state_dir, name)
    if os.path.exists(path):
        os.unlink(path)
        done.append('removed %s' % path)
    for suffix in ('.json.tmp',):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(state_dir, name + suffix))
    for line in done:
        log(line)
    return done


def leftovers(state_dir=None):
    """Everything named bdp-lab-* that exists now: containers, netns, processes, unrestored state."""
    state_dir = state_dir or DEFAULT_STATE_DIR
    found = []
    found += ['container %s' % n for n in list_containers()]
    found += ['netns %s' % n for n in list_netns()]
    me = os.getpid()
    for pid in _all_pids():
        if pid == me:
            continue
        comm = _proc_comm(pid) or ''
        argv = _proc_cmdline(pid) or []
        if not _pid_alive(pid):
            continue                    # a zombie holds nothing; its parent reaps it
        if comm.startswith(PREFIX) or (b'_serve' in argv and any(a.endswith(b'wanlab.py') for a in argv)):
            found.append('process %d %s (%s)' % (pid, comm, b' '.join(argv).decode(errors='replace')[:120]))
    with contextlib.suppress(OSError):
        for link in os.listdir('/sys/class/net'):
            if link.startswith(PREFIX):
                found.append('host link %s' % link)
    for lab, entries in sorted(_load_host_record().items()):
        for key, entry in sorted(entries.items()):
            found.append('host sysctl %s changed by lab %s (%r -> %r), not restored yet'
                         % (key, lab, entry.get('original'), entry.get('set')))
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(state_dir)):
            if entry.startswith(PREFIX) and entry.endswith('.json'):
                found.append('state file %s' % os.path.join(state_dir, entry))
    return found


# --------------------------------------------------------------------------- the lab

class Lab(object):
    """Two lab hosts (A = 198.18.0.1, B = 198.18.0.2) and the emulated link between them.

    ``Lab(rate='1g', rtt=98, loss=0, mtu=9000, path_mtu=None, queue='auto',
    hosts='containers', name='bdp-lab', state_dir=None, stock_cc='cubic',
    seed=None)``; every option is validated here, before anything is created.
    """

    def __init__(self, rate='1g', rtt=98, loss=0, mtu=9000, path_mtu=None, queue='auto', hosts='containers',
                 name=DEFAULT_NAME, state_dir=None, stock_cc='cubic', seed=None, image=IMAGE,
                 boot_timeout=BOOT_TIMEOUT, log=None, rt_priority=RT_PRIORITY, txqueuelen=TXQUEUELEN):
        self.config = validate(rate=rate, rtt=rtt, loss=loss, mtu=mtu, path_mtu=path_mtu, queue=queue,
                               hosts=hosts, name=name, stock_cc=stock_cc, seed=seed, rt_priority=rt_priority,
                               txqueuelen=txqueuelen)
        self.name = name
        self.hosts = hosts
        self.state_dir = os.path.abspath(state_dir or DEFAULT_STATE_DIR)
        self.image = image
        self.boot_timeout = boot_timeout
        self.log = log or (lambda msg: None)
        self.state = None

    # ---- construction from an existing lab
    @classmethod
    def attach(cls, name=DEFAULT_NAME, state_dir=None, log=None):
        """The running lab ``name`` (from its state file)."""
        state_dir = os.path.abspath(state_dir or DEFAULT_STATE_DIR)
        state = load_state(state_dir, name)
        if not state:
            raise LabError('no lab %r: %s does not exist (run up first)' % (name, state_file(state_dir, name)))
        cfg = state['config']
        lab = cls(rate=cfg['rate_bps'], rtt=cfg['rtt_ms'], loss=cfg['loss_pct'], mtu=cfg['mtu'],
                  path_mtu=cfg['path_mtu'], queue=cfg['queue'], hosts=cfg['hosts'], name=name,
                  state_dir=state_dir, stock_cc=cfg['stock_cc'], seed=cfg['seed'], log=log,
                  rt_priority=cfg.get('rt_priority', RT_PRIORITY), txqueuelen=cfg.get('txqueuelen', TXQUEUELEN))
        lab.state = state
        return lab

    def __enter__(self):
        self.up()
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    # ---- helpers
    def _save(self):
        save_state(self.state_dir, self.name, self.state)

    def netns_path(self, host):
        host = _canonical_host(host)
        if not self.state or host not in self.state.get('netns', {}):
            raise LabError('lab %s is not up' % self.name)
        return self.state['netns'][host]

    def host_name(self, host):
        return _host_name(self.name, _canonical_host(host))

    def address(self, host):
        return ADDR[_canonical_host(host)]

    def _exec_argv(self, host, argv, stdin=False):
        if self.hosts == 'containers':
            # podman exec passes stdin on only with -i
            return ['podman', 'exec'] + (['-i'] if stdin else []) + [self.host_name(host)] + list(argv)
        return ['ip', 'netns', 'exec', self.host_name(host)] + list(argv)

    def exec(self, host, argv, check=False, capture=True, timeout=None, input=None):  # pylint: disable=redefined-builtin
        """Run ``argv`` in lab host A or B; return a subprocess.CompletedProcess (text)."""
        if isinstance(argv, str):
            argv = ['sh', '-c', argv]
        proc = subprocess.run(self._exec_argv(host, argv, input is not None), capture_output=capture, text=True,
                              timeout=timeout, input=input, env=podman_env(), check=False)
        if check and proc.returncode != 0:
            output = ((proc.stderr or '') + (proc.stdout or '')).strip()
            raise LabError('%s on %s failed (exit %d): %s' % (' '.join(argv), host, proc.returncode, output))
        return proc

    def sysctl(self, host, key, value=None):
        """Read (value None) or write a per-namespace sysctl in lab host A or B."""
        path = self.netns_path(host)
        if value is not None:
            write_sysctl(key, value, path)
        return read_sysctl(key, path)

    # ---- up
    def up(self):
        """Create the hosts and the link; on any failure or SIGINT/SIGTERM, remove what was created."""
        if load_state(self.state_dir, self.name) or delay_line_pids(self.name) or \
                any(os.path.exists('/run/netns/%s' % self.host_name(h)) for h in 'AB') or \
                (self.hosts == 'containers' and set(list_containers(self.name)) & {self.host_name(h) for h in 'AB'}):
            raise LabError('lab %s already exists (state %s or hosts %s-a/-b); run down first'
                           % (self.name, state_file(self.state_dir, self.name), self.name))
        previous = {}

        def interrupted(signum, _frame):
            raise KeyboardInterrupt('signal %d' % signum)

        main = threading.current_thread() is threading.main_thread()
        if main:
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                previous[signum] = signal.signal(signum, interrupted)
        ok = False
        try:
            self._up()
            ok = True
        finally:
            if not ok:
                if main:
                    for signum in previous:
                        signal.signal(signum, signal.SIG_IGN)
                self.log('up failed: removing what was created')
                teardown(self.name, self.state_dir, log=self.log)
                self.state = None
            if main:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)
        return self

    def _up(self):
        started = time.monotonic()
        self.state = {'name': self.name, 'config': self.config, 'hosts': self.hosts, 'netns': {},
                      'containers': {}, 'host_sysctls': {}, 'delay_line_pid': None,
                      'log': os.path.join(self.state_dir, '%s-delayline.log' % self.name),
                      'created': time.strftime('%F %T')}
        self._save()
        self._allow_cc()
        if self.hosts == 'containers':
            self._make_containers()
        else:
            self._make_netns()
        for host in 'AB':
            self._stock_sysctls(host)
        self._start_delay_line()
        for host in 'AB':
            self._configure_link(host)
        rtt = self.probe_rtt()
        self.state['probe_rtt_ms'] = round(rtt * 1000, 3)
        self.state['up_seconds'] = round(time.monotonic() - started, 1)
        self._save()
        self.log('lab %s up in %.1f s: %s; TCP handshake RTT %.2f ms'
                 % (self.name, self.state['up_seconds'], describe(self.config), rtt * 1000))

    def _allow_cc(self):
        cc = self.config['stock_cc']
        allowed = read_sysctl(ALLOWED_CC_KEY).split()
        if cc in allowed:
            return
        available = read_sysctl('net.ipv4.tcp_available_congestion_control').split()
        if cc not in available:
            raise LabError('--stock-cc: %r is not available in this kernel; expected one of %s.'
                           % (cc, ', '.join(available)))
        original = ' '.join(allowed)
        wanted = ' '.join(allowed + [cc])
        # record before writing, so an interrupted write is still restored
        self.state['host_sysctls'][ALLOWED_CC_KEY] = {'original': original, 'set': wanted}
        self._save()
        _update_host_record(self.name, self.state['host_sysctls'])
        write_sysctl(ALLOWED_CC_KEY, wanted)
        self.state['host_sysctls'][ALLOWED_CC_KEY]['set'] = read_sysctl(ALLOWED_CC_KEY)
        self._save()
        _update_host_record(self.name, self.state['host_sysctls'])
        self.log('host %s: %r -> %r (restored on down)' % (ALLOWED_CC_KEY, original, wanted))

    def _make_netns(self):
        for host in 'AB':
            ns = self.host_name(host)
            _run(['ip', 'netns', 'add', ns])
            self.state['netns'][host] = '/run/netns/%s' % ns
            self._save()
            _run(['ip', 'link', 'set', 'lo', 'up'], netns_path=self.state['netns'][host])
        self.log('network namespaces %s-a, %s-b created' % (self.name, self.name))

    def _make_containers(self):
        if not _have_podman():
            raise LabError('--hosts containers needs podman (or use --hosts netns)')
        env = podman_env()
        if _run(['podman', 'image', 'exists', self.image], env=env, check=False, timeout=60).returncode != 0:
            raise LabError('image %s is missing; build it with scripts/build-image.sh' % self.image)
        for host in 'AB':
            cname = self.host_name(host)
            self.state['containers'][host] = cname
            self._save()
            _run(['podman', 'run', '-d', '--name', cname, '--hostname', cname, '--network', 'none',
                  '--privileged', '--systemd=always', '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096',
                  '--label', 'org.bdp.wan_tune.lab=%s' % self.name, self.image, '/sbin/init'], env=env, timeout=120)
        deadline = time.monotonic() + self.boot_timeout
        for host in 'AB':
            self._wait_systemd(host, deadline, env)
        for host in 'AB':
            pid = int(_run(['podman', 'inspect', '--format', '{{.State.Pid}}', self.host_name(host)],
                           env=env).stdout.strip())
            self.state['netns'][host] = '/proc/%d/ns/net' % pid
            self.state.setdefault('container_pids', {})[host] = pid
            self._save()
        self.log('containers %s-a, %s-b running systemd' % (self.name, self.name))

    def _wait_systemd(self, host, deadline, env):
        """Wait until ``systemctl is-system-running --wait`` says running or degraded."""
        cname = self.host_name(host)
        out = ''
        while time.monotonic() < deadline:
            try:
                proc = subprocess.run(['podman', 'exec', cname, 'systemctl', 'is-system-running', '--wait'],
                                      capture_output=True, text=True, env=env, check=False,
                                      timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
            out = (proc.stdout + proc.stderr).strip()
            last = out.splitlines()[-1] if out else ''
            if last in ('running', 'degraded'):
                return last
            if last in ('maintenance', 'stopping', 'offline'):
                raise LabError('%s: systemd is %s' % (cname, last))
            time.sleep(0.3)             # e.g. "Failed to connect to bus": PID 1 not ready yet
        raise LabError('%s: systemd did not reach running/degraded within %d s (last answer %r)'
                       % (cname, self.boot_timeout, out))

    def _stock_sysctls(self, host):
        path = self.netns_path(host)
        for key, value in STOCK_SYSCTLS:
            write_sysctl(key, value, path)
        write_sysctl('net.ipv4.tcp_congestion_control', self.config['stock_cc'], path)
        # no IPv6 on the link: only 198.18.0.0/15 crosses it
        if os.path.exists('/proc/sys/net/ipv6'):
            write_sysctl('net.ipv6.conf.default.disable_ipv6', 1, path)

    def _start_delay_line(self):
        os.makedirs(self.state_dir, exist_ok=True)
        logf = open(self.state['log'], 'a')  # pylint: disable=consider-using-with
        try:
            proc = subprocess.Popen(  # pylint: disable=consider-using-with
                [sys.executable, os.path.abspath(__file__), '_serve', '--name', self.name,
                 '--netns-a', self.netns_path('A'), '--netns-b', self.netns_path('B'),
                 '--config', json.dumps(self.config)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=logf, start_new_session=True,
                close_fds=True)
        finally:
            logf.close()
        try:
            ready = select.select([proc.stdout], [], [], READY_TIMEOUT)[0]
            line = proc.stdout.readline() if ready else b''
        finally:
            proc.stdout.close()
            try:
                proc.wait(timeout=5)    # the intermediate process; the daemon itself is its child
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:
            reply = json.loads(line.decode() or '{}')
        except ValueError:
            reply = {'error': line.decode(errors='replace')}
        if reply.get('pid'):
            self.state['delay_line_pid'] = reply['pid']
            self._save()
        if not reply.get('ready'):
            raise LabError('delay line did not start: %s (log %s)'
                           % (reply.get('error', 'no answer within %d s' % READY_TIMEOUT), self.state['log']))
        self.log('delay line running, pid %d, log %s' % (reply['pid'], self.state['log']))

    def _configure_link(self, host):
        path = self.netns_path(host)
        if os.path.exists('/proc/sys/net/ipv6'):
            write_sysctl('net.ipv6.conf.%s.disable_ipv6' % TUN_NAME, 1, path)
        _run(['ip', 'link', 'set', 'dev', TUN_NAME, 'mtu', str(self.config['mtu']),
              'txqueuelen', str(self.config['txqueuelen'])],
             netns_path=path)
        _run(['ip', 'addr', 'add', '%s/%d' % (ADDR[host], PREFIXLEN), 'dev', TUN_NAME], netns_path=path)
        _run(['ip', 'link', 'set', 'dev', TUN_NAME, 'up'], netns_path=path)

    def probe_rtt(self, timeout=None, port=9):
        """Time a TCP handshake A -> B (answered by a RST from the closed port): proves both directions."""
        timeout = timeout if timeout is not None else self.config['rtt_ms'] / 1000.0 * 4 + 5
        with in_netns(self.netns_path('A')):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            start = time.monotonic()
            try:
                sock.connect((ADDR['B'], port))
            except ConnectionRefusedError:
                pass
            except OSError as exc:
                raise LabError('link check A -> %s:%d failed: %s' % (ADDR['B'], port, exc))
            return time.monotonic() - start
        finally:
            sock.close()

    # ---- running lab
    def down(self):
        """Remove everything (idempotent); return what was done."""
        done = teardown(self.name, self.state_dir, log=self.log)
        self.state = None
        return done

    def _link_changes(self, rate=None, rtt=None, loss=None, path_mtu=None, queue=None):
        cfg = self.state['config'] if self.state else self.config
        new = validate(rate=cfg['rate_bps'] if rate is None else rate,
                       rtt=cfg['rtt_ms'] if rtt is None else rtt,
                       loss=cfg['loss_pct'] if loss is None else loss,
                       mtu=cfg['mtu'], path_mtu=cfg['path_mtu'] if path_mtu is None else path_mtu,
                       queue=cfg['queue'] if queue is None else queue,
                       hosts=cfg['hosts'], name=cfg['name'], stock_cc=cfg['stock_cc'], seed=cfg['seed'],
                       rt_priority=cfg.get('rt_priority', RT_PRIORITY), txqueuelen=cfg.get('txqueuelen', TXQUEUELEN))
        return new

    def set_link(self, rate=None, rtt=None, loss=None, path_mtu=None, queue=None):
        """Change the emulated link without recreating the hosts; returns the new configuration."""
        if not self.state:
            self.state = load_state(self.state_dir, self.name)
        if not self.state:
            raise LabError('lab %s is not up' % self.name)
        new = self._link_changes(rate=rate, rtt=rtt, loss=loss, path_mtu=path_mtu, queue=queue)
        control_request(self.name, {'op': 'set', 'link': new})
        self.config = new
        self.state['config'] = new
        self._save()
        self.log('link now %s' % describe(new))
        return new

    def counters(self):
        """The delay line's counters per direction (a_to_b, b_to_a) and the TUN devices' kernel counters."""
        reply = control_request(self.name, {'op': 'counters'})
        result = reply['counters']
        if self.state:
            total = {h: netdev_stats(self.netns_path(h)) for h in 'AB'}
            base = self.state.get('kernel_baseline') or {}
            result['kernel_total'] = total
            # since the last reset_counters(), like the delay line's own counters
            result['kernel'] = {h: {k: v - (base.get(h) or {}).get(k, 0) for k, v in total[h].items()}
                                if total[h] else None for h in 'AB'}
        return result

    def reset_counters(self):
        """Zero the delay line's counters and the wan0 kernel counters shown by counters() (between runs)."""
        reply = control_request(self.name, {'op': 'reset'})['counters']
        if not self.state:
            self.state = load_state(self.state_dir, self.name)
        if self.state:
            self.state['kernel_baseline'] = {h: netdev_stats(self.netns_path(h)) for h in 'AB'}
            self._save()
        return reply

    def status(self):
        return status(self.name, self.state_dir)

    def iperf3(self, seconds=15, omit=3, extra=(), port=5201, server='B', client='A'):
        """Single-stream iperf3 from ``client`` to ``server``: module_utils/verify/iperf3.summarize() figures
        (receiver_bps, retransmits, mean_rtt_ms, congestion, ...) plus the raw result under 'json'."""
        server = _canonical_host(server)
        client = _canonical_host(client)
        self.exec(server, ['iperf3', '-s', '-1', '-D', '-p', str(port), '-B', ADDR[server]], check=True)
        argv = ['iperf3', '-c', ADDR[server], '-B', ADDR[client], '-p', str(port), '-t', str(seconds),
                '-O', str(omit), '-J'] + list(extra)
        deadline = time.monotonic() + 10
        while True:
            proc = self.exec(client, argv, timeout=seconds + omit + 120)
            try:
                result = iperf3.parse_output(proc.stdout)
            except iperf3.OutputError as exc:
                result = {'error': '%s %s' % (exc, proc.stderr.strip())}
            if result.get('error') and iperf3.classify_error(result['error']) == iperf3.REFUSED \
                    and time.monotonic() < deadline:
                time.sleep(0.2)
                continue
            break
        if result.get('error'):
            raise LabError('iperf3: %s' % result['error'])
        summary = iperf3.summarize(result)
        summary.update(seconds=seconds, omit=omit, json=result)
        return summary


def status(name=DEFAULT_NAME, state_dir=None):
    """What exists of lab ``name`` now, with the delay line's and the kernel's counters."""
    state_dir = os.path.abspath(state_dir or DEFAULT_STATE_DIR)
    state = load_state(state_dir, name)
    out = {'name': name, 'state_file': state_file(state_dir, name), 'state': state is not None}
    pids = delay_line_pids(name)
    out['delay_line'] = {'pids': pids, 'running': bool(pids)}
    hosts = {}
    for host in 'AB':
        entry = {'name': _host_name(name, host), 'address': ADDR[host]}
        path = (state or {}).get('netns', {}).get(host)
        entry['netns'] = path
        entry['netns_exists'] = bool(path and os.path.exists(path))
        if entry['netns_exists']:
            entry['wan0'] = netdev_stats(path)
            with contextlib.suppress(OSError, LabError):
                entry['sysctl'] = {k: read_sysctl(k, path) for k in ('net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem',
                                                                     'net.ipv4.tcp_congestion_control')}
        hosts[host] = entry
    out['hosts'] = hosts
    if state:
        out['config'] = state['config']
        out['link'] = describe(state['config'])
        out['kind'] = state['hosts']
        out['host_sysctls'] = state.get('host_sysctls')
        out['probe_rtt_ms'] = state.get('probe_rtt_ms')
        out['log'] = state.get('log')
    try:
        out['counters'] = control_request(name, {'op': 'counters'}, timeout=2.0)['counters']
    except (OSError, ValueError, LabError) as exc:
        out['counters'] = None
        out['counters_error'] = str(exc)
    out['up'] = bool(state and pids and out['counters'] and all(h['netns_exists'] and h.get('wan0')
                                                                for h in hosts.values()))
    return out


# --------------------------------------------------------------------------- CLI

def _add_link_options(parser, defaults=True):
    parser.add_argument('--rate', default='1g' if defaults else None,
                        help='bottleneck rate, e.g. 1g, 500m, 2.5gbit (default 1g)')
    parser.add_argument('--rtt', default='98' if defaults else None,
                        help='round-trip time, e.g. 98, 98ms, 0.098s (default 98 ms)')
    parser.add_argument('--loss', default='0' if defaults else None,
                        help='random loss per packet and direction, percent 0..100 (default 0)')
    parser.add_argument('--path-mtu', default=None, help='packets larger than this vanish (default: --mtu)')
    parser.add_argument('--queue', default='auto' if defaults else None,
                        help='bottleneck queue in bytes, or auto = 1 x BDP, at least 64 packets')


def build_parser():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--name', default=argparse.SUPPRESS,
                        help='lab name, also the host name prefix: <name>-a, <name>-b (default bdp-lab)')
    common.add_argument('--state-dir', default=argparse.SUPPRESS, help='state directory (default <repo>/.cache/lab)')
    common.add_argument('-q', '--quiet', action='store_true', default=argparse.SUPPRESS)
    parser = argparse.ArgumentParser(prog='wanlab.py', parents=[common],
                                     description='WAN lab: two hosts and an emulated long fat link.')
    sub = parser.add_subparsers(dest='command', required=True)
    _add_parser = sub.add_parser

    def add_parser(*a, **kw):
        return _add_parser(*a, parents=[common], **kw)
    sub.add_parser = add_parser

    up = sub.add_parser('up', help='create the hosts and the link')
    _add_link_options(up)
    up.add_argument('--mtu', default='9000', help='interface MTU of wan0 (default 9000)')
    up.add_argument('--hosts', default='containers', choices=HOST_KINDS)
    up.add_argument('--stock-cc', default='cubic', help='congestion control the hosts start with (default cubic)')
    up.add_argument('--seed', default=None, help='seed for the random loss (default: random)')
    up.add_argument('--image', default=IMAGE)
    up.add_argument('--rt-priority', default=RT_PRIORITY,
                    help='SCHED_FIFO priority of the delay line, 0 = normal scheduling (default %d)' % RT_PRIORITY)
    up.add_argument('--txqueuelen', default=TXQUEUELEN,
                    help='wan0 transmit ring in packets (default %d)' % TXQUEUELEN)

    sub.add_parser('down', help='remove everything the lab created (idempotent)').add_argument(
        '--all', action='store_true', help='every lab named bdp-lab* and any leftover')
    sub.add_parser('status', help='JSON status; exit 0 when up')
    sub.add_parser('counters', help='the delay line counters (JSON)').add_argument(
        '--reset', action='store_true', help='print, then zero them')
    sub.add_parser('leftovers', help='list anything named bdp-lab-*; exit 1 if any')

    setp = sub.add_parser('set', help='change the link without recreating the hosts')
    _add_link_options(setp, defaults=False)

    ex = sub.add_parser('exec', help='run a command in host A or B: exec A -- cmd ...')
    ex.add_argument('host', help='A or B')
    ex.add_argument('argv', nargs=argparse.REMAINDER)

    ip = sub.add_parser('iperf', help='single-stream iperf3 A -> B; prints a JSON summary')
    ip.add_argument('-t', '--time', type=int, default=15)
    ip.add_argument('-O', '--omit', type=int, default=3)
    ip.add_argument('--reverse', action='store_true', help='B -> A')
    ip.add_argument('--full', action='store_true', help='print iperf3 JSON too')
    ip.add_argument('extra', nargs=argparse.REMAINDER, help='-- extra iperf3 client options')

    serve_p = sub.add_parser('_serve', help=argparse.SUPPRESS)
    serve_p.add_argument('--netns-a', required=True)
    serve_p.add_argument('--netns-b', required=True)
    serve_p.add_argument('--config', required=True)
    return parser


def parse_args(argv=None):
    """Parse the command line; --name, --state-dir and -q go before or after the subcommand."""
    args = build_parser().parse_args(argv)
    for key, default in (('name', DEFAULT_NAME), ('state_dir', DEFAULT_STATE_DIR), ('quiet', False)):
        if not hasattr(args, key):
            setattr(args, key, default)
    return args


def _strip_dashdash(argv):
    return argv[1:] if argv and argv[0] == '--' else argv


def main(argv=None):
    args = parse_args(argv)
    log = (lambda msg: None) if args.quiet else (lambda msg: print('wanlab: %s' % msg, file=sys.stderr))
    state_dir = os.path.abspath(args.state_dir)
    try:
        if args.command == '_serve':
            # Fork once more: the lab process reaps this intermediate at once and the
            # daemon is re-parented to init, so it never lingers as anybody's zombie.
            if os.fork() > 0:
                os._exit(0)  # pylint: disable=protected-access
            return serve(args.name, args.netns_a, args.netns_b, json.loads(args.config))
        if args.command == 'up':
            lab = Lab(rate=args.rate, rtt=args.rtt, loss=args.loss, mtu=args.mtu, path_mtu=args.path_mtu,
                      queue=args.queue, hosts=args.hosts, name=args.name, state_dir=state_dir,
                      stock_cc=args.stock_cc, seed=args.seed, image=args.image, log=log,
                      rt_priority=args.rt_priority, txqueuelen=args.txqueuelen)
            lab.up()
            print(json.dumps({'name': lab.name, 'link': describe(lab.config), 'hosts': lab.hosts,
                              'probe_rtt_ms': lab.state['probe_rtt_ms'], 'up_seconds': lab.state['up_seconds']}))
            return 0
        if args.command == 'down':
            names = {args.name}
            if args.all:
                with contextlib.suppress(OSError):
                    names |= {e[:-5] for e in os.listdir(state_dir) if e.startswith(PREFIX) and e.endswith('.json')}
                names |= {n.rsplit('-', 1)[0] for n in list_netns() + list_containers() if n.count('-') >= 2}
                names |= set(_load_host_record())
                for pid in delay_line_pids():
                    a = _proc_cmdline(pid) or []
                    with contextlib.suppress(ValueError, IndexError):
                        names.add(a[a.index(b'--name') + 1].decode())
            for name in sorted(names):
                if not _NAME_RE.match(name):
                    continue
                teardown(name, state_dir, log=log)
            left = leftovers(state_dir) if args.all else []
            for item in left:
                log('still there: %s' % item)
            return 1 if left else 0
        if args.command == 'status':
            result = status(args.name, state_dir)
            print(json.dumps(result, indent=2, sort_keys=True))
            return 0 if result['up'] else 1
        if args.command == 'counters':
            lab = Lab.attach(args.name, state_dir)
            print(json.dumps(lab.counters(), indent=2, sort_keys=True))
            if args.reset:
                lab.reset_counters()
            return 0
        if args.command == 'leftovers':
            found = leftovers(state_dir)
            for item in found:
                print(item)
            return 1 if found else 0
        if args.command == 'set':
            lab = Lab.attach(args.name, state_dir, log=log)
            new = lab.set_link(rate=args.rate, rtt=args.rtt, loss=args.loss, path_mtu=args.path_mtu,
                               queue=args.queue)
            print(json.dumps({'link': describe(new)}))
            return 0
        if args.command == 'exec':
            cmd = _strip_dashdash(args.argv)
            if not cmd:
                raise LabError('exec: no command; usage: exec A|B -- cmd ...')
            lab = Lab.attach(args.name, state_dir)
            return lab.exec(args.host, cmd, capture=False).returncode
        if args.command == 'iperf':
            lab = Lab.attach(args.name, state_dir, log=log)
            result = lab.iperf3(seconds=args.time, omit=args.omit, extra=_strip_dashdash(args.extra),
                                server='A' if args.reverse else 'B', client='B' if args.reverse else 'A')
            if not args.full:
                result.pop('json')
            result['link'] = describe(lab.state['config'])
            print(json.dumps(result, indent=2, sort_keys=True))
            return 0
    except LabError as exc:
        print('wanlab: error: %s' % exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('wanlab: interrupted', file=sys.stderr)
        return 130
    return 2


if __name__ == '__main__':
    sys.exit(main())
