# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nic_settings: the module against a fake host (the nic_host fixture answers sysfs and both sides of the ethtool
ioctl; a fake ``ip``, ``tc``, ``udevadm`` and ``systemctl``), and once for real in a throwaway network namespace
(a veth pair with an address of 198.18.0.0/15; nothing is sent)."""

from __future__ import annotations

import errno
import json
import os
import struct
import subprocess
import sys
import time

import pytest

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtuplan
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import commit as nic_commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import linkfile
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey
from ansible_collections.bdp.wan_tune.plugins.modules import nic_settings

LINKS = [
    {'ifindex': 1, 'ifname': 'lo', 'mtu': 65536, 'link_type': 'loopback'},
    {'ifindex': 2, 'ifname': 'ens3', 'mtu': 1500, 'link_type': 'ether'},
    {'ifindex': 3, 'ifname': 'ens4', 'mtu': 9000, 'link_type': 'ether'},
    {'ifindex': 4, 'ifname': 'ens4.20', 'link': 'ens4', 'mtu': 9000, 'link_type': 'ether',
     'linkinfo': {'info_kind': 'vlan', 'info_data': {'id': 20}}},
]
ROUTES = {'198.18.0.2': {'dst': '198.18.0.2', 'dev': 'ens4.20', 'prefsrc': '198.18.0.1'},
          '198.18.9.9': {'dst': '198.18.9.9', 'dev': 'ens3', 'gateway': '198.18.2.254', 'prefsrc': '198.18.2.1'}}
ADDRS = [{'ifname': 'ens3', 'addr_info': [{'local': '198.18.2.1'}]},
         {'ifname': 'ens4.20', 'addr_info': [{'local': '198.18.0.1'}]}]
DEFAULT_LINK = ('[Match]\nOriginalName=*\n\n[Link]\nNamePolicy=keep kernel database onboard slot path\n'
                'AlternativeNamesPolicy=database onboard slot path\nMACAddressPolicy=persistent\n')
PERMADDR = '52:54:00:12:34:56'
# /proc/net/tcp: a listener on 873 and an established rsync daemon transfer 198.18.0.1:873 <- 198.18.0.2:40000
TCP_HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n'
TCP_LISTEN = '   0: 00000000:0369 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n'
TCP_RSYNC = '   1: 010012C6:0369 020012C6:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2\n'


@pytest.fixture
def host(nic_host, monkeypatch, tmp_path):
    """ens4 e1000e-like (rings 256 of 4096, adaptive coalescing offered, pfifo_fast) with the VLAN ens4.20 on it;
    ens3 virtio-like (rings 256 of 256, no coalescing, mq/fq); a VM without cpufreq; systemd-udevd 252 with
    99-default.link applied to every device."""
    nic_host.add_nic('ens3', driver='virtio_net', rings=(256, 256, 256, 256), coalescing=None, stats={}, ifindex=2,
                     address='52:54:00:00:00:03')
    nic_host.add_nic('ens4', driver='e1000e', rings=(256, 4096, 256, 4096), coalescing=(3, False, False),
                     stats={}, ifindex=3, address=PERMADDR, permaddr=PERMADDR)
    nic_host.add_nic('ens4.20', ifindex=4, address=PERMADDR)
    nic_host.governors(None, None)
    nic_host.qdiscs = {'ens3': 'qdisc mq 0: root\nqdisc fq 0: parent :1 limit 10000p\n',
                       'ens4': 'qdisc pfifo_fast 0: root refcnt 2 bands 3\n',
                       'ens4.20': 'qdisc noqueue 0: root refcnt 2\n'}
    nic_host.commands, nic_host.ssh_client, nic_host.units = [], None, ''
    root = tmp_path / 'root'
    nic_host.link_dir, nic_host.tmpfiles_dir = str(root / 'etc/systemd/network'), str(root / 'etc/tmpfiles.d')
    monkeypatch.setattr(linkfile, 'LINK_DIR', nic_host.link_dir)          # the scratch root's, not the machine's
    monkeypatch.setattr(linkfile, 'TMPFILES_DIR', nic_host.tmpfiles_dir)
    nic_host.state_dir = str(root / 'var/lib/bdp_wan_tune')
    udev = root / 'run/udev'
    (udev / 'data').mkdir(parents=True)
    (udev / 'control').write_text('')
    default = root / 'usr/lib/systemd/network/99-default.link'
    default.parent.mkdir(parents=True)
    default.write_text(DEFAULT_LINK)
    nic_host.default_link = str(default)
    for index in (2, 3, 4):
        (udev / 'data' / ('n%d' % index)).write_text('I:1\nE:ID_NET_LINK_FILE=%s\nE:ID_NET_NAME=x\n' % default)
    nic_host.udev_data = str(udev / 'data')
    for name, value in (('SYS_CLASS_NET', nic_host.sys_class_net), ('CPU_DIR', nic_host.cpu_dir),
                        ('PROC', nic_host.proc)):
        monkeypatch.setattr(survey, name, value)
    monkeypatch.setattr(linkfile, 'UDEV_DATA', str(udev / 'data'))
    monkeypatch.setattr(linkfile, 'UDEV_CONTROL', str(udev / 'control'))
    monkeypatch.setattr(linkfile, 'DROPIN_DIRS', tuple(str(root / part) for part in (
        'etc/systemd/network', 'run/systemd/network', 'usr/local/lib/systemd/network', 'usr/lib/systemd/network')))
    nic_host.udev_info = ''
    monkeypatch.setattr(mtuplan, 'ssh_client', lambda: nic_host.ssh_client)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, args, **kw: run_command(nic_host, args))
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, required=False, opt_dirs=None:
                        '/usr/bin/%s' % name)
    return nic_host


def run_command(host, args):
    """The fake ip, tc, udevadm and systemctl."""
    host.commands.append(args)
    tool, rest = os.path.basename(args[0]), args[1:]
    if tool == 'ip' and rest[:2] == ['-d', '-j']:
        return 0, json.dumps(LINKS), ''
    if tool == 'ip' and rest[:3] == ['-j', 'route', 'get']:
        route = ROUTES.get(rest[3])
        return (0, json.dumps([route]), '') if route else (2, '', 'RTNETLINK answers: Network is unreachable')
    if tool == 'ip' and rest[:3] == ['-j', 'addr', 'show']:
        return 0, json.dumps(ADDRS), ''
    if tool == 'ip' and rest[:3] == ['link', 'set', 'dev'] and rest[4] == 'txqueuelen':
        host.write(os.path.join(host.sys_class_net, rest[3], 'tx_queue_len'), rest[5])
        return 0, '', ''
    if tool == 'tc':
        return 0, host.qdiscs.get(rest[-1], ''), ''
    if tool == 'udevadm' and rest == ['--version']:
        return 0, '252 (252.36-1~deb12u1)\n', ''
    if tool == 'udevadm' and rest[0] == 'info':
        return 0, host.udev_info, ''
    if tool == 'systemctl' and rest[0] == 'list-units':
        return 0, host.units, ''
    raise AssertionError('unexpected command %r' % (args,))


def args(host, **extra):
    return dict({'state_dir': host.state_dir}, **extra)


def rings(host, name):
    return host.ethtool[name]['rings']


def test_e1000e_rings_to_the_maximum_and_adaptive_coalescing(run_module, host):
    result = run_module(nic_settings.main, args(host, peers=['198.18.0.2']))
    assert result['rc'] == 0 and result['changed'] is True, result
    assert result['selected'] == {'ens4.20': 'route to 198.18.0.2', 'ens4': 'parent of vlan ens4.20'}
    ens4 = result['interfaces']['ens4']
    assert ens4['rings'] == {'before': {'rx': 256, 'tx': 256}, 'after': {'rx': 4096, 'tx': 4096},
                             'status': 'changed', 'reason': ''}
    assert ens4['coalescing']['status'] == 'changed' and ens4['coalescing']['after']['adaptive_tx'] is True
    assert ens4['txqueuelen'] == {'before': 1000, 'after': 10000, 'status': 'changed', 'reason': ''}
    assert rings(host, 'ens4') == (4096, 4096, 4096, 4096) and host.ethtool['ens4']['coalescing'] == (3, True, True)
    assert survey.read_int(os.path.join(host.sys_class_net, 'ens4', 'tx_queue_len')) == 10000
    vlan = result['interfaces']['ens4.20']
    assert vlan['rings']['status'] == 'unsupported' and vlan['txqueuelen']['status'] == 'not_applicable'
    assert vlan['persist']['status'] == 'not_applicable'
    assert result['files'] == [os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')]
    assert 'ens4 rings: rx 256 tx 256\n' in result['diff'][0]['before']
    assert 'ens4 rings: rx 4096 tx 4096\n' in result['diff'][0]['after']


def test_the_link_file_keeps_the_keys_of_99_default(run_module, host):
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], header='Ansible managed'))
    path = os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')
    with open(path) as handle:
        text = handle.read()
    assert text.startswith('# Ansible managed\n')
    body = text[text.index('[Match]'):]
    assert body == ('[Match]\nPermanentMACAddress=%s\n\n[Link]\nNamePolicy=keep kernel database onboard slot path\n'
                    'AlternativeNamesPolicy=database onboard slot path\nMACAddressPolicy=persistent\n'
                    'RxBufferSize=4096\nTxBufferSize=4096\nTransmitQueueLength=10000\n'
                    'UseAdaptiveRxCoalesce=yes\nUseAdaptiveTxCoalesce=yes\n' % PERMADDR)
    assert os.stat(path).st_mode & 0o777 == 0o644
    persist = result['interfaces']['ens4']['persist']
    assert persist['status'] == 'changed' and persist['reason'] == 'keeps the keys of %s' % host.default_link
    assert result['diff'][1]['after'] == text and result['diff'][1]['before'] == ''


def test_virtio_rings_already_at_the_maximum_and_no_coalescing(run_module, host):
    result = run_module(nic_settings.main, args(host, interfaces=['ens3'], governor='keep'))
    ens3 = result['interfaces']['ens3']
    assert ens3['rings']['status'] == 'ok' and ens3['rings']['after'] == {'rx': 256, 'tx': 256}
    assert ens3['coalescing'] == {'before': None, 'after': None, 'status': 'unsupported',
                                  'reason': 'not supported by the driver (EOPNOTSUPP)'}
    assert ens3['txqueuelen']['status'] == 'not_applicable' and 'mq/fq' in ens3['txqueuelen']['reason']
    assert [item for item in host.sets if item[0] == 'ens3'] == []
    # no permanent address: matched by the address and the driver instead; only the ring sizes persist
    with open(os.path.join(host.link_dir, '10-bdp-wan-tune-ens3.link')) as handle:
        text = handle.read()
    assert '[Match]\nMACAddress=52:54:00:00:00:03\nDriver=virtio_net\n' in text
    assert 'RxBufferSize=256\nTxBufferSize=256\n' in text and 'Coalesce' not in text and 'TransmitQueue' not in text


def test_check_mode_predicts_and_changes_nothing(run_module, host):
    checked = run_module(nic_settings.main, args(host, interfaces=['ens4'], _ansible_check_mode=True))
    assert checked['changed'] is True and checked['check_mode'] is True
    assert checked['interfaces']['ens4']['rings']['status'] == 'changed'
    assert checked['files'] == [os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')]
    assert host.sets == [] and not os.path.exists(host.link_dir) and not os.path.exists(host.state_dir)
    assert not [cmd for cmd in host.commands if 'txqueuelen' in cmd]
    assert checked['summary'].startswith('check mode, nothing changed: ens4: rings changed (rx 4096 tx 4096)')
    real = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert real['interfaces'] == checked['interfaces'] and real['diff'] == checked['diff']


def test_a_second_run_changes_nothing(run_module, host):
    first = run_module(nic_settings.main, args(host, peers=['198.18.0.2']))
    assert first['changed'] is True
    count = len(host.sets)
    second = run_module(nic_settings.main, args(host, peers=['198.18.0.2']))
    assert second['changed'] is False and second['files'] == [] and len(host.sets) == count, second
    assert set(entry['status'] for entry in second['interfaces']['ens4'].values()) == {'ok'}


def test_follows_its_own_inputs_down_but_never_below_the_original(run_module, host):
    run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert rings(host, 'ens4')[0] == 4096
    down = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='1024', txqueuelen='2000'))
    assert down['interfaces']['ens4']['rings']['after'] == {'rx': 1024, 'tx': 1024} and rings(host, 'ens4')[0] == 1024
    assert down['interfaces']['ens4']['txqueuelen']['after'] == 2000
    low = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='128', txqueuelen='500'))
    entry = low['interfaces']['ens4']['rings']
    assert entry['after'] == {'rx': 256, 'tx': 256} and entry['status'] == 'changed'
    assert 'rx kept at 256, what the host had before' in entry['reason']
    assert low['interfaces']['ens4']['txqueuelen']['after'] == 1000
    again = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='128', txqueuelen='500'))
    assert again['interfaces']['ens4']['rings']['status'] == 'kept_higher' and again['changed'] is False
    lower = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='128', allow_lower=True))
    assert lower['interfaces']['ens4']['rings']['after'] == {'rx': 128, 'tx': 128}


def test_never_lowers_what_the_host_had_before(run_module, host):
    host.ethtool['ens4']['rings'] = (2048, 4096, 2048, 4096)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='512', coalescing='keep'))
    assert result['interfaces']['ens4']['rings']['status'] == 'kept_higher'
    assert result['interfaces']['ens4']['coalescing']['status'] == 'ok'
    assert rings(host, 'ens4') == (2048, 4096, 2048, 4096)


def test_a_number_is_capped_at_the_driver_maximum(run_module, host):
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='8192'))
    entry = result['interfaces']['ens4']['rings']
    assert entry['after'] == {'rx': 4096, 'tx': 4096} and 'rx capped at the driver maximum 4096' in entry['reason']


def test_fixed_coalescing(run_module, host):
    host.ethtool['ens4']['coalescing'] = (3, True, False)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], coalescing='50'))
    assert host.ethtool['ens4']['coalescing'] == (50, False, False)
    after = result['interfaces']['ens4']['coalescing']['after']
    assert after == {'adaptive_rx': False, 'adaptive_tx': False, 'rx_usecs': 50}
    with open(os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')) as handle:
        text = handle.read()
    # only the fields a fixed rx-usecs sets: adaptive tx is left as the driver has it
    assert 'UseAdaptiveRxCoalesce=no\nRxCoalesceSec=50us\n' in text and 'UseAdaptiveTxCoalesce' not in text


def test_a_driver_that_refuses_adaptive_coalescing_is_unsupported_not_changed(run_module, host):
    host.ethtool['ens4']['adaptive'] = False
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='keep', txqueuelen='keep'))
    entry = result['interfaces']['ens4']['coalescing']
    assert entry['status'] == 'unsupported' and entry['after'] == entry['before'], entry
    assert entry['reason'] == ('adaptive rx and tx; the driver refused adaptive rx on (e1000e, EOPNOTSUPP); the '
                               'driver refused adaptive tx on (e1000e, EOPNOTSUPP)')
    assert result['changed'] is False and not os.path.exists(host.link_dir), result
    record = read_record(host)
    assert record == {'refused': {'ens4': {'driver': 'e1000e', 'settings': {
        'coalescing.adaptive_rx': {'value': True, 'reason': 'the driver refused adaptive rx on (e1000e, EOPNOTSUPP)'},
        'coalescing.adaptive_tx': {'value': True, 'reason': 'the driver refused adaptive tx on (e1000e, EOPNOTSUPP)'},
    }}}}
    # the next runs, and check mode, know it up front: no request to the driver, unsupported, not changed
    requests = len(host.requests)
    for check in (True, False):
        again = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='keep', txqueuelen='keep',
                                                   _ansible_check_mode=check))
        assert again['changed'] is False and again['interfaces']['ens4']['coalescing'] == entry, again
    assert ('ens4', ethtool.ETHTOOL_SCOALESCE) not in host.requests[requests:]


def test_adaptive_rx_only_where_the_driver_has_no_adaptive_tx(run_module, host):
    host.ethtool['ens4']['adaptive'] = 'rx'
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert host.ethtool['ens4']['coalescing'] == (3, True, False)
    entry = result['interfaces']['ens4']['coalescing']
    assert entry['after']['adaptive_tx'] is False and entry['status'] == 'changed'
    assert entry['reason'] == 'adaptive rx and tx; the driver refused adaptive tx on (e1000e, EOPNOTSUPP)'
    assert read_record(host)['refused'] == {'ens4': {'driver': 'e1000e', 'settings': {'coalescing.adaptive_tx': {
        'value': True, 'reason': 'the driver refused adaptive tx on (e1000e, EOPNOTSUPP)'}}}}
    path = os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')
    with open(path) as handle:
        text = handle.read()
    assert 'UseAdaptiveRxCoalesce=yes\n' in text and 'UseAdaptiveTxCoalesce' not in text
    # settled: the next run (and check mode before it) plans adaptive tx unsupported up front, changes nothing
    count = len(host.sets)
    checked = run_module(nic_settings.main, args(host, interfaces=['ens4'], _ansible_check_mode=True))
    second = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    for run in (checked, second):
        assert run['changed'] is False and run['files'] == [], run
        coalescing = run['interfaces']['ens4']['coalescing']
        assert coalescing['status'] == 'unsupported' and coalescing['after'] == coalescing['before']
        assert coalescing['reason'] == ('adaptive rx and tx; the driver refused adaptive tx on (e1000e, '
                                        'EOPNOTSUPP)')
    assert len(host.sets) == count
    with open(path) as handle:
        assert handle.read() == text
    # another driver on that interface (the NIC was replaced): asked again
    os.unlink(os.path.join(host.sys_class_net, 'ens4', 'device', 'driver'))
    os.symlink('../../../../bus/pci/drivers/ena', os.path.join(host.sys_class_net, 'ens4', 'device', 'driver'))
    replaced = run_module(nic_settings.main, args(host, interfaces=['ens4'], _ansible_check_mode=True))
    assert replaced['interfaces']['ens4']['coalescing']['status'] == 'changed'


def read_record(host):
    with open(os.path.join(host.state_dir, 'nic_settings.json')) as handle:
        return json.load(handle)


def test_absent_restores_exactly_and_removes_the_files(run_module, host):
    os.makedirs(host.tmpfiles_dir)
    for cpu in (0, 1):
        base = os.path.join(host.cpu_dir, 'cpu%d' % cpu, 'cpufreq')
        host.write(os.path.join(base, 'scaling_governor'), 'powersave')
        host.write(os.path.join(base, 'scaling_available_governors'), 'performance powersave')
    run_module(nic_settings.main, args(host, peers=['198.18.0.2']))
    governor = os.path.join(host.cpu_dir, 'cpu1', 'cpufreq', 'scaling_governor')
    assert open(governor).read() == 'performance\n'
    assert os.path.exists(os.path.join(host.tmpfiles_dir, linkfile.TMPFILES_NAME))
    result = run_module(nic_settings.main, args(host, state='absent'))
    assert result['changed'] is True, result
    assert rings(host, 'ens4') == (256, 4096, 256, 4096) and host.ethtool['ens4']['coalescing'] == (3, False, False)
    assert survey.read_int(os.path.join(host.sys_class_net, 'ens4', 'tx_queue_len')) == 1000
    assert open(governor).read() == 'powersave\n'
    assert os.listdir(host.link_dir) == [] and os.listdir(host.tmpfiles_dir) == []
    assert not os.path.exists(host.state_dir)
    assert run_module(nic_settings.main, args(host, state='absent'))['changed'] is False


def test_absent_puts_back_a_file_that_was_there_before(run_module, host):
    os.makedirs(host.link_dir)
    path = os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')
    with open(path, 'w') as handle:
        handle.write('# the admin\'s\n[Match]\nName=ens4\n')
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['diff'][1]['before'] == '# the admin\'s\n[Match]\nName=ens4\n'
    run_module(nic_settings.main, args(host, state='absent'))
    assert open(path).read() == '# the admin\'s\n[Match]\nName=ens4\n'


def test_absent_leaves_a_value_someone_else_changed(run_module, host):
    run_module(nic_settings.main, args(host, interfaces=['ens4']))
    host.ethtool['ens4']['rings'] = (2048, 4096, 2048, 4096)
    result = run_module(nic_settings.main, args(host, state='absent'))
    assert rings(host, 'ens4') == (2048, 4096, 2048, 4096)
    assert 'ens4 rings is rx 2048 tx 2048, changed by someone else since bdp.wan_tune set rx 4096 tx 4096: left ' \
           'alone.' in result['warning_msgs']


def test_governor_unsupported_without_cpufreq(run_module, host):
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['host']['governor']['status'] == 'unsupported'
    assert 'no cpufreq' in result['host']['governor']['reason']
    assert result['host']['governor_persist']['status'] == 'not_applicable'


def test_txqueuelen_not_applicable_under_fq(run_module, host):
    host.qdiscs['ens4'] = 'qdisc fq 8001: root refcnt 2 limit 10000p flow_limit 100p\n'
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    entry = result['interfaces']['ens4']['txqueuelen']
    assert entry['status'] == 'not_applicable' and entry['after'] == 1000
    assert entry['reason'].startswith('the root qdisc is fq, which keeps its own limit')


def test_refuses_while_an_rsync_transfer_is_established(run_module, host):
    with open(os.path.join(host.proc, 'net', 'tcp'), 'w') as handle:
        handle.write(TCP_HEADER + TCP_LISTEN + TCP_RSYNC)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['rc'] == 1 and host.sets == [] and not os.path.exists(host.link_dir)
    assert result['msg'] == ('Refusing to change the rings of ens4 while an rsync daemon transfer '
                             '(198.18.0.1 port 873 -> 198.18.0.2 port 40000) runs: a ring change resets the link and '
                             'would cut the transfer. Run again after it ends (migrate_action=stop stops a '
                             'migration), or set nic_rings=keep (rings=keep) for this host to go on now. Nothing was '
                             'changed.')
    # a listener alone is no transfer; and a change that resets no link (coalescing, txqueuelen) is not refused
    kept = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='keep'))
    assert kept['rc'] == 0 and kept['interfaces']['ens4']['coalescing']['status'] == 'changed'


def test_transfer_ports_name_the_ports_of_the_rsync_guard(run_module, host):
    # 198.18.0.1:8873 <- 198.18.0.2:40000, established: not a transfer on the default ports 873 and 874
    with open(os.path.join(host.proc, 'net', 'tcp'), 'w') as handle:
        handle.write(TCP_HEADER + TCP_RSYNC.replace(':0369', ':22A9'))
    checked = run_module(nic_settings.main, args(host, interfaces=['ens4'], _ansible_check_mode=True))
    assert checked['rc'] == 0, checked['msg']
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], transfer_ports=[8873]))
    assert result['rc'] == 1 and host.sets == []
    assert 'an rsync daemon transfer (198.18.0.1 port 8873 -> 198.18.0.2 port 40000)' in result['msg']
    bad = run_module(nic_settings.main, args(host, interfaces=['ens4'], transfer_ports=[873, 70000]))
    assert bad['rc'] == 1 and bad['msg'] == ('transfer_ports: 70000 is not accepted; expected each a TCP port: a '
                                             'whole number from 1 to 65535. Nothing was changed.')


def test_refuses_while_a_migration_unit_runs(run_module, host):
    host.units = 'bdp-migrate-198.18.0.2-data.service loaded active running bdp migrate\n'
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['rc'] == 1 and 'the migration unit bdp-migrate-198.18.0.2-data.service' in result['msg']


@pytest.fixture
def timer(host, timers):
    """The commit-confirm timers of the test (the ``timers`` fixture); their stand-ins' pids."""
    host.run_dir, host.timers = timers.run_dir, timers
    return timers.started


def run_files(host):
    return host.timers.left()


def fire(host):
    """The timer of the pending ring change: its time is up (the timer's own work, against the fake ioctl)."""
    return host.timers.fire(host.state_dir, nic_commit.Rings(), read_record(host)['pending'])


def decide(host, token, by):
    """What a call cut short after taking the decision leaves: the decision taken (by='confirmed' or 'module')."""
    assert commit.Timer.claim({'decided': os.path.join(host.run_dir, 'nic-%s.decided' % token)}, by)


def control_run(run_module, host, **extra):
    """present with the Ansible connection coming in over ens4.20, whose parent ens4 changes its rings."""
    host.ssh_client = '198.18.0.2'
    return run_module(nic_settings.main, args(host, peers=['198.18.0.2'], commit_method='process', **extra))


def test_a_ring_change_on_the_control_interface_goes_under_the_timer(run_module, host, timer):
    result = control_run(run_module, host)
    assert result['rc'] == 0 and result['changed'] is True, result
    assert rings(host, 'ens4') == (4096, 4096, 4096, 4096)
    assert 'under the commit-confirm timer (ens4 is the parent of vlan ens4.20, which carries the Ansible control ' \
           'connection (SSH from 198.18.0.2))' in result['interfaces']['ens4']['rings']['reason']
    commit = result['commit']
    assert commit['state'] == 'pending' and commit['method'] == 'process' and commit['timeout'] == 120
    assert commit['restores'] == 'ens4 rx 256 tx 256'
    assert commit['changes'] == [{'interface': 'ens4', 'before': {'rx': 256, 'tx': 256},
                                  'after': {'rx': 4096, 'tx': 4096}}]
    assert host.timers.running(timer[0])
    # the files wait for the confirmation: a timer that puts the rings back must leave no .link file saying 4096
    assert result['files'] and not os.path.exists(host.link_dir)
    assert 'under the commit-confirm timer: unless state=confirmed runs within 120 s' in result['summary']
    script = open(os.path.join(host.run_dir, 'nic-%s.py' % commit['token'])).read()
    assert '"ens4 rx 256 tx 256"' in script and 'def set_rings(name, rx, tx):' in script
    # another run before the confirmation changes nothing and says what to do
    again = control_run(run_module, host)
    assert again['rc'] == 1 and again['msg'].startswith(
        'The ring change %s (ens4 rx 256 tx 256 -> rx 4096 tx 4096) is still waiting for its confirmation: run '
        'state=confirmed to keep it or state=reverted to put the rings back' % commit['token']), again['msg']
    confirmed = run_module(nic_settings.main, args(host, state='confirmed'))
    assert confirmed['rc'] == 0 and confirmed['outcome'] == 'confirmed' and confirmed['changed'] is True
    assert confirmed['files'] == result['files'] and os.path.exists(result['interfaces']['ens4']['persist']['after'])
    assert 'RxBufferSize=4096' in open(result['interfaces']['ens4']['persist']['after']).read()
    assert host.timers.stopped(timer[0]) and run_files(host) == []
    assert 'pending' not in read_record(host)
    assert control_run(run_module, host)['changed'] is False
    assert run_module(nic_settings.main, args(host, state='confirmed'))['outcome'] is None


def test_check_mode_names_the_timer_and_arms_nothing(run_module, host, timer):
    result = control_run(run_module, host, _ansible_check_mode=True)
    assert result['rc'] == 0 and result['changed'] is True and 'commit' not in result
    assert 'under the commit-confirm timer' in result['interfaces']['ens4']['rings']['reason']
    assert timer == [] and host.sets == []


def test_absent_takes_the_timers_log_with_the_record(run_module, host, timer):
    control_run(run_module, host)
    run_module(nic_settings.main, args(host, state='reverted'))
    assert read_record(host) and os.path.exists(os.path.join(host.state_dir, 'nic-reverts.log'))
    assert run_module(nic_settings.main, args(host, state='absent', _ansible_check_mode=True))['changed'] is True
    assert run_module(nic_settings.main, args(host, state='absent'))['changed'] is True
    assert not os.path.exists(host.state_dir)
    assert run_module(nic_settings.main, args(host, state='absent'))['changed'] is False


def test_not_confirmed_the_module_puts_the_rings_back(run_module, host, timer):
    result = control_run(run_module, host)
    reverted = run_module(nic_settings.main, args(host, state='reverted'))
    assert reverted['rc'] == 0 and reverted['outcome'] == 'restored_by_module', reverted
    assert reverted['summary'] == ('the ring change %s was not confirmed; put back ens4 rx 256 tx 256 now'
                                   % result['commit']['token'])
    assert rings(host, 'ens4') == (256, 4096, 256, 4096)
    assert host.timers.stopped(timer[0]) and not os.path.exists(host.link_dir)
    log = [json.loads(line) for line in open(os.path.join(host.state_dir, 'nic-reverts.log'))]
    assert log[-1]['by'] == 'module' and log[-1]['token'] == result['commit']['token']
    # a confirmation that comes after is too late, and says so
    assert run_module(nic_settings.main, args(host, state='confirmed'))['outcome'] is None


def test_the_timer_put_the_rings_back_before_the_confirmation(run_module, host, timer):
    result = control_run(run_module, host)
    token = result['commit']['token']
    record = fire(host)
    assert (record['token'], record['rc'], rings(host, 'ens4')) == (token, 0, (256, 4096, 256, 4096))
    late = run_module(nic_settings.main, args(host, state='confirmed'))
    assert late['rc'] == 1 and late['outcome'] == 'restored_by_timer'
    assert late['msg'].startswith('Too late: the ring change %s was not confirmed; the commit-confirm timer put back '
                                  'ens4 rx 256 tx 256 at %s, before this confirmation (the timer was armed for 120 s); '
                                  'nothing was persisted.' % (token, time.strftime('%F %T', time.localtime(
                                      record['at'])))), late['msg']
    assert host.timers.running(timer[0])      # the timer's own script is not stopped (it runs, or has ended)
    assert not os.path.exists(host.link_dir) and 'pending' not in read_record(host)
    # the next run plans again from what the host has, under a new timer
    again = control_run(run_module, host)
    assert again['rc'] == 0 and again['commit']['token'] != token


def test_a_timer_decision_seen_by_the_next_run_is_warned_and_planned_again(run_module, host, timer):
    result = control_run(run_module, host)
    token = result['commit']['token']
    fire(host)
    again = control_run(run_module, host)
    assert again['rc'] == 0 and again['commit']['token'] != token
    assert any('The ring change %s was not confirmed; the commit-confirm timer put back ens4 rx 256 tx 256' % token
               in warning for warning in again['warning_msgs']), again['warning_msgs']


def test_after_the_timer_put_back_a_later_change_the_rollback_still_reaches_the_original(run_module, host, timer):
    """Confirmed at 4096, then 4096 -> 1024 put back to 4096 by the timer: the module's own value is 4096 again, so
    the rollback puts back 256 instead of leaving 4096 as someone else's."""
    control_run(run_module, host)
    run_module(nic_settings.main, args(host, state='confirmed'))
    lower = control_run(run_module, host, rings='1024')
    assert lower['commit']['restores'] == 'ens4 rx 4096 tx 4096' and rings(host, 'ens4')[0] == 1024
    fire(host)
    assert rings(host, 'ens4') == (4096, 4096, 4096, 4096)
    assert run_module(nic_settings.main, args(host, state='reverted'))['outcome'] == 'restored_by_timer'
    result = run_module(nic_settings.main, args(host, state='absent'))
    assert result['rc'] == 0 and not result['warning_msgs'] and rings(host, 'ens4') == (256, 4096, 256, 4096)
    assert not os.path.exists(host.state_dir)       # the record and the timer's log


def test_a_failure_after_the_change_puts_everything_back_and_disarms(run_module, host, timer, monkeypatch):
    def broken(*_args):
        raise RuntimeError('udevadm went away')
    monkeypatch.setattr(nic_settings, 'persist_plan', broken)
    result = control_run(run_module, host)
    assert result['rc'] == 1 and result['msg'].startswith(
        'planning the persistence files failed: udevadm went away. Put back what this run had changed:'), result['msg']
    assert rings(host, 'ens4') == (256, 4096, 256, 4096) and host.timers.stopped(timer[0]) and run_files(host) == []
    assert not os.path.exists(os.path.join(host.state_dir, 'nic_settings.json'))


def test_a_failure_that_cannot_put_the_rings_back_leaves_the_timer(run_module, host, timer):
    host.fail[('ens4', ethtool.ETHTOOL_SCOALESCE)] = errno.EIO
    real_set = ethtool.set_rings

    def set_rings(name, rx, tx):
        if (rx, tx) == (256, 256):
            raise OSError(errno.EIO, 'Input/output error')
        real_set(name, rx, tx)
    ethtool.set_rings = set_rings
    try:
        result = control_run(run_module, host)
    finally:
        ethtool.set_rings = real_set
    assert result['rc'] == 1 and 'Could not put back' in result['msg'], result['msg']
    assert result['msg'].endswith('The rings of ens4 stay as changed, under the commit-confirm timer, which puts them '
                                  'back within 120 s unless state=confirmed runs (state=reverted puts them back now).')
    assert host.timers.running(timer[0]) and read_record(host)['pending']['token']
    reverted = run_module(nic_settings.main, args(host, state='reverted'))
    assert reverted['outcome'] == 'restored_by_module' and rings(host, 'ens4') == (256, 4096, 256, 4096)


def test_a_put_back_that_fails_keeps_the_rings_as_the_modules_own(run_module, host, timer):
    control_run(run_module, host)
    host.fail[('ens4', ethtool.ETHTOOL_SRINGPARAM)] = errno.EIO
    result = run_module(nic_settings.main, args(host, state='reverted'))
    assert result['rc'] == 1 and result['msg'].startswith('The ring change ') and (
        'Those rings stay as the change set them, recorded as this module\'s own: state=absent puts back the '
        'original.' in result['msg']), result['msg']
    absent = run_module(nic_settings.main, args(host, state='absent'))
    assert absent['rc'] == 0 and not absent['warning_msgs'] and rings(host, 'ens4') == (256, 4096, 256, 4096)


def test_a_timer_that_could_not_put_back_says_so_and_the_rollback_still_does(run_module, host, timer):
    control_run(run_module, host)
    host.fail[('ens4', ethtool.ETHTOOL_SRINGPARAM)] = errno.EIO
    assert (fire(host)['rc'], fire(host)) == (1, None)        # failed; a second run backs off
    late = run_module(nic_settings.main, args(host, state='confirmed'))
    assert late['rc'] == 1 and ('(but could not put back the rings of ens4, which stay as the change set them, '
                                'recorded as this module\'s own: state=absent puts back the original)' in late['msg'])
    absent = run_module(nic_settings.main, args(host, state='absent'))
    assert absent['rc'] == 0 and not absent['warning_msgs'] and rings(host, 'ens4') == (256, 4096, 256, 4096)


def test_a_confirmation_cut_short_is_finished_not_undone(run_module, host, timer):
    result = control_run(run_module, host)
    decide(host, result['commit']['token'], 'confirmed')      # it took the decision, then its task timed out
    reverted = run_module(nic_settings.main, args(host, state='reverted'))
    assert reverted['rc'] == 0 and reverted['outcome'] == 'confirmed', reverted
    assert rings(host, 'ens4') == (4096, 4096, 4096, 4096)
    assert os.path.exists(result['interfaces']['ens4']['persist']['after'])
    assert control_run(run_module, host)['changed'] is False


def test_absent_with_a_pending_change_during_a_transfer_changes_nothing(run_module, host, timer):
    result = control_run(run_module, host)
    host.write(os.path.join(host.proc, 'net', 'tcp'), TCP_HEADER + TCP_LISTEN + TCP_RSYNC)
    absent = run_module(nic_settings.main, args(host, state='absent'))
    assert absent['rc'] == 1 and 'while an rsync daemon transfer' in absent['msg']
    assert rings(host, 'ens4') == (4096, 4096, 4096, 4096) and host.timers.running(timer[0])
    assert read_record(host)['pending']['token'] == result['commit']['token']


def test_absent_puts_a_pending_change_back_first(run_module, host, timer):
    control_run(run_module, host)
    result = run_module(nic_settings.main, args(host, state='absent'))
    assert result['rc'] == 0 and rings(host, 'ens4') == (256, 4096, 256, 4096)
    assert not os.path.exists(os.path.join(host.state_dir, 'nic_settings.json'))
    assert host.timers.stopped(timer[0])


def test_absent_puts_the_control_interface_rings_back_without_a_timer(run_module, host, timer):
    control_run(run_module, host)
    run_module(nic_settings.main, args(host, state='confirmed'))
    result = run_module(nic_settings.main, args(host, state='absent', control_hosts=['198.18.0.1']))
    assert result['rc'] == 0 and rings(host, 'ens4') == (256, 4096, 256, 4096) and len(timer) == 1


def test_a_failure_after_arming_disarms_the_timer(run_module, host, timer):
    host.fail[('ens4', ethtool.ETHTOOL_SCOALESCE)] = errno.EIO
    result = control_run(run_module, host)
    assert result['rc'] == 1 and 'Put back what this run had changed: ens4 rings rx 256 tx 256.' in result['msg']
    assert rings(host, 'ens4') == (256, 4096, 256, 4096)
    assert host.timers.stopped(timer[0]) and run_files(host) == []
    assert not os.path.exists(os.path.join(host.state_dir, 'nic_settings.json'))


def test_coalescing_and_txqueuelen_on_the_control_interface_need_no_timer(run_module, host, timer):
    kept = control_run(run_module, host, rings='keep')
    assert kept['rc'] == 0 and 'commit' not in kept and timer == []
    assert kept['interfaces']['ens4']['txqueuelen']['status'] == 'changed'
    assert kept['interfaces']['ens4']['coalescing']['status'] == 'changed'


def test_the_timer_script_claims_puts_back_and_logs(tmp_path, monkeypatch):
    """The script the timer runs, for real: it carries the module's own ioctl code and imports what it uses; an
    interface that is not there makes the ioctl fail (nothing is changed on this machine), which the record shows;
    a second run backs off."""
    monkeypatch.setattr(commit, 'RUN_DIR', str(tmp_path))
    timer = commit.Timer(None, str(tmp_path), nic_commit.Rings())
    script = tmp_path / 'nic.py'
    script.write_text(timer.script('t-1', [('bdp-none0', {'rx': 1, 'tx': 1}, {'rx': 256, 'tx': 512})], 0))
    first = subprocess.run([sys.executable, '-I', str(script)], capture_output=True, text=True, check=False)
    assert first.returncode == 1, first.stderr
    assert (tmp_path / 'nic-t-1.decided' / 'by').read_text() == 'timer\n'
    record = json.loads((tmp_path / 'nic-reverts.log').read_text())
    assert (record['token'], record['by'], record['rc'], record['failed'], record['restored']) == (
        't-1', 'timer', 1, 'bdp-none0', 'bdp-none0 rx 256 tx 512')
    second = subprocess.run([sys.executable, '-I', str(script)], capture_output=True, text=True, check=False)
    assert second.returncode == 0 and len((tmp_path / 'nic-reverts.log').read_text().splitlines()) == 1


def test_a_failing_set_puts_back_the_one_before(run_module, host):
    host.fail[('ens4', ethtool.ETHTOOL_SCOALESCE)] = errno.EIO
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['rc'] == 1
    assert rings(host, 'ens4') == (256, 4096, 256, 4096)
    assert result['msg'].startswith('setting coalescing of ens4 failed: [Errno 5] Input/output error. Put back what '
                                    'this run had changed: ens4 rings rx 256 tx 256.')
    assert not os.path.exists(host.link_dir)
    assert not os.path.exists(os.path.join(host.state_dir, 'nic_settings.json'))


@pytest.mark.parametrize('extra, message', [
    ({'interfaces': ['ens4'], 'rings': 'big'}, "rings: 'big' is not accepted; expected max, keep or a whole "
                                               "number from 1 to 65536. Nothing was changed."),
    ({'interfaces': ['ens4'], 'rings': '65537'}, "rings: '65537' is not accepted; expected max, keep or a whole "
                                                 "number from 1 to 65536. Nothing was changed."),
    ({'interfaces': ['ens4'], 'txqueuelen': '1000001'}, "txqueuelen: '1000001' is not accepted; expected keep or a "
                                                        "whole number from 1 to 1000000."),
    ({'interfaces': ['ens4'], 'coalescing': '100001'}, "coalescing: '100001' is not accepted; expected adaptive, "
                                                       "keep or a whole number from 0 to 100000."),
    ({'interfaces': ['ens4'], 'coalescing': '-1'}, "coalescing: '-1' is not accepted"),
    ({}, 'Nothing to tune: set interfaces (nic_interfaces in the role) or peers'),
    ({'interfaces': ['ens9']}, 'interfaces: ens9 does not exist on this host; interfaces here: ens3, ens4, ens4.20.'),
    ({'confirm_timeout': 9}, 'confirm_timeout: 9 s is too short to confirm over a new connection; use 10 or more. '
                             'Nothing was changed.'),
])
def test_refusals_say_what_to_set(run_module, host, extra, message):
    result = run_module(nic_settings.main, args(host, **extra))
    assert result['rc'] == 1 and result['msg'].startswith(message), result['msg']


def test_without_udev_persistence_is_unsupported(run_module, host):
    os.unlink(linkfile.UDEV_CONTROL)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['rc'] == 0 and result['interfaces']['ens4']['persist']['status'] == 'unsupported'
    assert 'systemd-udevd is not running here' in result['interfaces']['ens4']['persist']['reason']
    assert result['files'] == []


def test_persist_false_takes_back_the_files_of_an_earlier_run(run_module, host):
    run_module(nic_settings.main, args(host, interfaces=['ens4']))
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], persist=False))
    assert result['changed'] is True and os.listdir(host.link_dir) == []
    path = os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')
    assert result['interfaces']['ens4']['persist'] == {
        'before': path, 'after': None, 'status': 'changed',
        'reason': 'persist is false; the file of an earlier run is taken back'}


def test_an_admin_link_file_is_kept_and_named(run_module, host):
    admin = os.path.join(host.link_dir, '50-wan.link')
    os.makedirs(host.link_dir)
    with open(admin, 'w') as handle:
        handle.write('[Match]\nMACAddress=%s\n[Link]\nName=wan0\nRxBufferSize=512\n' % PERMADDR)
    with open(os.path.join(host.udev_data, 'n3'), 'w') as handle:
        handle.write('E:ID_NET_LINK_FILE=%s\n' % admin)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert 'is an administrator\'s file: its keys are kept in ours' in result['interfaces']['ens4']['persist']['reason']
    with open(os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')) as handle:
        text = handle.read()
    assert '[Link]\nName=wan0\nRxBufferSize=4096\n' in text and 'RxBufferSize=512' not in text


# ----------------------------------------------------------------------------- the review's defects

@pytest.mark.parametrize('driver, rounding, asked, took', [
    ('e1000e', lambda value: (value + 7) // 8 * 8, 1001, 1008),               # a multiple of 8, up
    ('ena', lambda value: 1 << (value.bit_length() - 1), 1001, 512),          # a power of 2, down
])
def test_a_ring_size_the_driver_rounds_is_settled(run_module, host, driver, rounding, asked, took):
    host.ethtool['ens4']['rounding'] = rounding
    os.unlink(os.path.join(host.sys_class_net, 'ens4', 'device', 'driver'))
    os.symlink('../../../../bus/pci/drivers/%s' % driver, os.path.join(host.sys_class_net, 'ens4', 'device', 'driver'))
    first = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings=str(asked)))
    entry = first['interfaces']['ens4']['rings']
    assert entry['after'] == {'rx': took, 'tx': took} and entry['status'] == 'changed', entry
    assert entry['reason'] == 'the driver took rx %d tx %d' % (took, took)
    path = os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')
    with open(path) as handle:
        text = handle.read()
    assert 'RxBufferSize=%d\nTxBufferSize=%d\n' % (took, took) in text
    count = len(host.sets)
    for check in (True, False):
        again = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings=str(asked),
                                                   _ansible_check_mode=check))
        assert again['changed'] is False and again['files'] == [], again['summary']
        assert again['interfaces']['ens4']['rings'] == {
            'before': {'rx': took, 'tx': took}, 'after': {'rx': took, 'tx': took}, 'status': 'ok',
            'reason': 'the driver took rx %d tx %d for rx %d tx %d' % (took, took, asked, asked)}
    assert len(host.sets) == count
    with open(path) as handle:
        assert handle.read() == text
    # someone else changed the rings: the request is made again
    host.ethtool['ens4']['rings'] = (2048, 4096, 2048, 4096)
    assert run_module(nic_settings.main, args(host, interfaces=['ens4'], rings=str(asked), allow_lower=True,
                                              _ansible_check_mode=True))['interfaces']['ens4']['rings'][
        'status'] == 'changed'


def test_a_ring_the_driver_takes_as_what_it_had_is_not_a_change(run_module, host):
    host.ethtool['ens4']['rounding'] = lambda value: 1 << (value.bit_length() - 1)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='300', coalescing='keep',
                                                txqueuelen='keep', persist=False))
    entry = result['interfaces']['ens4']['rings']
    assert entry['status'] == 'ok' and entry['after'] == {'rx': 256, 'tx': 256}, entry
    assert result['changed'] is False, result['summary']


def test_a_ring_below_the_driver_minimum_is_refused_by_the_driver(run_module, host):
    host.ethtool['ens4']['ring_min'] = 64
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='32', allow_lower=True,
                                                coalescing='keep', txqueuelen='keep'))
    entry = result['interfaces']['ens4']['rings']
    assert result['rc'] == 0 and entry['status'] == 'unsupported' and entry['after'] == entry['before']
    assert entry['reason'] == 'the driver refused rx 32 tx 32 (e1000e, EINVAL)'
    assert result['changed'] is False and rings(host, 'ens4') == (256, 4096, 256, 4096)
    # known now, also to the guard: not asked again, and a refused change never counts as a reset
    host.ssh_client = '198.18.0.2'
    again = run_module(nic_settings.main, args(host, interfaces=['ens4'], rings='32', allow_lower=True,
                                               coalescing='keep', txqueuelen='keep'))
    assert again['rc'] == 0 and again['interfaces']['ens4']['rings'] == entry
    assert [item for item in host.sets if item[1] == ethtool.ETHTOOL_SRINGPARAM] == []


@pytest.mark.parametrize('error', [struct.error('unpack_from requires a buffer of at least 92 bytes'),
                                   ValueError('a value out of range')])
def test_any_failure_mid_apply_puts_back_what_this_run_changed(run_module, host, error):
    host.fail[('ens4', ethtool.ETHTOOL_SCOALESCE)] = error
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['rc'] == 1 and rings(host, 'ens4') == (256, 4096, 256, 4096)
    assert result['msg'] == ('setting coalescing of ens4 failed: %s. Put back what this run had changed: ens4 rings '
                             'rx 256 tx 256.' % error)
    assert not os.path.exists(host.link_dir)
    assert not os.path.exists(os.path.join(host.state_dir, 'nic_settings.json'))


def test_a_txqueuelen_persisted_stays_when_the_qdisc_became_fq_at_boot(run_module, host):
    first = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert first['interfaces']['ens4']['txqueuelen']['after'] == 10000
    path = os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')
    with open(path) as handle:
        text = handle.read()
    assert 'TransmitQueueLength=10000\n' in text
    # the reboot: udev applied our file, net.core.default_qdisc=fq made the root qdisc mq/fq
    host.qdiscs['ens4'] = 'qdisc mq 0: root\nqdisc fq 0: parent :1 limit 10000p\n'
    second = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert second['changed'] is False and second['files'] == [], second['summary']
    entry = second['interfaces']['ens4']['txqueuelen']
    assert entry['status'] == 'not_applicable' and entry['after'] == 10000
    assert entry['reason'].endswith('; TransmitQueueLength=10000 stays in %s for when it applies' % path)
    with open(path) as handle:
        assert handle.read() == text


def test_no_link_file_when_udev_does_not_say_which_file_applies(run_module, host):
    with open(os.path.join(host.udev_data, 'n3'), 'w') as handle:
        handle.write('I:1\nE:ID_NET_NAME=x\n')
    os.unlink(os.path.join(host.udev_data, 'n2'))       # and udevadm info says nothing either
    result = run_module(nic_settings.main, args(host, interfaces=['ens4', 'ens3'], governor='keep'))
    for name in ('ens4', 'ens3'):
        assert result['interfaces'][name]['persist'] == {
            'before': None, 'after': None, 'status': 'unsupported',
            'reason': 'udev does not say which .link file names this interface (no ID_NET_LINK_FILE); writing '
                      'ours could drop its naming policy'}
    assert result['files'] == [] and not os.path.exists(host.link_dir)


def test_no_link_file_where_the_applied_one_has_drop_ins(run_module, host):
    dropin = os.path.join(os.path.dirname(host.default_link), '99-default.link.d', '50-names.conf')
    os.makedirs(os.path.dirname(dropin))
    with open(dropin, 'w') as handle:
        handle.write('[Link]\nNamePolicy=mac\n')
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    persist = result['interfaces']['ens4']['persist']
    assert persist['status'] == 'unsupported' and result['files'] == [] and not os.path.exists(host.link_dir)
    assert persist['reason'] == ('%s has drop-ins (%s), which would not apply to ours, which replaces it: persist '
                                 'these settings in a drop-in of your own' % (host.default_link, dropin))


def offer_governors(host, *offered):
    for cpu, names in enumerate(offered):
        base = os.path.join(host.cpu_dir, 'cpu%d' % cpu, 'cpufreq')
        host.write(os.path.join(base, 'scaling_governor'), 'powersave')
        host.write(os.path.join(base, 'scaling_available_governors'), names)


def test_the_governor_persists_only_where_every_cpu_offers_performance(run_module, host):
    offer_governors(host, 'performance powersave', 'powersave')
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    assert result['host']['governor']['status'] == 'changed'
    assert result['host']['governor_persist']['status'] == 'unsupported'
    assert result['host']['governor_persist']['reason'].startswith('1 of 2 CPU(s) do not offer "performance"')
    assert not os.path.exists(os.path.join(host.tmpfiles_dir, linkfile.TMPFILES_NAME))


def test_the_governor_file_taken_back_is_a_change(run_module, host):
    offer_governors(host, 'performance powersave', 'performance powersave')
    run_module(nic_settings.main, args(host, interfaces=['ens4']))
    path = os.path.join(host.tmpfiles_dir, linkfile.TMPFILES_NAME)
    assert os.path.exists(path)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4'], persist=False))
    assert result['host']['governor_persist']['status'] == 'changed' and not os.path.exists(path)


def test_a_failure_putting_back_a_file_does_not_hide_the_first(run_module, host, monkeypatch):
    offer_governors(host, 'performance powersave')
    real, calls = nic_settings.put_file, []

    def put_file(ns, path, text):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, 'No space left on device')
        if len(calls) == 3:
            raise OSError(errno.EROFS, 'Read-only file system')
        return real(ns, path, text)

    monkeypatch.setattr(nic_settings, 'put_file', put_file)
    result = run_module(nic_settings.main, args(host, interfaces=['ens4']))
    link = os.path.join(host.link_dir, '10-bdp-wan-tune-ens4.link')
    assert result['rc'] == 1 and calls == [link, os.path.join(host.tmpfiles_dir, linkfile.TMPFILES_NAME), link]
    assert result['msg'].startswith('writing the persistence files failed: [Errno 28] No space left on device (and '
                                    'putting back the files written before failed: %s: [Errno 30] Read-only file '
                                    'system). Put back what this run had changed: ' % link), result['msg']
    assert 'Could not put back: %s: [Errno 30] Read-only file system; the record keeps' % link in result['msg']
    assert link in read_record(host)['files']       # state=absent can still take it back


# ----------------------------------------------------------------------------- for real

def run_in(netns, tmp_path, module_args):
    path = tmp_path / 'args.json'
    path.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': module_args}))
    done = subprocess.run(['ip', 'netns', 'exec', netns, sys.executable, '-m',
                           'ansible_collections.bdp.wan_tune.plugins.modules.nic_settings', str(path)],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    return json.loads(done.stdout or '{}'), done


def test_the_module_for_real_in_a_network_namespace(veth_netns, tmp_path):
    netns = veth_netns
    subprocess.run(['ip', '-n', netns, 'link', 'set', 'bdp0', 'txqueuelen', '1000'], check=True)
    subprocess.run(['tc', '-n', netns, 'qdisc', 'replace', 'dev', 'bdp0', 'root', 'pfifo_fast'], check=True)
    base = {'peers': ['198.18.0.2'], 'governor': 'keep', 'persist': False, 'state_dir': str(tmp_path / 'state')}
    result, done = run_in(netns, tmp_path, base)
    assert done.returncode == 0, done.stdout + done.stderr
    veth = result['interfaces']['bdp0']
    assert veth['txqueuelen'] == {'before': 1000, 'after': 10000, 'status': 'changed', 'reason': ''}
    # veth has no ring or coalescing ioctls on this kernel: unsupported, never a failure or a change
    assert veth['rings']['status'] == 'unsupported' and 'EOPNOTSUPP' in veth['rings']['reason']
    assert veth['coalescing']['status'] == 'unsupported'
    live = subprocess.run(['ip', '-n', netns, '-j', 'link', 'show', 'bdp0'], capture_output=True, text=True,
                          check=True)
    assert json.loads(live.stdout)[0]['txqlen'] == 10000
    again, done = run_in(netns, tmp_path, base)
    assert done.returncode == 0 and again['changed'] is False, again
    back, done = run_in(netns, tmp_path, dict(base, state='absent'))
    assert done.returncode == 0 and back['changed'] is True, done.stdout + done.stderr
    live = subprocess.run(['ip', '-n', netns, '-j', 'link', 'show', 'bdp0'], capture_output=True, text=True,
                          check=True)
    assert json.loads(live.stdout)[0]['txqlen'] == 1000
