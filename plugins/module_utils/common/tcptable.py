# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel's TCP socket table of this network namespace (/proc/net/tcp and /proc/net/tcp6), the one reader of
it: the iperf3 server's listener check (module iperf3_server) and the running-transfer guard of the NIC settings
(module_utils/nic/settings.py) ask it which sockets are open."""

import collections
import os

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files

PROC = '/proc'
ESTABLISHED = '01'      # the state column, in hex as the kernel writes it
LISTEN = '0A'
Socket = collections.namedtuple('Socket', 'state local local_port remote remote_port inode')


def address(text):
    """The address of /proc/net/tcp{,6} hex text (each 32-bit word in host order, little-endian here)."""
    words = [text[index:index + 8] for index in range(0, len(text), 8)]
    data = b''.join(bytes(bytearray(reversed(bytearray.fromhex(word)))) for word in words)
    if len(data) == 4:
        return '.'.join(str(byte) for byte in bytearray(data))
    return ':'.join('%x' % ((data[index] << 8) | data[index + 1]) for index in range(0, 16, 2))


def sockets(proc=PROC):
    """[Socket] of every TCP socket of this network namespace (inode None where a line has no such column);
    unreadable tables and lines are left out."""
    found = []
    for table in ('tcp', 'tcp6'):
        for line in (files.read_text(os.path.join(proc, 'net', table)) or '').splitlines()[1:]:
            fields = line.split()
            if len(fields) < 4:
                continue
            try:
                (local, lport), (remote, rport) = [(part.split(':')[0], int(part.split(':')[1], 16))
                                                   for part in fields[1:3]]
                found.append(Socket(fields[3], address(local), lport, address(remote), rport,
                                    fields[9] if len(fields) > 9 else None))
            except (IndexError, ValueError):
                continue
    return found
