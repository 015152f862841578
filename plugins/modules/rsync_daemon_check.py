#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: rsync_daemon_check
short_description: Prove that the rsync daemon answers, takes an authenticated transfer and refuses the others
version_added: 0.2.0
description:
  - Connects from the host itself to the daemon at O(host) and O(port) and reads its C(@RSYNCD) greeting.
  - "For every writable module: a file sent with a user of the module's C(auth_users) and that user's password must
    arrive in the module's path. It is the only file the check ever writes into a module: named
    C(.bdp-wan-tune-verify-<32 hex digits>) at the module's top, removed at once, never in check mode, and never
    while a transfer into the module runs (an rsync process works in the module's path - a migration's pass): then
    the same upload runs with C(--dry-run), which proves the user, the password and that the module takes writes,
    and nothing is written. The same user with a wrong password and a client with no user name and no password must
    both be refused with C(auth failed) (with C(--dry-run): nothing is written even if they were let in)."
  - "For every read-only module: a write (C(--dry-run)) must be refused (C(read only), or C(auth failed) without
    credentials)."
  - "For every module: access from an address of the host that the module's C(hosts allow) lists (not the loopback
    addresses the role adds), connecting to that address, so that the daemon's own reading of C(hosts allow) is
    proven beyond 127.0.0.1 (a listing as its user; with O(tls), a TLS client with a valid certificate bound to that
    address asks for the module and must not be refused by rsyncd's C(hosts allow)). When no address of the host is
    listed, the check is reported as not run (C(passed) null) and the message says that only a listed sender can
    prove it."
  - Changes nothing that stays; fails with every check that did not pass. The TLS refusals run with C(--dry-run)
    too.
  - Takes no password. It reads each user's password from the daemon's own secrets file (O(secrets_path)) on the
    host and hands it to rsync in a 0600 C(--password-file), never in the command line or the module arguments.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  host:
    description: The address to connect to; the host itself must be in the modules' C(hosts allow).
    type: str
    default: 127.0.0.1
  port:
    description: The daemon's TCP port.
    type: int
    default: 873
  modules:
    description: The modules as bdp.wan_tune.rsync_daemon_config returns them (name, path, read_only, auth_users).
    type: list
    elements: dict
    required: true
  secrets_path:
    description: The daemon's secrets file (C(user:password) lines), read on the host for the passwords.
    type: path
    default: /etc/rsyncd.secrets
  timeout:
    description: Seconds for each connection and transfer.
    type: int
    default: 30
  tls:
    description:
      - The rsync daemon over TLS. When given, every transfer check runs through the collection's TLS client (rsync
        with C(openssl s_client) as its C(RSYNC_CONNECT_PROG)) to O(tls.port) with the certificate verified against
        O(tls.ca), and these checks are added, each run before
        anything reaches rsync - a C(openssl s_client) handshake that records the protocol and cipher and must
        verify; a plaintext rsync greeting to the TLS port gets no rsync answer; a client that trusts another CA
        fails; a client without a certificate and a client whose certificate another CA signed are refused in the
        handshake; the server's own certificate (O(tls.server_cert)) shown as a client's is refused in the handshake;
        with O(tls.plain_closed), nothing accepts on O(port).
    type: dict
    suboptions:
      port:
        description: The TLS port.
        type: int
        default: 874
      ca:
        description: The trust anchor (CA certificate file) on the host.
        type: path
        required: true
      cert:
        description: A client certificate signed by the CA (file on the host), for clientAuth (the receiver's own
          client identity).
        type: path
        required: true
      key:
        description: Its private key (file on the host, read by openssl and the module only).
        type: path
        required: true
      server_cert:
        description: The receiver's server certificate (serverAuth only). When given, a client that shows it must be
          refused in the handshake.
        type: path
      server_key:
        description: Its private key (file on the host).
        type: path
      plain_closed:
        description: Whether nothing may accept on the plain port O(port) (transport C(tls)).
        type: bool
        default: true
      sources:
        description:
          - The sources admitted by the TLS gate (stunnel's libwrap rule, the union of the modules' sources). When
            O(host) is 127.0.0.1 and 127.0.0.2 is not among them, a TLS client from 127.0.0.2 with a valid
            certificate must be refused before the handshake.
          - For each module, from an address of the host that the gate admits but the module does not list, rsyncd
            must answer C(access denied) (stunnel hands rsync the client's address in C(REMOTE_HOST)).
        type: list
        elements: str
        default: []
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: In check mode nothing is sent and every check is reported as not run.
"""

EXAMPLES = r"""
- name: Verify the daemon
  bdp.wan_tune.rsync_daemon_check:
    port: 873
    modules: "{{ rsync_daemon_result.modules }}"
    secrets_path: /etc/rsyncd.secrets
"""

RETURN = r"""
checks:
  description: Every check, with C(check), C(module), C(passed) (true, false, or null when it could not run here)
    and C(detail).
  returned: always
  type: list
  elements: dict
greeting:
  description: The daemon's greeting line.
  returned: when the daemon answered
  type: str
handshake:
  description: The TLS handshake of C(openssl s_client), C(protocol), C(cipher), C(verified) and C(peer).
  returned: when O(tls) is given
  type: dict
"""

import os
import re
import socket
import tempfile
import uuid

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import ipnet
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

# The refusals, and the write while a transfer into the module runs: rsync checks the user, the password, the
# identity and "read only" before any file moves, so --dry-run proves them and writes nothing.
DRY_RUN = ('--dry-run',)


def greeting(host, port, timeout):
    """The daemon's first line (@RSYNCD: 32.0 ...), or raise OSError."""
    conn = socket.create_connection((host, port), timeout)
    try:
        data = b''
        while b'\n' not in data and len(data) < 256:
            chunk = conn.recv(256)
            if not chunk:
                break
            data += chunk
    finally:
        conn.close()
    return data.split(b'\n')[0].decode('ascii', 'replace').strip()


def url(host, port, module_name, user=None, name=''):
    where = '[%s]' % host if ':' in host else host
    return 'rsync://%s%s:%d/%s/%s' % ('%s@' % user if user else '', where, port, module_name, name)


def send(module, source, target, password, timeout, tls=None, identity=None, extra=()):
    """rc and output of one rsync upload.  ``password``: given to rsync in a 0600 --password-file (removed
    afterwards), never in argv or the environment; None for the anonymous client (an empty RSYNC_PASSWORD, so
    that rsync does not prompt).  With ``tls``: through the TLS client (rsynctls.client_command), trusting ``identity['ca']`` and showing
    its cert and key (each may be None: no such option).  ``extra``: more rsync options."""
    environ = {'USER': 'nobody-anonymous', 'LOGNAME': 'nobody-anonymous', 'RSYNC_PASSWORD': ''}
    if tls:
        command, env = rsynctls.client_command(identity if identity is not None else tls, tls['port'])
        environ.update(env)
        argv = [module.get_bin_path('timeout', required=True), str(timeout + 5),
                module.get_bin_path(command[0], required=True)] + command[1:] + ['--quiet', '--timeout=%d' % timeout]
    else:
        argv = [module.get_bin_path('rsync', required=True), '--quiet', '--contimeout=%d' % timeout,
                '--timeout=%d' % timeout]
    argv += list(extra)
    password_file = None
    try:
        if password is not None:
            fd, password_file = tempfile.mkstemp(prefix='bdp-wan-tune-verify-')     # 0600, O_EXCL
            with os.fdopen(fd, 'wb') as handle:
                handle.write(password.encode('utf-8', 'surrogateescape') + b'\n')
            argv.append('--password-file=%s' % password_file)
        rc, out, err = module.run_command(argv + [source, target], environ_update=environ)
    finally:
        if password_file:
            os.unlink(password_file)
    # rsync's own messages name no password; mask one all the same should a future rsync echo it
    text = ' '.join((out + ' ' + err).split())
    return rc, text.replace(password, '********') if password else text


def own_addresses(module):
    """The host's global-scope addresses (``ip -o addr show``), not loopback or link-local."""
    ip = module.get_bin_path('ip')
    if not ip:
        return []
    rc, out, dummy = module.run_command([ip, '-o', 'addr', 'show'])
    return [match.group(1) for match in re.finditer(r'\binet6?\s+([0-9A-Fa-f.:]+)/\d+\s.*?\bscope\s+(\w+)', out)
            if match.group(2) == 'global'] if rc == 0 else []


def listed_access(module, item, users, host, port, timeout, own, tls=None):
    """Access to the module from an address of the host that its hosts allow lists (not the loopback addresses the
    role adds for itself): a listing as the module's user, or with ``tls`` the daemon's greeting through stunnel to a
    client bound to that address.  None (not run) when no address of the host is listed: then only a sender can
    prove it."""
    name = item['name']
    user = next((u for u in item.get('auth_users') or [] if u in users), None)
    networks = []
    for text in item.get('hosts_allow') or []:
        try:
            networks.append(ipnet.parse_network(text))
        except ValueError:
            pass
    listed = [text for text in own if any(ipnet.parse_address(text) in network for network in networks
                                          if network.version == ipnet.parse_address(text).version)]
    check = 'access from a listed address'
    if not listed:
        return {'check': check, 'module': name, 'passed': None,
                'detail': 'not proven here: no address of this host (%s) is in its hosts allow (%s); prove it from '
                          'a listed sender' % (', '.join(own) or 'none but loopback',
                                               ' '.join(item.get('hosts_allow') or []) or 'empty')}
    source = listed[0]
    target = source if host in ('127.0.0.1', '::1', 'localhost') else host
    if tls:
        greeted, answer = rsynctls.module_answer(target, tls['port'], tls, name, timeout, source)
        return {'check': check, 'module': name, 'passed': greeted and not rsynctls.denied(answer),
                'detail': 'over TLS from %s: rsyncd answered %s' % (source, answer)}
    extra = ['--list-only', '--address=%s' % source]          # bound: a local route may prefer another source
    rc, out = send(module, None, url(target, port, name, user), users.get(user), timeout, extra=extra)
    return {'check': check, 'module': name, 'passed': rc == 0,
            'detail': 'from %s%s: rsync exit %d%s' % (source, ' as user %s' % user if user else '', rc,
                                                      ': ' + out if out and rc else '')}


def unlisted_for_module(item, host, timeout, own, tls):
    """Behind stunnel, the module's own hosts allow for the real source: from an address of the host that the TLS
    gate admits (another module lists it) but this module does not, rsyncd must answer "access denied".  None when
    the host has no such address (nothing to prove here)."""
    allowed = list(item.get('hosts_allow') or []) + rsyncd.self_addresses('all' if host == '127.0.0.1' else host)
    others = [address for address in own
              if rsynctls.source_allowed(address, tls['sources']) and not rsynctls.source_allowed(address, allowed)]
    if not others:
        return None
    source = others[0]
    target = source if host in ('127.0.0.1', '::1', 'localhost') else host
    greeted, answer = rsynctls.module_answer(target, tls['port'], tls, item['name'], timeout, source)
    return {'check': 'a source of another module only is refused', 'module': item['name'],
            'passed': greeted and rsynctls.denied(answer),
            'detail': 'over TLS from %s (admitted by the TLS gate, not listed by the module): rsyncd answered %s'
                      % (source, answer if greeted else 'nothing: ' + answer)}


def transfers_in(path, proc='/proc'):
    """Pids of the rsync processes that work in ``path`` (their working directory or root is in it): a transfer
    into the module runs (the daemon's child of a migration's pass chdirs, or chroots, into the module)."""
    path = os.path.realpath(path)
    found = []
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, 'comm')) as handle:
                if handle.read().strip() != 'rsync':
                    continue
            places = [os.readlink(os.path.join(proc, name, link)) for link in ('cwd', 'root')]
        except (IOError, OSError):
            continue
        if any(place == path or place.startswith(path.rstrip('/') + '/') for place in places if place != '/'):
            found.append(int(name))
    return sorted(found)


def check_module(module, item, users, host, port, timeout, source, tls=None):
    """The checks of one module: [{check, module, passed, detail}]."""
    checks = []
    name, path = item['name'], item['path']
    auth_users = item.get('auth_users') or []
    user = next((u for u in auth_users if u in users), None)

    def arrived(file_name):
        target = os.path.join(path, file_name)
        if os.path.lexists(target):
            os.unlink(target)
            return True
        return False

    def add(check, passed, detail):
        checks.append({'check': check, 'module': name, 'passed': passed, 'detail': detail})

    if not item.get('read_only', True):
        file_name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
        busy = transfers_in(path) if os.path.isdir(path) else []
        if busy:
            rc, out = send(module, source, url(host, port, name, user, file_name), users.get(user), timeout, tls,
                           extra=DRY_RUN)
            add('authenticated write', rc == 0 and not arrived(file_name),
                'user %s: rsync --dry-run exit %d%s; nothing was written: a transfer into the module runs (rsync '
                'pid %s)' % (user, rc, ': ' + out if out else '', ', '.join(str(pid) for pid in busy)))
        else:
            rc, out = send(module, source, url(host, port, name, user, file_name), users.get(user), timeout, tls)
            landed = arrived(file_name)
            add('authenticated write', rc == 0 and landed,
                'user %s: rsync exit %d%s%s' % (user, rc, ', the file arrived and was removed' if landed
                                                else ', the file did not arrive', ': ' + out if out else ''))
        for check, who, password in (('wrong password refused', user, 'wrong-' + uuid.uuid4().hex),
                                     ('anonymous write refused', None, None)):
            file_name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
            rc, out = send(module, source, url(host, port, name, who, file_name), password, timeout, tls,
                           extra=DRY_RUN)
            landed = arrived(file_name)
            add(check, rc != 0 and 'auth failed' in out and not landed,
                '%s: rsync exit %d%s: %s' % ('user %s' % who if who else 'no user, no password', rc,
                                             ', but the file arrived' if landed else '', out or 'no output'))
    else:
        file_name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
        rc, out = send(module, source, url(host, port, name, user, file_name), users.get(user), timeout, tls,
                       extra=DRY_RUN)
        landed = arrived(file_name)
        add('read-only module refuses a write', rc != 0 and not landed and ('read only' in out or 'auth failed' in out),
            'rsync exit %d%s: %s' % (rc, ', but the file arrived' if landed else '', out or 'no output'))
    return checks


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str', default='127.0.0.1'),
            port=dict(type='int', default=rsyncd.PORT),
            modules=dict(type='list', elements='dict', required=True),
            secrets_path=dict(type='path', default='/etc/rsyncd.secrets', no_log=False),
            timeout=dict(type='int', default=30),
            tls=dict(type='dict', options=dict(
                port=dict(type='int', default=rsyncd.TLS_PORT),
                ca=dict(type='path', required=True),
                cert=dict(type='path', required=True),
                key=dict(type='path', required=True, no_log=False),
                server_cert=dict(type='path'),
                server_key=dict(type='path', no_log=False),
                plain_closed=dict(type='bool', default=True),
                sources=dict(type='list', elements='str', default=[]))),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = {'changed': False, 'checks': []}
    if module.check_mode:
        result['msg'] = 'check mode: the daemon was not verified'
        module.exit_json(**result)
    text = files.read_bytes(params['secrets_path'])
    users = rsyncd.parse_secrets(text.decode('utf-8', 'surrogateescape')) if text is not None else {}
    tls = params['tls']
    fd, source = tempfile.mkstemp(prefix='bdp-wan-tune-verify-')

    def upload(target, user, file_name, password, identity):
        return send(module, source, url(params['host'], tls['port'], target, user, file_name), password,
                    params['timeout'], tls, identity, extra=DRY_RUN)
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write('bdp.wan_tune rsync daemon verification %s\n' % uuid.uuid4().hex)
        if tls:
            checks, result['handshake'] = rsynctls.tls_checks(module, params, users, upload)
            result['checks'] += checks
            answered = result['checks'][0]['passed']
        else:
            try:
                result['greeting'] = greeting(params['host'], params['port'], params['timeout'])
                answered = result['greeting'].startswith('@RSYNCD:')
                detail = result['greeting']
            except (OSError, socket.error) as exc:
                answered, detail = False, str(exc)
            result['checks'].append({'check': 'daemon answers', 'module': None, 'passed': answered,
                                     'detail': '%s port %d: %s' % (params['host'], params['port'], detail)})
        if answered:
            port = tls['port'] if tls else params['port']
            own = own_addresses(module)
            for item in params['modules']:
                result['checks'] += check_module(module, item, users, params['host'], port, params['timeout'],
                                                 source, tls)
                result['checks'].append(listed_access(module, item, users, params['host'], port, params['timeout'],
                                                      own, tls))
                refused = unlisted_for_module(item, params['host'], params['timeout'], own, tls) if tls else None
                if refused:
                    result['checks'].append(refused)
    finally:
        os.unlink(source)
    failed = [c for c in result['checks'] if c['passed'] is False]
    run = [c for c in result['checks'] if c['passed'] is not None]
    if failed:
        module.fail_json(msg='The rsync daemon failed %d of %d checks: %s' % (
            len(failed), len(run),
            '; '.join('%s%s (%s)' % (c['check'], ' [%s]' % c['module'] if c['module'] else '', c['detail'])
                      for c in failed)), **result)
    result['msg'] = 'The rsync daemon passed all %d checks.' % len(run)
    unproven = [c for c in result['checks'] if c['passed'] is None]
    if unproven:
        result['msg'] += ' Not proven here: %s.' % '; '.join('%s [%s] (%s)' % (c['check'], c['module'], c['detail'])
                                                             for c in unproven)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
