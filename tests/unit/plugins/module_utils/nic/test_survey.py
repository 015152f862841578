# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host survey (module_utils/nic/survey.py and ethtool.py) against fake hosts (the nic_host fixture: a sysfs and
procfs tree in tmp_path and the kernel's side of the ethtool ioctl), and against this machine's kernel: the loopback
in this namespace and a veth pair in a throwaway network namespace.

The fake NICs are those the issue measured in a Debian 12 VM: QEMU's e1000e (rings 256 of 4096, coalescing with
rx-usecs 3) and virtio-net (rings 256 of 256, no coalescing: EOPNOTSUPP).  softnet_stat-2cpu-6.18.txt was recorded on
a 2-CPU VM (kernel 6.18, 15 columns); softnet_stat-64cpu-6.1.txt is made in the layout of Debian 12's kernel 6.1
(13 columns) with known totals: processed 2181040096, dropped 11 (7 on CPU 17), time_squeeze 126.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import links
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu, mtuplan
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool, survey

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'nic')
E1000E_STATS = {'rx_packets': 91234, 'rx_missed_errors': 0, 'tx_restart_queue': 3, 'rx_no_buffer_count': 0,
                'tx_dropped': 0}
VIRTIO_STATS = {'rx_queue_0_packets': 5000, 'rx_queue_0_drops': 0, 'rx_queue_0_xdp_drops': 0}


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def e1000e(host, name='ens4', **extra):
    host.add_nic(name, **dict(dict(driver='e1000e', speed=1000, rings=(256, 4096, 256, 4096), coalescing=(3, False, False),
                                   stats=E1000E_STATS), **extra))


def virtio(host, name='ens3', **extra):
    host.add_nic(name, **dict(dict(driver='virtio_net', speed=-1, rings=(256, 256, 256, 256), coalescing=None,
                                   stats=VIRTIO_STATS), **extra))


def read(host, name, qdisc_text=None):
    return survey.interface(name, qdisc_text, host.sys_class_net)


# ----------------------------------------------------------------------------- interfaces

def test_an_e1000e_nic(nic_host):
    e1000e(nic_host, counters={'rx_missed_errors': 12})
    facts = read(nic_host, 'ens4', 'qdisc fq_codel 0: root refcnt 2 limit 10240p flows 1024\n')
    assert facts == {
        'driver': 'e1000e', 'speed_mbps': 1000, 'tx_queue_len': 1000, 'numa_node': None, 'qdisc': 'fq_codel',
        'counters': {'rx_missed_errors': 12, 'rx_dropped': 0, 'tx_dropped': 0},
        'rings': {'supported': True, 'rx': 256, 'rx_max': 4096, 'tx': 256, 'tx_max': 4096},
        'coalescing': {'supported': True, 'adaptive_rx': False, 'adaptive_tx': False, 'rx_usecs': 3, 'tx_usecs': 0},
        # only the counters of drops and missed packets: not rx_packets, not tx_restart_queue
        'driver_drops': {'supported': True, 'counters': {'rx_missed_errors': 0, 'rx_no_buffer_count': 0,
                                                         'tx_dropped': 0}}}
    assert survey.describe('ens4', facts) == (
        'ens4: driver e1000e, 1000 Mbit/s, rings rx 256 of 4096, tx 256 of 4096, coalescing adaptive rx off tx off, '
        'rx-usecs 3, txqueuelen 1000, qdisc fq_codel, NUMA node none')


def test_a_virtio_nic_without_coalescing(nic_host):
    virtio(nic_host, numa_node=1)
    facts = read(nic_host, 'ens3', 'qdisc mq 0: root\nqdisc fq 0: parent :2 limit 10000p\nqdisc fq 0: parent :1\n')
    assert facts['driver'] == 'virtio_net' and facts['speed_mbps'] is None and facts['numa_node'] == 1
    assert facts['rings'] == {'supported': True, 'rx': 256, 'rx_max': 256, 'tx': 256, 'tx_max': 256}
    assert facts['coalescing'] == {'supported': False, 'reason': 'not supported by the driver (EOPNOTSUPP)'}
    assert facts['driver_drops'] == {'supported': True, 'counters': {'rx_queue_0_drops': 0}}   # XDP's own left out
    assert facts['qdisc'] == 'mq/fq'
    assert 'speed not reported, rings rx 256 of 256, tx 256 of 256, coalescing unsupported' in \
        survey.describe('ens3', facts)


def test_a_virtual_device_has_no_driver_rings_or_node(nic_host):
    nic_host.add_nic('br0', speed=None, tx_queue_len=0)
    facts = read(nic_host, 'br0')
    assert (facts['driver'], facts['speed_mbps'], facts['numa_node'], facts['tx_queue_len'], facts['qdisc']) == \
        ('none', None, None, 0, None)
    unsupported = {'supported': False, 'reason': 'not supported by the driver (EOPNOTSUPP)'}
    assert facts['rings'] == facts['coalescing'] == facts['driver_drops'] == unsupported
    assert 'qdisc unknown (no tc)' in survey.describe('br0', facts)


def test_a_refused_query_says_why_and_unreadable_counters_are_null(nic_host, monkeypatch):
    e1000e(nic_host)
    os.unlink(os.path.join(nic_host.sys_class_net, 'ens4', 'statistics', 'rx_missed_errors'))

    def refused(name, request):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))
    monkeypatch.setattr(ethtool, 'call', refused)
    facts = read(nic_host, 'ens4')
    assert facts['rings'] == {'supported': False, 'reason': 'could not be read: Operation not permitted'}
    assert facts['counters']['rx_missed_errors'] is None


def test_the_driver_is_the_one_the_mtu_platform_check_reads(nic_host, monkeypatch):
    # one reader of /sys/class/net/NAME/device/driver (common/links.py): the cloud check of link_mtu tells MANA by it
    e1000e(nic_host, name='eth1')
    nic_host.add_nic('lo')
    monkeypatch.setattr(links, 'SYS_CLASS_NET', nic_host.sys_class_net)
    seen = {}
    monkeypatch.setattr(linkmtu, 'cloud_platform', lambda dmi, drivers: seen.update(drivers))
    mtuplan.platform('auto')
    assert seen == {'eth1': 'e1000e'}


# ----------------------------------------------------------------------------- the devices below

LINKS = linkmtu.parse_links([
    {'ifindex': 2, 'ifname': 'eno1', 'mtu': 9000, 'master': 'bond0'},
    {'ifindex': 3, 'ifname': 'eno2', 'mtu': 9000, 'master': 'bond0'},
    {'ifindex': 4, 'ifname': 'bond0', 'mtu': 9000, 'linkinfo': {'info_kind': 'bond'}},
    {'ifindex': 5, 'ifname': 'bond0.10', 'link': 'bond0', 'mtu': 9000,
     'linkinfo': {'info_kind': 'vlan', 'info_data': {'id': 10}}},
    {'ifindex': 6, 'ifname': 'ens4', 'mtu': 1500},
])


def test_the_devices_below_a_vlan_on_a_bond_are_surveyed():
    assert survey.carriers(LINKS, [('bond0.10', 'route to 198.18.0.2'), ('ens4', 'given')]) == [
        ('bond0.10', 'route to 198.18.0.2'), ('ens4', 'given'), ('bond0', 'parent of vlan bond0.10'),
        ('eno1', 'member of bond bond0'), ('eno2', 'member of bond bond0')]
    # each once, with the reason it was first asked for
    assert survey.carriers(LINKS, [('eno1', 'given'), ('bond0', 'route to 198.18.0.2')]) == [
        ('eno1', 'given'), ('bond0', 'route to 198.18.0.2'), ('eno2', 'member of bond bond0')]


# ----------------------------------------------------------------------------- the host

def test_a_vm_without_cpufreq(nic_host):
    nic_host.governors(None, None)
    nic_host.softnet(fixture('softnet_stat-2cpu-6.18.txt'))
    nic_host.process(1, 'systemd')
    facts = survey.host(nic_host.proc, nic_host.cpu_dir)
    assert facts['governor'] == {'supported': False, 'reason': 'unsupported: no cpufreq (%s/cpu*/cpufreq/'
                                 'scaling_governor is absent: a VM, or frequency scaling is off in the firmware)'
                                 % nic_host.cpu_dir}
    assert facts['irqbalance'] is False
    assert survey.describe_host(facts).startswith('governor unsupported: no cpufreq (')
    assert survey.describe_host(facts).endswith('irqbalance not running, softnet over 2 CPUs: 0 dropped, '
                                                '2 time squeezes')


def test_governors_are_distinct_and_irqbalance_is_found_by_name(nic_host):
    nic_host.governors('powersave', 'performance', 'powersave', None)
    nic_host.process(1, 'systemd')
    nic_host.process(812, 'irqbalance')
    os.makedirs(os.path.join(nic_host.proc, 'sys'))
    assert survey.governors(nic_host.cpu_dir) == {'supported': True, 'governors': ['performance', 'powersave'],
                                                  'cpus': 3}
    assert survey.irqbalance_running(nic_host.proc) is True
    assert survey.irqbalance_running(os.path.join(nic_host.proc, 'absent')) is False


def test_softnet_of_a_2_cpu_host():
    softnet = survey.parse_softnet(fixture('softnet_stat-2cpu-6.18.txt'))
    assert (softnet['cpus'], softnet['processed'], softnet['dropped'], softnet['time_squeeze']) == (2, 55097694, 0, 2)
    assert softnet['per_cpu'][1] == {'cpu': 1, 'processed': 0x019ea068, 'dropped': 0, 'time_squeeze': 2}


def test_softnet_of_a_64_cpu_host():
    softnet = survey.parse_softnet(fixture('softnet_stat-64cpu-6.1.txt'))
    assert (softnet['supported'], softnet['cpus'], softnet['processed'], softnet['dropped'],
            softnet['time_squeeze']) == (True, 64, 2181040096, 11, 126)
    assert softnet['per_cpu'][17] == {'cpu': 17, 'processed': 0x1200011, 'dropped': 7, 'time_squeeze': 2}


def test_softnet_cpu_numbers_skip_offline_cpus_and_old_kernels_count_lines():
    # Linux 5.10 and later name the CPU in column 12 (CPU 1 offline here); before, the 11 columns have no number
    new = ('0000000a 00000001 00000002 0 0 0 0 0 0 0 0 0 00000000\n'
           '00000014 00000003 00000004 0 0 0 0 0 0 0 0 0 00000002\n')
    assert [item['cpu'] for item in survey.parse_softnet(new)['per_cpu']] == [0, 2]
    old = '0000000a 00000001 00000002 0 0 0 0 0 0 0 0\n00000014 00000003 00000004 0 0 0 0 0 0 0 0\n'
    parsed = survey.parse_softnet(old)
    assert [item['cpu'] for item in parsed['per_cpu']] == [0, 1] and parsed['dropped'] == 4
    assert survey.parse_softnet('not hex at all\n\n') == survey.parse_softnet(None) == {
        'supported': False, 'cpus': 0, 'processed': 0, 'dropped': 0, 'time_squeeze': 0, 'per_cpu': []}


# ----------------------------------------------------------------------------- this machine's kernel

def test_the_real_loopback_has_no_rings():
    assert ethtool.rings('lo') == {'supported': False, 'reason': 'not supported by the driver (EOPNOTSUPP)'}
    assert survey.link('lo')['driver'] == 'none'


def in_netns(netns, code):
    """Run ``code`` with this interpreter inside ``netns``, the collection importable; its stdout as JSON."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(['ip', 'netns', 'exec', netns, sys.executable, '-c', code], capture_output=True, text=True,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_real_veth_pair_through_the_real_ioctl(netns):
    made = subprocess.run(['ip', '-n', netns, 'link', 'add', 'bdp0', 'type', 'veth', 'peer', 'name', 'bdp1'],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip('no veth here: %s' % made.stderr.strip())
    facts = in_netns(netns, 'import json\nfrom ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey\n'
                            'print(json.dumps(survey.interface("bdp0")))')
    assert (facts['driver'], facts['speed_mbps'], facts['numa_node'], facts['tx_queue_len']) == ('none', None, None, 1000)
    rings = facts['rings']
    if rings['supported']:      # veth reports rings on some kernels
        assert 0 < rings['rx'] <= rings['rx_max'] and 0 < rings['tx'] <= rings['tx_max'], rings
    else:
        assert rings == {'supported': False, 'reason': 'not supported by the driver (EOPNOTSUPP)'}
    # veth names its per-queue drops (ETHTOOL_GSSET_INFO, GSTRINGS and GSTATS, read for real)
    assert facts['driver_drops']['supported'] is True, facts['driver_drops']
    assert facts['driver_drops']['counters'].get('rx_queue_0_drops') == 0, facts['driver_drops']
    assert facts['counters'] == {'rx_missed_errors': 0, 'rx_dropped': 0, 'tx_dropped': 0}
