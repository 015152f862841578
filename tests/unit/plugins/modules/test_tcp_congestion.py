# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tcp_congestion: kernel config and route parsing, name validation, available() with a module stub, and
state=verified against the real loopback (the only place the real kernel is used; nothing is changed)."""

from __future__ import annotations

import gzip
import json
import os
import socket
import sys

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.module_utils import files, sysctl
from ansible_collections.bdp.wan_tune.plugins.modules import tcp_congestion

FAKE_RELEASE = '6.1.0-28-amd64'

ROUTE = (
    'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n'
    'eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n'
    'eth0\t000200C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n'
    'podman1\t000012C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n'
    'wg0\t00000000\t00000000\t0001\t0\t0\t200\t00000000\t0\t0\t0\n'
    'eth0\t00000000\t020200C0\t0003\t0\t0\t300\t00000000\t0\t0\t0\n'
)
# a default route via lo, so that the interface exists on any host running the tests
LO_DEFAULT_ROUTE = ROUTE.splitlines(True)[0] + 'lo\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n'
Z = '0' * 32
IPV6_ROUTE = '\n'.join([
    'fd000000000000000000000000000000 40 %s 00 %s 00000100 00000001 00000000 00000001     eth0' % (Z, Z),
    '%s 00 %s 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0' % (Z, Z),
    '%s 00 %s 00 fe800000000000000000000000000001 00000400 00000002 00000000 00000003    vlan7' % (Z, Z),
    '20000000000000000000000000000000 03 %s 00 %s 00000400 00000002 00000000 00000003    eth9' % (Z, Z),
    '00000000000000000000000000000001 80 %s 00 %s 00000000 00000002 00000000 80200001       lo' % (Z, Z),
    '%s 00 %s 00 %s ffffffff 00000001 00000000 00200200       lo' % (Z, Z, Z),
    '',
])


# --------------------------------------------------------------------------- helpers

class Failed(Exception):
    """fail_json() of the stub module."""

    def __init__(self, result):
        Exception.__init__(self, result['msg'])
        self.result = result


class StubModule(object):
    """Just enough of AnsibleModule for available(), absent(), persist(), set_qdiscs(), remove_qdiscs() and
    verified()."""

    def __init__(self, tmp_path, check_mode=False, bins=('modprobe', 'tc'), respond=None, **params):
        self.params = {'algorithm': 'bbr', 'qdisc': 'fq', 'interfaces': [], 'header': '', 'state': 'available',
                       'modules_load_file': str(tmp_path / 'modules-load.d' / 'bdp-wan-tune.conf'),
                       'state_dir': str(tmp_path / 'state')}
        self.params.update(params)
        self.check_mode = check_mode
        self.bins = dict((name, '/usr/sbin/' + name) for name in bins)
        self.respond = respond or self.no_module_files
        self.commands = []
        self.warnings = []

    @staticmethod
    def no_module_files(argv):
        """modprobe --dry-run finds no module file; every other command succeeds."""
        if '--dry-run' in argv:
            return 1, '', 'modprobe: FATAL: Module %s not found in directory /lib/modules/%s\n' % (
                argv[-1], FAKE_RELEASE)
        return 0, '', ''

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return self.bins.get(name)

    def run_command(self, argv, **kwargs):
        self.commands.append(list(argv))
        return self.respond(list(argv))

    def fail_json(self, **result):
        raise Failed(result)

    def warn(self, msg):
        self.warnings.append(msg)

    def atomic_move(self, src, dest):
        os.rename(src, dest)


@pytest.fixture
def fake_release(monkeypatch):
    real = os.uname()
    monkeypatch.setattr(tcp_congestion.os, 'uname',
                        lambda: os.uname_result((real[0], real[1], FAKE_RELEASE, real[3], real[4])))
    return FAKE_RELEASE


@pytest.fixture
def kernel(monkeypatch, proc, fake_release):
    """A fake kernel: its files (files.read_text), kernel config options, /sys/module entries and available
    algorithms."""

    class Kernel(object):
        def __init__(self):
            self.files = {}           # path -> text, for /proc, /lib/modules and /boot
            self.config = {}          # CONFIG_ option -> 'y', 'm' or 'n'
            self.sys_module = set()   # entries below /sys/module, e.g. 'tcp_bbr', 'tcp_bbr/initstate'

        def available(self, names):
            proc.set('net.ipv4.tcp_available_congestion_control', names)

    fake = Kernel()
    real_exists = os.path.exists

    real_isdir = os.path.isdir

    def exists(path):
        if path.startswith('/sys/module/'):
            return path[len('/sys/module/'):] in fake.sys_module
        return real_exists(path)

    def isdir(path):
        # the host's own /sys/module must not leak in (a benchmark may have loaded tcp_bbr or sch_fq)
        if path.startswith('/sys/module/'):
            return path[len('/sys/module/'):] in fake.sys_module
        return real_isdir(path)

    real_read = tcp_congestion.files.read_text

    def read_kernel_file(path):
        if path.startswith(('/proc/', '/lib/modules/', '/boot/')):
            return fake.files.get(path)
        return real_read(path)          # the modules-load.d file and the qdisc record in tmp_path

    monkeypatch.setattr(tcp_congestion.files, 'read_text', read_kernel_file)
    monkeypatch.setattr(tcp_congestion, 'kernel_config', fake.config.get)
    monkeypatch.setattr(tcp_congestion.os.path, 'exists', exists)
    monkeypatch.setattr(tcp_congestion.os.path, 'isdir', isdir)
    fake.available('reno cubic')
    return fake


class FakeNet(object):
    """Interfaces below /sys/class/net, each with a root qdisc, and a tc that changes them.

    ``defaults`` maps each interface to the root qdisc the kernel gives it; ``root`` holds the current one. As
    ``respond`` of StubModule it answers ``tc qdisc show`` (nothing printed for 'none'), ``replace`` and ``del`` (the
    kernel default comes back; deleting a default qdisc fails as on Linux), and modprobe --dry-run (no module files).
    """

    def __init__(self, **defaults):
        self.defaults = dict(defaults)
        self.root = dict(defaults)
        self.errors = {}          # tc action -> stderr of a failure

    def remove(self, name):
        del self.defaults[name], self.root[name]

    def __call__(self, argv):
        if not argv[0].endswith('/tc'):
            return StubModule.no_module_files(argv)
        assert argv[1:3] == ['qdisc', argv[2]] and argv[3] == 'dev' and argv[5] == 'root', argv
        action, name = argv[2], argv[4]
        if name not in self.root:
            return 1, '', 'Cannot find device "%s"\n' % name
        if action in self.errors:
            return 2, '', self.errors[action]
        if action == 'show':
            qdisc = self.root[name]
            return 0, '' if qdisc == 'none' else 'qdisc %s 8001: root refcnt 2\n' % qdisc, ''
        if action == 'replace':
            self.root[name] = argv[6]
        elif action == 'del':
            if self.root[name] == self.defaults[name]:
                return 2, '', 'Error: Cannot delete qdisc with handle of zero.\n'
            self.root[name] = self.defaults[name]
        else:
            raise AssertionError('unexpected tc command %r' % argv)
        return 0, '', ''


@pytest.fixture
def net(monkeypatch):
    """A fake /sys/class/net with lo, eth0 and wan0 and their default root qdiscs; respond= for StubModule."""
    fake = FakeNet(lo='noqueue', eth0='fq_codel', wan0='fq_codel')
    real_isdir, real_listdir = os.path.isdir, os.listdir

    def isdir(path):
        if path.startswith('/sys/class/net/'):
            return path[len('/sys/class/net/'):] in fake.root
        return real_isdir(path)

    def listdir(path):
        if path == '/sys/class/net':
            return list(fake.root)
        return real_listdir(path)

    monkeypatch.setattr(tcp_congestion.os.path, 'isdir', isdir)
    monkeypatch.setattr(tcp_congestion.os, 'listdir', listdir)
    return fake


def record_path(module):
    return os.path.join(module.params['state_dir'], 'qdisc.json')


def record_of(module):
    """The qdisc record as written (None when there is none)."""
    text = files.read_text(record_path(module))
    return None if text is None else json.loads(text)


def builtin_list(*modules):
    return ''.join('kernel/net/%s.ko\n' % name for name in modules)


def read(path):
    with open(path) as handle:
        return handle.read()


# --------------------------------------------------------------------------- kernel_config

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

    monkeypatch.setattr(tcp_congestion.gzip, 'open', fake_open)
    monkeypatch.setattr(tcp_congestion.files, 'read_text',
                        lambda name: pytest.fail('read %s instead of /proc/config.gz' % name))
    return opened


@pytest.mark.parametrize('option, setting', [
    ('CONFIG_TCP_CONG_CUBIC', 'y'),
    ('CONFIG_TCP_CONG_BBR', 'm'),           # not confused with CONFIG_TCP_CONG_BBR2
    ('CONFIG_TCP_CONG_VEGAS', 'n'),         # "is not set"
    ('CONFIG_TCP_CONG_HTCP', 'n'),          # absent
    ('CONFIG_NET_SCH_FQ', 'y'),
])
def test_kernel_config_from_proc_config_gz(proc_config_gz, option, setting):
    assert tcp_congestion.kernel_config(option) == setting
    assert proc_config_gz == ['/proc/config.gz']


def _no_proc_config(name, mode='rb', *args, **kwargs):
    raise IOError(2, 'No such file or directory', name)


def test_kernel_config_falls_back_to_boot_config(monkeypatch, fake_release):
    asked = []
    monkeypatch.setattr(tcp_congestion.gzip, 'open', _no_proc_config)
    monkeypatch.setattr(tcp_congestion.files, 'read_text', lambda path: asked.append(path) or CONFIG)
    assert tcp_congestion.kernel_config('CONFIG_TCP_CONG_BBR') == 'm'
    assert tcp_congestion.kernel_config('CONFIG_TCP_CONG_VEGAS') == 'n'
    assert asked == ['/boot/config-%s' % FAKE_RELEASE] * 2


def test_kernel_config_falls_back_when_config_gz_is_not_gzip(monkeypatch, tmp_path):
    bad = tmp_path / 'config.gz'
    bad.write_text('not gzip')
    real_open = gzip.open
    monkeypatch.setattr(tcp_congestion.gzip, 'open', lambda name, mode='rb': real_open(str(bad), mode))
    monkeypatch.setattr(tcp_congestion.files, 'read_text', lambda path: 'CONFIG_TCP_CONG_BBR=y\n')
    assert tcp_congestion.kernel_config('CONFIG_TCP_CONG_BBR') == 'y'


def test_kernel_config_unknown_without_any_config(monkeypatch):
    monkeypatch.setattr(tcp_congestion.gzip, 'open', _no_proc_config)
    monkeypatch.setattr(tcp_congestion.files, 'read_text', lambda path: None)
    assert tcp_congestion.kernel_config('CONFIG_TCP_CONG_BBR') is None


@pytest.mark.skipif(not os.path.exists('/proc/config.gz'), reason='the host kernel has no /proc/config.gz')
def test_kernel_config_of_the_host():
    available = (sysctl.read_live('net.ipv4.tcp_available_congestion_control') or '').split()
    setting = tcp_congestion.kernel_config('CONFIG_TCP_CONG_CUBIC')
    assert setting in ('y', 'm', 'n')
    if 'cubic' in available:
        assert setting in ('y', 'm')


# --------------------------------------------------------------------------- default routes

def test_default_route_interfaces(monkeypatch):
    texts = {'/proc/net/route': ROUTE, '/proc/net/ipv6_route': IPV6_ROUTE}
    monkeypatch.setattr(tcp_congestion.files, 'read_text', texts.get)
    assert tcp_congestion.default_route_interfaces() == ['eth0', 'wg0', 'vlan7']


def test_default_route_interfaces_ipv6_only(monkeypatch):
    texts = {'/proc/net/route': ROUTE.splitlines(True)[0], '/proc/net/ipv6_route': IPV6_ROUTE}
    monkeypatch.setattr(tcp_congestion.files, 'read_text', texts.get)
    assert tcp_congestion.default_route_interfaces() == ['eth0', 'vlan7']


def test_default_route_interfaces_without_routes(monkeypatch):
    monkeypatch.setattr(tcp_congestion.files, 'read_text', lambda path: None)
    assert tcp_congestion.default_route_interfaces() == []


@pytest.mark.skipif(not os.path.exists('/proc/net/route'), reason='no /proc/net/route')
def test_default_route_interfaces_of_the_host_exist():
    names = tcp_congestion.default_route_interfaces()
    assert len(names) == len(set(names))
    assert 'lo' not in names
    for name in names:
        assert os.path.isdir('/sys/class/net/%s' % name)


# --------------------------------------------------------------------------- algorithm names

INVALID_NAMES = ['BBR', 'bbr;reboot', 'tcp bbr', '', '../bbr', 'bbr-2', 'bbr\tcubic']


def _untouched(module):
    pytest.fail('the module went on with an invalid algorithm name')


@pytest.mark.parametrize('algorithm', INVALID_NAMES)
@pytest.mark.parametrize('state', ['available', 'absent', 'verified'])
def test_algorithm_name_is_validated_first(run_module, monkeypatch, tmp_path, algorithm, state):
    # if validation ever let a name through, nothing may touch the host
    for name in ('available', 'absent', 'verified'):
        monkeypatch.setattr(tcp_congestion, name, _untouched)
    result = run_module(tcp_congestion.main, {'algorithm': algorithm, 'state': state})
    assert result['rc'] == 1
    assert result['msg'] == ('algorithm: %r is not a kernel congestion control name such as bbr or cubic.'
                             % algorithm)


@pytest.mark.parametrize('algorithm', ['bbr', 'cubic', 'reno', 'bbr2', 'dctcp', 'highspeed', 'cdg'])
def test_valid_algorithm_names_pass_validation(run_module, monkeypatch, algorithm):
    seen = []
    monkeypatch.setattr(tcp_congestion, 'verified',
                        lambda module: seen.append(module.params['algorithm']) or {'changed': False})
    result = run_module(tcp_congestion.main, {'algorithm': algorithm, 'state': 'verified'})
    assert result['rc'] == 0
    assert seen == [algorithm]


def test_algorithm_with_a_trailing_newline_is_refused(run_module, monkeypatch):
    monkeypatch.setattr(tcp_congestion, 'available', _untouched)
    monkeypatch.setattr(tcp_congestion, 'verified', _untouched)
    result = run_module(tcp_congestion.main, {'algorithm': 'bbr\n', 'state': 'verified'})
    assert result['rc'] == 1
    assert result['msg'] == "algorithm: 'bbr\\n' is not a kernel congestion control name such as bbr or cubic."


# --------------------------------------------------------------------------- available()

def test_available_fails_when_the_kernel_lacks_the_algorithm(kernel, tmp_path):
    kernel.files['/lib/modules/%s/modules.builtin' % FAKE_RELEASE] = builtin_list('ipv4/tcp_cubic')
    kernel.config['CONFIG_TCP_CONG_BBR'] = 'n'
    module = StubModule(tmp_path, bins=())               # no modprobe either
    with pytest.raises(Failed) as info:
        tcp_congestion.available(module)
    assert info.value.result['msg'] == (
        'Kernel %s has no bbr congestion control: it is neither built in nor available as module tcp_bbr '
        '(available: reno cubic). Boot a kernel built with CONFIG_TCP_CONG_BBR (Linux 4.9 or later; every current '
        'distribution kernel has it as a module), or inside a container load tcp_bbr on the host.' % FAKE_RELEASE)
    assert info.value.result['kernel'] == FAKE_RELEASE
    assert info.value.result['loaded'] == []
    assert not os.path.exists(module.params['modules_load_file'])


def test_available_fails_when_nothing_is_known_about_the_algorithm(kernel, tmp_path):
    module = StubModule(tmp_path, algorithm='htcp',
                        respond=lambda argv: (1, '', 'modprobe: FATAL: Module tcp_htcp not found'))
    with pytest.raises(Failed) as info:
        tcp_congestion.available(module)
    message = info.value.result['msg']
    assert message.startswith('Kernel %s has no htcp congestion control' % FAKE_RELEASE)
    assert 'CONFIG_TCP_CONG_HTCP' in message
    assert module.commands == [['/usr/sbin/modprobe', '--dry-run', '--first-time', 'tcp_htcp']]


def test_available_loads_and_persists_modules(kernel, tmp_path):
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'm', 'CONFIG_NET_SCH_FQ': 'm'})
    module = StubModule(tmp_path, qdisc='fq', interfaces=['lo'], header='# Ansible managed\n',
                        respond=lambda argv: (0, 'qdisc noqueue 0: root refcnt 2\n', '') if 'show' in argv
                        else (0, '', ''))
    result = tcp_congestion.available(module)
    assert result['changed'] is True
    assert result['algorithm_source'] == 'module'
    assert result['qdisc_source'] == 'module'
    assert result['qdisc_available'] is True
    assert result['loaded'] == ['tcp_bbr', 'sch_fq']
    assert read(module.params['modules_load_file']) == '# Ansible managed\ntcp_bbr\nsch_fq\n'
    assert result['interfaces'] == {'lo': {'before': 'noqueue', 'after': 'fq'}}
    assert module.commands == [
        ['/usr/sbin/modprobe', 'tcp_bbr'],
        ['/usr/sbin/modprobe', 'sch_fq'],
        ['/usr/sbin/tc', 'qdisc', 'show', 'dev', 'lo', 'root'],
        ['/usr/sbin/tc', 'qdisc', 'replace', 'dev', 'lo', 'root', 'fq'],
    ]
    assert result['diff'][0] == {'before': '', 'after': '# Ansible managed\ntcp_bbr\nsch_fq\n',
                                 'before_header': module.params['modules_load_file'],
                                 'after_header': module.params['modules_load_file']}
    assert result['diff'][1]['after'] == 'root qdisc fq\n'
    assert record_of(module) == {'lo': 'noqueue'}          # for state=absent


def test_available_check_mode_changes_nothing(kernel, tmp_path):
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'm'})
    module = StubModule(tmp_path, qdisc='none', check_mode=True)
    result = tcp_congestion.available(module)
    assert result['changed'] is True
    assert result['loaded'] == ['tcp_bbr']
    assert module.commands == []
    assert not os.path.exists(module.params['modules_load_file'])
    assert not os.path.exists(module.params['state_dir'])


def test_available_with_the_module_already_loaded(kernel, tmp_path):
    kernel.sys_module.update({'tcp_bbr', 'tcp_bbr/initstate'})
    kernel.available('reno cubic bbr')
    module = StubModule(tmp_path, qdisc='none')
    result = tcp_congestion.available(module)
    assert result['algorithm_source'] == 'module'
    assert result['loaded'] == []
    assert module.commands == []
    assert read(module.params['modules_load_file']) == 'tcp_bbr\n'       # still loaded at boot
    assert tcp_congestion.available(StubModule(tmp_path, qdisc='none'))['changed'] is False


def test_available_builtin_removes_a_stale_modules_load_file(kernel, tmp_path):
    kernel.files['/lib/modules/%s/modules.builtin' % FAKE_RELEASE] = builtin_list('ipv4/tcp_bbr', 'sched/sch_fq')
    kernel.available('reno cubic bbr')
    # no interfaces given: the default-route interface (lo here, so that it exists on any host) is used
    kernel.files['/proc/net/route'] = LO_DEFAULT_ROUTE
    kernel.files['/proc/net/ipv6_route'] = ''
    module = StubModule(tmp_path, qdisc='fq', interfaces=[],
                        respond=lambda argv: (0, 'qdisc fq 8001: root refcnt 2 limit 10000p\n', ''))
    os.makedirs(os.path.dirname(module.params['modules_load_file']))
    with open(module.params['modules_load_file'], 'w') as handle:
        handle.write('tcp_bbr\n')
    result = tcp_congestion.available(module)
    assert result['algorithm_source'] == 'builtin'
    assert result['qdisc_source'] == 'builtin'
    assert result['loaded'] == []
    assert result['changed'] is True
    assert not os.path.exists(module.params['modules_load_file'])
    assert result['diff'] == [{'before': 'tcp_bbr\n', 'after': '', 'before_header': module.params['modules_load_file'],
                               'after_header': module.params['modules_load_file']}]
    assert result['interfaces'] == {'lo': {'before': 'fq', 'after': 'fq'}}
    assert module.commands == [['/usr/sbin/tc', 'qdisc', 'show', 'dev', 'lo', 'root']]
    assert not os.path.exists(module.params['state_dir'])     # fq was there before: nothing recorded
    # and a second run has nothing to do
    again = tcp_congestion.available(StubModule(tmp_path, qdisc='fq', interfaces=[],
                                                respond=lambda argv: (0, 'qdisc fq 8001: root\n', '')))
    assert again['changed'] is False


def test_available_modprobe_failure(kernel, tmp_path):
    kernel.config['CONFIG_TCP_CONG_BBR'] = 'm'
    module = StubModule(tmp_path, qdisc='none',
                        respond=lambda argv: (1, '', 'modprobe: ERROR: could not insert tcp_bbr: Operation not '
                                                     'permitted\n'))
    with pytest.raises(Failed) as info:
        tcp_congestion.available(module)
    assert info.value.result['msg'] == ('modprobe tcp_bbr failed on kernel %s: modprobe: ERROR: could not insert '
                                        'tcp_bbr: Operation not permitted' % FAKE_RELEASE)


def test_available_module_without_modprobe_fails(kernel, tmp_path):
    kernel.config['CONFIG_TCP_CONG_BBR'] = 'm'
    with pytest.raises(Failed, match='tcp_bbr is a loadable module but modprobe is missing; install kmod.'):
        tcp_congestion.available(StubModule(tmp_path, qdisc='none', bins=()))


def test_available_without_fq_warns_and_continues(kernel, tmp_path):
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'y', 'CONFIG_NET_SCH_FQ': 'n'})
    module = StubModule(tmp_path, qdisc='fq', interfaces=['lo'])
    result = tcp_congestion.available(module)
    assert result['qdisc_available'] is False
    assert result['qdisc_source'] == 'missing'
    assert result['interfaces'] == {}
    assert module.warnings == [
        'The fq qdisc (sch_fq) is not available on kernel %s (missing); continuing without it. Linux 4.13 and '
        'later pace TCP internally, so BBR still works.' % FAKE_RELEASE]
    assert module.commands == [['/usr/sbin/modprobe', '--dry-run', '--first-time', 'sch_fq']]


def test_available_missing_interface_fails_before_changing_qdiscs(kernel, tmp_path):
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'y', 'CONFIG_NET_SCH_FQ': 'y'})
    module = StubModule(tmp_path, qdisc='fq', interfaces=['lo', 'nosuch0'])
    with pytest.raises(Failed) as info:
        tcp_congestion.available(module)
    assert info.value.result['msg'].startswith('interfaces: nosuch0 do not exist on this host (it has ')
    assert module.commands == []


def test_available_without_tc_fails(kernel, tmp_path):
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'y', 'CONFIG_NET_SCH_FQ': 'y'})
    with pytest.raises(Failed, match='tc is missing; install iproute2 to change the qdisc of lo.'):
        tcp_congestion.available(StubModule(tmp_path, qdisc='fq', interfaces=['lo'], bins=('modprobe',)))


# --------------------------------------------------------------------------- qdisc record (available)

def fq_kernel(kernel):
    """bbr and sch_fq built in: available() loads nothing and goes straight to the qdiscs."""
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'y', 'CONFIG_NET_SCH_FQ': 'y'})
    return kernel


def test_available_records_the_qdiscs_it_replaces(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.root['wan0'] = 'fq'                          # fq already there: not ours, not recorded
    module = StubModule(tmp_path, interfaces=['eth0', 'wan0', 'lo'], respond=net)
    result = tcp_congestion.available(module)
    assert result['changed'] is True
    assert result['interfaces'] == {'eth0': {'before': 'fq_codel', 'after': 'fq'},
                                    'wan0': {'before': 'fq', 'after': 'fq'},
                                    'lo': {'before': 'noqueue', 'after': 'fq'}}
    assert record_of(module) == {'eth0': 'fq_codel', 'lo': 'noqueue'}
    assert net.root == {'eth0': 'fq', 'wan0': 'fq', 'lo': 'fq'}
    assert [argv for argv in module.commands if 'show' not in argv] == [
        ['/usr/sbin/tc', 'qdisc', 'replace', 'dev', 'eth0', 'root', 'fq'],
        ['/usr/sbin/tc', 'qdisc', 'replace', 'dev', 'lo', 'root', 'fq'],
    ]


def test_available_keeps_the_first_recorded_qdisc(kernel, net, tmp_path):
    fq_kernel(kernel)
    tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0'], respond=net))
    net.root['eth0'] = 'pfifo_fast'                  # someone changed it since
    again = tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0', 'wan0'], respond=net))
    assert again['interfaces']['eth0'] == {'before': 'pfifo_fast', 'after': 'fq'}
    module = StubModule(tmp_path)
    assert record_of(module) == {'eth0': 'fq_codel', 'wan0': 'fq_codel'}
    # a third run finds fq everywhere: nothing changes, the record stays as it is
    third = tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0', 'wan0'], respond=net))
    assert third['changed'] is False
    assert record_of(module) == {'eth0': 'fq_codel', 'wan0': 'fq_codel'}


def test_available_check_mode_records_nothing(kernel, net, tmp_path):
    fq_kernel(kernel)
    module = StubModule(tmp_path, interfaces=['eth0'], respond=net, check_mode=True)
    result = tcp_congestion.available(module)
    assert result['changed'] is True
    assert result['interfaces'] == {'eth0': {'before': 'fq_codel', 'after': 'fq'}}
    assert net.root['eth0'] == 'fq_codel'
    assert not os.path.exists(module.params['state_dir'])
    assert module.commands == [['/usr/sbin/tc', 'qdisc', 'show', 'dev', 'eth0', 'root']]


def test_available_records_before_it_changes_the_qdisc(kernel, net, tmp_path):
    # the record is written before tc runs, so an interrupted run can still be undone
    fq_kernel(kernel)
    seen = []

    def tc(argv):
        if 'replace' in argv:
            seen.append(record_of(module))
        return net(argv)

    module = StubModule(tmp_path, interfaces=['eth0'], respond=tc)
    tcp_congestion.available(module)
    assert seen == [{'eth0': 'fq_codel'}]


def test_available_replace_failure_keeps_the_record(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.errors['replace'] = 'RTNETLINK answers: Operation not permitted\n'
    module = StubModule(tmp_path, interfaces=['eth0'], respond=net)
    with pytest.raises(Failed) as info:
        tcp_congestion.available(module)
    assert info.value.result['msg'] == ('/usr/sbin/tc qdisc replace dev eth0 root fq failed: RTNETLINK answers: '
                                        'Operation not permitted')
    assert net.root['eth0'] == 'fq_codel'
    assert record_of(module) == {'eth0': 'fq_codel'}


# --------------------------------------------------------------------------- absent()

def write_modules_load_file(module, text='tcp_bbr\nsch_fq\n'):
    os.makedirs(os.path.dirname(module.params['modules_load_file']))
    with open(module.params['modules_load_file'], 'w') as handle:
        handle.write(text)


def write_record(module, record):
    os.makedirs(module.params['state_dir'], exist_ok=True)
    with open(record_path(module), 'w') as handle:
        json.dump(record, handle)


def test_absent_after_available_restores_the_kernel_default(kernel, net, tmp_path, fake_release):
    fq_kernel(kernel)
    net.root['wan0'] = 'fq'                          # fq that was there before
    tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0', 'wan0', 'lo'], respond=net))
    assert net.root == {'lo': 'fq', 'eth0': 'fq', 'wan0': 'fq'}
    module = StubModule(tmp_path, state='absent', respond=net)
    write_modules_load_file(module)
    result = tcp_congestion.absent(module)
    assert result['changed'] is True
    assert result['kernel'] == fake_release
    assert net.root == {'lo': 'noqueue', 'eth0': 'fq_codel', 'wan0': 'fq'}
    assert result['interfaces'] == {'eth0': {'before': 'fq', 'after': 'kernel default (was fq_codel)'},
                                    'lo': {'before': 'fq', 'after': 'kernel default (was noqueue)'}}
    assert module.commands == [['/usr/sbin/tc', 'qdisc', 'show', 'dev', 'eth0', 'root'],
                               ['/usr/sbin/tc', 'qdisc', 'del', 'dev', 'eth0', 'root'],
                               ['/usr/sbin/tc', 'qdisc', 'show', 'dev', 'lo', 'root'],
                               ['/usr/sbin/tc', 'qdisc', 'del', 'dev', 'lo', 'root']]
    path = module.params['modules_load_file']
    assert result['diff'] == [
        {'before': 'tcp_bbr\nsch_fq\n', 'after': '', 'before_header': path, 'after_header': path},
        {'before': 'root qdisc fq\n', 'after': 'root qdisc kernel default (was fq_codel)\n',
         'before_header': 'eth0', 'after_header': 'eth0'},
        {'before': 'root qdisc fq\n', 'after': 'root qdisc kernel default (was noqueue)\n',
         'before_header': 'lo', 'after_header': 'lo'},
    ]
    assert not os.path.exists(path)
    assert not os.path.exists(record_path(module))
    assert not os.path.exists(module.params['state_dir'])          # removed once empty


def test_absent_leaves_fq_that_was_there_before(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.root.update({'eth0': 'fq', 'wan0': 'fq'})
    first = tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0', 'wan0'], respond=net))
    assert first['changed'] is False
    assert record_of(StubModule(tmp_path)) is None
    module = StubModule(tmp_path, state='absent', interfaces=['eth0', 'wan0'], respond=net)
    result = tcp_congestion.absent(module)
    assert result['changed'] is False
    assert result['interfaces'] == {}
    assert module.commands == []
    assert net.root == {'lo': 'noqueue', 'eth0': 'fq', 'wan0': 'fq'}


def test_absent_looks_only_at_the_record_not_at_interfaces(kernel, net, tmp_path):
    net.root.update({'eth0': 'fq', 'wan0': 'fq'})
    module = StubModule(tmp_path, state='absent', interfaces=['wan0', 'nosuch0'], respond=net)
    write_record(module, {'eth0': 'fq_codel'})
    result = tcp_congestion.absent(module)   # nosuch0 does not exist: no failure, it is not looked at
    assert list(result['interfaces']) == ['eth0']
    assert net.root == {'lo': 'noqueue', 'eth0': 'fq_codel', 'wan0': 'fq'}
    assert [argv[4] for argv in module.commands] == ['eth0', 'eth0']


def test_absent_leaves_a_recorded_interface_that_is_no_longer_fq(kernel, net, tmp_path):
    net.root['eth0'] = 'cake'                        # changed by someone else since
    module = StubModule(tmp_path, state='absent', respond=net)
    write_record(module, {'eth0': 'fq_codel'})
    result = tcp_congestion.absent(module)
    assert result['changed'] is True                 # the record is removed
    assert result['interfaces'] == {}
    assert result['diff'] == []
    assert net.root['eth0'] == 'cake'
    assert module.commands == [['/usr/sbin/tc', 'qdisc', 'show', 'dev', 'eth0', 'root']]
    assert record_of(module) is None


def test_absent_leaves_an_interface_recorded_as_fq(kernel, net, tmp_path):
    net.root['eth0'] = 'fq'
    module = StubModule(tmp_path, state='absent', respond=net)
    write_record(module, {'eth0': 'fq'})             # never written by the module; fq is not ours to remove
    result = tcp_congestion.absent(module)
    assert result['interfaces'] == {}
    assert net.root['eth0'] == 'fq'
    assert [argv for argv in module.commands if 'del' in argv] == []
    assert record_of(module) is None


def test_absent_ignores_a_recorded_interface_that_is_gone(kernel, net, tmp_path):
    fq_kernel(kernel)
    tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0', 'wan0'], respond=net))
    net.remove('wan0')                               # e.g. a VPN interface torn down since
    module = StubModule(tmp_path, state='absent', respond=net)
    result = tcp_congestion.absent(module)
    assert result['interfaces'] == {'eth0': {'before': 'fq', 'after': 'kernel default (was fq_codel)'}}
    assert [argv[4] for argv in module.commands] == ['eth0', 'eth0']
    assert record_of(module) is None


def test_absent_with_only_vanished_interfaces_needs_no_tc(kernel, net, tmp_path):
    module = StubModule(tmp_path, state='absent', bins=(), respond=net)
    write_record(module, {'wg9': 'noqueue'})
    result = tcp_congestion.absent(module)
    assert result['changed'] is True
    assert result['interfaces'] == {}
    assert module.commands == []
    assert not os.path.exists(module.params['state_dir'])


def test_absent_check_mode_changes_nothing_and_keeps_the_record(kernel, net, tmp_path):
    fq_kernel(kernel)
    tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0'], respond=net))
    module = StubModule(tmp_path, state='absent', check_mode=True, respond=net)
    write_modules_load_file(module)
    result = tcp_congestion.absent(module)
    assert result['changed'] is True
    assert result['interfaces'] == {'eth0': {'before': 'fq', 'after': 'kernel default (was fq_codel)'}}
    assert len(result['diff']) == 2
    assert module.commands == [['/usr/sbin/tc', 'qdisc', 'show', 'dev', 'eth0', 'root']]
    assert net.root['eth0'] == 'fq'
    assert os.path.exists(module.params['modules_load_file'])
    assert record_of(module) == {'eth0': 'fq_codel'}
    # the real run afterwards still has everything it needs
    real = StubModule(tmp_path, state='absent', respond=net)
    assert tcp_congestion.absent(real)['interfaces'] == result['interfaces']
    assert net.root['eth0'] == 'fq_codel'


def test_absent_twice_is_unchanged(kernel, net, tmp_path):
    fq_kernel(kernel)
    tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0'], respond=net))
    assert tcp_congestion.absent(StubModule(tmp_path, state='absent', respond=net))['changed'] is True
    module = StubModule(tmp_path, state='absent', respond=net, bins=())
    result = tcp_congestion.absent(module)
    assert result == {'changed': False, 'kernel': FAKE_RELEASE, 'interfaces': {}, 'diff': []}
    assert module.commands == []
    assert net.root['eth0'] == 'fq_codel'


def test_absent_keeps_a_state_dir_shared_with_other_records(kernel, net, tmp_path):
    fq_kernel(kernel)
    tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0'], respond=net))
    module = StubModule(tmp_path, state='absent', respond=net)
    other = os.path.join(module.params['state_dir'], '90-bdp-wan-tune.conf.json')   # sysctl_dropin's record
    with open(other, 'w') as handle:
        handle.write('{"original": {}}\n')
    tcp_congestion.absent(module)
    assert os.listdir(module.params['state_dir']) == ['90-bdp-wan-tune.conf.json']


def test_absent_tc_failure_keeps_the_record(kernel, net, tmp_path):
    net.root['eth0'] = 'fq'
    net.errors['del'] = 'RTNETLINK answers: Operation not permitted\n'
    module = StubModule(tmp_path, state='absent', respond=net)
    write_record(module, {'eth0': 'fq_codel'})
    with pytest.raises(Failed) as info:
        tcp_congestion.absent(module)
    assert info.value.result['msg'] == ('/usr/sbin/tc qdisc del dev eth0 root failed: RTNETLINK answers: Operation '
                                        'not permitted')
    assert info.value.result['interfaces'] == {'eth0': {'before': 'fq', 'after': 'kernel default (was fq_codel)'}}
    assert record_of(module) == {'eth0': 'fq_codel'}                 # so that a retry still knows
    del net.errors['del']
    assert tcp_congestion.absent(StubModule(tmp_path, state='absent', respond=net))['changed'] is True
    assert net.root['eth0'] == 'fq_codel'


def test_absent_without_tc_fails_when_there_is_fq_to_remove(kernel, net, tmp_path):
    module = StubModule(tmp_path, state='absent', bins=(), respond=net)
    write_record(module, {'eth0': 'fq_codel'})
    with pytest.raises(Failed, match='^tc is missing; install iproute2 to change the qdisc of eth0.$'):
        tcp_congestion.absent(module)
    assert record_of(module) == {'eth0': 'fq_codel'}


def test_absent_with_qdisc_none_and_no_record_only_removes_the_file(kernel, net, tmp_path):
    module = StubModule(tmp_path, state='absent', qdisc='none', interfaces=['eth0'], bins=(), respond=net)
    net.root['eth0'] = 'fq'
    write_modules_load_file(module, 'tcp_bbr\n')
    result = tcp_congestion.absent(module)
    assert result['changed'] is True
    assert result['interfaces'] == {}
    assert module.commands == []
    assert not os.path.exists(module.params['modules_load_file'])
    assert net.root['eth0'] == 'fq'


def test_absent_with_qdisc_none_still_undoes_the_record(kernel, net, tmp_path):
    # the record, not the qdisc option, says what absent undoes (the option may have changed since)
    net.root['eth0'] = 'fq'
    module = StubModule(tmp_path, state='absent', qdisc='none', respond=net)
    write_record(module, {'eth0': 'fq_codel'})
    result = tcp_congestion.absent(module)
    assert result['interfaces'] == {'eth0': {'before': 'fq', 'after': 'kernel default (was fq_codel)'}}
    assert net.root['eth0'] == 'fq_codel'


def test_available_then_absent_on_an_interface_without_a_root_qdisc(kernel, net, tmp_path):
    # tc prints nothing for the root qdisc: recorded as 'none'
    fq_kernel(kernel)
    net.defaults['eth0'] = net.root['eth0'] = 'none'
    first = tcp_congestion.available(StubModule(tmp_path, interfaces=['eth0'], respond=net))
    assert first['interfaces'] == {'eth0': {'before': 'none', 'after': 'fq'}}
    assert record_of(StubModule(tmp_path)) == {'eth0': 'none'}
    result = tcp_congestion.absent(StubModule(tmp_path, state='absent', respond=net))
    assert result['interfaces'] == {'eth0': {'before': 'fq', 'after': 'kernel default (was none)'}}
    assert net.root['eth0'] == 'none'


def test_absent_with_a_garbage_record_changes_no_qdisc(kernel, net, tmp_path):
    net.root['eth0'] = 'fq'
    module = StubModule(tmp_path, state='absent', respond=net)
    os.makedirs(module.params['state_dir'])
    with open(record_path(module), 'w') as handle:
        handle.write('{"eth0": "fq_co')              # truncated
    result = tcp_congestion.absent(module)
    assert result['interfaces'] == {}
    assert module.commands == []
    assert net.root['eth0'] == 'fq'


def test_state_dir_option(run_module, tmp_path, monkeypatch):
    """main() takes state_dir (default files.STATE_DIR, as documented) and absent() uses it."""
    doc = yaml.safe_load(tcp_congestion.DOCUMENTATION)['options']['state_dir']
    assert doc['default'] == files.STATE_DIR
    assert doc['type'] == 'path'
    state_dir = tmp_path / 'elsewhere'
    state_dir.mkdir()
    # an interface that does not exist on any host, so that nothing of the real host is touched
    (state_dir / 'qdisc.json').write_text('{"bdp-test-gone0": "noqueue"}\n')
    result = run_module(tcp_congestion.main, {'state': 'absent', 'state_dir': str(state_dir),
                                              'modules_load_file': str(tmp_path / 'modules-load.d' / 'x.conf')})
    assert result['rc'] == 0, result.get('msg')
    assert result['changed'] is True
    assert result['interfaces'] == {}
    assert not state_dir.exists()


# --------------------------------------------------------------------------- verified (real loopback)

def _host_default():
    if not sys.platform.startswith('linux') or not hasattr(socket, 'TCP_CONGESTION'):
        pytest.skip('needs Linux with TCP_CONGESTION')
    try:
        with open('/proc/sys/net/ipv4/tcp_congestion_control') as handle:
            return handle.read().strip()
    except (IOError, OSError):
        pytest.skip('no /proc/sys/net/ipv4/tcp_congestion_control')


def _other_algorithm(default):
    return 'reno' if default != 'reno' else 'cubic'


def test_verified_reports_the_host_default(run_module):
    default = _host_default()
    result = run_module(tcp_congestion.main, {'algorithm': default, 'state': 'verified'})
    assert result['rc'] == 0, result.get('msg')
    assert result['changed'] is False
    assert result['kernel'] == os.uname()[2]
    assert result['socket_algorithm'] == default
    assert result['ss_algorithm'] in (default, None)     # None when ss is missing or shows nothing


def test_verified_fails_for_another_algorithm(run_module):
    default = _host_default()
    other = _other_algorithm(default)
    result = run_module(tcp_congestion.main, {'algorithm': other, 'state': 'verified'})
    assert result['rc'] == 1
    assert result['socket_algorithm'] == default
    assert result['msg'] == (
        'New TCP connections use %s, not %s (net.ipv4.tcp_congestion_control is %s). Re-run the bbr role; inside '
        'a container the host must allow %s in net.ipv4.tcp_allowed_congestion_control.'
        % (default, other, default, other))


def test_verified_fails_when_ss_disagrees_with_the_socket(tmp_path, proc):
    default = _host_default()
    other = _other_algorithm(default)
    proc.set('net.ipv4.tcp_available_congestion_control', 'reno cubic %s' % default)
    proc.set('net.ipv4.tcp_congestion_control', default)
    module = StubModule(tmp_path, algorithm=default, state='verified', bins=('ss',),
                        respond=lambda argv: (0, '0 0 127.0.0.1:1 127.0.0.1:2\n\t %s wscale:7,7 rto:204\n' % other,
                                              ''))
    with pytest.raises(Failed) as info:
        tcp_congestion.verified(module)
    result = info.value.result
    assert result['socket_algorithm'] == default
    assert result['ss_algorithm'] == other
    both = ' / '.join(sorted([default, other]))
    assert result['msg'].startswith('New TCP connections use %s, not %s' % (both, default))
    (argv,) = module.commands
    assert argv[:4] == ['/usr/sbin/ss', '-tinH', 'state', 'established']
    assert argv[4].startswith('( sport = :') and argv[4].endswith(' )')


def test_verified_without_ss_uses_the_socket(tmp_path):
    default = _host_default()
    module = StubModule(tmp_path, algorithm=default, state='verified', bins=())
    result = tcp_congestion.verified(module)
    assert result == {'changed': False, 'kernel': os.uname()[2], 'socket_algorithm': default, 'ss_algorithm': None}
