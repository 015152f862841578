# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One state directory, wan_tune_state_dir, read by every role that keeps files on the host (issue 32, item 4); the
roles' own nic_state_dir, jumbo_mtu_state_dir, rsync_daemon_state_dir and migrate_state_dir are deprecated aliases
that win for their role and warn (plugins/filter/state_dir.py)."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from unittest import mock

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.filter import state_dir as flt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
# The roles that keep files on the host, and those of them that had an option of their own.
ROLES = ('bbr', 'tcp_buffers', 'nic', 'jumbo_mtu', 'rsync_daemon', 'hpn_ssh', 'migrate')
ALIASED = ('nic', 'jumbo_mtu', 'rsync_daemon', 'migrate')
DEFAULT = '/var/lib/bdp_wan_tune'
REMOVED_IN = '0.5.0'        # the release that removes the roles' own options (the filter's, the specs', the changelog's)


def load(*path):
    with open(os.path.join(ROOT, *path), encoding='utf-8') as handle:
        return yaml.safe_load(handle) or {}


def test_the_shared_directory_where_the_role_has_none_of_its_own():
    with mock.patch.object(flt.Display, 'deprecated') as deprecated:
        assert flt.state_dir('/srv/state') == '/srv/state'
        assert flt.state_dir('/srv/state', None, 'nic_state_dir') == '/srv/state'
    assert not deprecated.called


def test_a_role_option_wins_for_its_role_and_warns_naming_wan_tune_state_dir():
    with mock.patch.object(flt.Display, 'deprecated') as deprecated:
        assert flt.state_dir('/srv/state', '/srv/nic', 'nic_state_dir') == '/srv/nic'
    (msg,), kwargs = deprecated.call_args
    assert msg.startswith('nic_state_dir is deprecated: set wan_tune_state_dir'), msg
    assert kwargs == {'version': REMOVED_IN, 'collection_name': 'bdp.wan_tune'}


def test_registered():
    assert flt.FilterModule().filters()['state_dir'] is flt.state_dir


@pytest.mark.parametrize('role', ROLES)
def test_every_role_declares_the_one_option_and_its_own_as_deprecated(role):
    options = load('roles', role, 'meta', 'argument_specs.yml')['argument_specs']['main']['options']
    defaults = load('roles', role, 'defaults', 'main.yml')
    assert options['wan_tune_state_dir']['default'] == defaults['wan_tune_state_dir'] == DEFAULT
    own = '%s_state_dir' % role
    if role in ALIASED:
        assert options[own]['description'][0].startswith('Deprecated, removed in %s; set O(wan_tune_state_dir)'
                                                         % REMOVED_IN)
        assert 'default' not in options[own] and own not in defaults      # unset unless the user sets it
    else:
        assert own not in options


def test_the_playbooks_declare_it_where_their_roles_read_it():
    specs = load('playbooks', 'meta', 'argument_specs.yml')['argument_specs']
    for playbook in ('wan_tune', 'migrate'):
        assert specs[playbook]['options']['wan_tune_state_dir']['default'] == DEFAULT


def _module_calls(node, found):
    if isinstance(node, list):
        for item in node:
            _module_calls(item, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and key.startswith('bdp.wan_tune.') and isinstance(value, dict):
                found.append((key[len('bdp.wan_tune.'):], value))
            _module_calls(value, found)


def test_every_call_of_a_module_that_records_passes_the_roles_directory():
    # no call falls back to the module's own default (/var/lib/bdp_wan_tune) behind the user's wan_tune_state_dir
    recording = set()
    for path in glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py')):
        with open(path, encoding='utf-8') as handle:
            if 'state_dir=dict(' in handle.read():
                recording.add(os.path.basename(path)[:-3])
    assert {'sysctl_dropin', 'tcp_congestion', 'path_probe', 'nic_settings', 'link_mtu'} <= recording
    calls = 0
    for role in ROLES:
        for path in sorted(glob.glob(os.path.join(ROOT, 'roles', role, 'tasks', '*.yml'))):
            found = []
            _module_calls(load(path), found)
            for module, args in found:
                if module not in recording:
                    continue
                calls += 1
                wanted = ('{{ wan_tune_state_dir }}', '{{ __%s_state_dir }}' % role, '{{ item.state_dir }}')
                given = args.get('state_dir')
                assert given in wanted, '%s: %s passes state_dir %r' % (path, module, given)
    assert calls >= 20


@pytest.mark.parametrize('role', ROLES)
def test_no_role_writes_the_directory_itself(role):
    # the default is written once per role, in defaults/main.yml (and the spec); tasks and vars read the option (a
    # message may still show it as an example)
    for path in glob.glob(os.path.join(ROOT, 'roles', role, 'tasks', '*.yml')) + \
            glob.glob(os.path.join(ROOT, 'roles', role, 'vars', '*.yml')):
        with open(path, encoding='utf-8') as handle:
            assert not re.search(r':\s*["\']?%s' % re.escape(DEFAULT), handle.read()), path


RESOLVE = r'''
import sys
sys.path.insert(0, sys.argv[1])
import collection_path
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([collection_path.ensure_importable()])
import json
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
loader, found = DataLoader(), {}
for role, expression in (('nic', '__nic_state_dir'), ('jumbo_mtu', '__jumbo_mtu_state_dir'),
                         ('rsync_daemon', '__rsync_daemon_state_dir'), ('migrate', '__migrate_state_dir'),
                         ('migrate', '__migrate_state_dir_var'), ('hpn_ssh', '__hpn_ssh_record_file')):
    variables = {}
    for kind in ('defaults', 'vars'):
        variables.update(loader.load_from_file('%s/roles/%s/%s/main.yml' % (sys.argv[2], role, kind),
                                               trusted_as_template=True))
    for case, given in (('none', {}), ('shared', {'wan_tune_state_dir': '/srv/all'}),
                        ('own', {'wan_tune_state_dir': '/srv/all', role + '_state_dir': '/srv/own'})):
        templar = Templar(loader=loader, variables=dict(variables, **given))
        found['%s %s %s' % (role, expression, case)] = templar.template(trust_as_template('{{ %s }}' % expression))
print(json.dumps(found))
'''


def test_the_roles_resolve_the_directory_as_documented():
    # through Ansible's own templating, with the roles' defaults and vars (a process of its own: the plugin loader
    # that finds the collection's filters is process-wide)
    done = subprocess.run([sys.executable, '-c', RESOLVE, os.path.join(ROOT, 'tests'), ROOT], capture_output=True,
                          text=True, check=True, timeout=120)
    found = yaml.safe_load(done.stdout.strip().splitlines()[-1])
    for role in ALIASED:
        expression = '__%s_state_dir' % role
        assert found['%s %s none' % (role, expression)] == DEFAULT
        assert found['%s %s shared' % (role, expression)] == '/srv/all'
        assert found['%s %s own' % (role, expression)] == '/srv/own'            # it wins for its role
    assert [found['migrate __migrate_state_dir_var %s' % case] for case in ('none', 'shared', 'own')] == \
        ['wan_tune_state_dir', 'wan_tune_state_dir', 'migrate_state_dir']     # the message names what was set
    assert found['hpn_ssh __hpn_ssh_record_file shared'] == '/srv/all/hpn_ssh.json'
    assert found['hpn_ssh __hpn_ssh_record_file own'] == '/srv/all/hpn_ssh.json'   # hpn_ssh had no option of its own
    warnings = re.findall(r'\[DEPRECATION WARNING\]: (\w+) is deprecated: set wan_tune_state_dir', done.stderr)
    assert sorted(warnings) == sorted('%s_state_dir' % role for role in ALIASED), done.stderr   # once each
