# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared fixtures: a fake /proc/sys tree and fake sysctl.d directories in tmp_path."""

from __future__ import annotations

import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import sysctl


class FakeProc(object):
    """A /proc/sys look-alike: one file per key, mode 0644 (writable) or 0444 (read-only)."""

    def __init__(self, root):
        self.root = str(root)

    def path(self, key):
        return sysctl.key_path(sysctl.normalize_key(key), self.root)

    def set(self, key, value, mode=0o644):
        path = self.path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.chmod(path, 0o644)
        with open(path, 'w') as handle:
            handle.write('%s\n' % value)
        os.chmod(path, mode)
        return path

    def readonly(self, key, value):
        return self.set(key, value, mode=0o444)

    def raw(self, key):
        with open(self.path(key)) as handle:
            return handle.read()

    def get(self, key):
        return ' '.join(self.raw(key).split())


@pytest.fixture
def proc(tmp_path, monkeypatch):
    """A fake /proc/sys; sysctl.PROC_SYS points at it for the test."""
    fake = FakeProc(tmp_path / 'proc_sys')
    os.makedirs(fake.root)
    monkeypatch.setattr(sysctl, 'PROC_SYS', fake.root)
    return fake


class FakeEtc(object):
    """sysctl.d directories (/etc, /run, /usr/lib) and /etc/sysctl.conf below tmp_path."""

    def __init__(self, root):
        root = str(root)
        self.etc = os.path.join(root, 'etc', 'sysctl.d')
        self.run = os.path.join(root, 'run', 'sysctl.d')
        self.usr = os.path.join(root, 'usr', 'lib', 'sysctl.d')
        self.dirs = (self.etc, self.run, self.usr)
        self.conf = os.path.join(root, 'etc', 'sysctl.conf')
        for directory in self.dirs:
            os.makedirs(directory)

    def write(self, directory, name, text):
        path = os.path.join(directory, name)
        with open(path, 'w') as handle:
            handle.write(text)
        return path

    def write_conf(self, text):
        with open(self.conf, 'w') as handle:
            handle.write(text)
        return self.conf


@pytest.fixture
def etc(tmp_path, monkeypatch):
    """Fake sysctl.d directories; sysctl.SYSCTL_DIRS and sysctl.SYSCTL_CONF point at them."""
    fake = FakeEtc(tmp_path / 'root')
    monkeypatch.setattr(sysctl, 'SYSCTL_DIRS', fake.dirs)
    monkeypatch.setattr(sysctl, 'SYSCTL_CONF', fake.conf)
    return fake
