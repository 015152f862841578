# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration CA on the controller (plugin_utils/tls_ca.py) and the TLS input rules (module_utils/rsynctls.py),
with real keys and certificates made by the cryptography library."""

from __future__ import annotations

import concurrent.futures
import datetime
import os
import stat
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import tls_ca


def request():
    """(csr PEM, key) of a host."""
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder().subject_name(x509.Name([]))
           .sign(key, hashes.SHA256()))
    return csr.public_bytes(serialization.Encoding.PEM).decode('ascii'), key


def test_create_makes_a_private_key_file_and_a_ca(tmp_path):
    ca_dir = str(tmp_path / 'ca')
    cert, key = tls_ca.create(ca_dir, 'test CA')
    assert stat.S_IMODE(os.stat(os.path.join(ca_dir, 'ca.key')).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(ca_dir).st_mode) & 0o077 == 0
    assert tls_ca.dir_problems(ca_dir) == []
    loaded_cert, dummy = tls_ca.load_files(ca_dir)
    assert loaded_cert == cert


def test_dir_problems_name_the_variable(tmp_path):
    ca_dir = str(tmp_path / 'ca')
    tls_ca.create(ca_dir, 'test CA')
    os.chmod(os.path.join(ca_dir, 'ca.key'), 0o644)
    found = tls_ca.dir_problems(ca_dir)
    assert len(found) == 1 and found[0].startswith('rsync_daemon_tls_ca_dir: ') and 'mode 0644' in found[0]
    os.unlink(os.path.join(ca_dir, 'ca.key'))
    assert 'is missing' in tls_ca.dir_problems(ca_dir)[0]
    assert tls_ca.dir_problems(str(tmp_path / 'none')) == []


def test_parallel_forks_make_one_ca_and_all_read_it_whole(tmp_path, monkeypatch):
    """The hosts of a play ask at once: one makes the CA, the others wait and read it, never a key alone."""
    ca_dir = str(tmp_path / 'ca')
    writer = tls_ca.write_private

    def slow_write(path, data, mode):           # the key lands well before the certificate
        writer(path, data, mode)
        time.sleep(0.2)
    monkeypatch.setattr(tls_ca, 'write_private', slow_write)

    def fork(number):                           # the forks start 50 ms apart, some while the first one writes
        time.sleep(0.05 * number)
        return tls_ca.from_dir(ca_dir, 'test CA')
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        got = list(pool.map(fork, range(6)))
    assert sorted(created for dummy, dummy_key, created in got) == [False] * 5 + [True]
    assert len(set(cert.serial_number for cert, dummy_key, dummy in got)) == 1
    assert tls_ca.from_dir(ca_dir, 'test CA', check_mode=True)[2] is False


def test_check_mode_makes_nothing_and_problems_still_stop(tmp_path):
    ca_dir = str(tmp_path / 'ca')
    assert tls_ca.from_dir(ca_dir, 'test CA', check_mode=True) == (None, None, True)
    assert not os.path.exists(ca_dir)
    tls_ca.create(ca_dir, 'test CA')
    os.unlink(os.path.join(ca_dir, 'ca.crt'))
    for check_mode in (True, False):
        with pytest.raises(tls_ca.CaError, match='holds ca.key but no ca.crt'):
            tls_ca.from_dir(ca_dir, 'test CA', check_mode=check_mode)
    assert os.listdir(ca_dir) == ['ca.key']


def test_sign_then_keep_then_renew(tmp_path):
    ca_cert, ca_key = tls_ca.create(str(tmp_path / 'ca'), 'test CA')
    csr, key = request()
    names = ['rsync-b', '198.18.3.12']
    assert tls_ca.judge(None, ca_cert, None, names) == 'there is no certificate yet'
    cert_pem = tls_ca.sign(csr, ca_cert, ca_key, names, 180, 'rsync-b')
    public = tls_ca.csr_public_key(csr)
    assert tls_ca.judge(cert_pem, ca_cert, public, names) is None          # a re-run keeps it
    cert = x509.load_pem_x509_certificate(cert_pem.encode('ascii'))
    assert tls_ca.san_set(cert) == {('DNS', 'rsync-b'), ('DNS', '198.18.3.12'), ('IP', '198.18.3.12')}
    assert 'not the wanted ones' in tls_ca.judge(cert_pem, ca_cert, public, names + ['rsync-b.example.org'])
    other_csr, dummy = request()
    assert "not for the host's key" in tls_ca.judge(cert_pem, ca_cert, tls_ca.csr_public_key(other_csr), names)
    short = tls_ca.sign(csr, ca_cert, ca_key, names, 20, 'rsync-b')
    assert 'within 30 days' in tls_ca.judge(short, ca_cert, public, names)
    other_ca, dummy = tls_ca.create(str(tmp_path / 'other'), 'other CA')
    assert 'not by the migration CA' in tls_ca.judge(cert_pem, other_ca, public, names)


def test_load_refuses_a_key_of_another_certificate_without_showing_it(tmp_path):
    ca_cert, dummy = tls_ca.create(str(tmp_path / 'ca'), 'test CA')
    other = ec.generate_private_key(ec.SECP256R1())
    key_pem = other.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()).decode('ascii')
    with pytest.raises(tls_ca.CaError) as error:
        tls_ca.load(tls_ca.pem(ca_cert), key_pem)
    assert 'rsync_daemon_tls_ca_key' in str(error.value) and key_pem.split('\n')[1] not in str(error.value)
    with pytest.raises(tls_ca.CaError) as error:
        tls_ca.load(tls_ca.pem(ca_cert), 'garbage "\\ %')
    assert 'not an unencrypted PEM private key' in str(error.value) and 'garbage' not in str(error.value)


def test_a_leaf_certificate_is_not_a_ca(tmp_path):
    ca_cert, ca_key = tls_ca.create(str(tmp_path / 'ca'), 'test CA')
    csr, key = request()
    leaf = tls_ca.sign(csr, ca_cert, ca_key, ['h'], 180, 'h')
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    with pytest.raises(tls_ca.CaError, match='is not a CA'):
        tls_ca.load(leaf, key_pem)


def test_problems_of_the_settings(tmp_path):
    assert tls_ca.problems({'transport': 'plain', 'tls_port': 'x'}) == []
    found = tls_ca.problems({'transport': 'tls', 'tls_ca_cert': '-----BEGIN CERTIFICATE-----\nAA\n'
                                                                '-----END CERTIFICATE-----'})
    assert found[0].startswith('rsync_daemon_tls_ca_cert: is set but rsync_daemon_tls_ca_key is empty')
    assert rsynctls.check({'transport': 'tunnel'})[0].startswith("rsync_daemon_transport: 'tunnel' is not a transport")
    assert 'is also rsync_daemon_port' in rsynctls.check({'transport': 'both', 'tls_port': 873, 'port': '873'})[0]
    assert rsynctls.check({'tls_names': ['ok.example.org', '198.18.3.1', 'bad name']})[0].startswith(
        "rsync_daemon_tls_names[2]: 'bad name' is not a DNS name")
    assert rsynctls.check({'tls_days': 30})[0].startswith('rsync_daemon_tls_days: 30 is not a validity')
    assert tls_ca.problems({'tls_ca_dir': str(tmp_path / 'new')}) == []


def test_stunnel_config_has_no_socket_buffers_and_only_aead():
    text = rsynctls.render_stunnel(874, '198.18.3.12')
    assert 'accept = 198.18.3.12:874\n' in text and 'requireCert = yes\n' in text
    assert 'SO_SNDBUF' not in text.split('No socket')[1].split('\n', 1)[1] and '\nsocket' not in text
    for cipher in rsynctls.CIPHERS_TLS12.split(':'):
        assert cipher.startswith('ECDHE-') and ('GCM' in cipher or 'CHACHA20-POLY1305' in cipher)
    assert 'ExecStart=/usr/bin/stunnel4 /etc/bdp-wan-tune/rsync-tls/stunnel.conf' in rsynctls.render_unit()


def test_expiry_is_capped_by_the_ca(tmp_path):
    ca_cert, ca_key = tls_ca.create(str(tmp_path / 'ca'), 'test CA', days=40)
    csr, dummy = request()
    cert = x509.load_pem_x509_certificate(tls_ca.sign(csr, ca_cert, ca_key, ['h'], 180, 'h').encode('ascii'))
    assert tls_ca.not_after(cert) <= tls_ca.not_after(ca_cert)
    assert tls_ca.expires(cert)[1] <= 40 and isinstance(tls_ca.now(), datetime.datetime)


def test_libwrap_block_first_and_removed_alone():
    admin = '# the administrator\nALL: ALL\n'
    text = rsynctls.with_block(admin, ['198.18.3.0/24', '198.18.3.5', '2001:db8::/64', '::1', 'x.example.org'])
    assert text.startswith(rsynctls.WRAP_BEGIN) and text.endswith(admin)
    assert ('bdp-rsync-tls: 198.18.3.0/255.255.255.0 198.18.3.5 [2001:db8::]/64 [::1] x.example.org : ALLOW\n'
            'bdp-rsync-tls: ALL : DENY\n') in text
    assert rsynctls.with_block(text, ['198.18.3.5']).count(rsynctls.WRAP_BEGIN) == 1
    assert rsynctls.without_block(text) == admin and rsynctls.without_block(None) == ''
    assert rsynctls.source_allowed('127.0.0.2', ['127.0.0.0/8'])
    assert not rsynctls.source_allowed('127.0.0.2', ['127.0.0.1', '::1'])
