# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One place for each rule (issue 16): a rule of RULES written again outside its home fails with both places.

Not a clone detector: a few exact patterns, one row each.  A row is
  name     what the rule is, as the failure names it;
  kind     'number': an int literal in Python code, as written (0xffff is not 65535); 'text': a string literal in
           Python code (docstrings and the DOCUMENTATION, EXAMPLES and RETURN blocks document, they are skipped);
           'line': a line of any file of ``files`` (for YAML and templates);
  pattern  a regular expression: the whole literal for 'number', a search in the text or line otherwise;
  home     the one file allowed to hold it (it must hold it), or None: built from the home's constants everywhere;
  context  for 'number' and 'text': a regular expression the source line must also match (None: any line);
  unless   a regular expression that excepts a source line (uses of the same digits for another fact, by name);
  files    glob patterns, relative to the repository, of the files searched.
To add a rule, add a row.  The same list from a shell: python tests/unit/test_one_rule.py
"""

from __future__ import annotations

import ast
import collections
import glob
import os
import re
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PY = ('plugins/**/*.py',)

# Three rsync setting names in a row in a sequence literal: a list of the settings. And a YAML key that hands a
# setting on to its role variable (address and port are left out: tls.yml and verify.yml pass those single values).
RSYNC_NAMES = r'(?:modules|users|address|port|streams|socket_options|auth_digest|hosts_allow|allow_self)'
RSYNC_SEQUENCE = r'\s*,\s*'.join(r"""(['"])(?:rsync_daemon_)?%s\%d""" % (RSYNC_NAMES, n) for n in (1, 2, 3))
RSYNC_FORWARD = (r'''^\s*(modules|streams|socket_options|auth_digest|hosts_allow|allow_self):\s*["']?'''
                 r'''\{\{\s*rsync_daemon_\1\b''')
# The passwords as a task argument: never (the action plugin reads rsync_daemon_users itself).
RSYNC_USERS_FORWARD = r'''^\s*users:\s*["']?\{\{\s*rsync_daemon_users\b'''
PRESENT = 'roles/rsync_daemon/tasks/present.yml'
RSYNC_FILES = ('plugins/**/*.py', 'roles/**/*.yml', 'playbooks/**/*.yml')

RSYNCD, RSYNCTLS = 'plugins/module_utils/transfer/rsyncd.py', 'plugins/module_utils/transfer/rsynctls.py'
# A transport default written as a literal: .get('transport', 'tls'), transport='plain' in a signature,
# default='tls' beside a transport option.
TRANSPORT_DEFAULT = (r'''(transport['"]\s*,\s*|\btransport=dict\(.*default=|\btransport=)['"](tls|plain|both)['"]''')

Rule = collections.namedtuple('Rule', 'name kind pattern home context unless files')
Rule.__new__.__defaults__ = (None, None, PY)

RULES = (
    Rule('the TCP port bound 65535 (module_utils/common/checks.py PORT_MAX)', 'number', r'65535',
         'plugins/module_utils/common/checks.py', unless=r'(?i)mtu'),
    Rule('the TCP port range in words (checks.port_help)', 'text', r'\b1 ?(to|\.\.|-) ?65535\b', None),
    Rule('the stream bound 128 (module_utils/common/checks.py STREAMS_MAX)', 'number', r'128',
         'plugins/module_utils/common/checks.py', context=r'(?i)stream|parallel'),
    Rule('the stream range in words (checks.streams_help)', 'text', r'\b1 to 128\b', None),
    Rule('the boolean help text (module_utils/common/bdp.py BOOL_HELP)', 'text', r'true or false \(also yes/no',
         'plugins/module_utils/common/bdp.py'),
    Rule('the list of rsync settings (module_utils/transfer/rsyncd.py SETTINGS)', 'line', RSYNC_SEQUENCE,
         'plugins/module_utils/transfer/rsyncd.py', files=RSYNC_FILES),
    Rule('an rsync setting handed on by name (the one task that hands them to rsync_daemon_config)', 'line',
         RSYNC_FORWARD, PRESENT, files=RSYNC_FILES),
    Rule('the passwords handed on as a task argument (the action plugin reads rsync_daemon_users)', 'line',
         RSYNC_USERS_FORWARD, None, files=RSYNC_FILES),
    Rule('the plain rsync port 873 (module_utils/transfer/rsyncd.py PORT)', 'number', r'873', RSYNCD),
    Rule('the TLS port 874 (module_utils/transfer/rsyncd.py TLS_PORT)', 'number', r'874', RSYNCD),
    Rule('the stream bound 1024 of the rsync daemon (module_utils/transfer/rsyncd.py STREAMS_MAX)', 'number',
         r'1024', RSYNCD, context=r'(?i)stream', unless=r'//\s*1024\b'),
    Rule('the stream range of the rsync daemon in words (rsyncd.STREAMS_HELP)', 'text', r'\b1 to 1024\b', None),
    Rule('the certificate days 3650 (module_utils/transfer/rsynctls.py DAYS_MAX)', 'number', r'3650', RSYNCTLS),
    Rule('the certificate days in words (rsynctls.DAYS_HELP)', 'text', r'\bto 3650\b', None),
    Rule('the transport default tls (module_utils/transfer/rsyncd.py TRANSPORT)', 'line', TRANSPORT_DEFAULT, None),
    Rule('the bound of a test\'s seconds 3600 (module_utils/verify/iperf3.py DURATION_MAX)', 'number', r'3600',
         'plugins/module_utils/verify/iperf3.py', context=r'(?i)duration'),
    Rule('the bound of the seconds left out 600 (module_utils/verify/iperf3.py OMIT_MAX)', 'number', r'600',
         'plugins/module_utils/verify/iperf3.py', context=r'(?i)omit'),
    Rule("the TLS files' names (module_utils/transfer/rsynctls.py SERVER_FILES, CLIENT_FILES, CA_FILES)", 'text',
         r'^(host\.(crt|key)|ca\.(crt|key)|self\.(crt|key)|stunnel\.conf)$', RSYNCTLS),
)
DOC_BLOCKS = ('DOCUMENTATION', 'EXAMPLES', 'RETURN')


def _docstrings(tree):
    """The ids of the string nodes that are documentation: docstrings and the module's doc blocks."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
        if isinstance(node, ast.Assign) and any(getattr(target, 'id', None) in DOC_BLOCKS for target in node.targets):
            ids.update(id(sub) for sub in ast.walk(node.value))
    return ids


_PARSED = {}


def _constants(text, path):
    """[(value, as written, line number, source line)] of the literals of one Python source, documentation left out;
    parsed once per file and content."""
    key = (path, text)
    if key not in _PARSED:
        tree = ast.parse(text, path)
        lines = text.splitlines()
        skip = _docstrings(tree)
        _PARSED[key] = [(node.value, lines[node.lineno - 1][node.col_offset:node.end_col_offset]
                         if node.lineno == node.end_lineno else None, node.lineno, lines[node.lineno - 1])
                        for node in ast.walk(tree) if isinstance(node, ast.Constant) and id(node) not in skip]
    return _PARSED[key]


def _python_hits(rule, text, path):
    """[line number] of the literals of ``rule`` in one Python source."""
    hits = set()
    for value, written, number, line in _constants(text, path):
        if rule.kind == 'number':       # as written: 0xffff is a mask, not the number 65535
            found = isinstance(value, int) and not isinstance(value, bool) and re.fullmatch(rule.pattern, written or '')
        else:
            found = isinstance(value, str) and re.search(rule.pattern, value)
        if found and (rule.context is None or re.search(rule.context, line)) \
                and (rule.unless is None or not re.search(rule.unless, line)):
            hits.add(number)
    return sorted(hits)


def hits(rule, root=ROOT):
    """['path:line'] of every place ``rule`` is written under ``root``."""
    found = []
    paths = sorted(set(path for pattern in rule.files
                       for path in glob.glob(os.path.join(root, pattern), recursive=True)))
    for path in paths:
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
        where = os.path.relpath(path, root)
        if rule.kind == 'line':
            numbers = [index + 1 for index, line in enumerate(text.splitlines()) if re.search(rule.pattern, line)
                       and (rule.unless is None or not re.search(rule.unless, line))]
        else:
            numbers = _python_hits(rule, text, path)
        found.extend('%s:%d' % (where, number) for number in numbers)
    return found


def copies(rules=RULES, root=ROOT):
    """One message per rule written more than once (or lost from its home); [] when each is in one place."""
    problems = []
    for rule in rules:
        places = hits(rule, root)
        home = [place for place in places if rule.home and place.rsplit(':', 1)[0] == rule.home]
        others = [place for place in places if place not in home]
        if rule.home and not home:
            problems.append('%s: not found in its home %s (moved? update RULES)' % (rule.name, rule.home))
        if others:
            problems.append('%s is written again at %s; use the one in %s' % (
                rule.name, ', '.join(others), home[0] if home else 'module_utils (build the text from its constants)'))
    return problems


def test_each_rule_is_written_once():
    assert copies() == []


# ----------------------------------------------------------------------------- the check can fail

HOME_CHECKS = 'PORT_MIN, PORT_MAX = 1, 65535\nSTREAMS_MIN, STREAMS_MAX = 1, 128\n'
HOME_BDP = "BOOL_HELP = 'true or false (also yes/no, on/off or 1/0, in any case)'\n"
HOME_RSYNCD = ("SETTINGS = ('modules', 'users', 'address', 'port')\nPORT, TLS_PORT, TRANSPORT = 873, 874, 'tls'\n"
               "STREAMS, STREAMS_MAX = 4, 1024\n")
HOME_PRESENT = '- x:\n    settings:\n      modules: "{{ rsync_daemon_modules }}"\n'
HOME_IPERF3 = 'DURATION_MAX, OMIT_MAX = 3600, 600\n'
HOME_RSYNCTLS = "DAYS, DAYS_MAX = 180, 3650\nSERVER_FILES = {'ca': 'ca.crt', 'cert': 'host.crt', 'key': 'host.key'}\n"


def _tree(tmp_path, extra):
    for rel, text in dict({'plugins/module_utils/common/checks.py': HOME_CHECKS, 'plugins/module_utils/common/bdp.py': HOME_BDP,
                           RSYNCD: HOME_RSYNCD, RSYNCTLS: HOME_RSYNCTLS,
                           'plugins/module_utils/verify/iperf3.py': HOME_IPERF3, PRESENT: HOME_PRESENT},
                          **extra).items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding='utf-8')
    return str(tmp_path)


def test_the_homes_alone_pass(tmp_path):
    assert copies(root=_tree(tmp_path, {})) == []


@pytest.mark.parametrize('source, rule, place, home', [
    ('import os\n\n\ndef ok(port):\n    return 1 <= port <= 65535\n', 'TCP port bound',
     'plugins/modules/fake.py:5', 'plugins/module_utils/common/checks.py:1'),
    ("HELP = 'a port from 1 to 65535'\n", 'TCP port range in words', 'plugins/modules/fake.py:1', 'module_utils'),
    ("CHECKS = (('parallel', 1, 128),)\n", 'stream bound 128', 'plugins/modules/fake.py:1',
     'plugins/module_utils/common/checks.py:2'),
    ("\n\nBOOL = 'expected true or false (also yes/no, on/off or 1/0)'\n", 'boolean help text',
     'plugins/modules/fake.py:3', 'plugins/module_utils/common/bdp.py:1'),
])
def test_a_second_copy_fails_with_its_place(tmp_path, source, rule, place, home):
    problems = copies(root=_tree(tmp_path, {'plugins/modules/fake.py': source}))
    assert len(problems) == 1, problems
    assert rule in problems[0] and place in problems[0] and home in problems[0], problems


@pytest.mark.parametrize('source', [
    'MAX_MTU = 65535\n',                                  # an MTU, excepted by name
    'def f(sock, linkmtu):\n    return sock.recv(linkmtu.MAX_MTU + 100)\n',
    "TYPE = 128  # ICMPv6 echo request\n",                # 128 for another fact
    'MASK = 0xffff\n',                                   # 65535 as a mask, written so
    'def f(net):\n    return net.prefixlen == 128\n',
    '"""Ports run from 1 to 65535."""\n',                # a docstring documents, it does not decide
    "DOCUMENTATION = r'''\noptions:\n  port:\n    description: 1 to 65535\n'''\n",
])
def test_other_facts_and_documentation_pass(tmp_path, source):
    assert copies(root=_tree(tmp_path, {'plugins/modules/fake.py': source})) == []


def test_a_home_that_lost_its_rule_fails(tmp_path):
    root = _tree(tmp_path, {'plugins/module_utils/common/checks.py': 'PORT_MAX = 65534\nSTREAMS_MAX = 128\n'})
    assert copies(root=root) == ['the TCP port bound 65535 (module_utils/common/checks.py PORT_MAX): not found in its '
                                 'home plugins/module_utils/common/checks.py (moved? update RULES)']


@pytest.mark.parametrize('rel, source, rule, place, home', [
    ('plugins/action/fake.py', "KEYS = ['rsync_daemon_modules', 'rsync_daemon_users', 'rsync_daemon_port']\n",
     'list of rsync settings', 'plugins/action/fake.py:1', 'plugins/module_utils/transfer/rsyncd.py:1'),
    (PRESENT, HOME_PRESENT + '      users: "{{ rsync_daemon_users }}"\n',
     'passwords handed on as a task argument', PRESENT + ':4', 'module_utils'),
    ('roles/migrate/tasks/x.yml', '- x:\n    streams: "{{ rsync_daemon_streams }}"\n',
     'rsync setting handed on by name', 'roles/migrate/tasks/x.yml:2', PRESENT + ':3'),
])
def test_a_second_rsync_settings_list_fails_with_its_place(tmp_path, rel, source, rule, place, home):
    problems = copies(root=_tree(tmp_path, {rel: source}))
    assert len(problems) == 1, problems
    assert rule in problems[0] and place in problems[0] and home in problems[0], problems


@pytest.mark.parametrize('source, rule, place', [
    ('def layout(port=874):\n    return port\n', 'TLS port 874', 'plugins/filter/fake.py:1'),
    ("def f(settings):\n    return settings.get('port', 873)\n", 'plain rsync port 873', 'plugins/filter/fake.py:2'),
    ("def f(streams):\n    return 1 <= streams <= 1024\n", 'stream bound 1024', 'plugins/filter/fake.py:2'),
    ("HELP = 'a whole number of days from 31 to 3650'\n", 'certificate days in words', 'plugins/filter/fake.py:1'),
    ("def f(days):\n    return days <= 3650\n", 'certificate days 3650', 'plugins/filter/fake.py:2'),
    ("def f(settings):\n    return settings.get('transport', 'tls') != 'plain'\n", 'transport default',
     'plugins/filter/fake.py:2'),
    ("def render(transport='plain'):\n    return transport\n", 'transport default', 'plugins/filter/fake.py:1'),
    ("KEY = 'host.key'\n", "TLS files' names", 'plugins/filter/fake.py:1'),
    ("def f(duration):\n    return 1 <= duration <= 3600\n", "test's seconds 3600", 'plugins/filter/fake.py:2'),
])
def test_a_second_tls_rule_fails_with_its_place(tmp_path, source, rule, place):
    problems = copies(root=_tree(tmp_path, {'plugins/filter/fake.py': source}))
    assert len(problems) == 1 and rule in problems[0] and place in problems[0], problems


def test_the_role_defaults_are_the_rules_of_module_utils():
    # Ansible reads the role's defaults/main.yml, the Python its constants: the two agree
    from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd, rsynctls
    with open(os.path.join(ROOT, 'roles', 'rsync_daemon', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    assert (defaults['rsync_daemon_port'], defaults['rsync_daemon_tls_port'], defaults['rsync_daemon_transport'],
            defaults['rsync_daemon_streams'], defaults['rsync_daemon_tls_days']) == \
        (rsyncd.PORT, rsyncd.TLS_PORT, rsyncd.TRANSPORT, rsyncd.STREAMS, rsynctls.DAYS)
    with open(os.path.join(ROOT, 'roles', 'migrate', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        assert yaml.safe_load(handle)['migrate_transport'] == rsyncd.TRANSPORT
    # the argument specifications (the docs) say the same defaults and bounds
    options = _options('rsync_daemon')
    assert (options['rsync_daemon_port']['default'], options['rsync_daemon_tls_port']['default'],
            options['rsync_daemon_transport']['default'], options['rsync_daemon_streams']['default'],
            options['rsync_daemon_tls_days']['default']) == \
        (rsyncd.PORT, rsyncd.TLS_PORT, rsyncd.TRANSPORT, rsyncd.STREAMS, rsynctls.DAYS)
    days = options['rsync_daemon_tls_days']['description']
    assert '%d to %d' % (rsynctls.RENEW_DAYS + 1, rsynctls.DAYS_MAX) in (' '.join(days) if isinstance(days, list) else days)


def test_the_verify_role_says_the_bounds_of_iperf3():
    from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import iperf3
    options = _options('verify')
    assert 'from 1 to %d' % iperf3.DURATION_MAX in options['verify_duration']['description']
    assert 'from 0 to %d' % iperf3.OMIT_MAX in options['verify_omit']['description']


def test_a_line_rule_names_the_file_and_line(tmp_path):
    root = _tree(tmp_path, {'roles/x/vars/main.yml': 'a: 1\nkeys: [port, streams]\n'})
    rule = Rule('a settings list', 'line', r'\[port, streams\]', None, files=('roles/**/*.yml',))
    assert copies(rules=(rule,), root=root) == [
        'a settings list is written again at roles/x/vars/main.yml:2; use the one in module_utils (build the text '
        'from its constants)']


# ----------------------------------------------------------------------------- the words of the docs agree

def _options(role):
    with open(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        return yaml.safe_load(handle)['argument_specs']['main']['options']


@pytest.mark.parametrize('role, option, bounds', [
    ('verify', 'verify_streams', ('STREAMS_MIN', 'STREAMS_MAX')),
    ('rsync_daemon', 'rsync_daemon_port', ('PORT_MIN', 'PORT_MAX')),
    ('rsync_daemon', 'rsync_daemon_tls_port', ('PORT_MIN', 'PORT_MAX')),
])
def test_argument_specs_say_the_bounds_of_module_utils(role, option, bounds):
    from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
    words = '%d to %d' % tuple(getattr(checks, name) for name in bounds)
    description = _options(role)[option]['description']
    description = ' '.join(description) if isinstance(description, list) else description
    assert words in description, (role, option, words, description)


if __name__ == '__main__':
    for message in copies():
        print(message)
    sys.exit(1 if copies() else 0)
