# -*- coding: utf-8 -*-
"""Verify the rsync daemon on rsync-a and rsync-b after converge (transport tls, the default, migration m1): the
files, stunnel on 874 and nothing on 873, and transfers from the other container over TLS with its client
certificate of m1 (an authenticated write works; a wrong password, an anonymous write, a client without a
certificate and a client that trusts another CA fail; a read works; a module that lists only the host itself refuses
the peer), each with the collection's TLS client (rsynctls.client_command: rsync with openssl s_client as its connect
program). The receiver's certificate is for servers only and the sender's for clients only: each is refused in the
other's place. The continuity across a re-run and a second migration are proven in side_effect.yml."""

import hashlib
import json
import os
import subprocess
import sys
import uuid

import pytest
import testinfra
import yaml

PASSWORD = 'molecule-Test-pw-7'
# As molecule.yml reads them (issue 15: a backslash or both quotes escaped in the logged repr defeated no_log's
# masking): the unit tests' awkward passwords, one file for both.
FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tests', 'unit', 'fixtures', 'rsync',
                       'awkward_passwords.yml')
with open(FIXTURE, encoding='utf-8') as _handle:
    AWKWARD = dict((user['name'], user['password']) for user in yaml.safe_load(_handle))
USERS = dict(AWKWARD, migrate=PASSWORD)
# Where a host keeps logs, state and temporary files (the secrets file itself is the one allowed place).
SEARCHED = ['/etc', '/var', '/tmp', '/root', '/home', '/srv', '/run', '/opt', '/usr/local']


def forms(password):
    """The password as it could appear in a log: itself, its repr, its JSON (escaped and not)."""
    return sorted({password, repr(password)[1:-1], json.dumps(password)[1:-1],
                   json.dumps(password, ensure_ascii=False)[1:-1], password.replace('\\', '\\\\')})


sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', '.cache', 'collections'))
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls  # noqa: E402

PEER = {'rsync-a': ('rsync-b', '198.18.3.12'), 'rsync-b': ('rsync-a', '198.18.3.11')}
SERVER = '/etc/bdp-wan-tune/rsync-tls'
CA = '/var/lib/bdp_wan_tune/rsync-tls-ca/m1'


def client_dir(receiver):
    """A sender's directory of the identity it holds for ``receiver``'s daemon in the migration m1."""
    return '/etc/bdp-wan-tune/rsync-tls-client/m1/' + receiver


def identity_of(receiver, directory=None, cert='host'):
    """A sender's identity {ca, cert, key} for ``receiver`` (in ``directory``: another one, such as the server's)."""
    directory = directory or client_dir(receiver)
    return {'ca': directory + '/ca.crt', 'cert': '%s/%s.crt' % (directory, cert),
            'key': '%s/%s.key' % (directory, cert)}


def tls(identity, port=874):
    """The collection's TLS client with ``identity`` (rsynctls.client_command): (its environment as a shell prefix,
    its command), with % doubled for testinfra's run(command, *args), which formats the command with %."""
    command, env = rsynctls.client_command(identity, port)
    prefix = ' '.join('%s=%s' % (key, rsynctls.shell_word(value)) for key, value in sorted(env.items()))
    return prefix.replace('%', '%%'), ' '.join(command)


@pytest.fixture
def name(host):
    return host.check_output('hostname')


@pytest.fixture
def peer(name):
    """The other container, as a testinfra host, and this host's address as the peer reaches it."""
    other, dummy = PEER[name]
    return testinfra.get_host('podman://%s' % other), PEER[other][1]


def test_config(host):
    conf = host.file('/etc/rsyncd.conf')
    assert conf.exists and conf.user == 'root' and conf.mode == 0o644
    text = conf.content_string
    assert text.startswith('#\n# Ansible managed\n#\n')
    assert 'Reached only over TLS: stunnel on port 874' in text
    for line in ('use chroot = yes', 'list = no', 'reverse lookup = no', 'read only = yes',
                 'hosts deny = *', 'secrets file = /etc/rsyncd.secrets', '[incoming]', '    read only = no',
                 '    auth users = ' + ', '.join(['migrate'] + list(AWKWARD)),
                 '    hosts allow = 198.18.3.0/24 127.0.0.1 ::1', '    uid = xfer',
                 '    max connections = 8', '[pub]'):
        assert line + '\n' in text, line
    assert PASSWORD not in text
    assert 'socket options =' not in text


def test_secrets(host):
    secrets = host.file('/etc/rsyncd.secrets')
    assert secrets.exists and secrets.user == 'root' and secrets.group == 'root' and secrets.mode == 0o600
    assert secrets.content.decode('utf-8') == ''.join('%s:%s\n' % (user, USERS[user]) for user in sorted(USERS))


def test_no_password_in_the_journal_or_any_other_file(host, name):
    """The journal (with the modules' "Invoked with" lines in it) and every file under SEARCHED but the secrets file
    hold none of the passwords in any form.  The patterns go to grep on stdin, not in its command line."""
    journal = host.run('journalctl --no-pager -o export').stdout_bytes
    assert b'Invoked with' in journal and b'rsync_daemon_config' in journal       # the journal is the right one
    assert b"'name': 'back'" in journal                  # the users are named there, their passwords are not
    found = [user for user, password in USERS.items()
             if any(form.encode('utf-8') in journal for form in forms(password))]
    assert found == [], 'the journal shows the password of %s' % found
    patterns = '\n'.join(form for password in USERS.values() for form in forms(password)) + '\n'
    grep = subprocess.run(['podman', 'exec', '-i', name, 'grep', '-rlaF', '-D', 'skip', '-f', '-'] + SEARCHED,
                          input=patterns.encode('utf-8'), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                          env=dict(os.environ, LC_ALL='C'))
    hits = sorted(set(grep.stdout.decode('utf-8', 'replace').split()))
    assert grep.returncode in (0, 1), grep.stderr
    assert hits == ['/etc/rsyncd.secrets'], hits      # found there (the grep works), and nowhere else
    assert not host.file('/tmp/bdp-pwned').exists


@pytest.mark.parametrize('directory, name, usage', [(SERVER, 'host', 'TLS Web Server Authentication'),
                                                    (SERVER, 'self', 'TLS Web Client Authentication'),
                                                    (None, 'host', 'TLS Web Client Authentication')])
def test_keys_and_certificates(host, directory, name, usage):
    """Each key root's and 0600; each certificate signed by the migration's CA (its common name names m1) for one
    usage only: the receiver's daemon serverAuth, its self-check and the sender (None: its directory for the peer it
    sends to) clientAuth."""
    directory = directory or client_dir(PEER[host.check_output('hostname')][0])
    key = host.file('%s/%s.key' % (directory, name))
    assert key.user == 'root' and key.group == 'root' and key.mode == 0o600
    assert 'PRIVATE KEY' in host.check_output('head -1 %s/%s.key', directory, name)
    for item in ('ca.crt', name + '.crt'):
        assert host.file('%s/%s' % (directory, item)).mode == 0o644
    verify = host.run('openssl verify -CAfile %s/ca.crt %s/%s.crt', directory, directory, name)
    assert verify.rc == 0, verify.stderr
    assert 'migration CA m1' in host.check_output('openssl x509 -noout -issuer -in %s/%s.crt', directory, name)
    ext = host.check_output('openssl x509 -noout -ext extendedKeyUsage -in %s/%s.crt', directory, name)
    assert ext.split('\n')[-1].strip() == usage, ext


def test_the_receivers_names_are_what_senders_use_not_every_address(host, name):
    """Its inventory name (ansible_host too), wan_address, the loopback addresses of its self-check; not the second
    address prepare gave it (198.18.4.x, as a VPN would: a new address must not re-issue the certificate)."""
    text = host.check_output('openssl x509 -noout -ext subjectAltName -in %s/host.crt', SERVER)
    own = PEER[PEER[name][0]][1]
    names = sorted(item.strip() for item in text.split('\n')[-1].split(','))
    assert names == sorted(['DNS:%s' % name, 'DNS:%s' % own, 'IP Address:%s' % own, 'DNS:127.0.0.1',
                            'IP Address:127.0.0.1', 'DNS:::1', 'IP Address:0:0:0:0:0:0:0:1']), text
    assert '198.18.4.' in host.check_output('ip -o addr show dev lo')


def test_stunnel_config(host):
    text = host.file(SERVER + '/stunnel.conf').content_string
    for line in ('exec = /usr/bin/rsync', 'execArgs = rsync --server --daemon --config=/etc/rsyncd.conf .',
                 'verifyChain = yes',
                 'requireCert = yes', 'sslVersionMin = TLSv1.2', 'options = NO_COMPRESSION',
                 'options = NO_RENEGOTIATION', 'renegotiation = no'):
        assert line + '\n' in text, line
    settings = [line for line in text.split('\n') if line and line[0] not in '#;']
    assert not [line for line in settings if 'SO_SNDBUF' in line or 'SO_RCVBUF' in line or line.startswith('socket')]
    # no libwrap: the source gate is in nftables (the RHEL family's stunnel has no libwrap)
    assert not [line for line in settings if line.startswith('libwrap')]
    # the role's instance is not in /etc/stunnel, where Debian's stunnel4 service reads every *.conf
    assert not host.file('/etc/stunnel/bdp-rsync-tls.conf').exists


def test_only_tls_listens(host):
    assert host.service('bdp-rsync-tls').is_running and host.service('bdp-rsync-tls').is_enabled
    assert not host.service('rsync').is_running
    assert host.socket('tcp://:::874').is_listening or host.socket('tcp://0.0.0.0:874').is_listening
    assert not host.socket('tcp://0.0.0.0:873').is_listening and not host.socket('tcp://:::873').is_listening


def send(client, address, user, password, target, identity):
    url = 'rsync://%s%s/incoming/%s' % ('%s@' % user if user else '', address, target)
    env, command = tls(identity)
    return client.run('printf data > /tmp/payload && %s RSYNC_PASSWORD=%s USER=nobody-anonymous timeout 60 '
                      '%s --timeout=30 /tmp/payload %s' % (env, '%s', command, '%s'), password, url)


def test_authenticated_transfer_from_the_peer(host, peer, name):
    client, address = peer
    target = 'from-peer-%s' % uuid.uuid4().hex
    result = send(client, address, 'migrate', PASSWORD, target, identity_of(name))
    assert result.rc == 0, result.stderr
    landed = host.file('/srv/incoming/' + target)
    assert landed.exists and landed.user == 'xfer' and landed.content_string == 'data'
    host.run('rm -f /srv/incoming/%s', target)


@pytest.mark.parametrize('user', sorted(AWKWARD))
def test_awkward_passwords_authenticate_from_the_peer(host, peer, name, user):
    client, address = peer
    target = 'awkward-%s-%s' % (user, uuid.uuid4().hex)
    result = send(client, address, user, AWKWARD[user], target, identity_of(name))
    assert result.rc == 0, result.stderr
    assert host.file('/srv/incoming/' + target).exists
    host.run('rm -f /srv/incoming/%s', target)


@pytest.mark.parametrize('user, password', [('migrate', 'not-the-password'), (None, '')])
def test_wrong_password_and_anonymous_write_fail(host, peer, name, user, password):
    client, address = peer
    target = 'refused-%s' % uuid.uuid4().hex
    result = send(client, address, user, password, target, identity_of(name))
    assert result.rc != 0 and 'auth failed' in result.stdout + result.stderr
    assert not host.file('/srv/incoming/' + target).exists


@pytest.mark.parametrize('change', [
    {'cert': None, 'key': None},                                              # no client certificate
    {'ca': '/etc/ssl/certs/ca-certificates.crt'},                             # trusts other CAs
])
def test_refused_in_the_handshake(host, peer, name, change):
    client, address = peer
    target = 'no-cert-%s' % uuid.uuid4().hex
    result = send(client, address, 'migrate', PASSWORD, target, dict(identity_of(name), **change))
    output = result.stdout + result.stderr
    # openssl's words on the handshake, then rsync's on a connection that never greeted
    assert result.rc != 0 and 'SSL routines' in output and '@ERROR' not in output, output
    assert not host.file('/srv/incoming/' + target).exists


def test_plain_rsync_from_the_peer_fails(host, peer):
    client, address = peer
    result = client.run('rsync --contimeout=5 /etc/hostname rsync://migrate@%s/incoming/x', address)
    assert result.rc != 0
    result = client.run('rsync --contimeout=5 --port=874 --timeout=5 /etc/hostname rsync://migrate@%s/incoming/x',
                        address)
    assert result.rc != 0


def test_read_from_the_peer_and_no_listing(host, peer, name):
    client, address = peer
    read = client.run('%s timeout 60 %s rsync://%s/pub/hello.txt /tmp/hello-%s' % (
        tls(identity_of(name)) + ('%s', '%s')), address, name)
    assert read.rc == 0, read.stderr
    assert client.file('/tmp/hello-%s' % name).content_string == 'hello from %s\n' % name
    listing = client.run('%s timeout 60 %s rsync://%s/' % (tls(identity_of(name)) + ('%s',)), address)
    assert 'incoming' not in listing.stdout and 'pub' not in listing.stdout


def test_the_handshake_is_tls13_with_an_aead_cipher(host, peer, name):
    client, address = peer
    own = client_dir(name)
    out = client.run('openssl s_client -connect %s:874 -brief -verify_return_error -CAfile %s/ca.crt -cert %s/host.crt '
                     '-key %s/host.key </dev/null' % (address, own, own, own))
    text = out.stdout + out.stderr
    assert 'Protocol version: TLSv1.3' in text and 'Verification: OK' in text, text
    assert 'Ciphersuite: TLS_AES_256_GCM_SHA384' in text or 'Ciphersuite: TLS_CHACHA20_POLY1305_SHA256' in text
    # TLS 1.2 without AEAD is refused
    weak = client.run('openssl s_client -connect %s:874 -tls1_2 -cipher AES256-SHA -CAfile %s/ca.crt -cert %s/host.crt '
                      '-key %s/host.key </dev/null' % (address, own, own, own))
    assert 'Cipher is (NONE)' in weak.stdout + weak.stderr or weak.rc != 0


def test_the_source_gate_holds_in_nftables(host):
    """The union of the modules' sources is the gate's: the sets of the table inet bdp_wan_tune (the collection's own,
    loaded by the unit before stunnel), which resets every other source on 874 before stunnel accepts; a client with
    a valid certificate from an unlisted source (127.0.0.2) gets no handshake, the same client from 127.0.0.1 does.
    /etc/hosts.allow holds no block of the collection's any more (the converge took out the earlier version's): on
    rsync-a it is the administrator's file, its rules and mode kept."""
    listed = host.check_output('nft -j list table inet bdp_wan_tune')
    items = json.loads(listed)['nftables']
    sets = dict((item['set']['name'], item['set'].get('elem', [])) for item in items if 'set' in item)

    def text(element):
        if isinstance(element, dict):
            return '%s/%d' % (element['prefix']['addr'], element['prefix']['len'])
        return element
    assert sorted(text(e) for e in sets['rsync_tls_ipv4']) == ['127.0.0.1', '198.18.3.0/24'], listed
    assert [text(e) for e in sets['rsync_tls_ipv6']] == ['::1'], listed
    assert host.file('/etc/bdp-wan-tune/rsync-tls/gate.nft').mode == 0o644
    text_before = host.check_output('nft list chain inet bdp_wan_tune rsync_tls')
    assert 'tcp dport 874 counter packets' in text_before and 'reject with tcp reset' in text_before
    wrap = host.file('/etc/hosts.allow')
    assert 'bdp.wan_tune' not in wrap.content_string and 'bdp-rsync-tls' not in wrap.content_string
    if host.check_output('hostname') == 'rsync-a':         # the administrator's file: its rules and mode kept
        assert wrap.content_string == '# the administrator\'s own rules\nALL: 127.0.0.1\n' and wrap.mode == 0o640
    probe = ('import socket, ssl, sys\n'
             'c = ssl.create_default_context(cafile="%s/ca.crt"); c.check_hostname = False\n'
             'c.load_cert_chain("%s/self.crt", "%s/self.key")\n'
             's = socket.socket(); s.settimeout(10); s.bind((sys.argv[1], 0)); s.connect(("127.0.0.1", 874))\n'
             'print(c.wrap_socket(s).recv(9))\n') % (SERVER, SERVER, SERVER)
    allowed = host.run('python3 -c %s 127.0.0.1', probe)
    assert allowed.rc == 0 and '@RSYNCD' in allowed.stdout, allowed.stderr
    refused = host.run('python3 -c %s 127.0.0.2', probe)
    assert refused.rc != 0 and '@RSYNCD' not in refused.stdout
    assert 'ConnectionRefusedError' in refused.stderr, refused.stderr          # the gate's reset: no handshake
    counted = host.check_output('nft list chain inet bdp_wan_tune rsync_tls')
    assert counted != text_before, counted                                     # the reject rule counted it


def test_the_unit_loads_the_gate_before_stunnel_and_removes_it_when_it_stops(host):
    """The gate is there whenever stunnel is: loaded before it starts and at each reload, removed when it stops."""
    unit = host.file('/etc/systemd/system/bdp-rsync-tls.service').content_string
    assert 'ExecStartPre=+/usr/sbin/nft -f /etc/bdp-wan-tune/rsync-tls/gate.nft\n' in unit
    assert 'ExecStopPost=-+/usr/sbin/nft delete table inet bdp_wan_tune\n' in unit


def test_each_module_holds_its_own_sources_under_tls(host, peer, name):
    """The peer, admitted by the TLS gate (it is listed for incoming and pub) and holding a valid client certificate,
    reads pub but is refused by rsync at self-only, which lists the host alone: stunnel hands rsync the client's
    address (REMOTE_HOST), so the daemon logs the refusal with the peer's real address, not 127.0.0.1 (and, with
    list = no, tells the client the module is unknown rather than that it exists)."""
    client, address = peer
    read = client.run('%s timeout 60 %s rsync://%s/pub/hello.txt /tmp/pub-%s' % (
        tls(identity_of(name)) + ('%s', '%s')), address, name)
    assert read.rc == 0, read.stderr
    since = host.check_output('date +%Y-%m-%d\\ %H:%M:%S')
    refused = client.run('%s timeout 60 %s rsync://%s/self-only/hello.txt /tmp/self-%s' % (
        tls(identity_of(name)) + ('%s', '%s')), address, name)
    output = refused.stdout + refused.stderr
    assert refused.rc != 0 and "@ERROR: Unknown module 'self-only'" in output, output
    assert not client.file('/tmp/self-%s' % name).exists
    logged = host.check_output('journalctl --no-pager -t rsyncd --since %s', since)
    assert 'rsync denied on module self-only from UNDETERMINED (%s)' % PEER[name][1] in logged, logged
    # the host itself, which the module lists, reads it through the same daemon
    own = host.run('%s timeout 60 %s rsync://%s/self-only/hello.txt /tmp/self-own' % (
        tls(identity_of(None, SERVER, 'self')) + ('%s',)), '127.0.0.1')
    assert own.rc == 0, own.stderr


def test_the_server_certificate_is_refused_as_a_client(host, peer):
    """The receiver's own certificate (serverAuth only) shown by a client: refused in the handshake."""
    target = 'server-cert-%s' % uuid.uuid4().hex
    result = send(host, '127.0.0.1', 'migrate', PASSWORD, target, identity_of(None, SERVER))
    output = result.stdout + result.stderr
    assert result.rc != 0 and 'SSL routines' in output and '@ERROR' not in output, output
    assert not host.file('/srv/incoming/' + target).exists


def test_a_sender_certificate_is_refused_as_a_server(host, name):
    """A TLS server that shows a sender's certificate (clientAuth only): the collection's TLS client refuses it."""
    receiver = PEER[name][0]
    server = host.run('cd /tmp && (timeout 20 openssl s_server -quiet -accept 127.0.0.1:9875 -cert %s/host.crt '
                      '-key %s/host.key </dev/null >/dev/null 2>&1 &) && sleep 1', client_dir(receiver),
                      client_dir(receiver))
    assert server.rc == 0
    result = host.run('%s timeout 15 %s rsync://%s/incoming/' % (tls(identity_of(receiver), 9875) + ('%s',)),
                      '127.0.0.1')
    output = result.stdout + result.stderr
    assert result.rc != 0 and 'unsuitable certificate purpose' in output, output


def test_the_ca_moved_from_the_controller_to_the_receiver_and_nothing_was_issued_anew(host, name):
    """prepare.yml set the daemons up with an earlier version, which kept the migration CA on the controller (the
    ephemeral directory) and one identity per migration on each sender, and kept the serials it issued; the converge
    with this version moved the CA to each receiver (root's: the key 0600 in a 0700 directory), copied the sender's
    identity into its directory for the receiver, and issued nothing anew."""
    controller = os.path.join(os.environ['MOLECULE_EPHEMERAL_DIRECTORY'], 'rsync_tls_ca', 'm1')
    for item in ('ca.crt', 'ca.key'):
        with open(os.path.join(controller, item), 'rb') as handle:
            wanted = hashlib.sha256(handle.read()).hexdigest()
        assert host.check_output('sha256sum %s/%s', CA, item).split()[0] == wanted, item
    key, directory = host.file(CA + '/ca.key'), host.file(CA)
    assert (key.user, key.mode, directory.user, directory.mode) == ('root', 0o600, 'root', 0o700)
    serials = host.check_output(
        'for f in %s/host.crt %s/self.crt %s/host.crt; do openssl x509 -noout -serial -in "$f"; done', SERVER,
        SERVER, client_dir(PEER[name][0]))
    assert serials.split() == host.file('/root/serials.before').content_string.split(), serials
