# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/docs_playbooks.py: the playbooks' variable tables in docs/, from playbooks/meta/argument_specs.yml."""

from __future__ import annotations

import importlib.util
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SPEC = importlib.util.spec_from_file_location('docs_playbooks', os.path.join(ROOT, 'scripts', 'docs_playbooks.py'))
docs_playbooks = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(docs_playbooks)

SPECS = {'demo': {'options': {
    'demo_flag': {'type': 'bool', 'default': False, 'description': 'Turns on O(demo_list); see L(the guide,guide.md).'},
    'demo_list': {'type': 'list', 'default': ['a', 'b'], 'description': ['A list,', 'V(a) | V(b).']},
    'demo_peer': {'type': 'str', 'default': '', 'description': 'C(peer) or none.'},
}}}


def test_a_table_from_the_specification():
    page = 'before\n<!-- playbook-variables: demo -->\nstale\n<!-- /playbook-variables -->\nafter\n'
    assert docs_playbooks.render(page, SPECS, 'x.md') == (
        'before\n<!-- playbook-variables: demo -->\n'
        '| Variable | Default | Meaning |\n|---|---|---|\n'
        '| `demo_flag` | `false` | Turns on `demo_list`; see [the guide](guide.md). |\n'
        '| `demo_list` | `["a", "b"]` | A list, `a` \\| `b`. |\n'
        '| `demo_peer` | none | `peer` or none. |\n'
        '<!-- /playbook-variables -->\nafter\n')


def test_an_unknown_playbook_is_named():
    with pytest.raises(SystemExit, match='names the playbook ghost'):
        docs_playbooks.render('<!-- playbook-variables: ghost -->\n<!-- /playbook-variables -->', SPECS, 'x.md')


def test_the_docs_show_every_playbook_as_declared():
    # make docs rewrites them; this fails when a page was edited by hand or the specification changed without it
    assert docs_playbooks.main(['docs_playbooks.py', '--check']) == 0
