# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Device nodes through the TLS daemon's sandbox (issue 36), in one lab container (systemd 252): the receiving rsync
runs in daemon-over-remote-shell mode, as stunnel starts it, inside a transient unit with every setting of the
``[Service]`` section the rsync_daemon role renders (bdp-rsync-tls.service.j2), into a module with ``use chroot`` and
``uid = 0``.  With the default unit a tree with a character and a block device ends with rsync's mknod "Operation
not permitted" (exit 23), as the issue found; with ``--no-devices`` (migrate_preserve without devices) it ends 0 and
the FIFO arrives; with rsync_daemon_devices the nodes arrive.  The receiver's reading of the unit
(module_utils/migrate/receiver.py) says the same of ``systemctl show`` there.  The stunnel in front only relays
bytes: it is left out.  Run it under the podman lock: ``flock /tmp/bdp-podman.lock python -m pytest ...``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import collection_path  # noqa: E402  pylint: disable=wrong-import-position
from role_templates import render  # noqa: E402  pylint: disable=wrong-import-position

collection_path.ensure_importable()

# pylint: disable-next=wrong-import-position
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import receiver  # noqa: E402
# pylint: disable-next=wrong-import-position
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls  # noqa: E402

IMAGE = 'localhost/bdp-wan-tune-debian12:latest'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'containers.conf'))
PODMAN = shutil.which('podman')
pytestmark = pytest.mark.skipif(PODMAN is None, reason='podman is not installed (scripts/setup.sh installs it)')
SKIPPED = ('Type', 'ExecStartPre', 'ExecStart', 'ExecReload', 'ExecStopPost', 'Restart')
DAEMON_CONF = 'use chroot = yes\n[m]\npath = /srv/m\nread only = no\nuid = 0\ngid = 0\nnumeric ids = yes\n'
# each entry of a directory: c MAJOR,MINOR, b MAJOR,MINOR, p (FIFO) or - (anything else)
KINDS = ('import json, os, stat, sys\n'
         'out = {}\n'
         'for name in os.listdir(sys.argv[1]):\n'
         '    info = os.lstat(os.path.join(sys.argv[1], name))\n'
         '    node = "%d,%d" % (os.major(info.st_rdev), os.minor(info.st_rdev))\n'
         '    out[name] = ("c " + node if stat.S_ISCHR(info.st_mode) else "b " + node if stat.S_ISBLK(info.st_mode)\n'
         '                 else "p" if stat.S_ISFIFO(info.st_mode) else "-")\n'
         'print(json.dumps(out))\n')
TREE = 'mkdir -p /srv/m /srv/src && cd /srv/src && echo data > file && mkfifo fifo && mknod char-null c 1 3 && ' \
       'mknod block-loop b 7 0'


def properties(devices):
    """The -p arguments of systemd-run: the rendered unit's [Service] settings but how it starts."""
    text = render('rsync_daemon', 'bdp-rsync-tls.service.j2', {
        'ansible_managed': 'managed', 'rsync_daemon_devices': devices, '__rsync_daemon_stunnel': '/usr/bin/stunnel4',
        '__rsync_daemon_tls': rsynctls.layout('m1', receiver='receiver')})
    service = text.split('[Service]')[1].split('[Install]')[0]
    return [line for line in service.splitlines()
            if line and not line.startswith('#') and line.split('=')[0] not in SKIPPED]


def podman(*args, check=True):
    return subprocess.run([PODMAN] + list(args), env=ENV, capture_output=True, text=True, check=check, timeout=120)


def sh(name, script, check=True):
    return podman('exec', name, 'bash', '-c', script, check=check)


@pytest.fixture
def container():
    if podman('image', 'exists', IMAGE, check=False).returncode != 0:
        pytest.fail('the lab image %s is missing: make lab-image (scripts/lab_image.sh) builds it' % IMAGE)
    name = 'bdp-devices-%s' % uuid.uuid4().hex[:8]
    podman('run', '-d', '--name', name, '--privileged', '--systemd=always', '--network', 'none', IMAGE, '/sbin/init')
    try:
        sh(name, 'for i in $(seq 1 60); do case "$(systemctl is-system-running 2>/dev/null)" in running|degraded) '
                 'exit 0;; esac; sleep 1; done; exit 1')
        sh(name, 'cat > /etc/bdp-test-rsyncd.conf <<"EOF"\n%sEOF\n%s' % (DAEMON_CONF, TREE))
        for variant, devices in (('default', False), ('devices', True)):
            props = ' '.join('-p %s' % shlex.quote(line) for line in properties(devices))
            sh(name, 'printf "%%s\\n" %s > /usr/local/bin/wrap-%s && chmod 755 /usr/local/bin/wrap-%s' % (
                shlex.quote('#!/bin/sh\nexec systemd-run --quiet --pipe --wait %s /usr/bin/rsync --server --daemon '
                            '--config=/etc/bdp-test-rsyncd.conf .' % props), variant, variant))
        yield name
    finally:
        podman('rm', '-f', name, check=False)


def push(name, variant, dest, extra=''):
    """rsync -aH --numeric-ids (what the runner passes) from /srv/src into the module's ``dest`` through the daemon
    of ``variant``: (rc, output, {name: 'c 1,3' | 'b 7,0' | 'p' | '-'})."""
    done = sh(name, 'rsync -aH --numeric-ids %s --rsh=/usr/local/bin/wrap-%s /srv/src/ localhost::m/%s/' % (
        extra, variant, dest), check=False)
    kinds = json.loads(sh(name, 'python3 -c %s /srv/m/%s' % (shlex.quote(KINDS), dest)).stdout)
    return done.returncode, done.stdout + done.stderr, kinds


def test_device_nodes_arrive_only_through_a_unit_that_may_create_them(container):
    rc, output, kinds = push(container, 'default', 'default')
    assert rc == 23 and 'mknod "/default/char-null" (in m) failed: Operation not permitted' in output, output
    assert kinds == {'file': '-', 'fifo': 'p'}
    rc, output, kinds = push(container, 'default', 'given-up', extra='--no-devices')
    assert rc == 0 and kinds == {'file': '-', 'fifo': 'p'}, output
    rc, output, kinds = push(container, 'devices', 'devices')
    assert rc == 0 and kinds == {'file': '-', 'fifo': 'p', 'char-null': 'c 1,3', 'block-loop': 'b 7,0'}, output
    # the receiver's half of the preflight reads each unit as it is
    for variant, devices in (('default', False), ('devices', True)):
        props = ' '.join('-p %s' % shlex.quote(line) for line in properties(devices))
        sh(container, 'systemd-run --quiet --unit=probe-%s %s sleep 120' % (variant, props))
        shown = sh(container, 'systemctl show --property=%s probe-%s.service' % (
            ','.join(receiver.PROPERTIES), variant)).stdout
        found = receiver.daemon(['probe-%s.service' % variant], lambda unit, text=shown: (text, None))
        assert found['device_nodes'] is devices, found
