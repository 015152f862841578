# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pieces of nic_settings: the ethtool setters (against the nic_host fixture), the .link file helpers and the
plan's rules (rings, txqueuelen and the qdisc, governor, the guards' readers)."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import linkfile
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import settings


def test_set_rings_keeps_the_other_fields_and_a_ring_too_large_is_refused(nic_host):
    nic_host.add_nic('ens4', driver='e1000e', rings=(256, 4096, 256, 4096), coalescing=(3, False, False))
    ethtool.set_rings('ens4', 1024, 512)
    assert ethtool.rings('ens4') == {'supported': True, 'rx': 1024, 'rx_max': 4096, 'tx': 512, 'tx_max': 4096}
    assert nic_host.sets[-1][2]['rx_max'] == 4096       # the read values went back with the request
    with pytest.raises(OSError) as info:
        ethtool.set_rings('ens4', 8192, 512)
    assert ethtool.refused(info.value) and ethtool.refusal_code(info.value, 'e1000e') == 'e1000e, EINVAL'


def test_set_coalescing_changes_only_the_fields_named(nic_host):
    nic_host.add_nic('ens4', driver='e1000e', rings=None, coalescing=(3, False, False))
    ethtool.set_coalescing('ens4', rx_usecs=50)
    assert ethtool.coalescing('ens4') == {'supported': True, 'adaptive_rx': False, 'adaptive_tx': False,
                                          'rx_usecs': 50, 'tx_usecs': 0}
    with pytest.raises(ValueError):
        ethtool.set_coalescing('ens4', rx_usecz=1)
    nic_host.fail[('ens4', ethtool.ETHTOOL_SCOALESCE)] = errno.EIO
    with pytest.raises(OSError) as info:
        ethtool.set_coalescing('ens4', adaptive_rx=True)
    assert not ethtool.refused(info.value)


def test_permanent_address(nic_host):
    nic_host.add_nic('ens4', driver='e1000e', permaddr='52:54:00:12:34:56')
    nic_host.add_nic('veth0', permaddr='00:00:00:00:00:00')
    nic_host.add_nic('lo')
    assert ethtool.permanent_address('ens4') == '52:54:00:12:34:56'
    assert ethtool.permanent_address('veth0') is None and ethtool.permanent_address('lo') is None


@pytest.mark.parametrize('text, version', [('252 (252.36-1~deb12u1)\n', 252), ('257.9-1~deb13u1', 257),
                                           ('', None), ('udevadm: not found', None)])
def test_systemd_version(text, version):
    assert linkfile.systemd_version(text) == version


def test_keys_only_where_the_systemd_version_accepts_them():
    values = {'rings': {'rx': 4096, 'tx': 2048}, 'txqueuelen': 10000,
              'coalescing': {'adaptive_rx': False, 'adaptive_tx': True, 'rx_usecs': 50}}
    assert linkfile.keys(values, 252) == ([('RxBufferSize', 4096), ('TxBufferSize', 2048),
                                           ('TransmitQueueLength', 10000), ('UseAdaptiveRxCoalesce', 'no'),
                                           ('UseAdaptiveTxCoalesce', 'yes'), ('RxCoalesceSec', '50us')], [])
    accepted, skipped = linkfile.keys(values, 247)
    assert accepted == [('RxBufferSize', 4096), ('TxBufferSize', 2048)]
    assert skipped == ['TransmitQueueLength', 'UseAdaptiveRxCoalesce', 'UseAdaptiveTxCoalesce', 'RxCoalesceSec']


def test_render_keeps_other_sections_and_replaces_our_keys():
    items = linkfile.parse('# c\n[Match]\nOriginalName=*\n[Link]\nNamePolicy=kernel\nRxBufferSize=max\n'
                           '[SR-IOV]\nVirtualFunction=0\n')
    keep = linkfile.kept(items, ['RxBufferSize'])
    text = linkfile.render('#!x\nline two', 'ens4', [('PermanentMACAddress', 'aa')], keep, [('RxBufferSize', 1)],
                           '/x/99-default.link')
    assert text.startswith('#!x\n# line two\n')
    assert text.endswith('[Match]\nPermanentMACAddress=aa\n\n[Link]\nNamePolicy=kernel\nRxBufferSize=1\n\n'
                         '[SR-IOV]\nVirtualFunction=0\n')


def test_applied_from_udev_data_else_udevadm(tmp_path):
    (tmp_path / 'n3').write_text('I:1\nE:ID_NET_LINK_FILE=/usr/lib/systemd/network/99-default.link\n')
    assert linkfile.applied(3, str(tmp_path)) == '/usr/lib/systemd/network/99-default.link'
    assert linkfile.applied(4, str(tmp_path), lambda index: 'ID_NET_LINK_FILE=/etc/systemd/network/5.link\n') == \
        '/etc/systemd/network/5.link'
    assert linkfile.applied(4, str(tmp_path)) is None
    assert linkfile.sorts_before('/etc/systemd/network/05-a.link', '10-bdp-wan-tune-x.link')
    assert not linkfile.sorts_before('/usr/lib/systemd/network/99-default.link', '10-bdp-wan-tune-x.link')


@pytest.mark.parametrize('text, used', [
    ('qdisc pfifo_fast 0: root refcnt 2 bands 3\n', True),
    ('qdisc mq 0: root\nqdisc pfifo_fast 0: parent :2\nqdisc pfifo_fast 0: parent :1\n', True),
    ('qdisc mq 0: root\nqdisc fq_codel 0: parent :1\n', False),
    ('qdisc multiq 1: root\nqdisc bfifo 10: parent 1:1\nqdisc pfifo 11: parent 1:2\n', True),
    ('qdisc cake 8001: root\n', False),
    ('qdisc noqueue 0: root refcnt 2\n', False),
    (None, False),
])
def test_the_qdiscs_that_use_the_device_queue_length(text, used):
    assert settings.queue_length_used('ens4', text)[0] is used


def test_choice_words_and_numbers():
    assert settings.choice('rings', 'MAX') == 'max'
    assert settings.choice('rings', '1024') == 1024
    assert settings.choice('coalescing', '0') == 0
    with pytest.raises(settings.SettingsError, match="nic_txqueuelen: '0' is not accepted; expected keep or a whole "
                                                     "number from 1 to 1000000."):
        settings.choice('txqueuelen', '0', 'nic_txqueuelen')
    assert settings.choice('rings', '65536') == 65536 and settings.choice('coalescing', '100000') == 100000
    with pytest.raises(settings.SettingsError):
        settings.choice('rings', '65537')
    assert settings.accepted('rings') == 'max, keep or a whole number from 1 to 65536'
    assert settings.accepted('coalescing') == 'adaptive, keep or a whole number from 0 to 100000'
    with pytest.raises(settings.SettingsError):
        settings.choice('rings', True)


def test_rings_without_a_maximum_are_unsupported():
    current = {'supported': True, 'rx': 0, 'rx_max': 0, 'tx': 0, 'tx_max': 0}
    assert settings.plan_rings(current, 'max', None, False)['status'] == 'unsupported'


def test_governor_where_performance_is_not_offered(nic_host):
    nic_host.governors('schedutil', 'schedutil')
    found = settings.governors(nic_host.cpu_dir)
    entry, writes = settings.plan_governor(found, 'performance', nic_host.cpu_dir)
    assert entry['status'] == 'unsupported' and writes == {}
    nic_host.write(os.path.join(nic_host.cpu_dir, 'cpu0', 'cpufreq', 'scaling_available_governors'),
                   'performance schedutil')
    entry, writes = settings.plan_governor(settings.governors(nic_host.cpu_dir), 'performance', nic_host.cpu_dir)
    assert entry == {'before': 'schedutil', 'after': 'performance, schedutil', 'status': 'changed',
                     'reason': '1 CPU(s) do not offer "performance"'}
    assert list(writes) == [os.path.join(nic_host.cpu_dir, 'cpu0', 'cpufreq', 'scaling_governor')]


def test_rsync_transfers_over_ipv6_and_not_other_ports(tmp_path):
    (tmp_path / 'net').mkdir()
    (tmp_path / 'net' / 'tcp').write_text('header\n   0: 0100007F:1F90 0100007F:9C40 01 0 0 0\n')
    (tmp_path / 'net' / 'tcp6').write_text(
        'header\n   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:9C40 01 0\n'
        '   1: 00000000000000000000000001000000:036A 00000000000000000000000001000000:9C41 01 0\n')
    assert settings.rsync_transfers(str(tmp_path)) == ['0:0:0:0:0:0:0:1 port 874 -> 0:0:0:0:0:0:0:1 port 40001']
    assert settings.rsync_transfers(str(tmp_path), [8080]) == [
        '127.0.0.1 port 8080 -> 127.0.0.1 port 40000', '0:0:0:0:0:0:0:1 port 8080 -> 0:0:0:0:0:0:0:1 port 40000']


def test_rsync_transfers_reads_a_real_connection_from_proc():
    """The guard against this host's own /proc: an established loopback connection to a listener is found on the
    listener's port (both ends: the server's socket and the client's), a listener alone is no transfer."""
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        assert settings.rsync_transfers(ports=[port]) == []
        client = socket.create_connection(('127.0.0.1', port))
        accepted, _address = server.accept()
        try:
            client_port = client.getsockname()[1]
            assert sorted(settings.rsync_transfers(ports=[port])) == sorted([
                '127.0.0.1 port %d -> 127.0.0.1 port %d' % (port, client_port),
                '127.0.0.1 port %d -> 127.0.0.1 port %d' % (client_port, port)])
            assert ('127.0.0.1', client_port, '127.0.0.1', port) in settings.tcp_connections()
        finally:
            accepted.close()
            client.close()
    finally:
        server.close()


def test_plan_coalescing_fields_on_their_own():
    current = {'supported': True, 'adaptive_rx': True, 'adaptive_tx': False, 'rx_usecs': 3}
    refused = {'coalescing.adaptive_tx': {'value': True, 'reason': 'the driver refused adaptive tx on (ena, EOPNOTSUPP)'}}
    assert settings.plan_coalescing(current, 'adaptive', refused)['status'] == 'unsupported'
    entry = settings.plan_coalescing(dict(current, adaptive_rx=False), 'adaptive', refused)
    assert entry['status'] == 'changed' and entry['after'] == {'adaptive_rx': True, 'adaptive_tx': False,
                                                               'rx_usecs': 3}
    assert settings.plan_coalescing(current, 'adaptive')['after']['adaptive_tx'] is True


def test_link_keys_of_the_coalescing_fields_given_only():
    assert linkfile.keys({'coalescing': {'adaptive_rx': True}}, 252) == ([('UseAdaptiveRxCoalesce', 'yes')], [])


def test_dropins_over_the_directories(tmp_path):
    for directory, name in (('etc', 'b.conf'), ('usr', 'a.conf'), ('usr', 'b.conf'), ('usr', 'c.txt')):
        (tmp_path / directory / '99-default.link.d').mkdir(parents=True, exist_ok=True)
        (tmp_path / directory / '99-default.link.d' / name).write_text('[Link]\n')
    dirs = (str(tmp_path / 'etc'), str(tmp_path / 'run'), str(tmp_path / 'usr'))
    assert linkfile.dropins('/usr/lib/systemd/network/99-default.link', dirs) == [
        str(tmp_path / 'usr' / '99-default.link.d' / 'a.conf'), str(tmp_path / 'etc' / '99-default.link.d' / 'b.conf')]
    assert linkfile.dropins('/x/10-other.link', dirs) == []


def test_migrations_found_by_the_runner_lock(tmp_path):
    import fcntl
    run_dir = tmp_path / 'migrate' / 'bdp-migrate-peer-data'
    run_dir.mkdir(parents=True)
    assert settings.migrations(str(tmp_path)) == []
    handle = open(run_dir / 'run.lock', 'w')
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert settings.migrations(str(tmp_path))[0].startswith('the migration bdp-migrate-peer-data')
    finally:
        handle.close()
