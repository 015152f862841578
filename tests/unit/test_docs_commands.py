# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commands and files of docs/migration.md, docs/rollout.md and docs/lab.md work when pasted.

The rule: a fenced block with a language claims to be pasted; a block without one (output, a formula) does not.
- every ```yaml block parses (Ansible's loader: ``!vault`` is a value), and its top-level keys are variables the
  collection declares (a role's or a playbook's argument spec);
- every ```ini block is an inventory Ansible reads, with at least one host;
- every ```sh block parses with ``bash -n``;
- every ``ansible-playbook`` command of a sh block runs with ``--syntax-check`` added, as written otherwise, in a
  scratch directory holding the page's last inventory above it (an ini block whose first line is ``# PATH``, written
  to PATH) and ``playbooks/`` of the checkout, the collection on the collections path;
- a sh block whose every command is an offline tool (openssl, mkdir, ansible-vault, shred, ansible-inventory) runs
  whole in a scratch directory, with that inventory and a vault password file: the vaulted CA recipe.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
PAGES = ('docs/migration.md', 'docs/rollout.md', 'docs/lab.md')
FENCE = re.compile(r'^( *)```(\w*)\n(.*?)^\1```[ \t]*$', re.M | re.S)
OFFLINE = ('openssl', 'mkdir', 'ansible-vault', 'shred', 'ansible-inventory')


def blocks():
    """(page, line, language, text) of every fenced block of the pages, the indentation of a list item removed."""
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page)) as handle:
            text = handle.read()
        for match in FENCE.finditer(text):
            indent = len(match.group(1))
            body = ''.join(line[indent:] if line[:indent].strip() == '' else line
                           for line in match.group(3).splitlines(True))
            found.append((page, text.count('\n', 0, match.start()) + 1, match.group(2), body))
    return found


BLOCKS = blocks()


def of(language):
    return [pytest.param(block, id='%s:%d' % block[:2]) for block in BLOCKS if block[2] == language]


def commands(script):
    """The commands of a sh block: continuation lines and quoted strings across lines joined, comments and blank
    lines left out."""
    found, pending = [], ''
    for raw in re.sub(r'\\\n', ' ', script).splitlines():
        pending += raw + '\n'
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:          # a quotation open across the line's end
            continue
        pending = ''
        if words:
            found.append(words)
    assert not pending, 'an unclosed quotation: %s' % pending
    return found


def inventory_above(page, line):
    """(path, text) of the page's last ini block above the line whose first line names its path, or None."""
    above = [block for block in BLOCKS if block[0] == page and block[2] == 'ini' and block[1] < line
             and re.match(r'# [\w./-]+\n', block[3])]
    return (above[-1][3].split('\n', 1)[0][2:], above[-1][3]) if above else None


def declared_variables():
    names = set()
    for path in glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'argument_specs.yml')) + [
            os.path.join(ROOT, 'playbooks', 'meta', 'argument_specs.yml')]:
        with open(path) as handle:
            for entry in (yaml.safe_load(handle).get('argument_specs') or {}).values():
                names.update(entry.get('options') or {})
    return names


def scratch(tmp_path, page, line):
    """A directory to paste into: the page's inventory above the block, the checkout's playbooks/."""
    work = tmp_path / 'paste'
    work.mkdir()
    path, text = inventory_above(page, line) or ('inventory.ini', '[all]\n')
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(text)
    os.symlink(os.path.join(ROOT, 'playbooks'), str(work / 'playbooks'))
    password = tmp_path / 'vault-password'
    password.write_text('docs-test-password\n')
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ['PATH'], ANSIBLE_VAULT_PASSWORD_FILE=str(password),
               ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_FAILED='1')
    return work, env


def test_the_rule_finds_the_blocks():
    # the figures of the report: what the pages hold, and how much of it runs
    languages = [block[2] for block in BLOCKS]
    playbooks = [command for block in BLOCKS if block[2] == 'sh' for command in commands(block[3])
                 if command[0] == 'ansible-playbook']
    offline = [block for block in BLOCKS if block[2] == 'sh'
               and all(command[0] in OFFLINE for command in commands(block[3]))]
    assert languages.count('sh') >= 15 and languages.count('yaml') >= 2 and languages.count('ini') >= 3, languages
    assert len(playbooks) >= 11, playbooks
    assert [block[:2] for block in offline] == [('docs/migration.md', next(
        block[1] for block in BLOCKS if 'ansible-vault encrypt_string' in block[3]))]


@pytest.mark.parametrize('block', of('yaml'))
def test_yaml_blocks_parse_and_name_declared_variables(block):
    from ansible.parsing.yaml.loader import AnsibleLoader
    page, line, dummy, text = block
    data = AnsibleLoader(text).get_single_data()
    assert isinstance(data, dict) and data, '%s:%d: not a mapping of variables' % (page, line)
    unknown = sorted(set(data) - declared_variables())
    assert not unknown, '%s:%d: %s declared in no argument spec' % (page, line, unknown)


@pytest.mark.parametrize('block', of('ini'))
def test_ini_blocks_are_inventories(block, tmp_path):
    page, line, dummy, text = block
    path = tmp_path / 'inventory.ini'
    path.write_text(text)
    proc = subprocess.run([os.path.join(BIN, 'ansible-inventory'), '-i', str(path), '--list'],
                          env=dict(os.environ, ANSIBLE_INVENTORY_UNPARSED_FAILED='1'), capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, '%s:%d: %s' % (page, line, proc.stderr)
    assert json.loads(proc.stdout)['_meta']['hostvars'], '%s:%d: no host' % (page, line)


@pytest.mark.parametrize('block', of('sh'))
def test_sh_blocks_parse(block):
    page, line, dummy, text = block
    proc = subprocess.run(['bash', '-n'], input=text, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, '%s:%d: %s' % (page, line, proc.stderr)


PLAYBOOK_COMMANDS = [pytest.param(block, command, id='%s:%d:%d' % (block[0], block[1], number))
                     for block in BLOCKS if block[2] == 'sh'
                     for number, command in enumerate(commands(block[3]))
                     if command[0] == 'ansible-playbook']


@pytest.mark.parametrize('block, command', PLAYBOOK_COMMANDS)
def test_playbook_commands_pass_the_syntax_check(block, command, tmp_path):
    page, line = block[:2]
    work, env = scratch(tmp_path, page, line)
    proc = subprocess.run(command + ['--syntax-check'], cwd=str(work), env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.returncode == 0, '%s:%d: %s\n%s%s' % (page, line, shlex.join(command), proc.stdout, proc.stderr)


def test_the_vaulted_ca_recipe_runs_as_written(tmp_path):
    """docs/migration.md's recipe, pasted: the inventory reads both values, encrypted, and they decrypt to the CA."""
    from ansible.parsing.vault import VaultLib, VaultSecret
    recipe = [block for block in BLOCKS if block[2] == 'sh' and 'ansible-vault encrypt_string' in block[3]]
    assert len(recipe) == 1
    page, line, dummy, text = recipe[0]
    work, env = scratch(tmp_path, page, line)
    proc = subprocess.run(['bash', '-euo', 'pipefail', '-c', text], cwd=str(work), env=env, capture_output=True,
                          text=True, check=False, timeout=120)
    assert proc.returncode == 0, '%s:%d:\n%s%s' % (page, line, proc.stdout, proc.stderr)
    assert not (work / 'ca.key').exists(), 'the recipe leaves the CA key in the clear'
    shown = json.loads(proc.stdout[proc.stdout.index('{'):])
    vault = VaultLib([('default', VaultSecret(b'docs-test-password'))])
    values = dict((name, vault.decrypt(shown[name]['__ansible_vault']).decode())
                  for name in ('rsync_daemon_tls_ca_key', 'rsync_daemon_tls_ca_cert'))
    assert values['rsync_daemon_tls_ca_cert'] == (work / 'ca.crt').read_text()
    assert values['rsync_daemon_tls_ca_key'].startswith('-----BEGIN PRIVATE KEY-----')
    # the key and the certificate are a pair
    key = tmp_path / 'key.pem'
    key.write_text(values['rsync_daemon_tls_ca_key'])
    public = [subprocess.run(argv, capture_output=True, text=True, check=True).stdout for argv in (
        ['openssl', 'pkey', '-in', str(key), '-pubout'],
        ['openssl', 'x509', '-in', str(work / 'ca.crt'), '-noout', '-pubkey'])]
    assert public[0] == public[1]
