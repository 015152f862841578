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
  - "O(state=present) on a receiver (O(server=true)): first asks the kernel whether root may use nftables (a dump of
    its tables over netfilter's netlink socket, without the nft program), which the TLS daemon's source gate needs,
    and refuses a host where it may not (no nf_tables in the kernel, no CAP_NET_ADMIN), naming what would work,
    before anything changes; returns where the nft program is (the role installs nftables where it is missing)."
  - "Then, before the first change, keeps a record of what was there
    (whether O(wrap_path) existed, a unit file of the same name, which it keeps a copy of); refuses, before anything
    changes, a O(wrap_path) whose marks of the collection's block are broken (a lone BEGIN would make blockinfile add
    a second block), a CA directory O(ca_dir) with the certificate but not its key, a key that is not root's and 0600,
    or a CA that ends within 30 days, a receiver that serves O(migration) with certificates of a CA whose key is
    neither in O(ca_dir) nor on the controller (O(earlier_ca)), unless O(new_ca), and a receiver that would move to
    another O(migration) while transfers of the one it serves are in flight (its senders' next connection would be
    refused); makes O(directory) and O(ca_dir)
    root's and 0700 (or puts them so; their parents 0755); records the receiver's O(migration), O(senders) and
    O(ca_dir) (and returns the ones recorded before, whose client files a moved receiver releases; the CA directory of
    the migration it left is removed, since no sender holds a certificate of it any more); returns the migration
    CA's certificate when the receiver has one; and reports whether the daemon runs, how many transfers it serves
    (the rsync processes stunnel started; its libwrap helpers are not counted) and whether its unit file is newer than
    the running daemon (a restart is owed)."
  - "O(state=present) on a sender (O(server=false)): makes, below O(directory), the directory of the trust anchor,
    certificate and key that the sender holds for each of O(receivers) in O(migration),
    C(<directory>/<migration>/<receiver>/), root's and 0700, and records it. Where earlier versions left one identity
    for the whole migration in C(<directory>/<migration>/) and its trust anchor is O(anchor) (the receiver's CA, moved
    from the controller), its files are copied into a receiver's directory that has none, so that its certificate is
    kept. Client files of version 0.3, which lay in O(directory) itself, are removed (they belong to no migration)."
  - "O(state=absent) on a receiver: refuses broken marks in O(wrap_path) before anything changes (the role's
    blockinfile then removes the block), removes the receiver's files, its directory and its migration CA, puts back a
    unit file that was there before, and returns the migration and senders it recorded. On a sender, the directories
    of O(receivers) in O(migration) go; the migration's directory goes when no receiver is left (another migration's
    files stay), and O(directory) once no migration is left."
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
    description: The directory of the receiver's TLS files (O(server=true)); on a sender, the parent of its
      migrations' directories (C(rsync_daemon_tls_client_dir)).
    type: path
    required: true
  ca_dir:
    description: The directory of the migration's CA on the receiver (O(server=true), O(state=present)).
    type: path
  ca_given:
    description: The CA is given in variables and signs on the controller; O(ca_dir) is neither read nor made (and not
      removed).
    type: bool
    default: false
  earlier_ca:
    description: The controller holds the migration's CA that an earlier version made there (the role moves it to the
      receiver).
    type: bool
    default: false
  new_ca:
    description: Let a new CA be made for a receiver that serves O(migration) with certificates of a CA whose key is
      lost (C(rsync_daemon_tls_ca_new)).
    type: bool
    default: false
  anchor:
    description: The certificate (PEM) of the receivers' CA (O(server=false)); the one identity of earlier versions is
      copied into a receiver's directory only where its trust anchor is this CA.
    type: str
    default: ""
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
    description: The receivers for which the sender holds an identity in O(migration) (O(server=false)).
    type: list
    elements: str
    default: []
  wrap_path:
    description: The hosts_access(5) file where versions before 0.5.0 kept the TLS daemon's source gate, a block the
      role now takes out (O(server=true)).
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

- name: Remove the client files a sender holds for dc2-a in one migration
  bdp.wan_tune.rsync_daemon_tls:
    state: absent
    server: false
    directory: /etc/bdp-wan-tune/rsync-tls-client
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
nft:
  description: The path of the nft program, null where it is not installed.
  returned: state=present and server=true
  type: str
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
ca_cert:
  description: The certificate (PEM) of the migration CA in O(ca_dir); empty when the receiver has none yet (or only
    its key, a CA whose making was cut short).
  returned: state=present and server=true
  type: str
server_dir_made:
  description: Whether O(directory) was made (or would be, in check mode).
  returned: state=present and server=true
  type: bool
ca_dir_made:
  description: Whether O(ca_dir) was made (or would be, in check mode).
  returned: state=present and server=true
  type: bool
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
  description: Whether O(wrap_path) was there before the role first ran (with O(state=absent), null when there was
    no record).
  returned: server=true
  type: bool
receivers_left:
  description: The receivers for which the sender still holds an identity in O(migration) (its directory stays while
    one is left).
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
import platform
import shutil
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import runlock
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls as tls

SERVER_RECORD = 'rsync_daemon_tls.json'
CLIENT_RECORD = 'rsync_daemon_tls_client.json'
KEY_DIR_MODE = 0o700


def record_path(params):
    return os.path.join(params['state_dir'], SERVER_RECORD if params['server'] else CLIENT_RECORD)


def make_directories(directory, result, check_mode, mode=0o755):
    """Make ``directory`` and its missing parents (``mode``); the ones made, outermost first."""
    missing = []
    path = directory.rstrip('/')
    while path and not os.path.isdir(path):
        missing.insert(0, path)
        path = os.path.dirname(path)
    for path in missing:
        result['files'][path] = 'made'
        if not check_mode:
            os.mkdir(path, mode)
            os.chmod(path, mode)
    return missing


def private(directory, result, check_mode):
    """A directory that holds keys: root's and 0700, made so or put so (a key that community.crypto or copy write is
    for a moment of the umask's mode before its own, so only the directory keeps others out); its missing parents
    0755.  The directories made."""
    made = make_directories(os.path.dirname(directory.rstrip('/')), result, check_mode)
    made += make_directories(directory, result, check_mode, KEY_DIR_MODE)
    if directory not in made and os.path.isdir(directory):
        info = os.stat(directory)
        if info.st_uid != 0 or stat.S_IMODE(info.st_mode) != KEY_DIR_MODE:
            result['files'][directory] = 'made root\'s and 0700 (was uid %d, mode %04o)' % (
                info.st_uid, stat.S_IMODE(info.st_mode))
            if not check_mode:
                os.chown(directory, 0, 0)
                os.chmod(directory, KEY_DIR_MODE)
    return made


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


def ca_state(module, ca_dir, result):
    """The certificate (PEM) of the CA in ``ca_dir`` ('' when it has none, or only its key: a CA whose making was cut
    short, which the role finishes from that key); fails before anything changes when the directory holds the
    certificate without its key, a key that is not root's and 0600, or a CA that ends within RENEW_DAYS."""
    cert, key = (os.path.join(ca_dir, tls.CA_FILES[name]) for name in ('cert', 'key'))
    problem = None
    if os.path.lexists(key):
        info = os.lstat(key)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
            problem = 'the CA key %s is not a file of root\'s with mode 0600 (uid %d, mode %04o)' % (
                key, info.st_uid, info.st_mode & 0o7777)
    elif os.path.lexists(cert):
        problem = '%s holds %s but not its key %s, so it cannot sign' % (ca_dir, cert, key)
    text = (files.read_text(cert) or '') if not problem and os.path.lexists(key) else ''
    if text and not problem:
        problem = ca_validity_problem(text, cert)
    if problem:
        module.fail_json(msg='wan_tune_state_dir, rsync_daemon_tls_migration: the migration CA on this receiver '
                             'is not usable: %s. Nothing was changed: mend it (chown root:root, chmod 600), or remove '
                             'the directory to have a new CA made (every certificate is then issued anew, and a '
                             'migration running to this receiver fails its next connection).' % problem, **result)
    return text


def ca_validity_problem(text, path):
    """Why the CA certificate ``text`` cannot sign (it ends within RENEW_DAYS), or None; None too where the host has
    no Python cryptography library yet (community.crypto's modules need it, and the role installs it)."""
    try:
        from cryptography import x509
    except ImportError:
        return None
    try:
        cert = x509.load_pem_x509_certificate(text.encode('ascii'))
    except ValueError as exc:
        return '%s is not a PEM certificate (%s)' % (path, exc)
    end = getattr(cert, 'not_valid_after_utc', None) or cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)
    try:
        tls.validity(None, end.strftime(tls.ASN1_TIME), tls.RENEW_DAYS + 1)
    except tls.ValidityError as exc:
        return str(exc).split(':', maxsplit=1)[0] + ' (%s)' % path
    return None


def remove_tree(path, result, check_mode, why='removed'):
    """Remove the files of a directory of the collection's own, then the directory."""
    if not os.path.isdir(path):
        return
    for name in sorted(os.listdir(path)):
        result['files'][os.path.join(path, name)] = why
    result['files'][path] = why
    if not check_mode:
        shutil.rmtree(path)


def own_ca_dir(path, state_dir):
    """Whether ``path`` is a migration's CA directory below ``state_dir`` (rsync-tls-ca/<migration>, the CA's files
    only): the only kind of directory the module removes as a CA's."""
    if not path or not os.path.isdir(path):
        return False
    real, parent = os.path.realpath(path), os.path.realpath(os.path.join(state_dir, tls.CA_SUBDIR))
    return os.path.dirname(real) == parent and bool(tls.MIGRATION_RE.match(os.path.basename(real))) \
        and set(os.listdir(real)) <= set(tls.CA_FILES.values())


def same_path(one, other):
    return bool(one) and bool(other) and os.path.realpath(one) == os.path.realpath(other)


def refuse_move_in_flight(module, params, record, result):
    """A receiver does not move to another migration while transfers of the one it serves are in flight: it would
    trust the new migration's CA only, and refuse the running migration's next connection (a part, a stream, the
    proof).  Refused before anything changes (the validation play's check-mode call sees it first)."""
    before = record.get('migration')
    if before and before != params['migration'] and result['transfers']:
        module.fail_json(msg='This receiver serves the migration %s, with %d transfer(s) in flight; moving it to the '
                         'migration %s (rsync_daemon_tls_migration) now would refuse the running migration from its '
                         'next connection on. Let that migration end (-e migrate_action=status on its senders shows '
                         'it) or stop it (-e migrate_action=stop), then run again; or keep '
                         'rsync_daemon_tls_migration=%s for now. Nothing was changed.'
                         % (before, result['transfers'], params['migration'], before),
                         **result)


def refuse_lost_ca(module, params, record, result):
    """Fail before anything changes when the receiver serves its migration with certificates of a CA whose key is
    neither here nor on this controller (an earlier version kept it on the controller it ran from): a new CA would
    issue every certificate anew and cut a migration that runs, so it is made only when rsync_daemon_tls_ca_new
    asks for it."""
    anchor = os.path.join(params['directory'], tls.SERVER_FILES['ca'])
    if params['ca_given'] or result['ca_cert'] or params['earlier_ca'] or params['new_ca'] \
            or record.get('migration') != params['migration'] or not os.path.exists(anchor):
        return
    module.fail_json(msg='rsync_daemon_tls_ca_dir: this receiver serves the migration %s with certificates of its CA '
                         '(%s), but neither this receiver (%s) nor this controller holds the CA\'s key: an earlier '
                         'version kept it on the controller it ran from. Run once from that controller (or give '
                         'rsync_daemon_tls_ca_dir where the CA is), which moves it here and issues nothing anew; or '
                         'set rsync_daemon_tls_ca_new=true to make a new CA and issue every certificate of the '
                         'migration anew (a migration running to this receiver then fails its next connection). '
                         'Nothing was changed.' % (params['migration'], anchor, params['ca_dir']), **result)


def server_present(module, params, result):
    result['nft'] = module.get_bin_path('nft', opt_dirs=['/usr/sbin', '/sbin'])
    problem = tls.nftables_problem()
    if problem:
        module.fail_json(msg=tls.gate_problem(platform.node(), problem), **result)
    wrap = params['wrap_path']
    text = refuse_broken_marks(module, wrap, result)
    result['wrap_mode'] = '%04o' % (os.stat(wrap).st_mode & 0o7777) if text is not None else None
    result['ca_cert'] = '' if params['ca_given'] else ca_state(module, params['ca_dir'], result)
    record = files.load_record(record_path(params))
    result['migration_before'], result['senders_before'] = record.get('migration'), record.get('senders')
    refuse_lost_ca(module, params, record, result)
    result['active'], result['transfers'], result['restart_pending'] = daemon_state(module, params['service'],
                                                                                    tls.UNIT_PATH)
    refuse_move_in_flight(module, params, record, result)
    made = private(params['directory'], result, module.check_mode)
    result['server_dir_made'] = params['directory'].rstrip('/') in made
    if not params['ca_given']:
        made += make_directories(params['state_dir'], result, module.check_mode)
        made += private(params['ca_dir'], result, module.check_mode)
    result['ca_dir_made'] = not params['ca_given'] and params['ca_dir'].rstrip('/') in made
    first = not record
    if first:
        record = {'directory': params['directory'], 'made': made, 'kept': {},
                  'wrap': {'path': wrap, 'existed': text is not None}}
        if os.path.exists(tls.UNIT_PATH):
            record['kept'][tls.UNIT_PATH] = os.path.join(params['state_dir'], 'rsync_daemon_tls',
                                                         os.path.basename(tls.UNIT_PATH))
    else:
        record['made'] = record.get('made', []) + made
    result['wrap_existed'] = (record.get('wrap') or {}).get('existed', True)
    # The CA of a migration the receiver left: no sender keeps a certificate of it (the role releases their files),
    # so it goes; only a CA directory of the collection's own, never the one in use by another name of its path.
    left = record.get('ca_dir')
    if record.get('migration') != params['migration'] and not same_path(left, params['ca_dir']) \
            and own_ca_dir(left, params['state_dir']):
        remove_tree(left, result, module.check_mode, 'removed (the receiver left the migration %s)'
                    % record.get('migration'))
    moved = (record.get('migration'), record.get('senders')) != (params['migration'], sorted(params['senders'])) \
        or not same_path(record.get('ca_dir'), params['ca_dir'])
    record['migration'], record['senders'], record['ca_dir'] = params['migration'], sorted(params['senders']), \
        params['ca_dir']
    result['changed'] = bool(made) or first or moved or bool(result['files'])
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
    return record or {'parent': params['directory'].rstrip('/'), 'made': [], 'migrations': {}}


def copy_file(source, target, mode):
    """Copy ``source`` to ``target``, created with ``mode`` from its first byte (a key is never wider than 0600)."""
    with open(source, 'rb') as handle:
        data = handle.read()
    tmp = '%s.%d.tmp' % (target, os.getpid())
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(out, 'wb') as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.rename(tmp, target)


def adopt(migration_dir, directory, anchor, result, check_mode):
    """Copy the one identity that earlier versions kept for the whole migration (in ``migration_dir``) into a
    receiver's ``directory`` that has none, where its trust anchor is ``anchor``, the receiver's CA (the CA moved
    from the controller): its certificate is kept.  Another receiver's CA did not sign it: its key stays out."""
    names = sorted(tls.CLIENT_FILES.values())
    if not anchor or not all(os.path.isfile(os.path.join(migration_dir, name)) for name in names) or \
            any(os.path.lexists(os.path.join(directory, name)) for name in names) or \
            (files.read_text(os.path.join(migration_dir, tls.CLIENT_FILES['ca'])) or '').strip() != anchor.strip():
        return
    for name in names:
        target = os.path.join(directory, name)
        result['files'][target] = 'copied from %s (the layout of earlier versions)' % migration_dir
        if not check_mode:
            copy_file(os.path.join(migration_dir, name), target, 0o600 if name == tls.CLIENT_FILES['key'] else 0o644)


def client_present(module, params, result):
    record = client_record(module, params, result)
    users = record['migrations'].setdefault(params['migration'], [])
    migration_dir = os.path.join(params['directory'], params['migration'])
    for receiver in params['receivers']:
        directory = tls.client_dir(params['directory'], params['migration'], receiver)
        record['made'] += private(directory, result, module.check_mode)
        adopt(migration_dir, directory, params['anchor'], result, module.check_mode)
        if receiver not in users:
            users.append(receiver)
            result['changed'] = True
    result['changed'] = result['changed'] or bool(result['files'])
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
    if own_ca_dir(record.get('ca_dir'), params['state_dir']):
        remove_tree(record['ca_dir'], result, module.check_mode)
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
        gone = [name for name in users if name in params['receivers']]
        migration_dir = os.path.join(params['directory'], params['migration'])
        for receiver in gone:
            remove_tree(tls.client_dir(params['directory'], params['migration'], receiver), result, module.check_mode)
        left = [name for name in users if name not in gone]
        result['changed'] = result['changed'] or bool(gone)
        record['migrations'][params['migration']] = left
        result['receivers_left'] = left
        if not left:
            del record['migrations'][params['migration']]
            for name in sorted(tls.CLIENT_FILES.values()):      # the one identity of earlier versions
                path = os.path.join(migration_dir, name)
                if os.path.lexists(path):
                    result['files'][path] = 'removed'
                    if not module.check_mode:
                        os.unlink(path)
            leftover = [migration_dir]
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
            ca_dir=dict(type='path'),
            ca_given=dict(type='bool', default=False),
            earlier_ca=dict(type='bool', default=False),
            new_ca=dict(type='bool', default=False),
            anchor=dict(type='str', default=''),
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
    if params['server'] and params['state'] == 'present' and not params['ca_given'] and not params['ca_dir']:
        module.fail_json(msg='ca_dir is required for a receiver whose CA is not given (ca_given).', **result)
    if params['state'] == 'absent':
        result['unit_changed'] = False
    step = {('present', True): server_present, ('present', False): client_present,
            ('absent', True): server_absent, ('absent', False): client_absent}[(params['state'], params['server'])]
    with runlock.held(module, params['state_dir'], 'rsync_daemon_tls %s' % params['state']):
        step(module, params, result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
