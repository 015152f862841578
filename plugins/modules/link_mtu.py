#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: link_mtu
short_description: Raise interface MTUs with a path proof and a commit-confirm timer that restores them on its own
version_added: 0.2.0
description:
  - Sets the MTU of network interfaces at runtime, named in O(interfaces) or found as the interfaces that route to
    O(peers) (C(ip route get)). Persistence is the job of M(bdp.wan_tune.link_mtu_persist), after the proof.
  - "Preflight, before anything changes: the MTU range, that every interface exists, that every peer is an address
    or resolves, the NIC's C(max_mtu) (C(ip -d link)), VLAN and macvlan parents (raised first, or refused with
    O(raise_parents=false)), bonds and teams (the master changes, the members follow), bridge ports (raised before
    the bridge), cloud limits detected from DMI (AWS 9001, Google Cloud 8896, Azure 3900 or 9000 with MANA), and
    interfaces that carry the Ansible control connection or a default route, which are refused unless
    O(allow_control_interface=true). A limit refuses the change, or clamps it with O(clamp=true)."
  - Before the change every peer must answer a small ICMP echo and a probe at the current MTU, so a path that
    is already broken is not blamed on the change.
  - "Commit-confirm: the previous MTUs are recorded and a timer on the host is armed B(before) the change (a
    transient systemd timer where systemd runs, else a detached C(sleep) process with a pid file). Unless
    O(state=confirmed) runs within O(confirm_timeout) seconds, the timer restores the previous MTUs by itself, so a
    change that cuts the control connection undoes itself."
  - "Path proof, per peer: a don't-fragment ICMP echo at the full size (MTU - 28 bytes of payload for IPv4, MTU - 48
    for IPv6), then a TCP exchange with the peer's one-off listener (started there with O(listen=true)) whose
    TCP_INFO must show full-size segments in both directions. On failure the module restores the previous MTUs,
    disarms the timer and fails, naming the peer, the largest size that got through and the smallest that did not
    (bisection)."
  - With a pending (unconfirmed) change made by an earlier call with O(prove=false), O(state=present) proves that
    change; this lets a play change every host first and prove afterwards, so peers are at the new MTU when probed.
  - When nothing needs to change, O(verify=true) sends one full-size DF probe per peer (read-only) and fails if the
    path no longer carries it.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  state:
    description:
      - V(present) plans, checks, arms the timer, changes and (with O(prove=true)) proves.
      - V(confirmed) disarms the timer of the pending change and records it as committed; fails if the timer has
        already restored the previous MTUs.
      - V(reverted) undoes a pending change now (or reports that the timer already did); used after the control
        connection was lost.
      - V(absent) restores the MTUs recorded before the first change (interfaces someone else changed since are
        left alone) and forgets them.
    type: str
    choices: [present, confirmed, reverted, absent]
    default: present
  mtu:
    description: The MTU to set, 576 to 65535. Required with O(state=present).
    type: int
  interfaces:
    description: Interfaces to change. Empty means the interfaces that route to O(peers).
    type: list
    elements: str
    default: []
  peers:
    description:
      - Addresses or host names to prove the path to. Required when O(interfaces) is empty.
      - Also the only sources the O(listen) listener accepts.
    type: list
    elements: str
    default: []
  prove:
    description: Prove the path to every peer in this call (a change made now, or a pending one).
    type: bool
    default: true
  verify:
    description: When nothing changes, send one full-size DF probe per peer and fail if it gets no answer.
    type: bool
    default: true
  listen:
    description: Start a one-off TCP echo listener on O(proof_port) for the peers' proofs; it ends with
      O(state=confirmed) or after O(confirm_timeout) seconds.
    type: bool
    default: false
  tcp_proof:
    description:
      - V(auto) runs the TCP exchange where a peer's listener answers and notes when none does; V(required) fails
        the proof without it; V(off) proves with ICMP only.
    type: str
    choices: [auto, required, 'off']
    default: auto
  proof_port:
    description: TCP port of the one-off listener.
    type: int
    default: 45219
  probe_count:
    description: ICMP echoes per probe size; a size passes when one answer comes back.
    type: int
    default: 3
  confirm_timeout:
    description: Seconds after arming before the timer restores the previous MTUs unless confirmed.
    type: int
    default: 180
  commit_method:
    description: How the timer runs. V(auto) uses systemd where it is PID 1, else a detached process.
    type: str
    choices: [auto, systemd, process]
    default: auto
  allow_control_interface:
    description: Allow changing interfaces that carry the Ansible control connection or a default route.
    type: bool
    default: false
  control_hosts:
    description: Addresses or names the controller uses to reach this host (for example C(ansible_host)); an
      interface holding one of them counts as carrying the control connection. The SSH client address is also
      read from the SSH session's environment.
    type: list
    elements: str
    default: []
  clamp:
    description: Lower the MTU to the limit (NIC, parent, cloud) instead of refusing.
    type: bool
    default: false
  raise_parents:
    description: Raise a VLAN's or macvlan's parent when it is below the MTU.
    type: bool
    default: true
  allow_lower:
    description: Lower interfaces that already have a larger MTU.
    type: bool
    default: false
  platform:
    description: Cloud platform for its MTU limit; V(auto) detects it from DMI, V(none) applies no platform limit.
    type: str
    choices: [auto, none, aws, gcp, azure, azure-mana]
    default: auto
  platform_max_mtu:
    description: A platform limit of your own; overrides the detected one.
    type: int
  state_dir:
    description: Where the MTUs before the first change and the pending change are recorded.
    type: path
    default: /var/lib/bdp_wan_tune
  run_dir:
    description: Where the timer's script and decision marker live (cleared at boot).
    type: path
    default: /run/bdp_wan_tune
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Plans and checks; sends no probes, arms nothing, changes nothing.
  diff_mode:
    support: full
    details: Shows the MTU per interface before and after.
  platform:
    platforms: linux
notes:
  - Needs root (C(ip link set), raw ICMP sockets) and C(ip) from iproute2.
  - Lowering an MTU is always safe for reachability, so O(state=absent) and the restores need no timer.
seealso:
  - module: bdp.wan_tune.link_mtu_persist
  - name: Jumbo frames in bdp.wan_tune
    description: When jumbo frames help, cloud limits, the proof and the automatic revert.
    link: https://example.invalid/bdp/wan_tune/docs/jumbo.md
"""

EXAMPLES = r"""
- name: Raise the interface that routes to the peer to 9000, prove the path, leave the timer armed
  bdp.wan_tune.link_mtu:
    mtu: 9000
    peers: [198.18.0.2]
  register: mtu_change

- name: Confirm over a fresh control connection (the timer restores the MTU if this never arrives)
  bdp.wan_tune.link_mtu:
    state: confirmed

- name: Two-phase, for several hosts that are each other's peers - change everywhere, then prove
  bdp.wan_tune.link_mtu:
    mtu: 9000
    peers: "{{ my_peers }}"
    prove: false
    listen: true

- name: Prove the pending change (restores and fails if a peer does not get full-size packets)
  bdp.wan_tune.link_mtu:
    mtu: 9000
    peers: "{{ my_peers }}"

- name: Undo
  bdp.wan_tune.link_mtu:
    state: absent
"""

RETURN = r"""
interfaces:
  description: Per interface, the MTU before and after and why it is in the plan.
  returned: when state is present
  type: dict
  sample:
    wan0: {before: 1500, after: 9000, status: change, role: requested, reason: "route to 198.18.0.2",
           limit: 65535, limit_source: "wan0 max_mtu 65535 (ip -d link)", kind: tun}
peers:
  description: Per peer, its address, the interface that routes to it and the proof result.
  returned: when state is present and peers are given
  type: list
  elements: dict
  sample:
    - peer: 198.18.0.2
      address: 198.18.0.2
      interface: wan0
      ok: true
      summary: "9000-byte DF ICMP packets (payload 8972) answered in 20.4 ms; TCP exchanged 262144 bytes ..."
      icmp: {payload: 8972, packet: 9000, received: 1, sent: 1, rtt_ms: 20.4}
      tcp: {ran: true, ok: true, snd_mss: 8948, rcv_mss: 8948, expected_mss: 8948, total_retrans: 0}
commit:
  description: The commit-confirm timer of the change (token, method, unit or pid, deadline) and how it ended.
  returned: when a change was made, confirmed or reverted
  type: dict
  sample: {token: 20261122-0310-ab12cd, method: systemd, unit: bdp-wan-tune-mtu-20261122-0310-ab12cd,
           deadline: 1795000000.0, timeout: 180, state: pending}
platform:
  description: The cloud platform detected from DMI and its MTU limit, or null.
  returned: when state is present
  type: dict
  sample: {platform: aws, max_mtu: 9001, evidence: "DMI sys_vendor 'Amazon EC2'"}
would_change:
  description: Whether the plan changes any MTU (true also in check mode, where nothing changes).
  returned: when state is present
  type: bool
  sample: true
persist:
  description: The interfaces and MTUs to persist after the proof (changed or already at the MTU; members that
    follow a bond and interfaces kept higher are left out). Feed it to M(bdp.wan_tune.link_mtu_persist).
  returned: when state is present
  type: list
  elements: dict
  sample: [{name: wan0, mtu: 9000}]
protected:
  description: Interfaces left alone unless allow_control_interface is set, with the reason.
  returned: when state is present
  type: dict
  sample: {eth0: "carries the default route"}
tcp_mtu_probing:
  description: The live net.ipv4.tcp_mtu_probing (1 or 2 turns on black-hole detection for TCP).
  returned: when state is present
  type: str
  sample: "1"
restored:
  description: Interfaces set back to their earlier MTU by this call.
  returned: when state is reverted or absent, or a proof failed
  type: dict
  sample: {wan0: 1500}
outcome:
  description: How the pending change ended (confirmed, restored_by_timer, restored_by_module).
  returned: when state is confirmed or reverted
  type: str
  sample: restored_by_timer
summary:
  description: One paragraph a human reads, saying what changed, what was proven and what was restored.
  returned: always
  type: str
check_mode:
  description: Whether this call ran in check mode (also when only the task was, with C(check_mode) or C(apply)).
  returned: always
  type: bool
"""

import errno
import json
import os
import random
import select
import shutil
import signal
import socket
import sys
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils import files
from ansible_collections.bdp.wan_tune.plugins.module_utils import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils import mtuproof
from ansible_collections.bdp.wan_tune.plugins.module_utils import sysctl

STATE_FILE = 'jumbo_mtu.json'
REVERT_LOG = 'jumbo_mtu-reverts.log'
LISTENER_PID = 'jumbo_mtu-listener.pid'
LISTENER_MARK = 'bdp-wan-tune-mtu-listener'
UNIT_PREFIX = 'bdp-wan-tune-mtu-'
DMI_DIR = '/sys/class/dmi/id'
DMI_KEYS = ('sys_vendor', 'product_name', 'product_version', 'bios_vendor', 'bios_version', 'chassis_asset_tag')


def spawn_detached(argv, ready_pipe=False):
    """Start ``argv`` in its own session, detached from this module (no stdio, no fds), without waiting.

    Returns (pid, read end of a pipe that is the child's stdout, or None).  The child outlives the
    module run: the commit-confirm timer and the proof listener must.
    """
    read_fd, write_fd = os.pipe() if ready_pipe else (None, None)
    pid = os.fork()
    if pid == 0:                                    # the child
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(write_fd if ready_pipe else null, 1)
            os.dup2(null, 2)
            os.closerange(3, 65536)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)                           # pylint: disable=protected-access
    if ready_pipe:
        os.close(write_fd)
    return pid, read_fd


def _reap(pid):
    """Collect the child if it has already exited; returns its exit status or None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except OSError:
        return None
    if not done:
        return None
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)


def _boot_id():
    return (files.read_text('/proc/sys/kernel/random/boot_id') or '').strip()


class LinkMtu(object):
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.ip = module.get_bin_path('ip', required=True)
        self.state_path = os.path.join(self.p['state_dir'], STATE_FILE)
        self.result = {'changed': False, 'summary': '', 'check_mode': module.check_mode}

    # ------------------------------------------------------------------ helpers
    def fail(self, msg, **extra):
        self.result.update(extra)
        self.result['summary'] = msg
        self.module.fail_json(msg=msg, **self.result)

    def run_ip(self, args, check=True):
        rc, out, err = self.module.run_command([self.ip] + args)
        if check and rc != 0:
            raise RuntimeError('ip %s: %s' % (' '.join(args), (err or out).strip()))
        return rc, out, err

    def links(self):
        _rc, out, _err = self.run_ip(['-d', '-j', 'link', 'show'])
        return linkmtu.parse_links(json.loads(out or '[]'))

    def route(self, address):
        rc, out, err = self.run_ip(['-j', 'route', 'get', address], check=False)
        if rc != 0:
            return None, (err or out).strip()
        data = json.loads(out or '[]')
        return (data[0] if data else None), None

    def load_state(self):
        return files.load_record(self.state_path)

    def save_state(self, state):
        files.save_record(self.module, self.state_path, state)

    def drop_state(self):
        files.save_record(self.module, self.state_path, {})

    def set_mtu(self, name, mtu):
        self.run_ip(['link', 'set', 'dev', name, 'mtu', str(mtu)])

    def run_dir(self):
        directory = self.p['run_dir']
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        return directory

    # ------------------------------------------------------------------ peers and protection
    def resolve_peers(self):
        peers, errors = [], []
        for text in self.p['peers']:
            try:
                peer = linkmtu.parse_peer(text)
            except linkmtu.MtuError as exc:
                errors.append(str(exc))
                continue
            if peer['address'] is None:
                try:
                    infos = socket.getaddrinfo(peer['name'], None, 0, socket.SOCK_DGRAM)
                except socket.gaierror as exc:
                    errors.append('peer %r does not resolve on this host (%s); use an address or a name this host '
                                  'can resolve.' % (text, exc.strerror or exc))
                    continue
                infos.sort(key=lambda info: 0 if info[0] == socket.AF_INET else 1)
                peer['address'] = infos[0][4][0]
                peer['family'] = 6 if infos[0][0] == socket.AF_INET6 else 4
            route, err = self.route(peer['address'])
            if route is None:
                errors.append('peer %s (%s): no route from this host (%s).' % (text, peer['address'], err))
                continue
            if route.get('type') == 'local' or route.get('dev') == 'lo':
                errors.append('peer %s (%s) is an address of this host; list the other end of the path.'
                              % (text, peer['address']))
                continue
            peer['interface'] = route.get('dev')
            peer['gateway'] = route.get('gateway')
            peer['source'] = route.get('prefsrc')
            peers.append(peer)
        return peers, errors

    def ssh_client(self):
        """The SSH client address of this session, from this process or an ancestor (become drops the env)."""
        conn = os.environ.get('SSH_CONNECTION') or os.environ.get('SSH_CLIENT')
        pid = os.getpid()
        for dummy in range(40):
            if conn:
                return conn.split()[0]
            stat = files.read_text('/proc/%d/stat' % pid)
            try:
                pid = int(stat.rsplit(')', 1)[1].split()[1])
            except (AttributeError, IndexError, ValueError):
                return None
            if pid <= 1:
                return None
            env = files.read_text('/proc/%d/environ' % pid) or ''
            values = dict(item.split('=', 1) for item in env.split('\0') if '=' in item)
            conn = values.get('SSH_CONNECTION') or values.get('SSH_CLIENT')
        return None

    def protected(self):
        found = {}
        for family in ('-4', '-6'):
            rc, out, _err = self.run_ip([family, '-j', 'route', 'show', 'default'], check=False)
            if rc != 0:
                continue
            for route in json.loads(out or '[]'):
                devs = [route.get('dev')] + [hop.get('dev') for hop in route.get('nexthops', [])]
                for dev in devs:
                    if dev:
                        found.setdefault(dev, 'carries the default route (%s)' % ('IPv4' if family == '-4' else 'IPv6'))
        client = self.ssh_client()
        if client:
            route, _err = self.route(client)
            if route and route.get('dev'):
                found[route['dev']] = 'carries the Ansible control connection (SSH from %s)' % client
        if self.p['control_hosts']:
            rc, out, _err = self.run_ip(['-j', 'addr', 'show'], check=False)
            addrs = {}
            for link in json.loads(out or '[]') if rc == 0 else []:
                for info in link.get('addr_info', []):
                    addrs[info.get('local')] = link.get('ifname')
            for host in self.p['control_hosts']:
                try:
                    infos = socket.getaddrinfo(host, None, 0, socket.SOCK_DGRAM)
                except (socket.gaierror, UnicodeError):
                    continue
                for info in infos:
                    dev = addrs.get(info[4][0])
                    if dev and dev != 'lo':
                        found.setdefault(dev, 'holds %s, the address Ansible connects to' % host)
        return found

    def platform(self):
        choice = self.p['platform']
        if self.p['platform_max_mtu']:
            return {'platform': 'configured', 'max_mtu': self.p['platform_max_mtu'],
                    'evidence': 'platform_max_mtu', 'note': 'set by the caller'}
        if choice == 'none':
            return None
        if choice != 'auto':
            limit, note = linkmtu.CLOUD_LIMITS[choice]
            return {'platform': choice.split('-')[0], 'max_mtu': limit, 'evidence': 'platform=%s' % choice,
                    'note': note}
        dmi = dict((key, files.read_text(os.path.join(DMI_DIR, key)) or '') for key in DMI_KEYS)
        drivers = {}
        try:
            for name in os.listdir('/sys/class/net'):
                target = os.path.join('/sys/class/net', name, 'device', 'driver')
                if os.path.islink(target):
                    drivers[name] = os.path.basename(os.readlink(target))
        except OSError:
            pass
        return linkmtu.cloud_platform(dmi, drivers)

    # ------------------------------------------------------------------ commit-confirm
    def arm(self, token, revert_steps):
        timeout = self.p['confirm_timeout']
        directory = self.run_dir()
        script = os.path.join(directory, 'jumbo_mtu-%s.sh' % token)
        decided = os.path.join(directory, 'jumbo_mtu-%s.decided' % token)
        log = os.path.join(self.p['state_dir'], REVERT_LOG)
        deadline = time.time() + timeout
        with open(script, 'w') as handle:
            handle.write(linkmtu.revert_script(token, revert_steps, decided, log, deadline))
        os.chmod(script, 0o700)
        method = self.p['commit_method']
        systemd = os.path.isdir('/run/systemd/system') and self.module.get_bin_path('systemd-run')
        if method == 'systemd' and not systemd:
            raise RuntimeError('commit_method=systemd, but systemd is not running here (no /run/systemd/system)')
        commit = {'token': token, 'script': script, 'decided': decided, 'timeout': timeout, 'armed_at': time.time(),
                  'deadline': deadline, 'boot_id': _boot_id(), 'revert_steps': revert_steps}
        if method != 'process' and systemd:
            unit = UNIT_PREFIX + token
            rc, out, err = self.module.run_command([
                systemd, '--unit', unit, '--description',
                'bdp.wan_tune.jumbo_mtu commit-confirm: restore the MTU unless confirmed',
                '--on-active=%ds' % timeout, '--timer-property=AccuracySec=1s', '--collect',
                '/bin/sh', script])
            if rc != 0:
                raise RuntimeError('systemd-run could not arm the timer: %s' % (err or out).strip())
            rc, out, _err = self.module.run_command(['systemctl', 'is-active', unit + '.timer'])
            if out.strip() != 'active':
                raise RuntimeError('the timer %s.timer is %r, not active' % (unit, out.strip()))
            commit.update(method='systemd', unit=unit)
        else:
            pid, _pipe = spawn_detached(['/bin/sh', '-c', 'sleep %d; exec /bin/sh "$0"' % timeout, script])
            with open(os.path.join(directory, 'jumbo_mtu-%s.pid' % token), 'w') as handle:
                handle.write('%d\n' % pid)
            commit.update(method='process', pid=pid)
            time.sleep(0.05)
            status = _reap(pid)
            if status is not None:
                raise RuntimeError('the timer process exited at once (rc %s)' % status)
        return commit

    def timer_alive(self, commit):
        if commit.get('method') == 'systemd':
            rc, out, _err = self.module.run_command(['systemctl', 'is-active', commit['unit'] + '.timer'])
            return out.strip() in ('active', 'activating')
        pid = commit.get('pid')
        cmdline = files.read_text('/proc/%s/cmdline' % pid) if pid else None
        return bool(cmdline and commit['script'] in cmdline)

    def disarm(self, commit):
        if commit.get('method') == 'systemd':
            self.module.run_command(['systemctl', 'stop', commit['unit'] + '.timer'])
            self.module.run_command(['systemctl', 'reset-failed', commit['unit'] + '.timer', commit['unit'] + '.service'])
        elif commit.get('pid') and self.timer_alive(commit):
            try:
                os.killpg(commit['pid'], signal.SIGTERM)
            except OSError:
                pass
        for path in (commit.get('script'), os.path.join(os.path.dirname(commit.get('script') or '/'),
                                                        'jumbo_mtu-%s.pid' % commit.get('token'))):
            if path and os.path.exists(path):
                os.unlink(path)

    def claim(self, commit, by):
        """Take the decision for the pending change: True if this call decides, False if the timer already did."""
        try:
            os.mkdir(commit['decided'])
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                return False
            if exc.errno == errno.ENOENT and not os.path.isdir(os.path.dirname(commit['decided'])):
                return True     # /run was cleared: rebooted, the timer is gone with it
            raise
        with open(os.path.join(commit['decided'], 'by'), 'w') as handle:
            handle.write(by + '\n')
        return True

    def decided_by(self, commit):
        text = files.read_text(os.path.join(commit['decided'], 'by'))
        if text is None:
            return 'timer' if os.path.isdir(commit['decided']) else None
        return text.strip()

    def revert_records(self):
        records = []
        for line in (files.read_text(os.path.join(self.p['state_dir'], REVERT_LOG)) or '').splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        return records

    def log_revert(self, token, by, restored):
        path = os.path.join(self.p['state_dir'], REVERT_LOG)
        lines = (files.read_text(path) or '').splitlines()[-49:]
        lines.append(json.dumps({'token': token, 'by': by, 'at': int(time.time()),
                                 'restored': ' '.join('%s=%s' % item for item in sorted(restored.items())),
                                 'rc': 0, 'failed': ''}))
        with open(path, 'w') as handle:
            handle.write('\n'.join(lines) + '\n')

    def restore(self, steps):
        """Apply revert steps [(name, current, previous)]; returns (restored dict, errors)."""
        restored, errors = {}, []
        for name, _current, previous in steps:
            try:
                self.set_mtu(name, previous)
                restored[name] = previous
            except RuntimeError as exc:
                errors.append(str(exc))
        return restored, errors

    def stale(self, pending):
        """A pending change whose timer cannot fire any more (the host rebooted) and that nobody decided."""
        return pending.get('boot_id') and pending['boot_id'] != _boot_id()

    # ------------------------------------------------------------------ listener
    def listener_file(self):
        return os.path.join(self.p['run_dir'], LISTENER_PID)

    def stop_listener(self):
        text = files.read_text(self.listener_file())
        if not text:
            return False
        stopped = False
        try:
            pid = int(text.split()[0])
            cmdline = files.read_text('/proc/%d/cmdline' % pid) or ''
            if LISTENER_MARK in cmdline:
                os.kill(pid, signal.SIGTERM)
                stopped = True
        except (ValueError, OSError):
            pass
        try:
            os.unlink(self.listener_file())
        except OSError:
            pass
        return stopped

    def start_listener(self, peers):
        self.stop_listener()
        allowed = ','.join(sorted(set(peer['address'] for peer in peers))) or '-'
        pid, pipe = spawn_detached([sys.executable or '/usr/bin/python3', '-c', mtuproof.LISTENER,
                                    str(self.p['proof_port']), str(self.p['confirm_timeout'] + 60), allowed,
                                    str(4 * 2 ** 20), LISTENER_MARK], ready_pipe=True)
        line = b''
        deadline = time.time() + 15
        while not line.endswith(b'\n') and time.time() < deadline:
            if not select.select([pipe], [], [], max(deadline - time.time(), 0))[0]:
                break
            chunk = os.read(pipe, 256)
            if not chunk:
                break
            line += chunk
        os.close(pipe)
        line = line.decode(errors='replace').strip()
        if not line.startswith('ready'):
            _reap(pid)
            return {'running': False, 'port': self.p['proof_port'], 'error': line or 'exited at once'}
        self.run_dir()
        with open(self.listener_file(), 'w') as handle:
            handle.write('%d %d\n' % (pid, self.p['proof_port']))
        return {'running': True, 'port': self.p['proof_port'], 'pid': pid, 'allowed': allowed.split(',')}

    # ------------------------------------------------------------------ proof
    def prove_all(self, peers, mtus, before=None):
        results = []
        for peer in peers:
            dev = peer['interface']
            mtu = mtus.get(dev)
            item = {'peer': peer['peer'], 'address': peer['address'], 'interface': dev, 'mtu': mtu}
            if mtu is None:
                item.update(ok=False, summary='the route to %s goes through %s, which this host cannot see'
                            % (peer['address'], dev))
                results.append(item)
                continue

            def exchange(port, timeout, peer=peer):
                return mtuproof.tcp_exchange(peer['address'], peer['family'], port, timeout=timeout)

            proof = mtuproof.prove(peer['address'], peer['family'], mtu, (before or {}).get(dev),
                                   port=self.p['proof_port'], tcp=self.p['tcp_proof'], count=self.p['probe_count'],
                                   exchange=exchange if self.p['tcp_proof'] != 'off' else None)
            item.update(proof)
            results.append(item)
        return results

    def quick_verify(self, peers, mtus):
        """One full-size DF probe per peer (read-only); bisect only to explain a failure."""
        results = []
        for peer in peers:
            dev = peer['interface']
            mtu = mtus.get(dev)
            item = {'peer': peer['peer'], 'address': peer['address'], 'interface': dev, 'mtu': mtu}
            proof = mtuproof.prove(peer['address'], peer['family'], mtu, None, tcp='off', count=self.p['probe_count'])
            item.update(proof)
            results.append(item)
        return results

    # ------------------------------------------------------------------ states
    def present(self):
        p = self.p
        try:
            target = linkmtu.parse_mtu(p['mtu'], 'mtu')
            for name in p['interfaces']:
                linkmtu.check_ifname(name)
        except linkmtu.MtuError as exc:
            self.fail('%s Nothing was changed.' % exc)
        if not p['interfaces'] and not p['peers']:
            self.fail('Give interfaces, peers or both: with neither there is nothing to change or prove. Nothing '
                      'was changed.')
        peers, errors = self.resolve_peers()
        links = self.links()
        requested = [(name, 'named in interfaces') for name in p['interfaces']]
        if not requested:
            for peer in peers:
                if peer['interface'] not in [item[0] for item in requested]:
                    requested.append((peer['interface'], 'route to %s' % peer['peer']))
        protected = self.protected()
        platform = self.platform()
        plan = linkmtu.plan(links, requested, target, protected=protected, platform=platform, clamp=p['clamp'],
                            raise_parents=p['raise_parents'], allow_lower=p['allow_lower'],
                            allow_protected=p['allow_control_interface'])
        errors = errors + plan['errors']
        self.result.update(interfaces=plan['entries'], platform=platform, protected=protected,
                           peers=[dict((k, v) for k, v in peer.items()) for peer in peers],
                           tcp_mtu_probing=sysctl.read_live('net.ipv4.tcp_mtu_probing'))
        if errors:
            self.fail('%s Nothing was changed.' % ' '.join(errors))
        for text in plan['warnings']:
            self.module.warn(text)
        self.result['notes'] = plan['notes']
        self.result['would_change'] = plan['changed']
        self.result['persist'] = [{'name': name, 'mtu': entry['after']} for name, entry in plan['entries'].items()
                                  if entry['status'] in ('change', 'ok')]
        self.result['diff'] = {'before': linkmtu.diff_text(plan['entries'], 'before'),
                               'after': linkmtu.diff_text(plan['entries'], 'after'),
                               'before_header': 'live MTU (ip link)', 'after_header': 'live MTU (ip link)'}
        if self.result['tcp_mtu_probing'] in ('0', None) and plan['changed']:
            self.module.warn('net.ipv4.tcp_mtu_probing is %s: TCP has no black-hole detection if a hop drops large '
                             'segments later. bdp.wan_tune.tcp_buffers sets it to 1 in its sysctl.d file; run it too.'
                             % self.result['tcp_mtu_probing'])
        state = self.load_state()
        pending = state.get('pending')
        if pending and not self.module.check_mode:
            pending = self.settle(state, pending)
        if pending and plan['changed']:
            self.fail('Change %s (%s) is still waiting for its confirmation, and this call asks for another one. '
                      'Confirm it (state=confirmed), undo it (state=reverted), or let its timer restore it at %s. '
                      'Nothing was changed.'
                      % (pending['token'], ', '.join('%s %s -> %s' % tuple(step) for step in pending['changes']),
                         time.strftime('%H:%M:%S', time.localtime(pending['deadline']))))
        if pending:
            return self.prove_pending(state, pending, peers, links)
        if not plan['changed']:
            return self.unchanged(peers, links)
        self.result['changed'] = True
        if self.module.check_mode:
            self.result['summary'] = 'would set %s' % ', '.join(
                '%s %d -> %d' % step for step in plan['steps'])
            return
        return self.apply(state, plan, peers, links)

    def settle(self, state, pending):
        """A pending change that already ended (timer fired, host rebooted) is recorded and cleared."""
        decided = self.decided_by(pending)
        if decided is None and not self.stale(pending):
            return pending
        end = linkmtu.outcome(pending, decided or 'timer', self.revert_records())
        note = ('the earlier change %s was restored by its commit-confirm timer%s before this run'
                % (pending['token'], ' at %s' % time.strftime('%F %T', time.localtime(end['at'])) if end['at'] else '')
                if not self.stale(pending) else
                'the earlier change %s was never confirmed and the host has rebooted since' % pending['token'])
        self.module.warn(note + '; it is not in effect.')
        self.drop_pending(state, pending, end['state'])
        return None

    def drop_pending(self, state, pending, outcome):
        """Forget a pending change the timer (or a reboot) already ended: record it, remove its files."""
        self.disarm(pending)
        try:
            shutil.rmtree(pending['decided'])
        except OSError:
            pass
        originals = state.get('original', {})
        committed = state.get('committed', {})
        for name in [step[0] for step in pending['changes']] + list(pending.get('follows', {})):
            if name not in committed:
                originals.pop(name, None)
        state.setdefault('history', []).append({'token': pending['token'], 'outcome': outcome,
                                                'at': int(time.time())})
        state['history'] = state['history'][-20:]
        state['pending'] = None
        self.save_state(state)

    def apply(self, state, plan, peers, links):
        p = self.p
        before = dict((name, links[name]['mtu']) for name in links)
        # the path must work now at the current MTU, or the proof would blame the change
        baseline = []
        for peer in peers:
            mtu = before.get(peer['interface'])
            res = mtuproof.prove(peer['address'], peer['family'], mtu, None, tcp='off', count=p['probe_count'])
            if not res['ok']:
                baseline.append('%s (%s via %s) at the current MTU %s: %s' % (peer['peer'], peer['address'],
                                                                              peer['interface'], mtu, res['summary']))
        if baseline:
            self.fail('The path is not healthy before the change, so it cannot be proven after it: %s. Nothing was '
                      'changed.' % ' '.join(baseline))
        token = '%s-%06x' % (time.strftime('%Y%m%d%H%M%S'), random.randint(0, 0xffffff))
        try:
            commit = self.arm(token, plan['revert_steps'])
        except (RuntimeError, OSError) as exc:
            self.fail('Could not arm the commit-confirm timer, so the MTU was not changed: %s.' % exc)
        commit['changes'] = plan['steps']
        commit['follows'] = dict((name, entry['before']) for name, entry in plan['entries'].items()
                                 if entry['status'] == 'follows')
        commit['peers'] = [peer['peer'] for peer in peers]
        originals = state.setdefault('original', {})
        for name, entry in plan['entries'].items():
            if entry['status'] in ('change', 'follows'):
                originals.setdefault(name, entry['before'])
        state['pending'] = commit
        self.save_state(state)
        self.result['commit'] = self.public(commit, 'pending')
        done = []
        try:
            for name, _current, mtu in plan['steps']:
                done.append(name)
                self.set_mtu(name, mtu)
            after = self.links()
            wrong = ['%s is %s, wanted %s' % (name, after.get(name, {}).get('mtu'), entry['after'])
                     for name, entry in plan['entries'].items()
                     if entry['status'] in ('change', 'follows') and after.get(name, {}).get('mtu') != entry['after']]
            if wrong:
                raise RuntimeError('the kernel did not take the MTU: %s' % '; '.join(wrong))
        except RuntimeError as exc:
            self.claim(commit, 'module')
            steps = [step for step in plan['revert_steps'] if step[0] in done]
            restored, errors = self.restore(steps)
            self.disarm(commit)
            self.finish(state, commit, 'restored_by_module')
            self.fail('Setting the MTU failed and the previous MTUs were restored (%s): %s.%s'
                      % (', '.join('%s %s' % item for item in restored.items()) or 'nothing to restore', exc,
                         ' Restore errors: %s' % '; '.join(errors) if errors else ''), restored=restored)
        if p['listen']:
            self.result['listener'] = self.start_listener(peers)
        summary = 'set %s; commit-confirm timer %s restores it at %s unless confirmed' % (
            ', '.join('%s %d -> %d' % step for step in plan['steps']),
            commit.get('unit') or 'pid %s' % commit.get('pid'),
            time.strftime('%H:%M:%S', time.localtime(commit['deadline'])))
        self.result['summary'] = summary
        if p['prove'] and peers:
            self.check_proof(state, commit, peers, after, before)

    def prove_pending(self, state, pending, peers, links):
        """Prove a change an earlier call made (the play changed every host first)."""
        self.result['commit'] = self.public(pending, 'pending')
        wrong = []
        for name, _before, after in pending['changes']:
            if links.get(name, {}).get('mtu') != after:
                wrong.append('%s is %s, the pending change set %s' % (name, links.get(name, {}).get('mtu'), after))
        if self.p['listen'] and not self.module.check_mode:
            self.result['listener'] = self.start_listener(peers)
        if wrong:
            self.result['summary'] = 'pending change %s no longer matches the host: %s' % (pending['token'],
                                                                                           '; '.join(wrong))
            if not self.module.check_mode:
                self.fail(self.result['summary'] + '. Run state=reverted to restore the previous MTUs.')
            return
        if self.module.check_mode or not self.p['prove'] or not peers:
            self.result['summary'] = 'change %s is pending confirmation' % pending['token']
            return
        before = dict((name, prev) for name, prev, _after in pending['changes'])
        self.check_proof(state, pending, peers, links, before)

    def check_proof(self, state, commit, peers, links, before):
        mtus = dict((name, link['mtu']) for name, link in links.items())
        results = self.prove_all(peers, mtus, before)
        self.result['peers'] = results
        ok, failed = linkmtu.proof_verdict(results)
        if ok:
            self.result['summary'] = ('%s; path proven to %s' % (self.result.get('summary') or 'change %s pending'
                                                                 % commit['token'],
                                                                 '; '.join('%s (%s via %s): %s' % (
                                                                     r['peer'], r['address'], r['interface'],
                                                                     r['summary']) for r in results)))
            return
        if not self.claim(commit, 'module'):
            self.fail('The path proof failed, and the commit-confirm timer had already restored the previous MTUs: '
                      '%s' % self.failure_text(failed))
        restored, errors = self.restore(commit['revert_steps'])
        self.disarm(commit)
        self.finish(state, commit, 'restored_by_module')
        self.stop_listener()
        again = []
        for item in failed:
            peer = [p_ for p_ in peers if p_['peer'] == item['peer']][0]
            back = before.get(item['interface'], links.get(item['interface'], {}).get('mtu'))
            res = mtuproof.prove(peer['address'], peer['family'], back, None, tcp='off', count=self.p['probe_count'])
            again.append('%s-byte packets to %s get through again' % (back, item['peer']) if res['ok'] else
                         'even %s-byte packets to %s still fail: %s' % (back, item['peer'], res['summary']))
        self.result['restored'] = restored
        self.fail('Path proof failed, so the MTU was restored (%s): %s After the restore: %s.%s See docs/jumbo.md, '
                  '"When the proof fails".'
                  % (', '.join('%s %s' % item for item in sorted(restored.items())), self.failure_text(failed),
                     '; '.join(again), ' Restore errors: %s.' % '; '.join(errors) if errors else ''),
                  restored=restored)

    def failure_text(self, failed):
        return ' '.join('Peer %s (%s via %s, MTU %s): %s.' % (item['peer'], item['address'], item['interface'],
                                                              item.get('mtu'), item.get('summary'))
                        for item in failed)

    def unchanged(self, peers, links):
        p = self.p
        if p['listen'] and not self.module.check_mode:
            self.result['listener'] = self.start_listener(peers)
        if self.module.check_mode or not p['verify'] or not peers:
            self.result['summary'] = 'nothing to change'
            return
        mtus = dict((name, link['mtu']) for name, link in links.items())
        results = self.quick_verify(peers, mtus)
        self.result['peers'] = results
        ok, failed = linkmtu.proof_verdict(results)
        if not ok:
            self.fail('The MTU is already as wanted, but the path no longer carries full-size packets: %s Nothing '
                      'was changed; fix the path, or undo with state=absent. See docs/jumbo.md.'
                      % self.failure_text(failed))
        self.result['summary'] = 'nothing to change; verified %s' % '; '.join(
            '%s at %s bytes' % (r['peer'], r['mtu']) for r in results)

    def finish(self, state, commit, outcome):
        state.setdefault('history', []).append({'token': commit['token'], 'outcome': outcome, 'at': int(time.time())})
        state['history'] = state['history'][-20:]
        if outcome != 'confirmed':
            originals = state.get('original', {})
            committed = state.get('committed', {})
            for name, _before, _after in commit['changes']:
                if name not in committed:
                    originals.pop(name, None)
            for name in commit.get('follows', {}):
                if name not in committed:
                    originals.pop(name, None)
        state['pending'] = None
        try:
            shutil.rmtree(commit['decided'])
        except OSError:
            pass
        if outcome != 'confirmed':
            self.log_revert(commit['token'], 'module', dict((name, prev) for name, _c, prev in commit['revert_steps']))
        self.save_state(state)

    def public(self, commit, status):
        keys = ('token', 'method', 'unit', 'pid', 'timeout', 'armed_at', 'deadline')
        out = dict((key, commit[key]) for key in keys if key in commit)
        out['state'] = status
        out['changes'] = [{'interface': name, 'before': before, 'after': after}
                          for name, before, after in commit.get('changes', [])]
        return out

    def confirmed(self):
        state = self.load_state()
        pending = state.get('pending')
        stopped = False if self.module.check_mode else self.stop_listener()
        if not pending:
            self.result['summary'] = 'no pending MTU change to confirm'
            self.result['outcome'] = None
            self.result['listener_stopped'] = stopped
            return
        self.result['commit'] = self.public(pending, 'pending')
        if self.module.check_mode:
            self.result.update(changed=True, summary='would confirm change %s' % pending['token'])
            return
        if self.stale(pending) or not self.claim(pending, 'confirmed'):
            end = linkmtu.outcome(pending, self.decided_by(pending) or 'timer', self.revert_records())
            self.settle(state, pending)
            self.result['outcome'] = end['state']
            at = time.strftime('%F %T', time.localtime(end['at'])) if end['at'] else 'an unknown time'
            self.fail('Too late: the commit-confirm timer of change %s restored the previous MTUs (%s) at %s, %d s '
                      'after the change, before this confirmation. The change is not in effect. If the control '
                      'connection was fine, raise confirm_timeout (the whole play must fit in it).'
                      % (pending['token'], ', '.join('%s %s' % (n, prev) for n, _c, prev in pending['revert_steps']),
                         at, pending['timeout']))
        self.disarm(pending)
        links = self.links()
        drift = ['%s is %s' % (name, links.get(name, {}).get('mtu')) for name, _b, after in pending['changes']
                 if links.get(name, {}).get('mtu') != after]
        committed = state.setdefault('committed', {})
        for name, _before, after in pending['changes']:
            committed[name] = after
        for name in pending.get('follows', {}):
            committed[name] = links.get(name, {}).get('mtu')
        state.setdefault('order', [])
        for name, _before, _after in pending['changes']:
            if name not in state['order']:
                state['order'].append(name)
        self.finish(state, pending, 'confirmed')
        self.result.update(changed=True, outcome='confirmed', listener_stopped=stopped)
        self.result['commit']['state'] = 'confirmed'
        self.result['summary'] = 'confirmed change %s (%s); the timer is disarmed' % (
            pending['token'], ', '.join('%s %d -> %d' % tuple(step) for step in pending['changes']))
        if drift:
            self.module.warn('after confirming, %s differ from the change' % ', '.join(drift))

    def reverted(self):
        state = self.load_state()
        pending = state.get('pending')
        if not self.module.check_mode:
            self.stop_listener()
        if not pending:
            history = state.get('history', [])
            last = history[-1] if history else None
            self.result['outcome'] = last['outcome'] if last else None
            self.result['summary'] = ('no pending change; the last one (%s) ended %s at %s' % (
                last['token'], last['outcome'].replace('_', ' '), time.strftime('%F %T', time.localtime(last['at'])))
                if last else 'no pending change and none recorded')
            return
        self.result['commit'] = self.public(pending, 'pending')
        if self.module.check_mode:
            self.result.update(changed=True, summary='would restore %s' % pending['token'])
            return
        if not self.stale(pending) and self.claim(pending, 'module'):
            restored, errors = self.restore(pending['revert_steps'])
            self.disarm(pending)
            self.finish(state, pending, 'restored_by_module')
            self.result.update(changed=True, restored=restored, outcome='restored_by_module')
            self.result['summary'] = ('change %s was not confirmed; restored %s now%s'
                                      % (pending['token'], ', '.join('%s %s' % i for i in sorted(restored.items())),
                                         ' (errors: %s)' % '; '.join(errors) if errors else ''))
            return
        end = linkmtu.outcome(pending, self.decided_by(pending) or 'timer', self.revert_records())
        self.drop_pending(state, pending, end['state'])
        at = time.strftime('%F %T', time.localtime(end['at'])) if end['at'] else 'boot'
        restored = dict((name, prev) for name, _c, prev in pending['revert_steps'])
        self.result.update(outcome=end['state'], restored=restored, record=end['record'])
        self.result['summary'] = ('change %s was not confirmed; the commit-confirm timer restored %s at %s'
                                  % (pending['token'], ', '.join('%s %s' % i for i in sorted(restored.items())), at))

    def absent(self):
        state = self.load_state()
        if state.get('pending'):
            self.reverted()
            state = self.load_state()
        originals = state.get('original', {})
        committed = state.get('committed', {})
        links = self.links()
        order = [name for name in reversed(state.get('order', [])) if name in originals]
        order += [name for name in originals if name not in order]
        steps, left = [], []
        for name in order:
            live = links.get(name, {}).get('mtu')
            if name not in links:
                left.append('%s no longer exists' % name)
            elif live == originals[name]:
                continue
            elif name in committed and live != committed[name]:
                left.append('%s is %s, changed by someone else since this role set %s: left alone'
                            % (name, live, committed[name]))
            elif name in [s[0] for s in steps]:
                continue
            else:
                steps.append((name, live, originals[name]))
        # members of a bond follow the bond: restore masters only when the master is in the list
        masters = set(s[0] for s in steps)
        steps = [s for s in steps if links.get(s[0], {}).get('master') not in masters
                 or links[links[s[0]]['master']].get('kind') not in linkmtu.PROPAGATING_MASTERS]
        self.result['diff'] = {'before': ''.join('%s mtu %s\n' % (n, c) for n, c, _p in steps),
                               'after': ''.join('%s mtu %s\n' % (n, prev) for n, _c, prev in steps),
                               'before_header': 'live MTU (ip link)', 'after_header': 'live MTU (ip link)'}
        for text in left:
            self.module.warn(text)
        self.result['changed'] = self.result['changed'] or bool(steps) or bool(state)
        if self.module.check_mode:
            self.result['summary'] = 'would restore %s' % (', '.join('%s %s' % (n, prev) for n, _c, prev in steps)
                                                           or 'nothing')
            return
        restored, errors = self.restore(steps)
        if errors:
            self.fail('Restoring the recorded MTU failed: %s; the record was kept so you can retry.'
                      % '; '.join(errors), restored=restored)
        self.stop_listener()
        self.drop_state()
        self.result['restored'] = dict(self.result.get('restored') or {}, **restored)
        self.result['summary'] = 'restored %s' % (', '.join('%s %s' % i for i in sorted(restored.items()))
                                                  or 'nothing (already at the recorded MTU)')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', default='present', choices=['present', 'confirmed', 'reverted', 'absent']),
            mtu=dict(type='int'),
            interfaces=dict(type='list', elements='str', default=[]),
            peers=dict(type='list', elements='str', default=[]),
            prove=dict(type='bool', default=True),
            verify=dict(type='bool', default=True),
            listen=dict(type='bool', default=False),
            tcp_proof=dict(type='str', default='auto', choices=['auto', 'required', 'off']),
            proof_port=dict(type='int', default=45219),
            probe_count=dict(type='int', default=3),
            confirm_timeout=dict(type='int', default=180),
            commit_method=dict(type='str', default='auto', choices=['auto', 'systemd', 'process']),
            allow_control_interface=dict(type='bool', default=False),
            control_hosts=dict(type='list', elements='str', default=[]),
            clamp=dict(type='bool', default=False),
            raise_parents=dict(type='bool', default=True),
            allow_lower=dict(type='bool', default=False),
            platform=dict(type='str', default='auto', choices=['auto', 'none', 'aws', 'gcp', 'azure', 'azure-mana']),
            platform_max_mtu=dict(type='int'),
            state_dir=dict(type='path', default='/var/lib/bdp_wan_tune'),
            run_dir=dict(type='path', default='/run/bdp_wan_tune'),
        ),
        required_if=[('state', 'present', ('mtu',))],
        supports_check_mode=True,
    )
    if module.params['confirm_timeout'] < 10:
        module.fail_json(msg='confirm_timeout: %d s is too short to confirm over a new connection; use 10 or more.'
                         % module.params['confirm_timeout'])
    if not 1 <= module.params['proof_port'] <= 65535:
        module.fail_json(msg='proof_port: %d is not a TCP port (1..65535).' % module.params['proof_port'])
    if module.params['probe_count'] < 1:
        module.fail_json(msg='probe_count: %d; send at least one probe.' % module.params['probe_count'])
    link = LinkMtu(module)
    try:
        getattr(link, module.params['state'])()
    except RuntimeError as exc:
        link.fail(str(exc))
    module.exit_json(**link.result)


if __name__ == '__main__':
    main()
