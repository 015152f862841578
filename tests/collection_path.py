# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make this checkout importable as ``ansible_collections.bdp.wan_tune``: one helper for the unit tests and the lab.

When the repository is not already inside an ``ansible_collections/bdp/wan_tune`` tree, the symlink
``.cache/collections/ansible_collections/bdp/wan_tune -> <repo root>`` is created (or repaired when it
points elsewhere) and its base directory is put on ``sys.path``.
"""

from __future__ import annotations

import importlib
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def collections_base(root=REPO_ROOT):
    """The directory that holds ``ansible_collections`` for this checkout."""
    parts = os.path.realpath(root).split(os.sep)
    if parts[-3:-2] == ['ansible_collections'] and parts[-2:] == ['bdp', 'wan_tune']:
        return os.sep.join(parts[:-3])      # already checked out as ansible_collections/bdp/wan_tune
    base = os.path.join(root, '.cache', 'collections')
    namespace = os.path.join(base, 'ansible_collections', 'bdp')
    link = os.path.join(namespace, 'wan_tune')
    if not (os.path.exists(link) and os.path.samefile(link, root)):
        os.makedirs(namespace, exist_ok=True)
        if os.path.islink(link):
            os.unlink(link)                 # stale: points at another checkout or nowhere
        try:
            # relative, so the link survives moving the checkout
            os.symlink(os.path.relpath(root, namespace), link)
        except FileExistsError:
            pass                            # a parallel run created it first
    return base


def ensure_importable():
    """Put the collections base of this checkout on sys.path; return it."""
    base = collections_base(REPO_ROOT)
    if base not in sys.path:
        sys.path.insert(0, base)
    importlib.invalidate_caches()
    return base
