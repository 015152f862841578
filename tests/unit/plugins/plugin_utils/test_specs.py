# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/specs.py: the declared variables, read from the specifications and the roles' task files."""

from __future__ import annotations

import pytest

from ansible_collections.bdp.wan_tune.plugins.plugin_utils import specs


def message(name, value):
    (found,) = specs.undeclared({name: value})
    return specs.undeclared_message(*found)


def test_every_option_of_every_entry_point_is_declared():
    for name in specs.options():
        assert specs.undeclared({name: 'x'}) == [], name
    for name in ('rate', 'rtt', 'mtu', 'wan_tune_serial', 'migrate_hosts', 'verify_hosts', 'migrate_source',
                 'rsync_daemon_tls_migration'):
        assert name in specs.options()


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
