#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: iperf3_server
short_description: Start an iperf3 server for exactly one test, or stop a leftover one
version_added: 0.1.0
description:
  - With O(state=present), starts C(iperf3 -s -1 -D -J -p PORT --idle-timeout N -I PIDFILE --logfile LOG [-B bind])
    on the host the task runs on - meant for C(delegate_to) the peer of M(bdp.wan_tune.iperf3_verify). The server
    serves one test and exits (C(--one-off)); when nobody connects it exits after O(idle_timeout) seconds. So no
    server is left behind.
  - Waits until the server listens on the port (read from C(/proc/net/tcp) and C(/proc/net/tcp6), matched to the
    server's own socket; the module never connects, since a connection would use up the one test), then returns
    its pid and port.
  - O(port=0) picks a free port from O(port_range) by trying to bind it, so several clients can each get their
    own server on one peer.
  - A server this module started earlier on the same port (same pidfile) that is still waiting is replaced. One
    that is serving a test fails the task instead of being killed.
  - With O(state=absent), stops the server recorded in the pidfile (all of this module's pidfiles in the pid
    directory when O(port=0) and no O(pidfile)), after checking that the pid is an iperf3 process, and removes the
    pidfile and log.
  - Run as root, the module starts the server as O(user) (default C(nobody)) through C(setpriv), never as root. The
    server's pidfile and log are created for that user first (iperf3 cannot create them in the root-owned pid
    directory).
  - With O(authenticate=true), only the holder of credentials made for this one test can use the server (iperf3's
    own authentication - C(--rsa-private-key-path), C(--authorized-users-path)). The action plugin makes an RSA key
    pair, a user name and a password on the controller, hands the server its part in a file (never as a module
    argument), and returns RV(credentials), a handle that M(bdp.wan_tune.iperf3_verify) takes to run the test. The
    server's key and user list live in C(PIDFILE-without-.pid.auth/) (0700, files 0600, owned by O(user)) and are
    removed with O(state=absent).
  - Reports changed when it starts or stops a server (not for removing the files of one that already exited).
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  port:
    description: TCP port to listen on. V(0) picks the first free port of O(port_range).
    type: int
    default: 5201
  port_range:
    description: First and last port tried when O(port=0).
    type: list
    elements: int
    default: [5201, 5299]
  bind:
    description: Address to listen on (C(iperf3 -B)). Default - all addresses, IPv4 and IPv6.
    type: str
  idle_timeout:
    description:
      - Seconds the server waits for its test before it exits (C(iperf3 --idle-timeout)). V(0) leaves the option
        out, so an unused server waits forever - stop it with O(state=absent).
      - iperf3 before 3.11 restarts a one-off server after the idle timeout instead of ending it; the module warns,
        and O(state=absent) after the test removes it (see the examples).
    type: int
    default: 120
  startup_timeout:
    description: Seconds to wait for the server to listen.
    type: float
    default: 10
  pidfile:
    description:
      - The server's pidfile (C(iperf3 -I)); its log is written next to it with the suffix C(.log).
      - Default - C(/run/bdp-wan-tune/iperf3-PORT.pid) when the module runs as root, else
        C(/tmp/bdp-wan-tune-UID/iperf3-PORT.pid) (the directory is created with mode 0700).
    type: path
  state:
    description: V(present) starts a server for one test; V(absent) stops a leftover server and removes its files.
    type: str
    choices: [present, absent]
    default: present
  iperf3_path:
    description: The iperf3 program. Default - C(iperf3) from the PATH.
    type: path
  user:
    description:
      - The user the server runs as when the module runs as root (C(setpriv --reuid --regid --clear-groups)).
        Ignored when the module does not run as root (the server runs as the module's user).
      - V(root) keeps the server root, which this collection never does itself.
    type: str
    default: nobody
  authenticate:
    description:
      - Only a client with the credentials this task returns (RV(credentials)) can use the server; a stranger's
        connection is refused (C(test authorization failed)). Needs an iperf3 built with authentication (iperf3
        3.5 and later from the distributions) and the Python library cryptography on the controller.
      - iperf3 3.12 ends a one-test server after it refused a stranger, so the peer's test then finds nothing
        listening and fails; it never measures the stranger's traffic.
    type: bool
    default: false
  credentials:
    description:
      - With O(state=absent), the handle RV(credentials) of the server being stopped; its client part is removed
        from the controller if the test did not use it. Read by the action plugin only.
    type: str
  auth_src:
    description:
      - Set by the action plugin, never by a task - the file in the task's remote tmp dir that holds the server's
        key and user list. The module removes it when it has read it.
    type: path
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Nothing is started or stopped; RV(port) is the port that would be used.
requirements:
  - iperf3 3.1 or later (the C(iperf3) package); 3.11 or later for the idle timeout to end an unused server.
notes:
  - No secret is a module argument - the key and user list reach the host in a file the module reads and removes,
    and the password never reaches the server host at all (the user list holds its SHA-256).
  - The server runs with C(-J), so C(--get-server-output) (which M(bdp.wan_tune.iperf3_verify) passes) returns the
    server's own figures - the sender's congestion window and RTT in reverse tests, and its socket buffers.
  - The firewall of the host must let TCP O(port) in.
seealso:
  - module: bdp.wan_tune.iperf3_verify
"""

EXAMPLES = r"""
- name: Measure this host -> peer, and leave no server behind
  block:
    - name: Start a one-test iperf3 server on the peer
      bdp.wan_tune.iperf3_server:
        port: 0
      delegate_to: "{{ peer }}"
      register: iperf3_server

    - name: Measure
      bdp.wan_tune.iperf3_verify:
        server: "{{ peer }}"
        port: "{{ iperf3_server.port }}"
        rate: 1g
        rtt: 98
  always:
    - name: Stop the server if the test did not use it
      bdp.wan_tune.iperf3_server:
        port: "{{ iperf3_server.port | default(5201) }}"
        state: absent
      delegate_to: "{{ peer }}"

- name: Listen on one address only, on the default port, for up to 10 minutes
  bdp.wan_tune.iperf3_server:
    bind: 198.18.0.2
    idle_timeout: 600

- name: A server only the sender can use (iperf3's authentication, credentials made for this test)
  block:
    - name: Start it on the peer, on the address the sender tests to
      bdp.wan_tune.iperf3_server:
        port: 0
        bind: 198.18.0.2
        authenticate: true
      delegate_to: "{{ peer }}"
      register: iperf3_server

    - name: Measure with the server's credentials
      bdp.wan_tune.iperf3_verify:
        server: 198.18.0.2
        port: "{{ iperf3_server.port }}"
        credentials: "{{ iperf3_server.credentials }}"
  always:
    - name: Stop the server and remove its key
      bdp.wan_tune.iperf3_server:
        port: "{{ iperf3_server.port | default(5201) }}"
        credentials: "{{ iperf3_server.credentials | default(omit) }}"
        state: absent
      delegate_to: "{{ peer }}"
"""

RETURN = r"""
pid:
  description: Process id of the server; null in check mode and with O(state=absent).
  returned: always
  type: int
  sample: 4711
port:
  description: The port the server listens on (the one chosen when O(port=0)).
  returned: always
  type: int
  sample: 5201
pidfile:
  description: The server's pidfile.
  returned: when state is present
  type: str
  sample: /run/bdp-wan-tune/iperf3-5201.pid
logfile:
  description: The server's log (its JSON result once the test ran).
  returned: when state is present
  type: str
  sample: /run/bdp-wan-tune/iperf3-5201.log
command:
  description: The command that started (or would start) the server.
  returned: when state is present
  type: list
  elements: str
  sample: [/usr/bin/iperf3, -s, -1, -D, -J, -p, "5201", --idle-timeout, "120", -I, /run/bdp-wan-tune/iperf3-5201.pid,
           --logfile, /run/bdp-wan-tune/iperf3-5201.log]
iperf3_version:
  description: Version of iperf3 on the host.
  returned: when iperf3 is installed
  type: str
  sample: "3.12"
credentials:
  description:
    - With O(authenticate=true), the handle of this test's client credentials on the controller, for
      M(bdp.wan_tune.iperf3_verify)'s O(bdp.wan_tune.iperf3_verify#module:credentials). Not a secret - the
      credentials themselves stay in a 0600 file of Ansible's local tmp dir, removed when they are used and when
      ansible-playbook ends.
  returned: when authenticate is true, outside check mode
  type: str
  sample: 0f3c6d2a9b8e4f1a7c5d3e2b1a0f9e8d
user:
  description: The user the server runs as (null when the module does not run as root).
  returned: when state is present
  type: str
  sample: nobody
replaced_pid:
  description: A waiting server from an earlier run on the same port that was stopped first.
  returned: when one was replaced
  type: int
  sample: 4700
stopped:
  description: With O(state=absent), the servers stopped, each with pid, pidfile and port.
  returned: when state is absent
  type: list
  elements: dict
  sample: [{"pid": 4711, "pidfile": /run/bdp-wan-tune/iperf3-5201.pid, "port": 5201}]
removed:
  description:
    - With O(state=absent), the pidfiles and logs removed. A server that ran its test leaves its log, and one that
      ended on the idle timeout also its pidfile (iperf3 3.12 does); removing them alone does not count as changed.
  returned: when state is absent
  type: list
  elements: str
  sample: [/run/bdp-wan-tune/iperf3-5201.log, /run/bdp-wan-tune/iperf3-5201.auth]
"""

import errno
import glob
import json
import os
import pwd
import re
import shutil
import signal
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import tcptable
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3

PROC = '/proc'
LISTEN = tcptable.LISTEN
ESTABLISHED = tcptable.ESTABLISHED
PIDFILE_NAME = re.compile(r'^iperf3-(\d+)\.pid$')
AUTH_DIR_NAME = re.compile(r'^iperf3-(\d+)\.auth$')
KEY_FILE = 'private.pem'
USERS_FILE = 'users.csv'


def default_pid_dir():
    uid = os.geteuid()
    return '/run/bdp-wan-tune' if uid == 0 else '/tmp/bdp-wan-tune-%d' % uid


def sockets(port):
    """TCP sockets on local ``port``: list of (state, inode) (this network namespace)."""
    return [(item.state, item.inode) for item in tcptable.sockets(PROC) if item.local_port == port]


def socket_inodes(pid):
    """Inodes of the sockets process ``pid`` holds, or None when its fds cannot be read."""
    try:
        links = os.listdir(os.path.join(PROC, str(pid), 'fd'))
    except (IOError, OSError):
        return None
    inodes = set()
    for fd in links:
        try:
            target = os.readlink(os.path.join(PROC, str(pid), 'fd', fd))
        except (IOError, OSError):
            continue
        if target.startswith('socket:['):
            inodes.add(target[8:-1])
    return inodes


def listening(pid, port):
    """Whether ``pid`` listens on ``port`` (any LISTEN socket on it when the pid's fds cannot be read)."""
    listeners = [inode for state, inode in sockets(port) if state == LISTEN]
    owned = socket_inodes(pid)
    if owned is None:
        return bool(listeners)
    return any(inode in owned for inode in listeners)


def serving(port):
    """Whether a connection is established on local ``port`` (a test is running)."""
    return any(state == ESTABLISHED for state, inode in sockets(port))


def iperf3_process(pid, pidfile=None):
    """True when ``pid`` is alive, runs iperf3 (with ``-I pidfile`` when given) and belongs to us (or we are root).
    The pidfile check matters because a server that is not root can rewrite its pidfile: only the server started
    with that pidfile is ever stopped through it."""
    try:
        with open(os.path.join(PROC, str(pid), 'cmdline'), 'rb') as handle:
            argv = handle.read().split(b'\0')
        owner = os.stat(os.path.join(PROC, str(pid))).st_uid
    except (IOError, OSError):
        return False
    if not argv or b'iperf3' not in os.path.basename(argv[0]):
        return False
    if pidfile is not None and pidfile.encode() not in argv:
        return False
    return os.geteuid() == 0 or owner == os.geteuid()


def auth_dir(pidfile):
    """The directory of the server's key and user list: the pidfile's name with .auth instead of .pid."""
    return (pidfile[:-4] if pidfile.endswith('.pid') else pidfile) + '.auth'


def drop_command(setpriv, account):
    """The setpriv prefix that runs a command as ``account`` (a pwd entry) with its group only, no new privileges."""
    return [setpriv, '--reuid=%d' % account.pw_uid, '--regid=%d' % account.pw_gid, '--clear-groups',
            '--no-new-privs', '--']


def read_pid(path):
    try:
        with open(path) as handle:
            text = handle.read().strip()
    except (IOError, OSError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def bind_error(port, bind=None):
    """Why a listener could not bind ``port`` (on ``bind`` or on all addresses) as iperf3 would (SO_REUSEADDR):
    None when it can, else 'in use' or another reason."""
    if bind:
        try:
            infos = socket.getaddrinfo(bind, port, 0, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
        except socket.gaierror as exc:
            return 'cannot resolve %s: %s' % (bind, exc)
        targets = [(info[0], info[4]) for info in infos[:1]]
    else:
        targets = [(socket.AF_INET6, ('::', port)), (socket.AF_INET, ('0.0.0.0', port))]
    for family, address in targets:
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except (IOError, OSError):
            continue                     # no IPv6 on this host
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and not bind:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind(address)
            sock.listen(1)
        except (IOError, OSError) as exc:
            if exc.errno == errno.EADDRINUSE:
                return 'in use'
            return '%s is not an address of this host (%s)' % (bind, exc.strerror) if bind else str(exc)
        finally:
            sock.close()
        if not bind:
            return None                  # the dual-stack socket covered IPv4 too
    return None


class ServerBase(object):
    """The server's files (pid and log under the pid directory), iperf3, and stopping it (state=absent)."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.result = {'changed': False, 'pid': None, 'port': self.params['port']}
        self.installed_auth = None   # the key directory this call made, removed if the call fails

    def fail(self, msg, **extra):
        """Fail; a server key installed by this call is removed first (the server did not start)."""
        if self.installed_auth:
            shutil.rmtree(self.installed_auth, ignore_errors=True)
        self.result.update(extra)
        self.module.fail_json(msg=msg, **self.result)

    def pid_dir(self):
        if self.params['pidfile']:
            return os.path.dirname(os.path.abspath(self.params['pidfile']))
        return default_pid_dir()

    def paths(self, port):
        pidfile = (os.path.abspath(self.params['pidfile']) if self.params['pidfile']
                   else os.path.join(default_pid_dir(), 'iperf3-%d.pid' % port))
        logfile = (pidfile[:-4] if pidfile.endswith('.pid') else pidfile) + '.log'
        return pidfile, logfile

    def make_pid_dir(self):
        directory = self.pid_dir()
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700 if directory.startswith('/tmp/') else 0o755)
        info = os.lstat(directory)
        if info.st_uid not in (0, os.geteuid()) or (directory.startswith('/tmp/') and info.st_mode & 0o022):
            self.fail('%s belongs to another user or is writable by others, so its pidfiles cannot be trusted; '
                      'remove it or set pidfile to a path in a directory of your own.' % directory)

    def find_iperf3(self):
        path = iperf3.find_binary(self.module, self.params['iperf3_path'])
        if path is None:
            if self.module.check_mode:
                self.module.warn('iperf3 is not installed on this host; the real run fails unless an earlier task '
                                 'installs it (%s).' % iperf3.INSTALL_HINT)
                return None, None
            self.fail('iperf3 was not found on this host%s; %s.'
                      % (' at %s' % self.params['iperf3_path'] if self.params['iperf3_path'] else '',
                         iperf3.INSTALL_HINT))
        version = iperf3.binary_version(self.module, path, self.fail)
        self.result['iperf3_version'] = iperf3.version_string(version)
        return path, version

    # ------------------------------------------------------------ stop
    def stop(self, pidfile):
        """Stop the server of ``pidfile`` (if it is one) and remove the pidfile and log. Returns the pid or None."""
        pid = read_pid(pidfile)
        stopped = None
        if pid and iperf3_process(pid, pidfile):
            stopped = pid
            if not self.module.check_mode:
                self.kill(pid)
        if not self.module.check_mode:
            self.remove_files(pidfile)
        return stopped

    def remove_files(self, pidfile):
        """Remove the pidfile, the log and the key directory of ``pidfile``'s server."""
        for path in (pidfile, self.paths_for(pidfile)):
            try:
                os.unlink(path)
            except (IOError, OSError) as exc:
                if exc.errno != errno.ENOENT:
                    self.fail('Cannot remove %s: %s.' % (path, exc))
        if os.path.lexists(auth_dir(pidfile)):
            try:
                shutil.rmtree(auth_dir(pidfile))
            except (IOError, OSError) as exc:
                self.fail('Cannot remove the server key directory %s: %s.' % (auth_dir(pidfile), exc))

    @staticmethod
    def paths_for(pidfile):
        return (pidfile[:-4] if pidfile.endswith('.pid') else pidfile) + '.log'

    def kill(self, pid):
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
            try:
                os.kill(pid, sig)
            except OSError as exc:
                if exc.errno == errno.ESRCH:
                    return
                self.fail('Cannot stop iperf3 (pid %d): %s.' % (pid, exc))
            deadline = time.time() + wait
            while time.time() < deadline:
                if not iperf3_process(pid):
                    return
                time.sleep(0.05)
        self.fail('iperf3 (pid %d) did not exit after SIGKILL; check the host (a process in D state?).' % pid)

    def absent(self):
        if self.params['pidfile'] or self.params['port']:
            pidfiles = [self.paths(self.params['port'])[0]]
        else:
            pidfiles = sorted(set(path for path in glob.glob(os.path.join(default_pid_dir(), 'iperf3-*.pid'))
                                  if PIDFILE_NAME.match(os.path.basename(path))) |
                              set(path[:-5] + '.pid'
                                  for path in glob.glob(os.path.join(default_pid_dir(), 'iperf3-*.auth'))
                                  if AUTH_DIR_NAME.match(os.path.basename(path))))
        stopped, removed = [], []
        for pidfile in pidfiles:
            removed += [path for path in (pidfile, self.paths_for(pidfile), auth_dir(pidfile))
                        if os.path.lexists(path)]
            pid = self.stop(pidfile)
            match = PIDFILE_NAME.match(os.path.basename(pidfile))
            port = int(match.group(1)) if match else self.params['port']
            if pid:
                stopped.append({'pid': pid, 'pidfile': pidfile, 'port': port})
        self.result.update(changed=bool(stopped), stopped=stopped, removed=removed)
        if stopped:
            self.result['msg'] = '%s %s.' % ('Would stop' if self.module.check_mode else 'Stopped', ', '.join(
                'iperf3 pid %(pid)d on port %(port)d' % item for item in stopped))
        else:
            self.result['msg'] = 'No iperf3 server of this module was running%s.' % (
                '; leftover files %s' % ('would be removed' if self.module.check_mode else 'were removed')
                if removed else '')


class Guest(ServerBase):
    """What makes the server a guest: the unprivileged user it runs as, and its files (pidfile, log, key and user
    list) owned by that user."""

    def account(self):
        """The pwd entry of the user the server runs as, or None when it runs as the module's user."""
        if os.geteuid() != 0 or self.params['user'] == 'root':
            return None
        try:
            return pwd.getpwnam(self.params['user'])
        except KeyError:
            self.fail('user: %r is not a user of this host; give an unprivileged user that exists (the default, '
                      'nobody, exists on every Linux distribution).' % self.params['user'])

    def take_auth(self):
        """The server's key and user list from the file the action plugin transferred (removed once read)."""
        if not self.params['auth_src']:
            self.fail('authenticate: true needs the credentials the action plugin makes; call the module as '
                      'bdp.wan_tune.iperf3_server (its action plugin), not through a copy of the module alone.')
        try:
            secret = json.loads(files.take_secret(self.params['auth_src']).decode('utf-8'))
            return secret['private_key'], secret['authorized_users']
        except (IOError, OSError, ValueError, KeyError, TypeError):
            self.fail('The credentials file the action plugin transferred could not be read; nothing was started.')

    def install_files(self, pidfile, logfile, auth):
        """Files the server needs, owned by the user it runs as: the pidfile and log (iperf3 cannot create them in
        the root-owned pid directory), and the key and user list (0600 from their first byte, in a 0700 dir)."""
        account = self.account()
        owner, group = (account.pw_uid, account.pw_gid) if account else (None, None)
        if account:
            files.write_atomic(self.module, pidfile, '', mode=0o644, owner=owner, group=group)
            files.write_atomic(self.module, logfile, '', mode=0o644, owner=owner, group=group)
        if auth is None:
            return
        directory = auth_dir(pidfile)
        os.mkdir(directory, 0o700)
        self.installed_auth = directory
        if account:
            os.chown(directory, owner, group)
        files.write_atomic(self.module, os.path.join(directory, KEY_FILE), auth[0], mode=0o600, owner=owner,
                           group=group)
        files.write_atomic(self.module, os.path.join(directory, USERS_FILE), auth[1], mode=0o600, owner=owner,
                           group=group)


class Server(Guest):
    """Starting the server (state=present) and the module's call."""

    # ------------------------------------------------------------ start
    def choose_port(self):
        first, last = self.params['port_range']
        bind = self.params['bind']
        for port in range(first, last + 1):
            pid = read_pid(self.paths(port)[0])
            if pid and iperf3_process(pid, self.paths(port)[0]):
                continue                 # another client's server, waiting for its test
            reason = bind_error(port, bind)
            if reason is None:
                return port
            if reason != 'in use':
                self.fail('Cannot listen on port %d: %s. Give bind an address of this host, or leave it unset to '
                          'listen on all addresses.' % (port, reason))
        self.fail('No free port in port_range %d-%d%s; stop leftover servers (state: absent, port: 0) or give '
                  'another port_range.' % (first, last, ' on %s' % bind if bind else ''))

    def prepare(self, port, pidfile):
        """Deal with an earlier server on this pidfile and make sure the port is free."""
        old = read_pid(pidfile)
        if old and iperf3_process(old, pidfile):
            if serving(port):
                self.fail('The iperf3 server on port %d (pid %d, started by this module) is serving a test now. Wait '
                          'for it to finish, or use port: 0 to get a free port.' % (port, old))
            self.result['replaced_pid'] = old
            if not self.module.check_mode:
                self.kill(old)
            return
        reason = bind_error(port, self.params['bind'])
        if reason == 'in use':
            self.fail('Port %d%s is in use by another program. Choose another port, or port: 0 to pick a free one '
                      'from port_range.' % (port, ' on %s' % self.params['bind'] if self.params['bind'] else ''))
        if reason:
            self.fail('Cannot listen on port %d: %s. Give bind an address of this host, or leave it unset to listen '
                      'on all addresses.' % (port, reason))

    def command(self, path, port, pidfile, logfile, setpriv=None):
        """The server's command line; ``setpriv`` (its path) runs it as account(), else as the module's user."""
        account = self.account()
        argv = drop_command(setpriv or 'setpriv', account) if account else []
        argv += [path, '-s', '-1', '-D', '-J', '-p', str(port)]
        if self.params['idle_timeout']:
            argv += ['--idle-timeout', str(self.params['idle_timeout'])]
        argv += ['-I', pidfile, '--logfile', logfile]
        if self.params['bind']:
            argv += ['-B', self.params['bind']]
        if self.params['authenticate']:
            directory = auth_dir(pidfile)
            argv += iperf3.server_auth_args(os.path.join(directory, KEY_FILE), os.path.join(directory, USERS_FILE))
        return argv

    def log_text(self, logfile):
        try:
            with open(logfile) as handle:
                text = handle.read()
        except (IOError, OSError):
            return ''
        return ' '.join(text.split())[-400:]

    def start(self, path, port, pidfile, logfile, auth=None):
        """Start the daemon and wait until it listens. Returns (pid, None) or (None, reason)."""
        self.remove_files(pidfile)
        self.install_files(pidfile, logfile, auth)
        setpriv = None
        if self.account():
            setpriv = self.module.get_bin_path('setpriv', opt_dirs=['/usr/bin', '/bin'])
            if not setpriv:
                self.remove_files(pidfile)
                self.fail('setpriv (util-linux) is not installed on this host, and the server never runs as root; '
                          'install util-linux, or set user: root to accept a root server.')
        argv = self.command(path, port, pidfile, logfile, setpriv)
        self.result['command'] = argv
        rc, out, err = self.module.run_command(argv, environ_update={'LC_ALL': 'C'})
        if rc != 0:
            text = ' '.join((err or out).split())[:400]
            if 'idle-timeout' in text:
                self.fail('iperf3 %s does not know --idle-timeout (%s); install iperf3 3.11 or later, or set '
                          'idle_timeout: 0 and stop the server with state: absent after the test.'
                          % (self.result.get('iperf3_version'), text), rc=rc)
            self.fail('iperf3 server did not start (exit code %d): %s' % (rc, text or 'no output'), rc=rc)
        deadline = time.time() + self.params['startup_timeout']
        pid = None
        while time.time() < deadline:
            pid = pid or read_pid(pidfile)
            if pid:
                if not iperf3_process(pid, pidfile):
                    return None, self.log_text(logfile) or 'the server exited at once'
                if listening(pid, port):
                    return pid, None
            time.sleep(0.05)
        if pid and iperf3_process(pid, pidfile):
            self.kill(pid)
        return None, ('it did not listen on port %d within %s s%s' % (
            port, self.params['startup_timeout'],
            '; its log: %s' % self.log_text(logfile) if self.log_text(logfile) else ''))

    def present(self):
        path, version = self.find_iperf3()
        if version and version[:2] < iperf3.ONE_OFF_IDLE_EXIT_VERSION and self.params['idle_timeout']:
            self.module.warn('iperf3 %s restarts a one-off server after the idle timeout instead of ending it (fixed '
                             'in 3.11); if the test may not run, stop the server with state: absent afterwards.'
                             % self.result['iperf3_version'])
        if self.params['authenticate'] and path and not iperf3.has_authentication(self.module, path):
            self.fail('authenticate: true, but %s.' % iperf3.AUTH_HELP)
        account = self.account()
        self.result['user'] = account.pw_name if account else None
        auth = None
        if not self.module.check_mode:
            self.make_pid_dir()
            auth = self.take_auth() if self.params['authenticate'] else None
        auto = self.params['port'] == 0
        tries = 5 if auto else 1
        reason = None
        for attempt in range(1, tries + 1):
            port = self.choose_port() if auto else self.params['port']
            pidfile, logfile = self.paths(port)
            self.result.update(port=port, pidfile=pidfile, logfile=logfile)
            self.prepare(port, pidfile)
            if self.module.check_mode:
                self.result['command'] = self.command(path or 'iperf3', port, pidfile, logfile)
                self.result['changed'] = True
                self.result['msg'] = ('Check mode: an iperf3 server for one test would start on port %d; nothing was '
                                      'started.' % port)
                return
            pid, reason = self.start(path, port, pidfile, logfile, auth)
            if not pid and self.installed_auth:      # its key goes with it (another port may be tried)
                shutil.rmtree(self.installed_auth, ignore_errors=True)
                self.installed_auth = None
            if pid:
                self.result.update(pid=pid, changed=True)
                self.result['msg'] = ('iperf3 server (pid %d) listens on port %d for one test; it exits after the '
                                      'test%s.'
                                      % (pid, port, ' or after %d s without one' % self.params['idle_timeout']
                                         if self.params['idle_timeout'] else
                                         '; without a test it runs until state: absent stops it'))
                return
            if not auto or 'in use' not in reason.lower() or attempt == tries:
                break                    # another program won the race for an automatic port: try the next one
        self.result['changed'] = 'replaced_pid' in self.result
        self.fail('The iperf3 server on port %d did not start: %s. Check the log %s, and that bind (%s) is an address '
                  'of this host.' % (self.result['port'], reason, self.result['logfile'], self.params['bind'] or 'all'))

    def main(self):
        port, (first, last) = self.params['port'], (self.params['port_range'] + [0, 0])[:2]
        if port != 0 and not checks.is_port(port):
            self.fail('port: %r is out of range; expected %s, or 0 to pick a free port.' % (port, checks.port_help()))
        if len(self.params['port_range']) != 2 or not checks.is_port(first) or not checks.is_port(last) \
                or first > last:
            self.fail('port_range: %r is not [first, last] with first <= last, each %s.'
                      % (self.params['port_range'], checks.port_help()))
        if self.params['idle_timeout'] < 0 or self.params['startup_timeout'] <= 0:
            self.fail('idle_timeout must be 0 or more and startup_timeout above 0 (seconds).')
        if self.params['pidfile'] and port == 0 and self.params['state'] == 'present':
            self.fail('pidfile names one server, so give a port with it (port: 0 picks a port per run and uses '
                      'iperf3-PORT.pid in the default directory).')
        if self.params['state'] == 'present':
            self.present()
        else:
            self.absent()
        self.module.exit_json(**self.result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            port=dict(type='int', default=5201),
            port_range=dict(type='list', elements='int', default=[5201, 5299]),
            bind=dict(type='str'),
            idle_timeout=dict(type='int', default=120),
            startup_timeout=dict(type='float', default=10),
            pidfile=dict(type='path'),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            iperf3_path=dict(type='path'),
            user=dict(type='str', default='nobody'),
            authenticate=dict(type='bool', default=False),
            credentials=dict(type='str'),
            auth_src=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    Server(module).main()


if __name__ == '__main__':
    main()
