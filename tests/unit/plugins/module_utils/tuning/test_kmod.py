# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel features (plugins/module_utils/tuning/kmod.py): kernel_config() from /proc/config.gz or /boot/config-*,
loaded(), and congestion_control_name(), the one rule for a congestion control's name. Kernel (sources, modprobe)
is tested through tcp_congestion and sysctl_dropin."""

from __future__ import annotations

import gzip
import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import kmod, sysctl

FAKE_RELEASE = '6.1.0-28-amd64'

CONFIG = '\n'.join([
    '# Automatically generated file; DO NOT EDIT.',
    'CONFIG_TCP_CONG_CUBIC=y',
    'CONFIG_TCP_CONG_BBR=m',
    '# CONFIG_TCP_CONG_VEGAS is not set',
    'CONFIG_TCP_CONG_BBR2=m',
    'CONFIG_NET_SCH_FQ=y',
    'CONFIG_DEFAULT_TCP_CONG="cubic"',
    '',
])


@pytest.fixture
def fake_release(monkeypatch):
    real = os.uname()
    monkeypatch.setattr(kmod.os, 'uname', lambda: os.uname_result((real[0], real[1], FAKE_RELEASE, real[3], real[4])))
    return FAKE_RELEASE


@pytest.fixture
def proc_config_gz(tmp_path, monkeypatch):
    """/proc/config.gz is a real gzip file in tmp_path."""
    path = tmp_path / 'config.gz'
    with gzip.open(str(path), 'wt') as handle:
        handle.write(CONFIG)
    real_open = gzip.open
    opened = []

    def fake_open(name, mode='rb', *args, **kwargs):
        opened.append(name)
        assert name == '/proc/config.gz'
        return real_open(str(path), mode, *args, **kwargs)

    monkeypatch.setattr(kmod.gzip, 'open', fake_open)
    monkeypatch.setattr(kmod.files, 'read_text', lambda name: pytest.fail('read %s instead of /proc/config.gz' % name))
    return opened


def _no_proc_config(name, mode='rb', *args, **kwargs):
    raise IOError(2, 'No such file or directory', name)


@pytest.mark.parametrize('option, setting', [
    ('CONFIG_TCP_CONG_CUBIC', 'y'),
    ('CONFIG_TCP_CONG_BBR', 'm'),           # not confused with CONFIG_TCP_CONG_BBR2
    ('CONFIG_TCP_CONG_VEGAS', 'n'),         # "is not set"
    ('CONFIG_TCP_CONG_HTCP', 'n'),          # absent
    ('CONFIG_NET_SCH_FQ', 'y'),
])
def test_kernel_config_from_proc_config_gz(proc_config_gz, option, setting):
    assert kmod.kernel_config(option) == setting
    assert proc_config_gz == ['/proc/config.gz']


def test_kernel_config_falls_back_to_boot_config(monkeypatch, fake_release):
    asked = []
    monkeypatch.setattr(kmod.gzip, 'open', _no_proc_config)
    monkeypatch.setattr(kmod.files, 'read_text', lambda path: asked.append(path) or CONFIG)
    assert kmod.kernel_config('CONFIG_TCP_CONG_BBR') == 'm'
    assert kmod.kernel_config('CONFIG_TCP_CONG_VEGAS') == 'n'
    assert asked == ['/boot/config-%s' % FAKE_RELEASE] * 2


def test_kernel_config_falls_back_when_config_gz_is_not_gzip(monkeypatch, tmp_path):
    bad = tmp_path / 'config.gz'
    bad.write_text('not gzip')
    real_open = gzip.open
    monkeypatch.setattr(kmod.gzip, 'open', lambda name, mode='rb': real_open(str(bad), mode))
    monkeypatch.setattr(kmod.files, 'read_text', lambda path: 'CONFIG_TCP_CONG_BBR=y\n')
    assert kmod.kernel_config('CONFIG_TCP_CONG_BBR') == 'y'


def test_kernel_config_unknown_without_any_config(monkeypatch):
    monkeypatch.setattr(kmod.gzip, 'open', _no_proc_config)
    monkeypatch.setattr(kmod.files, 'read_text', lambda path: None)
    assert kmod.kernel_config('CONFIG_TCP_CONG_BBR') is None


@pytest.mark.skipif(not os.path.exists('/proc/config.gz'), reason='the host kernel has no /proc/config.gz')
def test_kernel_config_of_the_host():
    available = (sysctl.read_live('net.ipv4.tcp_available_congestion_control') or '').split()
    setting = kmod.kernel_config('CONFIG_TCP_CONG_CUBIC')
    assert setting in ('y', 'm', 'n')
    if 'cubic' in available:
        assert setting in ('y', 'm')


def test_loaded_looks_for_initstate(monkeypatch):
    asked = []
    monkeypatch.setattr(kmod.os.path, 'exists', lambda path: asked.append(path) or path.endswith('tcp_bbr/initstate'))
    assert kmod.loaded('tcp_bbr') is True
    assert kmod.loaded('sch_fq') is False
    assert asked == ['/sys/module/tcp_bbr/initstate', '/sys/module/sch_fq/initstate']


# --------------------------------------------------------------------------- congestion control names

@pytest.mark.parametrize('name', ['bbr', 'cubic', 'reno', 'bbr2', 'dctcp', 'highspeed', 'htcp', 'westwood', 'cdg',
                                  'a' * 15, 'x_1'])
def test_congestion_control_names(name):
    assert kmod.congestion_control_name(name) is None


@pytest.mark.parametrize('name, reason', [
    ('BBR', 'is not a congestion control name'), ('bbr;reboot', 'is not a congestion control name'),
    ('tcp bbr', 'is not a congestion control name'), ('', 'is not a congestion control name'),
    ('../bbr', 'is not a congestion control name'), ('bbr-2', 'is not a congestion control name'),
    ('bbr\tcubic', 'is not a congestion control name'), ('bbr\n', 'is not a congestion control name'),
    ('b\u00e9r', 'is not a congestion control name'), ('\uff42br', 'is not a congestion control name'),
    ('a' * 16, 'is longer than 15 characters, the longest congestion control name the kernel takes '
               '(TCP_CA_NAME_MAX is 16 bytes with the terminating NUL)'),
    (None, 'is not a string'), (1, 'is not a string'), (['bbr'], 'is not a string'),
])
def test_congestion_control_names_refused(name, reason):
    assert kmod.congestion_control_name(name) == reason


def test_the_longest_name_is_the_kernels():
    # include/net/tcp.h: #define TCP_CA_NAME_MAX 16 (with the NUL)
    assert kmod.CONGESTION_CONTROL_NAME_MAX == 15
    assert '15' in kmod.CONGESTION_CONTROL_HELP


def test_every_user_of_the_name_rule_shares_it():
    from ansible_collections.bdp.wan_tune.plugins.action import validate_inputs
    from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import dropin
    from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import congestion

    assert congestion.congestion_control_name is kmod.congestion_control_name
    assert dropin.congestion_control_name is kmod.congestion_control_name
    assert validate_inputs._kmod is kmod
