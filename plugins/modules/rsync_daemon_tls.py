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
    anything changes; makes O(directory); records the receiver's O(migration) and O(senders) (and returns the ones
    recorded before, whose client files a moved receiver releases); and reports whether the daemon runs, how many
    transfers it serves (the rsync processes stunnel started; its libwrap helpers are not counted) and whether its
    unit file is newer than the running daemon (a restart is owed)."
  - "O(state=present) on a sender (O(server=false)): makes O(directory), the directory of one migration's trust
    anchor, certificate and key (one per O(migration) under the same parent), and records which O(receivers) use it.
    Client files of version 0.3, which lay in the parent directory itself, are removed (they belong to no
    migration)."
  - "O(state=absent) on a receiver: refuses broken marks in O(wrap_path) before anything changes (the role's
    blockinfile then removes the block), removes the receiver's files and directory, puts back a unit file that was
    there before, and returns the migration and senders it recorded. On a sender, O(receivers) stop using
    O(migration)'s directory; it goes when no receiver is left (another migration's files stay), and the parent
    directory once no migration is left."
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
  senders:
    description: The receiver's senders (O(server=true), O(state=present)), recorded for its rollback.
    type: list
    elements: str
    default: []
  receivers:
    description: The receivers that use this sender's directory of O(migration) (O(server=false)).
    type: list
    elements: str
    default: []
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
    receivers: [dc2-a]
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
senders_before:
  description: The senders recorded before this run (null at the first run).
  returned: state=present and server=true
  type: list
  elements: str
migration:
  description: The migration the receiver served, as recorded (null when there was no record).
  returned: state=absent and server=true
  type: str
senders:
  description: The senders the receiver had, as recorded (null when there was no record).
  returned: state=absent and server=true
  type: list
  elements: str
wrap_existed:
  description: Whether O(wrap_path) was there before the role first ran (null when there was no record).
  returned: state=absent and server=true
  type: bool
receivers_left:
  description: The receivers that still use the sender's directory of O(migration) (it stays while one does).
  returned: state=absent and server=false, when the sender had that migration
  type: list
  elements: str
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

import datetime
import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import runlock
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls as tls

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
    """The collection's own parent directory (/etc/bdp-wan-tune) of ``path``, as a list (empty when it is not)."""
    parent = os.path.dirname(path.rstrip('/'))
    return [parent] if os.path.basename(parent) == 'bdp-wan-tune' else []


def transfers_of(pid, proc='/proc'):
    """The rsync processes ``pid`` (stunnel) started, one for each transfer; its libwrap helpers (stunnel processes
    of its own) are not transfers."""
    count = 0
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, 'stat')) as handle:
                text = handle.read()
        except (IOError, OSError):
            continue
        comm, rest = text[text.find('(') + 1:text.rfind(')')], text[text.rfind(')') + 1:].split()
        count += len(rest) > 1 and rest[1] == str(pid) and comm == 'rsync'
    return count


def started_at(text):
    """The epoch seconds of a timestamp systemctl shows with --timestamp=us+utc ('Thu 2026-11-26 08:02:55.761015
    UTC'), or None."""
    try:
        when = datetime.datetime.strptime(' '.join(text.split()[1:3]), '%Y-%m-%d %H:%M:%S.%f')
    except ValueError:
        return None
    return (when - datetime.datetime(1970, 1, 1)).total_seconds()


def daemon_state(module, service, unit_path):
    """(active, transfers, restart_pending) of the TLS daemon: a restart is owed when its unit file was written after
    the daemon started (to the microsecond: a unit written just before the start owes nothing)."""
    systemctl = module.get_bin_path('systemctl')
    if not systemctl:
        return False, 0, False
    rc, out, dummy = module.run_command([systemctl, 'show', '--timestamp=us+utc', '-p', 'MainPID', '-p',
                                         'ActiveEnterTimestamp', service])
    shown = dict(line.split('=', 1) for line in out.splitlines() if '=' in line) if rc == 0 else {}
    pid = int(shown.get('MainPID') or 0)
    if not pid:
        return False, 0, False
    started = started_at(shown.get('ActiveEnterTimestamp', ''))
    try:
        pending = started is not None and os.stat(unit_path).st_mtime > started
    except OSError:
        pending = False
    return True, transfers_of(pid), pending


def refuse_broken_marks(module, wrap, result):
    text = files.read_text(wrap)
    problem = tls.wrap_problem(text, wrap)
    if problem:
        module.fail_json(msg=problem, **result)
    return text


def server_present(module, params, result):
    wrap = params['wrap_path']
    text = refuse_broken_marks(module, wrap, result)
    result['wrap_mode'] = '%04o' % (os.stat(wrap).st_mode & 0o7777) if text is not None else None
    record = files.load_record(record_path(params))
    result['migration_before'], result['senders_before'] = record.get('migration'), record.get('senders')
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
    moved = (record.get('migration'), record.get('senders')) != (params['migration'], sorted(params['senders']))
    record['migration'], record['senders'] = params['migration'], sorted(params['senders'])
    result['changed'] = bool(made) or first or moved
    if module.check_mode or not result['changed']:
        return
    for path, copy in record['kept'].items():
        if first and not os.path.exists(copy):
            os.makedirs(os.path.dirname(copy), 0o700, exist_ok=True)
            shutil.copy2(path, copy)
    files.save_record(module, record_path(params), record)


def client_record(module, params, result):
    """The sender's record {parent, made, migrations: {name: [receivers]}}; a record of 0.3 (one directory for every
    migration) has its files removed and its made directories carried over."""
    record = files.load_record(record_path(params))
    if record and not isinstance(record.get('migrations'), dict):
        directory = record.get('directory') or ''
        for name in tls.CLIENT_FILES.values():
            path = os.path.join(directory, name)
            if directory and os.path.isfile(path):
                result['files'][path] = 'removed (the layout of 0.3: one client identity for every migration)'
                if not module.check_mode:
                    os.unlink(path)
        record = {'parent': directory, 'made': record.get('made') or [], 'migrations': {}}
        result['changed'] = True
    return record or {'parent': os.path.dirname(params['directory'].rstrip('/')), 'made': [], 'migrations': {}}


def client_present(module, params, result):
    record = client_record(module, params, result)
    record['made'] += make_directories(params['directory'], result, module.check_mode)
    users = record['migrations'].setdefault(params['migration'], [])
    added = [name for name in params['receivers'] if name not in users]
    users.extend(added)
    result['changed'] = result['changed'] or bool(result['files']) or bool(added)
    if not module.check_mode and result['changed']:
        files.save_record(module, record_path(params), record)


def server_absent(module, params, result):
    record = files.load_record(record_path(params))
    result.update(migration=record.get('migration'), senders=record.get('senders'),
                  wrap_existed=(record.get('wrap') or {}).get('existed') if record else None)
    if not record:
        return
    refuse_broken_marks(module, (record.get('wrap') or {}).get('path') or params['wrap_path'], result)
    result['changed'] = True
    directory = record.get('directory') or params['directory']
    for name in sorted(set(tls.SERVER_FILES.values())):
        path = os.path.join(directory, name)
        if os.path.lexists(path):
            result['files'][path] = 'removed'
            if not module.check_mode:
                os.unlink(path)
    copy = (record.get('kept') or {}).get(tls.UNIT_PATH)
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
    remove_empty((record.get('made') or []) + [directory] + own_dir(directory), result, module.check_mode)
    if not module.check_mode:
        copies = os.path.join(params['state_dir'], 'rsync_daemon_tls')
        if os.path.isdir(copies) and not os.listdir(copies):
            os.rmdir(copies)
        files.save_record(module, record_path(params), {})


def client_absent(module, params, result):
    if not files.load_record(record_path(params)):
        return
    record = client_record(module, params, result)
    users = record['migrations'].get(params['migration'])
    if users is not None:
        left = [name for name in users if name not in params['receivers']]
        result['changed'] = result['changed'] or left != users
        record['migrations'][params['migration']] = left
        result['receivers_left'] = left
        if not left:
            del record['migrations'][params['migration']]
            for name in sorted(tls.CLIENT_FILES.values()):
                path = os.path.join(params['directory'], name)
                if os.path.lexists(path):
                    result['files'][path] = 'removed'
                    if not module.check_mode:
                        os.unlink(path)
            leftover = [params['directory']]
            if not record['migrations']:
                leftover += record['made'] + own_dir(record['parent'])
            remove_empty(leftover, result, module.check_mode)
    if not module.check_mode and result['changed']:
        files.save_record(module, record_path(params), record if record['migrations'] else {})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            server=dict(type='bool', default=True),
            directory=dict(type='path', required=True),
            migration=dict(type='str', required=True),
            senders=dict(type='list', elements='str', default=[]),
            receivers=dict(type='list', elements='str', default=[]),
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
