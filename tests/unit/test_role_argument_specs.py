# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role's defaults/main.yml and the entry point ``main`` of its meta/argument_specs.yml say the same.

The argument specification is the one documentation of a role's variables (docs/reference/roles is generated
from it, ``make docs``), so for every role under roles/:

- every variable in defaults/main.yml is an option of ``main`` (variables starting with ``__`` are internal);
- every option that declares a ``default`` is in defaults/main.yml, with that value;
- a default built from another variable (``{{ wan_tune_state | default('present') }}``) is compared by what it
  gives when that variable is not set; where that depends on the host (``ansible_host``) or is empty (the rate
  without ``-e rate=...``), the option declares no default and its description says where the value comes from;
- every option has a description.

prometheus.prometheus compares the names in the same way (.github/scripts/lint_arguments_spec.sh).
"""

from __future__ import annotations

import glob
import os

import jinja2
import jinja2.nativetypes
import pytest
import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(REPO_ROOT, 'roles', '*', '')))
NO_DEFAULT = object()       # the default template needs a variable of the host, or gives nothing


def load(role, *path):
    with open(os.path.join(REPO_ROOT, 'roles', role, *path), encoding='utf-8') as f:
        return yaml.safe_load(f) or {}


def main_options(role):
    return load(role, 'meta', 'argument_specs.yml')['argument_specs']['main'].get('options') or {}


def public_defaults(role):
    path = os.path.join(REPO_ROOT, 'roles', role, 'defaults', 'main.yml')
    if not os.path.exists(path):
        return {}
    return {k: v for k, v in load(role, 'defaults', 'main.yml').items() if not k.startswith('__')}


def effective_default(value):
    """What a default gives where no other variable is set: a template is rendered with no variables."""
    if not (isinstance(value, str) and '{{' in value):
        return value
    env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)
    try:
        rendered = env.from_string(value).render()
    except jinja2.UndefinedError:
        return NO_DEFAULT
    if isinstance(rendered, jinja2.Undefined) or rendered is None or rendered == '':
        return NO_DEFAULT
    return rendered


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def test_there_are_roles():
    assert len(ROLES) >= 3, ROLES


@pytest.mark.parametrize('role', ROLES)
def test_every_role_has_an_argument_spec(role):
    path = os.path.join(REPO_ROOT, 'roles', role, 'meta', 'argument_specs.yml')
    assert os.path.exists(path), 'roles/%s has no meta/argument_specs.yml; document its variables there' % role
    assert 'main' in load(role, 'meta', 'argument_specs.yml').get('argument_specs', {}), (
        'roles/%s/meta/argument_specs.yml has no entry point main' % role)


@pytest.mark.parametrize('role', ROLES)
def test_every_default_is_a_spec_option(role):
    missing = sorted(set(public_defaults(role)) - set(main_options(role)))
    assert not missing, ('roles/%s/defaults/main.yml sets %s, which roles/%s/meta/argument_specs.yml (entry point main) '
                         'does not document; add an option with a description and the default (or prefix an internal '
                         'variable with __)' % (role, ', '.join(missing), role))


@pytest.mark.parametrize('role', ROLES)
def test_spec_defaults_match_defaults_main(role):
    defaults = public_defaults(role)
    problems = []
    for name, spec in sorted(main_options(role).items()):
        declared = spec.get('default', NO_DEFAULT)
        if name not in defaults:
            if declared is not NO_DEFAULT:
                problems.append('%s: the spec declares default %r, but defaults/main.yml does not set it' % (name, declared))
            continue
        actual = effective_default(defaults[name])
        if actual is NO_DEFAULT and declared is NO_DEFAULT:
            continue
        if actual is NO_DEFAULT:
            problems.append('%s: the spec declares default %r, but defaults/main.yml gives %r, which depends on other '
                            'variables or is empty; drop the spec default and describe it' % (name, declared, defaults[name]))
        elif declared is NO_DEFAULT:
            problems.append('%s: defaults/main.yml gives %r (%r), but the spec declares no default' % (name, actual, defaults[name]))
        elif not same(declared, actual):
            problems.append('%s: the spec declares default %r, defaults/main.yml gives %r (%r)' % (name, declared, actual, defaults[name]))
    assert not problems, 'roles/%s:\n' % role + '\n'.join(problems)


@pytest.mark.parametrize('role', ROLES)
def test_every_option_has_a_description(role):
    undocumented = sorted(name for name, spec in main_options(role).items() if not spec.get('description'))
    assert not undocumented, 'roles/%s/meta/argument_specs.yml: no description for %s' % (role, ', '.join(undocumented))


def test_effective_default():
    assert effective_default("{{ wan_tune_state | default('present') }}") == 'present'
    assert effective_default('{{ mtu | default(9000) }}') == 9000
    assert effective_default("{{ rate | default('') }}") is NO_DEFAULT
    assert effective_default('{{ ansible_host | default(inventory_hostname) }}') is NO_DEFAULT
    assert effective_default([]) == []
    assert same(0.25, 0.25) and same(8, 8.0) and not same(False, 0) and not same(1, True)


def playbook_table_names():
    """The variables in the first table of docs/roles.md's section on playbooks/wan_tune.yml."""
    with open(os.path.join(REPO_ROOT, 'docs', 'roles.md'), encoding='utf-8') as f:
        lines = f.read().split('\n')
    start = next(i for i, line in enumerate(lines) if line.startswith('## Playbook'))
    names, in_table = set(), False
    for line in lines[start + 1:]:
        if line.startswith('## '):
            break
        if line.startswith('| Variable'):
            in_table = True
        elif in_table and line.startswith('|'):
            first = line.split('|')[1]
            names.update(part.strip('` ') for part in first.split(',') if part.strip('` -'))
        elif in_table:
            break
    return names


def test_playbook_variables_are_documented():
    """The playbook's table in docs/roles.md (made by scripts/docs_playbooks.py) lists what its specification declares
    and validate_inputs checks."""
    from ansible_collections.bdp.wan_tune.plugins.action import validate_inputs
    from ansible_collections.bdp.wan_tune.plugins.plugin_utils import specs

    documented = playbook_table_names()
    checked = set(specs.playbook_options('wan_tune'))
    assert checked >= set(validate_inputs.PLAYBOOK_INPUTS)
    assert not checked - documented, ('docs/roles.md, the table of playbooks/wan_tune.yml, lacks %s'
                                      % ', '.join(sorted(checked - documented)))
