# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/specs.py: the declared variables, read from the specifications and the roles' task files."""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.plugin_utils import specs


def message(name, value):
    (found,) = specs.undeclared({name: value})
    return specs.undeclared_message(*found)


def test_every_option_of_every_entry_point_is_declared():
    # read here on its own (yaml.safe_load), every entry point of every role and playbook
    root = os.path.dirname(specs.ROLES_DIR)
    paths = glob.glob(os.path.join(root, 'roles', '*', 'meta', 'argument_specs.yml')) + [specs.PLAYBOOK_SPEC]
    names = set()
    for path in paths:
        with open(path) as handle:
            for entry in yaml.safe_load(handle)['argument_specs'].values():
                names.update(entry.get('options') or {})
    assert len(paths) >= 9 and {'rate', 'migrate_hosts', 'verify_hosts', 'rollback_steps', 'migrate_source'} <= names
    assert specs.undeclared(dict.fromkeys(names, 'x')) == []


def test_the_roles_results_are_declared():
    # register: and set_fact in the roles' task files (a second import of the playbook, a fact cache)
    for name in ('tcp_buffers_result', 'bbr_result', 'verify_results', 'verify_passed', 'jumbo_mtu_plan',
                 'tcp_buffers_measured_rtt_ms', 'rsync_daemon_result'):
        assert name in specs.declared() and name not in specs.options(), name
        assert specs.undeclared({name: {}}) == []


def test_outside_the_namespaces_nothing_is_refused():
    assert specs.undeclared({'ansible_host': 'x', 'my_rate': '1g', '__jumbo_mtu_config_root': '/tmp', 'verify': 1,
                             'wan_tuning': 1}) == []


def test_a_typo_names_what_was_meant():
    # the new user, by analogy with -e rsync_daemon=true
    text = message('jumbo_mtu', 'true')
    assert text.startswith('jumbo_mtu: no role or playbook of bdp.wan_tune declares this variable')
    assert 'did you mean jumbo_mtu_enabled or jumbo_mtu_target (or -e mtu=...)?' in text
    text = message('jumbo_mtu_value', '70000')
    assert 'did you mean jumbo_mtu_target (or -e mtu=...), ' in text
    assert 'did you mean tcp_buffers_rate (or -e rate=...)' in message('tcp_buffers_ratee', '1g')
    assert 'did you mean rsync_daemon_tls_senders' in message('rsync_daemon_tls_sender', ['a'])
    assert 'did you mean migrate_source' in message('migrate_sources', '/data')
    assert 'did you mean verify_streams' in message('verify_stream', '4')


def test_a_role_name_is_not_a_switch():
    # -e bbr=false reads as "leave the role out", which it is not: the message says how
    text = message('bbr', 'false')
    assert text.startswith('bbr: no role or playbook') and 'To leave the role out of a run: --skip-tags bbr.' in text
    assert 'did you mean wan_tune_state' in message('wan_tune', 'absent')


def test_a_slip_outside_the_namespaces_is_found():
    assert specs.near_misses(['rsync_deamon_users', 'tcp_buffer_rate', 'ansible_host', 'rates', 'my_var']) == [
        ('rsync_deamon_users', 'rsync_daemon_users'), ('tcp_buffer_rate', 'tcp_buffers_rate')]


def test_ansible_tags_are_read(tmp_path):
    path = tmp_path / 'vars.yml'
    path.write_text('a: !unsafe "{{ x }}"\nb: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\n')
    assert sorted(specs._yaml(str(path))) == ['a', 'b']
    path.write_text('a: [\n')
    with pytest.raises(specs.SpecError, match='cannot read .*vars.yml'):
        specs._yaml(str(path))


def test_a_name_like_no_other_gets_no_guess():
    text = message('nic_zzzzzzzz', 'x')
    assert 'did you mean' not in text and 'docs/roles.md' in text


@pytest.mark.parametrize('value, kind, fits', [
    ('true', 'bool', True), (True, 'bool', True), ('true', 'int', False), ('4', 'int', True), (4, 'int', True),
    ('4', 'bool', False), (['a'], 'list', True), (['a'], 'str', False), ('fq', 'str', True), ('fq', 'int', False),
])
def test_a_value_fits_its_kind(value, kind, fits):
    assert specs._fits(value, {'type': kind}) is fits


def test_secrets_come_from_no_log():
    secret = sorted(name for name, option in specs.load(roles=specs.ROLES + ('migrate',)).items()
                    if specs.is_secret(option))
    assert secret == ['rsync_daemon_tls_ca_key', 'rsync_daemon_users']


def test_the_playbook_inputs_are_those_that_feed_role_variables():
    assert specs.playbook_inputs(specs.load()) == ('mtu', 'rate', 'rtt')


def test_default_source():
    assert specs.default_source("{{ rate | default('') }}") == ('rate', '')
    source = specs.default_source('{{ ansible_host | default(inventory_hostname) }}')
    assert source == ('ansible_host', 'inventory_hostname') and isinstance(source[1], specs.Var)
    assert specs.default_source("{{ lookup('env', 'PWD') }}/x") == ('', None)
    assert specs.default_source(4) is None


VAR_KEYS = ('vars', 'extra_vars', 'set_fact', 'ansible.builtin.set_fact')


def _variables(node, found, parent=None):
    """The variable names a YAML tree sets: the keys of its vars, extra_vars and set_fact mappings, and of the host
    and group variables of an inventory (host_vars/group_vars: {host: {name: value}})."""
    if isinstance(node, dict):
        for key, value in node.items():
            if parent in VAR_KEYS:
                found.add(key)
            if parent in ('host_vars', 'group_vars') and isinstance(value, dict):
                found.update(value)
            _variables(value, found, key)
    elif isinstance(node, list):
        for item in node:
            _variables(item, found, parent)


def test_the_collections_own_files_set_only_declared_names():
    # every variable the roles, the playbooks and the Molecule scenarios set (defaults, vars, include_role vars,
    # set_fact, inventories): a run of the collection's own content never trips the check
    root = os.path.dirname(specs.ROLES_DIR)
    found = set()
    for path in glob.glob(os.path.join(root, 'roles', '*', 'defaults', '*.yml')) + \
            glob.glob(os.path.join(root, 'roles', '*', 'vars', '*.yml')):
        found.update(specs._yaml(path))
    for pattern in ('roles/**/*.yml', 'playbooks/**/*.yml', 'molecule/**/*.yml'):
        for path in glob.glob(os.path.join(root, pattern), recursive=True):
            _variables(specs._yaml(path), found)
    assert {'tcp_buffers_rate', 'rsync_daemon_modules', '__verify_runner', '__page'} <= found     # the scan sees them
    assert [name for name, dummy in specs.undeclared(dict.fromkeys(found, ''))] == []


@pytest.mark.parametrize('playbook', ['wan_tune.yml', 'verify.yml', 'migrate.yml'])
def test_every_playbook_checks_the_names_before_anything_runs(playbook):
    # the first play that reaches the hosts stops every host on a refused name (any_errors_fatal) before any role runs
    with open(os.path.join(specs.PLAYBOOKS_DIR, playbook)) as handle:
        plays = yaml.safe_load(handle)
    first = next(play for play in plays if play['hosts'] != 'localhost')
    assert first['any_errors_fatal'] is True and 'roles' not in first
    checks = [task for task in first['tasks'] if 'bdp.wan_tune.validate_inputs' in task]
    assert checks and checks[0] is first['tasks'][0] and checks[0]['tags'] == ['always']


def test_tagged_and_vaulted_values():
    # what -e and the inventory give in ansible-core 2.19: tagged strings; a vaulted value is never read
    from ansible.module_utils._internal._datatag import AnsibleTagHelper
    from ansible.parsing.vault import EncryptedString
    from ansible._internal._datatag._tags import Origin

    tagged = AnsibleTagHelper.tag('70000', [Origin(description='<extra vars>')])
    assert AnsibleTagHelper.tags(tagged) and specs.closest('jumbo_mtu_value', tagged)[0] == 'jumbo_mtu_target'
    vaulted = EncryptedString(ciphertext='$ANSIBLE_VAULT;1.1;AES256\n6162\n')
    assert specs._fits(vaulted, {'type': 'str'}) is False


def test_the_job_artifacts_are_declared_as_mappings_and_are_no_result_of_a_role():
    """set_stats keys (the job's artifacts: AWX passes them to the next job as extra variables, which beat set_fact):
    declared as mappings, and none of them is also a fact or a registered result of a role, which the extra variable
    would hide."""
    assert {'wan_tune', 'migrate'} <= specs.artifacts()
    results = specs.declared() - set(specs.options())
    assert not specs.artifacts() & results, specs.artifacts() & results
    for name in specs.artifacts():
        assert specs.undeclared({name: {'h1': {}}}) == []
    # the verify role's, which its report module names
    from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report
    for name in (verify_report.ARTIFACT, verify_report.BASELINE_ARTIFACT):
        assert name not in results and specs.undeclared({name: {'pairs': []}}) == []
    assert verify_report.BASELINE_ARTIFACT in specs.options()       # what the role reads it back as


def test_a_set_stats_key_is_found_in_a_task_tree():
    found, stats = set(), set()
    specs._task_names([{'block': [{'ansible.builtin.set_stats': {'data': {'x_artifact': 1}, 'per_host': False}},
                                  {'set_stats': {'data': '{{ templated }}'}}]}], found, stats)
    assert stats == {'x_artifact'} and found == set()
