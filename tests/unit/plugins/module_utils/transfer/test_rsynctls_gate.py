# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rsynctls.nftables_problem(), the question the module rsync_daemon_tls asks the kernel before anything changes: on
this machine (root, nf_tables built in) the answer is yes; the same process without CAP_NET_ADMIN (as in an
unprivileged container) gets the kernel's refusal, which the module turns into the role's refusal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

PROBE = ('from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls\n'
         'print(repr(rsynctls.nftables_problem()))\n')

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'),
                                reason='needs root (CAP_NET_ADMIN) and setpriv, as on the CI machine')


def probe(*prefix):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run(list(prefix) + [sys.executable, '-c', PROBE], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_root_with_net_admin_may_use_nftables():
    assert rsynctls.nftables_problem() is None
    assert probe() == 'None'


def test_without_net_admin_the_kernel_refuses():
    answer = probe('setpriv', '--bounding-set=-net_admin', '--inh-caps=-net_admin')
    assert answer == repr('the kernel refuses nftables requests: Operation not permitted')
