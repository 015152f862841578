# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the rsync module tests share: the awkward passwords, their escaped forms, the test's directories, the secrets
file as the action plugin hands it over, and a real rsync daemon on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time

import pytest
import yaml

FIXTURE = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'rsync', 'awkward_passwords.yml')
with open(FIXTURE, encoding='utf-8') as _handle:
    # {user: password}, in the file's order (also the molecule scenario rsync_daemon's users)
    AWKWARD = dict((user['name'], user['password']) for user in yaml.safe_load(_handle))

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='writes root-owned files')


def forms(password):
    """The password as a log could show it: itself, its repr, its JSON (escaped and not)."""
    return {password, repr(password)[1:-1], json.dumps(password)[1:-1], json.dumps(password, ensure_ascii=False)[1:-1]}


def leaks(text):
    """The awkward passwords found in ``text``, also in their escaped forms."""
    return [password for password in AWKWARD.values() if any(form in text for form in forms(password))]


def make_paths(tmp_path, names):
    """tmp_path (0755, so that the daemon's users can reach it) with a directory for each of ``names``."""
    for name in names:
        (tmp_path / name).mkdir()
    os.chmod(str(tmp_path), 0o755)
    return tmp_path


def handed_over(path, text):
    """The secrets file as the action plugin hands it over: a 0600 file the module takes (and removes)."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as handle:
        handle.write(text)
    return str(path)


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def needs_a_daemon():
    """Skip the test where a real daemon cannot run."""
    if os.geteuid() != 0 or not shutil.which('rsync'):
        pytest.skip('needs root and rsync')


@contextlib.contextmanager
def rsync_daemon(conf, port, log=None):
    """A real ``rsync --daemon`` on 127.0.0.1:``port`` from ``conf``, answering when the block starts."""
    needs_a_daemon()
    argv = ['rsync', '--daemon', '--no-detach', '--config', str(conf)] + (['--log-file', str(log)] if log else [])
    proc = subprocess.Popen(argv)
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(('127.0.0.1', port), 1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)
