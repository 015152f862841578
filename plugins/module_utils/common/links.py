# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the MTU plan (mtu/) and the NIC survey (nic/) both know of the host's links: how devices stack, and the
driver sysfs names.  ``links`` is linkmtu.parse_links() of ``ip -d -j link show``."""

import os

SYS_CLASS_NET = '/sys/class/net'
# Devices whose MTU cannot exceed the device they sit on.
STACKED_KINDS = ('vlan', 'macvlan', 'macvtap', 'ipvlan', 'ipvtap')
# Masters that set the MTU of their members themselves (the kernel propagates it).
PROPAGATING_MASTERS = ('bond', 'team')
# Masters whose ports must be raised one by one before the master.
PORT_MASTERS = ('bridge', 'openvswitch')


def members(links, master):
    return sorted(name for name, link in links.items() if link.get('master') == master)


def driver(name, sys_class_net=SYS_CLASS_NET):
    """The kernel driver of interface ``name`` (the link /sys/class/net/NAME/device/driver), None for a virtual one."""
    try:
        return os.path.basename(os.readlink(os.path.join(sys_class_net, name, 'device', 'driver')))
    except OSError:
        return None
