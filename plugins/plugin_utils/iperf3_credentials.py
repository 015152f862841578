# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credentials for one iperf3 test, made on the controller (action plugins iperf3_server and iperf3_verify).

iperf3's own authentication: the server holds an RSA private key and a list of authorized users (user,sha256), the
client the public key, the user name and the password.  ``make()`` creates them for one test: the server's part is
returned to be transferred to the server host (plugins/plugin_utils/secret_transfer.py); the client's part is kept on
the controller in a 0600 file of Ansible's per-run local tmp dir (removed when ansible-playbook exits) under a name
derived from a random handle.  Only the handle travels in task results; iperf3_verify's action plugin ``take()``s the
client's part (the file is removed at once) and transfers the password to the client host in a file.  No secret is
ever a module argument, a task result or a variable.
"""

import json
import os
import re
import secrets

from ansible import constants as C
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3

try:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    HAS_CRYPTOGRAPHY = True
except ImportError:         # ansible-core requires it; ansible-test's import check runs without it
    HAS_CRYPTOGRAPHY = False

HANDLE = re.compile(r'^[0-9a-f]{32}$')
KEY_BITS = 2048


class CredentialsError(ValueError):
    """Credentials that cannot be made or found; the message says what to do."""


def path(handle, directory=None):
    """The controller file of ``handle``; CredentialsError for anything but a handle make() returned."""
    if not isinstance(handle, str) or not HANDLE.match(handle):
        raise CredentialsError('credentials: %r is not a handle returned by bdp.wan_tune.iperf3_server '
                               '(authenticate: true) in this run' % (handle,))
    return os.path.join(directory or C.DEFAULT_LOCAL_TMP, 'bdp-wan-tune-iperf3-%s.json' % handle)


def make(directory=None):
    """(handle, server part) for one test.  The server part is the JSON text of the private key and the
    authorized-users line, for secret_transfer; the client part is written 0600 from its first byte on the
    controller."""
    if not HAS_CRYPTOGRAPHY:
        raise CredentialsError('the Python library cryptography is missing on the controller (ansible-core '
                               'requires it); install it, or set authenticate: false')
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode('ascii')
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode('ascii')
    handle = secrets.token_hex(16)
    username, password = 'bdp-%s' % secrets.token_hex(4), secrets.token_urlsafe(32)
    client = json.dumps({'username': username, 'password': password, 'public_key': public})
    fd = os.open(path(handle, directory), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    with os.fdopen(fd, 'wb') as handle_file:
        handle_file.write(to_bytes(client))
    server = json.dumps({'private_key': private, 'authorized_users': iperf3.authorized_user(username, password)})
    return handle, server


def take(handle, directory=None):
    """The client part of ``handle`` as JSON text; its file is removed (one test).  CredentialsError when it is
    gone (already used, or made by another run)."""
    name = path(handle, directory)
    try:
        with open(name, 'rb') as handle_file:
            return handle_file.read().decode('utf-8')
    except (IOError, OSError):
        raise CredentialsError('the credentials %s of this run are gone: they serve one test and were used '
                               'already, or come from another run; start a new server (bdp.wan_tune.iperf3_server '
                               'with authenticate: true) for each test' % handle)
    finally:
        if os.path.lexists(name):
            os.unlink(name)


def discard(handle, directory=None):
    """Remove the client part of ``handle`` if it is still there (the server was stopped unused)."""
    try:
        name = path(handle, directory)
    except CredentialsError:
        return
    if os.path.lexists(name):
        os.unlink(name)
