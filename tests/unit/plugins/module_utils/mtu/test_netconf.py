# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The persistent MTU configuration each backend gets: networkd, NetworkManager, netplan, ifupdown, ifcfg."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import netconf

HEADER = '#\n# Ansible managed\n#'

# --------------------------------------------------------------------------- systemd-networkd


def test_networkd_dropin_text_and_path():
    assert netconf.networkd_dropin(9000, HEADER, 'proven to 198.18.0.2') == (
        '#\n# Ansible managed\n#\n# proven to 198.18.0.2\n[Link]\nMTUBytes=9000\n')
    # a drop-in for any .network file, wherever it lives, goes to /etc/systemd/network/<name>.d/
    assert netconf.networkd_dropin_path('/usr/lib/systemd/network/80-container-host0.network') == \
        '/etc/systemd/network/80-container-host0.network.d/90-bdp-wan-tune-mtu.conf'


def test_networkd_link_state():
    state = netconf.networkd_link_state('# This is private data. Do not parse.\nADMIN_STATE=configured\n'
                                        'OPER_STATE=routable\nNETWORK_FILE=/etc/systemd/network/10-eth0.network\n')
    assert netconf.networkd_managed(state) == '/etc/systemd/network/10-eth0.network'
    assert netconf.networkd_managed(netconf.networkd_link_state('ADMIN_STATE=unmanaged\n')) is None
    assert netconf.networkd_managed({}) is None


def test_networkd_effective_mtu_follows_drop_in_order():
    main = '[Match]\nName=eth0\n[Link]\nMTUBytes=1500\n'
    assert netconf.networkd_effective(main, []) == (1500, 'the .network file')
    dropins = [('/etc/systemd/network/10-eth0.network.d/99-late.conf', '[Link]\nMTUBytes=9K\n'),
               ('/etc/systemd/network/10-eth0.network.d/50-mid.conf', '[Link]\nMTUBytes=4000\n')]
    assert netconf.networkd_effective(main, dropins) == (9216, dropins[0][0])


def test_ini_value_and_bytes():
    text = '[Network]\nMTUBytes=1\n# [Link]\n[Link]\n; MTUBytes=2\nMTUBytes = 9000\n'
    assert netconf.ini_value(text, 'Link', 'MTUBytes') == '9000'
    assert netconf.ini_value(text, 'Link', 'Name') is None
    assert netconf.parse_bytes('1K') == 1024 and netconf.parse_bytes('x') is None


# --------------------------------------------------------------------------- NetworkManager

@pytest.mark.parametrize('conn_type, setting', [('802-3-ethernet', '802-3-ethernet.mtu'),
                                                ('vlan', '802-3-ethernet.mtu'), ('bond', '802-3-ethernet.mtu'),
                                                ('infiniband', 'infiniband.mtu'), ('wireguard', 'wireguard.mtu')])
def test_nm_setting(conn_type, setting):
    assert netconf.nm_setting(conn_type) == setting


def test_nm_commands_modify_then_reapply():
    assert netconf.nm_commands('5f0e-uuid', 'vlan', 9000, 'eth0.100') == [
        ['nmcli', 'connection', 'modify', '5f0e-uuid', '802-3-ethernet.mtu', '9000'],
        ['nmcli', 'device', 'reapply', 'eth0.100']]
    # undo to "auto" is 0 in nmcli
    assert netconf.nm_commands('u', '802-3-ethernet', None, 'eth0')[0][-1] == '0'
    assert netconf.nm_describe([['nmcli', 'connection', 'modify', 'Wired connection 1', 'x', '9000']]) == \
        "nmcli connection modify 'Wired connection 1' x 9000\n"


def test_nm_value_and_unknown_type():
    assert [netconf.nm_value(text) for text in ('auto', '0', '', '9000', '--')] == [None, None, None, 9000, None]
    with pytest.raises(netconf.NetConfError) as info:
        netconf.nm_setting('gsm')
    assert "type 'gsm' has no MTU property" in str(info.value)


# --------------------------------------------------------------------------- netplan

CLOUD_INIT = '''# This file is generated from information provided by the datasource.
network:
    version: 2
    ethernets:
        ens5:
            dhcp4: true
            match:
                macaddress: 06:1f:2a:3b:4c:5d
            set-name: ens5
        eth1: {dhcp4: false}
        wan:
            match: {name: "enp3s0*"}
            addresses: [198.18.0.1/30, "2001:db8::1/64"]
    bonds:
        bond0:
            interfaces: [eth2, eth3]
            mtu: 1500
'''


def test_netplan_files_are_read_with_pyyaml():
    assert netconf.yaml_load(CLOUD_INIT) == yaml.safe_load(CLOUD_INIT)
    assert netconf.yaml_load('') == {} and netconf.yaml_load('# only a comment\n') == {}


def test_without_pyyaml_reading_netplan_fails_clearly(monkeypatch):
    monkeypatch.setattr(netconf, 'HAS_YAML', False)
    with pytest.raises(netconf.NetConfError) as err:
        netconf.yaml_load(CLOUD_INIT)
    assert 'needs PyYAML' in str(err.value) and 'python3-yaml' in str(err.value)


def test_netplan_definitions_merge_by_file_name():
    docs = [('/etc/netplan/90-x.yaml', {'network': {'ethernets': {'eth1': {'mtu': 4000}}}}),
            ('/etc/netplan/50-cloud-init.yaml', yaml.safe_load(CLOUD_INIT)),
            ('/lib/netplan/00-nm.yaml', {'network': {'renderer': 'NetworkManager'}})]
    defs = netconf.netplan_definitions(docs)
    assert defs[('ethernets', 'eth1')]['conf'] == {'dhcp4': False, 'mtu': 4000}
    assert defs[('ethernets', 'eth1')]['mtu_files'] == [('/etc/netplan/90-x.yaml', 4000)]
    assert defs[('bonds', 'bond0')]['renderer'] == 'NetworkManager'


def test_netplan_find():
    defs = netconf.netplan_definitions([('/etc/netplan/50-cloud-init.yaml', yaml.safe_load(CLOUD_INIT))])
    assert netconf.netplan_find(defs, 'ens5', '06:1F:2A:3B:4C:5D')['id'] == 'ens5'      # set-name / MAC
    assert netconf.netplan_find(defs, 'eth1')['id'] == 'eth1'                            # id is the name
    assert netconf.netplan_find(defs, 'enp3s0f1')['id'] == 'wan'                         # match by name glob
    assert netconf.netplan_find(defs, 'bond0')['section'] == 'bonds'
    assert netconf.netplan_find(defs, 'eth9') is None


def test_netplan_entry_matches_by_mac_where_networkd_needs_it():
    defs = netconf.netplan_definitions([('/etc/netplan/50-cloud-init.yaml', yaml.safe_load(CLOUD_INIT))])
    # named only: networkd applies MTU to physical devices reliably only when matched by MAC
    spec = netconf.netplan_entry(defs[('ethernets', 'eth1')], 'eth1', 'AA:BB:CC:00:00:01', 9000)
    assert spec['conf'] == {'mtu': 9000, 'match': {'macaddress': 'aa:bb:cc:00:00:01'}, 'set-name': 'eth1'}
    # already matched by MAC: the merge keeps that match
    assert netconf.netplan_entry(defs[('ethernets', 'ens5')], 'ens5', '06:1f:2a:3b:4c:5d', 9001)['conf'] == \
        {'mtu': 9001}
    # virtual devices and NetworkManager: just the MTU
    assert netconf.netplan_entry(defs[('bonds', 'bond0')], 'bond0', 'aa:bb:cc:00:00:09', 9000)['conf'] == \
        {'mtu': 9000}
    nm = dict(defs[('ethernets', 'eth1')], renderer='NetworkManager')
    assert netconf.netplan_entry(nm, 'eth1', 'aa:bb:cc:00:00:01', 9000)['conf'] == {'mtu': 9000}


def test_netplan_render_merges_into_the_same_ids():
    entries = [{'section': 'ethernets', 'id': 'eth1',
                'conf': {'mtu': 9000, 'match': {'macaddress': 'aa:bb:cc:00:00:01'}, 'set-name': 'eth1'}},
               {'section': 'bonds', 'id': 'bond0', 'conf': {'mtu': 9000}}]
    text = netconf.netplan_render(entries, HEADER)
    assert text.startswith('#\n# Ansible managed\n#\nnetwork:\n  version: 2\n  ethernets:\n    eth1:\n')
    assert yaml.safe_load(text) == {'network': {'version': 2, 'ethernets': {'eth1': {
        'match': {'macaddress': 'aa:bb:cc:00:00:01'}, 'set-name': 'eth1', 'mtu': 9000}},
        'bonds': {'bond0': {'mtu': 9000}}}}
    assert netconf.yaml_load(text) == yaml.safe_load(text)


def test_netplan_conflicts_are_later_files_only():
    entry = {'mtu_files': [('/etc/netplan/50-cloud-init.yaml', 1500), ('/etc/netplan/99-admin.yaml', 1500)]}
    assert netconf.netplan_conflicts(entry, '/etc/netplan/90-bdp-wan-tune-mtu.yaml') == \
        [('/etc/netplan/99-admin.yaml', 1500)]


# --------------------------------------------------------------------------- ifupdown

INTERFACES = '''# interfaces(5) file used by ifup(8) and ifdown(8)
source /etc/network/interfaces.d/*
source-directory extra.d

auto lo
iface lo inet loopback

allow-hotplug eth0
iface eth0 inet static
    address 198.18.0.1/30
    mtu 1500

iface eth1 inet manual
'''


def test_ifupdown_parse():
    parsed = netconf.ifupdown_parse(INTERFACES, '/etc/network/interfaces')
    assert [(s['name'], s['method'], s['line']) for s in parsed['ifaces']] == [
        ('lo', 'loopback', 6), ('eth0', 'static', 9), ('eth1', 'manual', 13)]
    assert parsed['ifaces'][1]['options'] == {'address': '198.18.0.1/30', 'mtu': '1500'}
    assert parsed['auto'] == {'lo', 'eth0'}
    assert parsed['sources'] == [('source', '/etc/network/interfaces.d/*'), ('source-directory', 'extra.d')]


def test_ifupdown_sources_our_file():
    parsed = netconf.ifupdown_parse(INTERFACES)
    assert netconf.ifupdown_sources_file(parsed['sources'], '/etc/network/interfaces.d/bdp-wan-tune-mtu')
    # source-directory only reads run-parts names
    assert netconf.ifupdown_sources_file(parsed['sources'], '/etc/network/extra.d/bdp-wan-tune-mtu')
    assert not netconf.ifupdown_sources_file(parsed['sources'], '/etc/network/extra.d/bdp.conf')
    assert not netconf.ifupdown_sources_file([], '/etc/network/interfaces.d/bdp-wan-tune-mtu')


def test_ifupdown_render_and_conflicts():
    text = netconf.ifupdown_render([('eth1', 9000, True), ('eth0', 9000, False)], HEADER)
    assert text == ('#\n# Ansible managed\n#\n'
                    '# bdp.wan_tune.jumbo_mtu: MTU set after a path proof; ifupdown applies every stanza of an '
                    'interface.\n\niface eth0 inet manual\n    mtu 9000\n\nauto eth1\niface eth1 inet manual\n'
                    '    mtu 9000\n')
    stanzas = netconf.ifupdown_parse(INTERFACES, '/etc/network/interfaces')['ifaces']
    assert netconf.ifupdown_conflicts(stanzas, 'eth0', 9000, '/etc/network/interfaces.d/bdp-wan-tune-mtu') == \
        [('/etc/network/interfaces', 11, '1500')]
    assert netconf.ifupdown_conflicts(stanzas, 'eth0', 1500, '/x') == []
    assert netconf.ifupdown_conflicts(stanzas, 'eth1', 9000, '/x') == []


# --------------------------------------------------------------------------- ifcfg

IFCFG = 'DEVICE=eth0\nBOOTPROTO=none\nONBOOT=yes\nMTU=1500\nIPADDR=198.18.0.1\n'


def test_ifcfg_replaces_the_mtu_line_in_place_and_restores_it():
    new, original = netconf.ifcfg_render(IFCFG, 9000)
    assert new == ('DEVICE=eth0\nBOOTPROTO=none\nONBOOT=yes\n# bdp.wan_tune.jumbo_mtu\nMTU=9000\n'
                   'IPADDR=198.18.0.1\n')
    assert original == 'MTU=1500'
    assert netconf.ifcfg_get(new, 'MTU') == '9000'
    # rendering our own output again changes nothing and does not take our line for the original
    assert netconf.ifcfg_render(new, 9000) == (new, None)
    assert netconf.ifcfg_restore(new, original) == IFCFG


def test_ifcfg_without_mtu_gets_one_appended_and_removed_again():
    text = 'DEVICE=eth1\nONBOOT=yes\n'
    new, original = netconf.ifcfg_render(text, 9000)
    assert new == text + '# bdp.wan_tune.jumbo_mtu\nMTU=9000\n' and original is None
    assert netconf.ifcfg_restore(new, None) == text
    assert netconf.ifcfg_get('MTU="9000"\n', 'MTU') == '9000'
