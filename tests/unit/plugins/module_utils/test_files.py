# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file helpers (plugins/module_utils/files.py): read_text, write_atomic, load_record, save_record.

write_atomic and save_record run with a real AnsibleModule, so its atomic_move() (which gives a new file
0666 & ~umask and an existing file the old file's mode) is the one the modules use on a host.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.bdp.wan_tune.plugins.module_utils import files


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
    # what atomic_move() puts in place is already whole and 0644, so no reader sees a partial or 0600 file
    seen = []
    real_move = module.atomic_move

    def atomic_move(src, dest, *args, **kwargs):
        seen.append((read(src), mode(src), os.path.dirname(src) == str(tmp_path)))
        return real_move(src, dest, *args, **kwargs)

    monkeypatch.setattr(module, 'atomic_move', atomic_move)
    files.write_atomic(module, str(tmp_path / 'file'), 'content\n')
    assert seen == [('content\n', 0o644, True)]             # same directory, so the rename is atomic


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
