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

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import human_bytes, human_rate

# The number of streams when migrate_streams is auto (docs/migration.md, "How many streams"): one stream fills a
# tuned path up to what one TLS relay carries on one core (STREAM_BPS); more streams only for a faster path, or for a
# tree of small files, whose per-file work on the receiver (create, chmod, rename) is serial within one rsync.
STREAM_BPS = 2 * 10 ** 9
SMALL_FILE = 256 * 1024
SMALL_FILES_STREAMS = 4
AUTO_MAX = 8


class PlanError(ValueError):
    """A tree that cannot be migrated; the message says why."""


def walk(source):
    """(files, dirs, others) of the tree under ``source``: files [(relative path, bytes)], directories [relative
    path] (the empty ones too) and others [relative path] (symbolic links, devices, fifos: rsync -a copies them as
    they are, with no data).  Paths are relative to ``source``, as rsync's --files-from reads them."""
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
            if entry.is_dir(follow_symlinks=False):
                dirs.append(path)
                stack.append(path)
            elif entry.is_file(follow_symlinks=False):
                files.append((path, entry.stat(follow_symlinks=False).st_size))
            else:
                others.append(path)
    return files, sorted(dirs), sorted(others)


def auto_streams(files, rate_bps):
    """The number of streams for ``files`` on a path of ``rate_bps``, and why (the rule of STREAM_BPS and
    SMALL_FILE above)."""
    count = len(files)
    total = sum(size for dummy, size in files)
    wanted = max(1, int(math.ceil(float(rate_bps or 0) / STREAM_BPS)))
    reason = 'one stream per %s of the path rate' % human_rate(STREAM_BPS)
    mean = float(total) / count if count else 0
    if count > 1000 and mean < SMALL_FILE:
        wanted = max(wanted, SMALL_FILES_STREAMS)
        reason = '%d files of %s on average: per-file work on the receiver is serial within one rsync' % (
            count, human_bytes(int(mean)))
    return max(1, min(wanted, AUTO_MAX, count or 1)), reason


def partition(files, streams):
    """The files in ``streams`` lists of about equal bytes, largest first: [[(path, bytes)]]."""
    lists = [[] for dummy in range(streams)]
    heap = [(0, index) for index in range(streams)]
    for path, size in sorted(files, key=lambda item: (-item[1], item[0])):
        load, index = heapq.heappop(heap)
        lists[index].append((path, size))
        heapq.heappush(heap, (load + size, index))
    return lists


def plan(files, dirs, others, streams, rate_bps=None):
    """The plan: {streams, lists (paths per stream, others on the lightest), bytes, files, dirs, per_stream (bytes,
    files), largest (path, bytes), bound (a file larger than a stream's share, or None), seconds (at ``rate_bps``,
    when known)}."""
    lists = partition(files, streams)
    lightest = min(range(streams), key=lambda index: sum(size for dummy, size in lists[index]))
    paths = [[path for path, dummy in items] for items in lists]
    paths[lightest].extend(others)
    total = sum(size for dummy, size in files)
    per_stream = [{'bytes': sum(size for dummy, size in items), 'files': len(items)} for items in lists]
    largest = max(files, key=lambda item: item[1]) if files else ('', 0)
    share = float(total) / streams if streams else 0
    out = {'streams': streams, 'lists': paths, 'bytes': total, 'files': len(files), 'dirs': len(dirs),
           'others': len(others), 'per_stream': per_stream, 'largest': {'path': largest[0], 'bytes': largest[1]},
           'bound': None, 'seconds': None}
    if streams > 1 and largest[1] > share:
        out['bound'] = ('the largest file, %s (%s), is more than a stream\'s share (%s): it goes on one stream, whose '
                        'run it decides' % (largest[0], human_bytes(largest[1]), human_bytes(int(share))))
    if rate_bps:
        out['seconds'] = total * 8.0 / rate_bps
    return out
