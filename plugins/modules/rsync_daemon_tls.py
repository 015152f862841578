#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: rsync_daemon_tls
short_description: The record, the directories and the undoing of the rsync daemon over TLS on a host
version_added: 0.3.0
description:
  - The role P(bdp.wan_tune.rsync_daemon#role) makes the keys, requests and certificates of the TLS daemon with
    community.crypto and writes the stunnel configuration and its unit from templates; this module does what comes
    before and after that, under the host's run lock (one state-changing step of the collection at a time).
  - "O(state=present) on a receiver (O(server=true)): before the first change, keeps a record of what was there
    (whether O(wrap_path) existed, a unit file of the same name, which it keeps a copy of); refuses a O(wrap_path)
    whose marks of the collection's block are broken (a lone BEGIN would make blockinfile add a second block) before
    anything changes; makes O(directory); and reports whether the daemon runs, how many connections it is serving
    (O(service)'s children) and whether its unit file is newer than the running daemon (a restart is pending)."
  - "O(state=present) on a sender (O(server=false)): makes O(directory), the directory of one migration's trust
    anchor, certificate and key (one per O(migration) under the same parent), and records it. Client files of
    version 0.3, which lay in the parent directory itself, are removed (they belong to no migration)."
  - "O(state=absent): a receiver's files and directory go and a unit file that was there before is put back; an
    O(wrap_path) that did not exist before and holds nothing else (the role removes its block first) goes too. On a
    sender, only O(migration)'s directory goes (another migration's files stay), and the parent directory once no
    migration is left."
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  state:
    description: V(present) or V(absent), as described above.
    type: str
    choices: [present, absent]
    default: present
  server:
    description: Whether this is the receiving host (stunnel and its unit) or a sender (certificates only).
    type: bool
    default: true
  directory:
    description: The directory of the host's TLS files; for a sender, the directory of one migration.
    type: path
    required: true
  migration:
    description: The migration's name (a sender keeps one directory for each).
    type: str
    required: true
  wrap_path:
    description: The hosts_access(5) file stunnel's libwrap reads (O(server=true)).
    type: path
    default: /etc/hosts.allow
  service:
    description: The collection's stunnel unit (O(server=true)).
    type: str
    default: bdp-rsync-tls.service
extends_documentation_fragment:
  - bdp.wan_tune.attributes
  - bdp.wan_tune.state_dir
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Record the receiver's first state and make its TLS directory
  bdp.wan_tune.rsync_daemon_tls:
    directory: /etc/bdp-wan-tune/rsync-tls
    migration: dc1-to-dc2
  register: prepared

- name: Remove one migration's client files from a sender
  bdp.wan_tune.rsync_daemon_tls:
    state: absent
    server: false
    directory: /etc/bdp-wan-tune/rsync-tls-client/dc1-to-dc2
    migration: dc1-to-dc2
"""

RETURN = r"""
active:
  description: Whether the TLS daemon runs.
  returned: state=present and server=true
  type: bool
transfers:
  description: The connections the TLS daemon serves now (stunnel's children, one rsync each).
  returned: state=present and server=true
  type: int
restart_pending:
  description: Whether the unit file is newer than the running daemon, so that a restart is still owed.
  returned: state=present and server=true
  type: bool
wrap_mode:
  description: The mode of O(wrap_path) (such as C(0644)), which the role keeps when it edits the file; null when
    there is none.
  returned: state=present and server=true
  type: str
migration_before:
  description: The migration the receiver served before this run (null at the first run).
  returned: state=present and server=true
  type: str
files:
  description: What happened to each file or directory (made, removed, restored, unchanged).
  returned: always
  type: dict
unit_changed:
  description: Whether the unit file was removed or restored (systemd must reload).
  returned: state=absent
  type: bool
check_mode:
  description: Whether the module ran in check mode.
  returned: always
  type: bool
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils import files
from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls as tls
from ansible_collections.bdp.wan_tune.plugins.module_utils import runlock

SERVER_RECORD = 'rsync_daemon_tls.json'
CLIENT_RECORD = 'rsync_daemon_tls_client.json'


def record_path(params):
    return os.path.join(params['state_dir'], SERVER_RECORD if params['server'] else CLIENT_RECORD)


def make_directories(directory, result, check_mode):
    """Make ``directory`` and its missing parents (0755); the ones made, outermost first."""
    missing = []
    path = directory.rstrip('/')
    while path and not os.path.isdir(path):
        missing.insert(0, path)
        path = os.path.dirname(path)
    for path in missing:
        result['files'][path] = 'made'
        if not check_mode:
            os.mkdir(path, 0o755)
            os.chmod(path, 0o755)
    return missing


def remove_empty(directories, result, check_mode):
    for path in sorted(set(directories), key=len, reverse=True):
        if os.path.isdir(path) and not os.listdir(path):
            result['files'][path] = 'removed'
            if not check_mode:
                os.rmdir(path)


def own_dir(path):
    """The collection's own parent directory (/etc/bdp-wan-tune) of ``path``, or None."""
    parent = os.path.dirname(path.rstrip('/'))
    return parent if os.path.basename(parent) == 'bdp-wan-tune' else None


def daemon_state(module, service, unit_path):
    """(active, transfers, restart_pending) of the TLS daemon."""
    systemctl = module.get_bin_path('systemctl')
    if not systemctl:
        return False, 0, False
    rc, out, dummy = module.run_command([systemctl, 'show', '--timestamp=unix', '-p', 'MainPID', '-p',
                                         'ActiveEnterTimestamp', service])
    shown = dict(line.split('=', 1) for line in out.splitlines() if '=' in line) if rc == 0 else {}
    pid = int(shown.get('MainPID') or 0)
    if not pid:
        return False, 0, False
    children = 0
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except (IOError, OSError, IndexError):
            continue
        children += int(fields[1]) == pid
    started = shown.get('ActiveEnterTimestamp', '').lstrip('@')
    try:
        pending = os.stat(unit_path).st_mtime > float(started)
    except (OSError, ValueError):
        pending = False
    return True, children, pending


def server_present(module, params, result):
    wrap = params['wrap_path']
    text = files.read_text(wrap)
    problem = tls.wrap_problem(text, wrap)
    if problem:
        module.fail_json(msg=problem, **result)
    result['wrap_mode'] = '%04o' % (os.stat(wrap).st_mode & 0o7777) if text is not None else None
    record = files.load_record(record_path(params))
    result['migration_before'] = record.get('migration')
    result['active'], result['transfers'], result['restart_pending'] = daemon_state(module, params['service'],
                                                                                    tls.UNIT_PATH)
    made = make_directories(params['directory'], result, module.check_mode)
    first = not record
    if first:
        record = {'directory': params['directory'], 'made': made, 'kept': {},
                  'wrap': {'path': wrap, 'existed': text is not None}}
        if os.path.exists(tls.UNIT_PATH):
            record['kept'][tls.UNIT_PATH] = os.path.join(params['state_dir'], 'rsync_daemon_tls',
                                                         os.path.basename(tls.UNIT_PATH))
    else:
        record['made'] = record.get('made', []) + made
    changed_migration = record.get('migration') != params['migration']
    record['migration'] = params['migration']
    result['changed'] = bool(made) or first or changed_migration
    if module.check_mode or not result['changed']:
        return
    for path, copy in record['kept'].items():
        if first and not os.path.exists(copy):
            os.makedirs(os.path.dirname(copy), 0o700, exist_ok=True)
            shutil.copy2(path, copy)
    files.save_record(module, record_path(params), record)


def client_present(module, params, result):
    record = files.load_record(record_path(params))
    parent = os.path.dirname(params['directory'].rstrip('/'))
    if record and 'migrations' not in record:
        legacy(module, record, result)
        record = {}
    made = make_directories(params['directory'], result, module.check_mode)
    record = record or {'parent': parent, 'made': [], 'migrations': []}
    record['made'] = record['made'] + made
    result['changed'] = bool(made) or params['migration'] not in record['migrations'] or bool(result['files'])
    if params['migration'] not in record['migrations']:
        record['migrations'].append(params['migration'])
    if not module.check_mode and result['changed']:
        files.save_record(module, record_path(params), record)


def legacy(module, record, result):
    """Remove the client files of version 0.3 (ca.crt, host.crt, host.key in the client directory itself)."""
    directory = record.get('directory') or ''
    for name in tls.CLIENT_FILES.values():
        path = os.path.join(directory, name)
        if directory and os.path.isfile(path):
            result['files'][path] = 'removed (the layout of 0.3: one client identity for every migration)'
            if not module.check_mode:
                os.unlink(path)


def server_absent(module, params, result):
    record = files.load_record(record_path(params))
    if not record:
        return
    result['changed'] = True
    directory = record.get('directory') or params['directory']
    for name in sorted(set(tls.SERVER_FILES.values())):
        path = os.path.join(directory, name)
        if os.path.lexists(path):
            result['files'][path] = 'removed'
            if not module.check_mode:
                os.unlink(path)
    kept = record.get('kept') or {}
    copy = kept.get(tls.UNIT_PATH)
    if copy and os.path.exists(copy):
        result['files'][tls.UNIT_PATH] = 'restored'
        result['unit_changed'] = True
        if not module.check_mode:
            shutil.copy2(copy, tls.UNIT_PATH)
            os.unlink(copy)
    elif os.path.lexists(tls.UNIT_PATH):
        result['files'][tls.UNIT_PATH] = 'removed'
        result['unit_changed'] = True
        if not module.check_mode:
            os.unlink(tls.UNIT_PATH)
    wrap = record.get('wrap') or {}
    text = files.read_text(wrap.get('path') or params['wrap_path'])
    if text is not None and not wrap.get('existed') and not text.strip():
        result['files'][wrap['path']] = 'removed (made by the role, nothing else in it)'
        if not module.check_mode:
            os.unlink(wrap['path'])
    remove_empty((record.get('made') or []) + [directory] + [p for p in [own_dir(directory)] if p], result,
                 module.check_mode)
    if not module.check_mode:
        copies = os.path.join(params['state_dir'], 'rsync_daemon_tls')
        if os.path.isdir(copies) and not os.listdir(copies):
            os.rmdir(copies)
        files.save_record(module, record_path(params), {})


def client_absent(module, params, result):
    record = files.load_record(record_path(params))
    if not record:
        return
    if 'migrations' not in record:
        legacy(module, record, result)
        result['changed'] = True
        if not module.check_mode:
            remove_empty((record.get('made') or []) + [p for p in [own_dir(record.get('directory') or '')] if p],
                         result, False)
            files.save_record(module, record_path(params), {})
        return
    if params['migration'] not in record['migrations']:
        return
    result['changed'] = True
    for name in sorted(tls.CLIENT_FILES.values()):
        path = os.path.join(params['directory'], name)
        if os.path.lexists(path):
            result['files'][path] = 'removed'
            if not module.check_mode:
                os.unlink(path)
    record['migrations'].remove(params['migration'])
    leftover = [params['directory']]
    if not record['migrations']:
        leftover += record['made'] + [p for p in [own_dir(record['parent'])] if p]
    remove_empty(leftover, result, module.check_mode)
    if not module.check_mode:
        files.save_record(module, record_path(params), record if record['migrations'] else {})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            server=dict(type='bool', default=True),
            directory=dict(type='path', required=True),
            migration=dict(type='str', required=True),
            wrap_path=dict(type='path', default=tls.WRAP_PATH),
            service=dict(type='str', default=tls.SERVICE),
            state_dir=dict(type='path', default=files.STATE_DIR),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = {'changed': False, 'files': {}, 'check_mode': module.check_mode}
    if params['state'] == 'absent':
        result['unit_changed'] = False
    step = {('present', True): server_present, ('present', False): client_present,
            ('absent', True): server_absent, ('absent', False): client_absent}[(params['state'], params['server'])]
    with runlock.held(module, params['state_dir'], 'rsync_daemon_tls %s' % params['state']):
        step(module, params, result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
