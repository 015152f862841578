# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight and planning of interface MTU changes, cloud limits, the commit-confirm script and outcomes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu


def link(name, mtu=1500, max_mtu=9216, kind=None, master=None, parent=None, index=None, **extra):
    item = {'ifname': name, 'ifindex': index or abs(hash(name)) % 1000 + 2, 'mtu': mtu, 'min_mtu': 68,
            'max_mtu': max_mtu, 'link_type': 'ether', 'address': '52:54:00:00:00:%02x' % (len(name) * 7 % 256)}
    if kind or extra.get('slave_kind'):
        item['linkinfo'] = {'info_kind': kind}
        if extra.get('slave_kind'):
            item['linkinfo']['info_slave_kind'] = extra['slave_kind']
        if kind == 'vlan':
            item['linkinfo']['info_data'] = {'protocol': '802.1Q', 'id': extra.get('vlan_id', 100)}
    if master:
        item['master'] = master
    if parent:
        item['link'] = parent
    return item


LO = {'ifname': 'lo', 'ifindex': 1, 'mtu': 65536, 'link_type': 'loopback', 'address': '00:00:00:00:00:00'}


def links(*items):
    return linkmtu.parse_links([LO] + list(items))


# --------------------------------------------------------------------------- input

@pytest.mark.parametrize('value, expected', [(9000, 9000), ('9000', 9000), ('1500', 1500), (576, 576),
                                             (65535, 65535), ('09000', 9000)])
def test_parse_mtu_accepts(value, expected):
    assert linkmtu.parse_mtu(value) == expected


@pytest.mark.parametrize('value, words', [
    (575, '575 is outside 576..65535'),
    (65536, '65536 is outside 576..65535'),
    ('9k', "'9k' is not a whole number of bytes"),
    (True, 'True is not usable'),
    (None, 'None is not usable'),
    (9000.5, 'not a whole number'),
    (9000.0, '9000.0 is not a whole number of bytes in digits 0-9 only'),
    (' 1500 ', "' 1500 ' is not a whole number of bytes in digits 0-9 only"),
    ('+9000', "'+9000' is not a whole number"),
    ('\u00b2', 'is not a whole number'),
    ('9' * 5000, '(5000 characters) is outside 576..65535'),
    ([9000], 'is not usable'),
])
def test_parse_mtu_refuses_with_the_value_and_the_range(value, words):
    with pytest.raises(linkmtu.MtuError) as info:
        linkmtu.parse_mtu(value, 'jumbo_mtu_target')
    assert words in str(info.value)
    assert str(info.value).startswith('jumbo_mtu_target: ')
    assert '576' in str(info.value) and '65535' in str(info.value)


@pytest.mark.parametrize('value, address, family, name', [
    ('198.18.0.2', '198.18.0.2', 4, None),
    ('2001:db8::2', '2001:db8::2', 6, None),
    ('[2001:db8::2]', '2001:db8::2', 6, None),
    ('wan-b.example.net', None, None, 'wan-b.example.net'),
    ('wan_b', None, None, 'wan_b'),
])
def test_parse_peer(value, address, family, name):
    peer = linkmtu.parse_peer(value)
    assert (peer['address'], peer['family'], peer['name']) == (address, family, name)


@pytest.mark.parametrize('value', ['', '   ', '999.1.1.1', '198.18.0', 'not a host', '-bad.example', 'a..b',
                                   '0.0.0.0', '224.0.0.1', 42, None, 'x' * 64 + '.example'])
def test_parse_peer_refuses(value):
    with pytest.raises(linkmtu.MtuError) as info:
        linkmtu.parse_peer(value)
    assert 'expected an IPv4 or IPv6 address' in str(info.value)


@pytest.mark.parametrize('name', ['eth0', 'eth0.100', 'bond0', 'enp1s0f0np0', 'x' * 15])
def test_ifname_ok(name):
    assert linkmtu.check_ifname(name) == name


@pytest.mark.parametrize('name', ['', 'x' * 16, 'eth 0', 'a/b', 'eth0:1', '..'])
def test_ifname_refused(name):
    with pytest.raises(linkmtu.MtuError):
        linkmtu.check_ifname(name)


def test_probe_sizes():
    assert linkmtu.tcp_mss(9000) == 8948                # 9000 - 20 - 20 - 12 (timestamps)
    assert linkmtu.tcp_mss(1500, timestamps=False) == 1460


# --------------------------------------------------------------------------- ip -d -j link

REAL_IP_OUTPUT = json.loads('''[
 {"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP"],"mtu":65536,"link_type":"loopback",
  "address":"00:00:00:00:00:00","min_mtu":0,"max_mtu":0},
 {"ifindex":2,"ifname":"eth0","flags":["BROADCAST","UP"],"mtu":1500,"link_type":"ether",
  "address":"02:fc:00:00:00:01","min_mtu":68,"max_mtu":9216,"parentbus":"virtio"},
 {"ifindex":3,"link":"eth0","ifname":"eth0.100","mtu":1500,"link_type":"ether","address":"02:fc:00:00:00:01",
  "min_mtu":0,"max_mtu":65535,"linkinfo":{"info_kind":"vlan","info_data":{"protocol":"802.1Q","id":100}}},
 {"ifindex":4,"link_index":2,"ifname":"veth0","mtu":1500,"link_netnsid":0,"link_type":"ether",
  "address":"16:0f:b3:f4:de:65","min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"veth"}},
 {"ifindex":5,"ifname":"bond0","mtu":1500,"link_type":"ether","address":"aa:bb:cc:00:00:01",
  "min_mtu":68,"max_mtu":65535,"linkinfo":{"info_kind":"bond"}},
 {"ifindex":6,"ifname":"eth1","master":"bond0","mtu":1500,"link_type":"ether","address":"aa:bb:cc:00:00:01",
  "min_mtu":68,"max_mtu":9000,"linkinfo":{"info_slave_kind":"bond"}}
]''')


def test_parse_links_reads_parents_members_and_limits():
    found = linkmtu.parse_links(REAL_IP_OUTPUT)
    assert found['eth0.100']['kind'] == 'vlan' and found['eth0.100']['parent'] == 'eth0'
    assert found['eth0.100']['vlan_id'] == 100
    assert found['veth0']['parent'] is None             # the other end is in another namespace
    assert found['eth1']['master'] == 'bond0' and found['eth1']['slave_kind'] == 'bond'
    assert found['eth0']['max_mtu'] == 9216 and found['eth0']['mac'] == '02:fc:00:00:00:01'
    assert linkmtu.members(found, 'bond0') == ['eth1']
    assert linkmtu.describe_link(found['eth0.100']) == 'VLAN 100 on eth0'


# --------------------------------------------------------------------------- plan

def test_plan_simple_change():
    result = linkmtu.plan(links(link('wan0')), [('wan0', 'route to 198.18.0.2')], 9000)
    assert result['errors'] == []
    assert result['steps'] == [('wan0', 1500, 9000)]
    assert result['revert_steps'] == [('wan0', 9000, 1500)]
    entry = result['entries']['wan0']
    assert entry['status'] == 'change' and entry['reason'] == 'route to 198.18.0.2'
    assert entry['limit'] == 9216 and 'max_mtu 9216' in entry['limit_source']
    assert linkmtu.diff_text(result['entries'], 'before') == 'wan0 mtu 1500\n'
    assert linkmtu.diff_text(result['entries'], 'after') == 'wan0 mtu 9000\n'


def test_plan_nothing_to_do():
    result = linkmtu.plan(links(link('wan0', mtu=9000)), [('wan0', 'x')], 9000)
    assert not result['changed'] and result['entries']['wan0']['status'] == 'ok'


def test_plan_refuses_above_the_nic_limit_naming_interface_value_and_limit():
    result = linkmtu.plan(links(link('eth0', max_mtu=4000)), [('eth0', 'x')], 9000)
    assert not result['steps']
    assert result['errors'] == ['eth0: MTU 9000 is above its limit 4000 (eth0 max_mtu 4000 (ip -d link)); ask for '
                                '4000 or less, or set clamp to use the limit.']


def test_plan_clamps_when_asked():
    result = linkmtu.plan(links(link('eth0', max_mtu=4000)), [('eth0', 'x')], 9000, clamp=True)
    assert result['errors'] == [] and result['steps'] == [('eth0', 1500, 4000)]
    assert 'clamped to 4000' in result['warnings'][0]


def test_plan_raises_a_vlan_parent_first_and_lowers_it_last():
    found = links(link('eth0'), link('eth0.100', kind='vlan', parent='eth0', max_mtu=65535))
    result = linkmtu.plan(found, [('eth0.100', 'route to 198.18.0.2')], 9000)
    assert result['steps'] == [('eth0', 1500, 9000), ('eth0.100', 1500, 9000)]
    assert result['revert_steps'] == [('eth0.100', 9000, 1500), ('eth0', 9000, 1500)]
    assert result['entries']['eth0']['role'] == 'parent of eth0.100'
    # the VLAN is limited by its parent's NIC
    assert result['entries']['eth0.100']['limit'] == 9216


def test_plan_refuses_a_vlan_above_its_parent_when_parents_stay():
    found = links(link('eth0'), link('eth0.100', kind='vlan', parent='eth0', max_mtu=65535))
    result = linkmtu.plan(found, [('eth0.100', 'x')], 9000, raise_parents=False)
    assert not result['steps']
    assert 'eth0.100: MTU 9000 is above its limit 1500 (eth0 MTU 1500 (the parent; raising parents is off))' \
        in result['errors'][0]


def test_plan_vlan_parent_already_high_enough():
    found = links(link('eth0', mtu=9000), link('eth0.100', kind='vlan', parent='eth0', max_mtu=65535))
    result = linkmtu.plan(found, [('eth0.100', 'x')], 9000)
    assert result['steps'] == [('eth0.100', 1500, 9000)]


def test_plan_bond_member_redirects_to_the_bond_and_members_follow():
    found = links(link('bond0', kind='bond', max_mtu=65535), link('eth1', master='bond0', slave_kind='bond'),
                  link('eth2', master='bond0', slave_kind='bond'))
    result = linkmtu.plan(found, [('eth1', 'named in interfaces')], 9000)
    assert result['errors'] == []
    assert result['steps'] == [('bond0', 1500, 9000)]          # the kernel sets the members
    assert result['entries']['eth1']['status'] == 'follows'
    assert result['entries']['eth2']['role'] == 'member of bond bond0'
    assert 'eth1 is a member of bond bond0' in result['notes'][0]
    assert linkmtu.diff_text(result['entries'], 'after') == 'bond0 mtu 9000\neth1 mtu 9000\neth2 mtu 9000\n'


def test_plan_bond_is_limited_by_its_weakest_member():
    found = links(link('bond0', kind='bond', max_mtu=65535), link('eth1', master='bond0', max_mtu=9216),
                  link('eth2', master='bond0', max_mtu=4088))
    result = linkmtu.plan(found, [('bond0', 'x')], 9000)
    assert 'bond0: MTU 9000 is above its limit 4088 (eth2 max_mtu 4088' in result['errors'][0]


def test_plan_bridge_ports_before_the_bridge():
    found = links(link('br0', kind='bridge', max_mtu=65535), link('veth1', master='br0', kind='veth'),
                  link('eth3', master='br0'))
    result = linkmtu.plan(found, [('br0', 'x')], 9000)
    assert [step[0] for step in result['steps']] == ['eth3', 'veth1', 'br0']
    assert [step[0] for step in result['revert_steps']] == ['br0', 'veth1', 'eth3']


def test_plan_refuses_the_control_interface_and_the_default_route():
    found = links(link('eth0'), link('eth0.100', kind='vlan', parent='eth0', max_mtu=65535), link('wan0'))
    protected = {'eth0': 'carries the default route (IPv4)'}
    result = linkmtu.plan(found, [('eth0', 'named in interfaces')], 9000, protected=protected)
    assert result['errors'][0].startswith('eth0 (requested) carries the default route (IPv4); it is left alone unless '
                                          'you opt in (allow_control_interface).')
    # raising a VLAN means raising its parent, which carries the control connection
    result = linkmtu.plan(found, [('eth0.100', 'x')], 9000, protected=protected)
    assert result['errors'][0].startswith('eth0 (parent of eth0.100) carries the default route')
    # another interface is fine, and opting in is allowed
    assert linkmtu.plan(found, [('wan0', 'x')], 9000, protected=protected)['errors'] == []
    assert linkmtu.plan(found, [('eth0', 'x')], 9000, protected=protected, allow_protected=True)['errors'] == []
    # already at the MTU: nothing changes, nothing to refuse
    found['eth0']['mtu'] = 9000
    assert linkmtu.plan(found, [('eth0', 'x')], 9000, protected=protected)['errors'] == []


def test_plan_keeps_a_higher_mtu_unless_allowed_to_lower():
    found = links(link('eth0', mtu=9216))
    result = linkmtu.plan(found, [('eth0', 'x')], 9000)
    assert not result['steps'] and result['entries']['eth0']['status'] == 'kept_higher'
    assert 'already has MTU 9216' in result['notes'][0]
    assert linkmtu.plan(found, [('eth0', 'x')], 9000, allow_lower=True)['steps'] == [('eth0', 9216, 9000)]


def test_plan_names_missing_interfaces_and_lists_the_real_ones():
    result = linkmtu.plan(links(link('eth0'), link('wan0')), [('wan9', 'named in interfaces')], 9000)
    assert result['errors'] == ['interface wan9 does not exist on this host (named in interfaces); interfaces '
                                'here: eth0, wan0.']


def test_plan_refuses_loopback_and_below_min_mtu():
    result = linkmtu.plan(links(link('eth0')), [('lo', 'x')], 9000)
    assert 'lo is the loopback' in result['errors'][0]
    small = links(link('eth0'))
    small['eth0']['min_mtu'] = 1280
    assert 'below what the device accepts (min_mtu 1280)' in linkmtu.plan(small, [('eth0', 'x')], 600)['errors'][0]


def test_plan_warns_below_the_ipv6_minimum():
    result = linkmtu.plan(links(link('eth0')), [('eth0', 'x')], 1000, allow_lower=True)
    assert any('1280, the IPv6 minimum' in text for text in result['warnings'])


def test_plan_applies_the_cloud_limit():
    aws = linkmtu.cloud_platform({'sys_vendor': 'Amazon EC2'})
    result = linkmtu.plan(links(link('ens5', max_mtu=9216)), [('ens5', 'x')], 9216, platform=aws)
    assert "ens5: MTU 9216 is above its limit 9001 (aws limit 9001 (DMI sys_vendor/bios_vendor 'Amazon EC2'))" \
        in result['errors'][0]
    gcp = linkmtu.cloud_platform({'product_name': 'Google Compute Engine', 'sys_vendor': 'Google'})
    result = linkmtu.plan(links(link('ens4', max_mtu=65535)), [('ens4', 'x')], 9000, platform=gcp, clamp=True)
    assert result['steps'] == [('ens4', 1500, 8896)]


# --------------------------------------------------------------------------- platform

@pytest.mark.parametrize('dmi, drivers, platform, limit', [
    ({'sys_vendor': 'Amazon EC2', 'product_name': 'm6i.large'}, {}, 'aws', 9001),
    ({'sys_vendor': 'Xen', 'bios_version': '4.11.amazon'}, {}, 'aws', 9001),
    ({'sys_vendor': 'Google', 'product_name': 'Google Compute Engine'}, {}, 'gcp', 8896),
    ({'sys_vendor': 'Microsoft Corporation', 'product_name': 'Virtual Machine',
      'chassis_asset_tag': '7783-7084-3265-9085-8269-3286-77'}, {'eth0': 'hv_netvsc', 'eth1': 'mlx5_core'}, 'azure', 3900),
    ({'sys_vendor': 'Microsoft Corporation', 'chassis_asset_tag': '7783-7084-3265-9085-8269-3286-77'},
     {'eth0': 'hv_netvsc', 'enP1s1': 'mana'}, 'azure', 9000),
])
def test_cloud_platforms(dmi, drivers, platform, limit):
    found = linkmtu.cloud_platform(dmi, drivers)
    assert found['platform'] == platform and found['max_mtu'] == limit and found['evidence']


@pytest.mark.parametrize('dmi', [{}, {'sys_vendor': 'QEMU', 'product_name': 'Standard PC (Q35 + ICH9, 2009)'},
                                 {'sys_vendor': 'Microsoft Corporation', 'product_name': 'Virtual Machine'},
                                 {'sys_vendor': 'Dell Inc.', 'product_name': 'PowerEdge R750'}])
def test_no_cloud_limit_elsewhere(dmi):
    # Hyper-V outside Azure has no Azure asset tag: no platform limit
    assert linkmtu.cloud_platform(dmi) is None


# --------------------------------------------------------------------------- commit-confirm

@pytest.fixture
def fake_ip(tmp_path, monkeypatch):
    """A bin directory with an ``ip`` that logs its argv, first on the PATH the timer's script sets; returns the log.

    Each call is logged as its argument count and then one argument per line (interface names cannot contain a
    newline), so the test sees the exact words ``ip`` got.  It fails (exit 2) for the interface named in its
    second line of ``fail``.
    """
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    log, fail = tmp_path / 'ip.log', tmp_path / 'fail'
    script = bindir / 'ip'
    script.write_text('#!/bin/sh\nprintf \'%%s\\n\' "$#" "$@" >> \'%s\'\n'
                      '[ -e \'%s\' ] && [ "$4" = "$(cat \'%s\')" ] && exit 2\nexit 0\n' % (log, fail, fail))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(commit, 'PATH', '%s:%s' % (bindir, commit.PATH))
    monkeypatch.setattr(commit, 'RUN_DIR', str(tmp_path / 'run'))
    os.mkdir(commit.RUN_DIR)
    return log, fail


def ip_calls(log):
    """The argv lists the fake ``ip`` was called with."""
    calls, lines = [], log.read_text(encoding='utf-8').split('\n')[:-1] if log.exists() else []
    while lines:
        count = int(lines.pop(0))
        calls.append(lines[:count])
        del lines[:count]
    return calls


# Valid Linux interface names (1-15 bytes, not . or .., no whitespace, / or :) that are shell code
HOSTILE_NAMES = ['e$(id)"x', 'a`>PWNED`b', '`touch${IFS}P`', 'q\'u"o\\te', 'a%sb%n\\n', '-x;>PWNED;\\', 'c\x01"\x7f\'']


def test_the_timers_script_sets_every_mtu_by_name_as_data(tmp_path, fake_ip):
    """The MTU's part of the timer's script (linkmtu.MtuSetting) run for real against a fake ``ip``: every name,
    hostile ones too, reaches ``ip`` as one word; one that fails does not stop the others, and the record says
    which; a second run backs off.  (The timer itself, firing for real: module_utils/common/test_commit.py.)"""
    log, fail = fake_ip
    fail.write_text(HOSTILE_NAMES[1])
    steps = [(name, 9000, 1500) for name in HOSTILE_NAMES] + [('eth0', 9000, 1400)]
    timer = commit.Timer(None, str(tmp_path), linkmtu.MtuSetting(None))
    path = tmp_path / 'revert.py'
    path.write_text(timer.script('T$(id)\'\n', steps, 0), encoding='utf-8')
    for run, rc in ((1, 1), (2, 0)):
        done = subprocess.run([sys.executable, '-I', str(path)], cwd=str(tmp_path), capture_output=True, check=False)
        assert done.returncode == rc, done.stderr
    assert ip_calls(log) == [['link', 'set', 'dev', name, 'mtu', str(mtu)] for name, _cur, mtu in steps]
    assert not (tmp_path / 'PWNED').exists() and not (tmp_path / 'P').exists()
    with open(timer.log_path, encoding='utf-8') as handle:
        record, = [json.loads(line) for line in handle]
    assert record == {'token': 'T$(id)\'\n', 'by': 'timer', 'at': record['at'], 'rc': 1, 'failed': HOSTILE_NAMES[1],
                      'restored': ' '.join('%s=%d' % (name, mtu) for name, _cur, mtu in steps)}
    # the comments say what it puts back, and no value can end a comment line
    assert all(line.startswith('# ') for line in path.read_text().splitlines()[:2])


def test_proof_verdict():
    ok, failed = linkmtu.proof_verdict([{'peer': 'a', 'ok': True}, {'peer': 'b', 'ok': False}])
    assert not ok and [item['peer'] for item in failed] == ['b']
    assert linkmtu.proof_verdict([{'ok': True}]) == (True, [])
