# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small file helpers shared by the collection's modules: read text, write atomically, keep JSON records.

The records (default directory /var/lib/bdp_wan_tune) hold what a host had before a module first
changed it, so that state=absent can put it back.
"""

import binascii
import errno
import json
import os

STATE_DIR = '/var/lib/bdp_wan_tune'


def read_text(path):
    """The file's text, or None when it does not exist or cannot be read."""
    try:
        with open(path, 'r') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def write_atomic(module, path, content, mode=0o644, owner=None, group=None):
    """Write ``content`` (text or bytes) to ``path`` through a temporary file in the same directory and a rename.

    The temporary file is created by os.open(O_CREAT | O_EXCL, 0o600): it is never wider than 0600 while it is
    written, whatever the umask, so a secret is 0600 from its first byte.  Its final mode (``mode``) and owner
    (``owner``/``group``, numeric ids; None keeps the module's user) are set on the open file before the rename, so
    ``path`` never exists with another mode or owner.  No atomic_move(): it gives a new file 0666 & ~umask.
    """
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
        os.chmod(directory, 0o755)  # makedirs() honours the umask
    data = content if isinstance(content, bytes) else content.encode('utf-8')
    fd, tmp = _create_private(directory)
    try:
        with os.fdopen(fd, 'wb') as handle:
            if owner is not None or group is not None:
                os.fchown(handle.fileno(), -1 if owner is None else owner, -1 if group is None else group)
            os.fchmod(handle.fileno(), mode)    # after the chown (which may clear set-id bits), before the data
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _selinux_context(module, tmp, path)
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def _create_private(directory):
    """(fd, path) of a new file in ``directory`` created 0600 with O_EXCL (never an existing file or a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_CLOEXEC', 0)
    for dummy in range(100):
        tmp = os.path.join(directory, '.bdp-wan-tune-%s' % binascii.hexlify(os.urandom(8)).decode('ascii'))
        try:
            return os.open(tmp, flags, 0o600), tmp
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
    raise OSError(errno.EEXIST, 'no free temporary name in %s' % directory)


def _selinux_context(module, tmp, path):
    """Give ``tmp`` the SELinux context ``path`` has (or its default), as atomic_move() would."""
    if not module.selinux_enabled():
        return
    context = module.selinux_context(path) if os.path.exists(path) else module.selinux_default_context(path)
    module.set_context_if_different(tmp, context, False)


def take_secret(src):
    """The bytes of the secret the action plugin transferred to ``src`` (in Ansible's 0700 remote tmp dir); ``src``
    is removed whether or not it could be read.  The controller side is plugins/plugin_utils/secret_transfer.py."""
    try:
        with open(src, 'rb') as handle:
            return handle.read()
    finally:
        if os.path.lexists(src):
            os.unlink(src)


def secret_unchanged(dest, data, mode=0o600, owner=0, group=0):
    """Whether ``dest`` holds ``data`` with this mode and owner (compared here, never returned or diffed)."""
    old = read_bytes(dest)
    if old is None:
        return False
    stat = os.lstat(dest)
    return old == data and stat.st_uid == owner and stat.st_gid == group and stat.st_mode & 0o7777 == mode


def read_bytes(path):
    """The file's bytes, or None when it does not exist or cannot be read."""
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def load_record(path):
    """A JSON record as a dict ({} when missing or unreadable)."""
    try:
        record = json.loads(read_text(path) or '{}')
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def save_record(module, path, record):
    """Write a JSON record, or remove it (and its directory when empty) when ``record`` is empty."""
    if record:
        write_atomic(module, path, json.dumps(record, indent=2, sort_keys=True) + '\n')
        return
    if os.path.exists(path):
        os.unlink(path)
        directory = os.path.dirname(path)
        if os.path.isdir(directory) and not os.listdir(directory):
            os.rmdir(directory)
