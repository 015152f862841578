# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tcp_congestion (its engine, module_utils/tuning/congestion.py): route parsing, name validation, available() and absent() against a fake kernel and a fake tc
that model real qdisc trees, and state=verified against the real loopback (the only place the real kernel is used;
nothing is changed). kmod.kernel_config has its own tests in module_utils/tuning/test_kmod.py, the qdisc trees in
module_utils/tuning/test_qdisc.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.doc_fragments import state_dir as state_dir_fragment
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import congestion, kmod
from ansible_collections.bdp.wan_tune.plugins.modules import tcp_congestion

FAKE_RELEASE = '6.1.0-28-amd64'
TC = '/usr/sbin/tc'

ROUTE = (
    'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n'
    'eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n'
    'eth0\t000200C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n'
    'podman1\t000012C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n'
    'wg0\t00000000\t00000000\t0001\t0\t0\t200\t00000000\t0\t0\t0\n'
    'eth0\t00000000\t020200C0\t0003\t0\t0\t300\t00000000\t0\t0\t0\n'
)
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


def default_route(name):
    """/proc/net/route with one IPv4 default route, via ``name``."""
    return ROUTE.splitlines(True)[0] + '%s\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n' % name


def _recorded(name):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'tc', name)) as handle:
        return handle.read()


# Recorded on a Debian VM (kernel 6.12; ens4 is a 2-queue virtio NIC): `tc qdisc show` of a stock host.
STOCK_SHOW = _recorded('stock.txt')
# The same after a reboot with default_qdisc=fq (the children's lines were shortened when recorded).
REBOOTED_SHOW = _recorded('rebooted.txt')

# FakeNet.state() of those two hosts: root kind and handle, then the children of mq in queue order
STOCK = {'lo': 'noqueue 0:', 'ens3': 'fq_codel 0:', 'ens4': 'mq 0: fq_codel 0: fq_codel 0:'}
REBOOTED = {'lo': 'noqueue 0:', 'ens3': 'fq 0:', 'ens4': 'mq 0: fq 0: fq 0:'}


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

    @staticmethod
    def selinux_enabled():
        """As AnsibleModule.selinux_enabled() on a host without SELinux: files.write_atomic() sets no context."""
        return False


@pytest.fixture
def fake_release(monkeypatch):
    real = os.uname()
    monkeypatch.setattr(os, 'uname', lambda: os.uname_result((real[0], real[1], FAKE_RELEASE, real[3], real[4])))
    return FAKE_RELEASE


class FakeKernel(object):
    """Files below /proc, /lib/modules and /boot, kernel config options, /sys/module and modprobe."""

    def __init__(self, proc):
        self.proc = proc
        self.files = {}           # path -> text, for /proc, /lib/modules and /boot
        self.config = {}          # CONFIG_ option -> 'y', 'm' or 'n'
        self.sys_module = set()   # entries below /sys/module, e.g. 'tcp_bbr', 'tcp_bbr/initstate'
        self.module_files = set()  # loadable modules that modprobe --dry-run finds

    def available(self, names):
        self.proc.set('net.ipv4.tcp_available_congestion_control', names)

    def modprobe(self, argv):
        """modprobe --dry-run --first-time NAME finds module_files; modprobe NAME loads NAME."""
        name = argv[-1]
        if '--dry-run' in argv:
            if name in self.module_files:
                return 0, 'insmod /lib/modules/%s/kernel/net/%s.ko\n' % (FAKE_RELEASE, name), ''
            return StubModule.no_module_files(argv)
        self.sys_module.update([name, name + '/initstate'])
        if name.startswith('tcp_'):
            self.available('%s %s' % (self.proc.get('net.ipv4.tcp_available_congestion_control'), name[4:]))
        return 0, '', ''


@pytest.fixture
def kernel(monkeypatch, proc, fake_release):
    """A fake kernel for kmod (files.read_text, kmod.kernel_config and os.path are the module objects kmod and
    tcp_congestion share)."""
    fake = FakeKernel(proc)
    real_exists, real_isdir, real_read = os.path.exists, os.path.isdir, files.read_text

    def exists(path):
        if path.startswith('/sys/module/'):
            return path[len('/sys/module/'):] in fake.sys_module
        return real_exists(path)

    def isdir(path):
        # the host's own /sys/module must not leak in (a benchmark may have loaded tcp_bbr or sch_fq)
        if path.startswith('/sys/module/'):
            return path[len('/sys/module/'):] in fake.sys_module
        return real_isdir(path)

    def read_kernel_file(path):
        if path.startswith(('/proc/', '/lib/modules/', '/boot/')):
            return fake.files.get(path)
        return real_read(path)          # the modules-load.d file and the qdisc record in tmp_path

    monkeypatch.setattr(files, 'read_text', read_kernel_file)
    monkeypatch.setattr(kmod, 'kernel_config', fake.config.get)
    monkeypatch.setattr(os.path, 'exists', exists)
    monkeypatch.setattr(os.path, 'isdir', isdir)
    fake.available('reno cubic')
    return fake


# what tc prints after the handle and the parent of each kind, as kernel 6.12 does
PARAMS = {
    'fq_codel': 'limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64',
    'fq': ('limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 quantum 3028b initial_quantum 15140b '
           'low_rate_threshold 550Kbit refill_delay 40ms timer_slack 10us horizon 10s horizon_drop'),
    'pfifo': 'limit 1000p',
    'pfifo_fast': 'bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1',
    'htb': 'r2q 10 default 0 direct_packets_stat 0 direct_qlen 1000',
    'cake': 'bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw '
            'overhead 0',
}


class FakeNet(object):
    """Interfaces below /sys/class/net and a tc that changes their qdisc trees as Linux does.

    Each interface has a root qdisc (kind, handle major) and, under mq, one child per TX queue. The kernel default
    (attached at creation, by reboot() and after ``del root``) is noqueue for lo, mq with children of
    net.core.default_qdisc (read from the fake /proc) on a multiqueue NIC, else default_qdisc; all with handle 0:.
    As ``respond`` of StubModule it answers ``tc qdisc show`` (all devices, in the real format), ``replace root
    [handle H:] KIND``, ``replace parent H:N KIND`` and ``del root`` (failing as Linux does), and passes modprobe
    to the fake kernel.
    """

    def __init__(self, proc, modprobe):
        self.proc = proc
        self.modprobe = modprobe
        self.links = {}            # name -> {'queues', 'default', 'root': (kind, major) or None, 'children', ...}
        self.errors = {}           # action ('replace', 'del') or (action, name) -> stderr of a failure
        self.next_handle = 0x8001  # the kernel's automatic handles

    # ----- the host

    def add(self, name, queues=1, default=None, ingress=False):
        """An interface with ``queues`` TX queues; ``default``: its kernel default when not default_qdisc."""
        self.links[name] = {'queues': queues, 'default': default, 'ingress': ingress}
        self._attach_default(name)

    def remove(self, name):
        del self.links[name]

    def reboot(self):
        for name in self.links:
            self._attach_default(name)

    def default_qdisc(self):
        return self.proc.get('net.core.default_qdisc')

    def state(self):
        """name -> 'KIND MAJOR:' of the root, followed by the children of mq in queue order."""
        state = {}
        for name, link in self.links.items():
            parts = ['%s %s:' % link['root']] if link['root'] else ['none']
            parts += ['%s %s:' % link['children'][minor] for minor in sorted(link['children'])]
            state[name] = ' '.join(parts)
        return state

    def run(self, line):
        """Run ``tc qdisc LINE`` (to set up a test) and insist that it works."""
        rc, out, err = self([TC, 'qdisc'] + line.split())
        assert rc == 0, err
        return out

    # ----- tc

    def __call__(self, argv):
        if not argv[0].endswith('/tc'):
            return self.modprobe(argv)
        assert argv[1] == 'qdisc', argv
        if argv[2:] == ['show']:
            return 0, self.show(), ''
        assert argv[2] in ('replace', 'del') and argv[3] == 'dev', argv
        action, name, rest = argv[2], argv[4], argv[5:]
        if name not in self.links:
            return 1, '', 'Cannot find device "%s"\n' % name
        for key in ((action, name), action):
            if key in self.errors:
                return 2, '', self.errors[key]
        link = self.links[name]
        if action == 'del':
            assert rest == ['root'], argv
            return self._delete(name, link)
        if rest[0] == 'root':
            where, rest = 'root', rest[1:]
        else:
            assert rest[0] == 'parent', argv
            where, rest = rest[1], rest[2:]
        handle = None
        if rest[0] == 'handle':
            handle, rest = rest[1], rest[2:]
        assert len(rest) == 1, argv
        if where == 'root':
            return self._replace_root(link, rest[0], handle)
        return self._replace_child(link, where, rest[0])

    def show(self):
        lines = []
        for name, link in self.links.items():
            if link['root']:
                kind, major = link['root']
                refcnt = '' if kind == 'mq' else ' refcnt %d' % (max(link['queues'], 1) + 1)
                lines.append(self._line(kind, major, name, 'root' + refcnt))
                for minor in sorted(link['children'], reverse=True):
                    child_kind, child_major = link['children'][minor]
                    parent = '%s:%x' % ('' if major == '0' else major, minor)
                    lines.append(self._line(child_kind, child_major, name, 'parent ' + parent))
            if link['ingress']:
                lines.append('qdisc ingress ffff: dev %s parent ffff:fff1 ----------------' % name)
        return ''.join(line + '\n' for line in lines)

    @staticmethod
    def _line(kind, major, name, where):
        params = PARAMS.get(kind)
        return 'qdisc %s %s: dev %s %s%s' % (kind, major, name, where, ' ' + params if params else '')

    def _handle(self):
        major = '%x' % self.next_handle
        self.next_handle += 1
        return major

    def _attach_default(self, name):
        link = self.links[name]
        kind = link['default'] or self.default_qdisc()
        link['children'] = {}
        if link['queues'] > 1 and not link['default']:
            link['root'] = ('mq', '0')
            link['children'] = dict((queue, (kind, '0')) for queue in range(1, link['queues'] + 1))
        else:
            link['root'] = None if kind == 'none' else (kind, '0')

    def _replace_root(self, link, kind, handle):
        if kind == 'mq' and link['queues'] < 2:
            return 2, '', 'RTNETLINK answers: Operation not supported\n'
        old = link['root']
        if handle:
            major = handle.rstrip(':')
        elif old and old[0] == kind and old[1] != '0':
            major = old[1]                    # changed in place
        else:
            major = self._handle()            # a default root (handle 0:) is never changed, always replaced
        link['root'] = (kind, major)
        if kind == 'mq':
            link['children'] = dict((queue, (self.default_qdisc(), '0')) for queue in range(1, link['queues'] + 1))
        else:
            link['children'] = {}
        return 0, '', ''

    def _replace_child(self, link, parent, kind):
        major, minor = parent.split(':', 1)
        if major in ('', '0') or not link['root'] or link['root'][1] != major:
            return 2, '', 'Error: Failed to find specified qdisc.\n'
        queue = int(minor, 16)
        if link['root'][0] != 'mq' or queue not in link['children']:
            return 2, '', 'Error: Specified class not found.\n'
        old = link['children'][queue]
        link['children'][queue] = (kind, old[1] if old[0] == kind and old[1] != '0' else self._handle())
        return 0, '', ''

    def _delete(self, name, link):
        if not link['root']:
            return 2, '', 'Error: Cannot find specified qdisc on specified device.\n'
        if link['root'][1] == '0':
            return 2, '', 'Error: Cannot delete qdisc with handle of zero.\n'
        self._attach_default(name)
        return 0, '', ''


@pytest.fixture
def net(monkeypatch, proc, kernel):
    """A fake /sys/class/net with the recorded host's lo, ens3 (one queue) and ens4 (two queues), stock
    (default_qdisc fq_codel); respond= for StubModule."""
    proc.set('net.core.default_qdisc', 'fq_codel')
    fake = FakeNet(proc, kernel.modprobe)
    fake.add('lo', default='noqueue')
    fake.add('ens3')
    fake.add('ens4', queues=2)
    real_isdir, real_listdir = os.path.isdir, os.listdir

    def isdir(path):
        if path.startswith('/sys/class/net/'):
            return path[len('/sys/class/net/'):] in fake.links
        if path == '/sys/class/net':
            return True
        return real_isdir(path)

    def listdir(path):
        if path == '/sys/class/net':
            return list(fake.links)
        return real_listdir(path)

    monkeypatch.setattr(os.path, 'isdir', isdir)
    monkeypatch.setattr(os, 'listdir', listdir)
    return fake


def reboot_with_fq(net, proc):
    """The host after a reboot with the collection's default_qdisc=fq: the kernel attached fq everywhere."""
    proc.set('net.core.default_qdisc', 'fq')
    net.reboot()


def tc(line):
    """The argv of ``tc qdisc LINE``."""
    return [TC, 'qdisc'] + line.split()


SHOW = tc('show')


def changes(module):
    """The commands that change something: neither tc qdisc show nor modprobe --dry-run."""
    return [argv for argv in module.commands if argv != SHOW and '--dry-run' not in argv]


def qdisc_diff(name, before, after):
    return {'before': 'qdisc %s\n' % before, 'after': 'qdisc %s\n' % after, 'before_header': name,
            'after_header': name}


def file_diff(path, before, after):
    return {'before': before, 'after': after, 'before_header': path, 'after_header': path}


def lsmod_diff(*names):
    return {'before': '', 'after': ''.join(name + '\n' for name in names),
            'before_header': 'loaded kernel modules (lsmod)', 'after_header': 'loaded kernel modules (lsmod)'}


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


# --------------------------------------------------------------------------- the fakes

def test_fake_net_prints_what_linux_prints(net, proc):
    assert net.show() == STOCK_SHOW
    assert net.state() == STOCK
    reboot_with_fq(net, proc)
    assert net.state() == REBOOTED
    for line, recorded in zip(net.show().splitlines(), REBOOTED_SHOW.splitlines()):
        assert line.startswith(recorded.rstrip('.').rstrip())


def test_fake_net_changes_trees_as_linux_does(net):
    assert net([TC, 'qdisc', 'del', 'dev', 'ens3', 'root']) == (
        2, '', 'Error: Cannot delete qdisc with handle of zero.\n')
    for parent in (':1', '0:1'):
        assert net(tc('replace dev ens4 parent %s fq' % parent)) == (2, '', 'Error: Failed to find specified qdisc.\n')
    net.run('replace dev ens4 root pfifo')
    assert 'qdisc pfifo 8001: dev ens4 root refcnt 3 limit 1000p\n' in net.show()
    net.run('del dev ens4 root')
    assert net.state() == STOCK
    net.run('replace dev ens4 root handle 1: mq')
    assert net.state()['ens4'] == 'mq 1: fq_codel 0: fq_codel 0:'
    net.run('replace dev ens4 parent 1:1 fq')
    net.run('replace dev ens4 parent 1:2 fq')
    assert net.show().splitlines()[-3:] == [
        'qdisc mq 1: dev ens4 root',
        'qdisc fq 8003: dev ens4 parent 1:2 ' + PARAMS['fq'],
        'qdisc fq 8002: dev ens4 parent 1:1 ' + PARAMS['fq'],
    ]
    net.run('del dev ens4 root')
    assert net.state() == STOCK


def test_fake_kernel_loads_modules(kernel, tmp_path):
    kernel.module_files.add('tcp_bbr')
    assert kernel.modprobe(['/usr/sbin/modprobe', '--dry-run', '--first-time', 'tcp_bbr'])[0] == 0
    assert kernel.modprobe(['/usr/sbin/modprobe', '--dry-run', '--first-time', 'tcp_htcp'])[0] == 1
    assert kmod.loaded('tcp_bbr') is False
    kernel.modprobe(['/usr/sbin/modprobe', 'tcp_bbr'])
    assert kmod.loaded('tcp_bbr') is True
    assert kernel.proc.get('net.ipv4.tcp_available_congestion_control') == 'reno cubic bbr'


# --------------------------------------------------------------------------- default routes

def test_default_route_interfaces(monkeypatch):
    texts = {'/proc/net/route': ROUTE, '/proc/net/ipv6_route': IPV6_ROUTE}
    monkeypatch.setattr(congestion.files, 'read_text', texts.get)
    assert congestion.default_route_interfaces() == ['eth0', 'wg0', 'vlan7']


def test_default_route_interfaces_ipv6_only(monkeypatch):
    texts = {'/proc/net/route': ROUTE.splitlines(True)[0], '/proc/net/ipv6_route': IPV6_ROUTE}
    monkeypatch.setattr(congestion.files, 'read_text', texts.get)
    assert congestion.default_route_interfaces() == ['eth0', 'vlan7']


def test_default_route_interfaces_without_routes(monkeypatch):
    monkeypatch.setattr(congestion.files, 'read_text', lambda path: None)
    assert congestion.default_route_interfaces() == []


@pytest.mark.skipif(not os.path.exists('/proc/net/route'), reason='no /proc/net/route')
def test_default_route_interfaces_of_the_host_exist():
    names = congestion.default_route_interfaces()
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
        monkeypatch.setattr(congestion, name, _untouched)
    result = run_module(tcp_congestion.main, {'algorithm': algorithm, 'state': state})
    assert result['rc'] == 1
    assert result['msg'] == ('algorithm: %r is not a kernel congestion control name such as bbr or cubic.'
                             % algorithm)


@pytest.mark.parametrize('algorithm', ['bbr', 'cubic', 'reno', 'bbr2', 'dctcp', 'highspeed', 'cdg'])
def test_valid_algorithm_names_pass_validation(run_module, monkeypatch, algorithm):
    seen = []
    monkeypatch.setattr(congestion, 'verified',
                        lambda module: seen.append(module.params['algorithm']) or {'changed': False})
    result = run_module(tcp_congestion.main, {'algorithm': algorithm, 'state': 'verified'})
    assert result['rc'] == 0
    assert seen == [algorithm]


def test_algorithm_with_a_trailing_newline_is_refused(run_module, monkeypatch):
    monkeypatch.setattr(congestion, 'available', _untouched)
    monkeypatch.setattr(congestion, 'verified', _untouched)
    result = run_module(tcp_congestion.main, {'algorithm': 'bbr\n', 'state': 'verified'})
    assert result['rc'] == 1
    assert result['msg'] == "algorithm: 'bbr\\n' is not a kernel congestion control name such as bbr or cubic."


# --------------------------------------------------------------------------- available()

def test_available_fails_when_the_kernel_lacks_the_algorithm(kernel, tmp_path):
    kernel.files['/lib/modules/%s/modules.builtin' % FAKE_RELEASE] = builtin_list('ipv4/tcp_cubic')
    kernel.config['CONFIG_TCP_CONG_BBR'] = 'n'
    module = StubModule(tmp_path, bins=())               # no modprobe either
    with pytest.raises(Failed) as info:
        congestion.available(module)
    assert info.value.result['msg'] == (
        "bbr_algorithm (the algorithm option): 'bbr' is not a congestion control of kernel %s: it is neither built "
        "in nor available as module tcp_bbr. This host offers: reno cubic (available now). Set bbr_algorithm to one "
        "of these, or boot a kernel built with CONFIG_TCP_CONG_BBR (BBR: Linux 4.9 or later; every current "
        "distribution kernel has it as a module); inside a container, the host's kernel decides: load tcp_bbr on "
        "the host." % FAKE_RELEASE)
    assert info.value.result['kernel'] == FAKE_RELEASE
    assert info.value.result['loaded'] == []
    assert not os.path.exists(module.params['modules_load_file'])


def test_an_unknown_algorithm_is_refused_naming_the_variable_and_what_the_host_offers(kernel, tmp_path):
    """-e bbr_algorithm=vegas9 (issue 15): the refusal names bbr_algorithm and its value, lists what the host has
    (available now, and the loadable congestion control modules from modules.dep), and claims no BBR version fact
    about another algorithm."""
    kernel.files['/lib/modules/%s/modules.dep' % FAKE_RELEASE] = (
        'kernel/net/ipv4/tcp_bbr.ko.xz:\nkernel/net/ipv4/tcp_diag.ko.xz: kernel/net/ipv4/inet_diag.ko.xz\n'
        'kernel/net/ipv4/tcp_htcp.ko.xz:\nkernel/net/ipv4/tcp_vegas.ko.xz:\nkernel/net/ipv4/tcp_veno.ko.xz: '
        'kernel/net/ipv4/tcp_vegas.ko.xz\nkernel/net/sched/sch_fq.ko.xz:\n')
    kernel.config['CONFIG_TCP_CONG_VEGAS9'] = 'n'
    module = StubModule(tmp_path, algorithm='vegas9')
    with pytest.raises(Failed) as info:
        congestion.available(module)
    message = info.value.result['msg']
    assert message.startswith("bbr_algorithm (the algorithm option): 'vegas9' is not a congestion control of "
                              "kernel %s" % FAKE_RELEASE), message
    assert 'This host offers: reno cubic (available now), bbr htcp vegas veno (loadable modules).' in message
    assert 'CONFIG_TCP_CONG_VEGAS9' in message
    assert '4.9' not in message and 'BBR' not in message
    assert module.commands == [] or all('--dry-run' in argv for argv in module.commands)


def test_available_fails_when_nothing_is_known_about_the_algorithm(kernel, tmp_path):
    module = StubModule(tmp_path, algorithm='htcp',
                        respond=lambda argv: (1, '', 'modprobe: FATAL: Module tcp_htcp not found'))
    with pytest.raises(Failed) as info:
        congestion.available(module)
    message = info.value.result['msg']
    assert message.startswith("bbr_algorithm (the algorithm option): 'htcp' is not a congestion control of kernel %s"
                              % FAKE_RELEASE)
    assert 'CONFIG_TCP_CONG_HTCP' in message
    assert module.commands == [['/usr/sbin/modprobe', '--dry-run', '--first-time', 'tcp_htcp']]


def test_available_loads_and_persists_modules(kernel, net, tmp_path):
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'm', 'CONFIG_NET_SCH_FQ': 'm'})
    module = StubModule(tmp_path, qdisc='fq', interfaces=['ens3'], header='# Ansible managed\n', respond=net)
    result = congestion.available(module)
    path = module.params['modules_load_file']
    assert result['changed'] is True
    assert result['algorithm_source'] == 'module'
    assert result['qdisc_source'] == 'module'
    assert result['qdisc_available'] is True
    assert result['loaded'] == ['tcp_bbr', 'sch_fq']
    assert read(path) == '# Ansible managed\ntcp_bbr\nsch_fq\n'
    assert result['interfaces'] == {'ens3': {'before': 'fq_codel', 'after': 'fq'}}
    assert module.commands == [
        ['/usr/sbin/modprobe', 'tcp_bbr'],
        ['/usr/sbin/modprobe', 'sch_fq'],
        SHOW,
        tc('replace dev ens3 root fq'),
    ]
    assert result['diff'] == [lsmod_diff('tcp_bbr', 'sch_fq'),
                              file_diff(path, '', '# Ansible managed\ntcp_bbr\nsch_fq\n'),
                              qdisc_diff('ens3', 'fq_codel', 'fq')]
    assert record_of(module) == {'ens3': 'fq_codel'}          # for state=absent
    # loaded now: a second run loads nothing
    again = StubModule(tmp_path, qdisc='fq', interfaces=['ens3'], header='# Ansible managed\n', respond=net)
    assert congestion.available(again)['changed'] is False
    assert again.commands == [SHOW]


def test_available_check_mode_changes_nothing(kernel, tmp_path):
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'm'})
    module = StubModule(tmp_path, qdisc='none', check_mode=True)
    result = congestion.available(module)
    assert result['changed'] is True
    assert result['loaded'] == ['tcp_bbr']
    assert result['diff'] == [lsmod_diff('tcp_bbr'),
                              file_diff(module.params['modules_load_file'], '', 'tcp_bbr\n')]
    assert module.commands == []
    assert not os.path.exists(module.params['modules_load_file'])
    assert not os.path.exists(module.params['state_dir'])


def test_available_check_mode_with_loadable_modules_reports_everything_and_changes_nothing(kernel, net, tmp_path):
    # tcp_bbr and sch_fq are module files modprobe finds, not loaded; no kernel config, no modules.builtin
    kernel.module_files.update({'tcp_bbr', 'sch_fq'})
    module = StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=net, check_mode=True)
    result = congestion.available(module)
    path = module.params['modules_load_file']
    assert result['changed'] is True
    assert (result['algorithm_source'], result['qdisc_source'], result['qdisc_available']) == ('module', 'module',
                                                                                               True)
    assert result['loaded'] == ['tcp_bbr', 'sch_fq']
    assert result['interfaces'] == {'ens3': {'before': 'fq_codel', 'after': 'fq'},
                                    'ens4': {'before': 'mq/fq_codel', 'after': 'mq/fq'}}
    assert result['diff'] == [lsmod_diff('tcp_bbr', 'sch_fq'),
                              file_diff(path, '', 'tcp_bbr\nsch_fq\n'),
                              qdisc_diff('ens3', 'fq_codel', 'fq'),
                              qdisc_diff('ens4', 'mq/fq_codel', 'mq/fq')]
    assert module.commands == [['/usr/sbin/modprobe', '--dry-run', '--first-time', 'tcp_bbr'],
                               ['/usr/sbin/modprobe', '--dry-run', '--first-time', 'sch_fq'],
                               SHOW]
    assert changes(module) == []
    assert kernel.sys_module == set()
    assert net.state() == STOCK
    assert not os.path.exists(path)
    assert not os.path.exists(module.params['state_dir'])


def test_available_with_the_module_already_loaded(kernel, tmp_path):
    kernel.sys_module.update({'tcp_bbr', 'tcp_bbr/initstate'})
    kernel.available('reno cubic bbr')
    module = StubModule(tmp_path, qdisc='none')
    result = congestion.available(module)
    assert result['algorithm_source'] == 'module'
    assert result['loaded'] == []
    assert module.commands == []
    assert read(module.params['modules_load_file']) == 'tcp_bbr\n'       # still loaded at boot
    assert congestion.available(StubModule(tmp_path, qdisc='none'))['changed'] is False


def test_available_builtin_removes_a_stale_modules_load_file(kernel, net, proc, tmp_path):
    kernel.files['/lib/modules/%s/modules.builtin' % FAKE_RELEASE] = builtin_list('ipv4/tcp_bbr', 'sched/sch_fq')
    kernel.available('reno cubic bbr')
    reboot_with_fq(net, proc)
    # no interfaces given: the default-route interface is used
    kernel.files['/proc/net/route'] = default_route('ens3')
    kernel.files['/proc/net/ipv6_route'] = ''
    module = StubModule(tmp_path, qdisc='fq', interfaces=[], respond=net)
    os.makedirs(os.path.dirname(module.params['modules_load_file']))
    with open(module.params['modules_load_file'], 'w') as handle:
        handle.write('tcp_bbr\n')
    result = congestion.available(module)
    assert result['algorithm_source'] == 'builtin'
    assert result['qdisc_source'] == 'builtin'
    assert result['loaded'] == []
    assert result['changed'] is True
    assert not os.path.exists(module.params['modules_load_file'])
    assert result['diff'] == [file_diff(module.params['modules_load_file'], 'tcp_bbr\n', '')]
    assert result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'fq'}}
    assert module.commands == [SHOW]
    assert not os.path.exists(module.params['state_dir'])     # fq was there before: nothing recorded
    # and a second run has nothing to do
    again = congestion.available(StubModule(tmp_path, qdisc='fq', interfaces=[], respond=net))
    assert again['changed'] is False


def test_available_modprobe_failure(kernel, tmp_path):
    kernel.config['CONFIG_TCP_CONG_BBR'] = 'm'
    module = StubModule(tmp_path, qdisc='none',
                        respond=lambda argv: (1, '', 'modprobe: ERROR: could not insert tcp_bbr: Operation not '
                                                     'permitted\n'))
    with pytest.raises(Failed) as info:
        congestion.available(module)
    assert info.value.result['msg'] == ('modprobe tcp_bbr failed on kernel %s: modprobe: ERROR: could not insert '
                                        'tcp_bbr: Operation not permitted' % FAKE_RELEASE)


def test_available_module_without_modprobe_fails(kernel, tmp_path):
    kernel.config['CONFIG_TCP_CONG_BBR'] = 'm'
    with pytest.raises(Failed, match='tcp_bbr is a loadable module but modprobe is missing; install kmod.'):
        congestion.available(StubModule(tmp_path, qdisc='none', bins=()))


def test_available_without_fq_warns_and_continues(kernel, net, tmp_path):
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'y', 'CONFIG_NET_SCH_FQ': 'n'})
    module = StubModule(tmp_path, qdisc='fq', interfaces=['ens3'], respond=net)
    result = congestion.available(module)
    assert result['qdisc_available'] is False
    assert result['qdisc_source'] == 'missing'
    assert result['interfaces'] == {}
    assert module.warnings == [
        'The fq qdisc (sch_fq) is not available on kernel %s (missing); continuing without it. BBR paces its own '
        'flows on Linux 4.13 and later, so it still works.' % FAKE_RELEASE]
    assert module.commands == [['/usr/sbin/modprobe', '--dry-run', '--first-time', 'sch_fq']]
    assert net.state() == STOCK


def test_without_fq_another_algorithm_gets_no_claim_about_bbr(kernel, net, tmp_path):
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_NET_SCH_FQ': 'n'})
    module = StubModule(tmp_path, algorithm='cubic', qdisc='fq', interfaces=['ens3'], respond=net)
    congestion.available(module)
    assert module.warnings == [
        'The fq qdisc (sch_fq) is not available on kernel %s (missing); continuing without it.' % FAKE_RELEASE]


def fq_kernel(kernel):
    """bbr and sch_fq built in: available() loads nothing and goes straight to the qdiscs."""
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'y', 'CONFIG_NET_SCH_FQ': 'y'})
    return kernel


def test_available_missing_interface_fails_before_changing_qdiscs(kernel, net, tmp_path):
    fq_kernel(kernel)
    module = StubModule(tmp_path, qdisc='fq', interfaces=['lo', 'nosuch0'], respond=net)
    with pytest.raises(Failed) as info:
        congestion.available(module)
    assert info.value.result['msg'] == (
        'interfaces: nosuch0 do not exist on this host (it has ens3, ens4, lo); name existing interfaces or leave '
        'the list empty for the default-route interfaces.')
    assert module.commands == []


def test_available_without_tc_fails(kernel, net, tmp_path):
    fq_kernel(kernel)
    module = StubModule(tmp_path, qdisc='fq', interfaces=['ens3'], bins=('modprobe',), respond=net)
    with pytest.raises(Failed, match='^tc is missing; install iproute2 to change the qdisc of ens3.$'):
        congestion.available(module)
    assert module.commands == []


# --------------------------------------------------------------------------- fq on every TX queue (available)

def test_available_records_the_qdiscs_it_replaces(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.add('wan0')
    net.run('replace dev wan0 root fq')              # fq already there: not ours, not recorded
    module = StubModule(tmp_path, interfaces=['ens3', 'wan0', 'lo'], respond=net)
    result = congestion.available(module)
    assert result['changed'] is True
    # lo has no queue (noqueue) and nothing below it: left alone, with a warning
    assert result['interfaces'] == {'ens3': {'before': 'fq_codel', 'after': 'fq'},
                                    'wan0': {'before': 'fq', 'after': 'fq'}}
    assert record_of(module) == {'ens3': 'fq_codel'}
    assert net.state() == dict(STOCK, ens3='fq 8002:', wan0='fq 8001:')
    assert module.commands == [SHOW, tc('replace dev ens3 root fq')]
    assert module.warnings == ['lo has no queue of its own (noqueue) and no device below it; it is left without fq '
                               '(BBR paces its flows itself on Linux 4.13 and later).']


def test_available_puts_fq_on_the_devices_below_a_device_without_a_queue(kernel, net, tmp_path, monkeypatch):
    # a bond (noqueue, like bridges and VLANs) on ens3 and the multiqueue ens4: fq goes where the packets queue
    fq_kernel(kernel)
    net.add('bond0', default='noqueue')
    monkeypatch.setattr(congestion, 'lower_devices', lambda name: ['ens3', 'ens4'] if name == 'bond0' else [])
    module = StubModule(tmp_path, interfaces=['bond0'], respond=net)
    result = congestion.available(module)
    assert result['interfaces'] == {'ens3': {'before': 'fq_codel', 'after': 'fq'},
                                    'ens4': {'before': 'mq/fq_codel', 'after': 'mq/fq'}}
    assert module.warnings == ['bond0 has no queue of its own (noqueue); fq goes on the devices below it: ens3, ens4.']
    assert record_of(module) == {'ens3': 'fq_codel', 'ens4': 'mq/fq_codel'}


def test_the_devices_below_a_device_are_read_from_sysfs_for_real(veth_netns):
    """congestion.lower_devices, which the test above stands in for, on a real macvlan over a veth (sysfs's lower_*
    links, in a network namespace of the test's own: sysfs shows its devices)."""
    made = subprocess.run(['ip', '-n', veth_netns, 'link', 'add', 'link', 'bdp0', 'name', 'mv0', 'type', 'macvlan'],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip('no macvlan here: %s' % made.stderr.strip())
    code = ('import json; from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import congestion; '
            'print(json.dumps([congestion.lower_devices(name) for name in ("mv0", "bdp0", "none")]))')
    done = subprocess.run(['ip', 'netns', 'exec', veth_netns, sys.executable, '-c', code], capture_output=True,
                          text=True, check=False, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [['bdp0'], [], []]


def test_available_puts_fq_under_mq_on_a_multiqueue_nic(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.links['ens4']['ingress'] = True              # an ingress qdisc is no TX queue
    module = StubModule(tmp_path, interfaces=['ens4'], respond=net)
    result = congestion.available(module)
    assert result['changed'] is True
    assert result['interfaces'] == {'ens4': {'before': 'mq/fq_codel', 'after': 'mq/fq'}}
    assert result['diff'] == [qdisc_diff('ens4', 'mq/fq_codel', 'mq/fq')]
    # the classes of the default mq 0: cannot be addressed: a new mq 1: first, then fq under each queue
    assert module.commands == [SHOW,
                               tc('replace dev ens4 root handle 1: mq'),
                               tc('replace dev ens4 parent 1:2 fq'),
                               tc('replace dev ens4 parent 1:1 fq')]
    assert tc('replace dev ens4 root fq') not in module.commands          # never one fq over all queues
    assert net.state()['ens4'] == 'mq 1: fq 8002: fq 8001:'
    assert record_of(module) == {'ens4': 'mq/fq_codel'}
    # a second run finds fq on every queue
    again = StubModule(tmp_path, interfaces=['ens4'], respond=net)
    result = congestion.available(again)
    assert result['changed'] is False
    assert result['interfaces'] == {'ens4': {'before': 'mq/fq', 'after': 'mq/fq'}}
    assert result['diff'] == []
    assert again.commands == [SHOW]
    assert record_of(again) == {'ens4': 'mq/fq_codel'}


def test_available_completes_a_configured_mq(kernel, net, tmp_path):
    # someone put mq 1: in place and fq on the first queue only: only the second queue changes
    fq_kernel(kernel)
    net.run('replace dev ens4 root handle 1: mq')
    net.run('replace dev ens4 parent 1:1 fq')
    module = StubModule(tmp_path, interfaces=['ens4'], respond=net)
    result = congestion.available(module)
    assert result['interfaces'] == {'ens4': {'before': 'mq/fq+fq_codel', 'after': 'mq/fq'}}
    assert module.commands == [SHOW, tc('replace dev ens4 parent 1:2 fq')]
    assert net.state()['ens4'] == 'mq 1: fq 8001: fq 8002:'
    assert record_of(module) == {'ens4': 'mq/fq+fq_codel'}
    # absent gives the whole NIC back to the kernel
    congestion.absent(StubModule(tmp_path, state='absent', respond=net))
    assert net.state() == STOCK


def test_available_after_a_reboot_with_default_qdisc_fq_is_unchanged(kernel, net, proc, tmp_path):
    fq_kernel(kernel)
    reboot_with_fq(net, proc)                       # and no record: the kernel attached fq, not this module
    module = StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=net)
    result = congestion.available(module)
    assert result['changed'] is False
    assert result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'fq'},
                                    'ens4': {'before': 'mq/fq', 'after': 'mq/fq'}}
    assert result['diff'] == []
    assert module.commands == [SHOW]
    assert net.state() == REBOOTED
    assert record_of(module) is None


def test_available_leaves_a_configured_root_alone(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.run('replace dev ens3 root handle 1: htb')
    module = StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=net)
    result = congestion.available(module)
    assert result['interfaces'] == {'ens3': {'before': 'htb', 'after': 'htb'},
                                    'ens4': {'before': 'mq/fq_codel', 'after': 'mq/fq'}}
    assert module.warnings == [
        'ens3 has the root qdisc htb 1: that someone configured; it is left alone (fq would replace that '
        'configuration). Remove it, or add fq to it yourself, to pace BBR with fq.']
    assert [argv for argv in module.commands if 'ens3' in argv] == []
    assert record_of(module) == {'ens4': 'mq/fq_codel'}
    # nor does absent touch it
    undo = StubModule(tmp_path, state='absent', respond=net)
    assert list(congestion.absent(undo)['interfaces']) == ['ens4']
    assert [argv for argv in undo.commands if 'ens3' in argv] == []
    assert net.state() == dict(STOCK, ens3='htb 1:')


def test_available_keeps_the_first_recorded_qdisc(kernel, net, proc, tmp_path):
    fq_kernel(kernel)
    net.add('wan0')
    congestion.available(StubModule(tmp_path, interfaces=['ens3'], respond=net))
    # since then someone deleted the fq and default_qdisc became pfifo_fast
    proc.set('net.core.default_qdisc', 'pfifo_fast')
    net.run('del dev ens3 root')
    again = congestion.available(StubModule(tmp_path, interfaces=['ens3', 'wan0'], respond=net))
    assert again['interfaces']['ens3'] == {'before': 'pfifo_fast', 'after': 'fq'}
    module = StubModule(tmp_path)
    assert record_of(module) == {'ens3': 'fq_codel', 'wan0': 'fq_codel'}
    # a third run finds fq everywhere: nothing changes, the record stays as it is
    third = congestion.available(StubModule(tmp_path, interfaces=['ens3', 'wan0'], respond=net))
    assert third['changed'] is False
    assert record_of(module) == {'ens3': 'fq_codel', 'wan0': 'fq_codel'}


def test_available_check_mode_records_nothing(kernel, net, tmp_path):
    fq_kernel(kernel)
    module = StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=net, check_mode=True)
    result = congestion.available(module)
    assert result['changed'] is True
    assert result['interfaces'] == {'ens3': {'before': 'fq_codel', 'after': 'fq'},
                                    'ens4': {'before': 'mq/fq_codel', 'after': 'mq/fq'}}
    assert net.state() == STOCK
    assert not os.path.exists(module.params['state_dir'])
    assert module.commands == [SHOW]


def test_available_records_before_it_changes_the_qdisc(kernel, net, tmp_path):
    # the record is written before tc runs, so an interrupted run can still be undone
    fq_kernel(kernel)
    seen = []

    def tc_spy(argv):
        if 'replace' in argv:
            seen.append(record_of(module))
        return net(argv)

    module = StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=tc_spy)
    congestion.available(module)
    assert seen == [{'ens3': 'fq_codel'}] + [{'ens3': 'fq_codel', 'ens4': 'mq/fq_codel'}] * 3


def test_available_replace_failure_keeps_the_record(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.errors['replace'] = 'RTNETLINK answers: Operation not permitted\n'
    module = StubModule(tmp_path, interfaces=['ens3'], respond=net)
    with pytest.raises(Failed) as info:
        congestion.available(module)
    assert info.value.result['msg'] == ('/usr/sbin/tc qdisc replace dev ens3 root fq failed: RTNETLINK answers: '
                                        'Operation not permitted')
    assert net.state() == STOCK
    assert record_of(module) == {'ens3': 'fq_codel'}


def test_available_failure_under_mq_keeps_the_record(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.errors[('replace', 'ens4')] = 'RTNETLINK answers: Operation not permitted\n'
    module = StubModule(tmp_path, interfaces=['ens4'], respond=net)
    with pytest.raises(Failed, match='^/usr/sbin/tc qdisc replace dev ens4 root handle 1: mq failed: '):
        congestion.available(module)
    assert changes(module) == [tc('replace dev ens4 root handle 1: mq')]
    assert record_of(module) == {'ens4': 'mq/fq_codel'}


# --------------------------------------------------------------------------- absent()

def write_modules_load_file(module, text='tcp_bbr\nsch_fq\n'):
    os.makedirs(os.path.dirname(module.params['modules_load_file']))
    with open(module.params['modules_load_file'], 'w') as handle:
        handle.write(text)


def write_record(module, record):
    os.makedirs(module.params['state_dir'], exist_ok=True)
    with open(record_path(module), 'w') as handle:
        json.dump(record, handle)


def absent(tmp_path, net, **params):
    """Run absent() (the default_qdisc restored to fq_codel, as the net fixture starts); returns module, result."""
    module = StubModule(tmp_path, state='absent', respond=net, **params)
    return module, congestion.absent(module)


def test_absent_after_available_restores_the_kernel_default(kernel, net, tmp_path, fake_release):
    fq_kernel(kernel)
    net.add('wan0')
    net.run('replace dev wan0 root fq')              # fq that was there before
    congestion.available(StubModule(tmp_path, interfaces=['ens3', 'ens4', 'wan0', 'lo'], respond=net))
    assert net.state() == {'lo': 'noqueue 0:', 'ens3': 'fq 8002:', 'ens4': 'mq 1: fq 8004: fq 8003:',
                           'wan0': 'fq 8001:'}
    write_record(StubModule(tmp_path), dict(record_of(StubModule(tmp_path)), lo='noqueue'))   # by an older version
    net.run('replace dev lo root fq')
    module = StubModule(tmp_path, state='absent', respond=net)
    write_modules_load_file(module)
    result = congestion.absent(module)
    assert result['changed'] is True
    assert result['kernel'] == fake_release
    assert net.state() == dict(STOCK, wan0='fq 8001:')
    assert result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'kernel default (was fq_codel)'},
                                    'ens4': {'before': 'mq/fq', 'after': 'kernel default (was mq/fq_codel)'},
                                    'lo': {'before': 'fq', 'after': 'kernel default (was noqueue)'}}
    # handles the module gave (not 0:): a plain del gives the kernel default back
    assert module.commands == [SHOW, tc('del dev ens3 root'), tc('del dev ens4 root'), tc('del dev lo root')]
    path = module.params['modules_load_file']
    assert result['diff'] == [
        file_diff(path, 'tcp_bbr\nsch_fq\n', ''),
        qdisc_diff('ens3', 'fq', 'kernel default (was fq_codel)'),
        qdisc_diff('ens4', 'mq/fq', 'kernel default (was mq/fq_codel)'),
        qdisc_diff('lo', 'fq', 'kernel default (was noqueue)'),
    ]
    assert not os.path.exists(path)
    assert not os.path.exists(record_path(module))
    assert not os.path.exists(module.params['state_dir'])          # removed once empty


def test_absent_after_a_reboot_with_default_qdisc_fq(kernel, net, proc, tmp_path):
    # the issue: fq attached at boot from default_qdisc=fq has handle 0:, and "tc qdisc del" fails with
    # "Cannot delete qdisc with handle of zero"; a pfifo in its place can be deleted
    fq_kernel(kernel)
    reboot_with_fq(net, proc)
    proc.set('net.core.default_qdisc', 'fq_codel')   # restored by the bbr role before absent runs
    module, result = absent(tmp_path, net)
    assert result['changed'] is True
    assert result['interfaces'] == {
        'ens3': {'before': 'fq', 'after': 'kernel default (default_qdisc fq_codel)'},
        'ens4': {'before': 'mq/fq', 'after': 'kernel default (default_qdisc fq_codel)'}}
    assert module.commands == [SHOW,
                               tc('replace dev ens3 root pfifo'), tc('del dev ens3 root'),
                               tc('replace dev ens4 root pfifo'), tc('del dev ens4 root')]
    assert net.state() == STOCK
    assert net.show() == STOCK_SHOW
    assert record_of(module) is None
    # and again: nothing left to do
    again, result = absent(tmp_path, net)
    assert result['changed'] is False
    assert again.commands == [SHOW]


def test_absent_after_available_and_a_reboot(kernel, net, proc, tmp_path):
    # recorded interfaces whose fq the reboot attached (handle 0:) need the pfifo too
    fq_kernel(kernel)
    congestion.available(StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=net))
    reboot_with_fq(net, proc)
    proc.set('net.core.default_qdisc', 'fq_codel')
    module, result = absent(tmp_path, net)
    assert result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'kernel default (was fq_codel)'},
                                    'ens4': {'before': 'mq/fq', 'after': 'kernel default (was mq/fq_codel)'}}
    assert changes(module) == [tc('replace dev ens3 root pfifo'), tc('del dev ens3 root'),
                               tc('replace dev ens4 root pfifo'), tc('del dev ens4 root')]
    assert net.state() == STOCK
    assert record_of(module) is None


def test_absent_leaves_unrecorded_fq_while_default_qdisc_is_fq(kernel, net, proc, tmp_path):
    # default_qdisc is still fq (the bbr role did not restore it, or someone else wants fq): not ours to remove
    reboot_with_fq(net, proc)
    module, result = absent(tmp_path, net)
    assert result == {'changed': False, 'kernel': FAKE_RELEASE, 'interfaces': {}, 'diff': []}
    assert module.commands == []
    assert net.state() == REBOOTED


def test_absent_leaves_unrecorded_fq_when_default_qdisc_is_unknown(kernel, net, proc, tmp_path):
    # without net.core.default_qdisc (some containers) nobody can tell whose the boot-time fq is
    reboot_with_fq(net, proc)
    os.unlink(proc.path('net.core.default_qdisc'))
    module, result = absent(tmp_path, net)
    assert result['changed'] is False
    assert result['interfaces'] == {}
    assert changes(module) == []
    assert net.state() == REBOOTED


def test_absent_leaves_fq_that_was_there_before(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.add('wan0')
    net.run('replace dev ens3 root fq')
    net.run('replace dev wan0 root fq')
    first = congestion.available(StubModule(tmp_path, interfaces=['ens3', 'wan0'], respond=net))
    assert first['changed'] is False
    assert record_of(StubModule(tmp_path)) is None
    module, result = absent(tmp_path, net, interfaces=['ens3', 'wan0'])
    assert result['changed'] is False
    assert result['interfaces'] == {}
    assert module.commands == [SHOW]
    assert net.state() == dict(STOCK, ens3='fq 8001:', wan0='fq 8002:')


def test_absent_looks_only_at_the_record_not_at_interfaces(kernel, net, tmp_path):
    net.add('wan0')
    net.run('replace dev ens3 root fq')
    net.run('replace dev wan0 root fq')
    module = StubModule(tmp_path, state='absent', interfaces=['wan0', 'nosuch0'], respond=net)
    write_record(module, {'ens3': 'fq_codel'})
    result = congestion.absent(module)   # nosuch0 does not exist: no failure, it is not looked at
    assert list(result['interfaces']) == ['ens3']
    assert net.state() == dict(STOCK, wan0='fq 8002:')
    assert changes(module) == [tc('del dev ens3 root')]


def test_absent_leaves_a_recorded_interface_that_is_no_longer_fq(kernel, net, tmp_path):
    net.run('replace dev ens3 root cake')            # changed by someone else since
    module = StubModule(tmp_path, state='absent', respond=net)
    write_record(module, {'ens3': 'fq_codel'})
    result = congestion.absent(module)
    assert result['changed'] is True                 # the record is removed
    assert result['interfaces'] == {}
    assert result['diff'] == []
    assert net.state()['ens3'] == 'cake 8001:'
    assert module.commands == [SHOW]
    assert record_of(module) is None


def test_absent_leaves_an_interface_recorded_as_fq(kernel, net, tmp_path):
    net.run('replace dev ens3 root fq')
    net.run('replace dev ens4 root handle 1: mq')
    net.run('replace dev ens4 parent 1:1 fq')
    net.run('replace dev ens4 parent 1:2 fq')
    module = StubModule(tmp_path, state='absent', respond=net)
    write_record(module, {'ens3': 'fq', 'ens4': 'mq/fq'})   # never written by the module; not ours to remove
    result = congestion.absent(module)
    assert result['interfaces'] == {}
    assert changes(module) == []
    assert net.state() == dict(STOCK, ens3='fq 8001:', ens4='mq 1: fq 8002: fq 8003:')
    assert record_of(module) is None


def test_absent_ignores_a_recorded_interface_that_is_gone(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.add('wan0')
    congestion.available(StubModule(tmp_path, interfaces=['ens3', 'wan0'], respond=net))
    net.remove('wan0')                               # e.g. a VPN interface torn down since
    module, result = absent(tmp_path, net)
    assert result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'kernel default (was fq_codel)'}}
    assert module.commands == [SHOW, tc('del dev ens3 root')]
    assert record_of(module) is None


def test_absent_with_only_vanished_interfaces_needs_no_tc(kernel, net, tmp_path):
    module = StubModule(tmp_path, state='absent', bins=(), respond=net)
    write_record(module, {'wg9': 'noqueue'})
    result = congestion.absent(module)
    assert result['changed'] is True
    assert result['interfaces'] == {}
    assert module.commands == []
    assert not os.path.exists(module.params['state_dir'])


def test_absent_check_mode_changes_nothing_and_keeps_the_record(kernel, net, tmp_path):
    fq_kernel(kernel)
    congestion.available(StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=net))
    after_available = net.state()
    module = StubModule(tmp_path, state='absent', check_mode=True, respond=net)
    write_modules_load_file(module)
    result = congestion.absent(module)
    assert result['changed'] is True
    assert result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'kernel default (was fq_codel)'},
                                    'ens4': {'before': 'mq/fq', 'after': 'kernel default (was mq/fq_codel)'}}
    assert len(result['diff']) == 3
    assert module.commands == [SHOW]
    assert net.state() == after_available
    assert os.path.exists(module.params['modules_load_file'])
    assert record_of(module) == {'ens3': 'fq_codel', 'ens4': 'mq/fq_codel'}
    # the real run afterwards still has everything it needs
    _module, real = absent(tmp_path, net)
    assert real['interfaces'] == result['interfaces']
    assert net.state() == STOCK


def test_absent_twice_is_unchanged(kernel, net, tmp_path):
    fq_kernel(kernel)
    congestion.available(StubModule(tmp_path, interfaces=['ens3', 'ens4'], respond=net))
    assert absent(tmp_path, net)[1]['changed'] is True
    module, result = absent(tmp_path, net)
    assert result == {'changed': False, 'kernel': FAKE_RELEASE, 'interfaces': {}, 'diff': []}
    assert module.commands == [SHOW]
    assert net.state() == STOCK


def test_absent_keeps_a_state_dir_shared_with_other_records(kernel, net, tmp_path):
    fq_kernel(kernel)
    congestion.available(StubModule(tmp_path, interfaces=['ens3'], respond=net))
    module = StubModule(tmp_path, state='absent', respond=net)
    other = os.path.join(module.params['state_dir'], '90-bdp-wan-tune.conf.json')   # sysctl_dropin's record
    with open(other, 'w') as handle:
        handle.write('{"original": {}}\n')
    congestion.absent(module)
    assert os.listdir(module.params['state_dir']) == ['90-bdp-wan-tune.conf.json']


def rollback_failed(*errors):
    return ('The rollback of the qdiscs and module loading is incomplete: %s. Everything else was restored; fix '
            'the cause and run the rollback again.' % '; '.join(errors))


def test_absent_tc_failure_keeps_the_record(kernel, net, tmp_path):
    net.run('replace dev ens3 root fq')
    net.errors['del'] = 'RTNETLINK answers: Operation not permitted\n'
    module = StubModule(tmp_path, state='absent', respond=net)
    write_record(module, {'ens3': 'fq_codel'})
    with pytest.raises(Failed) as info:
        congestion.absent(module)
    assert info.value.result['msg'] == rollback_failed(
        '/usr/sbin/tc qdisc del dev ens3 root failed: RTNETLINK answers: Operation not permitted')
    assert info.value.result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'kernel default (was fq_codel)'}}
    assert record_of(module) == {'ens3': 'fq_codel'}                 # so that a retry still knows
    del net.errors['del']
    assert absent(tmp_path, net)[1]['changed'] is True
    assert net.state() == STOCK


def test_absent_goes_on_after_a_failing_interface(kernel, net, tmp_path):
    fq_kernel(kernel)
    net.add('wan0')
    congestion.available(StubModule(tmp_path, interfaces=['ens3', 'ens4', 'wan0'], respond=net))
    after_available = net.state()
    net.errors[('del', 'ens4')] = 'RTNETLINK answers: Device or resource busy\n'
    module = StubModule(tmp_path, state='absent', respond=net)
    write_modules_load_file(module)
    with pytest.raises(Failed) as info:
        congestion.absent(module)
    assert info.value.result['msg'] == rollback_failed(
        '/usr/sbin/tc qdisc del dev ens4 root failed: RTNETLINK answers: Device or resource busy')
    assert changes(module) == [tc('del dev ens3 root'), tc('del dev ens4 root'), tc('del dev wan0 root')]
    assert net.state() == dict(STOCK, ens4=after_available['ens4'], wan0='fq_codel 0:')
    assert record_of(module) == {'ens4': 'mq/fq_codel'}              # only the one that failed
    assert not os.path.exists(module.params['modules_load_file'])   # removed all the same
    # the retry finishes the job
    del net.errors[('del', 'ens4')]
    retry, result = absent(tmp_path, net)
    assert list(result['interfaces']) == ['ens4']
    assert net.state() == dict(STOCK, wan0='fq_codel 0:')
    assert record_of(retry) is None


def test_absent_reports_every_failure(kernel, net, proc, tmp_path):
    fq_kernel(kernel)
    reboot_with_fq(net, proc)
    proc.set('net.core.default_qdisc', 'fq_codel')
    net.errors['replace'] = 'RTNETLINK answers: Operation not permitted\n'
    module = StubModule(tmp_path, state='absent', respond=net)
    with pytest.raises(Failed) as info:
        congestion.absent(module)
    assert info.value.result['msg'] == rollback_failed(
        '/usr/sbin/tc qdisc replace dev ens3 root pfifo failed: RTNETLINK answers: Operation not permitted',
        '/usr/sbin/tc qdisc replace dev ens4 root pfifo failed: RTNETLINK answers: Operation not permitted')
    assert net.state() == REBOOTED
    assert record_of(module) is None                 # nothing recorded: the retry finds them as before
    del net.errors['replace']
    assert list(absent(tmp_path, net)[1]['interfaces']) == ['ens3', 'ens4']
    assert net.state() == STOCK


def test_absent_without_tc_fails_when_there_is_fq_to_remove(kernel, net, tmp_path):
    module = StubModule(tmp_path, state='absent', bins=(), respond=net)
    write_record(module, {'ens3': 'fq_codel'})
    with pytest.raises(Failed, match='^tc is missing; install iproute2 to change the qdisc of ens3.$'):
        congestion.absent(module)
    assert record_of(module) == {'ens3': 'fq_codel'}


def test_absent_with_qdisc_none_and_no_record_only_removes_the_file(kernel, net, tmp_path):
    net.run('replace dev ens3 root fq')
    module = StubModule(tmp_path, state='absent', qdisc='none', interfaces=['ens3'], bins=(), respond=net)
    write_modules_load_file(module, 'tcp_bbr\n')
    result = congestion.absent(module)
    assert result['changed'] is True
    assert result['interfaces'] == {}
    assert module.commands == []
    assert not os.path.exists(module.params['modules_load_file'])
    assert net.state()['ens3'] == 'fq 8001:'


def test_absent_with_qdisc_none_still_undoes_the_record(kernel, net, tmp_path):
    # the record, not the qdisc option, says what absent undoes (the option may have changed since)
    net.run('replace dev ens3 root fq')
    module = StubModule(tmp_path, state='absent', qdisc='none', respond=net)
    write_record(module, {'ens3': 'fq_codel'})
    result = congestion.absent(module)
    assert result['interfaces'] == {'ens3': {'before': 'fq', 'after': 'kernel default (was fq_codel)'}}
    assert net.state() == STOCK


def test_available_then_absent_on_an_interface_without_a_root_qdisc(kernel, net, tmp_path):
    # tc prints nothing for the root qdisc: recorded as 'none'
    fq_kernel(kernel)
    net.add('tun0', default='none')
    first = congestion.available(StubModule(tmp_path, interfaces=['tun0'], respond=net))
    assert first['interfaces'] == {'tun0': {'before': 'none', 'after': 'fq'}}
    assert record_of(StubModule(tmp_path)) == {'tun0': 'none'}
    module, result = absent(tmp_path, net)
    assert result['interfaces'] == {'tun0': {'before': 'fq', 'after': 'kernel default (was none)'}}
    assert changes(module) == [tc('del dev tun0 root')]
    assert net.state()['tun0'] == 'none'


def test_absent_with_a_garbage_record_changes_no_qdisc(kernel, net, tmp_path):
    net.run('replace dev ens3 root fq')
    module = StubModule(tmp_path, state='absent', respond=net)
    os.makedirs(module.params['state_dir'])
    with open(record_path(module), 'w') as handle:
        handle.write('{"ens3": "fq_co')              # truncated
    result = congestion.absent(module)
    assert result['interfaces'] == {}
    assert changes(module) == []
    assert net.state()['ens3'] == 'fq 8001:'


def test_state_dir_option(run_module, proc, tmp_path):
    """main() takes state_dir (default files.STATE_DIR, as documented by the state_dir fragment) and absent() uses
    it."""
    assert 'bdp.wan_tune.state_dir' in yaml.safe_load(tcp_congestion.DOCUMENTATION)['extends_documentation_fragment']
    doc = yaml.safe_load(state_dir_fragment.ModuleDocFragment.DOCUMENTATION)['options']['state_dir']
    assert doc['default'] == files.STATE_DIR
    assert doc['type'] == 'path'
    # default_qdisc fq: absent does not look at the host's qdiscs at all
    proc.set('net.core.default_qdisc', 'fq')
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
        congestion.verified(module)
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
    result = congestion.verified(module)
    assert result == {'changed': False, 'kernel': os.uname()[2], 'socket_algorithm': default, 'ss_algorithm': None}


# --------------------------------------------------------------------------- one call: kernel, defaults, socket

def _one_call(tmp_path, etc, **params):
    params.setdefault('sysctl_file', os.path.join(etc.etc, '90-bdp-wan-tune-bbr.conf'))
    params.setdefault('header', '# Ansible managed\n# bdp.wan_tune.bbr: congestion control bbr\n')
    params.setdefault('strict', False)
    params.setdefault('verify', True)
    return StubModule(tmp_path, **params)


def test_available_with_sysctl_file_sets_the_defaults_and_verifies_in_one_run(
        kernel, net, proc, etc, tmp_path, monkeypatch):
    fq_kernel(kernel)
    proc.set('net.core.rmem_max', '212992')          # the initial network namespace
    proc.set('net.ipv4.tcp_congestion_control', 'cubic')
    checked = []

    def verified(module):
        checked.append(proc.get('net.ipv4.tcp_congestion_control'))
        return {'changed': False, 'socket_algorithm': 'bbr', 'ss_algorithm': 'bbr'}

    monkeypatch.setattr(congestion, 'verified', verified)
    module = _one_call(tmp_path, etc, interfaces=['ens3'], respond=net)
    result = congestion.available(module)
    assert result['changed'] is True
    assert result['settings']['net.ipv4.tcp_congestion_control']['status'] == 'changed'
    assert result['settings']['net.core.default_qdisc'] == {
        'before': 'fq_codel', 'after': 'fq', 'wanted': 'fq', 'status': 'changed'}
    assert checked == ['bbr']                        # the socket check ran after the default was set
    assert result['socket_algorithm'] == 'bbr'
    assert result['interfaces']['ens3']['after'] == 'fq'
    with open(module.params['sysctl_file']) as handle:
        text = handle.read()
    # the header names the qdisc the file sets, on its last line (as the bbr role always wrote it)
    assert text.startswith('# Ansible managed\n# bdp.wan_tune.bbr: congestion control bbr, qdisc fq\n'), text
    assert 'net.ipv4.tcp_congestion_control = bbr\n' in text and 'net.core.default_qdisc = fq\n' in text
    # the diff has the kernel part and the file part
    headers = [item['before_header'] for item in result['diff']]
    assert 'ens3' in headers and module.params['sysctl_file'] in headers
    # a second run changes nothing, and the file can be rolled back by sysctl_dropin's engine (one record)
    again = congestion.available(_one_call(tmp_path, etc, interfaces=['ens3'], respond=net))
    assert again['changed'] is False
    assert os.path.exists(os.path.join(module.params['state_dir'], '90-bdp-wan-tune-bbr.conf.json'))


def test_available_with_sysctl_file_in_check_mode_predicts_and_changes_nothing(kernel, net, proc, etc, tmp_path):
    fq_kernel(kernel)
    proc.set('net.core.rmem_max', '212992')
    proc.set('net.ipv4.tcp_congestion_control', 'cubic')
    module = _one_call(tmp_path, etc, interfaces=['ens3'], respond=net, check_mode=True)
    result = congestion.available(module)
    assert result['changed'] is True
    assert result['settings']['net.ipv4.tcp_congestion_control']['status'] == 'changed'
    # the real socket check of check mode reports and does not fail: the change it verifies was not made
    assert 'socket_algorithm' in result
    assert not os.path.exists(module.params['sysctl_file'])
    assert proc.get('net.ipv4.tcp_congestion_control') == 'cubic'
    assert net.state() == STOCK


def test_available_with_sysctl_file_skips_the_socket_check_where_the_algorithm_is_not_allowed(
        kernel, proc, etc, tmp_path, monkeypatch):
    kernel.available('reno cubic bbr')
    kernel.config.update({'CONFIG_TCP_CONG_BBR': 'y'})
    proc.readonly('net.core.rmem_max', '212992')      # a container
    proc.set('net.ipv4.tcp_congestion_control', 'cubic')
    proc.set('net.ipv4.tcp_allowed_congestion_control', 'reno cubic')
    monkeypatch.setattr(congestion, 'verified', lambda module: pytest.fail('socket checked'))
    module = _one_call(tmp_path, etc, qdisc='none')
    result = congestion.available(module)
    assert 'net.ipv4.tcp_congestion_control' in result['skipped_keys']
    assert 'socket_algorithm' not in result
    assert any('net.ipv4.tcp_congestion_control was not set to bbr' in warning for warning in module.warnings)
    with pytest.raises(Failed) as failed:                    # strict: refused before anything changes
        congestion.available(_one_call(tmp_path, etc, qdisc='none', strict=True))
    assert 'strict is set' in failed.value.result['msg']
