# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Path MTU proof: don't-fragment ICMP probes at full size, bisection, and a TCP exchange at full segment size.

ICMP probes are sent from a raw socket with IP_PMTUDISC_PROBE: the DF bit is set and the kernel's
cached path MTU is ignored, so a probe leaves at the interface MTU exactly like ``ping -M probe``
(``ping -M do -s SIZE`` sends the same packets while no smaller path MTU is cached).  Replies and
"fragmentation needed" / "packet too big" errors are matched to the probe by ICMP id and sequence.

The TCP exchange connects to a one-off listener on the peer (started by the same module on that
host, see LISTENER), sends a block of data and reads it back.  TCP_INFO then says which segment
size was used in each direction (tcpi_snd_mss, tcpi_rcv_mss) and how many segments were resent.
"""

import errno
import os
import random
import select
import signal
import socket
import struct
import sys
import time

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu

IP_MTU_DISCOVER = 10
IP_PMTUDISC_PROBE = 3
IPV6_MTU_DISCOVER = 23
IPV6_PMTUDISC_PROBE = 3
TCP_INFO = 11
TCPI_OPT_TIMESTAMPS = 1
MAGIC = b'BDPMTU1'
DEFAULT_TCP_BYTES = 262144
LISTENER_PID = 'jumbo_mtu-listener.pid'
LISTENER_MARK = 'bdp-wan-tune-mtu-listener'


def _checksum(data):
    if len(data) % 2:
        data += b'\0'
    total = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xffff)
    total += total >> 16
    return ~total & 0xffff


class IcmpProber(object):
    """Don't-fragment ICMP echo probes to one address (needs root: a raw socket)."""

    def __init__(self, address, family=4):
        self.address = address
        self.family = family
        if family == 6:
            self.sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
            self.sock.setsockopt(socket.IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_PROBE)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            self.sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_PROBE)
        self.sock.setblocking(False)
        self.ident = random.randint(1, 0xfffe)
        self.seq = random.randint(0, 0x7fff)

    def close(self):
        self.sock.close()

    def _packet(self, seq, payload):
        body = bytes(bytearray((i * 7 + seq) & 0xff for i in range(payload)))
        if self.family == 6:
            return struct.pack('!BBHHH', 128, 0, 0, self.ident, seq) + body      # the kernel sums ICMPv6
        header = struct.pack('!BBHHH', 8, 0, 0, self.ident, seq)
        return struct.pack('!BBHHH', 8, 0, _checksum(header + body), self.ident, seq) + body

    def _parse(self, data):
        """(kind, seq, size, mtu): kind 'reply' or 'too_big' for our probes, else None."""
        if self.family == 4:
            if len(data) < 20:
                return None
            ihl = (data[0] & 0x0f) * 4
            icmp = data[ihl:]
            if len(icmp) < 8:
                return None
            kind, code = icmp[0], icmp[1]
            if kind == 0:
                ident, seq = struct.unpack('!HH', icmp[4:8])
                return ('reply', seq, len(icmp) - 8, None) if ident == self.ident else None
            if kind == 3 and code == 4 and len(icmp) >= 8 + 20 + 8:
                mtu = struct.unpack('!H', icmp[6:8])[0]
                inner = icmp[8:]
                inner_ihl = (inner[0] & 0x0f) * 4
                ident, seq = struct.unpack('!HH', inner[inner_ihl + 4:inner_ihl + 8])
                return ('too_big', seq, None, mtu) if ident == self.ident else None
            return None
        if len(data) < 8:
            return None
        kind = data[0]
        if kind == 129:
            ident, seq = struct.unpack('!HH', data[4:8])
            return ('reply', seq, len(data) - 8, None) if ident == self.ident else None
        if kind == 2 and len(data) >= 8 + 40 + 8:
            mtu = struct.unpack('!I', data[4:8])[0]
            ident, seq = struct.unpack('!HH', data[8 + 40 + 4:8 + 40 + 8])
            return ('too_big', seq, None, mtu) if ident == self.ident else None
        return None

    def probe(self, payload, count=3, timeout=1.0, interval=0.05):
        """Send ``count`` echo requests with ``payload`` bytes; wait ``timeout`` s after the last one.

        Returns {'payload', 'packet', 'sent', 'received', 'rtt_ms', 'too_big_mtu', 'error'}.
        """
        overhead = linkmtu.ICMP_OVERHEAD[self.family]
        result = {'payload': payload, 'packet': payload + overhead, 'sent': 0, 'received': 0, 'rtt_ms': None,
                  'too_big_mtu': None, 'error': None}
        sent_at = {}
        target = (self.address, 0)
        last = None
        for dummy in range(count):
            self.seq = (self.seq + 1) & 0xffff
            try:
                self.sock.sendto(self._packet(self.seq, payload), target)
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:
                    result['error'] = ('this host cannot send a %d-byte packet to %s: the route or interface MTU is '
                                       'smaller' % (payload + overhead, self.address))
                else:
                    result['error'] = 'sending to %s failed: %s' % (self.address, exc.strerror or exc)
                return result
            sent_at[self.seq] = last = time.monotonic()
            result['sent'] += 1
            self._collect(sent_at, result, payload, min(interval, timeout))
            if result['received']:
                return result
        deadline = last + timeout
        while time.monotonic() < deadline and not result['received']:
            self._collect(sent_at, result, payload, deadline - time.monotonic())
        return result

    def _collect(self, sent_at, result, payload, wait):
        end = time.monotonic() + max(wait, 0)
        while True:
            remaining = end - time.monotonic()
            ready = select.select([self.sock], [], [], max(remaining, 0))[0]
            if not ready:
                return
            try:
                data = self.sock.recv(linkmtu.MAX_MTU + 100)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                return
            parsed = self._parse(data)
            if not parsed or parsed[1] not in sent_at:
                continue
            kind, seq, size, mtu = parsed
            if kind == 'reply' and size == payload:
                result['received'] += 1
                rtt = (time.monotonic() - sent_at[seq]) * 1000.0
                result['rtt_ms'] = rtt if result['rtt_ms'] is None else min(result['rtt_ms'], rtt)
                return
            if kind == 'too_big':
                result['too_big_mtu'] = mtu


def bisect(fits, ok, bad, step=8, max_probes=12):
    """Narrow the largest size that ``fits`` between ``ok`` (fits) and ``bad`` (does not).

    Returns (largest known to fit, smallest known not to fit, sizes probed).
    """
    probed = []
    while bad - ok > step and len(probed) < max_probes:
        mid = (ok + bad) // 2
        probed.append(mid)
        if fits(mid):
            ok = mid
        else:
            bad = mid
    return ok, bad, probed


def tcp_info(sock):
    """The fields of struct tcp_info this proof uses."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 104)
    if len(raw) < 8 + 24 * 4:
        raw = raw + b'\0' * (8 + 24 * 4 - len(raw))
    head = struct.unpack('8B', raw[:8])
    vals = struct.unpack('24I', raw[8:8 + 96])
    return {'retransmits': head[2], 'options': head[5], 'rto_us': vals[0], 'snd_mss': vals[2],
            'rcv_mss': vals[3], 'unacked': vals[4], 'lost': vals[6], 'retrans': vals[7], 'pmtu': vals[13],
            'rtt_us': vals[15], 'advmss': vals[19], 'total_retrans': vals[23],
            'timestamps': bool(head[5] & TCPI_OPT_TIMESTAMPS)}


def tcp_exchange(address, family, port, nbytes=DEFAULT_TCP_BYTES, timeout=10.0, connect_timeout=5.0):
    """Send ``nbytes`` to the listener on ``address``:``port`` and read them back.

    Returns {'ran': bool, 'reason', 'bytes', 'echoed', 'seconds', plus TCP_INFO fields when it ran}.
    'ran' is False when nothing listens (refused) or the connection was not answered at all.
    """
    fam = socket.AF_INET6 if family == 6 else socket.AF_INET
    result = {'ran': False, 'port': port, 'bytes': nbytes, 'echoed': 0, 'seconds': None, 'reason': None}
    sock = socket.socket(fam, socket.SOCK_STREAM)
    try:
        sock.settimeout(connect_timeout)
        start = time.monotonic()
        try:
            sock.connect((address, port))
        except ConnectionRefusedError:
            result['reason'] = 'nothing listens on %s port %d (connection refused)' % (address, port)
            return result
        except (socket.timeout, OSError) as exc:
            result['reason'] = 'no answer from %s port %d within %g s (%s); a firewall may drop it' % (
                address, port, connect_timeout, getattr(exc, 'strerror', None) or exc)
            return result
        result['ran'] = True
        deadline = start + timeout
        block = bytes(bytearray(i & 0xff for i in range(65536)))
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.1))
            sock.sendall(MAGIC + b' %d\n' % nbytes)
            left = nbytes
            while left:
                chunk = block[:min(left, len(block))]
                sock.settimeout(max(deadline - time.monotonic(), 0.01))
                sock.sendall(chunk)
                left -= len(chunk)
            while result['echoed'] < nbytes:
                sock.settimeout(max(deadline - time.monotonic(), 0.01))
                data = sock.recv(min(65536, nbytes - result['echoed']))
                if not data:
                    result['reason'] = 'the listener closed the connection after %d of %d bytes' % (
                        result['echoed'], nbytes)
                    break
                result['echoed'] += len(data)
        except socket.timeout:
            result['reason'] = 'stalled: %d of %d bytes came back within %g s' % (result['echoed'], nbytes, timeout)
        except OSError as exc:
            result['reason'] = 'failed after %d of %d bytes: %s' % (result['echoed'], nbytes, exc.strerror or exc)
        result['seconds'] = round(time.monotonic() - start, 3)
        try:
            result.update(tcp_info(sock))
        except OSError:
            pass
        return result
    finally:
        sock.close()


def judge_tcp(result, mtu, family=4):
    """Add 'ok', 'expected_mss' and a 'reason' to a tcp_exchange result for an interface MTU ``mtu``."""
    if not result.get('ran'):
        result['ok'] = None
        return result
    expected = linkmtu.tcp_mss(mtu, family, result.get('timestamps', True))
    result['expected_mss'] = expected
    problems = []
    if result['echoed'] < result['bytes']:
        problems.append(result.get('reason') or 'incomplete')
    if result.get('snd_mss', 0) < expected:
        problems.append('this host sent %d-byte segments, not %d: the peer advertises a smaller MSS or a smaller '
                        'path MTU was learnt (about MTU %d)'
                        % (result.get('snd_mss', 0), expected, result.get('snd_mss', 0) + mtu - expected))
    if result['echoed'] >= result['bytes'] and result.get('rcv_mss', 0) < expected:
        problems.append('the largest segment from the peer carried %d bytes, not %d (its MTU is probably %d)'
                        % (result.get('rcv_mss', 0), expected, result.get('rcv_mss', 0) + (mtu - expected)))
    result['ok'] = not problems
    if problems:
        result['reason'] = '; '.join(problems)
    return result


def prove(address, family, mtu, before_mtu=None, port=None, tcp='auto', count=3, timeout=None, exchange=None,
          bisect_step=8, max_probes=12):
    """Prove the path to one address at ``mtu``: small probe, full-size probe, bisection on failure, TCP.

    ``exchange(port, timeout)``: the TCP exchange with the peer (prove_peers gives tcp_exchange), or None.
    Returns a dict with 'ok', 'icmp', 'tcp' and 'summary' (one line a human reads).
    """
    prober = IcmpProber(address, family)
    try:
        return _prove(address, family, mtu, before_mtu, port, tcp, count, timeout, prober.probe, exchange,
                      bisect_step, max_probes)
    finally:
        prober.close()


def _prove(address, family, mtu, before_mtu, port, tcp, count, timeout, prober, exchange, step, max_probes):
    overhead = linkmtu.ICMP_OVERHEAD[family]
    full = mtu - overhead
    result = {'address': address, 'mtu': mtu, 'ok': False, 'icmp': {'payload': full, 'packet': mtu}, 'tcp': None}
    small = prober(56, count, timeout or 2.0)
    if not small['received']:
        result['icmp'].update(small_ok=False, error=small.get('error'))
        result['summary'] = ('%s does not answer even a small (84-byte) ICMP echo%s; the path cannot be proven. '
                             'Allow ICMP echo between the hosts or check that %s is up.'
                             % (address, ': %s' % small['error'] if small.get('error') else '', address))
        return result
    rtt = small['rtt_ms'] or 1.0
    wait = timeout or max(0.5, 4 * rtt / 1000.0 + 0.3)
    result['icmp']['rtt_ms'] = round(rtt, 3)
    big = prober(full, count, wait)
    result['icmp'].update(received=big['received'], sent=big['sent'], error=big.get('error'),
                          too_big_mtu=big.get('too_big_mtu'))
    if not big['received']:
        fits_cache = {}

        def fits(size):
            if size not in fits_cache:
                fits_cache[size] = bool(prober(size, max(2, count - 1), wait)['received'])
            return fits_cache[size]

        low = 56
        base = (before_mtu or 1500) - overhead
        if base < full and fits(base):
            low = base
        ok, bad, probed = bisect(fits, low, full, step, max_probes)
        result['icmp'].update(largest_ok=ok, largest_ok_packet=ok + overhead, smallest_failed=bad,
                              smallest_failed_packet=bad + overhead, probed=sorted(fits_cache))
        hint = ''
        if big.get('too_big_mtu'):
            hint = '; a router on the path reported next-hop MTU %d' % big['too_big_mtu']
        if big.get('error'):
            hint = '; %s' % big['error']
        result['summary'] = ('%d-byte DF ICMP payload (%d-byte packets, the full MTU %d) got no reply; the largest '
                             'that got through is %d (%d-byte packets), %d (%d-byte packets) did not%s. Reproduce: '
                             'ping -M do -s %d -c 3 %s'
                             % (full, mtu, mtu, ok, ok + overhead, bad, bad + overhead, hint, full, address))
        return result
    result['icmp']['rtt_ms'] = round(min(rtt, big['rtt_ms'] or rtt), 3)
    if tcp != 'off' and port and exchange is not None:
        result['tcp'] = judge_tcp(exchange(port, max(10.0, 40 * rtt / 1000.0 + 5)), mtu, family)
        if result['tcp']['ok'] is False:
            result['summary'] = ('full-size ICMP got through (%d-byte packets), but the TCP exchange on port %d '
                                 'failed: %s' % (mtu, port, result['tcp']['reason']))
            return result
        if result['tcp']['ok'] is None and tcp == 'required':
            result['summary'] = ('full-size ICMP got through (%d-byte packets), but the TCP exchange is required and '
                                 'could not run: %s' % (mtu, result['tcp']['reason']))
            return result
    result['ok'] = True
    tcp_text = ''
    if result['tcp'] and result['tcp']['ok']:
        tcp_text = ('; TCP exchanged %d bytes both ways with %d-byte segments (sent) / %d (received), %d resent'
                    % (result['tcp']['bytes'], result['tcp']['snd_mss'], result['tcp']['rcv_mss'],
                       result['tcp']['total_retrans']))
    elif result['tcp'] is not None:
        tcp_text = '; no TCP exchange (%s)' % result['tcp']['reason']
    result['summary'] = '%d-byte DF ICMP packets (payload %d) answered in %.1f ms%s' % (
        mtu, full, result['icmp']['rtt_ms'], tcp_text)
    return result


# The one-off listener a peer runs during the proof: python3 -c LISTENER PORT LIFETIME ALLOWED MAXBYTES.
# It echoes what a prover sends, accepts only the listed addresses, and exits after LIFETIME seconds.
LISTENER = r'''
import os, socket, sys, threading, time
port, lifetime, allowed, maxbytes = int(sys.argv[1]), float(sys.argv[2]), set(sys.argv[3].split(',')), int(sys.argv[4])
def norm(a):
    return a[7:] if a.startswith('::ffff:') else a
try:
    srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('::', port))
except OSError:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        srv.bind(('0.0.0.0', port))
    except OSError as exc:
        sys.stdout.write('error %s\n' % exc); sys.stdout.flush(); sys.exit(1)
srv.listen(16)
srv.settimeout(1.0)
sys.stdout.write('ready %d\n' % os.getpid()); sys.stdout.flush()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def serve(conn):
    try:
        conn.settimeout(30)
        head = b''
        while not head.endswith(b'\n') and len(head) < 64:
            c = conn.recv(1)
            if not c:
                return
            head += c
        magic, n = head.split()
        n = int(n)
        if magic != b'BDPMTU1' or n < 0 or n > maxbytes:
            return
        got = []
        left = n
        while left:
            d = conn.recv(min(65536, left))
            if not d:
                return
            got.append(d)
            left -= len(d)
        conn.sendall(b''.join(got))
        conn.shutdown(socket.SHUT_WR)
        conn.recv(1)
    except (OSError, ValueError):
        pass
    finally:
        conn.close()
end = time.time() + lifetime
while time.time() < end:
    try:
        conn, addr = srv.accept()
    except socket.timeout:
        continue
    except OSError:
        break
    if norm(addr[0]) not in allowed:
        conn.close()
        continue
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
'''


class Listener(object):
    """The one-off LISTENER on this host, for the peers' proofs: started detached, found by its pid file.

    The pid file lives in the run directory (commit.RUN_DIR); the listener's command line carries
    LISTENER_MARK, so a stale pid file never makes this stop another process.
    """

    def __init__(self, port, lifetime):
        self.port = port
        self.lifetime = lifetime

    @staticmethod
    def pid_file():
        return os.path.join(commit.RUN_DIR, LISTENER_PID)

    def stop(self):
        """Stop the listener if one runs; True when one was stopped."""
        text = files.read_text(self.pid_file())
        if not text:
            return False
        stopped = False
        try:
            pid = int(text.split()[0])
            cmdline = files.read_text('/proc/%d/cmdline' % pid) or ''
            if LISTENER_MARK in cmdline:
                os.kill(pid, signal.SIGTERM)
                stopped = True
        except (ValueError, OSError):
            pass
        try:
            os.unlink(self.pid_file())
        except OSError:
            pass
        return stopped

    def start(self, peers):
        """(Re)start the listener for ``peers`` (their addresses only); returns what the module reports."""
        self.stop()
        allowed = ','.join(sorted(set(peer['address'] for peer in peers))) or '-'
        pid, pipe = commit.spawn_detached([sys.executable or '/usr/bin/python3', '-c', LISTENER, str(self.port),
                                           str(self.lifetime), allowed, str(4 * 2 ** 20), LISTENER_MARK],
                                          ready_pipe=True)
        line = b''
        deadline = time.time() + 15
        while not line.endswith(b'\n') and time.time() < deadline:
            if not select.select([pipe], [], [], max(deadline - time.time(), 0))[0]:
                break
            chunk = os.read(pipe, 256)
            if not chunk:
                break
            line += chunk
        os.close(pipe)
        line = line.decode(errors='replace').strip()
        if not line.startswith('ready'):
            commit.reap(pid)
            return {'running': False, 'port': self.port, 'error': line or 'exited at once'}
        commit.ensure_run_dir()
        with open(self.pid_file(), 'w') as handle:
            handle.write('%d %d\n' % (pid, self.port))
        return {'running': True, 'port': self.port, 'pid': pid, 'allowed': allowed.split(',')}


# ----------------------------------------------------------------------------- the proofs of link_mtu, per peer

def prove_peers(peers, mtus, before=None, port=None, tcp='auto', count=3):
    """Prove every resolved peer at the MTU of the interface that routes to it; one result dict per peer."""
    results = []
    for peer in peers:
        dev = peer['interface']
        mtu = mtus.get(dev)
        item = {'peer': peer['peer'], 'address': peer['address'], 'interface': dev, 'mtu': mtu}
        if mtu is None:
            item.update(ok=False, summary='the route to %s goes through %s, which this host cannot see'
                        % (peer['address'], dev))
            results.append(item)
            continue

        def exchange(port_, timeout, peer=peer):
            return tcp_exchange(peer['address'], peer['family'], port_, timeout=timeout)

        proof = prove(peer['address'], peer['family'], mtu, (before or {}).get(dev), port=port, tcp=tcp, count=count,
                      exchange=exchange if tcp != 'off' else None)
        item.update(proof)
        results.append(item)
    return results


def verify_peers(peers, mtus, count=3):
    """One full-size DF probe per peer (read-only); bisect only to explain a failure."""
    results = []
    for peer in peers:
        dev = peer['interface']
        mtu = mtus.get(dev)
        item = {'peer': peer['peer'], 'address': peer['address'], 'interface': dev, 'mtu': mtu}
        proof = prove(peer['address'], peer['family'], mtu, None, tcp='off', count=count)
        item.update(proof)
        results.append(item)
    return results


def failure_text(failed):
    """One sentence per failed peer result, for the module's message."""
    return ' '.join('Peer %s (%s via %s, MTU %s): %s.' % (item['peer'], item['address'], item['interface'],
                                                          item.get('mtu'), item.get('summary'))
                    for item in failed)
