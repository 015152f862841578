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
  users:
    description: The users and passwords, as the role's C(rsync_daemon_users).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The user name.
        type: str
        required: true
      password:
        description: The password; never shown.
        type: str
        required: true
  timeout:
    description: Seconds for each connection and transfer.
    type: int
    default: 30
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
    users: "{{ rsync_daemon_users }}"
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
"""

import os
import socket
import tempfile
import uuid

from ansible.module_utils.basic import AnsibleModule


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


def send(module, source, target, password, timeout):
    """rc and output of one rsync upload with RSYNC_PASSWORD set (an empty password for the anonymous client)."""
    argv = [module.get_bin_path('rsync', required=True), '--quiet', '--contimeout=%d' % timeout,
            '--timeout=%d' % timeout, source, target]
    rc, out, err = module.run_command(argv, environ_update={'RSYNC_PASSWORD': password, 'USER': 'nobody-anonymous',
                                                            'LOGNAME': 'nobody-anonymous'})
    return rc, ' '.join((out + ' ' + err).split())


def check_module(module, item, users, host, port, timeout, source):
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
        rc, out = send(module, source, url(host, port, name, user, file_name), users.get(user, ''), timeout)
        landed = arrived(file_name)
        add('authenticated write', rc == 0 and landed,
            'user %s: rsync exit %d%s%s' % (user, rc, ', the file arrived' if landed else ', the file did not arrive',
                                            ': ' + out if out else ''))
        for check, who, password in (('wrong password refused', user, 'wrong-' + uuid.uuid4().hex),
                                     ('anonymous write refused', None, '')):
            file_name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
            rc, out = send(module, source, url(host, port, name, who, file_name), password, timeout)
            landed = arrived(file_name)
            add(check, rc != 0 and 'auth failed' in out and not landed,
                '%s: rsync exit %d%s: %s' % ('user %s' % who if who else 'no user, no password', rc,
                                             ', but the file arrived' if landed else '', out or 'no output'))
    else:
        file_name = '.bdp-wan-tune-verify-%s' % uuid.uuid4().hex
        rc, out = send(module, source, url(host, port, name, user, file_name), users.get(user, ''), timeout)
        landed = arrived(file_name)
        add('read-only module refuses a write', rc != 0 and not landed and ('read only' in out or 'auth failed' in out),
            'rsync exit %d%s: %s' % (rc, ', but the file arrived' if landed else '', out or 'no output'))
    return checks


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type='str', default='127.0.0.1'),
            port=dict(type='int', default=873),
            modules=dict(type='list', elements='dict', required=True),
            # Only the passwords are secret: a no_log list would mask the user names everywhere in the result.
            users=dict(type='list', elements='dict', default=[], options=dict(
                name=dict(type='str', required=True),
                password=dict(type='str', required=True, no_log=True))),
            timeout=dict(type='int', default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = {'changed': False, 'checks': []}
    if module.check_mode:
        result['msg'] = 'check mode: the daemon was not verified'
        module.exit_json(**result)
    users = dict((str(u.get('name')), str(u.get('password', ''))) for u in params['users'])
    try:
        result['greeting'] = greeting(params['host'], params['port'], params['timeout'])
        answered = result['greeting'].startswith('@RSYNCD:')
        detail = result['greeting']
    except (OSError, socket.error) as exc:
        answered, detail = False, str(exc)
    result['checks'].append({'check': 'daemon answers', 'module': None, 'passed': answered,
                             'detail': '%s port %d: %s' % (params['host'], params['port'], detail)})
    if answered:
        fd, source = tempfile.mkstemp(prefix='bdp-wan-tune-verify-')
        try:
            with os.fdopen(fd, 'w') as handle:
                handle.write('bdp.wan_tune rsync daemon verification %s\n' % uuid.uuid4().hex)
            for item in params['modules']:
                result['checks'] += check_module(module, item, users, params['host'], params['port'],
                                                 params['timeout'], source)
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
