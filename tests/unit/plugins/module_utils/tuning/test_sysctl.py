# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sysctl engine (plugins/module_utils/tuning/sysctl.py) against a fake /proc/sys and sysctl.d tree."""

from __future__ import annotations

import errno
import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import sysctl


# --------------------------------------------------------------------------- names and values

@pytest.mark.parametrize('key, normalized', [
    ('net.ipv4.tcp_rmem', 'net.ipv4.tcp_rmem'),
    ('net/ipv4/tcp_rmem', 'net.ipv4.tcp_rmem'),
    ('  net.core.rmem_max  ', 'net.core.rmem_max'),
    ('-net.core.rmem_max', 'net.core.rmem_max'),
    ('- net/core/rmem_max', 'net.core.rmem_max'),
    # a VLAN interface: with '/' first, the dot belongs to the name (systemd's rule)
    ('net/ipv4/conf/eth0.100/mtu', 'net.ipv4.conf.eth0/100.mtu'),
    # with '.' first, a '/' already stands for a literal dot
    ('net.ipv4.conf.eth0/100.mtu', 'net.ipv4.conf.eth0/100.mtu'),
    ('net/ipv6/conf/br0.20.30/forwarding', 'net.ipv6.conf.br0/20/30.forwarding'),
    ('kernel', 'kernel'),
])
def test_normalize_key(key, normalized):
    assert sysctl.normalize_key(key) == normalized


def test_normalize_key_is_idempotent():
    for key in ('net/ipv4/conf/eth0.100/mtu', 'net.ipv4.tcp_rmem'):
        once = sysctl.normalize_key(key)
        assert sysctl.normalize_key(once) == once


@pytest.mark.parametrize('key, relative', [
    ('net.ipv4.tcp_rmem', 'net/ipv4/tcp_rmem'),
    ('net.core.rmem_max', 'net/core/rmem_max'),
    ('net.ipv4.conf.eth0/100.mtu', 'net/ipv4/conf/eth0.100/mtu'),
    ('kernel', 'kernel'),
])
def test_key_path(key, relative):
    assert sysctl.key_path(key, '/fake') == '/fake/' + relative


def test_key_path_defaults_to_proc_sys(monkeypatch):
    assert sysctl.PROC_SYS == '/proc/sys'
    assert sysctl.key_path('net.ipv4.tcp_rmem') == '/proc/sys/net/ipv4/tcp_rmem'
    monkeypatch.setattr(sysctl, 'PROC_SYS', '/elsewhere')
    assert sysctl.key_path('net.ipv4.tcp_rmem') == '/elsewhere/net/ipv4/tcp_rmem'


def test_key_path_of_slash_form_after_normalize():
    key = sysctl.normalize_key('net/ipv4/conf/eth0.100/mtu')
    assert sysctl.key_path(key, '/p') == '/p/net/ipv4/conf/eth0.100/mtu'


@pytest.mark.parametrize('value, normalized', [
    ('4096\t131072\t6291456\n', '4096 131072 6291456'),
    ('  4096   131072 6291456  ', '4096 131072 6291456'),
    ([4096, 131072, 6291456], '4096 131072 6291456'),
    (('4096', '131072', 6291456), '4096 131072 6291456'),
    (49000000, '49000000'),
    ('bbr\n', 'bbr'),
    ('', ''),
])
def test_normalize_value(value, normalized):
    assert sysctl.normalize_value(value) == normalized


# --------------------------------------------------------------------------- live values

def test_read_live_normalizes_whitespace(proc):
    proc.set('net.ipv4.tcp_rmem', '4096\t131072\t6291456')
    assert sysctl.read_live('net.ipv4.tcp_rmem') == '4096 131072 6291456'


def test_read_live_vlan_key(proc):
    path = proc.set('net.ipv4.conf.eth0/100.mtu', '1500')
    assert path.endswith(os.path.join('conf', 'eth0.100', 'mtu'))
    assert sysctl.read_live(sysctl.normalize_key('net/ipv4/conf/eth0.100/mtu')) == '1500'


def test_read_live_explicit_root(tmp_path):
    (tmp_path / 'net' / 'core').mkdir(parents=True)
    (tmp_path / 'net' / 'core' / 'somaxconn').write_text('4096\n')
    assert sysctl.read_live('net.core.somaxconn', str(tmp_path)) == '4096'


def test_read_live_missing_key_is_none(proc):
    proc.set('net.core.rmem_max', '212992')
    assert sysctl.read_live('net.core.no_such_key') is None          # ENOENT
    assert sysctl.read_live('net.nosuchdir.key') is None             # ENOENT on a directory
    assert sysctl.read_live('net.core.rmem_max.below_a_file') is None  # ENOTDIR


def test_read_live_other_errors_propagate(proc):
    os.makedirs(proc.path('net.core.a_directory'))
    with pytest.raises(OSError) as info:
        sysctl.read_live('net.core.a_directory')
    assert info.value.errno == errno.EISDIR


def test_write_live_writes_normalized_value_with_newline(proc):
    proc.set('net.ipv4.tcp_rmem', '4096\t131072\t6291456')
    sysctl.write_live('net.ipv4.tcp_rmem', [4096, 131072, 49000000])
    assert proc.raw('net.ipv4.tcp_rmem') == '4096 131072 49000000\n'
    sysctl.write_live('net.ipv4.tcp_rmem', '4096\t87380   6291456')
    assert proc.raw('net.ipv4.tcp_rmem') == '4096 87380 6291456\n'
    assert sysctl.read_live('net.ipv4.tcp_rmem') == '4096 87380 6291456'


def test_write_live_raises_the_os_error(proc):
    os.makedirs(proc.path('net.core.a_directory'))
    with pytest.raises(OSError):
        sysctl.write_live('net.core.a_directory', '1')


def test_writable(proc):
    proc.set('net.ipv4.tcp_rmem', '4096 131072 6291456')
    proc.readonly('net.core.rmem_max', '212992')
    assert sysctl.writable('net.ipv4.tcp_rmem') is True
    assert sysctl.writable('net.core.rmem_max') is False
    assert sysctl.writable('net.core.missing') is False


def test_writable_honours_access_even_with_write_bits(proc, monkeypatch):
    """A read-only /proc/sys mount keeps mode 0644 but refuses writes."""
    proc.set('net.ipv4.tcp_rmem', '4096 131072 6291456')
    monkeypatch.setattr(sysctl.os, 'access', lambda path, mode: False)
    assert sysctl.writable('net.ipv4.tcp_rmem') is False


def test_initial_netns_true_when_rmem_max_is_writable(proc):
    proc.set('net.core.rmem_max', '212992')
    assert sysctl.INIT_NETNS_PROBE == 'net.core.rmem_max'
    assert sysctl.initial_netns() is True


def test_initial_netns_false_when_rmem_max_is_read_only(proc):
    proc.readonly('net.core.rmem_max', '212992')
    assert sysctl.initial_netns() is False


def test_initial_netns_false_when_rmem_max_is_missing(proc):
    assert sysctl.initial_netns() is False


def test_initial_netns_explicit_root(tmp_path):
    fake = tmp_path / 'net' / 'core'
    fake.mkdir(parents=True)
    (fake / 'rmem_max').write_text('212992\n')
    assert sysctl.initial_netns(str(tmp_path)) is True
    os.chmod(str(fake / 'rmem_max'), 0o444)
    assert sysctl.initial_netns(str(tmp_path)) is False


# --------------------------------------------------------------------------- sysctl.conf parsing

def test_parse_conf():
    text = '\n'.join([
        '# a comment = with an equals sign',
        '; another comment = 1',
        '',
        '   ',
        'net.core.rmem_max = 49000000',
        'net.ipv4.tcp_rmem=4096\t131072   6291456',
        '-net.ipv4.tcp_mtu_probing = 1',
        '  net/ipv4/conf/eth0.100/mtu   =   9000  ',
        'kernel.some_key = a=b',
        'a line without an equals sign',
        '   # an indented comment = 2',
        'net.core.rmem_max = 67108864',
    ])
    assert sysctl.parse_conf(text) == [
        ('net.core.rmem_max', '49000000'),
        ('net.ipv4.tcp_rmem', '4096 131072 6291456'),
        ('net.ipv4.tcp_mtu_probing', '1'),
        ('net.ipv4.conf.eth0/100.mtu', '9000'),
        ('kernel.some_key', 'a=b'),
        ('net.core.rmem_max', '67108864'),
    ]


def test_parse_conf_empty():
    assert sysctl.parse_conf('') == []
    assert sysctl.parse_conf('# only comments\n;\n') == []


# --------------------------------------------------------------------------- boot order

def _touch(directory, name, text=''):
    path = os.path.join(directory, name)
    with open(path, 'w') as handle:
        handle.write(text)
    return path


def test_boot_order_merges_by_name_sorts_and_puts_sysctl_conf_last(etc):
    vendor = _touch(etc.usr, '05-vendor.conf')
    _touch(etc.usr, '50-same.conf', 'net.core.rmem_max = 1\n')   # shadowed by /etc
    same = _touch(etc.etc, '50-same.conf', 'net.core.rmem_max = 2\n')
    early = _touch(etc.etc, '10-early.conf')
    run = _touch(etc.run, '30-run.conf')
    _touch(etc.usr, '30-run.conf')                              # shadowed by /run
    late = _touch(etc.usr, '99-zz.conf')
    _touch(etc.etc, 'README')                                   # not a .conf file
    _touch(etc.etc, '20-disabled.conf.dpkg-old')
    conf = etc.write_conf('net.core.rmem_max = 3\n')
    order = sysctl.boot_order(etc.dirs, etc.conf)
    assert order == [vendor, early, run, same, late, conf]


def test_boot_order_uses_module_defaults(etc):
    a = _touch(etc.usr, '10-a.conf')
    b = _touch(etc.etc, '20-b.conf')
    conf = etc.write_conf('')
    assert sysctl.boot_order() == [a, b, conf]


def test_boot_order_sorts_by_basename_not_directory(etc):
    z = _touch(etc.etc, 'z.conf')
    a = _touch(etc.usr, 'a.conf')
    assert sysctl.boot_order(etc.dirs, etc.conf) == [a, z]


def test_boot_order_missing_directories_and_conf(tmp_path):
    present = tmp_path / 'present'
    present.mkdir()
    one = _touch(str(present), '10-one.conf')
    dirs = (str(tmp_path / 'missing'), str(present))
    assert sysctl.boot_order(dirs, str(tmp_path / 'no-sysctl.conf')) == [one]
    assert sysctl.boot_order(dirs, '') == [one]


def test_boot_order_counts_a_99_sysctl_conf_symlink_once(etc):
    conf = etc.write_conf('net.core.rmem_max = 3\n')
    link = os.path.join(etc.etc, '99-sysctl.conf')
    os.symlink('../sysctl.conf', link)
    early = _touch(etc.etc, '10-early.conf')
    order = sysctl.boot_order(etc.dirs, etc.conf)
    assert [os.path.realpath(path) for path in order].count(os.path.realpath(conf)) == 1
    assert order == [early, link]


def test_boot_order_two_links_to_one_file_counted_once(etc):
    target = _touch(etc.usr, '40-target.conf')
    link = os.path.join(etc.etc, '60-link.conf')
    os.symlink(target, link)
    assert sysctl.boot_order(etc.dirs, etc.conf) == [target]


# --------------------------------------------------------------------------- overrides

OURS = {'net.core.rmem_max': '49000000', 'net.ipv4.tcp_rmem': '4096 131072 49000000'}


def _own_file(etc):
    return etc.write(etc.etc, '90-bdp-wan-tune.conf', sysctl.render('', [
        ('net.core.rmem_max', '49000000', ''), ('net.ipv4.tcp_rmem', '4096 131072 49000000', '')]))


def _other_files(etc):
    etc.write(etc.etc, '10-early.conf', 'net.core.rmem_max = 1048576\n')              # earlier: loses
    late = etc.write(etc.usr, '95-late.conf', '\n'.join([
        'net.core.rmem_max = 8388608',               # later, another value: wins at boot
        'net.ipv4.tcp_rmem = 4096\t131072\t49000000',  # later, same value: harmless
        'net.core.wmem_max = 1',                     # not one of ours
        '']))
    conf = etc.write_conf('; admin file\nnet.ipv4.tcp_rmem = 4096 87380 6291456\n')
    return late, conf


def test_overrides_reports_later_files_with_other_values(etc):
    own = _own_file(etc)
    late, conf = _other_files(etc)
    assert sysctl.overrides(own, OURS, etc.dirs, etc.conf) == [
        {'file': late, 'key': 'net.core.rmem_max', 'value': '8388608', 'ours': '49000000'},
        {'file': conf, 'key': 'net.ipv4.tcp_rmem', 'value': '4096 87380 6291456', 'ours': '4096 131072 49000000'},
    ]


def test_overrides_before_the_own_file_exists(etc):
    """First run or check mode: the position follows from the file name."""
    own = os.path.join(etc.etc, '90-bdp-wan-tune.conf')
    late, conf = _other_files(etc)
    found = sysctl.overrides(own, OURS, etc.dirs, etc.conf)
    assert [(item['file'], item['key']) for item in found] == [
        (late, 'net.core.rmem_max'), (conf, 'net.ipv4.tcp_rmem')]


def test_overrides_uses_module_defaults(etc):
    own = _own_file(etc)
    etc.write_conf('net.core.rmem_max = 4194304\n')
    assert sysctl.overrides(own, {'net.core.rmem_max': 49000000}) == [
        {'file': etc.conf, 'key': 'net.core.rmem_max', 'value': '4194304', 'ours': '49000000'}]


def test_overrides_ignores_earlier_files_and_equal_values(etc):
    own = _own_file(etc)
    etc.write(etc.etc, '10-early.conf', 'net.core.rmem_max = 1\nnet.ipv4.tcp_rmem = 1 2 3\n')
    etc.write(etc.usr, '95-same.conf', 'net.core.rmem_max=49000000\n-net/ipv4/tcp_rmem = 4096  131072 49000000\n')
    etc.write_conf('# net.core.rmem_max = 1\n')
    assert sysctl.overrides(own, OURS, etc.dirs, etc.conf) == []


def test_overrides_matches_slash_form_keys(etc):
    own = _own_file(etc)
    late = etc.write(etc.etc, '95-late.conf', 'net/core/rmem_max = 8388608\n')
    assert sysctl.overrides(own, OURS, etc.dirs, etc.conf) == [
        {'file': late, 'key': 'net.core.rmem_max', 'value': '8388608', 'ours': '49000000'}]


def test_overrides_skips_unreadable_files(etc):
    own = _own_file(etc)
    os.symlink(os.path.join(etc.etc, 'nowhere'), os.path.join(etc.etc, '95-dangling.conf'))
    etc.write_conf('net.core.rmem_max = 4194304\n')
    found = sysctl.overrides(own, OURS, etc.dirs, etc.conf)
    assert [item['file'] for item in found] == [etc.conf]


def test_overrides_sysctl_conf_applied_last_by_procps_despite_99_sysctl_conf_link(etc):
    conf = etc.write_conf('net.core.rmem_max = 4194304\n')
    os.symlink('../sysctl.conf', os.path.join(etc.etc, '99-sysctl.conf'))
    own = etc.write(etc.etc, '99-zz-bdp-wan-tune.conf', 'net.core.rmem_max = 49000000\n')
    found = sysctl.overrides(own, {'net.core.rmem_max': '49000000'}, etc.dirs, etc.conf)
    assert [item['value'] for item in found] == ['4194304']
    assert os.path.realpath(found[0]['file']) == os.path.realpath(conf)


def test_overrides_with_99_sysctl_conf_link_for_a_90_file(etc):
    """The usual layout: the admin's file (via the link) comes after a 90- drop-in and is reported once."""
    etc.write_conf('net.core.rmem_max = 4194304\n')
    link = os.path.join(etc.etc, '99-sysctl.conf')
    os.symlink('../sysctl.conf', link)
    own = _own_file(etc)
    found = sysctl.overrides(own, OURS, etc.dirs, etc.conf)
    assert found == [{'file': os.path.realpath(etc.conf), 'via': link, 'key': 'net.core.rmem_max', 'value': '4194304',
                      'ours': '49000000'}]


# --------------------------------------------------------------------------- rendering

def test_render_header_comments_and_values():
    text = sysctl.render('# Ansible managed  \n# second line\n', [
        ('net.core.rmem_max', 49000000, '4 x BDP\nBDP = 1 Gbit/s x 98 ms / 8'),
        ('net.ipv4.tcp_rmem', [4096, 131072, 49000000], ''),
        ('net.ipv4.conf.eth0/100.mtu', '9000', 'first\n\nafter a blank\n'),
    ])
    assert text == (
        '# Ansible managed\n'
        '# second line\n'
        '\n'
        '# 4 x BDP\n'
        '# BDP = 1 Gbit/s x 98 ms / 8\n'
        'net.core.rmem_max = 49000000\n'
        '\n'
        'net.ipv4.tcp_rmem = 4096 131072 49000000\n'
        '\n'
        '# first\n'
        '#\n'
        '# after a blank\n'
        'net.ipv4.conf.eth0/100.mtu = 9000\n')


def test_render_without_header_starts_with_the_first_entry():
    assert sysctl.render('', [('net.core.rmem_max', '1', None), ('net.core.wmem_max', '2', '')]) == (
        'net.core.rmem_max = 1\n\nnet.core.wmem_max = 2\n')


def test_render_header_only_and_empty():
    assert sysctl.render('# only a header', []) == '# only a header\n'
    assert sysctl.render('', []) == '\n'


def test_render_round_trips_through_parse_conf():
    entries = [('net.core.rmem_max', '49000000', 'c'), ('net.ipv4.tcp_rmem', '4096\t131072 49000000', '')]
    parsed = sysctl.parse_conf(sysctl.render('# h', entries))
    assert parsed == [('net.core.rmem_max', '49000000'), ('net.ipv4.tcp_rmem', '4096 131072 49000000')]
