# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a migration goes: the receiver's rsync daemon, from the variables it was set up with (the rsync_daemon
role's), checked on the controller before anything moves.  Pure functions.
"""

import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import read_whole
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import excludes as _excludes
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

ACTIONS = ('run', 'status', 'stop', 'limit')
# What a migration keeps that depends on the receiver (migrate_preserve): owners and groups (a module that runs as
# root), ACLs and extended attributes (where the receiver's filesystem has them), sparse files (holes kept), device
# nodes (a module that runs as root and a daemon that may create them: module_utils/migrate/receiver.py). Permissions,
# times, symbolic links, hard links and special files (FIFOs, sockets: no privilege needed) are always kept.
PRESERVE = ('owners', 'acls', 'xattrs', 'sparse', 'devices')
PRESERVE_HELP = 'a list of owners, acls, xattrs, sparse, devices (the default: all of them)'
MAX_DELETE_DEFAULT = 1000
MAX_DELETE_HELP = 'a whole number of files, or -1 for no limit (default %d)' % MAX_DELETE_DEFAULT
TRANSPORTS = ('tls', 'plain')
SUBDIR_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$')
SUBDIR_HELP = ('a directory name of at most 128 letters, digits, _ . - (the sender\'s inventory name by default), or / '
               'for the module\'s own directory')
# rsync_daemon's defaults, for a receiver whose inventory leaves them out (role defaults are not host variables)
DAEMON_DEFAULTS = {'transport': rsyncd.TRANSPORT, 'port': rsyncd.PORT, 'tls_port': rsyncd.TLS_PORT, 'streams': rsyncd.STREAMS, 'address': 'all',
                   'allow_self': True, 'auth_digest': 'sha256', 'socket_options': '', 'hosts_allow': [],
                   'users': [], 'modules': [], 'tls_migration': '', 'tls_client_dir': rsynctls.CLIENT_DIR}


class TargetError(ValueError):
    """A migration that cannot go where it is sent; the message names the variable and what is accepted."""


def daemon_settings(receiver_vars):
    """The receiver's rsync_daemon settings (keys without the prefix), its own or the role's defaults."""
    return dict((key, receiver_vars.get(rsyncd.PREFIX + key, default)) for key, default in DAEMON_DEFAULTS.items())


def target(sender, receiver, receiver_vars, sender_address, module=None, user=None, transport=rsyncd.TRANSPORT,
           subdir=None, sources=None):
    """The destination of ``sender``'s tree on ``receiver``: {receiver, module, path, dest, owners (whether the module
    runs as root, so that files keep their owners and groups), user, port, transport, max_connections, client (the
    sender's TLS files for the receiver's migration), command and env (rsynctls.client_command's, or rsync's in cleartext),
    migration, service}.  TargetError when the
    receiver's daemon has no such module, the module is read-only, the user may not write it, it does not admit
    the sender's address, or the transport is one the daemon does not serve."""
    settings = daemon_settings(receiver_vars)
    plan, problems = rsyncd.check(settings, passwords=False)
    if problems:
        raise TargetError('the rsync daemon of %s is not usable as it is set up: %s Run the rsync_daemon role '
                          '(-e rsync_daemon=true) with valid settings first.' % (receiver, problems[0]))
    modules = plan['modules']
    if not modules:
        raise TargetError('migrate_target: %s has no rsync_daemon_modules, so it receives nothing; expected a '
                          'receiver set up with the rsync_daemon role and a writable module.' % receiver)
    if module:
        chosen = next((item for item in modules if item['name'] == module), None)
        if chosen is None:
            raise TargetError('migrate_module: %r is not a module of %s; expected one of %s.' % (
                module, receiver, ', '.join(item['name'] for item in modules)))
    else:
        chosen = next((item for item in modules if not item['read_only']), None)
        if chosen is None:
            raise TargetError('migrate_module: %s has no writable module; expected a module with read_only: false '
                              'in its rsync_daemon_modules.' % receiver)
    if chosen['read_only']:
        raise TargetError('migrate_module: %r of %s is read-only; expected a writable module (read_only: false).'
                          % (chosen['name'], receiver))
    users = chosen.get('auth_users') or []
    if user and user not in users:
        raise TargetError('migrate_user: %r may not write %s on %s; expected one of its auth_users: %s.' % (
            user, chosen['name'], receiver, ', '.join(users) or 'none'))
    if not users:
        raise TargetError('migrate_module: %r of %s has no auth_users; expected a module whose users authenticate.'
                          % (chosen['name'], receiver))
    if not rsynctls.source_allowed(sender_address, chosen['hosts_allow']):
        raise TargetError('migrate_module: %r of %s does not admit %s (%s); expected %s in its hosts_allow (%s).' % (
            chosen['name'], receiver, sender, sender_address, sender_address, ' '.join(chosen['hosts_allow'])))
    served = settings['transport']
    if transport not in TRANSPORTS:
        raise TargetError('migrate_transport: %r is not a transport; expected tls or plain.' % (transport,))
    if served != 'both' and served != transport:
        raise TargetError('migrate_transport: %s, but %s serves %s only (rsync_daemon_transport); expected %s.' % (
            transport, receiver, served, served))
    if subdir is None or subdir == '':
        subdir = sender
    if subdir != '/' and not SUBDIR_RE.match(subdir):
        raise TargetError('migrate_subdir: %r is not a directory name; expected %s.' % (subdir, SUBDIR_HELP))
    layout = rsynctls.layout(rsynctls.migration_name(settings['tls_migration'], sources),
                             settings['tls_client_dir'] or rsynctls.CLIENT_DIR, port=int(settings['tls_port']),
                             receiver=receiver)
    dest = chosen['path'].rstrip('/') + ('' if subdir == '/' else '/' + subdir)
    owners = str(chosen.get('uid')) in ('root', '0')
    return {'receiver': receiver, 'module': chosen['name'], 'path': chosen['path'], 'dest': dest, 'owners': owners,
            'subdir': '' if subdir == '/' else subdir, 'user': user or users[0], 'transport': transport,
            'port': int(settings['tls_port'] if transport == 'tls' else settings['port']),
            'max_connections': chosen['max_connections'], 'client': layout['client'],
            'env': layout['env_vars'] if transport == 'tls' else {},
            'command': layout['command'] if transport == 'tls' else ['rsync'],
            'migration': layout['migration'], 'service': layout['service'] if transport == 'tls' else None}


def pass_problems(item, delete, max_delete, exclude, preserve):
    """The problems of a pass of ``item`` (target()'s destination): migrate_delete into the module's own directory
    (what is there is not only this sender's), migrate_max_delete, migrate_exclude, migrate_preserve (owners need a
    module that runs as root)."""
    problems = []
    if delete and not item['subdir']:
        problems.append('migrate_delete: true with migrate_subdir=/ would delete, in the module %s\'s own directory %s '
                        'on %s, whatever the source has not, also what is not this sender\'s; expected a directory '
                        'of its own (migrate_subdir empty: the sender\'s inventory name) for a pass with deletes.'
                        % (item['module'], item['path'], item['receiver']))
    limit = read_whole(max_delete) if str(max_delete).strip() != '-1' else -1
    if limit is None:
        problems.append('migrate_max_delete: %r is not a number of files; expected %s.' % (max_delete, MAX_DELETE_HELP))
    problems.extend(_excludes.check(exclude))
    if not isinstance(preserve, (list, tuple)) or [name for name in preserve if name not in PRESERVE]:
        problems.append('migrate_preserve: %r is not a list of what to keep; expected %s.' % (preserve, PRESERVE_HELP))
    elif 'owners' in preserve and not item['owners']:
        problems.append('migrate_preserve: owners, but the module %s of %s does not run as root (its uid in '
                        'rsync_daemon_modules), so every file would be owned by that user; expected the module with '
                        'uid: root and gid: root (rsync keeps owners and groups by number, chrooted, inside the '
                        'sandboxed TLS daemon: docs/migration.md), or migrate_preserve without owners to accept that.'
                        % (item['module'], item['receiver']))
    return problems


def streams(wanted, auto, max_connections):
    """The number of streams: ``wanted`` (a whole number, or 'auto' for ``auto``), never above the module's max
    connections, which the senders of one module share."""
    if str(wanted).strip().lower() == 'auto':
        return min(auto, max_connections)
    number = read_whole(wanted)
    if number is None or number < 1:
        raise TargetError('migrate_streams: %r is not a number of streams; expected auto or a whole number from 1 to '
                          'the module\'s max connections (%d).' % (wanted, max_connections))
    if number > max_connections:
        raise TargetError('migrate_streams: %d is more than the module\'s max connections (%d, rsync_daemon_streams '
                          'on the receiver, shared by every sender of the module); expected at most %d.'
                          % (number, max_connections, max_connections))
    return number


def url(item, host):
    """The rsync URL of the destination: rsync://user@host:port/module/subdir/."""
    where = '[%s]' % host if ':' in host else host
    return 'rsync://%s@%s:%d/%s/%s' % (item['user'], where, item['port'], item['module'],
                                       item['subdir'] + '/' if item['subdir'] else '')


def unit_name(receiver, module):
    """The sender's systemd unit for the migration to ``receiver``'s ``module``: one per pair, so that a second
    migration of the same pair finds the first running."""
    return 'bdp-migrate-%s-%s.service' % (rsynctls.path_name(receiver, False), rsynctls.path_name(module, False))
