# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TLS daemon behind a real host firewall (issue 37): firewalld or ufw from Debian 12's archive, active on the
receiver, and the role's source gate in nftables.

Three systemd containers from the project's image on an internal podman network in 198.18.7.0/24: the receiver R
(198.18.7.10) with the firewall installed from .cache/debs (the hosts reach no mirror) and started with its defaults,
the peer P (198.18.7.11, the only source the receiver's module lists, and its sender), and a stranger S (198.18.7.12),
which is given a copy of P's valid client identity. Run as root under the podman lock:
    flock /tmp/bdp-podman.lock python -m pytest tests/integration/test_rsync_tls_firewall.py

For each firewall: a check-mode run predicts the rules and changes neither the firewall's files nor its rules; the
converge opens the TLS port to P only (permanent and immediate for firewalld); a second run changes nothing; P
completes a TLS 1.3 handshake with its certificate verified; S, with the same certificate, gets none; state absent
leaves the firewall's files under /etc byte for byte and its rules as before the role, and the gate's table gone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time

import pytest

from labenv import ROOT, ansible_env, fetch_debs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='needs root (rootful podman, nsenter)')

IMAGE = 'localhost/bdp-wan-tune-debian12:latest'
NETWORK, SUBNET = 'bdp-wan-tune-fw', '198.18.7.0/24'
HOSTS = {'R': ('bdp-fw-r', '198.18.7.10'), 'P': ('bdp-fw-p', '198.18.7.11'), 'S': ('bdp-fw-s', '198.18.7.12')}
NFT_DEBS = ['nftables', 'libnftables1', 'libnftnl11', 'libjansson4']
# What apt installs for each on the image, without recommends (apt-get install --simulate --no-install-recommends
# against the image's dpkg status)
FIREWALL_DEBS = {
    'firewalld': ['sgml-base', 'libpam-systemd', 'libglib2.0-0', 'libgirepository-1.0-1', 'gir1.2-glib-2.0', 'libnm0',
                  'gir1.2-nm-1.0', 'xml-core', 'libduktape207', 'libpolkit-gobject-1-0', 'libpolkit-agent-1-0',
                  'polkitd', 'python3-dbus', 'python3-gi', 'python3-attr', 'python3-pyrsistent', 'python3-jsonschema',
                  'python3-nftables', 'python3-firewall', 'firewalld'],
    'ufw': ['libip6tc2', 'libnfnetlink0', 'libnetfilter-conntrack3', 'iptables', 'ufw'],
}
# How each firewall is started with its defaults, how its configuration and its rules are read
START = {'firewalld': 'systemctl enable --now firewalld && firewall-cmd --state',
         'ufw': 'ufw --force enable && ufw status'}
FILES = {'firewalld': '/etc/firewalld', 'ufw': '/etc/ufw'}
RULES = {'firewalld': 'firewall-cmd --list-all-zones; firewall-cmd --permanent --list-all-zones',
         'ufw': 'ufw status verbose'}
# The peer's rule taken out and put back at runtime only (firewalld), or as the role wrote it (ufw)
RICH = 'rule family="ipv4" source address="%(peer)s" port port="874" protocol="tcp" accept'
CLOSE = {'firewalld': "firewall-cmd --remove-rich-rule='" + RICH + "'",
         'ufw': 'ufw delete allow from %(peer)s to any port 874 proto tcp'}
OPEN = {'firewalld': "firewall-cmd --add-rich-rule='" + RICH + "'",
        'ufw': "ufw allow from %(peer)s to any port 874 proto tcp comment 'bdp.wan_tune rsync_daemon TLS'"}
CLIENT = '/etc/bdp-wan-tune/rsync-tls-client/fw1/bdp-fw-r'
VARS = {
    'rsync_daemon_tls_migration': 'fw1',
    'rsync_daemon_modules': [{'name': 'pub', 'path': '/srv/pub', 'hosts_allow': [HOSTS['P'][1]]}],
    'rsync_daemon_tls_names': [HOSTS['R'][1]],
    'wan_peers': [HOSTS['P'][0]],
}


def podman(*args, check=True, timeout=120):
    proc = subprocess.run(['podman'] + list(args), capture_output=True, text=True, env=ansible_env(),
                          timeout=timeout, check=False)
    if check:
        assert proc.returncode == 0, 'podman %s: %s%s' % (' '.join(args), proc.stdout, proc.stderr)
    return proc


def sh(host, command, check=True, timeout=120):
    proc = podman('exec', HOSTS[host][0], 'sh', '-c', command, check=False, timeout=timeout)
    if check:
        assert proc.returncode == 0, '%s on %s: %s%s' % (command, host, proc.stdout, proc.stderr)
    return proc


def remove():
    for name, _address in HOSTS.values():
        podman('rm', '-f', '-t', '0', name, check=False)
    if podman('network', 'exists', NETWORK, check=False).returncode == 0:
        podman('network', 'rm', '-f', NETWORK, check=False)


class Lab(object):
    def __init__(self, kind, directory):
        self.kind = kind
        self.inventory = os.path.join(directory, 'inventory.ini')
        self.playbook = os.path.join(directory, 'play.yml')
        self.vars = os.path.join(directory, 'vars.json')
        with open(self.inventory, 'w') as handle:
            handle.write('[receivers]\n%s\n[senders]\n%s\n[all:vars]\nansible_connection=podman_nsenter\n'
                         'ansible_python_interpreter=/usr/bin/python3\n' % (HOSTS['R'][0], HOSTS['P'][0]))
        with open(self.playbook, 'w') as handle:
            handle.write('- hosts: receivers\n  gather_facts: false\n  roles: [bdp.wan_tune.rsync_daemon]\n')
        with open(self.vars, 'w') as handle:
            json.dump(VARS, handle)

    def run(self, *args):
        """(exit code, output, changed count of the receiver) of the role on the receiver."""
        cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', self.inventory, self.playbook,
               '-e', '@' + self.vars] + list(args)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), cwd=ROOT, timeout=900,
                              check=False)
        out = proc.stdout + proc.stderr
        changed = re.search(r'^%s\s*:\s*ok=\d+\s+changed=(\d+)' % HOSTS['R'][0], out, re.M)
        return proc.returncode, out, int(changed.group(1)) if changed else None

    def files(self):
        """{path: sha256} of every file of the firewall's configuration on the receiver, and the modes."""
        out = sh('R', 'find %s -type f -printf "%%m %%p\\n" | sort' % FILES[self.kind]).stdout
        digests = {}
        for line in out.splitlines():
            mode, path = line.split(' ', 1)
            data = podman('exec', HOSTS['R'][0], 'cat', path).stdout
            digests[path] = (mode, hashlib.sha256(data.encode('utf-8', 'surrogateescape')).hexdigest())
        return digests

    def rules(self):
        return sh('R', RULES[self.kind]).stdout

    def handshake(self, host):
        """openssl s_client's report of a handshake from ``host`` with P's client identity."""
        return sh(host, 'timeout 15 openssl s_client -connect %s:874 -brief -verify_return_error -CAfile %s/ca.crt '
                        '-cert %s/host.crt -key %s/host.key </dev/null 2>&1' % (HOSTS['R'][1], CLIENT, CLIENT, CLIENT),
                  check=False)


@pytest.fixture(scope='module', params=['firewalld', 'ufw'])
def lab(request, tmp_path_factory):
    kind = request.param
    remove()
    debs = fetch_debs(NFT_DEBS + FIREWALL_DEBS[kind])
    try:
        podman('network', 'create', '--internal', '--subnet', SUBNET, NETWORK)
        for key, (name, address) in HOSTS.items():
            podman('run', '-d', '--name', name, '--hostname', name, '--privileged', '--systemd=always',
                   '--network', NETWORK, '--ip', address, IMAGE, '/sbin/init')
        for key in HOSTS:
            sh(key, 'systemctl is-system-running --wait || true', timeout=120)
        podman('exec', HOSTS['R'][0], 'mkdir', '-p', '/tmp/debs', '/srv/pub')
        for deb in debs:
            podman('cp', deb, '%s:/tmp/debs/' % HOSTS['R'][0])
        sh('R', 'DEBIAN_FRONTEND=noninteractive dpkg -i /tmp/debs/*.deb >/dev/null 2>&1; dpkg-query -W %s'
           % ' '.join(['nftables', kind]))
        sh('R', START[kind])
        yield Lab(kind, str(tmp_path_factory.mktemp(kind)))
    finally:
        remove()


def test_the_firewall_opens_to_the_peer_only_and_absent_restores_it(lab):
    files_before, rules_before = lab.files(), lab.rules()

    rc, out, _err = lab.run('--check')
    assert rc == 0, out[-3000:]
    predicted = 'Open the TLS port in firewalld' if lab.kind == 'firewalld' else 'Allow the TLS port in ufw'
    assert re.search(r'TASK \[[^\]]*%s[^\]]*\][^\n]*\n(changed|ok): \[%s\] => \(item=%s\)' % (
        predicted, HOSTS['R'][0], re.escape(HOSTS['P'][1])), out), out[-3000:]
    assert lab.files() == files_before and lab.rules() == rules_before        # check mode changed nothing

    rc, out, _err = lab.run()
    assert rc == 0, out[-3000:]
    opened = lab.rules()
    if lab.kind == 'firewalld':
        rule = 'rule family="ipv4" source address="%s" port port="874" protocol="tcp" accept' % HOSTS['P'][1]
        assert sh('R', 'firewall-cmd --list-rich-rules').stdout.split('\n')[0] == rule, opened
        assert rule in sh('R', 'firewall-cmd --permanent --list-rich-rules').stdout
    else:
        assert re.search(r'^874/tcp\s+ALLOW IN\s+%s\s+# bdp.wan_tune rsync_daemon TLS$' % re.escape(HOSTS['P'][1]),
                         opened, re.M), opened
    assert HOSTS['S'][1] not in opened

    rc, out, changed = lab.run()
    assert rc == 0 and changed == 0, out[-3000:]

    peer = lab.handshake('P')
    assert peer.returncode == 0 and 'Protocol version: TLSv1.3' in peer.stdout, peer.stdout
    assert 'Verification: OK' in peer.stdout, peer.stdout
    # the firewall's rule is what lets the peer in: without it (at runtime only) the peer gets no handshake either
    sh('R', CLOSE[lab.kind] % {'peer': HOSTS['P'][1]})
    closed = lab.handshake('P')
    sh('R', OPEN[lab.kind] % {'peer': HOSTS['P'][1]})
    assert closed.returncode != 0 and 'Protocol version' not in closed.stdout, closed.stdout
    assert lab.handshake('P').returncode == 0
    # the stranger holds the same valid client identity, and gets no handshake
    sh('S', 'mkdir -p %s' % CLIENT)
    for name in ('ca.crt', 'host.crt', 'host.key'):
        data = podman('exec', HOSTS['P'][0], 'cat', '%s/%s' % (CLIENT, name)).stdout
        subprocess.run(['podman', 'exec', '-i', HOSTS['S'][0], 'sh', '-c', 'cat > %s/%s' % (CLIENT, name)],
                       input=data, text=True, env=ansible_env(), check=True)
    stranger = lab.handshake('S')
    assert stranger.returncode != 0 and 'Protocol version' not in stranger.stdout, stranger.stdout

    rc, out, _err = lab.run('-e', 'rsync_daemon_state=absent')
    assert rc == 0, out[-3000:]
    assert lab.files() == files_before                                          # byte for byte, and the modes
    assert lab.rules() == rules_before
    assert sh('R', 'nft list table inet bdp_wan_tune', check=False).returncode != 0
    # give the firewall a moment to answer its own state again, then it still runs as before
    time.sleep(1)
    sh('R', START[lab.kind].split('&&')[-1])
