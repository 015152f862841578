# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VM a test class of the real-host scenario runs on: booted once per class, stopped after its last step."""

from __future__ import annotations

import os

import pytest

import scenario
import vmlib


@pytest.fixture(scope='class')
def host(request, tmp_path_factory):
    """The test class's VM (its SUITE and WAN), with its NIC names, inventory and the stock snapshot."""
    cls = request.cls
    workdir = str(tmp_path_factory.mktemp('vm-%s' % cls.SUITE))
    vm = vmlib.VM(cls.SUITE, workdir, wan=cls.WAN)
    try:
        vm.start()
        vm.control = vm.interface(vmlib.CONTROL_MAC)
        vm.wan_nic = vm.interface(vm.wan_mac)
        vm.fast_nic = vm.interface(vmlib.FAST_NIC_MAC)
        vm.peer = cls.WAN[1].split('/')[0]
        # nic=true in the inventory: every run of the scenario tunes the NICs too, and every rollback puts them back
        # (the e1000e for real: rings and a fixed rx-usecs; the virtio WAN NIC says what it does not offer)
        vm.inv = vm.inventory(os.path.join(workdir, 'inventory.json'),
                              bbr_interfaces=[vm.control, vm.wan_nic, vm.fast_nic],
                              nic=True, nic_interfaces=[vm.fast_nic, vm.wan_nic], nic_coalescing='50')
        vm.stock = vmlib.snapshot(vm)
        scenario.ORIGINAL[cls.SUITE] = dict((key, cls.sysctl(vm, key)) for key in scenario.KEYS)
        yield vm
    finally:
        vm.stop()
