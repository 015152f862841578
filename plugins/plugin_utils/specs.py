# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's declared variables, read from their one declaration (controller only).

Every input is declared once: a role's in its ``meta/argument_specs.yml`` (its default in ``defaults/main.yml``),
a playbook's own in ``playbooks/meta/argument_specs.yml`` (an entry point per playbook).  The roles' results are
declared where the roles make them (``register:`` and ``set_fact`` in their task files).  From those:

- ``load()``: the options the playbook's preflight checks, with their role and default;
- ``is_secret()``: an option whose value no message shows (``no_log`` on it or on one of its suboptions);
- ``undeclared()``: the variables of the collection's namespaces that nothing declares (a typo such as
  ``jumbo_mtu_value``, or ``bbr=false`` by analogy with ``rsync_daemon=true``), each with the closest declared names;
  a job artifact (a key of ``set_stats`` in a task file, such as ``wan_tune``) is declared as a mapping, the shape
  in which AWX passes it to the next job of a workflow as an extra variable (``-e wan_tune=absent`` stays a typo);
  ``near_misses()``: names outside the namespaces that are one slip from a declared option (``rsync_deamon_users``).
"""

import ast
import collections.abc
import difflib
import glob
import os
import re

import yaml

BASE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES_DIR = os.path.join(BASE, 'roles')
PLAYBOOKS_DIR = os.path.join(BASE, 'playbooks')
PLAYBOOK_SPEC = os.path.join(PLAYBOOKS_DIR, 'meta', 'argument_specs.yml')
# The roles the tuning playbook checks, in the order it runs them (verify: the canary).
ROLES = ('bbr', 'tcp_buffers', 'nic', 'jumbo_mtu', 'rsync_daemon', 'hpn_ssh', 'verify')
# The collection's namespaces: a variable named so is the collection's, and a spec declares it.  A role's name
# alone (bbr, tcp_buffers) is in them too: -e bbr=false reads as "leave the role out", which it is not.
NAMESPACE = re.compile(r'^(?:(?:tcp_buffers|bbr|jumbo_mtu|rsync_daemon|hpn_ssh|wan_tune)(?:_|$)|(?:verify|migrate|nic)_)')
# How close a name outside the namespaces must be to a declared option to be taken for a slip (rsync_deamon_users).
NEAR_MISS = 0.9
_DEFAULT_FROM = re.compile(r'^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\|\s*default\((.*)\)\s*\}\}$')
_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_CACHE = {}


class SpecError(Exception):
    """A file of the collection that cannot be read; the message names it."""


class _Loader(getattr(yaml, 'CSafeLoader', yaml.SafeLoader)):
    """The safe loader (libyaml's where there is one) that also reads Ansible's tags (!unsafe, !vault) as plain
    values: only the names matter here."""


def _tagged(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_Loader.add_multi_constructor('!', _tagged)


def _yaml(path):
    try:
        with open(path) as handle:
            return yaml.load(handle, Loader=_Loader) or {}  # nosec B506: a safe loader
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError('bdp.wan_tune cannot read %s: %s' % (path, exc))


def entry_points(path):
    """{entry point: options} of an argument specification file."""
    return dict((name, entry.get('options') or {}) for name, entry in _yaml(path)['argument_specs'].items())


def playbook_options(playbook):
    """The options of one playbook (wan_tune, verify, migrate)."""
    key = ('playbook', playbook)
    if key not in _CACHE:
        _CACHE[key] = entry_points(PLAYBOOK_SPEC)[playbook]
    return _CACHE[key]


def role_names():
    if 'roles' not in _CACHE:
        _CACHE['roles'] = frozenset(os.path.basename(os.path.dirname(os.path.dirname(path)))
                                    for path in glob.glob(os.path.join(ROLES_DIR, '*', 'meta', 'argument_specs.yml')))
    return _CACHE['roles']


class Var(str):
    """A default's fallback that names another variable (``default(inventory_hostname)``)."""


def default_source(default):
    """('rate', '') for a default of ``{{ rate | default('') }}``; ('', None) for another template; None otherwise."""
    if not isinstance(default, str) or '{{' not in default:
        return None
    match = _DEFAULT_FROM.match(default)
    if not match:
        return '', None
    fallback = match.group(2).strip()
    try:
        return match.group(1), ast.literal_eval(fallback)
    except (ValueError, SyntaxError):
        return match.group(1), Var(fallback) if _NAME.match(fallback) else None


def load(roles=ROLES, playbook='wan_tune'):
    """{variable: option} for the playbook and the roles' main entry points: type, elements, choices, no_log and the
    default (from the role's defaults/main.yml), with ``role`` (None for the playbook's own)."""
    key = ('load', roles, playbook)
    if key not in _CACHE:
        specs = dict((name, dict(_strip(option), role=None)) for name, option in playbook_options(playbook).items())
        for role in roles:
            options = entry_points(os.path.join(ROLES_DIR, role, 'meta', 'argument_specs.yml'))['main']
            defaults = _yaml(os.path.join(ROLES_DIR, role, 'defaults', 'main.yml'))
            for name, option in options.items():
                option = _strip(option)
                if name in defaults:
                    option['default'] = defaults[name]
                specs[name] = dict(option, role=role)
        _CACHE[key] = specs
    return _CACHE[key]


def _strip(option):
    return dict((key, item) for key, item in option.items() if key != 'description')


def playbook_inputs(specs):
    """The playbook's inputs that only feed role variables (rate feeds tcp_buffers_rate): typed by no spec of their
    own, they are checked as the role variable they feed, and a message names them."""
    feeders = set()
    for option in specs.values():
        source = default_source(option.get('default'))
        if source and source[0]:
            feeders.add(source[0])
    return tuple(sorted(name for name, option in specs.items()
                        if option['role'] is None and option.get('type') == 'raw' and name in feeders))


def is_secret(option):
    """Whether a message may not show the option's value: no_log on it or on one of its suboptions."""
    return bool(option.get('no_log')) or any(is_secret(sub) for sub in (option.get('options') or {}).values())


# ----------------------------------------------------------------------------- declared names

def _task_names(node, found, stats=None):
    """The variables that tasks make: ``register:`` and the keys of ``set_fact``, anywhere in a task tree; and into
    ``stats`` the keys of ``set_stats`` data written out (the job's artifacts)."""
    if isinstance(node, list):
        for item in node:
            _task_names(item, found, stats)
    elif isinstance(node, dict):
        if isinstance(node.get('register'), str):
            found.add(node['register'])
        for key in ('ansible.builtin.set_fact', 'ansible.legacy.set_fact', 'set_fact'):
            if isinstance(node.get(key), dict):
                found.update(name for name in node[key] if name != 'cacheable')
        for key in ('ansible.builtin.set_stats', 'ansible.legacy.set_stats', 'set_stats'):
            data = node.get(key, {}).get('data') if isinstance(node.get(key), dict) else None
            if stats is not None and isinstance(data, dict):
                stats.update(name for name in data if isinstance(name, str))
        for key in ('block', 'rescue', 'always', 'tasks', 'pre_tasks', 'post_tasks', 'handlers'):
            _task_names(node.get(key), found, stats)


def _task_files():
    return sorted(glob.glob(os.path.join(ROLES_DIR, '*', 'tasks', '*.yml')) +
                  glob.glob(os.path.join(ROLES_DIR, '*', 'handlers', '*.yml')) +
                  glob.glob(os.path.join(PLAYBOOKS_DIR, '*.yml')) + glob.glob(os.path.join(PLAYBOOKS_DIR, 'tasks', '*.yml')))


def declared():
    """Every variable name the collection declares: the options of every entry point of every role and playbook,
    and the roles' and playbooks' results (register, set_fact)."""
    if 'declared' not in _CACHE:
        names, stats = set(options()), set()
        for path in _task_files():
            _task_names(_yaml(path), names, stats)
        _CACHE['declared'] = frozenset(names)
        _CACHE['artifacts'] = frozenset(stats)
    return _CACHE['declared']


def artifacts():
    """The job artifacts the roles and playbooks leave (the keys of ``set_stats`` data in their task files, such as
    ``wan_tune``): AWX passes them to the next job of a workflow as extra variables, each a mapping."""
    declared()
    return _CACHE['artifacts']


def options():
    """{option: its declaration} of every entry point of every role and playbook (the names a user sets)."""
    if 'options' not in _CACHE:
        found = {}
        for path in sorted(glob.glob(os.path.join(ROLES_DIR, '*', 'meta', 'argument_specs.yml'))) + [PLAYBOOK_SPEC]:
            for entry in entry_points(path).values():
                found.update(entry)
        _CACHE['options'] = found
    return _CACHE['options']


def _fits(value, option):
    """Whether a value looks like what the option takes (a typo's likely meaning: -e jumbo_mtu=true means a
    boolean, jumbo_mtu_value=70000 a number).  Only plain values are looked at (never a vaulted one)."""
    kind = option.get('type', 'str')
    if isinstance(value, (list, tuple)):
        return kind == 'list'
    if isinstance(value, dict):
        return kind == 'dict'
    if not isinstance(value, (str, bool, int, float)):     # a vaulted value (EncryptedString) is none of them
        return False
    text = str(value).strip().lower()
    if kind == 'bool':
        return isinstance(value, bool) or text in ('true', 'false', 'yes', 'no', 'on', 'off', '1', '0')
    number = not isinstance(value, bool) and (isinstance(value, (int, float)) or text.isdigit())
    if kind in ('int', 'float'):
        return number
    if kind == 'raw':
        default = role_defaults().get(option.get('_name'))
        source = default_source(default)
        fallback = source[1] if source else default
        return number and isinstance(fallback, (int, float)) and not isinstance(fallback, bool)
    return kind == 'str' and not number


def closest(name, value, count=3):
    """The declared options a typo ``name`` (set to ``value``) most likely meant: by spelling, those of the same role
    and those that take such a value first.  A role's name (-e jumbo_mtu=true, by analogy with -e rsync_daemon=true)
    means the playbook's switch for that role and the role variables that a playbook input feeds."""
    if name in role_names():
        return ([other for other in sorted(playbook_options('wan_tune')) if other.startswith(name + '_')]
                + [other for other in sorted(options()) if other.startswith(name + '_') and fed_by_input(other)])[:count]
    prefix = NAMESPACE.match(name)
    scored = []
    for other, option in options().items():
        ratio = difflib.SequenceMatcher(None, name, other).ratio()
        if ratio >= 0.6:
            same = 0.1 if prefix and other.startswith(prefix.group(0)) else 0
            scored.append((ratio + same + (0.1 if _fits(value, dict(option, _name=other)) else 0), other))
    return [other for dummy, other in sorted(scored, key=lambda item: (-item[0], item[1]))[:count]]


def undeclared(variables):
    """[(name, [closest declared options])] for the variables of the collection's namespaces (a mapping of name to
    value) that nothing declares."""
    # the options first: the roles' task files (their results) are read only for a name that is none of them
    names = [name for name in sorted(_names(variables)) if NAMESPACE.match(name) and name not in options()]
    known = declared() if names else frozenset()
    return [(name, closest(name, variables[name])) for name in names if name not in known
            and not (name in artifacts() and isinstance(variables[name], collections.abc.Mapping))]


def _names(names):
    return [name for name in names if isinstance(name, str)]       # -e '{1: a}' gives a key that is no name


def near_misses(names):
    """[(name, declared option)] for names outside the namespaces one slip from a declared option
    (rsync_deamon_users, tcp_buffer_rate)."""
    if 'heads' not in _CACHE:
        _CACHE['heads'] = frozenset(option[:3] for option in options())
    found = []
    for name in sorted(_names(names)):
        # only a name that starts as an option does can be one slip from it (a host has hundreds of others)
        if name[:3] not in _CACHE['heads'] or NAMESPACE.match(name) or name in options():
            continue
        match = difflib.get_close_matches(name, sorted(options()), n=1, cutoff=NEAR_MISS)
        if match:
            found.append((name, match[0]))
    return found


def role_defaults():
    """{variable: default} of every role's defaults/main.yml."""
    if 'defaults' not in _CACHE:
        defaults = {}
        for path in sorted(glob.glob(os.path.join(ROLES_DIR, '*', 'defaults', 'main.yml'))):
            defaults.update(_yaml(path))
        _CACHE['defaults'] = defaults
    return _CACHE['defaults']


def fed_by_input(name):
    """The playbook input that a role variable's default takes (rate for tcp_buffers_rate), or None."""
    source = default_source(role_defaults().get(name))
    return source[0] if source and source[0] in playbook_inputs(load()) else None


def undeclared_message(name, closest):
    """'jumbo_mtu_value: no role or playbook of bdp.wan_tune declares this variable ...; did you mean
    jumbo_mtu_target (or -e mtu=...)?'"""
    hints = []
    for other in closest:
        feeder = fed_by_input(other)
        hints.append('%s (or -e %s=...)' % (other, feeder) if feeder else other)
    text = '%s: no role or playbook of bdp.wan_tune declares this variable, so nothing reads it (a typo?)' % name
    if hints:
        text += '; did you mean %s?' % (' or '.join(hints) if len(hints) < 3 else '%s, %s or %s' % tuple(hints))
    else:
        text += '.'
    if name in role_names():
        text += ' To leave the role out of a run: --skip-tags %s.' % name
    return text + (' Every variable is in the docs: docs/reference/roles and the playbook tables (docs/roles.md, '
                   'docs/verify.md, docs/migration.md).')
