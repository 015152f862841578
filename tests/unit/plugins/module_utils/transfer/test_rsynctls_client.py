# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/transfer/rsynctls.py client_command, the collection's TLS client (rsync with RSYNC_CONNECT_PROG
running openssl s_client), against a real stunnel in front of a real rsync on loopback, set up as the role's
stunnel.conf.j2 sets it up (exec mode, rsync --server --daemon, verifyChain, requireCert, sslVersionMin TLSv1.2):
a file is copied over TLS 1.3 with the server verified against the CA and the client's certificate shown and
accepted; another CA, a missing client certificate and a server certificate of another name are refused; the
identity's paths may hold a space, a quote and %H; an IPv6 address reaches the daemon; the daemon's messages reach
the client (SERVER_MESSAGES); the migration runner (through migrate_run's copy of the identity) and the daemon's
self-check (rsync_daemon_check.send) move files with it."""

from __future__ import annotations

import datetime
import json
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

STUNNEL = shutil.which('stunnel4') or shutil.which('stunnel')
pytestmark = pytest.mark.skipif(not (STUNNEL and shutil.which('rsync') and shutil.which('openssl')),
                                reason='needs stunnel (scripts/setup.sh installs stunnel4), rsync and openssl')


def free_port(host='127.0.0.1'):
    with socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(data)
    os.chmod(path, mode)
    return path


def authority(directory, name):
    """A CA (its key and its certificate's path) in ``directory``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return key, subject, write(os.path.join(directory, 'ca.crt'), cert.public_bytes(serialization.Encoding.PEM))


def issue(ca, directory, name, usage, names=()):
    """A certificate for ``usage`` signed by ``ca`` with the subjectAltName the role writes for ``names``
    (rsynctls.subject_alt_names: an address as IP and as DNS): {cert, key} paths in ``directory``."""
    ca_key, ca_subject, _path = ca
    key = ec.generate_private_key(ec.SECP256R1())
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
               .issuer_name(ca_subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    entries = [x509.IPAddress(ipaddress.ip_address(text[3:])) if text.startswith('IP:') else x509.DNSName(text[4:])
               for text in rsynctls.subject_alt_names(names)]
    if entries:
        builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return {'cert': write(os.path.join(directory, 'host.crt'), cert.public_bytes(serialization.Encoding.PEM)),
            'key': write(os.path.join(directory, 'host.key'), key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), 0o600)}


class Daemon(object):
    """stunnel on ``host``:port in front of rsync (module incoming, writable, and pub, read-only), with a server
    certificate of the migration's CA for ``names``; ``client``: a sender's identity {ca, cert, key} of that CA, in a
    directory whose name holds a space, a quote and %H."""

    def __init__(self, root, host='127.0.0.1', names=('127.0.0.1',)):
        self.root, self.host, self.port = root, host, free_port(host)
        ca = authority(os.path.join(root, 'ca'), 'unit migration CA')
        server = self.server = issue(ca, os.path.join(root, 'server'), 'rsync-b', ExtendedKeyUsageOID.SERVER_AUTH,
                                     names)
        own = os.path.join(root, "client dir's 100%H")
        self.client = dict(issue(ca, own, 'sender-a', ExtendedKeyUsageOID.CLIENT_AUTH), ca=ca[2])
        shutil.copy(ca[2], os.path.join(own, 'ca.crt'))
        self.client['ca'] = os.path.join(own, 'ca.crt')
        self.dest = os.path.join(root, 'dest')
        os.makedirs(self.dest)
        os.makedirs(os.path.join(root, 'pub'))
        conf = write(os.path.join(root, 'rsyncd.conf'), (
            'uid = %d\ngid = %d\nuse chroot = no\n[incoming]\npath = %s\nread only = no\n[pub]\npath = %s\n'
            'read only = yes\n' % (os.getuid(), os.getgid(), self.dest, os.path.join(root, 'pub'))).encode())
        self.log = os.path.join(root, 'stunnel.log')
        stunnel_conf = write(os.path.join(root, 'stunnel.conf'), (
            'foreground = yes\npid =\nsyslog = no\noutput = %s\ndebug = info\n[bdp-rsync-tls]\naccept = %s:%d\n'
            'exec = %s\nexecArgs = rsync --server --daemon --config=%s .\ncert = %s\nkey = %s\nCAfile = %s\n'
            'verifyChain = yes\nrequireCert = yes\nsslVersionMin = TLSv1.2\nciphersuites = %s\nciphers = %s\n'
            'TIMEOUTclose = 0\n' % (self.log, host, self.port,
                                    shutil.which('rsync'), conf, server['cert'], server['key'], ca[2],
                                    rsynctls.CIPHERSUITES, rsynctls.CIPHERS_TLS12)).encode())
        self.proc = subprocess.Popen([STUNNEL, stunnel_conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _attempt in range(100):
            try:
                socket.create_connection((host, self.port), 1).close()
                break
            except OSError:
                time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)

    def logged(self):
        with open(self.log, errors='replace') as handle:
            return handle.read()

    def send(self, identity, name, url=None, extra=()):
        """(rc, output) of a copy of a new file ``name`` to the module incoming with client_command(identity)."""
        source = write(os.path.join(self.root, 'out', name), ('payload of %s\n' % name).encode())
        command, env = rsynctls.client_command(identity, self.port)
        where = '[%s]' % self.host if ':' in self.host else self.host
        done = subprocess.run(['timeout', '60'] + command + ['--timeout=20'] + list(extra)
                              + [source, url or 'rsync://%s/incoming/' % where],
                              env=dict(os.environ, **env), cwd=self.root, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        return done.returncode, done.stdout


@pytest.fixture
def daemon(tmp_path):
    made = Daemon(str(tmp_path))
    yield made
    made.stop()


def test_the_command_is_rsync_with_openssl_as_its_connect_program():
    command, env = rsynctls.client_command({'ca': '/a/ca.crt', 'cert': '/a/host.crt', 'key': '/a/host.key'}, 8874)
    assert command == ['rsync', rsynctls.SERVER_MESSAGES] and list(env) == ['RSYNC_CONNECT_PROG']
    assert env['RSYNC_CONNECT_PROG'] == (
        'openssl s_client -quiet -verify_quiet -verify_return_error -tls1_3 -CAfile /a/ca.crt -cert /a/host.crt '
        "-key /a/host.key -servername '%H' -verify_hostname '%H' -connect '[%H]:8874'")


def test_a_file_is_copied_over_tls13_with_both_certificates_verified(daemon):
    rc, out = daemon.send(daemon.client, 'hello.txt')
    assert rc == 0, out
    with open(os.path.join(daemon.dest, 'hello.txt')) as handle:
        assert handle.read() == 'payload of hello.txt\n'
    logged = daemon.logged()
    assert 'TLSv1.3 ciphersuite: TLS_AES_256_GCM_SHA384' in logged, logged      # the suite rsynctls prefers
    assert 'Certificate accepted at depth=0: CN=sender-a' in logged, logged       # the client's, of the CA


def test_the_identity_paths_are_quoted_for_the_shell_and_for_rsyncs_percent(daemon):
    assert "client dir's 100%H" in daemon.client['key']
    assert "100%%H" in rsynctls.client_command(daemon.client, daemon.port)[1]['RSYNC_CONNECT_PROG']
    rc, out = daemon.send(daemon.client, 'quoted.txt')
    assert rc == 0 and os.path.exists(os.path.join(daemon.dest, 'quoted.txt')), out


def test_a_server_of_another_ca_is_refused(daemon, tmp_path):
    other = authority(str(tmp_path / 'other'), 'another CA')
    rc, out = daemon.send(dict(daemon.client, ca=other[2]), 'wrong-ca.txt')
    assert rc != 0 and not os.path.exists(os.path.join(daemon.dest, 'wrong-ca.txt'))
    assert 'certificate verify failed' in out or 'unable to get local issuer certificate' in out, out


def test_a_client_without_a_certificate_is_refused_by_the_daemon(daemon):
    rc, out = daemon.send({'ca': daemon.client['ca']}, 'no-cert.txt')
    assert rc != 0 and not os.path.exists(os.path.join(daemon.dest, 'no-cert.txt')), out
    assert 'peer did not return a certificate' in daemon.logged()


def test_a_server_certificate_of_another_name_is_refused(tmp_path):
    made = Daemon(str(tmp_path), names=('rsync-b.example.org',))
    try:
        rc, out = made.send(made.client, 'other-name.txt')
    finally:
        made.stop()
    assert rc != 0 and not os.path.exists(os.path.join(made.dest, 'other-name.txt'))
    assert 'hostname mismatch' in out, out


def test_the_daemons_messages_reach_the_client(daemon):
    """SERVER_MESSAGES: behind stunnel rsync's refusal goes to the client, not to stunnel's log."""
    rc, out = daemon.send(daemon.client, 'read-only.txt', url='rsync://127.0.0.1/pub/')
    assert rc != 0 and 'module is read only' in out, out


def test_an_ipv6_address_reaches_the_daemon(tmp_path):
    try:
        free_port('::1')
    except OSError:
        pytest.skip('no IPv6 loopback')
    made = Daemon(str(tmp_path), host='::1', names=('::1',))
    try:
        rc, out = made.send(made.client, 'v6.txt')
    finally:
        made.stop()
    assert rc == 0 and os.path.exists(os.path.join(made.dest, 'v6.txt')), out


class Module(object):
    """migrate_run's module as own_identity uses it: fail_json raises, no SELinux here."""

    check_mode = False

    def selinux_enabled(self):
        return False

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs['msg'])


def test_the_migration_runner_copies_a_tree_over_tls_with_its_own_copy_of_the_identity(daemon, tmp_path):
    """migrate_run copies the identity into the run's directory and builds the command for the copies
    (own_identity); the runner, as the sender's unit runs it, moves a tree with it and proves the copy."""
    from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import plan as _plan
    from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
    from ansible_collections.bdp.wan_tune.plugins.modules import migrate_run

    source, run_dir = tmp_path / 'tree', tmp_path / 'run'
    for index in range(12):
        write(str(source / ('d%d' % (index % 3)) / ('f%02d' % index)), os.urandom(50000))
    run_dir.mkdir(mode=0o700)
    planned = _plan.plan(_plan.survey(str(source), []), 2)
    config = {'id': 'tls', 'source': str(source), 'url': 'rsync://u@127.0.0.1:%d/incoming/sender/' % daemon.port,
              'transport': 'tls', 'command': ['rsync'], 'env': {}, 'identity': daemon.client, 'port': daemon.port,
              'bytes': planned['bytes'], 'files': planned['files'], 'streams': 2,
              'part_files': planned['parts']['files'], 'part_bytes': planned['parts']['bytes'], 'proof': 'checksum',
              'present_bytes': 0, 'bwlimit_bps': 0}
    config['command'], config['env'] = migrate_run.own_identity(Module(), str(run_dir), config, {})
    assert config['env']['RSYNC_CONNECT_PROG'] == rsynctls.connect_program(
        dict((key, str(run_dir / name)) for key, name, _mode in migrate_run.IDENTITY), daemon.port)
    assert oct(os.stat(str(run_dir / 'tls-host.key')).st_mode & 0o777) == '0o600'
    (run_dir / _runner.CONFIG).write_text(json.dumps(config))
    write(str(run_dir / _runner.PASSWORD), b'unused\n', 0o600)
    rc = subprocess.run([sys.executable, _runner.__file__, str(run_dir)], timeout=300, check=False).returncode
    state = _runner.read_state(str(run_dir))
    assert rc == 0 and state['state'] == 'done' and state['verified'] is True, state.get('message')
    for index in range(12):
        relative = os.path.join('d%d' % (index % 3), 'f%02d' % index)
        theirs = os.path.join(daemon.dest, 'sender', relative)
        with open(str(source / relative), 'rb') as mine, open(theirs, 'rb') as copy:
            assert mine.read() == copy.read(), relative


def test_migrate_run_refuses_an_identity_it_cannot_read(tmp_path):
    from ansible_collections.bdp.wan_tune.plugins.modules import migrate_run

    config = {'transport': 'tls', 'port': 874, 'identity': {'ca': str(tmp_path / 'none.crt'), 'cert': 'x', 'key': 'y'}}
    with pytest.raises(AssertionError, match=r'none.crt \(the client ca\) cannot be read: the sender has no client '
                                             r'identity'):
        migrate_run.own_identity(Module(), str(tmp_path), config, {})
    plain = {'transport': 'plain', 'command': ['rsync'], 'env': {}, 'identity': {}}
    assert migrate_run.own_identity(Module(), str(tmp_path), plain, {}) == (['rsync'], {})


class Host(object):
    """rsync_daemon_check's module as send() uses it: this machine's programs, environ_update as AnsibleModule's."""

    def get_bin_path(self, name, required=False):
        return shutil.which(name)

    def run_command(self, argv, data=None, environ_update=None):
        done = subprocess.run(argv, input=data, env=dict(os.environ, **(environ_update or {})),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        return done.returncode, done.stdout, done.stderr


def test_the_daemons_self_check_sends_through_the_client(daemon, tmp_path):
    """rsync_daemon_check's send(), the upload of every transfer check, over TLS with the client's identity; with
    another CA it fails."""
    from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_check

    source = write(str(tmp_path / 'probe.txt'), b'probe\n')
    tls = dict(daemon.client, port=daemon.port)
    rc, text = rsync_daemon_check.send(Host(), source, 'rsync://127.0.0.1/incoming/probe.txt', None, 10, tls=tls)
    assert rc == 0 and os.path.exists(os.path.join(daemon.dest, 'probe.txt')), text
    other = authority(str(tmp_path / 'other'), 'another CA')
    rc, text = rsync_daemon_check.send(Host(), source, 'rsync://127.0.0.1/incoming/probe2.txt', None, 10, tls=tls,
                                       identity=dict(daemon.client, ca=other[2]))
    assert rc != 0 and 'certificate verify failed' in text and not os.path.exists(os.path.join(daemon.dest,
                                                                                               'probe2.txt'))


def test_the_self_checks_refusals_pass_against_the_real_daemon(daemon):
    """rsynctls.tls_checks as rsync_daemon_check runs it, its uploads through the client: the handshake is verified,
    and another CA, no client certificate, a client certificate of another CA and the server's own certificate shown
    as a client's are each refused in the handshake (rsync's words differ with when openssl ends: both count)."""
    from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_check

    tls = dict(daemon.client, port=daemon.port, sources=['127.0.0.0/8'], plain_closed=False,
               server_cert=daemon.server['cert'], server_key=daemon.server['key'])
    params = {'tls': tls, 'host': '127.0.0.1', 'port': free_port(), 'timeout': 10,
              'modules': [{'name': 'incoming', 'read_only': False, 'path': daemon.dest}]}
    source = write(os.path.join(daemon.root, 'probe'), b'probe\n')

    def upload(target, user, file_name, password, identity):
        return rsync_daemon_check.send(Host(), source, rsync_daemon_check.url('127.0.0.1', daemon.port, target, user,
                                                                              file_name), password, 10, tls, identity)
    checks, shake = rsynctls.tls_checks(Host(), params, {}, upload)
    assert shake['protocol'] == 'TLSv1.3' and shake['verified'] is True, shake
    assert [(check['check'], check['passed']) for check in checks] == [
        ('TLS handshake verified', True), ('plaintext to the TLS port gets no rsync answer', True),
        ('a client that trusts another CA fails', True), ('a client without a certificate is refused', True),
        ('a client with a certificate of another CA is refused', True),
        ('the server certificate is refused as a client certificate', True)], checks
    assert os.listdir(daemon.dest) == []


@pytest.mark.parametrize('rc, out, landed, refused', [
    (5, 'SSL alert number 116 rsync: did not see server greeting', False, True),
    (12, 'SSL routines:tls_post_process_server_certificate:certificate verify failed rsync: [sender] safe_read '
         'failed to read 1 bytes: Connection reset by peer (104)', False, True),
    (5, '@ERROR: access denied to incoming from UNDETERMINED (127.0.0.1)', False, False),    # rsyncd answered
    (0, '', True, False),
    (12, 'rsync: [sender] safe_read failed to read 1 bytes: Connection reset by peer (104)', False, False),
])
def test_a_refusal_in_the_handshake_is_told_from_others(rc, out, landed, refused):
    assert rsynctls.refused_in_handshake(rc, out, landed) is refused
