# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The diagnosis from the host surveys (module_utils/nic/diagnose.py): two surveys of a fake host (the nic_host
fixture), before and after a test whose counters rose, and the pairs of the verify report's fixtures
(tests/unit/fixtures/verify) as verify_report.normalise keeps them."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import diagnose, survey
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures')
E1000E_STATS = {'rx_packets': 10, 'rx_missed_errors': 0, 'rx_no_buffer_count': 0}
SOFTNET = '00000100 %08x %08x 0 0 0 0 0 0 0 0 0 00000000\n00000200 00000000 00000000 0 0 0 0 0 0 0 0 0 00000001\n'


def pair(name):
    """The first pair of a verify report fixture, as the report keeps it."""
    with open(os.path.join(FIXTURES, 'verify', name)) as handle:
        return verify_report.normalise(json.load(handle)[0])


FAILED = pair('loopback-fail-rate-1t.json')


def take(host):
    """One survey, as bdp.wan_tune.nic_facts returns it."""
    names = sorted(os.listdir(host.sys_class_net))
    return {'nic': dict((name, survey.interface(name, None, host.sys_class_net)) for name in names),
            'host': survey.host(host.proc, host.cpu_dir)}


@pytest.fixture
def receiver(nic_host):
    """A 10G e1000e-like receiver with the performance governor, surveyed before the test."""
    nic_host.add_nic('ens4', driver='e1000e', speed=10000, rings=(4096, 4096, 4096, 4096),
                     coalescing=(3, False, False), stats=dict(E1000E_STATS))
    nic_host.governors('performance', 'performance')
    nic_host.softnet(SOFTNET % (0, 0))
    nic_host.before = take(nic_host)
    return nic_host


def test_the_fixtures_are_what_the_tests_say():
    assert FAILED['status'] == verify_report.FAIL and FAILED['target'] == 'h2'
    assert pair('loopback-pass.json')['status'] == verify_report.PASS


def test_ring_drops_on_the_receiver_name_the_rings(receiver):
    receiver.set_counters('ens4', {'rx_missed_errors': 1200})
    receiver.ethtool['ens4']['stats'].update(rx_missed_errors=1200, rx_no_buffer_count=30, rx_packets=900)
    receiver.ethtool['ens4']['rings'] = (512, 4096, 512, 4096)
    lines = diagnose.hints(FAILED, receiver={'before': receiver.before, 'after': take(receiver)})
    assert lines == ['receiver h2: ring/missed drops on ens4 rose during the test (rx_missed_errors +1200, '
                     'rx_no_buffer_count +30): raise the rings (nic_rings / ethtool -G ens4 rx 4096 tx 4096)']


def test_ring_drops_at_the_maximum_say_so(receiver):
    receiver.ethtool['ens4']['stats'].update(rx_no_buffer_count=5)
    lines = diagnose.hints(FAILED, receiver={'before': receiver.before, 'after': take(receiver)})
    assert lines == ['receiver h2: ring/missed drops on ens4 rose during the test (rx_no_buffer_count +5): the rings '
                     'are at the driver\'s maximum already (rx 4096, tx 4096), so the host does not drain them fast '
                     'enough: spread the NIC\'s interrupts over the CPUs of its NUMA node (irqbalance) or use more '
                     'queues']


def test_softnet_drops_and_time_squeezes_name_the_backlog_and_the_budget(receiver):
    receiver.softnet(SOFTNET % (40, 7))
    lines = diagnose.hints(FAILED, receiver={'before': receiver.before, 'after': take(receiver)})
    assert lines == [
        'receiver h2: /proc/net/softnet_stat drops rose by 40 during the test (the backlog queue was full): raise '
        'net.core.netdev_max_backlog',
        'receiver h2: /proc/net/softnet_stat time_squeeze rose by 7 during the test (the softirq ran out of budget '
        'with packets left): raise net.core.netdev_budget (and net.core.netdev_budget_usecs)']


def test_a_passed_pair_or_one_that_did_not_run_did_not_fall_short():
    # the report asks for hints only where a pair fell short (test_verify_report_hosts.py shows none for the others)
    for name in ('loopback-pass.json', 'loopback-error-congestion.json', 'loopback-check-mode.json'):
        assert not verify_report.fell_short(pair(name)), name


def test_a_pair_below_its_fraction_without_a_verdict_fell_short():
    short = dict(FAILED, status=verify_report.UNJUDGED, fraction=0.4, min_fraction=0.7)
    assert verify_report.fell_short(short) is True
    assert verify_report.fell_short(dict(short, fraction=0.9)) is False
    assert verify_report.fell_short(dict(short, fraction=None)) is False
    assert verify_report.fell_short(FAILED) is True


def test_counters_that_wrap_or_reset():
    assert diagnose.rise(0xfffffff0, 0x10, diagnose.SOFTNET_BITS) == 0x20      # a 32-bit softnet counter wrapped
    assert diagnose.rise(5000, 12) == 0                                        # the interface was made again
    assert diagnose.rise(None, 12) == diagnose.rise(3, None) == 0


def test_a_cpu_in_one_survey_only_counts_nothing(receiver):
    # a CPU that came online during the test keeps the counts of its earlier life: they did not rise in the test
    receiver.softnet(SOFTNET % (2, 0))
    after = take(receiver)
    after['host']['softnet']['per_cpu'].append({'cpu': 5, 'processed': 9, 'dropped': 3, 'time_squeeze': 1})
    assert diagnose.softnet_rise(receiver.before['host'], after['host']) == {'dropped': 2, 'time_squeeze': 0}


def test_the_settings_of_a_fast_host_without_drops(nic_host):
    """The sender: rings below the maximum on a 25G NIC and the powersave governor, no counter rose."""
    nic_host.add_nic('ens5', driver='mlx5_core', speed=25000, rings=(1024, 8192, 1024, 8192), coalescing=(8, True, True),
                     stats={'rx_out_of_buffer': 0})
    nic_host.add_nic('ens6', driver='e1000e', speed=1000, rings=(256, 4096, 256, 4096), coalescing=(3, False, False),
                     stats={})
    nic_host.governors('powersave', 'powersave')
    nic_host.softnet(SOFTNET % (0, 0))
    before = take(nic_host)
    assert diagnose.hints(FAILED, sender={'before': before, 'after': take(nic_host)}) == [
        'sender h1: the CPU frequency governor is powersave, not performance: set performance (cpupower '
        'frequency-set -g performance, or scaling_governor in /sys/devices/system/cpu/cpu*/cpufreq)',
        'sender h1: the rings of ens5 are rx 1024 of 8192, tx 1024 of 8192 on a 25000 Mbit/s NIC: raise the rings '
        '(nic_rings / ethtool -G ens5 rx 8192 tx 8192)']
    # the settings alone come from the latest survey too
    assert len(diagnose.hints(FAILED, sender={'after': before})) == 2


def test_a_vm_without_cpufreq_or_rings_gets_no_setting_hint(nic_host):
    nic_host.add_nic('ens3', driver='virtio_net', speed=-1, rings=None, coalescing=None, stats={'rx_queue_0_drops': 0})
    nic_host.governors(None)
    nic_host.softnet(SOFTNET % (0, 0))
    before = take(nic_host)
    assert diagnose.hints(FAILED, sender={'before': before, 'after': before}, receiver=None) == []
    nic_host.ethtool['ens3']['stats']['rx_queue_0_drops'] = 17
    assert diagnose.hints(FAILED, sender={'before': before, 'after': take(nic_host)}) == [
        'sender h1: ring/missed drops on ens3 rose during the test (rx_queue_0_drops +17): raise the rings (nic_rings '
        '/ ethtool -G ens3 rx MAX tx MAX), where the driver allows it (ethtool -g ens3 shows the maximum)']
