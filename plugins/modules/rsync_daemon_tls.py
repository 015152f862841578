#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: rsync_daemon_tls
short_description: The host's TLS identity and the stunnel instance of the rsync daemon over TLS
version_added: 0.3.0
description:
  - "O(state=request): makes the host's private key in O(directory) if there is none (EC P-256, created root-owned
    and 0600 from its first byte; it never leaves the host and never appears in a result, a log or a diff), and
    returns a certificate signing request for it and the certificate the host has now. The controller
    (P(bdp.wan_tune.rsync_tls_ca#module)) signs the request only when the present certificate cannot stay."
  - "O(state=present): writes the trust anchor (O(ca_cert)) and the host's certificate (O(cert)) into O(directory);
    with O(server=true) also the stunnel configuration (exec mode: C(rsync --daemon) per connection, mutual TLS
    against the CA, TLS 1.3 and TLS 1.2 with AEAD ciphers only, no compression, no renegotiation, no socket buffer
    options) and the collection's own unit C(bdp-rsync-tls.service). Another stunnel service on the host is not
    touched: the configuration is not in C(/etc/stunnel)."
  - A pre-existing unit file is kept in its record, and put back by O(state=absent).
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  state:
    description: V(request), V(present) or V(absent), as described above.
    type: str
    choices: [request, present, absent]
    default: present
  directory:
    description: The directory of the host's TLS files (C(ca.crt), C(host.crt), C(host.key), C(stunnel.conf)).
    type: path
    default: /etc/bdp-wan-tune/rsync-tls
  server:
    description: Whether this is the receiving host (stunnel configuration and unit) or a sender (certificates only).
    type: bool
    default: true
  ca_cert:
    description: The CA certificate (PEM) that signs every certificate of the migration. Required with O(state=present).
    type: str
  cert:
    description: The host's certificate (PEM), signed by O(ca_cert). Required with O(state=present).
    type: str
  port:
    description: The TLS port stunnel accepts on.
    type: int
    default: 874
  address:
    description: The address stunnel accepts on, V(all) for every address.
    type: str
    default: all
  sources:
    description:
      - The addresses, networks and host name patterns that may reach the TLS daemon (O(server=true)). Behind stunnel
        rsync sees every client as 127.0.0.1, so the rule is enforced by stunnel before the handshake, through
        libwrap - a block of the collection's own at the top of O(wrap_path) allows them for the service
        C(bdp-rsync-tls) and denies everything else; the rest of the file is left as it is.
    type: list
    elements: str
    default: []
  wrap_path:
    description: The hosts_access(5) file stunnel's libwrap reads.
    type: path
    default: /etc/hosts.allow
  rsyncd_conf:
    description: The rsync daemon's configuration file, which stunnel passes to C(rsync --daemon).
    type: path
    default: /etc/rsyncd.conf
  stunnel:
    description: The stunnel program the unit starts.
    type: path
    default: /usr/bin/stunnel4
  header:
    description: Comment lines at the top of the configuration and the unit.
    type: str
    default: ''
extends_documentation_fragment:
  - bdp.wan_tune.attributes
  - bdp.wan_tune.state_dir
  - ansible.builtin.action_common_attributes
notes:
  - The module needs C(openssl) on the host (Debian package C(openssl)).
"""

EXAMPLES = r"""
- name: Make the host's key and ask for a certificate
  bdp.wan_tune.rsync_daemon_tls:
    state: request
  register: request

- name: Install the certificate and the stunnel instance
  bdp.wan_tune.rsync_daemon_tls:
    ca_cert: "{{ issued.ca_cert }}"
    cert: "{{ issued.cert }}"
    port: 874
"""

RETURN = r"""
csr:
  description: The certificate signing request for the host's key (public), or null in check mode before the key exists.
  returned: state=request
  type: str
cert:
  description: The host's present certificate (public), or null.
  returned: state=request
  type: str
key_created:
  description: Whether the key was made (or would be, in check mode).
  returned: state=request
  type: bool
paths:
  description: The paths of C(ca), C(cert), C(key) and, for a server, C(conf) and C(unit).
  returned: always
  type: dict
files:
  description: What happened to each file (written, unchanged, removed, restored).
  returned: state=present or state=absent
  type: dict
restart_needed:
  description: Whether stunnel must restart (its configuration, certificate or trust anchor changed).
  returned: state=present
  type: bool
unit_changed:
  description: Whether the unit file changed (systemd must reload).
  returned: state=present or state=absent
  type: bool
check_mode:
  description: Whether the module ran in check mode (also when a task or an include set it).
  returned: always
  type: bool
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils import files
from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls as tls


def paths(params):
    directory = params['directory']
    out = {'ca': os.path.join(directory, tls.CA_FILE), 'cert': os.path.join(directory, tls.CERT_FILE),
           'key': os.path.join(directory, tls.KEY_FILE)}
    if params['server']:
        out.update(conf=os.path.join(directory, tls.CONF_FILE), unit=tls.UNIT_PATH, wrap=params['wrap_path'])
    return out


def record_path(params):
    return os.path.join(params['state_dir'], 'rsync_daemon_tls%s.json' % ('' if params['server'] else '_client'))


def openssl(module, args, data=None):
    binary = module.get_bin_path('openssl')
    if not binary:
        module.fail_json(msg='openssl is not installed on this host (Debian package openssl); nothing was changed.')
    rc, out, err = module.run_command([binary] + args, data=data, binary_data=True)
    if rc != 0:
        # openssl's message never holds key material: it is about the arguments and the files
        module.fail_json(msg='openssl %s failed (rc %d): %s' % (args[0], rc, ' '.join(err.split())[:400]))
    return out


def ensure_directory(module, directory, record):
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory)
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o755)
        record.setdefault('made', []).append(parent)
    os.mkdir(directory, 0o755)
    os.chmod(directory, 0o755)
    record.setdefault('made', []).append(directory)


def start_record(module, params):
    """The record of what was there before the first change (kept once)."""
    path = record_path(params)
    record = files.load_record(path)
    if record:
        return record
    record = {'directory': params['directory'], 'existed': os.path.isdir(params['directory']), 'made': [],
              'kept': {}}
    if params['server']:
        record['wrap'] = {'path': params['wrap_path'], 'existed': os.path.exists(params['wrap_path'])}
    if params['server'] and os.path.exists(tls.UNIT_PATH):
        copy = os.path.join(params['state_dir'], 'rsync_daemon_tls', os.path.basename(tls.UNIT_PATH))
        if not os.path.isdir(os.path.dirname(copy)):
            os.makedirs(os.path.dirname(copy), 0o700)
        shutil.copy2(tls.UNIT_PATH, copy)
        record['kept'][tls.UNIT_PATH] = copy
    files.save_record(module, path, record)
    return record


def request(module, params, result):
    key = result['paths']['key']
    result['key_created'] = not os.path.exists(key)
    result['cert'] = files.read_text(result['paths']['cert'])
    result['csr'] = None
    if result['key_created']:
        result['changed'] = True
        if module.check_mode:
            return
        record = start_record(module, params)
        ensure_directory(module, params['directory'], record)
        files.save_record(module, record_path(params), record)
        pem = openssl(module, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'])
        files.write_atomic(module, key, pem, mode=0o600, owner=0, group=0)     # 0600 root from its first byte
    info = os.lstat(key)
    if info.st_uid != 0 or info.st_mode & 0o077:
        module.fail_json(msg='The key %s is owned by uid %d with mode %04o; expected root and 0600. Nothing was '
                         'changed: remove it to have a new one made, or fix its owner and mode.'
                         % (key, info.st_uid, info.st_mode & 0o7777), **result)
    result['csr'] = openssl(module, ['req', '-new', '-key', key, '-subj', '/CN=bdp-wan-tune-request'])
    if not isinstance(result['csr'], str):
        result['csr'] = result['csr'].decode('ascii')


def present(module, params, result):
    if (not params['ca_cert'] or not params['cert']) and not module.check_mode:
        module.fail_json(msg='ca_cert and cert are required with state=present', **result)
    # in check mode before the first run there is no certificate yet: it would be written
    wanted = {result['paths']['ca']: params['ca_cert'] or '(the CA certificate)\n',
              result['paths']['cert']: params['cert'] or '(the certificate to issue)\n'}
    if params['server']:
        wanted[result['paths']['conf']] = tls.render_stunnel(params['port'], params['address'], params['rsyncd_conf'],
                                                             params['directory'], params['header'])
        wanted[result['paths']['unit']] = tls.render_unit(params['directory'], params['header'], params['stunnel'])
        wanted[result['paths']['wrap']] = tls.with_block(files.read_text(params['wrap_path']), params['sources'])
    if not os.path.exists(result['paths']['key']) and not module.check_mode:
        module.fail_json(msg='The key %s is missing: run state=request first.' % result['paths']['key'], **result)
    result['files'], diffs = {}, []
    for path, text in sorted(wanted.items()):
        old = files.read_text(path)
        result['files'][path] = 'unchanged' if old == text else 'written'
        if old != text and path not in (result['paths']['ca'], result['paths']['cert']):
            diffs.append({'before_header': path, 'after_header': path, 'before': old or '', 'after': text})
        elif old != text:
            diffs.append({'before_header': path, 'after_header': path,
                          'before': '(a certificate)\n' if old else '', 'after': '(the certificate issued now)\n'})
    changed = [path for path, what in result['files'].items() if what == 'written']
    result['changed'] = bool(changed)
    # libwrap reads its file for every connection: no restart for it
    result['restart_needed'] = params['server'] and bool([p for p in changed if p != result['paths'].get('wrap')])
    result['unit_changed'] = params['server'] and result['paths']['unit'] in changed
    if changed and module._diff:
        result['diff'] = diffs
    if not changed or module.check_mode:
        return
    record = start_record(module, params)
    ensure_directory(module, params['directory'], record)
    files.save_record(module, record_path(params), record)
    for path in changed:
        files.write_atomic(module, path, wanted[path], mode=0o644, owner=0, group=0)


def absent(module, params, result):
    record = files.load_record(record_path(params))
    result['files'], result['unit_changed'] = {}, False
    if not record:
        return
    result['changed'] = True
    kept = record.get('kept') or {}
    wrap = record.get('wrap') or {}
    if wrap.get('path'):
        text = files.read_text(wrap['path'])
        rest = tls.without_block(text)
        if text is not None and rest != text:
            gone = not wrap.get('existed') and not rest.strip()
            result['files'][wrap['path']] = 'removed' if gone else 'block removed'
            if module._diff:
                result['diff'] = {'before_header': wrap['path'], 'after_header': wrap['path'], 'before': text,
                                  'after': '' if gone else rest}
            if not module.check_mode and gone:
                os.unlink(wrap['path'])
            elif not module.check_mode:
                files.write_atomic(module, wrap['path'], rest, mode=os.stat(wrap['path']).st_mode & 0o7777)
    owned = [result['paths'][key] for key in ('key', 'cert', 'ca', 'conf') if key in result['paths']]
    for path in owned + ([tls.UNIT_PATH] if params['server'] else []):
        if path in kept and os.path.exists(kept[path]):
            result['files'][path] = 'restored'
        elif os.path.lexists(path):
            result['files'][path] = 'removed'
        else:
            continue
        if path == tls.UNIT_PATH:
            result['unit_changed'] = True
        if module.check_mode:
            continue
        if path in kept and os.path.exists(kept[path]):
            shutil.copy2(kept[path], path)
            os.unlink(kept[path])
        else:
            os.unlink(path)
    if module.check_mode:
        return
    made = list(reversed(record.get('made') or []))
    parent = os.path.dirname(params['directory'].rstrip('/'))
    if os.path.basename(parent) == 'bdp-wan-tune' and parent not in made:
        made.append(parent)     # the collection's own directory, which the sender's or receiver's record made
    for directory in made:
        if os.path.isdir(directory) and not os.listdir(directory):
            os.rmdir(directory)
    copies = os.path.join(params['state_dir'], 'rsync_daemon_tls')
    if os.path.isdir(copies) and not os.listdir(copies):
        os.rmdir(copies)
    files.save_record(module, record_path(params), {})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['request', 'present', 'absent'], default='present'),
            directory=dict(type='path', default=tls.DIR),
            server=dict(type='bool', default=True),
            ca_cert=dict(type='str'),
            cert=dict(type='str'),
            port=dict(type='int', default=874),
            address=dict(type='str', default='all'),
            sources=dict(type='list', elements='str', default=[]),
            wrap_path=dict(type='path', default=tls.WRAP_PATH),
            rsyncd_conf=dict(type='path', default='/etc/rsyncd.conf'),
            stunnel=dict(type='path', default=tls.STUNNEL),
            header=dict(type='str', default=''),
            state_dir=dict(type='path', default=files.STATE_DIR),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = {'changed': False, 'paths': paths(params), 'check_mode': module.check_mode}
    {'request': request, 'present': present, 'absent': absent}[params['state']](module, params, result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
