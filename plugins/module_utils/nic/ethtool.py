# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``ethtool -g``, ``ethtool -c`` and ``ethtool -S`` show, read with the SIOCETHTOOL ioctl itself: many hosts
have no ethtool program.

Each reader returns a dict with ``supported``: True and the values, or False and a ``reason``.  A driver that does
not implement a query answers EOPNOTSUPP (virtio-net has no coalescing, loopback no rings); that is reported as
"not supported by the driver", never as a failure.  The structures are those of linux/ethtool.h, which the kernel
keeps stable for the ioctl (the netlink interface of newer ethtool programs reads the same driver callbacks).

``call`` is the one place that talks to the kernel: it takes an interface name and the request (the ethtool
command structure as bytes) and returns the structure the kernel filled in, or raises OSError.

The setters (``set_rings``, ``set_coalescing``; ``ethtool -G`` and ``-C``) read the whole structure, change the
fields asked for and write it back, so every other field stays as the driver had it.  They raise OSError; a
driver that cannot change a setting answers EOPNOTSUPP or EINVAL, which ``refused`` tells apart from a failure.
"""

import array
import errno
import fcntl
import os
import re
import socket
import struct

SIOCETHTOOL = 0x8946
IFNAMSIZ = 16
IFREQ_SIZE = 40             # struct ifreq: the name and a union of at most 24 bytes
ETHTOOL_GCOALESCE = 0x0e
ETHTOOL_SCOALESCE = 0x0f
ETHTOOL_GRINGPARAM = 0x10
ETHTOOL_SRINGPARAM = 0x11
ETHTOOL_GPERMADDR = 0x20
MAX_ADDR_LEN = 32
ETHTOOL_GSTRINGS = 0x1b
ETHTOOL_GSTATS = 0x1d
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
# struct ethtool_ringparam after cmd
RING_FIELDS = ('rx_max', 'rx_mini_max', 'rx_jumbo_max', 'tx_max', 'rx', 'rx_mini', 'rx_jumbo', 'tx')
# struct ethtool_coalesce after cmd (22 fields); the survey reports the first few
COALESCE_FIELDS = ('rx_usecs', 'rx_frames', 'rx_usecs_irq', 'rx_frames_irq', 'tx_usecs', 'tx_frames',
                   'tx_usecs_irq', 'tx_frames_irq', 'stats_block_usecs', 'adaptive_rx', 'adaptive_tx',
                   'pkt_rate_low', 'rx_usecs_low', 'rx_frames_low', 'tx_usecs_low', 'tx_frames_low',
                   'pkt_rate_high', 'rx_usecs_high', 'rx_frames_high', 'tx_usecs_high', 'tx_frames_high',
                   'sample_interval')
# Driver statistics (ethtool -S) that count packets lost for want of a ring slot or a buffer: e1000e and ixgbe
# rx_missed_errors and rx_no_buffer_count, mlx5 rx_out_of_buffer, i40e rx_dropped, virtio-net rx_drops, veth
# rx_queue_0_drops.  Not the XDP program's own drops (xdp in the name): a program chose those.
DROP_STAT = re.compile(r'^(?!.*xdp).*(drop|miss|no_buf|no_dma|out_of_buffer|fifo|discard)', re.IGNORECASE)


def call(name, request):
    """The structure the kernel returns for the ethtool ``request`` (bytes) on interface ``name``; OSError."""
    buf = array.array('B', request)
    address = buf.buffer_info()[0]
    ifreq = struct.pack('%dsP' % IFNAMSIZ, name.encode('utf-8')[:IFNAMSIZ - 1], address)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq.ljust(IFREQ_SIZE, b'\0'))
    finally:
        sock.close()
    return buf.tobytes()


def unsupported(exc):
    """The result of a query the kernel refused: not supported by the driver, or why it could not be read."""
    if exc.errno == errno.EOPNOTSUPP:
        return {'supported': False, 'reason': 'not supported by the driver (EOPNOTSUPP)'}
    return {'supported': False, 'reason': 'could not be read: %s' % (exc.strerror or os.strerror(exc.errno or 0))}


def _words(name, cmd, count):
    """The ``count`` u32 fields after ``cmd`` of a fixed-size ethtool structure."""
    reply = call(name, struct.pack('=%dI' % (count + 1), cmd, *([0] * count)))
    return struct.unpack_from('=%dI' % count, reply, 4)


def rings(name):
    """``ethtool -g``: {'supported', 'rx', 'rx_max', 'tx', 'tx_max'} (descriptors per queue)."""
    try:
        values = dict(zip(RING_FIELDS, _words(name, ETHTOOL_GRINGPARAM, len(RING_FIELDS))))
    except OSError as exc:
        return unsupported(exc)
    return {'supported': True, 'rx': values['rx'], 'rx_max': values['rx_max'], 'tx': values['tx'],
            'tx_max': values['tx_max']}


def coalescing(name):
    """``ethtool -c``: {'supported', 'adaptive_rx', 'adaptive_tx', 'rx_usecs', 'tx_usecs'}."""
    try:
        values = dict(zip(COALESCE_FIELDS, _words(name, ETHTOOL_GCOALESCE, len(COALESCE_FIELDS))))
    except OSError as exc:
        return unsupported(exc)
    return {'supported': True, 'adaptive_rx': bool(values['adaptive_rx']), 'adaptive_tx': bool(values['adaptive_tx']),
            'rx_usecs': values['rx_usecs'], 'tx_usecs': values['tx_usecs']}


def _stat_names(name):
    """The names of the driver's statistics, in the order ETHTOOL_GSTATS returns them."""
    reply = call(name, struct.pack('=IIQI', ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0))
    mask, count = struct.unpack_from('=QI', reply, 8)
    if not mask & (1 << ETH_SS_STATS) or not count:
        return []
    reply = call(name, struct.pack('=III', ETHTOOL_GSTRINGS, ETH_SS_STATS, count) + bytes(count * ETH_GSTRING_LEN))
    count = min(count, struct.unpack_from('=I', reply, 8)[0])
    return [reply[12 + index * ETH_GSTRING_LEN:12 + (index + 1) * ETH_GSTRING_LEN].split(b'\0', 1)[0].decode(
        'utf-8', 'replace') for index in range(count)]


def drop_counters(name):
    """``ethtool -S``, only the counters of drops and missed packets (DROP_STAT): {'supported', 'counters'}."""
    try:
        names = _stat_names(name)
        if not names:
            return {'supported': False, 'reason': 'the driver has no statistics'}
        reply = call(name, struct.pack('=II', ETHTOOL_GSTATS, len(names)) + bytes(8 * len(names)))
    except OSError as exc:
        return unsupported(exc)
    count = min(len(names), struct.unpack_from('=I', reply, 4)[0])
    values = struct.unpack_from('=%dQ' % count, reply, 8)
    return {'supported': True, 'counters': dict((key, value) for key, value in zip(names, values)
                                                if DROP_STAT.search(key))}


def refused(exc):
    """Whether ``exc`` (an OSError of a setter) means the driver cannot make this change (EOPNOTSUPP, EINVAL, or
    ERANGE for a value out of its range), not that the call failed."""
    return exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ERANGE)


def refusal_code(exc, driver=None):
    """The driver and the error of a refusal, for its reason: 'ena, EOPNOTSUPP', 'e1000e, EINVAL'."""
    code = 'EOPNOTSUPP' if exc.errno == errno.EOPNOTSUPP else errno.errorcode.get(exc.errno, str(exc.errno))
    return '%s, %s' % (driver, code) if driver else code


def set_rings(name, rx, tx):
    """``ethtool -G NAME rx RX tx TX``: the other ring sizes (mini, jumbo) stay as they are; OSError."""
    count = len(RING_FIELDS)
    values = dict(zip(RING_FIELDS, _words(name, ETHTOOL_GRINGPARAM, count)))
    values.update(rx=int(rx), tx=int(tx))
    call(name, struct.pack('=%dI' % (count + 1), ETHTOOL_SRINGPARAM, *[values[key] for key in RING_FIELDS]))


def set_coalescing(name, **changes):
    """``ethtool -C``: the fields of COALESCE_FIELDS in ``changes`` (adaptive_rx, adaptive_tx, rx_usecs, ...) set,
    every other field as the driver has it; OSError."""
    count = len(COALESCE_FIELDS)
    values = dict(zip(COALESCE_FIELDS, _words(name, ETHTOOL_GCOALESCE, count)))
    for key, value in changes.items():
        if key not in values:
            raise ValueError('%s is not a coalescing field' % key)
        values[key] = int(value)
    call(name, struct.pack('=%dI' % (count + 1), ETHTOOL_SCOALESCE, *[values[key] for key in COALESCE_FIELDS]))


def permanent_address(name):
    """``ethtool -P``: the permanent hardware address as aa:bb:..., or None when the device has none (virtual
    devices, some virtio-net) or it cannot be read."""
    try:
        reply = call(name, struct.pack('=II', ETHTOOL_GPERMADDR, MAX_ADDR_LEN) + bytes(MAX_ADDR_LEN))
    except OSError:
        return None
    size = min(struct.unpack_from('=I', reply, 4)[0], MAX_ADDR_LEN)
    data = bytearray(reply[8:8 + size])
    if not data or not any(data):
        return None
    return ':'.join('%02x' % byte for byte in data)
