# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight of a migration: one walk of the tree that keeps counts only (files, bytes with each inode once,
directories, others, hard links, the largest file, the attributes a receiver may not keep), the number of streams,
and the size of the parts the runner cuts the tree into while it copies (runner.part_limits()).  The runner walks
the tree again itself: nothing of this walk is kept but its figures.
"""

import math
import os
import stat

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import human_bytes, human_rate
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import tree as _tree

# The number of streams when migrate_streams is auto (docs/migration.md, "How many streams"): one stream fills a
# tuned path up to what one TLS relay carries on one core (STREAM_BPS); more streams only for a faster path, or for a
# tree of small files, whose per-file work on the receiver (create, chmod, rename) is serial within one rsync.
STREAM_BPS = 2 * 10 ** 9
SMALL_FILE = 256 * 1024
SMALL_FILES_STREAMS = 4
AUTO_MAX = 8
ACL_NAMES = ('system.posix_acl_access', 'system.posix_acl_default')
HOLE = 64 * 1024            # a file that takes this much less room than its size has holes

PlanError = _tree.TreeError


def survey(source, excludes=()):
    """The counts of the tree under ``source`` without what ``excludes`` (rsync exclude patterns) leave out: {files
    (names of regular files), bytes (each inode once), inodes, linked (names beyond an inode's first), dirs, others
    (symbolic links, devices, fifos, sockets), largest {path, bytes}, attributes {acls, xattrs, sparse, devices}: how
    many entries have them}.  Memory: the inodes of hard-linked files whose names are not all met yet."""
    out = {'files': 0, 'bytes': 0, 'inodes': 0, 'linked': 0, 'dirs': 0, 'others': 0, 'largest': {'path': '', 'bytes': 0},
           'attributes': {'acls': 0, 'xattrs': 0, 'sparse': 0, 'devices': 0}}
    waiting = {}                # (device, inode) of a file with more names: the names still to meet
    for path, entry, info in _tree.walk(source, excludes):
        attributes(entry, info, out['attributes'])
        if info is None:
            out['dirs'] += 1
        elif not stat.S_ISREG(info.st_mode):
            out['others'] += 1
        else:
            out['files'] += 1
            key = (info.st_dev, info.st_ino)
            if info.st_nlink > 1 and key in waiting:
                out['linked'] += 1
                waiting[key] -= 1
                if not waiting[key]:
                    del waiting[key]
                continue
            if info.st_nlink > 1:
                waiting[key] = info.st_nlink - 1
            out['inodes'] += 1
            out['bytes'] += info.st_size
            if info.st_size > out['largest']['bytes']:
                out['largest'] = {'path': path, 'bytes': info.st_size}
    return out


def attributes(entry, info, found):
    """Count into ``found`` what ``entry`` (an os.DirEntry, ``info`` its lstat, None for a directory) has of acls,
    xattrs, sparse, devices."""
    if info is not None and (stat.S_ISBLK(info.st_mode) or stat.S_ISCHR(info.st_mode)):
        found['devices'] += 1
    elif info is not None and stat.S_ISREG(info.st_mode) and info.st_blocks * 512 + HOLE <= info.st_size:
        found['sparse'] += 1
    if info is not None and stat.S_ISLNK(info.st_mode):
        return
    try:
        names = os.listxattr(entry.path, follow_symlinks=False)
    except OSError:
        return
    if any(name in ACL_NAMES for name in names):
        found['acls'] += 1
    if any(name not in ACL_NAMES + ('security.selinux',) for name in names):      # SELinux labels are the host's
        found['xattrs'] += 1


def auto_streams(count, total, rate_bps):
    """The number of streams for ``count`` files (inodes) of ``total`` bytes on a path of ``rate_bps``, and why (the
    rule of STREAM_BPS and SMALL_FILE above)."""
    wanted = max(1, int(math.ceil(float(rate_bps or 0) / STREAM_BPS)))
    reason = 'one stream per %s of the path rate' % human_rate(STREAM_BPS)
    mean = float(total) / count if count else 0
    if count > 1000 and mean < SMALL_FILE:
        wanted = max(wanted, SMALL_FILES_STREAMS)
        reason = '%d files of %s on average: per-file work on the receiver is serial within one rsync' % (
            count, human_bytes(int(mean)))
    return max(1, min(wanted, AUTO_MAX, count or 1)), reason


def plan(counts, streams, rate_bps=None, bwlimit_bps=0):
    """The plan of survey()'s ``counts`` on ``streams`` streams: the counts with streams, parts (the runner's part
    limits for this tree: files, bytes), bound (a file larger than a stream's share, which decides its stream's run,
    or None), and the time at the lower of the path's rate ``rate_bps`` and the migration's limit ``bwlimit_bps``
    (estimate())."""
    files, part_bytes = _runner.part_limits(counts['files'] + counts['others'], counts['bytes'], streams)
    out = dict(counts, streams=streams, parts={'files': files, 'bytes': part_bytes}, bound=None)
    share = float(counts['bytes']) / streams if streams else 0
    largest = counts['largest']
    if streams > 1 and largest['bytes'] > share:
        out['bound'] = ('the largest file, %s (%s), is more than a stream\'s share (%s): it goes on one stream, whose '
                        'run it decides' % (largest['path'], human_bytes(largest['bytes']), human_bytes(int(share))))
    out.update(estimate(counts['bytes'], largest['bytes'], streams, rate_bps, bwlimit_bps))
    return out


def estimate(total, largest, streams, rate_bps, bwlimit_bps):
    """{seconds, rate_bps, rate_by, estimate}: the time ``total`` bytes take at the lower of the path's rate
    ``rate_bps`` (migrate_rate) and the limit ``bwlimit_bps`` (migrate_bwlimit) as the runner applies it: each of
    ``streams`` rsyncs held to its share (stream_limit_kib()), so that the ``largest`` file, on one stream, may take
    longer than the whole tree at the limit.  rate_bps is the rate of the estimate, rate_by the variable that bounds
    it, estimate the plan's words.  The path's rate unknown and a limit: the least time (a slower path takes
    longer).  Neither: seconds None."""
    limit = streams * _runner.stream_limit_kib(bwlimit_bps, streams) * 8192 if bwlimit_bps and streams else 0
    if not rate_bps and not limit:
        return {'seconds': None, 'rate_bps': None, 'rate_by': None, 'estimate': ''}
    by_limit = bool(limit) and (not rate_bps or limit < rate_bps)
    rate = limit if by_limit else rate_bps
    seconds = total * 8.0 / rate
    if by_limit:
        other = ', below migrate_rate\'s %s' % human_rate(rate_bps) if rate_bps else ''
        words = 'at %s (migrate_bwlimit%s)' % (human_rate(bwlimit_bps), other)
    else:
        other = ', below migrate_bwlimit\'s %s' % human_rate(bwlimit_bps) if limit else ''
        words = 'at %s (migrate_rate%s)' % (human_rate(rate_bps), other)
    slowest = largest * 8.0 * streams / limit if limit else 0
    if slowest > seconds:
        by_limit, seconds = True, slowest
        words = ('for the largest file, %s, on one stream at its share of migrate_bwlimit (%s of %s)'
                 % (human_bytes(largest), human_rate(bwlimit_bps // streams), human_rate(bwlimit_bps)))
    text = '%s %d s %s' % ('about' if rate_bps else 'at least', round(seconds), words)
    if not rate_bps:
        text += ', the path\'s rate (migrate_rate) not known'
    return {'seconds': seconds, 'rate_bps': rate, 'rate_by': 'migrate_bwlimit' if by_limit else 'migrate_rate',
            'estimate': text}
