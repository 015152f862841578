# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a migration's receiver offers before a byte moves (the module migrate_receiver): the free space under the
module's path, the bytes of the tree it holds already, its daemon's CPU time, whether the filesystem keeps extended
attributes and POSIX ACLs, and whether the daemon that serves the module may create device nodes.  Everything here
reads: nothing is written, in check mode or not.
"""

import errno
import os
import stat

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import tree as _tree

# A name that is asked for and never set: the filesystem answers ENODATA when it keeps that kind of attribute and
# EOPNOTSUPP when it does not (getxattr(2)); no file is made, no attribute written.
XATTR_NAME = 'user.bdp_wan_tune'
ACL_NAME = 'system.posix_acl_access'
ABSENT = (errno.ENODATA, getattr(errno, 'ENOATTR', errno.ENODATA))
UNSUPPORTED = (errno.EOPNOTSUPP, errno.ENOTSUP)
# The unit properties that decide whether the daemon may create device nodes, and its CPU time.
PROPERTIES = ('LoadState', 'ActiveState', 'CPUUsageNSec', 'User', 'PrivateDevices', 'CapabilityBoundingSet',
              'DevicePolicy', 'DeviceAllow', 'SystemCallFilter')
MKNOD_CALLS = ('mknod', 'mknodat')
# The last pass's runner states that ended with the whole tree copied (runner.py); any other left a part of it.
WHOLE = ('done',)


def keeps(path, name):
    """'yes' when the filesystem of ``path`` keeps attributes of ``name``'s kind (``name`` is there, or the answer is
    that it is not), 'no' when it does not (EOPNOTSUPP), 'unknown' for another error (the error's text)."""
    try:
        os.getxattr(path, name, follow_symlinks=False)
        return 'yes', ''
    except OSError as exc:
        if exc.errno in ABSENT:
            return 'yes', ''
        if exc.errno in UNSUPPORTED:
            return 'no', ''
        return 'unknown', exc.strerror or str(exc)


def filesystem(path, mountinfo='/proc/self/mountinfo'):
    """(type, mount point, options) of the mount that holds ``path`` ('' each when unknown): the mount of its
    device whose mount point is the longest prefix of the path (bind mounts share a device)."""
    try:
        device = os.stat(path).st_dev
        real = os.path.realpath(path)
        with open(mountinfo, encoding='utf-8', errors='surrogateescape') as handle:
            lines = handle.read().splitlines()
    except OSError:
        return '', '', ''
    wanted = '%d:%d' % (os.major(device), os.minor(device))
    best = ('', '', '')
    for line in lines:
        fields = line.split()
        if len(fields) < 10 or fields[2] != wanted or '-' not in fields[6:]:
            continue
        point = fields[4].replace('\\040', ' ')
        rest = fields[fields.index('-', 6) + 1:]
        inside = real == point or real.startswith(point.rstrip('/') + '/')
        if inside and len(point) >= len(best[1]):
            options = fields[5].split(',') + (rest[2].split(',') if len(rest) > 2 else [])
            best = (rest[0], point, ','.join(sorted(set(options), key=options.index)))
    return best


def free_bytes(path):
    """The bytes an unprivileged writer may still use under ``path`` (df's avail), or None when it cannot be read."""
    try:
        info = os.statvfs(path)
    except OSError:
        return None
    return info.f_bavail * info.f_frsize


def walked_bytes(dest):
    """The bytes of the regular files under ``dest``, each inode once (as the plan counts the tree), 0 when there
    is no ``dest``: the one walk of the destination, for a pass without the sender's figures of the last one."""
    total, seen = 0, set()
    try:
        for dummy, dummy_entry, info in _tree.walk(dest):
            if info is None or not stat.S_ISREG(info.st_mode):
                continue
            if info.st_nlink > 1:
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    continue
                seen.add(key)
            total += info.st_size
    except _tree.TreeError:
        return 0
    return total


def holds_anything(dest):
    """Whether the directory ``dest`` exists and has an entry (one read of it, not a walk)."""
    try:
        with os.scandir(dest) as handle:
            return next(handle, None) is not None
    except OSError:
        return False


def remembered(last):
    """The bytes of the tree the receiver holds after the last pass, from the sender's run state (``last``: the
    runner's state of that pass, as migrate_status reads it; its state, bytes_total, bytes_done, present_bytes), or
    None when there was no pass.  A pass that ended done left the tree as it listed it (bytes_total); any other left
    what was there before it and what it sent (at most the tree)."""
    if not last or last.get('bytes_total') is None:
        return None
    total = int(last.get('bytes_total') or 0)
    if last.get('state') in WHOLE:
        return total
    return min(total, int(last.get('present_bytes') or 0) + int(last.get('bytes_done') or 0))


def parse_show(text):
    """{property: value} of ``systemctl show``'s output; DeviceAllow (one line per entry) as a list."""
    out = {'DeviceAllow': []}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if not sep:
            continue
        if key == 'DeviceAllow':
            out[key].append(value.strip())
        else:
            out[key] = value.strip()
    return out


def device_policy_allows(policy, allowed):
    """Whether DevicePolicy ``policy`` with the DeviceAllow entries ``allowed`` lets the unit create (mknod) every
    character and block device node: no list at all under auto, or char-* and block-* with m."""
    if policy in ('', 'auto') and not allowed:
        return True
    kinds = set()
    for entry in allowed:
        spec, dummy, access = entry.partition(' ')
        if spec in ('char-*', 'block-*') and 'm' in access:
            kinds.add(spec)
    return kinds == {'char-*', 'block-*'}


def device_nodes(unit, props):
    """(True, '') when the unit ``unit`` whose ``systemctl show`` ``props`` are given may create device nodes in a
    module's path, else (False, why): the settings that stop it, as systemd names them."""
    if props.get('LoadState') != 'loaded':
        return False, '%s is not loaded (%s)' % (unit, props.get('LoadState') or 'unknown')
    why = []
    if props.get('User', '') not in ('', 'root', '0'):
        why.append('User=%s' % props['User'])
    if props.get('PrivateDevices', 'no') == 'yes':
        why.append('PrivateDevices=yes')
    bounding = props.get('CapabilityBoundingSet', '').lower().split()
    if 'cap_mknod' not in bounding:
        why.append('no CAP_MKNOD in CapabilityBoundingSet')
    if not device_policy_allows(props.get('DevicePolicy', 'auto'), props.get('DeviceAllow') or []):
        why.append('DevicePolicy=%s with DeviceAllow=%s' % (props.get('DevicePolicy', 'auto'),
                                                            ', '.join(props.get('DeviceAllow') or []) or 'none'))
    calls = props.get('SystemCallFilter', '')
    if calls:
        names = calls.lstrip('~').split()
        denied = calls.startswith('~') and any(name in names for name in MKNOD_CALLS)
        if denied or (not calls.startswith('~') and 'mknodat' not in names):
            why.append('SystemCallFilter without mknodat')
    if why:
        return False, '%s has %s' % (unit, ', '.join(why))
    return True, ''


def daemon(units, show):
    """{unit, cpu_ns, device_nodes, device_nodes_why} of the daemon that serves the module: the first of ``units``
    that is active, else the first that is loaded (its settings are those it would start with).  ``show(unit)``
    returns (``systemctl show``'s text for the unit, None) or (None, why systemctl could not tell)."""
    found = []
    for unit in units:
        text, error = show(unit)
        if text is None:
            return {'unit': None, 'cpu_ns': None, 'device_nodes': False,
                    'device_nodes_why': 'systemctl could not show %s (%s), so the daemon\'s settings are not known'
                                        % (unit, error)}
        found.append((unit, parse_show(text)))
    chosen = next((item for item in found if item[1].get('ActiveState') == 'active'), None) \
        or next((item for item in found if item[1].get('LoadState') == 'loaded'), None)
    if chosen is None:
        return {'unit': None, 'cpu_ns': None, 'device_nodes': False,
                'device_nodes_why': 'none of %s is loaded' % ', '.join(units)}
    unit, props = chosen
    cpu = props.get('CPUUsageNSec', '')
    able, why = device_nodes(unit, props)
    return {'unit': unit, 'cpu_ns': int(cpu) if cpu.isdigit() and props.get('ActiveState') == 'active' else None,
            'device_nodes': able, 'device_nodes_why': why}


def read(path, dest, last, units, show):
    """What the receiver offers a pass into ``dest`` under the module's ``path`` (the receiver's half of the
    preflight; module migrate_receiver's result): avail_bytes (None when ``path`` cannot be read), present_bytes and
    present_from ('last pass', from ``last``, the sender's state of it, while ``dest`` holds anything; else 'walk'
    of ``dest``), filesystem {type, mount, options}, xattrs and acls ('yes', 'no' or 'unknown', and why in
    attributes_why), and the daemon() figures of ``units``."""
    out = {'avail_bytes': free_bytes(path)}
    # a destination emptied or removed since the last pass (by hand) holds nothing of it: its one walk is short
    present = remembered(last) if holds_anything(dest) else None
    out['present_from'] = 'walk' if present is None else 'last pass'
    out['present_bytes'] = walked_bytes(dest) if present is None else present
    where = dest if os.path.isdir(dest) else path
    kind, point, options = filesystem(where)
    out['filesystem'] = {'type': kind, 'mount': point, 'options': options}
    why = []
    for key, name in (('xattrs', XATTR_NAME), ('acls', ACL_NAME)):
        out[key], error = keeps(where, name)
        if error:
            why.append('%s: %s' % (name, error))
    out['attributes_why'] = '; '.join(why)
    out.update(daemon(units, show))
    return out


def devices_refusal(count, keep, owners, facts, receiver, module, transport):
    """The reason a pass of a tree with ``count`` device nodes must not start, or '': migrate_preserve keeps devices
    (``keep``) but the module does not run as root (``owners`` false), or the daemon cannot create them (``facts``,
    read()'s)."""
    if not count or not keep:
        return ''
    options = ('Leave devices out of migrate_preserve (or exclude them with migrate_exclude) to give them up; the '
               'special files (FIFOs, sockets) are kept either way.')
    if not owners:
        return ('the tree has %d device node%s, and the module %s of %s does not run as root (its uid in '
                'rsync_daemon_modules), so rsync would skip them: give the module uid: root and gid: root. %s'
                % (count, '' if count == 1 else 's', module, receiver, options))
    if facts.get('device_nodes'):
        return ''
    how = ('set rsync_daemon_devices: true for %s and run the rsync_daemon role (-e rsync_daemon=true), which lets '
           'its TLS daemon create device nodes in the modules (CAP_MKNOD, creation only)' % receiver) \
        if transport == 'tls' else ('migrate through the TLS daemon (migrate_transport: tls) with '
                                    'rsync_daemon_devices: true for %s' % receiver)
    return ('the tree has %d device node%s, and the daemon that serves %s on %s cannot create them (%s): every pass '
            'would end with rsync\'s mknod "Operation not permitted" (exit 23). To keep them, %s. %s'
            % (count, '' if count == 1 else 's', module, receiver, facts.get('device_nodes_why') or 'unknown', how,
               options))
