# -*- coding: utf-8 -*-
"""Verify the jumbo hosts after converge, and again after both containers restarted.

After the restart podman recreates eth0 at MTU 1500; 9000 can only come back from the
host's own network stack: systemd-networkd's drop-in on jm-networkd, ifupdown's stanza on
jm-ifupdown.
"""

import json

import pytest

PEER = {'jm-networkd': '198.18.4.12', 'jm-ifupdown': '198.18.4.11'}
DROPIN = '/etc/systemd/network/10-eth0.network.d/90-bdp-wan-tune-mtu.conf'
IFUPDOWN = '/etc/network/interfaces.d/bdp-wan-tune-mtu'


@pytest.fixture
def name(host):
    return host.check_output('hostname')


def test_live_mtu_is_9000(host):
    assert host.file('/sys/class/net/eth0/mtu').content_string.strip() == '9000'


def test_path_carries_full_size_frames(host, name):
    # 8972 bytes of ICMP payload + 28 bytes of headers = 9000, don't fragment
    out = host.run('ping -M do -s 8972 -c 3 -W 2 %s' % PEER[name])
    assert out.rc == 0, out.stdout + out.stderr


def test_persisted_through_the_hosts_network_stack(host, name):
    if name == 'jm-networkd':
        text = host.file(DROPIN).content_string
        assert '[Link]\nMTUBytes=9000\n' in text
        assert 'Ansible managed' in text
        status = host.check_output('networkctl status eth0 --no-pager')
        assert '(configured)' in status
        assert 'MTU: 9000' in status
        assert not host.file(IFUPDOWN).exists
    else:
        text = host.file(IFUPDOWN).content_string
        assert 'iface eth0 inet manual\n    mtu 9000\n' in text
        # eth0 already has "auto eth0" in /etc/network/interfaces: no second one
        assert 'auto eth0' not in text
        assert 'mtu: 9000' in host.check_output('ifquery eth0')
        assert host.service('networking').is_enabled


def test_recorded_for_undo(host):
    state = json.loads(host.file('/var/lib/bdp_wan_tune/jumbo_mtu.json').content_string)
    assert state['original'] == {'eth0': 1500}
    assert state['committed'] == {'eth0': 9000}
    assert state['pending'] is None
    assert [item['outcome'] for item in state['history']] == ['confirmed']


def test_no_timer_listener_or_script_left(host):
    units = host.run('systemctl list-units --all --no-legend --plain "bdp-wan-tune-mtu-*"')
    assert units.stdout.strip() == ''
    # only the decision markers of the confirmed changes stay, until boot (a timer that fired late backs off)
    left = host.run('ls -A /run/bdp_wan_tune').stdout.split()
    assert all(name.startswith('jumbo_mtu-') and name.endswith('.decided') for name in left), left
    assert host.run("pgrep -f '[b]dp-wan-tune-mtu-listener'").rc == 1


def test_black_hole_protection_from_tcp_buffers(host):
    assert host.file('/proc/sys/net/ipv4/tcp_mtu_probing').content_string.strip() == '1'
    assert 'net.ipv4.tcp_mtu_probing = 1' in host.file('/etc/sysctl.d/90-bdp-wan-tune-buffers.conf').content_string
