# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A migration's tree, walked as rsync lists it and never held: the preflight (module_utils/migrate/plan.py) counts
it, the runner (runner.py) cuts it into parts while it walks.  Standard library only: the runner's copy of this file
sits beside it in the run's directory, with excludes.py.
"""

import os

if __package__:
    from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import excludes as _excludes
else:                           # the runner's copy, in the run's directory beside excludes.py
    import excludes as _excludes  # pylint: disable=import-error


class TreeError(ValueError):
    """A tree that cannot be read; the message says why."""


def walk(source, patterns=()):
    """Yield (path, entry, info) for every entry under ``source`` but what ``patterns`` (rsync exclude patterns, as
    migrate_exclude gives them) leave out (an excluded directory is not entered): ``path`` relative to ``source`` (as
    rsync's --files-from reads it; any byte, surrogate escapes for what is not UTF-8), ``entry`` the os.DirEntry,
    ``info`` its lstat, None for a directory.  A directory is yielded before what it holds.  What vanishes while the
    walk runs (a live tree) is left out, as rsync leaves it out.

    Memory: the directories met and not yet read (a stack of names), never the files; one directory is open at a
    time."""
    if not os.path.isdir(source):
        raise TreeError('%s is not a directory' % source)
    compiled = _excludes.compile_patterns(patterns)
    stack = ['']
    while stack:
        relative = stack.pop()
        top = os.path.join(source, relative) if relative else source
        try:
            handle = os.scandir(top)
        except FileNotFoundError:
            if relative:
                continue
            raise TreeError('%s is not a directory' % source)
        except OSError as exc:
            raise TreeError('cannot read %s: %s' % (top, exc.strerror))
        with handle:
            for entry in handle:
                path = os.path.join(relative, entry.name) if relative else entry.name
                is_dir = entry.is_dir(follow_symlinks=False)
                if compiled and _excludes.matches(compiled, path, is_dir):
                    continue
                if is_dir:
                    stack.append(path)
                    yield path, entry, None
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                yield path, entry, info
