# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small file helpers shared by the collection's modules: read text, write atomically, keep JSON records.

The records (default directory /var/lib/bdp_wan_tune) hold what a host had before a module first
changed it, so that state=absent can put it back.
"""

import json
import os
import tempfile

STATE_DIR = '/var/lib/bdp_wan_tune'


def read_text(path):
    """The file's text, or None when it does not exist or cannot be read."""
    try:
        with open(path, 'r') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def write_atomic(module, path, content, mode=0o644):
    """Write ``content`` to ``path`` through a temporary file in the same directory and an atomic rename."""
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
        os.chmod(directory, 0o755)  # makedirs() honours the umask
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.bdp-wan-tune-')
    with os.fdopen(fd, 'w') as handle:
        handle.write(content)
    os.chmod(tmp, mode)
    module.atomic_move(tmp, path)
    os.chmod(path, mode)  # atomic_move() gives a new file 0666 & ~umask


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
