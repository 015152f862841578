# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Debian 13 (kernel 6.12), with a single-queue virtio WAN NIC; it has no /etc/sysctl.conf."""

from __future__ import annotations

from scenario import RealHost


class TestTrixie(RealHost):
    SUITE = 'trixie'
    WAN = ('bdpvm13', '198.18.13.1/24', '198.18.13.2/24', 1)
    ADMIN_FILE = '/etc/sysctl.d/99-admin.conf'
