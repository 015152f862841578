# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the lab tests share.

* ansible_env(): the environment they run ansible and ansible-playbook in: this checkout's collection and the
  venv's collections only, no colour, containers.conf of the project (podman connection to the lab containers);
* fetch_debs(): Debian packages for the lab hosts, which have no network of their own.
"""

from __future__ import annotations

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ansible_env():
    site = os.path.join(ROOT, '.venv', 'lib', 'python3.11', 'site-packages')
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH='%s:%s' % (os.path.join(ROOT, '.cache', 'collections'), site),
                ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false', ANSIBLE_LOCALHOST_WARNING='false',
                ANSIBLE_FORCE_COLOR='false', CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'containers.conf'),
                ANSIBLE_CONNECTION_PLUGINS=os.path.join(ROOT, 'tests', 'connection_plugins'))


def fetch_debs(names):
    """Debian packages from the mirror this machine's apt uses, kept in .cache/debs."""
    directory = os.path.join(ROOT, '.cache', 'debs')
    os.makedirs(directory, exist_ok=True)
    missing = [name for name in names if not [f for f in os.listdir(directory) if f.startswith(name + '_')]]
    if missing:
        proc = subprocess.run(['apt-get', 'download'] + missing, cwd=directory, capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            subprocess.run(['apt-get', 'update', '-qq'], check=True, capture_output=True)
            subprocess.run(['apt-get', 'download'] + missing, cwd=directory, check=True, capture_output=True)
    return [os.path.join(directory, f) for f in sorted(os.listdir(directory))
            if f.split('_')[0] in names and f.endswith('.deb')]
