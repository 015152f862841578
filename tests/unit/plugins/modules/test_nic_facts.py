# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nic_facts: the module against a fake host (the nic_host fixture for sysfs, procfs and the ethtool ioctl; a fake
``ip`` and ``tc``), its refusals, and once for real in a throwaway network namespace (a veth pair with an address
of 198.18.0.0/15; ``ip route get`` only looks the route up, nothing is sent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey
from ansible_collections.bdp.wan_tune.plugins.modules import nic_facts

LINKS = [
    {'ifindex': 1, 'ifname': 'lo', 'mtu': 65536, 'link_type': 'loopback'},
    {'ifindex': 2, 'ifname': 'ens3', 'mtu': 1500, 'link_type': 'ether'},
    {'ifindex': 3, 'ifname': 'ens4', 'mtu': 9000, 'link_type': 'ether'},
    {'ifindex': 4, 'ifname': 'ens4.20', 'link': 'ens4', 'mtu': 9000, 'link_type': 'ether',
     'linkinfo': {'info_kind': 'vlan', 'info_data': {'id': 20}}},
]
ROUTES = {'198.18.0.2': {'dst': '198.18.0.2', 'dev': 'ens4.20', 'prefsrc': '198.18.0.1'},
          '198.18.9.9': {'dst': '198.18.9.9', 'dev': 'ens3', 'gateway': '198.18.2.254', 'prefsrc': '198.18.2.1'}}
QDISCS = {'ens4': 'qdisc mq 0: root\nqdisc fq 0: parent :1 limit 10000p\n', 'ens4.20': 'qdisc noqueue 0: root\n',
          'ens3': 'qdisc fq_codel 0: root refcnt 2\n'}


@pytest.fixture
def host(nic_host, monkeypatch):
    """The fake host: ens3 virtio-net, ens4 e1000e with the VLAN ens4.20 on it, a VM without cpufreq; every
    command the module runs is recorded in host.commands."""
    nic_host.add_nic('ens3', driver='virtio_net', rings=(256, 256, 256, 256), coalescing=None, stats={'rx_drops': 0})
    nic_host.add_nic('ens4', driver='e1000e', speed=1000, rings=(256, 4096, 256, 4096), coalescing=(3, False, False),
                     stats={'rx_missed_errors': 0})
    nic_host.add_nic('ens4.20')
    nic_host.governors(None, None)
    nic_host.softnet('00000100 00000000 00000002 0 0 0 0 0 0 0 0 0 00000000\n')
    nic_host.commands = []
    nic_host.tc = True
    real_interface, real_host = survey.interface, survey.host
    monkeypatch.setattr(survey, 'interface', lambda name, text: real_interface(name, text, nic_host.sys_class_net))
    monkeypatch.setattr(survey, 'host', lambda: real_host(nic_host.proc, nic_host.cpu_dir))

    def run_command(self, args, **kwargs):
        nic_host.commands.append(args)
        if args[:2] == ['/sbin/ip', '-d']:
            return 0, json.dumps(LINKS), ''
        if args[:4] == ['/sbin/ip', '-j', 'route', 'get']:
            route = ROUTES.get(args[4])
            return (0, json.dumps([route]), '') if route else (2, '', 'RTNETLINK answers: Network is unreachable')
        if args[0] == '/sbin/tc':
            return 0, QDISCS.get(args[-1], ''), ''
        raise AssertionError('unexpected command %r' % (args,))

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/sbin/%s' % name if name == 'ip' or nic_host.tc else None
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    return nic_host


def test_the_interfaces_towards_the_peers_and_the_nic_below(run_module, host):
    result = run_module(nic_facts.main, {'peers': ['198.18.0.2']})
    assert result['rc'] == 0 and result['changed'] is False, result
    assert result['interfaces'] == ['ens4.20', 'ens4']
    assert result['nic']['ens4.20']['reason'] == 'route to 198.18.0.2'
    assert result['nic']['ens4.20']['driver'] == 'none' and result['nic']['ens4.20']['qdisc'] == 'noqueue'
    ens4 = result['nic']['ens4']
    assert ens4['reason'] == 'parent of vlan ens4.20' and ens4['driver'] == 'e1000e' and ens4['qdisc'] == 'mq/fq'
    assert ens4['rings'] == {'supported': True, 'rx': 256, 'rx_max': 4096, 'tx': 256, 'tx_max': 4096}
    assert result['host']['governor']['supported'] is False and result['host']['irqbalance'] is False
    assert result['host']['softnet']['time_squeeze'] == 2
    assert result['summary'].startswith('ens4.20: driver none, speed not reported, rings unsupported')
    assert result['summary'].endswith('softnet over 1 CPU: 0 dropped, 2 time squeezes')


def test_check_mode_reads_the_same_and_changes_nothing(run_module, host):
    before = run_module(nic_facts.main, {'interfaces': ['ens3']})
    checked = run_module(nic_facts.main, {'interfaces': ['ens3'], '_ansible_check_mode': True})
    assert checked['changed'] is False and checked['nic'] == before['nic']
    assert checked['nic']['ens3']['coalescing'] == {'supported': False,
                                                    'reason': 'not supported by the driver (EOPNOTSUPP)'}
    assert [args[:3] for args in host.commands if args[0] == '/sbin/ip'] == [['/sbin/ip', '-d', '-j']] * 2


def test_without_tc_the_qdisc_is_unknown(run_module, host):
    host.tc = False
    result = run_module(nic_facts.main, {'interfaces': ['ens3']})
    assert result['nic']['ens3']['qdisc'] is None and 'qdisc unknown (no tc)' in result['summary']


def test_a_peer_without_a_route_is_a_warning_while_another_has_one(run_module, host):
    result = run_module(nic_facts.main, {'peers': ['198.18.0.2', '198.18.7.7']})
    assert result['rc'] == 0 and result['interfaces'] == ['ens4.20', 'ens4']
    assert result['warning_msgs'] == ['peer 198.18.7.7 (198.18.7.7): no route from this host (RTNETLINK answers: '
                                      'Network is unreachable). That peer\'s interface is not surveyed.']


@pytest.mark.parametrize('args, message', [
    ({}, 'Nothing to survey: set interfaces (the interfaces to read) or peers (their routes name the interfaces).'),
    ({'interfaces': ['ens9']}, 'interfaces: ens9 does not exist on this host; interfaces here: ens3, ens4, ens4.20.'),
    ({'interfaces': ['a/b']}, 'interfaces: interface \'a/b\' is not a Linux interface name (1 to 15 characters'),
    ({'peers': ['198.18.7.7']}, 'No interface to survey: peer 198.18.7.7 (198.18.7.7): no route from this host'),
])
def test_refusals_say_what_to_set(run_module, host, args, message):
    result = run_module(nic_facts.main, args)
    assert result['rc'] == 1 and result['failed'] is True
    assert result['msg'].startswith(message), result['msg']


# ----------------------------------------------------------------------------- for real

def test_the_module_for_real_in_a_network_namespace(veth_netns, tmp_path):
    netns = veth_netns
    args = tmp_path / 'args.json'
    args.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {'peers': ['198.18.0.2']}}))
    done = subprocess.run(['ip', 'netns', 'exec', netns, sys.executable, '-m',
                           'ansible_collections.bdp.wan_tune.plugins.modules.nic_facts', str(args)],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result['changed'] is False and result['interfaces'] == ['bdp0'], result
    veth = result['nic']['bdp0']
    # a veth that is up reports 10 Gbit/s (a down one reports none)
    assert (veth['reason'], veth['driver'], veth['speed_mbps'], veth['tx_queue_len']) == (
        'route to 198.18.0.2', 'none', 10000, 1000)
    # veth has no rings (kernel 6.18: its ethtool ring query answers EOPNOTSUPP), which is reported, not a failure
    assert veth['rings'] == {'supported': False, 'reason': 'not supported by the driver (EOPNOTSUPP)'}, veth['rings']
    assert veth['driver_drops']['supported'] is True
    assert veth['qdisc'] == 'noqueue'
    assert result['host']['softnet']['cpus'] >= 1
