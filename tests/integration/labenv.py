# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment the lab tests run ansible and ansible-playbook in: this checkout's collection and the venv's
collections only, no colour, containers.conf of the project (podman connection to the lab containers)."""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ansible_env():
    site = os.path.join(ROOT, '.venv', 'lib', 'python3.11', 'site-packages')
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH='%s:%s' % (os.path.join(ROOT, '.cache', 'collections'), site),
                ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false', ANSIBLE_LOCALHOST_WARNING='false',
                ANSIBLE_FORCE_COLOR='false', CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'containers.conf'))
