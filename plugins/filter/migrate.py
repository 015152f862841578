# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a sender's migration goes, from the receiver's inventory (module_utils/migrate/target.py).

Documentation lives in migrate_target.yml beside this file.
"""

import os

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import peers as _peers
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import target as _target
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd as _rsyncd


def receiver_of(values):
    """A sender's receiver: migrate_target, else wan_peer, else the first of wan_peers ('' when none)."""
    peers = values.get('wan_peers') or []
    first = peers[0] if isinstance(peers, list) and peers else ''
    return values.get('migrate_target') or values.get('wan_peer') or first


def migrate_target(sender, hostvars, module='', user='', transport=_rsyncd.TRANSPORT, subdir='', source='',
                   action='run', sources=None, streams='auto', delete=False, max_delete=_target.MAX_DELETE_DEFAULT,
                   exclude=(), preserve=_target.PRESERVE):
    """{problems: [...], ...the destination} of ``sender``'s migration: its receiver, and the senders of the
    inventory that share it (they share its module's connections, and none may write where another does); the
    problems of its pass (deletes, their guard, excludes, what it keeps)."""
    problems = []
    if action not in _target.ACTIONS:
        problems.append('migrate_action: %r is not an action; expected run, status, stop or limit.' % (action,))
    if not source or not os.path.isabs(str(source)):
        problems.append('migrate_source: %r is not an absolute directory; expected the tree to move, such as /data.'
                        % (source,))
    receiver = receiver_of(hostvars[sender])
    # a receiver of another sender of the inventory that sends too: migrate_source given to every host (-e)
    senders_to_me = sorted(name for name in hostvars if name != sender and hostvars[name].get('migrate_source')
                           and receiver_of(hostvars[name]) == sender)
    if senders_to_me:
        problems.append('migrate_source: set on %s, which receives the tree of %s: a host sends or receives, and an '
                        'extra variable (-e migrate_source=...) sets it on every host of the play; expected '
                        'migrate_source in the host variables of each sender only (or -e migrate_hosts=SENDER).'
                        % (sender, ', '.join(senders_to_me)))
        return {'problems': problems}
    if not receiver:
        problems.append('migrate_target: %s has no receiver; expected migrate_target, or wan_peer (the inventory name '
                        'of the host that receives the tree).' % sender)
        return {'problems': problems}
    if receiver not in hostvars:
        problems.append('migrate_target: %r is not a host of this inventory; expected the inventory name of the '
                        'receiver, whose rsync_daemon variables say where the tree goes. Under AWX job slicing a slice '
                        'holds only its own hosts: run the migration unsliced (job_slice_count 1; --limit keeps the '
                        'whole inventory and is fine).' % (receiver,))
        return {'problems': problems}
    try:
        sender_address = str(_peers.address_of(sender, hostvars[sender])[0])
        receiver_address = str(_peers.address_of(receiver, hostvars[receiver])[0])
        out = _target.target(sender, receiver, hostvars[receiver], sender_address, module or None, user or None,
                             transport, subdir, sources)
    except _target.TargetError as exc:
        problems.append(str(exc))
        return {'problems': problems}
    # the other senders of this receiver's module: they share its connections, and no two write one directory
    sharing = [name for name in hostvars if name != sender and hostvars[name].get('migrate_source')
               and receiver_of(hostvars[name]) == receiver
               and (hostvars[name].get('migrate_module') or out['module']) == out['module']]
    for name in sharing:
        theirs = hostvars[name].get('migrate_subdir') or name
        theirs = theirs.strip('/') if theirs != '/' else ''
        if theirs == out['subdir']:
            problems.append('migrate_subdir: %s and %s would both write %s on %s; expected a directory of its own for '
                            'each sender (the default: its inventory name).' % (sender, name, out['dest'], receiver))
        elif '' in (theirs, out['subdir']):
            root, other = (sender, name) if out['subdir'] == '' else (name, sender)
            problems.append('migrate_subdir: %s writes the module\'s own directory %s on %s, which holds the one of %s; '
                            'expected a directory of its own for each sender of the module (the default: its '
                            'inventory name), / only for a module with one sender.'
                            % (root, out['path'], receiver, other))
    problems.extend(_target.pass_problems(out, delete, max_delete, list(exclude) if isinstance(exclude, (list, tuple))
                                          else exclude, list(preserve) if isinstance(preserve, (list, tuple))
                                          else preserve))
    out['max_streams'] = max(1, out['max_connections'] // (len(sharing) + 1))
    if str(streams).strip().lower() != 'auto':
        try:
            _target.streams(streams, 1, out['max_streams'])
        except _target.TargetError as exc:
            problems.append('%s%s' % (exc, ' %d senders of the inventory share its %d connections: %s.' % (
                len(sharing) + 1, out['max_connections'], ', '.join(sorted([sender] + sharing))) if sharing else ''))
    out.update(problems=problems, url=_target.url(out, receiver_address), address=receiver_address,
               sender_address=sender_address, unit=_target.unit_name(receiver, out['module']),
               senders_of_module=sorted([sender] + sharing))
    return out


class FilterModule(object):
    def filters(self):
        return {'migrate_target': migrate_target}
