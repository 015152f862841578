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
    arrive in the module's path (it is removed afterwards); the same user with a wrong password and a client with no
    user name and no password must both be refused with C(auth failed), and nothing of theirs may arrive."
  - "For every read-only module: a write must be refused (C(read only), or C(auth failed) without credentials)."
  - Changes nothing that stays; fails with every check that did not pass.
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
      - The rsync daemon over TLS. When given, every transfer check runs through C(rsync-ssl --type=openssl) to
        O(tls.port) with the certificate verified against O(tls.ca), and these checks are added, each run before
        anything reaches rsync - a C(openssl s_client) handshake that records the protocol and cipher and must
        verify; a plaintext rsync greeting to the TLS port gets no rsync answer; a client that trusts another CA
        fails; a client without a certificate and a client whose certificate another CA signed are refused in the
        handshake; with O(tls.plain_closed), nothing accepts on O(port).
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
        description: A client certificate signed by the CA (file on the host).
        type: path
        required: true
      key:
        description: Its private key (file on the host, read by openssl only).
        type: path
        required: true
      plain_closed:
        description: Whether nothing may accept on the plain port O(port) (transport C(tls)).
        type: bool
        default: true
      sources:
        description: The sources allowed in stunnel's libwrap rule. When O(host) is 127.0.0.1 and 127.0.0.2 is not
          among them, a TLS client from 127.0.0.2 with a valid certificate must be refused before the handshake.
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
  description: Every check, with C(check), C(module), C(passed) and C(detail).
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
import shutil
import socket
import ssl
import tempfile
import uuid

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils import files
from ansible_collections.bdp.wan_tune.plugins.module_utils import rsyncd
from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls


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


def send(module, source, target, password, timeout, tls=None, identity=None):
    """rc and output of one rsync upload.  ``password``: given to rsync in a 0600 --password-file (removed
    afterwards), never in argv or the environment; None for the anonymous client (an empty RSYNC_PASSWORD, so
    that rsync does not prompt).  With ``tls``: through rsync-ssl (openssl), trusting ``identity['ca']`` and showing
    its cert and key (each may be None: no such option)."""
    environ = {'USER': 'nobody-anonymous', 'LOGNAME': 'nobody-anonymous', 'RSYNC_PASSWORD': ''}
    if tls:
        identity = identity if identity is not None else tls
        argv = [module.get_bin_path('timeout', required=True), str(timeout + 5),
                module.get_bin_path('rsync-ssl', required=True), '--type=openssl', '--quiet',
                '--timeout=%d' % timeout]
        for key, name in (('ca', 'RSYNC_SSL_CA_CERT'), ('cert', 'RSYNC_SSL_CERT'), ('key', 'RSYNC_SSL_KEY')):
            if identity.get(key):
                environ[name] = identity[key]
        environ['RSYNC_SSL_PORT'] = str(tls['port'])
    else:
        argv = [module.get_bin_path('rsync', required=True), '--quiet', '--contimeout=%d' % timeout,
                '--timeout=%d' % timeout]
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
        rc, out = send(module, source, url(host, port, name, user, file_name), users.get(user), timeout, tls)
        landed = arrived(file_name)
        add('authenticated write', rc == 0 and landed,
            'user %s: rsync exit %d%s%s' % (user, rc, ', the file arrived' if landed else ', the file did not arrive',
                                            ': ' + out if out else ''))
        for check, who, password in (('wrong password refused', user, 'wrong-' + uuid.uuid4().hex),
                                     ('anonymous write refused', None, None)):
            file_name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
            rc, out = send(module, source, url(host, port, name, who, file_name), password, timeout, tls)
            landed = arrived(file_name)
            add(check, rc != 0 and 'auth failed' in out and not landed,
                '%s: rsync exit %d%s: %s' % ('user %s' % who if who else 'no user, no password', rc,
                                             ', but the file arrived' if landed else '', out or 'no output'))
    else:
        file_name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
        rc, out = send(module, source, url(host, port, name, user, file_name), users.get(user), timeout, tls)
        landed = arrived(file_name)
        add('read-only module refuses a write', rc != 0 and not landed and ('read only' in out or 'auth failed' in out),
            'rsync exit %d%s: %s' % (rc, ', but the file arrived' if landed else '', out or 'no output'))
    return checks


def plain_probe(host, port, timeout):
    """What a cleartext rsync client gets from ``port``: the bytes answered to an rsync greeting ('' when none)."""
    conn = socket.create_connection((host, port), timeout)
    try:
        conn.settimeout(min(timeout, 5))
        conn.sendall(b'@RSYNCD: 31.0 sha256 md5\n')
        data = b''
        try:
            while len(data) < 256:
                chunk = conn.recv(256)
                if not chunk:
                    break
                data += chunk
        except (OSError, socket.error):
            pass
    finally:
        conn.close()
    return data.decode('ascii', 'replace')


def handshake(module, host, port, identity, timeout):
    """openssl s_client's view of the handshake: {protocol, cipher, verified, peer, rc, detail}."""
    argv = [module.get_bin_path('timeout', required=True), str(timeout), module.get_bin_path('openssl', required=True),
            's_client', '-connect', '%s:%d' % ('[%s]' % host if ':' in host else host, port), '-brief',
            '-verify_return_error']
    for key, option in (('ca', '-CAfile'), ('cert', '-cert'), ('key', '-key')):
        if identity.get(key):
            argv += [option, identity[key]]
    rc, out, err = module.run_command(argv, data='')
    text = out + '\n' + err
    found = dict((key, (re.search(r'^%s:\s*(.+)$' % label, text, re.M) or [None, None])[1])
                 for key, label in (('protocol', 'Protocol version'), ('cipher', 'Ciphersuite'),
                                    ('verification', 'Verification'), ('peer', 'Peer certificate')))
    return {'protocol': found['protocol'], 'cipher': found['cipher'], 'peer': found['peer'],
            'verified': found['verification'] == 'OK' and rc == 0, 'rc': rc,
            'detail': ' '.join(err.split())[-300:]}


def stranger(module, directory):
    """A CA of nobody's and a client certificate it signed, in ``directory``: {ca, cert, key}."""
    openssl = module.get_bin_path('openssl', required=True)
    out = dict((key, os.path.join(directory, 'stranger-%s.pem' % key)) for key in ('ca', 'cert', 'key'))
    for argv in ([openssl, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
                  '-keyout', os.path.join(directory, 'stranger-ca-key.pem'), '-out', out['ca'], '-subj',
                  '/CN=bdp-wan-tune-stranger-ca', '-days', '1'],
                 [openssl, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
                  '-keyout', out['key'], '-out', out['cert'], '-subj', '/CN=bdp-wan-tune-stranger', '-days', '1',
                  '-CA', out['ca'], '-CAkey', os.path.join(directory, 'stranger-ca-key.pem')]):
        rc, dummy, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg='openssl could not make the test CA: %s' % ' '.join(err.split())[:300])
    return out


def unlisted(host, port, tls, timeout, source='127.0.0.2'):
    """(refused, detail) of a TLS client with a valid certificate that connects from ``source``."""
    context = ssl.create_default_context(cafile=tls['ca'])
    context.check_hostname = False
    context.load_cert_chain(tls['cert'], tls['key'])
    conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    conn.settimeout(min(timeout, 10))
    try:
        conn.bind((source, 0))
        conn.connect((host, port))
        wrapped = context.wrap_socket(conn)
        try:
            wrapped.sendall(b'')
            data = wrapped.recv(64)
        finally:
            wrapped.close()
        if data.startswith(b'@RSYNCD'):
            return False, 'from %s: the rsync daemon answered %r' % (source, data[:20])
        return True, 'from %s: no rsync greeting (%r)' % (source, data[:20])
    except (OSError, socket.error, ssl.SSLError) as exc:
        return True, 'from %s: %s' % (source, exc)
    finally:
        conn.close()


def closed(host, port, timeout):
    try:
        socket.create_connection((host, port), min(timeout, 5)).close()
        return False, 'port %d accepts a connection' % port
    except (OSError, socket.error) as exc:
        return True, 'port %d: %s' % (port, exc)


def tls_checks(module, params, source, result, users):
    """The checks of the TLS layer, each before any rsync exchange: [{check, module, passed, detail}]."""
    tls, host, timeout = params['tls'], params['host'], params['timeout']
    checks = []

    def add(check, passed, detail):
        checks.append({'check': check, 'module': None, 'passed': passed, 'detail': detail})

    result['handshake'] = shake = handshake(module, host, tls['port'], tls, timeout)
    add('TLS handshake verified', shake['verified'] and shake['protocol'] in ('TLSv1.3', 'TLSv1.2'),
        '%s, %s, verification %s, peer %s%s' % (shake['protocol'], shake['cipher'],
                                                'OK' if shake['verified'] else 'failed', shake['peer'],
                                                '' if shake['verified'] else ': ' + shake['detail']))
    try:
        answer = plain_probe(host, tls['port'], timeout)
        add('plaintext to the TLS port gets no rsync answer', '@RSYNCD' not in answer,
            'answer: %r' % answer[:60] if answer else 'no answer')
    except (OSError, socket.error) as exc:
        add('plaintext to the TLS port gets no rsync answer', False, 'no connection: %s' % exc)
    if host == '127.0.0.1' and not rsynctls.source_allowed('127.0.0.2', tls['sources']):
        passed, detail = unlisted(host, tls['port'], tls, timeout)
        add('an unlisted source is refused before the handshake', passed, detail)
    if params['tls'].get('plain_closed'):
        passed, detail = closed(host, params['port'], timeout)
        add('nothing accepts on the plain port', passed, detail)
    target = next((m for m in params['modules'] if not m.get('read_only', True)), (params['modules'] or [{}])[0])
    if not target.get('name'):
        return checks
    user = next(iter(target.get('auth_users') or []), None)
    password = users.get(user)
    directory = tempfile.mkdtemp(prefix='bdp-wan-tune-tls-')
    try:
        other = stranger(module, directory)
        for check, identity in (('a client that trusts another CA fails', dict(tls, ca=other['ca'])),
                                ('a client without a certificate is refused', dict(tls, cert=None, key=None)),
                                ('a client with a certificate of another CA is refused',
                                 dict(tls, cert=other['cert'], key=other['key']))):
            name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
            rc, out = send(module, source, url(host, tls['port'], target['name'], user, name), password, timeout,
                           tls, identity)
            landed = os.path.lexists(os.path.join(target.get('path', '/nonexistent'), name))
            if landed:
                os.unlink(os.path.join(target['path'], name))
            # refused in the handshake: rsync never saw the daemon's greeting (no @ERROR from rsyncd)
            add(check, rc != 0 and not landed and '@ERROR' not in out and 'did not see server greeting' in out,
                'rsync-ssl exit %d%s: %s' % (rc, ', but the file arrived' if landed else '', out[-300:] or 'no output'))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return checks


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str', default='127.0.0.1'),
            port=dict(type='int', default=873),
            modules=dict(type='list', elements='dict', required=True),
            secrets_path=dict(type='path', default='/etc/rsyncd.secrets', no_log=False),
            timeout=dict(type='int', default=30),
            tls=dict(type='dict', options=dict(
                port=dict(type='int', default=874),
                ca=dict(type='path', required=True),
                cert=dict(type='path', required=True),
                key=dict(type='path', required=True, no_log=False),
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
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write('bdp.wan_tune rsync daemon verification %s\n' % uuid.uuid4().hex)
        if tls:
            result['checks'] += tls_checks(module, params, source, result, users)
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
            for item in params['modules']:
                result['checks'] += check_module(module, item, users, params['host'], port, params['timeout'],
                                                 source, tls)
    finally:
        os.unlink(source)
    failed = [c for c in result['checks'] if not c['passed']]
    if failed:
        module.fail_json(msg='The rsync daemon failed %d of %d checks: %s' % (
            len(failed), len(result['checks']),
            '; '.join('%s%s (%s)' % (c['check'], ' [%s]' % c['module'] if c['module'] else '', c['detail'])
                      for c in failed)), **result)
    result['msg'] = 'The rsync daemon passed all %d checks.' % len(result['checks'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
