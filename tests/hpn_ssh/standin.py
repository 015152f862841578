# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TEST STAND-IN for HPN-SSH: a .deb that puts Debian's own OpenSSH under the HPN-SSH names.

Debian has no HPN-SSH package and the test hosts reach no package source, and the project does not build HPN-SSH.
To exercise the role's plumbing against real programs, the tests build this package at test time, in a temporary
directory, with dpkg-deb, and the role installs it through its "package files by path" source.  It holds no code:

- /usr/sbin/hpnsshd -> /usr/sbin/sshd and /usr/bin/hpnssh-keygen -> /usr/bin/ssh-keygen (symbolic links);
- /usr/bin/hpnssh: runs /usr/bin/ssh with -F /etc/hpnssh/ssh_config (Debian's ssh is built to read
  /etc/ssh/ssh_config; HPN-SSH's client reads /etc/hpnssh/ssh_config by itself);
- /usr/bin/hpnscp: runs /usr/bin/scp with -S /usr/bin/hpnssh;
- hpnssh.service (Alias hpnsshd.service), shaped like HPN-SSH's hpnsshd.service.in, with -f /etc/hpnssh/sshd_config
  (Debian's sshd is built to read /etc/ssh/sshd_config).

It depends on openssh-server and openssh-client, which the test image has.  It is OpenSSH 9.2, not HPN-SSH: it has
none of HPN-SSH's features (no large channel windows, no None cipher, no Fallback), and it refuses every HPN option
("Bad configuration option"), which is what the role's probe must find.

    python3 tests/hpn_ssh/standin.py OUTDIR     # prints the path of the .deb
"""

import os
import subprocess
import sys
import tempfile

NAME = 'bdp-hpnssh-standin'
VERSION = '0.1'
CONTROL = """Package: %s
Version: %s
Architecture: all
Maintainer: bdp.wan_tune tests <tests@example.invalid>
Depends: openssh-server, openssh-client
Section: misc
Priority: optional
Description: TEST STAND-IN, NOT HPN-SSH: Debian's OpenSSH under the HPN-SSH names
 Built by the bdp.wan_tune tests to exercise the hpn_ssh role's plumbing
 (package files, configuration, validation, host keys, unit, port). It has
 none of HPN-SSH's features.
""" % (NAME, VERSION)
UNIT = """[Unit]
Description=TEST STAND-IN for HPN-SSH (Debian's OpenSSH sshd as hpnsshd), not HPN-SSH
After=network.target

[Service]
ExecStartPre=/usr/bin/install -d -m 0755 /run/sshd
ExecStartPre=/usr/sbin/hpnsshd -t -f /etc/hpnssh/sshd_config
ExecStart=/usr/sbin/hpnsshd -D -f /etc/hpnssh/sshd_config
ExecReload=/usr/sbin/hpnsshd -t -f /etc/hpnssh/sshd_config
ExecReload=/bin/kill -HUP $MAINPID
KillMode=process
Restart=on-failure
RestartPreventExitStatus=255
Type=notify

[Install]
WantedBy=multi-user.target
Alias=hpnsshd.service
"""
CLIENT = """#!/bin/sh
# TEST STAND-IN, NOT HPN-SSH: Debian's ssh reading the HPN-SSH client configuration.
if [ -r /etc/hpnssh/ssh_config ]; then
    exec /usr/bin/ssh -F /etc/hpnssh/ssh_config "$@"
fi
exec /usr/bin/ssh "$@"
"""
SCP = """#!/bin/sh
# TEST STAND-IN, NOT HPN-SSH: Debian's scp over the stand-in hpnssh.
exec /usr/bin/scp -S /usr/bin/hpnssh "$@"
"""
POSTINST = """#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
"""


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, mode)


def build(outdir):
    """Build the stand-in .deb in ``outdir``; returns its path."""
    root = tempfile.mkdtemp(prefix='hpnssh-standin-')
    os.chmod(root, 0o755)
    _write(os.path.join(root, 'DEBIAN', 'control'), CONTROL)
    _write(os.path.join(root, 'DEBIAN', 'postinst'), POSTINST, 0o755)
    _write(os.path.join(root, 'DEBIAN', 'postrm'), POSTINST, 0o755)
    _write(os.path.join(root, 'lib', 'systemd', 'system', 'hpnssh.service'), UNIT)
    _write(os.path.join(root, 'usr', 'bin', 'hpnssh'), CLIENT, 0o755)
    _write(os.path.join(root, 'usr', 'bin', 'hpnscp'), SCP, 0o755)
    os.makedirs(os.path.join(root, 'usr', 'sbin'))
    os.symlink('/usr/sbin/sshd', os.path.join(root, 'usr', 'sbin', 'hpnsshd'))
    os.symlink('/usr/bin/ssh-keygen', os.path.join(root, 'usr', 'bin', 'hpnssh-keygen'))
    os.makedirs(os.path.join(root, 'etc', 'hpnssh'))
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(os.path.abspath(outdir), '%s_%s_all.deb' % (NAME, VERSION))
    subprocess.run(['dpkg-deb', '--root-owner-group', '-Zxz', '--build', root, path], check=True,
                   capture_output=True)
    subprocess.run(['rm', '-rf', root], check=True)
    return path


if __name__ == '__main__':
    print(build(sys.argv[1] if len(sys.argv) > 1 else '.'))
