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

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import collection_path  # noqa: E402  pylint: disable=wrong-import-position

REPO_ROOT = collection_path.REPO_ROOT
BASE = collection_path.ensure_importable()
