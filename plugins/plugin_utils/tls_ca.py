# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration CA as the controller sees it, read before any host changes: a CA given in variables, or one that an
earlier version made in the controller's CA directory (which the role moves to the receiver), must be usable (both
files, the key 0600, a CA that matches its key and lasts more than 30 days).  The CA the receiver makes and keeps
is checked on the receiver (the module rsync_daemon_tls).

Controller only (the filter rsync_daemon_problems and the action plugin validate_inputs).  It reads with the Python
``cryptography`` library that ansible-core itself requires and makes nothing: the CA, the keys, the requests and the
certificates are made by community.crypto in roles/rsync_daemon/tasks (tls_ca.yml, tls_identity.yml).
"""

import datetime
import os
import stat

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    HAS_CRYPTOGRAPHY = True
except ImportError:         # ansible-core requires it; ansible-test's import check runs without it
    HAS_CRYPTOGRAPHY = False

CA_CERT, CA_KEY = rsynctls.CA_FILES['cert'], rsynctls.CA_FILES['key']


class CaError(ValueError):
    """A CA that cannot be used; the message names the variable."""


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def not_after(cert):
    try:
        return cert.not_valid_after_utc
    except AttributeError:      # cryptography < 42
        return cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)


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
    """Problems with a migration's CA directory that an earlier version made on the controller (none when there is
    none: the receiver makes its own CA)."""
    ca_dir = os.path.expanduser(ca_dir)
    cert, key = os.path.join(ca_dir, CA_CERT), os.path.join(ca_dir, CA_KEY)
    if not os.path.exists(cert) and not os.path.exists(key):
        return []
    if not os.path.exists(cert):
        return ['%s: %s holds ca.key but no ca.crt; expected both (the role moves them to the receiver), or neither '
                '(the receiver makes its own CA).' % (var, ca_dir)]
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
    if not HAS_CRYPTOGRAPHY:
        raise CaError('%s: the controller has no Python cryptography library to read the CA with; install it (pip '
                      'install cryptography), as ansible-core requires.' % cert_var)
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
    left = not_after(cert) - now()
    if left <= datetime.timedelta(days=rsynctls.RENEW_DAYS):
        raise CaError('%s: the CA %s ends on %s, %s; expected a CA valid for more than %d days (every certificate it '
                      'signed would be renewed at every run): make a new CA for the migration (empty its directory, '
                      'or give new rsync_daemon_tls_ca_cert and rsync_daemon_tls_ca_key).' % (
                          cert_var, cert.subject.rfc4514_string(), not_after(cert).date(),
                          'which is past' if left.total_seconds() <= 0 else 'in %d days' % left.days,
                          rsynctls.RENEW_DAYS))
    return cert, key


def load_files(ca_dir):
    ca_dir = os.path.expanduser(ca_dir)
    with open(os.path.join(ca_dir, CA_CERT), 'rb') as handle:
        cert_pem = handle.read()
    with open(os.path.join(ca_dir, CA_KEY), 'rb') as handle:
        key_pem = handle.read()
    return load(cert_pem, key_pem, 'rsync_daemon_tls_ca_dir (%s)' % os.path.join(ca_dir, CA_CERT),
                'rsync_daemon_tls_ca_dir (%s)' % os.path.join(ca_dir, CA_KEY))


def problems(settings, names=None, inventory=None, sources=None):
    """Every problem with the TLS settings (rsynctls.check), then with the CA they name: the given CA certificate and
    key (parsed, matching, a CA, valid for more than 30 days), or the migration's CA directory that an earlier
    version made on the controller (``<tls_ca_dir>/<migration>``: both files or neither, ca.key 0600), which the
    role moves to a receiver that has no CA yet.  ``inventory``: the inventory's host names; ``sources``: the
    inventory sources, from which the migration's name is derived when none is given."""
    found = rsynctls.check(settings, names, inventory)
    if found or settings.get('transport', rsynctls.TRANSPORT) == 'plain':
        return found
    if settings.get('tls_ca_cert'):
        try:
            load(settings['tls_ca_cert'], settings['tls_ca_key'])
        except CaError as exc:
            return [str(exc)]
        return []
    ca_dir = settings.get('tls_ca_dir', rsynctls.CONTROLLER_CA_DIR)
    if not isinstance(ca_dir, str) or not ca_dir.strip():
        return ['rsync_daemon_tls_ca_dir: %s is not a directory path; expected the controller directory where an '
                'earlier version kept the migration CAs, such as %s (it is read only to move a CA to its receiver).'
                % ('empty' if not ca_dir else repr(ca_dir), rsynctls.CONTROLLER_CA_DIR)]
    layout = rsynctls.layout(rsynctls.migration_name(settings.get('tls_migration'), sources), controller_ca_dir=ca_dir)
    return dir_problems(layout['controller_ca']['dir'])
