# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No import cycle among the subpackages of plugins/module_utils (issue 32): what two of them share lives in a third
(``common``), so that each can be read, tested and shipped without the other.

The imports are read with ``ast`` from every file under plugins/module_utils, nothing is imported.  An edge A -> B
is a file of subpackage A importing a module of subpackage B (``from ...module_utils.B import x``, ``from
...module_utils.B.m import y`` or ``import ...module_utils.B.m``).  ``python test_import_graph.py [ROOT]`` prints
the edges and the cycles of the collection at ROOT (default: this checkout).
"""

from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
PREFIX = 'ansible_collections.bdp.wan_tune.plugins.module_utils.'


def subpackage_edges(root=ROOT):
    """{(importing subpackage, imported subpackage): [the files that make the edge]}; a file directly in
    module_utils is a subpackage of its own, named by its file."""
    base = os.path.join(root, 'plugins', 'module_utils')
    edges = {}
    for folder, _dirs, names in os.walk(base):
        for name in sorted(names):
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, base).split(os.sep)
            source = parts[0] if len(parts) > 1 else parts[0][:-3]
            with open(path, encoding='utf-8') as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    targets = [node.module + '.' + alias.name for alias in node.names]
                elif isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                else:
                    continue
                for target in targets:
                    if target.startswith(PREFIX):
                        imported = target[len(PREFIX):].split('.')[0]
                        if imported != source:
                            edges.setdefault((source, imported), []).append(os.path.relpath(path, root))
    return edges


def cycles(edges):
    """Every cycle of the graph, once each, as the list of its subpackages from the smallest name."""
    graph = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
    found = set()

    def walk(start, node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                found.add(tuple(path))
            elif nxt > start and nxt not in path:
                walk(start, nxt, path + [nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return sorted(list(cycle) for cycle in found)


def describe(cycle, edges):
    hops = zip(cycle, cycle[1:] + cycle[:1])
    return ' -> '.join(cycle + cycle[:1]) + ' (%s)' % '; '.join(
        '%s -> %s: %s' % (a, b, ', '.join(sorted(set(edges[(a, b)])))) for a, b in hops)


def test_no_import_cycle_among_module_utils_subpackages():
    edges = subpackage_edges()
    assert edges, 'no import between the subpackages found: the scan is broken'
    found = cycles(edges)
    assert not found, 'import cycles among plugins/module_utils subpackages:\n' + '\n'.join(
        describe(cycle, edges) for cycle in found)


def test_the_cycle_finder_finds_cycles():
    edges = {('a', 'b'): ['x'], ('b', 'c'): ['y'], ('c', 'a'): ['z'], ('c', 'd'): ['w'], ('d', 'c'): ['v']}
    assert cycles(edges) == [['a', 'b', 'c'], ['c', 'd']]
    assert cycles({('a', 'b'): ['x']}) == []


if __name__ == '__main__':
    EDGES = subpackage_edges(sys.argv[1] if len(sys.argv) > 1 else ROOT)
    for (SOURCE, TARGET), FILES in sorted(EDGES.items()):
        print('%s -> %s: %s' % (SOURCE, TARGET, ', '.join(sorted(set(FILES)))))
    for CYCLE in cycles(EDGES):
        print('CYCLE ' + describe(CYCLE, EDGES))
    sys.exit(1 if cycles(EDGES) else 0)
