# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rsync daemon over TLS: its layout, the rules of its inputs, and the checks that prove it on the host.

Shared by the filters (``rsync_daemon_problems``, ``rsync_tls_layout``), the action plugin ``validate_inputs`` (on
the controller, before any host changes) and the modules ``rsync_daemon_tls`` and ``rsync_daemon_check`` (on the
host).  The keys, requests and certificates themselves are made by community.crypto (roles/rsync_daemon/tasks).

The design, as rsync-ssl(1) "THE SERVER SIDE" describes it: stunnel accepts TLS on the TLS port (874) and starts rsync
for each connection in exec mode, so with transport ``tls`` nothing listens on 873.  stunnel starts rsync in
daemon-over-remote-shell mode (``rsync --server --daemon .``) and sets ``REMOTE_HOST`` to the client's address, which
rsync reads in that mode (clientname.c), so every module's own ``hosts allow`` holds for the real source (measured:
a module listing only 127.0.0.1 refuses 127.0.0.2 behind stunnel).  In front of that, two gates before any byte
reaches rsync: the source gate, a table of the collection's own in nftables (``inet bdp_wan_tune``, loaded by the
unit before stunnel starts) that admits the union of the modules' sources to the TLS port and resets every other
connection to it (gate_sets(), nftables_problem()), and the client's certificate, which must chain to the
migration's CA and carry clientAuth (``verifyChain``, ``requireCert``; OpenSSL checks the purpose).  Earlier versions
gated the sources with stunnel's libwrap and a block in /etc/hosts.allow, which the role now takes out.

One receiver of one migration, one trust domain: the CA lives on the receiver that serves the migration, root's
and 0600 in ``<state_dir>/rsync-tls-ca/<migration>/`` (nothing of it on the controller, which AWX starts afresh for
every job), or is given in variables; a sender keeps its files for each migration and receiver in
``<client_dir>/<migration>/<receiver>/``, receivers hold serverAuth-only certificates, senders clientAuth-only ones,
and a receiver proves its own daemon with a client identity of its own (``self.crt``).
"""

import hashlib
import ipaddress
import os
import re
import shlex
import shutil
import socket
import ssl
import tempfile
import uuid

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks, files, ipnet
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import read_whole
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer.rsyncd import PORT, TLS_PORT, TRANSPORT, Problems

# The TLS settings (the role's variables rsync_daemon_<key>) that check() and plugin_utils/tls_ca.py problems() read,
# besides the daemon's port (rsyncd.SETTINGS).
SETTINGS = ('transport', 'tls_port', 'tls_names', 'tls_days', 'tls_ca_cert', 'tls_ca_key', 'tls_ca_dir',
            'tls_migration', 'tls_senders')
TRANSPORTS = ('tls', 'plain', 'both')
TRANSPORT_HELP = ('tls (default: stunnel on the TLS port in front of rsync, nothing on the plain port), plain (the '
                  'cleartext daemon only) or both')
# TLS 1.3 suites, and for TLS 1.2 only ECDHE with AEAD ciphers (no CBC, no RSA key exchange).
CIPHERSUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256'
CIPHERS_TLS12 = ('ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:'
                 'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256')

# ----------------------------------------------------------------------------- the layout, the one place of it
# The role (vars/main.yml, through the filter rsync_tls_layout), its rollback, the modules, the transfer lab and the
# docs (docs/migration.md, checked by tests/unit/plugins/module_utils/transfer/test_rsynctls_layout.py) read these.
SERVICE_NAME = 'bdp-rsync-tls'
SERVICE = SERVICE_NAME + '.service'
UNIT_PATH = '/etc/systemd/system/' + SERVICE
DIR = '/etc/bdp-wan-tune/rsync-tls'                     # the receiver's files
CLIENT_DIR = '/etc/bdp-wan-tune/rsync-tls-client'       # a sender's files: <migration>/<receiver>/ below it
STATE_DIR = files.STATE_DIR                             # the receiver's CAs: rsync-tls-ca/<migration>/ below it
CA_SUBDIR = 'rsync-tls-ca'
# Earlier versions kept the CAs on the controller, one directory per migration below this one: a run that finds the
# migration's CA there (and none on the receiver) moves it to the receiver, so that nothing is issued anew.
CONTROLLER_CA_DIR = '~/.bdp_wan_tune/rsync_tls_ca'
# Where earlier versions (0.3 and 0.4) kept the source gate: a block in the hosts_access(5) file of stunnel's libwrap,
# which the role takes out (the module rsync_daemon_tls still refuses broken marks there before anything changes).
WRAP_PATH = '/etc/hosts.allow'
# The source gate: a table of nftables of the collection's own, its two sets and its chain (templates/gate.nft.j2).
GATE_TABLE = 'bdp_wan_tune'
GATE_FAMILY = 'inet'
NFT = '/usr/sbin/nft'                                   # the nftables package's program, on every family
# The host firewall (roles/rsync_daemon/tasks/tls_firewall.yml): in the state directory, the record of the rules the
# role added and copies of the files the firewall rewrites when they change, which state absent puts back.
FIREWALL_RECORD = 'rsync_daemon_firewall.json'
FIREWALL_KEEP = 'rsync_daemon_firewall'
FIREWALL_FILES = {'firewalld': ['/etc/firewalld/zones/<zone>.xml', '/etc/firewalld/zones/<zone>.xml.old'],
                  'ufw': ['/etc/ufw/user.rules', '/etc/ufw/user6.rules']}
# The receiver's files in DIR: the trust anchor, its server certificate and key, the stunnel configuration, and the
# client identity of its own self-check.  A sender's files in <client_dir>/<migration>/<receiver>: ca, cert, key
# (earlier versions: in <client_dir>/<migration>, which the module rsync_daemon_tls copies into the receiver's).
SERVER_FILES = {'ca': 'ca.crt', 'cert': 'host.crt', 'key': 'host.key', 'conf': 'stunnel.conf',
                'self_cert': 'self.crt', 'self_key': 'self.key', 'gate': 'gate.nft'}
CLIENT_FILES = {'ca': 'ca.crt', 'cert': 'host.crt', 'key': 'host.key'}
CA_FILES = {'cert': 'ca.crt', 'key': 'ca.key'}
# Days before the end of a certificate's validity at which it is renewed (and a CA is refused).
RENEW_DAYS = 30
# The certificates' validity in days: the default and the most.
DAYS, DAYS_MAX = 180, 3650
CA_DAYS = 825
# Behind stunnel rsync runs in daemon-over-remote-shell mode, which writes its messages from before the transfer (a
# write to a read-only module, a chroot that fails) to stderr, as if ssh carried it back; stunnel writes it to the
# journal instead.  A sender that passes this remote option gets them through rsync's protocol, as from a plain daemon
# (measured with rsync 3.2.7: 'ERROR: module is read only' reaches the client only with it).
SERVER_MESSAGES = '-M--no-msgs2stderr'


def path_name(name, unique=True):
    """An inventory name as one path component (and a systemd unit name's part): letters, digits, _ . - kept, any
    other character a -, never . or .. alone.  ``unique``: a name that had to change (or that is the name of a file
    of a sender's migration directory) gets 8 hex digits of its hash, so that two names never share a directory."""
    text = re.sub(r'[^A-Za-z0-9_.-]', '-', str(name))
    text = '_' + text if text.strip('.') == '' else text
    if unique and (text != name or text in CLIENT_FILES.values()):
        text += '-' + hashlib.sha256(str(name).encode('utf-8')).hexdigest()[:8]
    return text


def client_dir(parent, migration, receiver):
    """A sender's directory of the identity it holds for ``receiver``'s daemon in ``migration``."""
    return os.path.join(parent, migration, path_name(receiver))


# The sender's TLS client: plain rsync with RSYNC_CONNECT_PROG (rsync 3.0 and later; rsync runs it with /bin/sh -c,
# after putting the host of the rsync:// URL where %H stands), which runs openssl s_client - what rsync-ssl
# --type=openssl runs, without rsync-ssl, which EL 8's rsync 3.1.3 lacks and whose RSYNC_SSL_KEY EL 9's 3.2.3 lacks.
# Each option is in OpenSSL 1.1.1 (EL 8) and 3.x: -verify_return_error makes a failed verification end the handshake
# (it also turns on SSL_VERIFY_PEER), -verify_hostname checks the URL's host against the server certificate's names,
# -tls1_3 holds the client to TLS 1.3 (the highest there is: TLS 1.3 at least), -quiet implies -ign_eof.
CONNECT_PROG = 'RSYNC_CONNECT_PROG'
S_CLIENT = ('openssl', 's_client', '-quiet', '-verify_quiet', '-verify_return_error', '-tls1_3')


def connect_program(identity, port):
    """The command rsync runs to reach a TLS daemon on ``port`` as a client with ``identity`` {ca, cert, key} (file
    paths; a missing one leaves its option out), as RSYNC_CONNECT_PROG takes it.  Every path is quoted for the shell
    rsync runs it with, and its % doubled (rsync reads %H and %% in it).  The host (%H, what rsync puts there) goes in
    single quotes: -connect takes it in brackets, as an IPv6 address must be (OpenSSL refuses ::1:874 as ambiguous,
    and takes any name in brackets), and unquoted a bracket is a shell pattern."""
    words = list(S_CLIENT)
    for key, option in (('ca', '-CAfile'), ('cert', '-cert'), ('key', '-key')):
        if identity.get(key):
            words += [option, shlex.quote(str(identity[key])).replace('%', '%%')]
    return ' '.join(words + ["-servername '%%H' -verify_hostname '%%H' -connect '[%%H]:%d'" % int(port)])


def shell_word(text):
    """``text`` as one word for a shell (a command to copy): in double quotes where nothing in it is special there."""
    return '"%s"' % text if not re.search(r'["$`\\!]', text) else shlex.quote(text)


def client_command(identity, port):
    """The start of the TLS client's command and its environment, the one place of both: (argv, env) for a client
    with the identity {ca, cert, key} (file paths) to a TLS daemon on ``port``: rsync with SERVER_MESSAGES, and
    RSYNC_CONNECT_PROG (connect_program).  The migration's runner (through its config; migrate_run builds it again
    for the run's own copy of the identity) and the daemon's self-check (rsync_daemon_check) run it."""
    return ['rsync', SERVER_MESSAGES], {CONNECT_PROG: connect_program(identity, port)}


def layout(migration, client_parent=CLIENT_DIR, controller_ca_dir=CONTROLLER_CA_DIR, port=TLS_PORT, receiver='',
           state_dir=STATE_DIR):
    """Every path of the TLS daemon of ``receiver`` for one migration: {migration, name (the stunnel and libwrap
    service), service, unit, wrap, server: {dir, ca, cert, key, conf, self_cert, self_key}, client: {parent, dir, ca,
    cert, key} (a sender's files for this receiver), ca: {dir, cert, key} (the migration's CA on the receiver),
    controller_ca: {dir, cert, key} (where earlier versions kept it, on the controller), command, env, env_vars,
    ciphersuites, ciphers, ca_days, server_messages (the rsync option that brings the daemon's messages to the
    sender), marks (of the block earlier versions kept in /etc/hosts.allow), gate: {family, table, nft, rules} (the
    source gate's table in nftables, the program and the file that loads it), firewall: {record, keep, files} (the
    record of the rules the role added to the host firewall, the directory of the copies of that firewall's files,
    and those files for each firewall; <zone> stands for firewalld's default zone)}.  ``command`` and ``env_vars`` are client_command()'s for a
    sender's identity, ``env`` the environment as a shell prefix."""
    client = client_dir(client_parent, migration, receiver)
    authority = os.path.join(state_dir, CA_SUBDIR, migration)
    before = os.path.join(os.path.expanduser(controller_ca_dir), migration)
    out = {'migration': migration, 'name': SERVICE_NAME, 'service': SERVICE, 'unit': UNIT_PATH, 'wrap': WRAP_PATH,
           'server': dict([('dir', DIR)] + [(key, os.path.join(DIR, name)) for key, name in SERVER_FILES.items()]),
           'client': dict([('parent', client_parent), ('dir', client)]
                          + [(key, os.path.join(client, name)) for key, name in CLIENT_FILES.items()]),
           'ca': dict([('dir', authority)] + [(key, os.path.join(authority, name)) for key, name in CA_FILES.items()]),
           'controller_ca': dict([('dir', before)]
                                 + [(key, os.path.join(before, name)) for key, name in CA_FILES.items()])}
    out['command'], out['env_vars'] = client_command(out['client'], port)
    out['env'] = ' '.join('%s=%s' % (key, shell_word(value)) for key, value in sorted(out['env_vars'].items()))
    out.update(ciphersuites=CIPHERSUITES, ciphers=CIPHERS_TLS12, ca_days=CA_DAYS, server_messages=SERVER_MESSAGES,
               marks={'begin': WRAP_MARK_BEGIN, 'end': WRAP_MARK_END},
               gate={'family': GATE_FAMILY, 'table': GATE_TABLE, 'nft': NFT,
                     'rules': os.path.join(DIR, SERVER_FILES['gate'])},
               firewall={'record': os.path.join(state_dir, FIREWALL_RECORD),
                         'keep': os.path.join(state_dir, FIREWALL_KEEP), 'files': FIREWALL_FILES})
    return out


# ----------------------------------------------------------------------------- the migration's name
MIGRATION_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
MIGRATION_HELP = ('a name of 1 to 64 letters, digits, . _ - starting with a letter or digit, such as dc1-to-dc2; '
                  'empty: derived from the inventory\'s path')


def default_migration(sources):
    """The migration's name when none is given: the inventory's file or directory name and 8 hex digits of the
    hash of every inventory source's absolute path, such as 'dc1-to-dc2-3f09a1c4', so that two inventories run from
    one workstation never share a CA, and a re-run of one inventory finds its own."""
    texts = sorted(os.path.abspath(str(item)) if os.path.exists(str(item)) else str(item) for item in sources or [])
    digest = hashlib.sha256('\n'.join(texts).encode('utf-8')).hexdigest()[:8]
    stem = os.path.splitext(os.path.basename(texts[0].rstrip('/')))[0] if texts else ''
    stem = re.sub(r'[^A-Za-z0-9._-]+', '-', stem).strip('._-')[:40]
    return '%s-%s' % (stem or 'inventory', digest)


def migration_name(given, sources):
    """The migration's name: ``given`` when set, else default_migration(sources)."""
    return given if given else default_migration(sources)


# ----------------------------------------------------------------------------- how long a certificate is issued for
ASN1_TIME = '%Y%m%d%H%M%SZ'      # as community.crypto's x509_certificate_info gives not_after, and takes it back


class ValidityError(ValueError):
    """The CA cannot issue a certificate worth having."""


def validity(cert_not_after, ca_not_after, days, now=None):
    """{renew, not_after, capped, ca_days_left} for a host's certificate: ``renew`` when the present one
    (``cert_not_after``, an ASN.1 time, or None when the host has none) ends within RENEW_DAYS; ``not_after``, the
    end of a certificate issued now: ``days`` from now, but never after the CA (``capped`` then).  A CA that ends
    within RENEW_DAYS raises ValidityError: every certificate it could sign would be renewed again at the next run."""
    import datetime
    now = now or datetime.datetime.now(datetime.timezone.utc)

    def read(text):
        return datetime.datetime.strptime(text, ASN1_TIME).replace(tzinfo=datetime.timezone.utc)

    ca_end = read(ca_not_after)
    ca_left = (ca_end - now).days
    if ca_end - now <= datetime.timedelta(days=RENEW_DAYS):
        raise ValidityError('the migration CA ends on %s, in %d days: a certificate it signs now would be renewed '
                            'again at every run. Make a new CA for the migration (empty its directory, or give new '
                            'rsync_daemon_tls_ca_cert and rsync_daemon_tls_ca_key), then run again.'
                            % (ca_end.date(), max(ca_left, 0)))
    wanted = now + datetime.timedelta(days=int(days))
    end = min(wanted, ca_end)
    renew = cert_not_after is not None and read(cert_not_after) - now <= datetime.timedelta(days=RENEW_DAYS)
    return {'renew': renew, 'not_after': end.strftime(ASN1_TIME), 'capped': end < wanted, 'ca_days_left': ca_left}


# ----------------------------------------------------------------------------- names in certificates
DNS_RE = re.compile(r'^(?=.{1,253}$)([A-Za-z0-9_*]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)'
                    r'(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$')
NAME_HELP = 'a list of DNS names or IP addresses the senders use to reach the host, such as [rsync-b.dc2.example.org, 198.18.3.12]'
PORT_HELP = checks.port_help(default=TLS_PORT, extra=', other than rsync_daemon_port')
DAYS_HELP = 'a whole number of days from %d to %d (default %d)' % (RENEW_DAYS + 1, DAYS_MAX, DAYS)
PEM_CERT_RE = re.compile(r'-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----')
SENDERS_HELP = 'a list of inventory host names (the hosts that send to this receiver), or [] for its wan_peers'


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
    """The subjectAltName entries for ``names`` as community.crypto's openssl_csr takes them: an address is written
    as IP and as DNS, because the TLS client checks the host name it was given (openssl s_client -verify_hostname), which
    only matches DNS entries, even for an address.  Sorted, without duplicates and without what is neither a name nor
    an address: ['DNS:198.18.3.12', 'DNS:rsync-b', 'IP:198.18.3.12', ...]."""
    entries = set()
    for name in names:
        kind = name_kind(name)
        if kind == 'IP':
            address = str(ipaddress.ip_address(name))
            entries.add('IP:' + address)
            entries.add('DNS:' + address)
        elif kind == 'DNS':
            entries.add('DNS:' + name.rstrip('.').lower())
    return sorted(entries)


def check(settings, names=None, inventory=None):
    """Problems with the TLS settings (the role's variables without the prefix rsync_daemon_): transport, tls_port,
    port, tls_names, tls_days, tls_ca_cert, tls_ca_key (whether both are given; their content is judged on the
    controller by plugin_utils/tls_ca.py), tls_migration, and tls_senders against ``inventory`` (the inventory's host
    names, when known)."""
    names = names or {}

    def name(key):
        return names.get(key, 'rsync_daemon_' + key)

    problems = Problems()
    transport = settings.get('transport', TRANSPORT)
    if transport not in TRANSPORTS:
        problems.add(name('transport'), transport, 'is not a transport', TRANSPORT_HELP)
        return list(problems)
    if transport == 'plain':
        return list(problems)
    port, plain_port = checks.read_port(settings.get('tls_port', TLS_PORT)), checks.read_port(settings.get('port', PORT))
    if port is None:
        problems.add(name('tls_port'), settings.get('tls_port'), 'is not a TCP port', PORT_HELP)
    elif port == plain_port:
        problems.add(name('tls_port'), port, 'is also %s, the plain daemon\'s port' % name('port'), PORT_HELP)
    days = read_whole(settings.get('tls_days', DAYS))
    if days is None or not RENEW_DAYS < days <= DAYS_MAX:
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
    given = settings.get('tls_migration') or ''
    if given and (not isinstance(given, str) or not MIGRATION_RE.match(given)):
        problems.add(name('tls_migration'), given, 'is not a migration name', MIGRATION_HELP)
    senders = settings.get('tls_senders') or []
    if not isinstance(senders, (list, tuple)):
        problems.add(name('tls_senders'), senders, 'is not a list', SENDERS_HELP)
    elif inventory is not None:
        for index, item in enumerate(senders):
            if item not in inventory:
                problems.add('%s[%d]' % (name('tls_senders'), index), item, 'is not a host of the inventory, so it '
                             'could get no client certificate', SENDERS_HELP)
    cert, key = settings.get('tls_ca_cert') or '', settings.get('tls_ca_key') or ''
    if bool(cert) != bool(key):
        given, missing = ('tls_ca_cert', 'tls_ca_key') if cert else ('tls_ca_key', 'tls_ca_cert')
        problems.append('%s: is set but %s is empty (with transport %s): the collection signs the host certificates '
                        'with the CA, so it needs both; expected both (the CA certificate and its private key, PEM, '
                        'best from Ansible Vault), or neither (a CA the receiver makes and keeps).'
                        % (name(given), name(missing), transport))
    elif cert and (not isinstance(cert, str) or not PEM_CERT_RE.search(cert)):
        problems.add(name('tls_ca_cert'), cert, 'is not a PEM certificate', 'the CA certificate in PEM form '
                     '(-----BEGIN CERTIFICATE----- ...)')
    return list(problems)


# ----------------------------------------------------------------------------- the senders of a play's receivers
def sender_identities(receivers, predict=()):
    """The client identities to issue for the senders of ``receivers`` (each {receiver, senders, migration, client,
    ca, days, state_dir}, as the role keeps it on every receiver): one per sender and receiver, in the sender's
    directory for that receiver (each receiver signs with its own CA).  ``predict``: senders where check mode cannot
    read or make anything yet."""
    identities = []
    for receiver in receivers:
        for sender in receiver['senders']:
            identities.append({
                'host': sender, 'receiver': receiver['receiver'], 'migration': receiver['migration'],
                'key': receiver['client']['key'], 'cert': receiver['client']['cert'],
                'anchor': receiver['client']['ca'], 'dir': receiver['client']['dir'],
                'parent': receiver['client']['parent'], 'common_name': sender, 'names': [], 'usage': 'clientAuth',
                'ca': receiver['ca'], 'days': receiver['days'], 'predict': sender in predict,
                'state_dir': receiver['state_dir']})
    return sorted(identities, key=lambda item: (item['host'], item['migration'], item['receiver']))


# ----------------------------------------------------------------------------- the source gate: nftables
def gate_sets(sources):
    """The elements of the gate's two sets for the modules' ``sources`` (addresses and networks as rsyncd's hosts
    allow takes them, module_utils/common/ipnet.py): {'ipv4': [...], 'ipv6': [...]}, each collapsed (an interval set
    of nftables refuses overlapping elements: 198.18.3.0/24 and 198.18.3.11 become 198.18.3.0/24) and written as nft
    reads them (an address alone, a network in CIDR form)."""
    networks = {4: [], 6: []}
    for source in sources:
        network = ipnet.parse_network(source)
        networks[network.version].append(network)
    out = {}
    for version, key in ((4, 'ipv4'), (6, 'ipv6')):
        out[key] = [str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net)
                    for net in ipaddress.collapse_addresses(networks[version])]
    return out


FIREWALL_COMMENT = 'bdp.wan_tune rsync_daemon TLS'


def firewall_rules(sources, port):
    """The host firewall's rules for the TLS ``port``: one per source of gate_sets() that is not a loopback address
    (the host's own self-check never passes a host firewall), as [{source, family, port, rich_rule, comment}]:
    ``rich_rule`` for ansible.posix.firewalld, ``source``, ``port`` and ``comment`` for community.general.ufw."""
    port = int(port)
    rules = []
    for family, elements in sorted(gate_sets(sources).items()):
        for source in elements:
            if ipaddress.ip_network(source).is_loopback:
                continue
            rules.append({'source': source, 'family': family, 'port': port, 'comment': FIREWALL_COMMENT,
                          'rich_rule': 'rule family="%s" source address="%s" port port="%d" protocol="tcp" accept'
                                       % (family, source, port)})
    return rules


NFNL_SUBSYS_NFTABLES, NFT_MSG_GETTABLES = 10, 1
NLM_F_REQUEST, NLM_F_DUMP, NLMSG_ERROR, NLMSG_DONE = 0x1, 0x300, 2, 3


def nftables_problem(timeout=5):
    """Why root cannot use nftables on this host, or None: the kernel's answer to the request nft itself sends first
    (a dump of the tables over netfilter's netlink socket), which needs nf_tables in the kernel and CAP_NET_ADMIN in
    the host's network namespace (an unprivileged container has neither).  Asked without the nft program, so that a
    host that cannot hold the gate is refused before its package is installed."""
    import struct
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)        # NETLINK_NETFILTER
    except (OSError, AttributeError) as exc:
        return 'netfilter\'s netlink socket cannot be opened (%s)' % exc
    try:
        sock.settimeout(timeout)
        sock.bind((0, 0))
        # nlmsghdr (length, type, flags, seq, port) and nfgenmsg (family AF_UNSPEC, version 0, resource id 0)
        sock.send(struct.pack('=IHHII', 20, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLES,
                              NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + struct.pack('=BBH', 0, 0, 0))
        while True:
            data = sock.recv(65536)
            if not data:
                return 'the kernel closed netfilter\'s netlink socket without an answer'
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from('=IH', data, offset)
                if kind == NLMSG_DONE:
                    return None
                if kind == NLMSG_ERROR:
                    error = struct.unpack_from('=i', data, offset + 16)[0]
                    return None if error == 0 else 'the kernel refuses nftables requests: %s' % os.strerror(-error)
                offset += max((length + 3) & ~3, 16)
    except (OSError, socket.error) as exc:
        return 'the kernel gave no answer to an nftables request (%s)' % exc
    finally:
        sock.close()


def gate_problem(host, problem):
    """The refusal of a receiver whose kernel cannot hold the gate (``problem``: nftables_problem()'s answer)."""
    return ('rsync_daemon_transport (tls or both) on %s: %s, and the TLS daemon\'s source gate is a table of nftables '
            '(inet %s; it admits only the modules\' hosts_allow to the TLS port). Expected a host whose root may use '
            'nftables: a kernel with nf_tables (CONFIG_NF_TABLES and CONFIG_NF_TABLES_INET, as every kernel of '
            'Debian 10+, Ubuntu 20.04+ and EL 8+) and CAP_NET_ADMIN (a VM or a host, or a container with '
            '--cap-add NET_ADMIN); the role installs the nftables package. Or rsync_daemon_transport=plain on a '
            'private circuit, a VPN or IPsec. Nothing was changed on this host.'
            % (host, problem, GATE_TABLE))


# The marks of the block earlier versions wrote into /etc/hosts.allow with ansible.builtin.blockinfile (marker
# "# {mark}"); the module rsync_daemon_tls refuses a file whose marks are broken before anything changes, because
# blockinfile's state absent would take every line between an END and a later BEGIN.
WRAP_MARK_BEGIN = 'BEGIN bdp.wan_tune rsync_daemon: who may reach the TLS daemon (stunnel service %s)' % SERVICE_NAME
WRAP_MARK_END = 'END bdp.wan_tune rsync_daemon'


def wrap_problem(text, path=WRAP_PATH):
    """Why the collection's block in ``text`` cannot be edited safely (a mark without its partner, marks out of
    order, two blocks), or None."""
    lines = (text or '').split('\n')
    begins = [index for index, line in enumerate(lines) if line == '# ' + WRAP_MARK_BEGIN]
    ends = [index for index, line in enumerate(lines) if line == '# ' + WRAP_MARK_END]
    if not begins and not ends:
        return None
    if len(begins) == 1 and len(ends) == 1 and begins[0] < ends[0]:
        return None
    return ('%s holds the marks of the collection\'s block out of order (BEGIN on line(s) %s, END on line(s) %s); '
            'expected one "# %s" line before one "# %s" line. Nothing was changed: mend or remove the marks by hand, '
            'then run again.' % (path, ', '.join(str(i + 1) for i in begins) or 'none',
                                 ', '.join(str(i + 1) for i in ends) or 'none', WRAP_MARK_BEGIN, WRAP_MARK_END))


def source_allowed(address, sources):
    """Whether ``address`` matches one of the address or network ``sources`` (host name patterns never do here)."""
    for source in sources:
        try:
            if ipaddress.ip_address(address) in ipaddress.ip_network(source, strict=False):
                return True
        except ValueError:
            continue
    return False


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


def stranger(directory):
    """A throwaway CA of nobody's and a clientAuth certificate it signed, written to ``directory`` (the keys 0600):
    {ca, cert, key}.  Made with the cryptography library that community.crypto's modules use on the host."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    import datetime
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)

    def issue(subject, key, issuer, issuer_key, ca):
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(start)
                   .not_valid_after(start + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'bdp-wan-tune-stranger-ca')])
    ca_cert = issue(ca_name, ca_key, ca_name, ca_key, True)
    leaf = issue(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'bdp-wan-tune-stranger')]), leaf_key, ca_name,
                 ca_key, False)
    out = dict((key, os.path.join(directory, 'stranger-%s.pem' % key)) for key in ('ca', 'cert', 'key'))
    for path, data in ((out['ca'], ca_cert.public_bytes(serialization.Encoding.PEM)),
                       (out['cert'], leaf.public_bytes(serialization.Encoding.PEM)),
                       (out['key'], leaf_key.private_bytes(serialization.Encoding.PEM,
                                                           serialization.PrivateFormat.PKCS8,
                                                           serialization.NoEncryption()))):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(handle, 'wb') as stream:
            stream.write(data)
    return out


def _tls_client(host, port, identity, timeout, source=None):
    """A connected TLS client socket with the client identity {ca, cert, key}, bound to ``source`` when given."""
    context = ssl.create_default_context(cafile=identity['ca'])
    context.check_hostname = False
    context.load_cert_chain(identity['cert'], identity['key'])
    family = socket.AF_INET6 if ':' in (source or host) else socket.AF_INET
    conn = socket.socket(family, socket.SOCK_STREAM)
    conn.settimeout(min(timeout, 10))
    try:
        if source:
            conn.bind((source, 0))
        conn.connect((host, port))
        return context.wrap_socket(conn)
    except BaseException:
        conn.close()
        raise


def _line(conn):
    data = b''
    while not data.endswith(b'\n') and len(data) < 512:
        chunk = conn.recv(1)
        if not chunk:
            break
        data += chunk
    return data.decode('ascii', 'replace').strip()


def module_answer(host, port, identity, module_name, timeout, source=None):
    """What rsyncd answers a TLS client with a valid certificate (bound to ``source``) that asks for ``module_name``:
    (greeted, answer), such as (True, '@RSYNCD: AUTHREQD ...'), (True, '@ERROR: access denied to m2 from ...'), or
    (False, the error) when no rsync greeting came (refused before or in the handshake)."""
    try:
        wrapped = _tls_client(host, port, identity, timeout, source)
    except (OSError, socket.error, ssl.SSLError) as exc:
        return False, str(exc)
    try:
        greeting = _line(wrapped)
        if not greeting.startswith('@RSYNCD:'):
            return False, 'no rsync greeting (%r)' % greeting[:40]
        wrapped.sendall(b'@RSYNCD: 31.0\n' + module_name.encode('utf-8') + b'\n')
        return True, _line(wrapped)
    except (OSError, socket.error, ssl.SSLError) as exc:
        return False, str(exc)
    finally:
        wrapped.close()


def denied(answer):
    """Whether rsyncd's answer refuses the client's address (hosts allow / hosts deny) for a module that exists: with
    ``list = no`` (the role's setting) rsync answers "Unknown module" to a client it denies, so that the module's
    existence is not given away, and logs "rsync denied on module ... from ..."."""
    return answer.startswith('@ERROR') and ('access denied' in answer or 'Unknown module' in answer)


def unlisted(host, port, tls, timeout, source='127.0.0.2'):
    """(refused, detail) of a TLS client with a valid certificate that connects from ``source``: refused when no
    rsync greeting comes (the source gate resets the connection before the handshake)."""
    greeted, answer = module_answer(host, port, tls, '', timeout, source)
    if greeted:
        return False, 'from %s: the rsync daemon answered' % source
    return True, 'from %s: %s' % (source, answer)


def closed(host, port, timeout):
    try:
        socket.create_connection((host, port), min(timeout, 5)).close()
        return False, 'port %d accepts a connection' % port
    except (OSError, socket.error) as exc:
        return True, 'port %d: %s' % (port, exc)


def refused_in_handshake(rc, out, landed):
    """Whether an upload through the TLS client (rc, its output, whether the file arrived) was refused in the
    handshake: it failed, nothing arrived, rsyncd said nothing (no @ERROR), and either rsync saw no greeting or
    openssl, the client's connect program, said why the handshake failed.  Which of rsync's words come depends on
    when the connect program ends: "did not see server greeting" (the connection's end), or "safe_read failed ...
    Connection reset by peer" (it ended with rsync's own greeting unread, measured with rsync 3.2.7)."""
    return (rc != 0 and not landed and '@ERROR' not in out
            and ('did not see server greeting' in out or 'SSL routines' in out))


def tls_checks(module, params, users, upload):
    """The checks of the TLS layer, each before any rsync exchange, of the module rsync_daemon_check (``params``):
    ([{check, module, passed, detail}], the handshake).  ``users``: {user: password} from the secrets file;
    ``upload(module_name, user, file_name, password, identity)``: (rc, output) of a TLS client's upload of a file as
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
        other = stranger(directory)
        refusals = [('a client that trusts another CA fails', dict(tls, ca=other['ca'])),
                    ('a client without a certificate is refused', dict(tls, cert=None, key=None)),
                    ('a client with a certificate of another CA is refused',
                     dict(tls, cert=other['cert'], key=other['key']))]
        if tls.get('server_cert'):
            # the receiver's own certificate is for serverAuth only: OpenSSL refuses it as a client's
            refusals.append(('the server certificate is refused as a client certificate',
                             dict(tls, cert=tls['server_cert'], key=tls['server_key'])))
        for check, identity in refusals:
            name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
            rc, out = upload(target['name'], user, name, password, identity)
            landed = os.path.lexists(os.path.join(target.get('path', '/nonexistent'), name))
            if landed:
                os.unlink(os.path.join(target['path'], name))
            add(check, refused_in_handshake(rc, out, landed),
                'rsync exit %d%s: %s' % (rc, ', but the file arrived' if landed else '', out[-300:] or 'no output'))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return results, shake
