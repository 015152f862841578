# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of originals (plugins/module_utils/common/record.py): remember only the first time, restore then forget,
and the file formats the modules had before it (qdisc.json flat, the others under "original" or "interfaces")."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.record import Record


@pytest.fixture
def module():
    with patch_module_args({}):
        yield AnsibleModule(argument_spec={})


def on_disk(path):
    with open(path) as handle:
        return json.load(handle)


def test_missing_record_is_empty_and_writes_nothing(module, tmp_path):
    rec = Record(module, str(tmp_path / 'state'), 'jumbo_mtu.json')
    assert rec.data == {} and rec.originals() == {} and rec.original('eth0') is None
    assert rec.original('eth0', 1500) == 1500
    rec.save()
    assert not os.path.exists(rec.path) and not os.path.exists(str(tmp_path / 'state'))


def test_remember_keeps_the_first_original(module, tmp_path):
    rec = Record(module, str(tmp_path), 'x.conf.json')
    assert rec.remember('net.core.rmem_max', '212992') == '212992'
    assert rec.remember('net.core.rmem_max', '67108864') == '212992'
    rec.save()
    assert on_disk(rec.path) == {'original': {'net.core.rmem_max': '212992'}}
    again = Record(module, str(tmp_path), 'x.conf.json')
    again.remember('net.core.rmem_max', '1')
    assert again.original('net.core.rmem_max') == '212992'


def test_other_keys_of_the_record_stay(module, tmp_path):
    path = tmp_path / 'jumbo_mtu.json'
    path.write_text(json.dumps({'original': {'eth0': 1500}, 'pending': None, 'history': [{'token': 't'}]}))
    rec = Record(module, str(tmp_path), 'jumbo_mtu.json')
    rec.remember('eth1', 1500)
    rec.save()
    assert on_disk(str(path)) == {'original': {'eth0': 1500, 'eth1': 1500}, 'pending': None,
                                  'history': [{'token': 't'}]}


def test_flat_record_as_qdisc_json(module, tmp_path):
    (tmp_path / 'qdisc.json').write_text('{"ens3": "mq/fq_codel"}\n')
    rec = Record(module, str(tmp_path), 'qdisc.json', section=None)
    assert rec.originals() == {'ens3': 'mq/fq_codel'}
    rec.remember('ens3', 'fq')
    rec.remember('ens4', 'fq_codel')
    rec.save()
    assert on_disk(rec.path) == {'ens3': 'mq/fq_codel', 'ens4': 'fq_codel'}
    rec.reset({'ens4': 'fq_codel'})
    rec.save()
    assert on_disk(rec.path) == {'ens4': 'fq_codel'}


def test_originals_is_a_copy(module, tmp_path):
    rec = Record(module, str(tmp_path), 'r.json')
    rec.originals()['eth0'] = 9000
    assert rec.data == {}


def test_put_replaces_an_entry(module, tmp_path):
    rec = Record(module, str(tmp_path), 'jumbo_mtu_persist.json', section='interfaces')
    rec.put('eth0', {'backend': 'networkd', 'mtu': 9000})
    rec.put('eth0', {'backend': 'networkd', 'mtu': 8000})
    rec.save()
    assert on_disk(rec.path) == {'interfaces': {'eth0': {'backend': 'networkd', 'mtu': 8000}}}


def test_forget_and_the_last_one_removes_the_file(module, tmp_path):
    rec = Record(module, str(tmp_path / 'state'), 'r.json')
    rec.remember('a', 1)
    rec.remember('b', 2)
    rec.save()
    rec.forget('a', 'missing')
    rec.save()
    assert on_disk(rec.path) == {'original': {'b': 2}}
    rec.drop()
    assert rec.data == {} and not os.path.exists(rec.path) and not os.path.exists(str(tmp_path / 'state'))


def test_restore_all_then_forget(module, tmp_path):
    rec = Record(module, str(tmp_path), 'r.json')
    rec.remember('a', 1)
    rec.remember('b', 2)
    rec.save()
    done, finished = [], []
    restored, failed = rec.restore(sorted(rec.originals().items()), lambda k, v: done.append((k, v)),
                                   finish=lambda: finished.append(os.path.exists(rec.path)))
    assert restored == {'a': 1, 'b': 2} and failed == {} and done == [('a', 1), ('b', 2)]
    assert finished == [True]                   # finish() runs before the record goes
    assert not os.path.exists(rec.path)


def test_restore_tries_every_key_and_keeps_the_whole_record(module, tmp_path):
    rec = Record(module, str(tmp_path), 'r.json')
    for key, value in (('a', 1), ('b', 2), ('c', 3)):
        rec.remember(key, value)
    rec.save()
    tried = []

    def put_back(key, value):
        tried.append(key)
        if key == 'b':
            raise OSError('EPERM')

    restored, failed = rec.restore(sorted(rec.originals().items()), put_back, finish=lambda: pytest.fail('finish'))
    assert tried == ['a', 'b', 'c'] and restored == {'a': 1, 'c': 3} and list(failed) == ['b']
    assert on_disk(rec.path) == {'original': {'a': 1, 'b': 2, 'c': 3}}
