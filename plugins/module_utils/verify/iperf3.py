# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""iperf3 versions, its -J output and its errors, read defensively.

iperf3 output seen in the field and handled here:

* text before the JSON object (warnings, ``iperf3: error - ...`` lines);
* several JSON objects one after the other (some versions print a partial object and then the
  full one, or a full one and then an error object): the last complete object with results wins;
* the C literals ``nan``, ``-nan``, ``inf`` where a number should be (not JSON): read as null;
* output cut off (the process was killed): reported as truncated;
* fields missing in older versions: 3.1.3 has no sender/receiver_tcp_congestion (3.1.4), no
  socket buffer sizes (3.2) and no max_snd_cwnd / mean_rtt; max_snd_wnd appears later still.
  Missing fields are returned as None, never guessed.
* a 0 for max_snd_cwnd / mean_rtt where the local side did not send (reverse mode): None.
"""

import hashlib
import json
import math
import os
import re

MIN_VERSION = (3, 1)             # JSON with end.sum_sent / sum_received, --logfile, -I
CONNECT_TIMEOUT_VERSION = (3, 2)  # --connect-timeout
ONE_OFF_IDLE_EXIT_VERSION = (3, 11)  # before 3.11 --idle-timeout restarts a --one-off server instead of ending it
# A test's seconds (iperf3 -t) and its slow start left out (-O): the ranges the module and the verify role accept.
DURATION_MAX, OMIT_MAX = 3600, 600
DURATION_HELP = 'a whole number of seconds from 1 to %d' % DURATION_MAX
OMIT_HELP = 'a whole number of seconds from 0 to %d' % OMIT_MAX

_VERSION = re.compile(r'iperf\s+(?:version\s+)?(3)\.(\d+)(?:\.(\d+))?')
_BAD_NUMBER = re.compile(r'(?<![\w.])-?(?:nan|inf(?:inity)?)(?![\w.])', re.IGNORECASE)

BUSY = 'busy'
REFUSED = 'refused'
UNREACHABLE = 'unreachable'
RESOLVE = 'resolve'
CONGESTION = 'congestion'
AUTH = 'auth'
OTHER = 'other'

_ERROR_KINDS = (
    (BUSY, ('server is busy',)),
    (AUTH, ('authorization failed',)),
    (RESOLVE, ('name or service not known', 'temporary failure in name resolution', 'nodename nor servname',
               'no address associated', 'unable to resolve')),
    (REFUSED, ('connection refused',)),
    (UNREACHABLE, ('no route to host', 'network is unreachable', 'host is unreachable', 'timed out',
                   'operation now in progress', 'unable to connect')),
    (CONGESTION, ('tcp_congestion', 'congestion control')),
)


class OutputError(ValueError):
    """iperf3 printed nothing this module can read; the message says what was seen."""


INSTALL_HINT = ('install the iperf3 package on this host (apt-get install iperf3 / dnf install iperf3, or '
                'ansible.builtin.package name=iperf3), or point iperf3_path at it')


def find_binary(module, configured=None):
    """The iperf3 to run: ``configured`` when it is an executable file, else the one on PATH; None when missing."""
    if configured:
        return configured if os.path.isfile(configured) and os.access(configured, os.X_OK) else None
    return module.get_bin_path('iperf3', opt_dirs=['/usr/local/bin', '/usr/bin', '/usr/sbin'])


def binary_version(module, path, fail):
    """Version tuple of the iperf3 at ``path``; calls ``fail(msg)`` unless it is iperf3 3.1 or later."""
    rc, out, err = module.run_command([path, '--version'], environ_update={'LC_ALL': 'C'})
    version = parse_version(out) or parse_version(err)
    if version is None:
        fail('%s --version printed %r, which is not iperf3 (iperf 2 is a different program); %s.'
             % (path, ' '.join((out or err).split())[:200], INSTALL_HINT))
    if version[:2] < MIN_VERSION:
        fail('iperf3 %s on this host is older than 3.1 (its JSON results, pidfile and log file options are needed); '
             'install iperf3 3.1 or later (the distribution package or https://software.es.net/iperf/).'
             % version_string(version))
    return version


def has_authentication(module, path):
    """Whether the iperf3 at ``path`` was built with its authentication (``--version`` lists "authentication")."""
    rc, out, err = module.run_command([path, '--version'], environ_update={'LC_ALL': 'C'})
    return rc == 0 and 'authentication' in (out or '').lower()


# iperf3's own authentication (iperf3(1), "--rsa-private-key-path", "--authorized-users-path", "--username"):
# the server holds the RSA private key and a list of users with the SHA-256 of "{user}password"; the client holds
# the public key, the user name, and the password in the environment variable IPERF3_PASSWORD.
PASSWORD_ENV = 'IPERF3_PASSWORD'
AUTH_HELP = ('the iperf3 on this host was built without authentication (iperf3 --version does not list it); '
             'install the distribution package (Debian 12 and later, RHEL 8 and later have it)')


def authorized_user(username, password):
    """The server's --authorized-users-path line for ``username`` and ``password`` (user,sha256 of {user}password)."""
    digest = hashlib.sha256(('{%s}%s' % (username, password)).encode('utf-8')).hexdigest()
    return '%s,%s\n' % (username, digest)


def server_auth_args(private_key_path, users_path):
    """The server's options for iperf3's authentication."""
    return ['--rsa-private-key-path', private_key_path, '--authorized-users-path', users_path]


def client_auth_args(username, public_key_path):
    """The client's options for iperf3's authentication (the password goes in PASSWORD_ENV, never in argv)."""
    return ['--username', username, '--rsa-public-key-path', public_key_path]


def parse_version(text):
    """(major, minor, patch) from 'iperf 3.12 (cJSON 1.7.15)', 'iperf 3.1.3' or 'iperf 3.16+'; None otherwise."""
    match = _VERSION.search(text or '')
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def version_string(version):
    if not version:
        return None
    return '%d.%d.%d' % version if version[2] else '%d.%d' % version[:2]


def _clean(segment):
    """Replace nan / -nan / inf literals outside JSON strings by null."""
    out, i, n = [], 0, len(segment)
    while i < n:
        quote = segment.find('"', i)
        if quote == -1:
            out.append(_BAD_NUMBER.sub('null', segment[i:]))
            break
        out.append(_BAD_NUMBER.sub('null', segment[i:quote]))
        j = quote + 1
        while j < n and segment[j] != '"':
            j += 2 if segment[j] == '\\' else 1
        out.append(segment[quote:j + 1])
        i = j + 1
    return ''.join(out)


def _object_end(text, start):
    """Index after the '}' closing the object that opens at ``start``, or None when it never closes."""
    depth, i, n = 0, start, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == '\\' else 1
        elif char == '{':
            depth += 1
        elif char == '}':
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _starts(text):
    """Where top-level objects may start: the first '{' and every '{' that opens a line.

    iperf3 prints objects formatted, nested ones indented, so an object that is broken or cut off
    is skipped as a whole and never mined for the objects nested in it (server_output_json has an
    'end' of its own).
    """
    first = text.find('{')
    if first == -1:
        return []
    return sorted(set([first] + [match.end() - 1 for match in re.finditer(r'(?:^|\n)\r?\{', text)]))


def json_objects(text):
    """All top-level JSON objects in ``text`` (dicts, in order) and whether one was cut off."""
    objects, truncated, done = [], False, 0
    text = text or ''
    for start in _starts(text):
        if start < done:
            continue                     # inside an object already read
        end = _object_end(text, start)
        if end is None:
            truncated = True             # runs to the end of the output; a later line start may still hold one
            continue
        try:
            value = json.loads(_clean(text[start:end]))
        except ValueError:
            done = end
            continue
        if isinstance(value, dict):
            objects.append(value)
        done = end
    return objects, truncated


def has_results(doc):
    end = doc.get('end')
    return isinstance(end, dict) and any(isinstance(end.get(key), dict) and end[key]
                                         for key in ('sum_sent', 'sum_received', 'sum'))


def parse_output(text):
    """The iperf3 result object to use from -J output.

    Returns the last complete object with results in ``end``; else the last object with an
    ``error``; else the last object.  Raises OutputError when there is no object at all.
    """
    objects, truncated = json_objects(text)
    for doc in reversed(objects):
        if has_results(doc):
            return doc
    for doc in reversed(objects):
        if doc.get('error'):
            return doc
    if objects:
        return objects[-1]
    excerpt = ' '.join((text or '').split())[:300]
    if truncated:
        raise OutputError('iperf3 output ends in the middle of its JSON result (was the process killed?): %s'
                          % excerpt)
    raise OutputError('iperf3 printed no JSON result%s' % (': %s' % excerpt if excerpt else ' (empty output)'))


def classify_error(message):
    """One of BUSY, RESOLVE, REFUSED, UNREACHABLE, CONGESTION, OTHER for an iperf3 error text."""
    text = (message or '').lower()
    for kind, needles in _ERROR_KINDS:
        if any(needle in text for needle in needles):
            return kind
    return OTHER


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _positive(value):
    value = _number(value)
    return value if value is not None and value > 0 else None


def _dict(value):
    return value if isinstance(value, dict) else {}


def _int(value):
    value = _number(value)
    return int(round(value)) if value is not None else None


def _stream_figures(doc):
    """Per-stream sender figures (cwnd, snd_wnd, RTTs) from the streams that carry them."""
    senders = [_dict(_dict(stream).get('sender')) for stream in _dict(doc.get('end')).get('streams') or []]
    return [sender for sender in senders
            if any(_positive(sender.get(key)) for key in ('max_snd_cwnd', 'mean_rtt', 'max_snd_wnd'))]


def _buffers(start):
    keys = ('sock_bufsize', 'sndbuf_actual', 'rcvbuf_actual')
    found = dict((key, _int(start.get(key))) for key in keys if _number(start.get(key)) is not None)
    return found or None


def summarize(doc):
    """The figures of one iperf3 client result (dict) in the units the modules return.

    Rates in bit/s (int), RTTs in ms (iperf3 reports microseconds), buffers and windows in bytes.
    In reverse mode the client does not send, so cwnd and RTT come from the server's own result
    (``server_output_json``, present when the server runs with -J and the client asks with
    --get-server-output).
    """
    start, end = _dict(doc.get('start')), _dict(doc.get('end'))
    server = _dict(doc.get('server_output_json'))
    sent, received = _dict(end.get('sum_sent')), _dict(end.get('sum_received'))
    if not sent and not received and _dict(end.get('sum')):
        sent = received = _dict(end.get('sum'))
    test_start = _dict(start.get('test_start'))
    figures = _stream_figures(doc) or _stream_figures(server)
    cwnds = [_positive(item.get('max_snd_cwnd')) for item in figures]
    wnds = [_positive(item.get('max_snd_wnd')) for item in figures]
    means = [_positive(item.get('mean_rtt')) for item in figures]
    mins = [_positive(item.get('min_rtt')) for item in figures]
    maxes = [_positive(item.get('max_rtt')) for item in figures]

    def biggest(values):
        values = [value for value in values if value is not None]
        return int(max(values)) if values else None

    def in_ms(value):
        return round(value / 1000.0, 3) if value is not None else None

    mean_values = [value for value in means if value is not None]
    min_values = [value for value in mins if value is not None]
    retransmits = _int(sent.get('retransmits'))
    if retransmits is None:
        retransmits = _int(_dict(_dict(server.get('end')).get('sum_sent')).get('retransmits'))
    cpu = _dict(end.get('cpu_utilization_percent'))
    version = parse_version(start.get('version'))
    mss = _positive(start.get('tcp_mss_default'))
    local_buffers = _buffers(start)
    remote_buffers = _buffers(_dict(server.get('start')))
    return {
        'iperf3_version': version_string(version),
        'peer_iperf3_version': version_string(parse_version(_dict(server.get('start')).get('version'))),
        'sender_bps': _int(sent.get('bits_per_second')),
        'receiver_bps': _int(received.get('bits_per_second')),
        'sender_bytes': _int(sent.get('bytes')),
        'receiver_bytes': _int(received.get('bytes')),
        'seconds': _number(received.get('seconds')) or _number(sent.get('seconds')),
        'retransmits': retransmits,
        'max_snd_cwnd_bytes': biggest(cwnds),
        'max_snd_wnd_bytes': biggest(wnds),
        'mean_rtt_ms': in_ms(sum(mean_values) / len(mean_values)) if mean_values else None,
        'min_rtt_ms': in_ms(min(min_values)) if min_values else None,
        'max_rtt_ms': in_ms(biggest(maxes)),
        'congestion': {'sender': end.get('sender_tcp_congestion'),
                       'receiver': end.get('receiver_tcp_congestion')},
        'cpu_utilization_percent': {'host_total': _number(cpu.get('host_total')),
                                    'remote_total': _number(cpu.get('remote_total'))},
        'socket_buffers': {'local': local_buffers, 'remote': remote_buffers},
        'mss': int(mss) if mss and mss < 65536 else None,
        'streams': _int(test_start.get('num_streams')),
        'reverse': bool(test_start.get('reverse')) if 'reverse' in test_start else None,
    }
