# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the collection importable as ``ansible_collections.bdp.wan_tune``.

Works from a fresh clone: when the repository is not already inside an
``ansible_collections/bdp/wan_tune`` tree, the symlink
``.cache/collections/ansible_collections/bdp/wan_tune -> <repo root>`` is
created (or repaired when it points elsewhere) and its base directory is put
on ``sys.path`` before any test module imports the collection.
"""

from __future__ import annotations

import importlib
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _collections_base(root):
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


BASE = _collections_base(REPO_ROOT)
if BASE not in sys.path:
    sys.path.insert(0, BASE)
importlib.invalidate_caches()
