# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Debian 12 (kernel 6.1), with a 2-queue virtio WAN NIC (root qdisc mq) and /etc/sysctl.conf."""

from __future__ import annotations

from scenario import RealHost


class TestBookworm(RealHost):
    SUITE = 'bookworm'
    WAN = ('bdpvm12', '198.18.12.1/24', '198.18.12.2/24', 2)
    ADMIN_FILE = '/etc/sysctl.conf'
