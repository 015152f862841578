# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file helpers (plugins/module_utils/common/files.py): read_text, write_atomic, load_record, save_record.

write_atomic and save_record run with a real AnsibleModule and real files; the mode tests watch the real os calls
(nothing that hides a mode is stubbed).
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files


@pytest.fixture
def module():
    with patch_module_args({}):
        yield AnsibleModule(argument_spec={})


@pytest.fixture
def umask_077():
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def read(path):
    with open(str(path)) as handle:
        return handle.read()


def test_state_dir_default():
    assert files.STATE_DIR == '/var/lib/bdp_wan_tune'


# --------------------------------------------------------------------------- read_text

def test_read_text_returns_the_text(tmp_path):
    path = tmp_path / 'present'
    path.write_text('line 1\nline 2\n')
    assert files.read_text(str(path)) == 'line 1\nline 2\n'


def test_read_text_of_an_empty_file_is_an_empty_string(tmp_path):
    path = tmp_path / 'empty'
    path.write_text('')
    assert files.read_text(str(path)) == ''


def test_read_text_none_for_a_missing_file(tmp_path):
    assert files.read_text(str(tmp_path / 'missing')) is None
    assert files.read_text(str(tmp_path / 'no' / 'such' / 'dir' / 'file')) is None


def test_read_text_none_for_a_directory(tmp_path):
    assert files.read_text(str(tmp_path)) is None


# --------------------------------------------------------------------------- write_atomic

def test_write_atomic_new_file_is_0644_under_umask_077(module, tmp_path, umask_077):
    path = tmp_path / 'new.conf'
    files.write_atomic(module, str(path), 'tcp_bbr\n')
    assert read(path) == 'tcp_bbr\n'
    assert mode(path) == 0o644
    assert sorted(os.listdir(str(tmp_path))) == ['new.conf']          # no temporary file left behind


def test_write_atomic_moves_a_complete_file_with_its_final_mode(module, tmp_path, umask_077, monkeypatch):
    # what the rename puts in place is already whole and 0644, so no reader sees a partial or 0600 file
    seen = []
    real_rename = os.rename

    def rename(src, dest):
        seen.append((read(src), mode(src), os.path.dirname(src) == str(tmp_path)))
        return real_rename(src, dest)

    monkeypatch.setattr(files.os, 'rename', rename)
    files.write_atomic(module, str(tmp_path / 'file'), 'content\n')
    assert seen == [('content\n', 0o644, True)]             # same directory, so the rename is atomic


def spy_modes(monkeypatch, tmp_path):
    """Record (event, mode, size) of the temporary file at its creation, at each write and at the rename: the
    real files, with the real os calls (nothing stubbed but watched)."""
    events = []
    real_open, real_rename, real_fchmod = os.open, os.rename, os.fchmod

    def fd_state(fd):
        st = os.fstat(fd)
        return stat.S_IMODE(st.st_mode), st.st_size, st.st_uid

    def spy_open(path, flags, mode=0o777, *args, **kwargs):
        fd = real_open(path, flags, mode, *args, **kwargs)
        if str(path).startswith(str(tmp_path)) and flags & os.O_CREAT:
            events.append(('created',) + fd_state(fd))
        return fd

    def spy_fchmod(fd, mode):
        events.append(('before chmod',) + fd_state(fd))
        return real_fchmod(fd, mode)

    def spy_rename(src, dest):
        st = os.lstat(src)
        events.append(('renamed', stat.S_IMODE(st.st_mode), st.st_size, st.st_uid))
        return real_rename(src, dest)

    monkeypatch.setattr(files.os, 'open', spy_open)
    monkeypatch.setattr(files.os, 'fchmod', spy_fchmod)
    monkeypatch.setattr(files.os, 'rename', spy_rename)
    return events


@pytest.mark.parametrize('umask', [0o000, 0o022, 0o077])
def test_a_secret_is_0600_from_its_first_byte(module, tmp_path, monkeypatch, umask):
    """Issue 15, item 10: the secrets file was created 0666 & ~umask, then chmod 0600.  Now the temporary file is
    created 0600 (O_EXCL), empty, and it is 0600 with all its bytes when it is renamed; under every umask."""
    events = spy_modes(monkeypatch, tmp_path)
    old = os.umask(umask)
    try:
        files.write_atomic(module, str(tmp_path / 'rsyncd.secrets'), 'migrate:pw\n', mode=0o600, owner=os.getuid(),
                           group=os.getgid())
    finally:
        os.umask(old)
    assert events == [('created', 0o600, 0, os.getuid()), ('before chmod', 0o600, 0, os.getuid()),
                      ('renamed', 0o600, len('migrate:pw\n'), os.getuid())]
    assert mode(tmp_path / 'rsyncd.secrets') == 0o600 and read(tmp_path / 'rsyncd.secrets') == 'migrate:pw\n'
    assert os.listdir(str(tmp_path)) == ['rsyncd.secrets']


def test_a_secret_replacing_a_world_readable_file_is_never_readable(module, tmp_path, monkeypatch):
    path = tmp_path / 'rsyncd.secrets'
    path.write_text('old:pw\n')
    os.chmod(str(path), 0o644)
    events = spy_modes(monkeypatch, tmp_path)
    files.write_atomic(module, str(path), b'new:pw\n', mode=0o600)
    assert all(item[1] == 0o600 for item in events), events
    assert mode(path) == 0o600 and read(path) == 'new:pw\n'


def test_write_atomic_leaves_no_temporary_file_when_it_fails(module, tmp_path, monkeypatch):
    def broken(src, dest):
        raise OSError(18, 'cross-device link')
    monkeypatch.setattr(files.os, 'rename', broken)
    with pytest.raises(OSError):
        files.write_atomic(module, str(tmp_path / 'file'), 'x')
    assert os.listdir(str(tmp_path)) == []


def test_write_atomic_gives_the_owner_before_the_rename(module, tmp_path):
    if os.geteuid() != 0:
        pytest.skip('chown needs root')
    path = tmp_path / 'key'
    files.write_atomic(module, str(path), 'k', mode=0o640, owner=65534, group=65534)
    st = os.stat(str(path))
    assert (st.st_uid, st.st_gid, mode(path)) == (65534, 65534, 0o640)


# --------------------------------------------------------------------------- secrets handed over in a file

def test_take_secret_reads_and_removes_the_file(tmp_path):
    src = tmp_path / 'secret'
    src.write_bytes(b'a:\\b\n')
    assert files.take_secret(str(src)) == b'a:\\b\n'
    assert not src.exists()


def test_take_secret_removes_the_file_even_when_it_cannot_be_read(tmp_path, monkeypatch):
    src = tmp_path / 'secret'
    src.write_bytes(b'x')
    real_open = open

    def failing_open(path, *args, **kwargs):
        if str(path) == str(src):
            raise IOError(5, 'I/O error')
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr('builtins.open', failing_open)
    with pytest.raises(IOError):
        files.take_secret(str(src))
    assert not src.exists()


def test_secret_unchanged_compares_content_mode_and_owner(module, tmp_path):
    path = tmp_path / 'secret'
    uid, gid = os.getuid(), os.getgid()
    assert not files.secret_unchanged(str(path), b'a', owner=uid, group=gid)
    files.write_atomic(module, str(path), b'a', mode=0o600)
    assert files.secret_unchanged(str(path), b'a', owner=uid, group=gid)
    assert not files.secret_unchanged(str(path), b'b', owner=uid, group=gid)
    assert not files.secret_unchanged(str(path), b'a', owner=uid + 1, group=gid)
    os.chmod(str(path), 0o640)
    assert not files.secret_unchanged(str(path), b'a', owner=uid, group=gid)


def test_write_atomic_resets_the_mode_of_an_existing_file(module, tmp_path, umask_077):
    path = tmp_path / 'old.conf'
    path.write_text('old\n')
    os.chmod(str(path), 0o600)
    files.write_atomic(module, str(path), 'new\n')
    assert read(path) == 'new\n'
    assert mode(path) == 0o644
    assert sorted(os.listdir(str(tmp_path))) == ['old.conf']


def test_write_atomic_replaces_the_file_rather_than_writing_into_it(module, tmp_path):
    path = tmp_path / 'file'
    path.write_text('old\n')
    inode = os.stat(str(path)).st_ino
    keep = open(str(path))                  # a reader that opened the old file keeps seeing it whole
    try:
        files.write_atomic(module, str(path), 'new\n')
        assert keep.read() == 'old\n'
    finally:
        keep.close()
    assert read(path) == 'new\n'
    assert os.stat(str(path)).st_ino != inode


def test_write_atomic_with_another_mode(module, tmp_path, umask_077):
    path = tmp_path / 'secret'
    files.write_atomic(module, str(path), 'x', mode=0o600)
    assert mode(path) == 0o600
    path.chmod(0o644)
    files.write_atomic(module, str(path), 'y', mode=0o640)
    assert mode(path) == 0o640
    assert read(path) == 'y'


def test_write_atomic_creates_the_directories(module, tmp_path):
    path = tmp_path / 'etc' / 'modules-load.d' / 'bdp-wan-tune.conf'
    files.write_atomic(module, str(path), 'sch_fq\n')
    assert read(path) == 'sch_fq\n'
    assert os.path.isdir(str(tmp_path / 'etc' / 'modules-load.d'))
    assert mode(path) == 0o644


def test_write_atomic_relative_path(module, tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    files.write_atomic(module, 'here.txt', 'text')
    assert read(tmp_path / 'here.txt') == 'text'
    assert os.listdir(str(tmp_path)) == ['here.txt']


# --------------------------------------------------------------------------- load_record

def test_load_record_missing_file_is_empty(tmp_path):
    assert files.load_record(str(tmp_path / 'state' / 'qdisc.json')) == {}


@pytest.mark.parametrize('text', ['', 'not json', '{"eth0": "fq_codel"', '\x00\x01garbage', '{"a": 1}}'])
def test_load_record_garbage_is_empty(tmp_path, text):
    path = tmp_path / 'qdisc.json'
    path.write_text(text)
    assert files.load_record(str(path)) == {}


def test_load_record_undecodable_bytes_is_empty(tmp_path):
    path = tmp_path / 'qdisc.json'
    path.write_bytes(b'\xff\xfe{"eth0": \xc3\x28}')
    assert files.load_record(str(path)) == {}


def test_load_record_directory_is_empty(tmp_path):
    assert files.load_record(str(tmp_path)) == {}


def test_load_record_reads_the_dict(tmp_path):
    path = tmp_path / 'qdisc.json'
    path.write_text('{"eth0": "fq_codel", "wan0": "noqueue"}\n')
    assert files.load_record(str(path)) == {'eth0': 'fq_codel', 'wan0': 'noqueue'}


@pytest.mark.parametrize('text', ['null', '[]', '["eth0"]', '"fq_codel"', '42'])
def test_load_record_json_that_is_not_an_object_is_empty(tmp_path, text):
    path = tmp_path / 'qdisc.json'
    path.write_text(text)
    assert files.load_record(str(path)) == {}


# --------------------------------------------------------------------------- save_record

def test_save_record_writes_sorted_json_0644_and_creates_the_directory(module, tmp_path, umask_077):
    path = tmp_path / 'state' / 'qdisc.json'
    files.save_record(module, str(path), {'wan0': 'noqueue', 'eth0': 'fq_codel'})
    assert read(path) == '{\n  "eth0": "fq_codel",\n  "wan0": "noqueue"\n}\n'
    assert mode(path) == 0o644
    assert files.load_record(str(path)) == {'eth0': 'fq_codel', 'wan0': 'noqueue'}
    assert os.listdir(str(tmp_path / 'state')) == ['qdisc.json']


def test_save_record_round_trips_nested_records(module, tmp_path):
    path = tmp_path / 'state' / '90-bdp-wan-tune.conf.json'
    record = {'original': {'net.core.rmem_max': '212992', 'net.ipv4.tcp_rmem': None}, 'file_existed': False}
    files.save_record(module, str(path), record)
    assert files.load_record(str(path)) == record
    assert json.loads(read(path)) == record


def test_save_record_replaces_an_earlier_record(module, tmp_path):
    path = tmp_path / 'state' / 'qdisc.json'
    files.save_record(module, str(path), {'eth0': 'fq_codel'})
    files.save_record(module, str(path), {'wan0': 'noqueue'})
    assert files.load_record(str(path)) == {'wan0': 'noqueue'}


def test_save_record_empty_removes_the_file_and_the_empty_directory(module, tmp_path):
    state = tmp_path / 'state'
    path = state / 'qdisc.json'
    files.save_record(module, str(path), {'eth0': 'fq_codel'})
    files.save_record(module, str(path), {})
    assert not os.path.exists(str(path))
    assert not os.path.exists(str(state))
    assert os.path.isdir(str(tmp_path))                         # only the record's own directory goes


def test_save_record_empty_keeps_a_directory_with_other_files(module, tmp_path):
    state = tmp_path / 'state'
    path = state / 'qdisc.json'
    files.save_record(module, str(path), {'eth0': 'fq_codel'})
    files.save_record(module, str(state / '90-bdp-wan-tune.conf.json'), {'original': {'a': '1'}})
    files.save_record(module, str(path), {})
    assert not os.path.exists(str(path))
    assert os.listdir(str(state)) == ['90-bdp-wan-tune.conf.json']


def test_save_record_empty_without_a_record_does_nothing(module, tmp_path):
    state = tmp_path / 'state'
    files.save_record(module, str(state / 'qdisc.json'), {})     # no file, no directory: nothing to do
    assert not os.path.exists(str(state))
    state.mkdir()
    files.save_record(module, str(state / 'qdisc.json'), {})     # an empty directory it did not empty stays
    assert os.path.isdir(str(state))
