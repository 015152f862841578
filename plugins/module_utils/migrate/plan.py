# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a migration: the tree, the number of streams, and the partition of the files into streams by bytes.

rsync moves each file on one connection, so the streams get about equal bytes, the largest files first (greedy
longest-processing-time: each file, largest first, goes to the stream with the fewest bytes so far).  A file larger
than one stream's share bounds the run; plan() says so.  Pure functions but walk(), which reads the tree.
"""

import heapq
import math
import os
import stat

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import human_bytes, human_rate
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import excludes as _excludes

# The number of streams when migrate_streams is auto (docs/migration.md, "How many streams"): one stream fills a
# tuned path up to what one TLS relay carries on one core (STREAM_BPS); more streams only for a faster path, or for a
# tree of small files, whose per-file work on the receiver (create, chmod, rename) is serial within one rsync.
STREAM_BPS = 2 * 10 ** 9
SMALL_FILE = 256 * 1024
SMALL_FILES_STREAMS = 4
AUTO_MAX = 8


class PlanError(ValueError):
    """A tree that cannot be migrated; the message says why."""


def walk(source, excludes=(), found=None):
    """(files, dirs, others) of the tree under ``source``, without what ``excludes`` (excludes.compile_patterns())
    leaves out (an excluded directory is not entered): files [(relative path, bytes, link)], where ``link`` is the
    (device, inode) of a file with more than one name (None otherwise), directories [relative path] (the empty ones
    too) and others [relative path] (symbolic links, devices, fifos, sockets: rsync -a copies them as they are, with
    no data).  Paths are relative to ``source``, as rsync's --files-from reads them, and may hold any byte
    (surrogate escapes for what is not UTF-8).  ``found`` (a dict), when given, gets the count of each attribute the
    tree has that a receiver may not keep: acls, xattrs, sparse (files with holes), devices."""
    if not os.path.isdir(source):
        raise PlanError('%s is not a directory' % source)
    files, dirs, others = [], [], []
    stack = ['']
    while stack:
        relative = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(source, relative) if relative else source))
        except OSError as exc:
            raise PlanError('cannot read %s: %s' % (os.path.join(source, relative), exc.strerror))
        for entry in entries:
            path = os.path.join(relative, entry.name) if relative else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if excludes and _excludes.matches(excludes, path, is_dir):
                continue
            if found is not None:
                attributes(entry, found)
            if is_dir:
                dirs.append(path)
                stack.append(path)
            elif entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                files.append((path, info.st_size, (info.st_dev, info.st_ino) if info.st_nlink > 1 else None))
            else:
                others.append(path)
    return files, sorted(dirs), sorted(others)


ACL_NAMES = ('system.posix_acl_access', 'system.posix_acl_default')
HOLE = 64 * 1024            # a file that takes this much less room than its size has holes


def attributes(entry, found):
    """Count into ``found`` what ``entry`` (an os.DirEntry) has of acls, xattrs, sparse, devices."""
    info = entry.stat(follow_symlinks=False)
    if stat.S_ISBLK(info.st_mode) or stat.S_ISCHR(info.st_mode):
        found['devices'] = found.get('devices', 0) + 1
    elif stat.S_ISREG(info.st_mode) and info.st_blocks * 512 + HOLE <= info.st_size:
        found['sparse'] = found.get('sparse', 0) + 1
    if stat.S_ISLNK(info.st_mode):
        return
    try:
        names = os.listxattr(entry.path, follow_symlinks=False)
    except OSError:
        return
    if any(name in ACL_NAMES for name in names):
        found['acls'] = found.get('acls', 0) + 1
    if any(name not in ACL_NAMES + ('security.selinux',) for name in names):      # SELinux labels are the host's
        found['xattrs'] = found.get('xattrs', 0) + 1


def groups(files):
    """The files as rsync must send them: [(paths, bytes)], all the names of one inode in one group (rsync -H links
    them only within one transfer), its bytes counted once; the order of ``files`` kept."""
    out, linked = [], {}
    for path, size, link in files:
        if link is None:
            out.append(([path], size))
        elif link in linked:
            linked[link][0].append(path)
        else:
            linked[link] = ([path], size)
            out.append(linked[link])
    return out


def auto_streams(items, rate_bps):
    """The number of streams for ``items`` (groups()) on a path of ``rate_bps``, and why (the rule of STREAM_BPS and
    SMALL_FILE above)."""
    count = len(items)
    total = sum(size for dummy, size in items)
    wanted = max(1, int(math.ceil(float(rate_bps or 0) / STREAM_BPS)))
    reason = 'one stream per %s of the path rate' % human_rate(STREAM_BPS)
    mean = float(total) / count if count else 0
    if count > 1000 and mean < SMALL_FILE:
        wanted = max(wanted, SMALL_FILES_STREAMS)
        reason = '%d files of %s on average: per-file work on the receiver is serial within one rsync' % (
            count, human_bytes(int(mean)))
    return max(1, min(wanted, AUTO_MAX, count or 1)), reason


def partition(items, streams):
    """The items (groups()) in ``streams`` lists of about equal bytes, largest first: [[(paths, bytes)]]."""
    lists = [[] for dummy in range(streams)]
    heap = [(0, index) for index in range(streams)]
    for paths, size in sorted(items, key=lambda item: (-item[1], item[0][0])):
        load, index = heapq.heappop(heap)
        lists[index].append((paths, size))
        heapq.heappush(heap, (load + size, index))
    return lists


def plan(files, dirs, others, streams, rate_bps=None):
    """The plan of walk()'s tree: {streams, lists (paths per stream, the names of one inode together, others on the
    lightest), bytes (each inode once), files (names), linked (names beyond an inode's first), dirs, others,
    per_stream (bytes, files), largest (path, bytes), bound (a file larger than a stream's share, or None), seconds
    (at ``rate_bps``, when known)}."""
    items = groups(files)
    lists = partition(items, streams)
    lightest = min(range(streams), key=lambda index: sum(size for dummy, size in lists[index]))
    paths = [[path for names, dummy in entries for path in names] for entries in lists]
    paths[lightest].extend(others)
    total = sum(size for dummy, size in items)
    per_stream = [{'bytes': sum(size for dummy, size in entries), 'files': sum(len(names) for names, dummy in entries)}
                  for entries in lists]
    largest = max(items, key=lambda item: item[1]) if items else ([''], 0)
    share = float(total) / streams if streams else 0
    out = {'streams': streams, 'lists': paths, 'bytes': total, 'files': len(files), 'linked': len(files) - len(items),
           'dirs': len(dirs), 'others': len(others), 'per_stream': per_stream,
           'largest': {'path': largest[0][0], 'bytes': largest[1]}, 'bound': None, 'seconds': None}
    if streams > 1 and largest[1] > share:
        out['bound'] = ('the largest file, %s (%s), is more than a stream\'s share (%s): it goes on one stream, whose '
                        'run it decides' % (largest[0][0], human_bytes(largest[1]), human_bytes(int(share))))
    if rate_bps:
        out['seconds'] = total * 8.0 / rate_bps
    return out
