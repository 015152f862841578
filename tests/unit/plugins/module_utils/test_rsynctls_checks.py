# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/rsynctls.py tls_checks, the TLS layer as rsync_daemon_check proves it, against a TLS server on
loopback that stands in for stunnel: mutual TLS with the test's CA, then an rsync greeting.  openssl makes the CA
and runs the handshake (s_client), as on the host."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls

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


@pytest.fixture
def stunnel(tmp_path):
    """(port, identity): a TLS server on 127.0.0.1 that wants a client certificate of the CA and then greets as
    rsyncd does; identity {ca, cert, key} is a client of that CA."""
    identity = rsynctls.stranger(Host(), str(tmp_path))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(identity['cert'], identity['key'])
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
                    tls.recv(64)        # as rsyncd, wait for the client's answer (or its end) before closing
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
    other = rsynctls.stranger(Host(), str(tmp_path / 'other'))
    checks, shake = rsynctls.tls_checks(Host(), params(port, dict(identity, ca=other['ca']), ['127.0.0.2']), {},
                                        None)
    assert shake['verified'] is False and checks[0] == dict(checks[0], check='TLS handshake verified', passed=False)
