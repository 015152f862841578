# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No function or class in plugins/ is longer than MAX_LINES (issue 10): a longer one is split by concern.

The same list from a shell: python tests/unit/plugins/test_code_size.py
"""

from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
MAX_LINES = 200


def too_long(root=ROOT, limit=MAX_LINES):
    """Every function or class under root/plugins longer than ``limit`` lines: [(path:line, name, lines)]."""
    found = []
    for directory, _dirs, names in os.walk(os.path.join(root, 'plugins')):
        for name in sorted(names):
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding='utf-8') as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > limit:
                        found.append(('%s:%d' % (os.path.relpath(path, root), node.lineno), node.name, lines))
    return sorted(found)


def test_no_function_or_class_over_the_limit():
    assert too_long() == [], 'split these by concern (at most %d lines each)' % MAX_LINES


def test_the_check_finds_a_long_function(tmp_path):
    (tmp_path / 'plugins').mkdir()
    (tmp_path / 'plugins' / 'long.py').write_text('def f():\n' + '    x = 1\n' * 5 + '\n\nclass C(object):\n    pass\n')
    assert too_long(str(tmp_path), limit=5) == [('plugins/long.py:1', 'f', 6)]


if __name__ == '__main__':
    for where, name, count in too_long():
        print('%s %s: %d lines' % (where, name, count))
    sys.exit(1 if too_long() else 0)
