# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading, writing and persisting kernel parameters: the one sysctl engine of the collection.

Live values are read from and written to /proc/sys directly (one open per key,
no ``sysctl`` process per key).  Persistent values live in one sysctl.d
drop-in file per caller.  Boot order follows systemd-sysctl(8): files from
/etc, /run, /usr/local/lib and /usr/lib are merged by file name (the first
directory wins), sorted by name, and a later file overrides an earlier one;
procps ``sysctl --system`` reads /etc/sysctl.conf last.
"""

import errno
import os
import stat

PROC_SYS = '/proc/sys'
SYSCTL_DIRS = ('/etc/sysctl.d', '/run/sysctl.d', '/usr/local/lib/sysctl.d', '/usr/lib/sysctl.d', '/lib/sysctl.d')
SYSCTL_CONF = '/etc/sysctl.conf'
# A key only the initial network namespace may write; read-only elsewhere.
INIT_NETNS_PROBE = 'net.core.rmem_max'


def normalize_key(key):
    """``net/ipv4/tcp_rmem`` and ``net.ipv4.tcp_rmem`` name the same key (systemd's rule:
    when the first separator is '/', dots are part of names such as ``eth0.100``)."""
    key = key.strip().lstrip('-').strip()
    slash, dot = key.find('/'), key.find('.')
    if slash != -1 and (dot == -1 or slash < dot):
        key = key.translate(str.maketrans('./', '/.'))
    return key


def key_path(key, root=None):
    """Path of a (normalized) key below /proc/sys: dots separate, slashes stand for literal dots."""
    return os.path.join(root or PROC_SYS, *[part.replace('/', '.') for part in key.split('.')])


def normalize_value(value):
    """Whitespace-normalised text: '4096\t131072  6291456' == '4096 131072 6291456'."""
    if isinstance(value, (list, tuple)):
        value = ' '.join(str(item) for item in value)
    return ' '.join(str(value).split())


def read_live(key, root=None):
    """Live value (normalized text) or None when the kernel has no such key."""
    try:
        with open(key_path(key, root), 'r') as handle:
            return normalize_value(handle.read())
    except (IOError, OSError) as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def write_live(key, value, root=None):
    """Write one value; raises OSError with the kernel's errno on refusal."""
    with open(key_path(key, root), 'w') as handle:
        handle.write(normalize_value(value) + '\n')


def writable(key, root=None):
    """False when this network namespace (or a read-only /proc/sys) cannot set ``key``.

    Keys the kernel registers for the initial namespace only (net.core.rmem_max and
    friends) appear read-only (mode 0444) inside containers and other namespaces.
    """
    path = key_path(key, root)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return False
    return os.access(path, os.W_OK)


def initial_netns(root=None):
    """True in the host's initial network namespace (where net.core.* keys are writable)."""
    return writable(INIT_NETNS_PROBE, root)


def parse_conf(text):
    """Parse sysctl.conf text into a list of (key, value) in file order."""
    entries = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in '#;' or '=' not in line:
            continue
        key, value = line.split('=', 1)
        entries.append((normalize_key(key), normalize_value(value)))
    return entries


def boot_order(dirs=None, conf=None):
    """Files in the order they are applied at boot (later wins), resolved and de-duplicated."""
    dirs = SYSCTL_DIRS if dirs is None else dirs
    conf = SYSCTL_CONF if conf is None else conf
    chosen = {}
    for directory in dirs:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if name.endswith('.conf') and name not in chosen:
                chosen[name] = os.path.join(directory, name)
    order = [chosen[name] for name in sorted(chosen)]
    if conf and os.path.isfile(conf):
        order.append(conf)
    seen, result = set(), []
    for path in order:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        result.append(path)
    return result


def overrides(own_path, wanted, dirs=None, conf=None):
    """Entries in files applied after ``own_path`` that set one of ``wanted`` (dict key -> value)
    to another value, so the boot-time result would differ from ours. ``file`` is the file to edit;
    ``via`` is the link in the boot order where it is read through a symlink."""
    conf = SYSCTL_CONF if conf is None else conf
    order = boot_order(dirs, conf)
    own_real = os.path.realpath(own_path)
    reals = [os.path.realpath(path) for path in order]
    if own_real in reals:
        later = order[reals.index(own_real) + 1:]
    else:
        own_name = os.path.basename(own_path)
        later = [path for path in order if os.path.basename(path) > own_name or path == conf]
    # procps `sysctl --system` applies /etc/sysctl.conf after every sysctl.d file, even when a
    # 99-sysctl.conf symlink has already placed it earlier in the systemd-sysctl order.
    conf_real = os.path.realpath(conf) if conf else None
    if conf_real and os.path.isfile(conf) and conf_real != own_real \
            and conf_real not in [os.path.realpath(path) for path in later]:
        later.append(conf)
    found = []
    for path in later:
        try:
            with open(path, 'r') as handle:
                entries = parse_conf(handle.read())
        except (IOError, OSError):
            continue
        for key, value in entries:
            if key in wanted and value != normalize_value(wanted[key]):
                item = {'file': path, 'key': key, 'value': value, 'ours': normalize_value(wanted[key])}
                if os.path.islink(path):     # name the file to edit: 99-sysctl.conf -> ../sysctl.conf on Debian 12
                    item.update(file=os.path.realpath(path), via=path)
                found.append(item)
    return found


def render(header, entries):
    """sysctl.d text: a header, then per key its comment lines and ``key = value``."""
    lines = [line.rstrip() for line in header.strip('\n').splitlines()] if header else []
    for key, value, comment in entries:
        lines.append('')
        lines.extend(('# ' + line).rstrip() for line in (comment or '').strip('\n').splitlines())
        lines.append('%s = %s' % (key, normalize_value(value)))
    return '\n'.join(lines).lstrip('\n') + '\n'
