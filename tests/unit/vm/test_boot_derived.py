# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VM tier's rule for sysctl keys the kernel derives at boot (tests/vm/boot_derived.py and its fixture)."""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'vm'))
import boot_derived  # noqa: E402  pylint: disable=wrong-import-position
import vmlib  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(scope='module')
def recorded():
    with open(vmlib.BOOT_DERIVED_FIXTURE) as handle:
        return json.load(handle)


def test_the_fixture_records_the_comparison_for_every_tier_vm(recorded):
    assert set(recorded['suites']) >= {'bookworm', 'trixie'}
    for suite, found in recorded['suites'].items():
        boots = found['boots']
        assert any(boot['how'] == 'reboot' for boot in boots), suite
        assert len(set(boot['memory_mib'] for boot in boots)) >= 2, suite    # memory-derived keys show
        assert len(set(boot['cpus'] for boot in boots)) >= 2, suite
        assert found['kernel'] and found['keys'], suite
        for key, values in found['keys'].items():
            assert len(values) == len(boots) and len(set(values)) > 1, (suite, key)


def test_the_key_that_turned_a_run_red_is_found_by_the_rule(recorded):
    # net.ipv4.inet_peer_threshold differed by one between two boots of the Debian 13 VM (50550, 50551)
    for suite in ('bookworm', 'trixie'):
        assert 'net.ipv4.inet_peer_threshold' in recorded['suites'][suite]['keys'], suite
    assert vmlib.left_out('net.ipv4.inet_peer_threshold')


def test_every_key_the_collection_writes_is_still_compared():
    protected = boot_derived.protected_keys()
    for key in ('net.core.rmem_max', 'net.core.wmem_max', 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem',
                'net.ipv4.tcp_mem', 'net.ipv4.tcp_congestion_control', 'net.core.default_qdisc',
                'net.core.netdev_max_backlog', 'net.ipv4.tcp_mtu_probing'):
        assert key in protected, key
    for key in protected | {'net.ipv6.conf.ens4.mtu', 'net.ipv4.tcp_available_congestion_control'}:
        assert not vmlib.left_out(key), key


def test_counters_stay_out_and_ordinary_keys_stay_in():
    assert vmlib.left_out('fs.file-nr') and vmlib.left_out('kernel.random.uuid')
    assert not vmlib.left_out('net.ipv4.ip_forward') and not vmlib.left_out('vm.swappiness')


def test_protected_keys_come_from_the_collections_own_code(tmp_path):
    (tmp_path / 'roles' / 'r' / 'tasks').mkdir(parents=True)
    (tmp_path / 'plugins').mkdir()
    (tmp_path / 'roles' / 'r' / 'tasks' / 'main.yml').write_text('key: net.ipv4.tcp_notsent_lowat\n')
    (tmp_path / 'plugins' / 'x.py').write_text("KEY = 'net.core.somaxconn'\n")
    assert boot_derived.protected_keys(str(tmp_path)) == {'net.ipv4.tcp_notsent_lowat', 'net.core.somaxconn'}
    assert boot_derived.is_protected('net.ipv6.conf.eth1.mtu', set())
    assert not boot_derived.is_protected('net.ipv4.inet_peer_threshold', set())


def test_a_protected_boot_derived_key_is_compared_within_the_boot_noise():
    assert 'net.ipv4.tcp_mem' in vmlib.boot_derived()[1]
    assert vmlib.same_value('net.ipv4.tcp_mem', '10314\t13754\t20628', '10315\t13754\t20627')
    # what a run writes or leaves behind is far outside the noise
    assert not vmlib.same_value('net.ipv4.tcp_mem', '10314\t13754\t20628', '10314\t23926\t35889')
    assert not vmlib.same_value('net.ipv4.tcp_mem', '10314\t13754\t20628', '10314\t13754')
    # other keys compare exactly
    assert not vmlib.same_value('net.core.rmem_max', '212992', '212993')
    before = {'sysctl': ['net.ipv4.tcp_mem = 10314\t13754\t20628', 'net.core.rmem_max = 212992']}
    after = {'sysctl': ['net.ipv4.tcp_mem = 10315\t13754\t20628', 'net.core.rmem_max = 98000000']}
    assert vmlib.differences(before, after) == {
        'sysctl': ['- net.core.rmem_max = 212992', '+ net.core.rmem_max = 98000000']}
