# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""link_mtu_persist in-process on a scratch root: detection per backend, files, conflicts, check mode, undo."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible.module_utils import basic
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtupersist
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import netconf
from ansible_collections.bdp.wan_tune.plugins.modules import link_mtu_persist

LINKS = [
    {'ifindex': 1, 'ifname': 'lo', 'mtu': 65536, 'link_type': 'loopback', 'address': '00:00:00:00:00:00'},
    {'ifindex': 2, 'ifname': 'eth0', 'mtu': 9000, 'link_type': 'ether', 'address': '02:00:00:00:00:01',
     'max_mtu': 9216},
]


class Root(object):
    def __init__(self, path):
        self.path = str(path)
        self.state_dir = os.path.join(self.path, 'var/lib/bdp_wan_tune')
        self.commands = []
        self.nm_mtu = 'auto'

    def file(self, rel, text=None, mode=0o644):
        path = os.path.join(self.path, rel.lstrip('/'))
        if text is not None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as handle:
                handle.write(text)
            os.chmod(path, mode)
        return path

    def read(self, rel):
        with open(self.file(rel)) as handle:
            return handle.read()

    def exists(self, rel):
        return os.path.exists(self.file(rel))


@pytest.fixture
def root(tmp_path, monkeypatch):
    fake = Root(tmp_path / 'root')
    nm = {'on': False}
    fake.nm = nm

    def run_command(self, args, **kwargs):
        args = [str(a) for a in args]
        fake.commands.append(args)
        name = os.path.basename(args[0])
        if name == 'ip':
            return 0, json.dumps(LINKS), ''
        if name == 'nmcli':
            rest = args[1:]
            if rest == ['-t', '-f', 'RUNNING', 'general']:
                return 0, 'running\n', ''
            if rest == ['-g', 'GENERAL.CON-UUID', 'device', 'show', 'eth0']:
                return 0, 'uuid-1\n', ''
            if rest == ['-g', 'connection.type,connection.id', 'connection', 'show', 'uuid-1']:
                return 0, '802-3-ethernet\nWired connection 1\n', ''
            if rest == ['-g', '802-3-ethernet.mtu', 'connection', 'show', 'uuid-1']:
                return 0, fake.nm_mtu + '\n', ''
            if rest[:3] == ['connection', 'modify', 'uuid-1']:
                fake.nm_mtu = 'auto' if rest[4] == '0' else rest[4]
                return 0, '', ''
            if rest[:2] == ['device', 'reapply']:
                return 0, '', ''
        return 0, '', ''

    def get_bin_path(self, name, required=False, opt_dirs=None):
        if name == 'ip':
            return '/sbin/ip'
        if name == 'nmcli':
            return '/usr/bin/nmcli' if nm['on'] else None
        return None

    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    monkeypatch.setattr(mtupersist, 'ROOT', fake.path)         # the host's configuration: a scratch root
    return fake


def run(run_module, root, **extra):
    params = {'interfaces': [{'name': 'eth0', 'mtu': 9000}], 'state_dir': root.state_dir,
              'header': '# Ansible managed'}
    params.update(extra)
    return run_module(link_mtu_persist.main, params)


NETWORKD_LINK = 'ADMIN_STATE=configured\nNETWORK_FILE=/etc/systemd/network/10-eth0.network\n'
DROPIN = 'etc/systemd/network/10-eth0.network.d/90-bdp-wan-tune-mtu.conf'


def test_networkd_dropin_written_once_and_removed(run_module, root):
    root.file('run/systemd/netif/links/2', NETWORKD_LINK)
    root.file('etc/systemd/network/10-eth0.network', '[Match]\nName=eth0\n[Network]\nAddress=198.18.0.1/30\n')
    check = run(run_module, root, _ansible_check_mode=True, _ansible_diff=True)
    assert check['changed'] and not root.exists(DROPIN)
    assert check['diff'][0]['after'] == '# Ansible managed\n[Link]\nMTUBytes=9000\n'
    first = run(run_module, root)
    assert first['changed'] and first['interfaces']['eth0']['backend'] == 'networkd'
    assert 'systemd-networkd manages eth0 with /etc/systemd/network/10-eth0.network' in \
        first['interfaces']['eth0']['evidence']
    assert root.read(DROPIN) == '# Ansible managed\n[Link]\nMTUBytes=9000\n'
    assert not [c for c in root.commands if 'networkctl' in c[0]]       # no reload unless asked
    assert not run(run_module, root)['changed']
    undone = run_module(link_mtu_persist.main, {'state': 'absent', 'state_dir': root.state_dir})
    assert undone['changed'] and not root.exists(DROPIN)
    assert not root.exists('etc/systemd/network/10-eth0.network.d')


def test_networkd_later_dropin_is_a_conflict(run_module, root):
    root.file('run/systemd/netif/links/2', NETWORKD_LINK)
    root.file('etc/systemd/network/10-eth0.network', '[Match]\nName=eth0\n')
    root.file('etc/systemd/network/10-eth0.network.d/99-admin.conf', '[Link]\nMTUBytes=1500\n')
    result = run(run_module, root)
    assert result['failed'] and 'sets MTUBytes=1500 for eth0 and is read after 90-bdp-wan-tune-mtu.conf' \
        in result['msg'] and 'Nothing was written' in result['msg']
    assert not root.exists(DROPIN)


def test_networkd_already_configured(run_module, root):
    root.file('run/systemd/netif/links/2', NETWORKD_LINK)
    root.file('etc/systemd/network/10-eth0.network', '[Match]\nName=eth0\n[Link]\nMTUBytes=9000\n')
    result = run(run_module, root)
    assert not result['changed'] and result['interfaces']['eth0']['status'] == 'configured'


def test_ifupdown_stanza_and_undo(run_module, root):
    root.file('etc/network/interfaces', 'source /etc/network/interfaces.d/*\nauto lo\niface lo inet loopback\n\n'
                                        'allow-hotplug eth0\niface eth0 inet dhcp\n')
    result = run(run_module, root)
    assert result['changed'] and result['interfaces']['eth0']['backend'] == 'ifupdown', result
    text = root.read('etc/network/interfaces.d/bdp-wan-tune-mtu')
    assert text.endswith('\niface eth0 inet manual\n    mtu 9000\n') and 'auto eth0' not in text
    assert not run(run_module, root)['changed']
    run_module(link_mtu_persist.main, {'state': 'absent', 'state_dir': root.state_dir})
    assert not root.exists('etc/network/interfaces.d/bdp-wan-tune-mtu')


def test_ifupdown_refuses_a_competing_mtu_and_a_missing_source_line(run_module, root):
    root.file('etc/network/interfaces', 'source /etc/network/interfaces.d/*\nauto eth0\niface eth0 inet static\n'
                                        '    address 198.18.0.1/30\n    mtu 1500\n')
    result = run(run_module, root)
    assert result['failed'] and 'etc/network/interfaces line 5 sets mtu 1500 for eth0' in result['msg']
    root.file('etc/network/interfaces', 'auto eth0\niface eth0 inet manual\n')
    result = run(run_module, root)
    assert result['failed'] and 'does not source' in result['msg'] and 'add "source ' in result['msg']


def test_ifcfg_in_place_and_undo(run_module, root):
    original = 'DEVICE=eth0\nONBOOT=yes\nMTU=1500\n'
    root.file('etc/sysconfig/network-scripts/ifcfg-eth0', original)
    result = run(run_module, root)
    assert result['interfaces']['eth0']['backend'] == 'ifcfg'
    assert root.read('etc/sysconfig/network-scripts/ifcfg-eth0') == \
        'DEVICE=eth0\nONBOOT=yes\n# bdp.wan_tune.jumbo_mtu\nMTU=9000\n'
    assert not run(run_module, root)['changed']
    run_module(link_mtu_persist.main, {'state': 'absent', 'state_dir': root.state_dir})
    assert root.read('etc/sysconfig/network-scripts/ifcfg-eth0') == original


NETPLAN = 'network:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [198.18.0.1/30]\n'


def test_netplan_file_matches_by_mac_and_is_private(run_module, root):
    root.file('etc/netplan/50-cloud-init.yaml', NETPLAN, 0o600)
    result = run(run_module, root)
    assert result['interfaces']['eth0']['backend'] == 'netplan'
    assert result['interfaces']['eth0']['netplan_id'] == 'ethernets.eth0'
    ours = root.file('etc/netplan/90-bdp-wan-tune-mtu.yaml')
    assert oct(os.stat(ours).st_mode & 0o777) == '0o600'
    assert yaml.safe_load(root.read('etc/netplan/90-bdp-wan-tune-mtu.yaml'))['network']['ethernets']['eth0'] == \
        {'match': {'macaddress': '02:00:00:00:00:01'}, 'set-name': 'eth0', 'mtu': 9000}
    assert not run(run_module, root)['changed']
    run_module(link_mtu_persist.main, {'state': 'absent', 'state_dir': root.state_dir})
    assert not os.path.exists(ours)


def test_netplan_without_pyyaml_fails_clearly_and_writes_nothing(run_module, root, monkeypatch):
    root.file('etc/netplan/50-cloud-init.yaml', NETPLAN, 0o600)
    monkeypatch.setattr(netconf, 'HAS_YAML', False)
    result = run(run_module, root)
    assert result['failed'] and 'cannot read netplan file' in result['msg'] and 'python3-yaml' in result['msg']
    assert not os.path.exists(os.path.join(root.path, 'etc/netplan/90-bdp-wan-tune-mtu.yaml'))


def test_netplan_later_file_conflicts(run_module, root):
    root.file('etc/netplan/50-cloud-init.yaml', NETPLAN, 0o600)
    root.file('etc/netplan/99-admin.yaml', 'network:\n  ethernets:\n    eth0:\n      mtu: 1500\n', 0o600)
    result = run(run_module, root)
    assert result['failed'] and '99-admin.yaml sets mtu 1500 for ethernets.eth0' in result['msg']


def test_networkmanager_modify_reapply_and_undo(run_module, root):
    root.nm['on'] = True
    check = run(run_module, root, _ansible_check_mode=True, _ansible_diff=True)
    assert check['changed'] and check['interfaces']['eth0']['connection'] == 'Wired connection 1'
    assert not [c for c in root.commands if 'modify' in c]
    assert check['diff'][-1]['after'] == ('/usr/bin/nmcli connection modify uuid-1 802-3-ethernet.mtu 9000\n'
                                          '/usr/bin/nmcli device reapply eth0\n')
    result = run(run_module, root)
    assert result['changed'] and root.nm_mtu == '9000'
    assert root.commands[-1][1:] == ['device', 'reapply', 'eth0']
    assert not run(run_module, root)['changed']
    undone = run_module(link_mtu_persist.main, {'state': 'absent', 'state_dir': root.state_dir})
    assert undone['changed'] and root.nm_mtu == 'auto'


def test_nothing_manages_the_interface(run_module, root):
    result = run(run_module, root)
    assert result['failed']
    assert result['msg'].startswith('Nothing manages eth0 persistently (netplan: no netplan files; NetworkManager: '
                                    'not running; networkd: not running; ifupdown: no /etc/network/interfaces;')
    assert 'set the backend to none' in result['msg']
    none = run(run_module, root, backend='none')
    assert not none['changed'] and none['interfaces']['eth0']['status'] == 'not persisted'


def test_bad_input(run_module, root):
    assert 'does not exist on this host' in run(run_module, root, interfaces=[{'name': 'eth9', 'mtu': 9000}])['msg']
    assert 'outside 576..65535' in run(run_module, root, interfaces=[{'name': 'eth0', 'mtu': 100}])['msg']
