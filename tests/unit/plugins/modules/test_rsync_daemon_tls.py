# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rsync_daemon_tls for a sender (server=false, files in tmp_path): the key is made 0600 and never returned, the
request is signed by a real CA, check mode changes nothing, a second run changes nothing, absent removes it all."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.bdp.wan_tune.plugins.modules import rsync_daemon_tls
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import tls_ca

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason='writes root-owned files')


def args(tmp_path, **kwargs):
    base = {'directory': str(tmp_path / 'etc' / 'bdp-wan-tune' / 'client'), 'server': False,
            'state_dir': str(tmp_path / 'state')}
    base.update(kwargs)
    return base


@needs_root
def test_request_present_absent(tmp_path, run_module):
    checked = run_module(rsync_daemon_tls.main, dict(args(tmp_path, state='request'), _ansible_check_mode=True))
    assert checked['changed'] and checked['key_created'] and checked['csr'] is None
    assert not (tmp_path / 'etc').exists() and not (tmp_path / 'state').exists()

    first = run_module(rsync_daemon_tls.main, args(tmp_path, state='request'))
    key = first['paths']['key']
    assert first['changed'] and 'CERTIFICATE REQUEST' in first['csr'] and first['cert'] is None
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and os.stat(key).st_uid == 0
    with open(key) as handle:
        key_text = handle.read()
    assert 'PRIVATE KEY' in key_text and key_text.split('\n')[1] not in str(first)

    again = run_module(rsync_daemon_tls.main, args(tmp_path, state='request'))
    assert not again['changed'] and tls_ca.csr_public_key(again['csr']) == tls_ca.csr_public_key(first['csr'])

    ca_cert, ca_key = tls_ca.create(str(tmp_path / 'ca'), 'unit CA')
    cert = tls_ca.sign(first['csr'], ca_cert, ca_key, ['sender'], 90, 'sender')
    present = dict(args(tmp_path, state='present'), ca_cert=tls_ca.pem(ca_cert), cert=cert)
    predicted = run_module(rsync_daemon_tls.main, dict(present, _ansible_check_mode=True, _ansible_diff=True))
    assert predicted['changed'] and not os.path.exists(predicted['paths']['cert'])
    assert key_text.split('\n')[1] not in str(predicted)
    written = run_module(rsync_daemon_tls.main, present)
    assert written['changed'] and set(written['files'].values()) == {'written'}
    assert stat.S_IMODE(os.stat(written['paths']['cert']).st_mode) == 0o644
    assert not run_module(rsync_daemon_tls.main, present)['changed']
    kept = run_module(rsync_daemon_tls.main, args(tmp_path, state='request'))
    assert tls_ca.judge(kept['cert'], ca_cert, tls_ca.csr_public_key(kept['csr']), ['sender']) is None

    removed = run_module(rsync_daemon_tls.main, args(tmp_path, state='absent'))
    assert removed['changed'] and removed['files'][key] == 'removed'
    assert not (tmp_path / 'etc' / 'bdp-wan-tune').exists() and not (tmp_path / 'state').exists()
    assert not run_module(rsync_daemon_tls.main, args(tmp_path, state='absent'))['changed']


@needs_root
def test_a_key_others_can_read_is_refused(tmp_path, run_module):
    run_module(rsync_daemon_tls.main, args(tmp_path, state='request'))
    key = os.path.join(args(tmp_path)['directory'], 'host.key')
    os.chmod(key, 0o644)
    result = run_module(rsync_daemon_tls.main, args(tmp_path, state='request'))
    assert result['rc'] != 0 and 'expected root and 0600' in result['msg'] and 'mode 0644' in result['msg']
