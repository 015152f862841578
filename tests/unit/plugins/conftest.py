# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared fixtures: a fake /proc/sys tree and fake sysctl.d directories in tmp_path, and a fake host for the NIC survey
(sysfs, procfs and the SIOCETHTOOL ioctl)."""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import uuid

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import sysctl


class FakeProc(object):
    """A /proc/sys look-alike: one file per key, mode 0644 (writable) or 0444 (read-only)."""

    def __init__(self, root):
        self.root = str(root)

    def path(self, key):
        return sysctl.key_path(sysctl.normalize_key(key), self.root)

    def set(self, key, value, mode=0o644):
        path = self.path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.chmod(path, 0o644)
        with open(path, 'w') as handle:
            handle.write('%s\n' % value)
        os.chmod(path, mode)
        return path

    def readonly(self, key, value):
        return self.set(key, value, mode=0o444)

    def raw(self, key):
        with open(self.path(key)) as handle:
            return handle.read()

    def get(self, key):
        return ' '.join(self.raw(key).split())


@pytest.fixture
def proc(tmp_path, monkeypatch):
    """A fake /proc/sys; sysctl.PROC_SYS points at it for the test."""
    fake = FakeProc(tmp_path / 'proc_sys')
    os.makedirs(fake.root)
    monkeypatch.setattr(sysctl, 'PROC_SYS', fake.root)
    return fake


class FakeEtc(object):
    """sysctl.d directories (/etc, /run, /usr/lib) and /etc/sysctl.conf below tmp_path."""

    def __init__(self, root):
        root = str(root)
        self.etc = os.path.join(root, 'etc', 'sysctl.d')
        self.run = os.path.join(root, 'run', 'sysctl.d')
        self.usr = os.path.join(root, 'usr', 'lib', 'sysctl.d')
        self.dirs = (self.etc, self.run, self.usr)
        self.conf = os.path.join(root, 'etc', 'sysctl.conf')
        for directory in self.dirs:
            os.makedirs(directory)

    def write(self, directory, name, text):
        path = os.path.join(directory, name)
        with open(path, 'w') as handle:
            handle.write(text)
        return path

    def write_conf(self, text):
        with open(self.conf, 'w') as handle:
            handle.write(text)
        return self.conf


@pytest.fixture
def etc(tmp_path, monkeypatch):
    """Fake sysctl.d directories; sysctl.SYSCTL_DIRS and sysctl.SYSCTL_CONF point at them."""
    fake = FakeEtc(tmp_path / 'root')
    monkeypatch.setattr(sysctl, 'SYSCTL_DIRS', fake.dirs)
    monkeypatch.setattr(sysctl, 'SYSCTL_CONF', fake.conf)
    return fake


# ----------------------------------------------------------------------------- the NIC survey's host

class FakeNicHost(object):
    """sysfs (/sys/class/net, /sys/devices/system/cpu) and procfs (/proc/PID/comm, /proc/net/softnet_stat) below
    ``root``, and the kernel's side of the SIOCETHTOOL ioctl (``call``, put in place of ethtool.call): per
    interface its rings (rx, rx_max, tx, tx_max), coalescing (rx_usecs, adaptive_rx, adaptive_tx) and driver
    statistics ({name: value}), each None when the driver does not implement the query (EOPNOTSUPP).

    The set side (ETHTOOL_SRINGPARAM, ETHTOOL_SCOALESCE) changes those values as a driver would: a ring above its
    maximum or below ``ring_min`` is EINVAL, ``rounding`` (a function) turns a ring size asked into the one the
    driver takes (e1000e and ixgbe: a multiple of 8, ENA: a power of 2 at most), a driver with ``adaptive`` False
    (or 'rx': adaptive rx only, as ENA) refuses adaptive coalescing with EOPNOTSUPP, ``fail[(name, cmd)] =
    errno`` (or an exception to raise) makes one request fail (``fail_after`` requests of that kind succeed
    first).  Every set request is kept in ``sets`` as (name, cmd, values)."""

    def __init__(self, root):
        self.sys_class_net = str(root / 'sys' / 'class' / 'net')
        self.cpu_dir = str(root / 'sys' / 'devices' / 'system' / 'cpu')
        self.proc = str(root / 'proc')
        self.ethtool = {}
        self.requests = []
        self.sets = []
        self.fail = {}
        self.fail_after = {}
        for directory in (self.sys_class_net, self.cpu_dir, os.path.join(self.proc, 'net')):
            os.makedirs(directory)

    def write(self, path, value):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as handle:
            handle.write('%s\n' % value)

    def add_nic(self, name, driver=None, speed=-1, tx_queue_len=1000, numa_node=-1, counters=None,
                rings=None, coalescing=None, stats=None, ifindex=None, address='52:54:00:00:00:01', permaddr=None,
                adaptive=True, ring_min=1, rounding=None):
        """An interface; ``driver`` None makes a virtual one (no device/ directory), speed None no speed file;
        ``permaddr`` its permanent address (None: the device has none)."""
        base = os.path.join(self.sys_class_net, name)
        os.makedirs(base)
        self.write(os.path.join(base, 'ifindex'), ifindex or len(self.ethtool) + 2)
        self.write(os.path.join(base, 'address'), address)
        os.makedirs(os.path.join(base, 'statistics'))
        if driver:
            os.makedirs(os.path.join(base, 'device'))
            os.symlink('../../../../bus/pci/drivers/%s' % driver, os.path.join(base, 'device', 'driver'))
            self.write(os.path.join(base, 'device', 'numa_node'), numa_node)
        if speed is not None:
            self.write(os.path.join(base, 'speed'), speed)
        self.write(os.path.join(base, 'tx_queue_len'), tx_queue_len)
        self.set_counters(name, dict({'rx_missed_errors': 0, 'rx_dropped': 0, 'tx_dropped': 0}, **(counters or {})))
        self.ethtool[name] = {'rings': rings, 'coalescing': coalescing, 'stats': stats, 'permaddr': permaddr,
                              'adaptive': adaptive, 'ring_min': ring_min, 'rounding': rounding}

    def set_counters(self, name, counters):
        for key, value in counters.items():
            self.write(os.path.join(self.sys_class_net, name, 'statistics', key), value)

    def governors(self, *names):
        """CPU n gets the n-th governor (None: no cpufreq directory, as in a VM)."""
        for cpu, governor in enumerate(names):
            os.makedirs(os.path.join(self.cpu_dir, 'cpu%d' % cpu), exist_ok=True)
            if governor:
                self.write(os.path.join(self.cpu_dir, 'cpu%d' % cpu, 'cpufreq', 'scaling_governor'), governor)

    def process(self, pid, comm):
        self.write(os.path.join(self.proc, str(pid), 'comm'), comm)

    def softnet(self, text):
        with open(os.path.join(self.proc, 'net', 'softnet_stat'), 'w') as handle:
            handle.write(text)

    def call(self, name, request):
        """What the kernel answers: the request filled in, as linux/ethtool.h lays the structures out."""
        cmd = struct.unpack_from('=I', request)[0]
        self.requests.append((name, cmd))
        if name not in self.ethtool:
            raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
        data = self.ethtool[name]
        key = {ethtool.ETHTOOL_GRINGPARAM: 'rings', ethtool.ETHTOOL_GCOALESCE: 'coalescing',
               ethtool.ETHTOOL_SRINGPARAM: 'rings', ethtool.ETHTOOL_SCOALESCE: 'coalescing',
               ethtool.ETHTOOL_GPERMADDR: 'permaddr'}.get(cmd, 'stats')
        if data[key] is None:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
        if cmd in (ethtool.ETHTOOL_SRINGPARAM, ethtool.ETHTOOL_SCOALESCE):
            return self._set(name, cmd, data, request)
        if cmd == ethtool.ETHTOOL_GPERMADDR:
            raw = bytes(bytearray(int(part, 16) for part in data['permaddr'].split(':')))
            return struct.pack('=II', cmd, len(raw)) + raw
        reply = self._reply(cmd, data, struct.unpack_from('=III', request.ljust(12, b'\0')))
        assert len(reply) <= len(request), 'the request is too short for the reply (the kernel would fault)'
        return reply + request[len(reply):]

    def _set(self, name, cmd, data, request):
        """A set request: check it as a driver would, then keep the new values."""
        if (name, cmd) in self.fail:
            if self.fail_after.get((name, cmd), 0) <= 0:
                code = self.fail.pop((name, cmd))
                if isinstance(code, Exception):
                    raise code
                raise OSError(code, os.strerror(code))
            self.fail_after[(name, cmd)] -= 1
        if cmd == ethtool.ETHTOOL_SRINGPARAM:
            values = dict(zip(ethtool.RING_FIELDS, struct.unpack_from('=8I', request, 4)))
            _rx, rx_max, _tx, tx_max = data['rings']
            if values['rx'] > rx_max or values['tx'] > tx_max or min(values['rx'], values['tx']) < data['ring_min']:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            rounding = data['rounding'] or (lambda value: value)
            data['rings'] = (rounding(values['rx']), rx_max, rounding(values['tx']), tx_max)
        else:
            values = dict(zip(ethtool.COALESCE_FIELDS, struct.unpack_from('=22I', request, 4)))
            adaptive = data['adaptive']
            if (values['adaptive_rx'] and not adaptive) or (values['adaptive_tx'] and adaptive is not True):
                raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
            data['coalescing'] = (values['rx_usecs'], bool(values['adaptive_rx']), bool(values['adaptive_tx']))
        self.sets.append((name, cmd, values))
        return request

    def _reply(self, cmd, data, words):
        if cmd == ethtool.ETHTOOL_GRINGPARAM:
            rx, rx_max, tx, tx_max = data['rings']
            return struct.pack('=9I', cmd, rx_max, 0, 0, tx_max, rx, 0, 0, tx)
        if cmd == ethtool.ETHTOOL_GCOALESCE:
            rx_usecs, adaptive_rx, adaptive_tx = data['coalescing']
            fields = [0] * 22
            fields[0], fields[9], fields[10] = rx_usecs, int(adaptive_rx), int(adaptive_tx)
            return struct.pack('=23I', cmd, *fields)
        names, values = list(data['stats']), list(data['stats'].values())
        if cmd == ethtool.ETHTOOL_GSSET_INFO:
            return struct.pack('=IIQI', cmd, 0, 1 << ethtool.ETH_SS_STATS, len(names))
        if cmd == ethtool.ETHTOOL_GSTRINGS:
            assert words[1:] == (ethtool.ETH_SS_STATS, len(names)), words
            return struct.pack('=III', cmd, ethtool.ETH_SS_STATS, len(names)) + b''.join(
                name.encode().ljust(ethtool.ETH_GSTRING_LEN, b'\0') for name in names)
        assert cmd == ethtool.ETHTOOL_GSTATS and words[1] == len(names), words
        return struct.pack('=II%dQ' % len(values), cmd, len(values), *values)


@pytest.fixture
def nic_host(tmp_path, monkeypatch):
    """A FakeNicHost below tmp_path; its ``call`` answers the ethtool ioctl for the test."""
    fake = FakeNicHost(tmp_path / 'host')
    monkeypatch.setattr(ethtool, 'call', fake.call)
    return fake


# ----------------------------------------------------------------------------- network namespaces, for real

def _ip_netns(name, *args):
    return subprocess.run(['ip', '-n', name] + list(args), capture_output=True, text=True, check=False)


@pytest.fixture
def netns():
    """A throwaway network namespace (nothing in it: no address, no route, nothing is sent), removed afterwards;
    the test is skipped where ``ip netns`` is not permitted.  Its name is BDP_TEST_NETNS_PREFIX (default
    ``bdp-test-``) and a random part, so that a run beside another one can tell its namespaces apart."""
    name = '%s%s' % (os.environ.get('BDP_TEST_NETNS_PREFIX', 'bdp-test-'), uuid.uuid4().hex[:8])
    try:
        made = subprocess.run(['ip', 'netns', 'add', name], capture_output=True, text=True, check=False)
    except OSError as exc:
        pytest.skip('ip netns is not available here: %s' % exc)
    if made.returncode != 0:
        pytest.skip('ip netns add is not permitted here: %s' % made.stderr.strip())
    try:
        yield name
    finally:
        subprocess.run(['ip', 'netns', 'del', name], capture_output=True, check=False)


@pytest.fixture
def veth_netns(netns):
    """``netns`` with a veth pair, both ends up: bdp0 holding 198.18.0.1/24 (txqueuelen 1000) and bdp1."""
    for args in (['link', 'add', 'bdp0', 'type', 'veth', 'peer', 'name', 'bdp1'],
                 ['addr', 'add', '198.18.0.1/24', 'dev', 'bdp0'], ['link', 'set', 'bdp0', 'up'],
                 ['link', 'set', 'bdp1', 'up'], ['link', 'set', 'bdp0', 'txqueuelen', '1000']):
        done = _ip_netns(netns, *args)
        if done.returncode != 0:
            pytest.skip('cannot set up the namespace (ip %s): %s' % (' '.join(args), done.stderr.strip()))
    return netns
