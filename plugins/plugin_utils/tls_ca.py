# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration CA on the controller: create or load it, judge a host's certificate, sign a host's request.

Controller only (the action plugins rsync_tls_ca and validate_inputs): it uses the Python ``cryptography`` library
that ansible-core itself requires.  The CA key never leaves the controller; the hosts' keys never leave the hosts
(the module rsync_daemon_tls makes them there and sends only a certificate signing request).
"""

import datetime
import fcntl
import ipaddress
import os
import stat

from ansible_collections.bdp.wan_tune.plugins.module_utils import files
from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    HAS_CRYPTOGRAPHY = True
except ImportError:         # pragma: no cover - ansible-core requires cryptography
    HAS_CRYPTOGRAPHY = False

CA_CERT, CA_KEY = 'ca.crt', 'ca.key'
CA_DAYS = 825
DEFAULT_DIR = '~/.bdp_wan_tune/rsync_tls_ca'


class CaError(ValueError):
    """A CA that cannot be used; the message names the variable."""


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def not_after(cert):
    try:
        return cert.not_valid_after_utc
    except AttributeError:      # cryptography < 42
        return cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode('ascii')


def public_pem(key):
    return key.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo).decode('ascii')


def key_mode_problem(path, var):
    """A message when the CA key file at ``path`` is missing, not a file, or readable by others."""
    try:
        info = os.stat(path)
    except OSError:
        return '%s: the CA key %s is missing (the CA certificate is there); expected both ca.crt and ca.key in the ' \
               'directory, or an empty or absent directory (a new CA is made there).' % (var, path)
    if not stat.S_ISREG(info.st_mode):
        return '%s: the CA key %s is not a regular file; expected a file of mode 0600.' % (var, path)
    if info.st_mode & 0o077:
        return '%s: the CA key %s has mode %04o, readable by others; expected 0600 (chmod 600 %s).' % (
            var, path, info.st_mode & 0o7777, path)
    return None


def dir_problems(ca_dir, var='rsync_daemon_tls_ca_dir'):
    """Problems with a CA directory on the controller (none when it does not exist yet: it is made)."""
    ca_dir = os.path.expanduser(ca_dir)
    cert, key = os.path.join(ca_dir, CA_CERT), os.path.join(ca_dir, CA_KEY)
    if not os.path.exists(cert) and not os.path.exists(key):
        return []
    if not os.path.exists(cert):
        return ['%s: %s holds ca.key but no ca.crt; expected both, or neither (a new CA is made).' % (var, ca_dir)]
    problem = key_mode_problem(key, var)
    if problem:
        return [problem]
    try:
        load_files(ca_dir)
    except CaError as exc:
        return [str(exc)]
    return []


def load(cert_pem, key_pem, cert_var='rsync_daemon_tls_ca_cert', key_var='rsync_daemon_tls_ca_key'):
    """(certificate, key) of a CA from PEM text; CaError names the variable (the key's text is never shown)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode('ascii') if isinstance(cert_pem, str) else cert_pem)
    except (ValueError, TypeError, UnicodeError) as exc:
        raise CaError('%s: is not a PEM certificate (%s); expected the CA certificate in PEM form.' % (cert_var, exc))
    try:
        key = serialization.load_pem_private_key(key_pem.encode('ascii') if isinstance(key_pem, str) else key_pem,
                                                 password=None)
    except (ValueError, TypeError, UnicodeError):
        raise CaError('%s: (the value is not shown) is not an unencrypted PEM private key; expected the CA\'s private '
                      'key in PEM form (keep it in Ansible Vault: the vault encrypts it, not a passphrase).' % key_var)
    if public_pem(key.public_key()) != public_pem(cert.public_key()):
        raise CaError('%s: (the value is not shown) is not the key of the certificate in %s; expected the private key '
                      'that belongs to the CA certificate.' % (key_var, cert_var))
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise CaError('%s: the certificate %s is not a CA (basicConstraints CA:TRUE); expected a CA certificate.'
                      % (cert_var, cert.subject.rfc4514_string()))
    if not_after(cert) <= now():
        raise CaError('%s: the CA %s expired on %s; expected a valid CA, or a new one.' % (
            cert_var, cert.subject.rfc4514_string(), not_after(cert).date()))
    return cert, key


def load_files(ca_dir):
    ca_dir = os.path.expanduser(ca_dir)
    with open(os.path.join(ca_dir, CA_CERT), 'rb') as handle:
        cert_pem = handle.read()
    with open(os.path.join(ca_dir, CA_KEY), 'rb') as handle:
        key_pem = handle.read()
    return load(cert_pem, key_pem, 'rsync_daemon_tls_ca_dir (%s)' % os.path.join(ca_dir, CA_CERT),
                'rsync_daemon_tls_ca_dir (%s)' % os.path.join(ca_dir, CA_KEY))


def write_private(path, data, mode):
    """``data`` to ``path`` with ``mode`` from its first byte (the collection's one writer, module_utils/files.py)."""
    files.write_atomic(None, path, data, mode=mode)


def create(ca_dir, name, days=CA_DAYS):
    """A new CA (EC P-256) in ``ca_dir`` (made 0700): ca.key 0600, ca.crt 0644.  (certificate, key)."""
    ca_dir = os.path.expanduser(ca_dir)
    if not os.path.isdir(ca_dir):
        os.makedirs(ca_dir, 0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = now() - datetime.timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    write_private(os.path.join(ca_dir, CA_KEY), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), 0o600)
    write_private(os.path.join(ca_dir, CA_CERT), pem(cert).encode('ascii'), 0o644)
    return cert, key


def from_dir(ca_dir, name, check_mode=False):
    """(certificate, key, created) of the CA in ``ca_dir`` on the controller, made there when it holds none.

    The hosts of a play run in parallel forks, each asking for the CA: the checks, the reading and the making happen
    under an exclusive lock on the directory, so that one fork makes the CA and the others read it whole, never a
    ca.key without its ca.crt.  In check mode nothing is written: (None, None, True) where a CA would be made.
    """
    ca_dir = os.path.expanduser(ca_dir)
    if check_mode:
        found = _found(ca_dir)
        return found + (False,) if found else (None, None, True)
    os.makedirs(ca_dir, 0o700, exist_ok=True)
    handle = os.open(ca_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        found = _found(ca_dir)
        return found + (False,) if found else create(ca_dir, name) + (True,)
    finally:
        os.close(handle)


def _found(ca_dir):
    """(certificate, key) of the CA in ``ca_dir``, None when it holds none; CaError for anything else."""
    problems = dir_problems(ca_dir)
    if problems:
        raise CaError(problems[0])
    return load_files(ca_dir) if os.path.exists(os.path.join(ca_dir, CA_CERT)) else None


def general_names(names):
    out = []
    for kind, value in rsynctls.subject_alt_names(names):
        if kind == 'IP':
            out.append(x509.IPAddress(ipaddress.ip_address(value)))
        else:
            out.append(x509.DNSName(value))
    return out


def san_set(cert):
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return set([('DNS', item) for item in names.get_values_for_type(x509.DNSName)]
               + [('IP', str(item)) for item in names.get_values_for_type(x509.IPAddress)])


def judge(cert_pem, ca_cert, public_key_pem, names, renew_days=rsynctls.RENEW_DAYS):
    """None when the host's certificate can stay (signed by this CA, for the host's key, with these names, valid for
    more than ``renew_days``); otherwise why it is (re)issued."""
    if not cert_pem:
        return 'there is no certificate yet'
    try:
        cert = x509.load_pem_x509_certificate(cert_pem.encode('ascii'))
    except ValueError:
        return 'the certificate on the host cannot be read'
    if cert.issuer != ca_cert.subject:
        return 'the certificate was issued by %s, not by the migration CA' % cert.issuer.rfc4514_string()
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, Exception):      # InvalidSignature
        return 'the certificate is not signed by the migration CA'
    if public_key_pem and public_pem(cert.public_key()) != public_key_pem:
        return 'the certificate is not for the host\'s key'
    if san_set(cert) != set(rsynctls.subject_alt_names(names)):
        return 'its names (%s) are not the wanted ones' % ', '.join(sorted(v for k, v in san_set(cert) if k == 'DNS'))
    left = not_after(cert) - now()
    if left <= datetime.timedelta(days=renew_days):
        return 'it expires on %s, within %d days' % (not_after(cert).date(), renew_days)
    return None


def sign(csr_pem, ca_cert, ca_key, names, days, common_name):
    """A certificate for the request ``csr_pem`` (its key only: the subject and names are ours), for server and client
    authentication (the server's certificate also serves its own self-check as a client)."""
    csr = x509.load_pem_x509_csr(csr_pem.encode('ascii'))
    if not csr.is_signature_valid:
        raise CaError('the certificate signing request of the host has no valid signature')
    start = now() - datetime.timedelta(minutes=5)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])]))
               .issuer_name(ca_cert.subject).public_key(csr.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(start)
               .not_valid_after(min(start + datetime.timedelta(days=days), not_after(ca_cert)))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                     ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),
                              critical=False))
    alt = general_names(names)
    if alt:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    return pem(builder.sign(ca_key, hashes.SHA256()))


def csr_public_key(csr_pem):
    return public_pem(x509.load_pem_x509_csr(csr_pem.encode('ascii')).public_key())


def expires(cert):
    """(date text, days left) of a certificate."""
    left = not_after(cert) - now()
    return str(not_after(cert).date()), left.days


def problems(settings, names=None):
    """Every problem with the TLS settings (rsynctls.check), then with the CA they name: the given CA certificate and
    key (parsed, matching, a CA, not expired) or the CA directory on the controller (ca.key there and 0600)."""
    found = rsynctls.check(settings, names)
    if found or settings.get('transport', 'tls') == 'plain':
        return found
    if settings.get('tls_ca_cert'):
        try:
            load(settings['tls_ca_cert'], settings['tls_ca_key'])
        except CaError as exc:
            return [str(exc)]
        return []
    ca_dir = settings.get('tls_ca_dir', DEFAULT_DIR)
    if not isinstance(ca_dir, str) or not ca_dir.strip():
        return ['rsync_daemon_tls_ca_dir: %s is not a directory path; expected a directory on the controller for '
                'the migration CA, such as ~/.bdp_wan_tune/rsync_tls_ca.' % ('empty' if not ca_dir else repr(ca_dir))]
    return dir_problems(ca_dir)
