# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rsync daemon over TLS: checking the TLS inputs, and rendering the stunnel configuration and its systemd unit.

Shared by the filter ``rsync_daemon_problems`` and the action plugin ``validate_inputs`` (on the controller, before
any host changes) and the module ``rsync_daemon_tls`` (on the host, before it writes): pure functions.  At the end, the
checks that prove these rules on the host (module ``rsync_daemon_check``): they connect, and run openssl.

The design, as rsync-ssl(1) "THE SERVER SIDE" describes it: stunnel accepts TLS on the TLS port (874) and starts
``rsync --daemon`` for each connection in exec mode (inetd style), so with transport ``tls`` nothing listens on 873.
Behind stunnel, rsync sees every client as 127.0.0.1 (measured: stunnel hands it a local socket), so its ``hosts
allow`` cannot tell sources apart.  The source rule therefore holds in stunnel, before the handshake: libwrap
(``libwrap = yes``, Debian's stunnel4 has it) with a block of the collection's own at the top of /etc/hosts.allow
for the service name ``bdp-rsync-tls`` only.  Then clients must show a certificate signed by the migration CA
(``verifyChain``, ``requireCert``) before any byte reaches rsync.
"""

import ipaddress
import os
import re
import shutil
import socket
import ssl
import tempfile
import uuid

from ansible_collections.bdp.wan_tune.plugins.module_utils import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.bdp import read_whole
from ansible_collections.bdp.wan_tune.plugins.module_utils.rsyncd import Problems

# The TLS settings (the role's variables rsync_daemon_<key>) that check() and plugin_utils/tls_ca.py problems() read,
# besides the daemon's port (rsyncd.SETTINGS).
SETTINGS = ('transport', 'tls_port', 'tls_names', 'tls_days', 'tls_ca_cert', 'tls_ca_key', 'tls_ca_dir')
TRANSPORTS = ('tls', 'plain', 'both')
TRANSPORT_HELP = ('tls (default: stunnel on the TLS port in front of rsync, nothing on the plain port), plain (the '
                  'cleartext daemon only) or both')
# TLS 1.3 suites, and for TLS 1.2 only ECDHE with AEAD ciphers (no CBC, no RSA key exchange).
CIPHERSUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256'
CIPHERS_TLS12 = ('ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:'
                 'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256')
STUNNEL = '/usr/bin/stunnel4'
RSYNC = '/usr/bin/rsync'
SERVICE = 'bdp-rsync-tls.service'
DIR = '/etc/bdp-wan-tune/rsync-tls'
UNIT_PATH = '/etc/systemd/system/' + SERVICE
# The files in DIR: the trust anchor, this host's certificate and key, and the stunnel configuration.
CA_FILE, CERT_FILE, KEY_FILE, CONF_FILE = 'ca.crt', 'host.crt', 'host.key', 'stunnel.conf'
# Days before the end of a certificate's validity at which it is renewed (and a CA is warned about).
RENEW_DAYS = 30
DNS_RE = re.compile(r'^(?=.{1,253}$)([A-Za-z0-9_*]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)'
                    r'(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$')
NAME_HELP = 'a list of DNS names or IP addresses the senders use to reach the host, such as [rsync-b.dc2.example.org, 198.18.3.12]'
PORT_HELP = checks.port_help(default=874, extra=', other than rsync_daemon_port')
DAYS_HELP = 'a whole number of days from %d to 3650 (default 180)' % (RENEW_DAYS + 1)
PEM_CERT_RE = re.compile(r'-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----')


def name_kind(text):
    """'IP' for an address, 'DNS' for a host name, None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        ipaddress.ip_address(text)
        return 'IP'
    except ValueError:
        pass
    return 'DNS' if DNS_RE.match(text) else None


def subject_alt_names(names):
    """The subjectAltName entries for ``names``: an address is written as IP and as DNS, because rsync-ssl checks the
    host name it was given (openssl s_client -verify_hostname), which only matches DNS entries, even for an address.
    Sorted and without duplicates: [('DNS', '198.18.3.12'), ('IP', '198.18.3.12'), ...]."""
    entries = set()
    for name in names:
        kind = name_kind(name)
        if kind == 'IP':
            address = str(ipaddress.ip_address(name))
            entries.add(('IP', address))
            entries.add(('DNS', address))
        elif kind == 'DNS':
            entries.add(('DNS', name.rstrip('.').lower()))
    return sorted(entries)


def check(settings, names=None):
    """Problems with the TLS settings (the role's variables without the prefix rsync_daemon_): transport, tls_port,
    port, tls_names, tls_days, tls_ca_cert, tls_ca_key (whether both are given; their content is judged on the
    controller by plugin_utils/tls_ca.py)."""
    names = names or {}

    def name(key):
        return names.get(key, 'rsync_daemon_' + key)

    problems = Problems()
    transport = settings.get('transport', 'tls')
    if transport not in TRANSPORTS:
        problems.add(name('transport'), transport, 'is not a transport', TRANSPORT_HELP)
        return list(problems)
    if transport == 'plain':
        return list(problems)
    port, plain_port = checks.read_port(settings.get('tls_port', 874)), checks.read_port(settings.get('port', 873))
    if port is None:
        problems.add(name('tls_port'), settings.get('tls_port'), 'is not a TCP port', PORT_HELP)
    elif port == plain_port:
        problems.add(name('tls_port'), port, 'is also %s, the plain daemon\'s port' % name('port'), PORT_HELP)
    days = read_whole(settings.get('tls_days', 180))
    if days is None or not RENEW_DAYS < days <= 3650:
        problems.add(name('tls_days'), settings.get('tls_days'), 'is not a validity in days (a certificate is renewed '
                     '%d days before its end)' % RENEW_DAYS, DAYS_HELP)
    extra = settings.get('tls_names') or []
    if not isinstance(extra, (list, tuple)):
        problems.add(name('tls_names'), extra, 'is not a list', NAME_HELP)
    else:
        for index, item in enumerate(extra):
            if name_kind(item) is None:
                problems.add('%s[%d]' % (name('tls_names'), index), item, 'is not a DNS name or an IP address',
                             NAME_HELP)
    cert, key = settings.get('tls_ca_cert') or '', settings.get('tls_ca_key') or ''
    if bool(cert) != bool(key):
        given, missing = ('tls_ca_cert', 'tls_ca_key') if cert else ('tls_ca_key', 'tls_ca_cert')
        problems.append('%s: is set but %s is empty (with transport %s): the collection signs the host certificates '
                        'with the CA, so it needs both; expected both (the CA certificate and its private key, PEM, '
                        'best from Ansible Vault), or neither (a CA of the collection\'s own in '
                        'rsync_daemon_tls_ca_dir on the controller).' % (name(given), name(missing), transport))
    elif cert and (not isinstance(cert, str) or not PEM_CERT_RE.search(cert)):
        problems.add(name('tls_ca_cert'), cert, 'is not a PEM certificate', 'the CA certificate in PEM form '
                     '(-----BEGIN CERTIFICATE----- ...)')
    return list(problems)


SERVICE_NAME = 'bdp-rsync-tls'
WRAP_PATH = '/etc/hosts.allow'
WRAP_BEGIN = '# BEGIN bdp.wan_tune rsync_daemon: who may reach the TLS daemon (stunnel service %s)' % SERVICE_NAME
WRAP_END = '# END bdp.wan_tune rsync_daemon'


def wrap_pattern(source):
    """A hosts_access(5) pattern for an address, a network or a host name pattern of rsyncd's hosts allow:
    198.18.3.0/24 -> 198.18.3.0/255.255.255.0, 2001:db8::/64 -> [2001:db8::]/64, ::1 -> [::1]."""
    try:
        network = ipaddress.ip_network(source, strict=False)
    except ValueError:
        return source
    if network.version == 4:
        if network.prefixlen == 32:
            return str(network.network_address)
        return '%s/%s' % (network.network_address, network.netmask)
    if network.prefixlen == 128:
        return '[%s]' % network.network_address
    return '[%s]/%d' % (network.network_address, network.prefixlen)


def wrap_block(sources):
    """The lines of the collection's block in /etc/hosts.allow: the listed sources may reach the TLS daemon, nobody
    else (hosts_options(5) ALLOW and DENY, so /etc/hosts.deny is not touched)."""
    patterns = []
    for source in sources:
        pattern = wrap_pattern(source)
        if pattern not in patterns:
            patterns.append(pattern)
    lines = [WRAP_BEGIN]
    if patterns:
        lines.append('%s: %s : ALLOW' % (SERVICE_NAME, ' '.join(patterns)))
    lines += ['%s: ALL : DENY' % SERVICE_NAME, WRAP_END]
    return '\n'.join(lines) + '\n'


def without_block(text):
    """``text`` without the collection's block (the rest as it was)."""
    if not text or WRAP_BEGIN not in text:
        return text or ''
    head, rest = text.split(WRAP_BEGIN, 1)
    tail = rest.split(WRAP_END, 1)[1] if WRAP_END in rest else ''
    return head + tail[1:] if tail.startswith('\n') else head + tail


def with_block(text, sources):
    """``text`` with the collection's block first (libwrap takes the first rule that matches, so an administrator's
    own ALL: ALL further down cannot open the daemon)."""
    return wrap_block(sources) + without_block(text)


def source_allowed(address, sources):
    """Whether ``address`` matches one of the address or network ``sources`` (host name patterns never do here)."""
    for source in sources:
        try:
            if ipaddress.ip_address(address) in ipaddress.ip_network(source, strict=False):
                return True
        except ValueError:
            continue
    return False


def render_stunnel(port, address='all', rsyncd_conf='/etc/rsyncd.conf', directory=DIR, header=''):
    """stunnel.conf for the TLS daemon: exec mode (rsync --daemon per connection), mutual TLS against the CA, TLS 1.3
    and TLS 1.2 with AEAD ciphers only, no compression, no renegotiation, no socket buffer options."""
    lines = [line.rstrip() for line in header.rstrip('\n').split('\n')] if header else []
    accept = str(port) if address in ('all', '', None) else '%s:%d' % (address, port)
    lines += [
        '# bdp.wan_tune.rsync_daemon: the rsync daemon over TLS (rsync-ssl(1), THE SERVER SIDE).',
        '# stunnel starts rsync --daemon for every connection; nothing listens on the plain port for it.',
        '# No socket = SO_SNDBUF/SO_RCVBUF: a fixed buffer would turn off the kernel\'s window autotuning.',
        'foreground = yes',
        'pid =',
        'syslog = yes',
        '',
        '[%s]' % SERVICE_NAME,
        '; who may connect: the block of bdp.wan_tune in %s, checked before the handshake' % WRAP_PATH,
        'libwrap = yes',
        'accept = %s' % accept,
        'exec = %s' % RSYNC,
        'execArgs = rsync --daemon --config=%s' % rsyncd_conf,
        'cert = %s/%s' % (directory, CERT_FILE),
        'key = %s/%s' % (directory, KEY_FILE),
        '; only clients with a certificate signed by the migration CA',
        'CAfile = %s/%s' % (directory, CA_FILE),
        'verifyChain = yes',
        'requireCert = yes',
        'sslVersionMin = TLSv1.2',
        'ciphersuites = %s' % CIPHERSUITES,
        'ciphers = %s' % CIPHERS_TLS12,
        'options = NO_COMPRESSION',
        'options = NO_RENEGOTIATION',
        'renegotiation = no',
        'TIMEOUTclose = 0',
    ]
    return '\n'.join(lines) + '\n'


def render_unit(directory=DIR, header='', stunnel=STUNNEL):
    """The systemd unit of the collection's own stunnel instance (any other stunnel service is left alone)."""
    lines = [line.rstrip() for line in header.rstrip('\n').split('\n')] if header else []
    lines += [
        '[Unit]',
        'Description=bdp.wan_tune: the rsync daemon over TLS (stunnel in front of rsync --daemon)',
        'Documentation=man:rsync-ssl(1) man:stunnel4(8)',
        'After=network-online.target',
        'Wants=network-online.target',
        '',
        '[Service]',
        'Type=simple',
        'ExecStart=%s %s/%s' % (stunnel, directory, CONF_FILE),
        'ExecReload=/bin/kill -HUP $MAINPID',
        'Restart=on-failure',
        'PrivateTmp=yes',
        '',
        '[Install]',
        'WantedBy=multi-user.target',
    ]
    return '\n'.join(lines) + '\n'


def client_env(ca, cert, key, port):
    """The environment rsync-ssl reads, as a shell prefix."""
    return 'RSYNC_SSL_CA_CERT=%s RSYNC_SSL_CERT=%s RSYNC_SSL_KEY=%s RSYNC_SSL_PORT=%d' % (ca, cert, key, port)


# ----------------------------------------------------------------------------- proving the TLS layer on the host
# The checks of the module rsync_daemon_check with its option tls: each one shows that a rule above holds (TLS only,
# the CA's client certificates only, stunnel's source rule) before any byte reaches rsync.

def plain_probe(host, port, timeout):
    """What a cleartext rsync client gets from ``port``: the bytes answered to an rsync greeting ('' when none)."""
    conn = socket.create_connection((host, port), timeout)
    try:
        conn.settimeout(min(timeout, 5))
        conn.sendall(b'@RSYNCD: 31.0 sha256 md5\n')
        data = b''
        try:
            while len(data) < 256:
                chunk = conn.recv(256)
                if not chunk:
                    break
                data += chunk
        except (OSError, socket.error):
            pass
    finally:
        conn.close()
    return data.decode('ascii', 'replace')


def handshake(module, host, port, identity, timeout):
    """openssl s_client's view of the handshake: {protocol, cipher, verified, peer, rc, detail}."""
    argv = [module.get_bin_path('timeout', required=True), str(timeout), module.get_bin_path('openssl', required=True),
            's_client', '-connect', '%s:%d' % ('[%s]' % host if ':' in host else host, port), '-brief',
            '-verify_return_error']
    for key, option in (('ca', '-CAfile'), ('cert', '-cert'), ('key', '-key')):
        if identity.get(key):
            argv += [option, identity[key]]
    rc, out, err = module.run_command(argv, data='')
    text = out + '\n' + err
    found = dict((key, (re.search(r'^%s:\s*(.+)$' % label, text, re.M) or [None, None])[1])
                 for key, label in (('protocol', 'Protocol version'), ('cipher', 'Ciphersuite'),
                                    ('verification', 'Verification'), ('peer', 'Peer certificate')))
    return {'protocol': found['protocol'], 'cipher': found['cipher'], 'peer': found['peer'],
            'verified': found['verification'] == 'OK' and rc == 0, 'rc': rc,
            'detail': ' '.join(err.split())[-300:]}


def stranger(module, directory):
    """A CA of nobody's and a client certificate it signed, in ``directory``: {ca, cert, key}."""
    openssl = module.get_bin_path('openssl', required=True)
    out = dict((key, os.path.join(directory, 'stranger-%s.pem' % key)) for key in ('ca', 'cert', 'key'))
    for argv in ([openssl, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
                  '-keyout', os.path.join(directory, 'stranger-ca-key.pem'), '-out', out['ca'], '-subj',
                  '/CN=bdp-wan-tune-stranger-ca', '-days', '1'],
                 [openssl, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
                  '-keyout', out['key'], '-out', out['cert'], '-subj', '/CN=bdp-wan-tune-stranger', '-days', '1',
                  '-CA', out['ca'], '-CAkey', os.path.join(directory, 'stranger-ca-key.pem')]):
        rc, dummy, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg='openssl could not make the test CA: %s' % ' '.join(err.split())[:300])
    return out


def unlisted(host, port, tls, timeout, source='127.0.0.2'):
    """(refused, detail) of a TLS client with a valid certificate that connects from ``source``."""
    context = ssl.create_default_context(cafile=tls['ca'])
    context.check_hostname = False
    context.load_cert_chain(tls['cert'], tls['key'])
    conn = socket.socket(socket.AF_INET6 if ':' in source else socket.AF_INET, socket.SOCK_STREAM)
    conn.settimeout(min(timeout, 10))
    try:
        conn.bind((source, 0))
        conn.connect((host, port))
        wrapped = context.wrap_socket(conn)
        try:
            wrapped.sendall(b'')
            data = wrapped.recv(64)
        finally:
            wrapped.close()
        if data.startswith(b'@RSYNCD'):
            return False, 'from %s: the rsync daemon answered %r' % (source, data[:20])
        return True, 'from %s: no rsync greeting (%r)' % (source, data[:20])
    except (OSError, socket.error, ssl.SSLError) as exc:
        return True, 'from %s: %s' % (source, exc)
    finally:
        conn.close()


def closed(host, port, timeout):
    try:
        socket.create_connection((host, port), min(timeout, 5)).close()
        return False, 'port %d accepts a connection' % port
    except (OSError, socket.error) as exc:
        return True, 'port %d: %s' % (port, exc)


def tls_checks(module, params, users, upload):
    """The checks of the TLS layer, each before any rsync exchange, of the module rsync_daemon_check (``params``):
    ([{check, module, passed, detail}], the handshake).  ``users``: {user: password} from the secrets file;
    ``upload(module_name, user, file_name, password, identity)``: (rc, output) of an rsync-ssl upload of a file as
    ``file_name`` with the client identity {ca, cert, key}."""
    tls, host, timeout = params['tls'], params['host'], params['timeout']
    results = []

    def add(check, passed, detail):
        results.append({'check': check, 'module': None, 'passed': passed, 'detail': detail})

    shake = handshake(module, host, tls['port'], tls, timeout)
    add('TLS handshake verified', shake['verified'] and shake['protocol'] in ('TLSv1.3', 'TLSv1.2'),
        '%s, %s, verification %s, peer %s%s' % (shake['protocol'], shake['cipher'],
                                                'OK' if shake['verified'] else 'failed', shake['peer'],
                                                '' if shake['verified'] else ': ' + shake['detail']))
    try:
        answer = plain_probe(host, tls['port'], timeout)
        add('plaintext to the TLS port gets no rsync answer', '@RSYNCD' not in answer,
            'answer: %r' % answer[:60] if answer else 'no answer')
    except (OSError, socket.error) as exc:
        add('plaintext to the TLS port gets no rsync answer', False, 'no connection: %s' % exc)
    if host == '127.0.0.1' and not source_allowed('127.0.0.2', tls['sources']):
        passed, detail = unlisted(host, tls['port'], tls, timeout)
        add('an unlisted source is refused before the handshake', passed, detail)
    if params['tls'].get('plain_closed'):
        passed, detail = closed(host, params['port'], timeout)
        add('nothing accepts on the plain port', passed, detail)
    target = next((m for m in params['modules'] if not m.get('read_only', True)), (params['modules'] or [{}])[0])
    if not target.get('name'):
        return results, shake
    user = next(iter(target.get('auth_users') or []), None)
    password = users.get(user)
    directory = tempfile.mkdtemp(prefix='bdp-wan-tune-tls-')
    try:
        other = stranger(module, directory)
        for check, identity in (('a client that trusts another CA fails', dict(tls, ca=other['ca'])),
                                ('a client without a certificate is refused', dict(tls, cert=None, key=None)),
                                ('a client with a certificate of another CA is refused',
                                 dict(tls, cert=other['cert'], key=other['key']))):
            name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
            rc, out = upload(target['name'], user, name, password, identity)
            landed = os.path.lexists(os.path.join(target.get('path', '/nonexistent'), name))
            if landed:
                os.unlink(os.path.join(target['path'], name))
            # refused in the handshake: rsync never saw the daemon's greeting (no @ERROR from rsyncd)
            add(check, rc != 0 and not landed and '@ERROR' not in out and 'did not see server greeting' in out,
                'rsync-ssl exit %d%s: %s' % (rc, ', but the file arrived' if landed else '', out[-300:] or 'no output'))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return results, shake
