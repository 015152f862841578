# -*- coding: utf-8 -*-
"""Verify the tuned lab hosts (after converge, and again after the containers restarted).

wan-a: rate 1g, RTT 98 ms -> BDP 12250000 bytes, buffers 8 x BDP = 98000000 bytes.
wan-b: rate 500m (inventory host variable) -> BDP 6125000 bytes, buffers 49000000 bytes.
"""

import json

import pytest

BUFFERS = {'wan-a': 98000000, 'wan-b': 49000000}
FORMULA = {
    'wan-a': '8 x BDP = 98000000 bytes (98 MB); BDP = 1 Gbit/s x 98 ms / 8 = 12250000 bytes (12.25 MB)',
    'wan-b': '8 x BDP = 49000000 bytes (49 MB); BDP = 500 Mbit/s x 98 ms / 8 = 6125000 bytes (6.125 MB)',
}
BUFFER_FILE = '/etc/sysctl.d/90-bdp-wan-tune-buffers.conf'
BBR_FILE = '/etc/sysctl.d/90-bdp-wan-tune-bbr.conf'


@pytest.fixture
def name(host):
    return host.check_output('hostname')


def sysctl(host, key):
    return ' '.join(host.check_output('cat /proc/sys/%s' % key.replace('.', '/')).split())


def test_live_buffers(host, name):
    size = BUFFERS[name]
    # min and default stay as the host had them; only the max is raised
    assert sysctl(host, 'net.ipv4.tcp_rmem') == '4096 131072 %d' % size
    assert sysctl(host, 'net.ipv4.tcp_wmem') == '4096 16384 %d' % size


def test_live_companions_and_bbr(host):
    for key in ('tcp_window_scaling', 'tcp_timestamps', 'tcp_sack', 'tcp_moderate_rcvbuf', 'tcp_mtu_probing'):
        assert sysctl(host, 'net.ipv4.' + key) == '1', key
    assert sysctl(host, 'net.ipv4.tcp_congestion_control') == 'bbr'


def test_buffer_file(host, name):
    conf = host.file(BUFFER_FILE)
    assert conf.exists and conf.user == 'root' and conf.mode == 0o644
    text = conf.content_string
    assert text.startswith('#\n# Ansible managed\n#\n')
    assert FORMULA[name] in text
    assert 'net.ipv4.tcp_rmem = 4096 131072 %d\n' % BUFFERS[name] in text
    assert 'net.ipv4.tcp_mtu_probing = 1\n' in text
    # host-owned keys are reported, not written (they would fail at boot in a container)
    assert 'net.core.rmem_max: owned by the host kernel' in text
    assert 'net.core.rmem_max =' not in text


def test_bbr_file(host):
    text = host.file(BBR_FILE).content_string
    assert 'net.ipv4.tcp_congestion_control = bbr\n' in text
    # this kernel has no sch_fq: the default qdisc is left alone
    assert 'default_qdisc' not in text


def test_original_values_recorded_for_rollback(host):
    state = json.loads(host.file('/var/lib/bdp_wan_tune/90-bdp-wan-tune-buffers.conf.json').content_string)
    assert state['original']['net.ipv4.tcp_rmem'] == '4096 131072 6291456'
    assert state['original']['net.ipv4.tcp_wmem'] == '4096 16384 4194304'


def test_no_module_load_file_for_builtin_bbr(host):
    assert not host.file('/etc/modules-load.d/bdp-wan-tune.conf').exists


def test_sysctl_service_applied_cleanly(host):
    unit = host.run('systemctl show -p Result --value systemd-sysctl.service')
    assert unit.stdout.strip() == 'success'
