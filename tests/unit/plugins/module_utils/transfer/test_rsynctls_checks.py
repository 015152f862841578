# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/transfer/rsynctls.py tls_checks and module_answer, the TLS layer as rsync_daemon_check proves it, against a
TLS server on loopback that stands in for stunnel and rsyncd: mutual TLS with the test's CA (made by stranger(), as
the self-check makes its CA of nobody's), then an rsync greeting and, for a module request, rsyncd's answer to the
client's address (the module 'closed' lists nobody).  openssl runs the handshake (s_client), as on the host."""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import ssl
import subprocess
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

pytestmark = pytest.mark.skipif(not shutil.which('openssl') or not shutil.which('timeout'),
                                reason='needs openssl and timeout')


class Host(object):
    """A module's get_bin_path, run_command and fail_json, running this machine's programs."""

    def get_bin_path(self, name, required=False):
        return shutil.which(name)

    def run_command(self, argv, data=None):
        done = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False)
        return done.returncode, done.stdout, done.stderr

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs['msg'])


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def pki(directory):
    """A CA with a server (serverAuth) and a client (clientAuth) certificate, as the role issues them:
    {ca, cert, key, server_cert, server_key}."""
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'unit migration CA')])

    def issue(name, key, usage, ca=False):
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                   .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if usage:
            builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(
                ipaddress.ip_address('127.0.0.1'))]), critical=False)
        return builder.sign(ca_key, hashes.SHA256())

    out = {}
    for label, cert, key in (('ca', issue('unit migration CA', ca_key, None, ca=True), None),
                             ('server', None, ec.generate_private_key(ec.SECP256R1())),
                             ('client', None, ec.generate_private_key(ec.SECP256R1()))):
        if label != 'ca':
            cert = issue(label, key, ExtendedKeyUsageOID.SERVER_AUTH if label == 'server'
                         else ExtendedKeyUsageOID.CLIENT_AUTH)
        path = os.path.join(directory, '%s.crt' % label)
        with open(path, 'wb') as handle:
            handle.write(cert.public_bytes(serialization.Encoding.PEM))
        out[{'ca': 'ca', 'server': 'server_cert', 'client': 'cert'}[label]] = path
        if key is not None:
            path = os.path.join(directory, '%s.key' % label)
            with open(path, 'wb') as handle:
                handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
            out['server_key' if label == 'server' else 'key'] = path
    return out


@pytest.fixture
def stunnel(tmp_path):
    """(port, identity): a TLS server on 127.0.0.1 with a server certificate of the CA, which wants a client
    certificate of the CA and then greets as rsyncd does; identity {ca, cert, key} is a client of that CA."""
    made = pki(str(tmp_path))
    identity = dict((key, made[key]) for key in ('ca', 'cert', 'key'))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(made['server_cert'], made['server_key'])
    context.load_verify_locations(identity['ca'])
    context.verify_mode = ssl.CERT_REQUIRED
    server = socket.socket()
    server.bind(('127.0.0.1', free_port()))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, dummy = server.accept()
            except socket.timeout:
                continue
            try:
                conn.settimeout(5)
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(b'@RSYNCD: 31.0 sha256\n')
                    lines = b''
                    while lines.count(b'\n') < 2:     # as rsyncd: the client's version, then the module
                        chunk = tls.recv(64)
                        if not chunk:
                            break
                        lines += chunk
                    module = lines.split(b'\n')[1] if lines.count(b'\n') >= 2 else None
                    if module == b'closed':
                        tls.sendall(b'@ERROR: access denied to closed from UNDETERMINED (%s)\n'
                                    % tls.getpeername()[0].encode('ascii'))
                    elif module is not None:
                        tls.sendall(b'@RSYNCD: OK\n')
            except (OSError, ssl.SSLError):
                pass
            finally:
                conn.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], identity
    stop.set()
    thread.join(5)
    server.close()


def params(port, identity, sources):
    tls = dict(identity, port=port, plain_closed=True, sources=sources)
    return {'tls': tls, 'host': '127.0.0.1', 'port': free_port(), 'timeout': 10, 'modules': []}


def test_the_tls_layer_is_proven_and_an_open_source_rule_fails(stunnel):
    port, identity = stunnel
    checks, shake = rsynctls.tls_checks(Host(), params(port, identity, ['127.0.0.2']), {}, None)
    assert shake['verified'] is True and shake['protocol'] in ('TLSv1.3', 'TLSv1.2'), shake
    assert [(check['check'], check['passed']) for check in checks] == [
        ('TLS handshake verified', True), ('plaintext to the TLS port gets no rsync answer', True),
        ('nothing accepts on the plain port', True)]
    # 127.0.0.2 not among the sources: this server answers it all the same, which the check must call a failure
    checks, shake = rsynctls.tls_checks(Host(), params(port, identity, ['198.18.3.0/24']), {}, None)
    unlisted = [check for check in checks if check['check'] == 'an unlisted source is refused before the handshake']
    assert unlisted and unlisted[0]['passed'] is False and 'the rsync daemon answered' in unlisted[0]['detail']


def test_a_server_of_another_ca_fails_the_handshake(stunnel, tmp_path):
    port, identity = stunnel
    (tmp_path / 'other').mkdir()
    other = rsynctls.stranger(str(tmp_path / 'other'))
    checks, shake = rsynctls.tls_checks(Host(), params(port, dict(identity, ca=other['ca']), ['127.0.0.2']), {},
                                        None)
    assert shake['verified'] is False and checks[0] == dict(checks[0], check='TLS handshake verified', passed=False)


def test_module_answer_reports_rsyncds_refusal_of_the_source(stunnel):
    port, identity = stunnel
    assert rsynctls.module_answer('127.0.0.1', port, identity, 'open', 10) == (True, '@RSYNCD: OK')
    greeted, answer = rsynctls.module_answer('127.0.0.1', port, identity, 'closed', 10, source='127.0.0.3')
    assert greeted and rsynctls.denied(answer) and answer.endswith('(127.0.0.3)')
    assert not rsynctls.denied('@RSYNCD: AUTHREQD abc')


def test_the_stranger_is_a_ca_and_a_client_of_it(tmp_path):
    made = rsynctls.stranger(str(tmp_path))
    assert oct(os.stat(made['key']).st_mode & 0o777) == '0o600'
    text = subprocess.run(['openssl', 'x509', '-noout', '-ext', 'extendedKeyUsage', '-in', made['cert']],
                          stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert 'TLS Web Client Authentication' in text
    verify = subprocess.run(['openssl', 'verify', '-CAfile', made['ca'], made['cert']], check=False)
    assert verify.returncode == 0
