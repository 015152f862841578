# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figures the README repeats from docs/ say the same everywhere (issue 15).

- Remote module executions of a no-op run per host: README.md, docs/fleet.md, docs/sysctl.md, docs/testing.md, and
  the count that tests/integration/test_controller_host.py asserts on a real run.
- The measured duration of the VM tier and of a whole `make test`: README.md and docs/testing.md.

A new measurement changes docs/testing.md and the README together, or this test fails.
"""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = {'one': 1, 'two': 2, 'three': 3, 'four': 4}


def text(*path):
    with open(os.path.join(ROOT, *path)) as handle:
        return re.sub(r'\s+', ' ', handle.read().replace('**', ''))


def number(word):
    return WORDS[word.lower()] if word.lower() in WORDS else int(word)


def test_module_executions_per_host_are_one_figure():
    found = {}
    patterns = {
        'README.md': r'a no-op run makes (\w+) remote module executions? per host',
        'docs/fleet.md': r'a no-op re-run and `--check` each make exactly (\w+) per host',
        'docs/sysctl.md': r'costs (\w+) module executions? per host',
        'docs/testing.md': r'A no-op run makes exactly (\w+) remote module executions?',
    }
    for name, pattern in patterns.items():
        matches = re.findall(pattern, text(*name.split('/')))
        assert matches, 'the figure is gone from %s (pattern %r): update this test with the text' % (name, pattern)
        found[name] = set(number(match) for match in matches)
    # what the host test proves on a real run: the list of module names a no-op run executes
    host_test = text('tests', 'integration', 'test_controller_host.py')
    proven = re.search(r"output, changed = run\(\*no_pipelining\) assert changed == 0, output "
                       r"assert module_executions\(output\) == \[([^\]]*)\]", host_test)
    assert proven, 'the no-op count of test_controller_host.py is gone: update this test'
    found['tests/integration/test_controller_host.py'] = {len(proven.group(1).split(','))}
    assert len(set.union(*found.values())) == 1, found


def test_the_measured_durations_are_one_figure():
    readme, testing = text('README.md'), text('docs', 'testing.md')
    vm = {
        'README.md': re.findall(r'the VM tier took (\d+) s', readme),
        'docs/testing.md': re.findall(r'(\d+) s for both VMs', testing) + re.findall(r'The VM tier took \d+ minutes '
                                                                                     r'\((\d+) s\)', testing),
    }
    assert all(vm.values()), vm
    assert len(set(sum(vm.values(), []))) == 1, vm
    total = {'README.md': re.findall(r'(\d+) s of checks', readme),
             'docs/testing.md': re.findall(r'(\d+) s of checks', testing)}
    assert all(total.values()) and len(set(sum(total.values(), []))) == 1, total
    # no other figure for the VM tier anywhere in the docs
    for name in sorted(os.listdir(os.path.join(ROOT, 'docs'))):
        if name.endswith('.md'):
            for seconds in re.findall(r'VM tier[^.]*?\((\d+) s\)', text('docs', name)):
                assert seconds in vm['docs/testing.md'], (name, seconds)
