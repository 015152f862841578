# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The input check of playbooks/wan_tune.yml (plugins/action/validate_inputs.py).

Most tests drive the pure ``check_host()`` with a host's variables as Ansible would hand them over
(``-e key=value`` gives strings).  The last ones run the action itself with a real Templar and a
connection that fails when touched.
"""

from __future__ import annotations

import os
import re
from unittest import mock

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.action import validate_inputs as vi
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp
from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import linkmtu
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import dropin, kmod
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import congestion
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import specs as specs_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
GOOD = {'rate': '1g', 'rtt': '98'}
BOOLS = [name for name, option in vi.load_specs().items() if option.get('type') == 'bool']
INTERNAL = re.compile(r"_AnsibleTagged|<class|Traceback|NoneType|decimal\.|argument_spec|object at 0x")


def peers(*items):
    return lambda: list(items)


def check(tcp_buffers=True, jumbo_mtu=True, play_peers=None, **variables):
    return vi.check_host(dict(GOOD, **variables), tcp_buffers=tcp_buffers, jumbo_mtu=jumbo_mtu,
                         play_peers=play_peers)


def only(problems):
    assert len(problems) == 1, problems
    assert not INTERNAL.search(problems[0]), problems[0]
    return problems[0]


def assert_message(message, name, value, accepted):
    assert message.startswith(name + ': ') or message.startswith(name + ' '), message
    assert value in message, message
    assert 'expected ' + accepted in message or 'Expected ' + accepted in message, message
    assert not INTERNAL.search(message), message


# --------------------------------------------------------------------------- the specs

def test_every_option_of_every_role_is_checked():
    specs = vi.load_specs()
    for role in specs_module.ROLES:
        with open(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')) as handle:
            options = yaml.safe_load(handle)['argument_specs']['main']['options']
        for name in options:
            # the collection's state directory is every role's (and the playbook's) own option
            assert specs[name]['role'] == role or name == 'wan_tune_state_dir', name
    for name in ('wan_tune_state', 'wan_tune_become', 'wan_tune_hosts', 'jumbo_mtu_enabled', 'wan_tune_state_dir'):
        assert name in specs


def test_defaults_come_from_defaults_main():
    specs = vi.load_specs()
    assert specs['tcp_buffers_rate']['default'] == "{{ rate | default('') }}"
    assert specs['bbr_state']['default'] == "{{ wan_tune_state | default('present') }}"
    assert specs['tcp_buffers_headroom']['default'] == 8
    assert specs['bbr_sysctl_file']['default'] == '/etc/sysctl.d/90-bdp-wan-tune-bbr.conf'


def test_the_role_defaults_pass():
    assert check() == []
    assert check(mtu=9000, play_peers=lambda: [('198.18.0.2', 'ansible_host of host b')]) == []


# verify_baseline (raw: its reader's message, not the argument spec's, names what it is) takes a mapping, a verify
# summary; its reader's refusals are tested below.
@pytest.mark.parametrize('name', sorted(name for name, option in vi.load_specs().items()
                                        if option.get('type') != 'dict' and name != 'verify_baseline'))
def test_every_variable_refuses_a_mapping_and_names_itself(name):
    message = only(check(play_peers=peers(('b', 'inventory name of host b')), **{name: {'x': 1}}))
    shown = '(the value is not shown: it holds passwords)' if specs_module.is_secret(vi.load_specs()[name]) else '{x: 1}'
    assert message.startswith('%s: %s is a mapping, not ' % (name, shown)), message
    assert '; expected ' in message


def test_a_secret_is_never_shown():
    message = only(check(rsync_daemon_users='alice:hunter2'))
    assert 'hunter2' not in message
    assert message.startswith('rsync_daemon_users: (the value is not shown: it holds passwords) is a string, not a list')


def test_every_number_has_its_reader():
    # a number is read by the module_utils function its role reads it with, or by bdp.read_whole with a range
    for name, option in vi.load_specs().items():
        if option.get('type') == 'float':
            assert name in vi.PARSERS, name
        if option.get('type') == 'int':
            assert name in vi.PARSERS or name in vi.INT_RANGES, name


# --------------------------------------------------------------------------- choices

@pytest.mark.parametrize('name, value, accepted', [
    ('wan_tune_state', 'presnt', 'one of present, absent'),
    ('bbr_state', 'Present', 'one of present, absent'),
    ('tcp_buffers_state', 'gone', 'one of present, absent'),
    ('jumbo_mtu_state', 'off', 'one of present, absent'),
    ('bbr_qdisc', 'fq_codel', 'one of fq, none'),
    ('jumbo_mtu_tcp_proof', 'maybe', 'one of auto, required, off'),
    ('jumbo_mtu_commit_method', 'cron', 'one of auto, systemd, process'),
    ('jumbo_mtu_platform', 'oracle', 'one of auto, none, aws, gcp, azure, azure-mana'),
    ('jumbo_mtu_backend', 'wicked', 'one of auto, networkd, networkmanager, netplan, ifupdown, ifcfg, none'),
])
def test_choices(name, value, accepted):
    message = only(check(**{name: value}))
    assert_message(message, name, repr(value), accepted)
    assert 'is not one of the choices' in message


def test_unquoted_off_is_explained():
    message = only(check(jumbo_mtu_tcp_proof=False))
    assert_message(message, 'jumbo_mtu_tcp_proof', 'false', 'one of auto, required, off')
    assert "quote it ('off')" in message


@pytest.mark.parametrize('name, value', [('bbr_state', 'absent'), ('wan_tune_state', 'absent'),
                                         ('bbr_qdisc', 'none'), ('jumbo_mtu_tcp_proof', 'off')])
def test_choices_accepted(name, value):
    assert check(**{name: value}) == []


def test_a_bad_wan_tune_state_is_reported_once_under_its_own_name():
    message = only(check(wan_tune_state='rollback'))
    assert_message(message, 'wan_tune_state', "'rollback'", 'one of present, absent')
    assert 'bbr_state' not in message and 'tcp_buffers_state' not in message


def test_a_role_state_set_itself_is_named_itself():
    assert only(check(wan_tune_state='absent', bbr_state='on')).startswith("bbr_state: 'on' ")


# --------------------------------------------------------------------------- booleans

@pytest.mark.parametrize('text, meaning', [
    ('true', True), ('false', False), ('True', True), ('FALSE', False), ('yes', True), ('No', False),
    ('on', True), ('OFF', False), ('1', True), ('0', False), (True, True), (False, False),
    (1, True), (0, False),
])
def test_booleans_from_strings(text, meaning):
    assert vi.typed('x', text, {'type': 'bool'}) is meaning


BOOL_CANDIDATES = ['true', 'True', 'TRUE', 'yes', 'Yes', 'on', 'ON', '1', 'false', 'No', 'off', 'OFF', '0',
                   ' yes', 'yes ', ' false ', '\ttrue', 'no\n', ' 1', 'y', 'n', 't', 'f', 'Y', '2', '', 'maybe',
                   1, 0, 2, -1, True, False, 1.0, 0.0, None, [True]]


def test_booleans_are_exactly_what_the_bool_filter_takes():
    # the roles read every boolean with | bool: what it reads without a deprecation warning passes, with the same
    # meaning; what it would coerce (' yes' to false) is refused
    from ansible.plugins.filter import core

    assert set(vi.BOOL_TRUE) == core._valid_bool_true and set(vi.BOOL_FALSE) == core._valid_bool_false
    with mock.patch.object(core.display, 'deprecated') as deprecated:
        for value in BOOL_CANDIDATES:
            deprecated.reset_mock()
            meaning = core.to_bool(value)
            try:
                ours = vi.typed('x', value, {'type': 'bool'})
            except vi.Refusal:
                ours = None
            if deprecated.called:
                assert ours is None, value
            else:
                assert ours is meaning, value


@pytest.mark.parametrize('text', [' yes', 'yes ', ' false', '\ttrue', 'off\n'])
def test_spaces_around_a_boolean_are_refused_with_the_reason(text):
    message = only(check(bbr_verify=text))
    assert message.startswith('bbr_verify: %s is not a boolean: it has white space around the word, which '
                              "Ansible's bool filter does not ignore" % vi.show(text)), message
    assert message.endswith('; expected true or false (also yes/no, on/off or 1/0, in any case).')


@pytest.mark.parametrize('name', BOOLS)
@pytest.mark.parametrize('text', ['false', 'true', 'yes', 'no', 'on', 'off', '1', '0', 'False', 'YES'])
def test_every_boolean_takes_the_strings_of_minus_e(name, text):
    assert check(play_peers=peers(('b', 'inventory name of host b')), **{name: text}) == []


@pytest.mark.parametrize('name', BOOLS)
@pytest.mark.parametrize('value, shown', [('maybe', "'maybe'"), ('', "''"), (2, '2'), ('y2', "'y2'"),
                                          ([True], '[true]'), (None, 'null'), (' yes', "' yes'"), ('y', "'y'"),
                                          (1.0, '1.0')])
def test_every_boolean_refuses_other_values(name, value, shown):
    message = only(check(**{name: value}))
    assert_message(message, name, shown, 'true or false (also yes/no, on/off or 1/0, in any case)')


def test_bbr_verify_maybe():
    assert only(check(bbr_verify='maybe')) == (
        "bbr_verify: 'maybe' is not a boolean; expected true or false (also yes/no, on/off or 1/0, in any case).")


# --------------------------------------------------------------------------- numbers

@pytest.mark.parametrize('name, value', [
    ('tcp_buffers_flows', '4'), ('tcp_buffers_flows', 4), ('tcp_buffers_flows', ' 16 '), ('tcp_buffers_flows', 4.0),
    ('tcp_buffers_flows', '+8'),
    ('jumbo_mtu_proof_port', '45219'), ('jumbo_mtu_proof_port', 1), ('jumbo_mtu_proof_port', '65535'),
    ('jumbo_mtu_confirm_timeout', '10'), ('jumbo_mtu_confirm_timeout', 600), ('nic_confirm_timeout', '10'),
    ('jumbo_mtu_probe_count', '1'), ('jumbo_mtu_platform_max_mtu', '0'), ('jumbo_mtu_platform_max_mtu', '9001'),
    ('tcp_buffers_memory_share', '0.25'), ('tcp_buffers_memory_share', 1), ('tcp_buffers_memory_share', '.5'),
    ('tcp_buffers_headroom', '8'), ('tcp_buffers_headroom', 2.5), ('tcp_buffers_headroom', '64'),
    ('jumbo_mtu_target', '9000'), ('mtu', '9000'), ('mtu', 1500), ('mtu', '09000'),
])
def test_numbers_as_strings_are_accepted(name, value):
    assert check(play_peers=lambda: [('b', 'inventory name of host b')], **{name: value}) == []


@pytest.mark.parametrize('name, value, shown, reason, accepted', [
    ('tcp_buffers_flows', 'four', "'four'", 'is not usable', bdp.FLOWS_HELP),
    ('tcp_buffers_flows', '0', "'0'", 'is not usable', bdp.FLOWS_HELP),
    ('tcp_buffers_flows', -2, '-2', 'is not usable', bdp.FLOWS_HELP),
    ('tcp_buffers_flows', '4.5', "'4.5'", 'is not usable', bdp.FLOWS_HELP),
    ('tcp_buffers_flows', 4.5, '4.5', 'is not usable', bdp.FLOWS_HELP),
    ('tcp_buffers_flows', True, 'true', 'is a boolean, not a whole number', bdp.FLOWS_HELP),
    ('tcp_buffers_flows', '9' * 30, "'" + '9' * 30 + "'", 'is not usable', bdp.FLOWS_HELP),
    ('jumbo_mtu_proof_port', '70000', "'70000'", 'is above 65535', 'a TCP port: a whole number from 1 to 65535'),
    ('jumbo_mtu_proof_port', '4.5', "'4.5'", 'is not a whole number', 'a TCP port: a whole number from 1 to 65535'),
    ('jumbo_mtu_proof_port', -1, '-1', 'is below 1', 'a TCP port'),
    ('jumbo_mtu_proof_port', [1], '[1]', 'is a list, not a whole number', 'a TCP port'),
    ('jumbo_mtu_proof_port', True, 'true', 'is a boolean, not a whole number', 'a TCP port'),
    ('jumbo_mtu_proof_port', 0, '0', 'is below 1', 'a TCP port'),
    ('jumbo_mtu_confirm_timeout', '5', "'5'", 'is below 10', 'a whole number of seconds, 10 or more'),
    ('nic_confirm_timeout', '9', "'9'", 'is below 10', 'a whole number of seconds, 10 or more (default 120)'),
    ('jumbo_mtu_probe_count', 0, '0', 'is below 1', 'a whole number of ICMP echoes per probe size, 1 or more'),
    ('jumbo_mtu_platform_max_mtu', 100, '100', 'is below 576', '0 (no limit of your own) or an MTU from 576 to'),
    ('jumbo_mtu_platform_max_mtu', '70000', "'70000'", 'is above 65535', '0 (no limit of your own)'),
    ('tcp_buffers_memory_share', '0', "'0'", 'is outside 0 to 1', 'a share of RAM above 0 and at most 1'),
    ('tcp_buffers_memory_share', 1.5, '1.5', 'is outside 0 to 1', 'a share of RAM above 0 and at most 1'),
    ('tcp_buffers_memory_share', '25%', "'25%'", 'is not usable', 'a share of RAM above 0 and at most 1'),
    ('tcp_buffers_memory_share', 'nan', "'nan'", 'is outside 0 to 1', 'a share of RAM'),
    ('tcp_buffers_memory_share', [0.5], '[0.5]', 'is a list, not a number', 'a share of RAM'),
])
def test_numbers_refused(name, value, shown, reason, accepted):
    message = only(check(**{name: value}))
    assert_message(message, name, shown, accepted)
    assert '%s %s;' % (shown, reason) in message


@pytest.mark.parametrize('name', sorted(vi.INT_RANGES))
def test_every_range_shows_the_default_of_its_specification(name):
    # the default a message shows is the option's own, from its specification (defaults/main.yml), once; a text of
    # module_utils that states its module's default states the same one
    default = vi.load_specs()[name]['default']
    message = only(check(play_peers=peers(('b', 'inventory name of host b')), **{name: 'x'}))
    assert message.count('(default ') == 1 and '(default %s)' % default in message, message
    specs = dict(vi.load_specs())
    specs[name] = dict(specs[name], default=4321)
    message = only(vi.check_host(dict(GOOD, **{name: 'x'}), specs=specs, play_peers=peers(('b', 'host b'))))
    assert '(default 4321)' in message or '(default %s)' % default in vi.INT_RANGES[name][2], message


def test_a_default_goes_where_its_text_puts_it():
    assert vi.range_help('jumbo_mtu_confirm_timeout', 180) == \
        'a whole number of seconds, 10 or more (default 180); the whole play must fit in it'
    assert vi.range_help('jumbo_mtu_confirm_timeout') == 'a whole number of seconds, 10 or more; the whole play must fit in it'
    assert vi.range_help('jumbo_mtu_probe_count', 3) == 'a whole number of ICMP echoes per probe size, 1 or more (default 3)'


def test_a_number_that_is_not_finite_is_refused_by_name():
    # JSON extra variables can hold Infinity; Ansible's validator raised on it
    assert only(check(jumbo_mtu_proof_port=float('inf'))).startswith(
        'jumbo_mtu_proof_port: inf is a number, not a whole number; expected a TCP port')


def test_numbers_mean_what_they_mean_to_the_memory_guard():
    # flows and memory share are read by the functions the module's memory guard reads them with (bdp.memory_plan),
    # and refused with their messages
    for value in ('four', '0', 4.5, '1e3', '-1', ' 4x'):
        with pytest.raises(bdp.UnitError) as info:
            bdp.memory_plan(value, 10 ** 6, names={'flows': 'tcp_buffers_flows'})
        assert only(check(tcp_buffers_flows=value)) == str(info.value)
    for value in ('4', ' 16 ', '+8', 4, 4.0):
        assert check(tcp_buffers_flows=value) == []
        assert bdp.memory_plan(value, 10 ** 6)['flows'] == int(float(str(value).strip()))
    for value in ('25%', '0', 1.5, 'nan', '-0.5'):
        with pytest.raises(bdp.UnitError) as info:
            bdp.memory_plan(4, 10 ** 6, memory_share=value, names={'memory_share': 'tcp_buffers_memory_share'})
        assert only(check(tcp_buffers_memory_share=value)) == str(info.value)
    for value in ('0.25', '.5', 1, ' 0.5 ', '2.5e-1'):
        assert check(tcp_buffers_memory_share=value) == []
        bdp.memory_plan(4, 10 ** 6, memory_share=value)


@pytest.mark.parametrize('value, reason', [
    ('1000', 'above 64 x BDP the buffers mostly waste memory'),
    (65, 'above 64 x BDP the buffers mostly waste memory'),
    ('1', 'less than 2 x BDP cannot fill the path'),
    ('8x', 'has a unit'),
])
def test_headroom(value, reason):
    message = only(check(tcp_buffers_headroom=value))
    assert_message(message, 'tcp_buffers_headroom', bdp._fmt(value), 'a number of BDPs from 2 (the floor) to 64')
    assert reason in message


def test_headroom_1000_has_its_own_reason():
    message = only(check(tcp_buffers_headroom=1000))
    assert 'cannot fill the path' not in message
    assert 'waste memory' in message


# --------------------------------------------------------------------------- rate and RTT (the buffer plan)

@pytest.mark.parametrize('variables, name, fragment', [
    ({'rate': '1GB'}, 'tcp_buffers_rate (-e rate=...)', "'1GB' is in bytes (B)"),
    ({'rate': '1e999999999'}, 'tcp_buffers_rate (-e rate=...)', "'1e999999999' is far too large"),
    ({'rate': '1e9999'}, 'tcp_buffers_rate (-e rate=...)', "'1e9999' is far too large"),
    ({'rate': '100'}, 'tcp_buffers_rate (-e rate=...)', "'100' is 100 bit/s, below 1 Mbit/s"),
    ({'tcp_buffers_rate': '1GB'}, 'tcp_buffers_rate', "'1GB' is in bytes (B)"),
    ({'rtt': '98m'}, 'tcp_buffers_rtt (-e rtt=...)', "'98m' has an unknown unit 'm'"),
    ({'rtt': '11s'}, 'tcp_buffers_rtt (-e rtt=...)', "'11s' is 11000 ms, outside 0.001 ms to 10 s"),
    ({'tcp_buffers_rtt': 0}, 'tcp_buffers_rtt', '0 must be above zero'),
])
def test_rate_and_rtt_are_named_as_the_user_set_them(variables, name, fragment):
    message = only(check(**variables))
    assert message.startswith(name + ': '), message
    assert fragment in message
    assert len(message) < 400


def test_a_huge_rate_is_shortened():
    message = only(check(rate='1' * 5000 + 'g'))
    assert len(message) < 400
    assert '(5001 characters)' in message
    assert message.startswith('tcp_buffers_rate (-e rate=...): ')


def test_the_bytes_hint_is_kept():
    message = only(check(rate='1GB'))
    assert 'multiply by 8 (1 GB/s is 8gbit)' in message


@pytest.mark.parametrize('missing, example', [('rate', 'rate=1g'), ('rtt', 'rtt=98')])
def test_rate_and_rtt_are_required_where_tcp_buffers_runs(missing, example):
    variables = dict(GOOD)
    del variables[missing]
    message = only(vi.check_host(variables))
    assert message.startswith('tcp_buffers_%s (-e %s=...) is not set: pass -e %s' % (missing, missing, example))
    assert 'expected ' in message


@pytest.mark.parametrize('kwargs, variables', [
    ({'tcp_buffers': False}, {}),                                   # --tags bbr
    ({}, {'tcp_buffers_state': 'absent'}),
    ({}, {'wan_tune_state': 'absent'}),
])
def test_rate_and_rtt_are_not_needed_otherwise(kwargs, variables):
    assert vi.check_host(variables, **kwargs) == []


def test_a_rate_that_is_set_is_checked_even_where_it_is_not_needed():
    message = only(vi.check_host({'rate': '1GB'}, tcp_buffers=False))
    assert message.startswith("tcp_buffers_rate (-e rate=...): '1GB' is in bytes")


# --------------------------------------------------------------------------- strings, paths, lists

@pytest.mark.parametrize('value, reason', [
    ('BBR', 'is not a congestion control name'), ('tcp bbr', 'is not a congestion control name'),
    ('', 'is not a congestion control name'), ('bbr-2', 'is not a congestion control name'),
    ('a' * 16, 'is longer than 15 characters'), ([1], 'is a list, not a string'),
    ({'name': 'bbr'}, 'is a mapping, not a string'),
])
def test_algorithm(value, reason):
    message = only(check(bbr_algorithm=value))
    assert_message(message, 'bbr_algorithm', vi.show(value), kmod.CONGESTION_CONTROL_HELP)
    assert reason in message
    if isinstance(value, str):
        assert message == 'bbr_algorithm: %s %s; expected %s.' % (
            vi.show(value), kmod.congestion_control_name(value), kmod.CONGESTION_CONTROL_HELP)


@pytest.mark.parametrize('value', ['bbr', 'cubic', 'htcp', 'bbr2', 'dctcp', 'a' * 15])
def test_algorithm_accepted(value):
    assert check(bbr_algorithm=value) == []


def test_one_congestion_control_name_rule():
    # the validation play, tcp_congestion (main) and the drop-in engine (check_congestion_control) use the same helper
    assert congestion.congestion_control_name is kmod.congestion_control_name
    assert dropin.congestion_control_name is kmod.congestion_control_name


@pytest.mark.parametrize('name', ['bbr_sysctl_file', 'bbr_modules_load_file', 'tcp_buffers_sysctl_file',
                                  'wan_tune_state_dir', 'jumbo_mtu_state_dir', 'nic_state_dir',
                                  'rsync_daemon_state_dir'])
@pytest.mark.parametrize('value, reason', [('etc/sysctl.d/x.conf', 'is not an absolute path'),
                                           ('~/x.conf', 'is not an absolute path'), ('', 'is empty'),
                                           ('/tmp/a\nb.conf', 'contains a control character')])
def test_paths(name, value, reason):
    message = only(check(**{name: value}))
    assert_message(message, name, repr(value), 'an absolute path (starting with /)')
    assert reason in message


@pytest.mark.parametrize('variables, other', [
    ({'tcp_buffers_sysctl_file': '/etc/sysctl.d/./90-bdp-wan-tune-bbr.conf'}, 'bbr_sysctl_file'),
    ({'tcp_buffers_sysctl_file': '/etc//sysctl.d/90-bdp-wan-tune-bbr.conf'}, 'bbr_sysctl_file'),
    ({'tcp_buffers_sysctl_file': '//etc/sysctl.d/90-bdp-wan-tune-bbr.conf'}, 'bbr_sysctl_file'),
    ({'tcp_buffers_sysctl_file': '/etc/sysctl.d/x/../90-bdp-wan-tune-bbr.conf'}, 'bbr_sysctl_file'),
    ({'bbr_sysctl_file': '/etc/sysctl.d/./x.conf', 'tcp_buffers_sysctl_file': '/etc/sysctl.d/x.conf'},
     'bbr_sysctl_file'),
    ({'bbr_modules_load_file': '/etc/x.conf', 'bbr_sysctl_file': '/etc/./x.conf'}, 'bbr_sysctl_file'),
])
def test_owned_files_are_compared_by_their_normalised_paths(variables, other):
    message = only(check(**variables))
    assert ' is also %s' % other in message, message
    assert 'expected a file of its own for each role.' in message


@pytest.mark.parametrize('path', ['/etc/./sysctl.conf', '/etc/sysctl.d/../sysctl.conf', '//etc/sysctl.conf',
                                  '/etc/sysctl.d/./99-sysctl.conf'])
def test_the_administrators_file_is_found_behind_dots(path):
    message = only(check(tcp_buffers_sysctl_file=path))
    assert message.startswith("tcp_buffers_sysctl_file: %s is the administrator's sysctl file" % vi.show(path))


def test_normalise():
    assert vi.normalise('/etc/sysctl.d/./x.conf') == '/etc/sysctl.d/x.conf'
    assert vi.normalise('//etc//sysctl.d/x.conf') == '/etc/sysctl.d/x.conf'
    assert vi.normalise('/etc/sysctl.d/a/../x.conf') == '/etc/sysctl.d/x.conf'


def test_owned_files_end_in_conf_and_are_distinct():
    message = only(check(bbr_sysctl_file='/etc/sysctl.d/90-bbr'))
    assert_message(message, 'bbr_sysctl_file', "'/etc/sysctl.d/90-bbr'", 'a file name ending in .conf')
    message = only(check(tcp_buffers_sysctl_file='/etc/sysctl.d/90-bdp-wan-tune-bbr.conf'))
    assert_message(message, 'tcp_buffers_sysctl_file', "'/etc/sysctl.d/90-bdp-wan-tune-bbr.conf'",
                   'a file of its own for each role')
    assert 'is also bbr_sysctl_file' in message
    message = only(check(tcp_buffers_sysctl_file='/etc/sysctl.d/99-sysctl.conf'))
    assert "is the administrator's sysctl file" in message


@pytest.mark.parametrize('name', ['bbr_interfaces', 'jumbo_mtu_interfaces'])
@pytest.mark.parametrize('value, index', [
    (['eth0', 'bad name'], 1), (['eth0/1'], 0), (['a' * 16], 0), (['eth0:1'], 0), ([''], 0), (['..'], 0),
])
def test_interface_names(name, value, index):
    # linkmtu.check_ifname, which the link_mtu module runs before it changes anything, refuses them in its words
    message = only(check(**{name: value}))
    with pytest.raises(linkmtu.MtuError) as info:
        linkmtu.check_ifname(value[index])
    assert message == '%s[%d]: %s' % (name, index, info.value)
    assert 'is not a Linux interface name (1 to 15 characters, no spaces, "/" or ":")' in message


@pytest.mark.parametrize('name', ['bbr_interfaces', 'jumbo_mtu_interfaces'])
def test_an_interface_that_is_not_a_string(name):
    message = only(check(**{name: ['eth0', 5]}))
    assert_message(message, '%s[1]' % name, '5 is a number, not a string', 'a Linux interface name: 1 to 15')


def test_a_long_interface_name_is_shortened():
    message = only(check(bbr_interfaces=['x' * 5000]))
    assert len(message) < 300 and '(5000 characters)' in message


@pytest.mark.parametrize('name', ['bbr_interfaces', 'jumbo_mtu_interfaces', 'jumbo_mtu_peers'])
def test_a_string_where_a_list_is_expected_says_how_to_pass_a_list(name):
    message = only(check(**{name: 'eth0'}))
    assert_message(message, name, "'eth0'", 'a list')
    assert '-e \'{"%s": ["a", "b"]}\'' % name in message


def test_interfaces_accepted():
    assert check(bbr_interfaces=['eth0', 'ens3', 'bond0.100', 'wg-dc1'], jumbo_mtu_interfaces=[]) == []


@pytest.mark.parametrize('value, words', [
    (70000, '70000 is outside 576..65535'), ('70000', '70000 is outside 576..65535'),
    ('100', '100 is outside 576..65535'), (575, '575 is outside 576..65535'), (65536, '65536 is outside'),
    ('9k', "'9k' is not a whole number of bytes in digits 0-9 only (no sign, spaces or decimal point)"),
    ('jumbo', "'jumbo' is not a whole number"), ('9000.5', "'9000.5' is not a whole number"),
    ('+9000', "'+9000' is not a whole number"), (' 9000', "' 9000' is not a whole number"),
    ('9000 ', "'9000 ' is not a whole number"), ('9000.0', "'9000.0' is not a whole number"),
    (9000.0, '9000.0 is not a whole number of bytes in digits 0-9 only (no decimal point)'),
    (9000.5, '9000.5 is not a whole number'), ('9e3', "'9e3' is not a whole number"),
    ('\uff19\uff10\uff10\uff10', 'is not a whole number'), ('\u00b2', 'is not a whole number'),
    ('', "'' is not a whole number"),
    ('9' * 50, repr('9' * 40) + '... (50 characters) is outside 576..65535'),
])
def test_mtu(value, words):
    # linkmtu.parse_mtu's own message, under the name the user set (tests/integration/test_jumbo_lab.py)
    message = only(check(mtu=value, play_peers=lambda: [('b', 'inventory name of host b')]))
    with pytest.raises(linkmtu.MtuError) as info:
        linkmtu.parse_mtu(value, 'jumbo_mtu_target (-e mtu=...)')
    assert message == str(info.value)
    assert message.startswith('jumbo_mtu_target (-e mtu=...): '), message
    assert words in message and message.endswith('; expected %s.' % linkmtu.MTU_HELP), message
    message = only(check(jumbo_mtu_target=value, play_peers=lambda: [('b', 'inventory name of host b')]))
    assert message.startswith('jumbo_mtu_target: ') and words in message


def test_mtu_that_is_not_a_number():
    message = only(check(mtu=True, play_peers=lambda: [('b', 'inventory name of host b')]))
    assert message == 'jumbo_mtu_target (-e mtu=...): true is a boolean, not a whole number of bytes; expected %s.' % (
        linkmtu.MTU_HELP)


MTU_ACCEPTED = ['9000', 9000, 576, 65535, '576', '65535', '09000', '0' * 50 + '9000']
MTU_REFUSED = ['+9000', ' 9000', '9000 ', 9000.0, '9000.0', '9e3', '0x2328', '\uff19\uff10\uff10\uff10', '\u00b2', '',
               9000.5, '-9000', '9_000', 575, 65536, 10 ** 5000, '9' * 5000]


@pytest.mark.parametrize('value, accepted', [(value, True) for value in MTU_ACCEPTED] +
                         [(value, False) for value in MTU_REFUSED],
                         ids=['accepted-%d' % index for index in range(len(MTU_ACCEPTED))] +
                         ['refused-%d' % index for index in range(len(MTU_REFUSED))])
def test_mtu_plugin_and_module_agree(value, accepted):
    # the validation play accepts exactly what linkmtu.parse_mtu (the link_mtu module's check) accepts:
    # an integer or a string of the digits 0-9 only
    try:
        linkmtu.parse_mtu(value, 'mtu')
        module_accepts = True
    except linkmtu.MtuError:
        module_accepts = False
    problems = check(mtu=value, play_peers=lambda: [('b', 'inventory name of host b')])
    assert module_accepts is accepted
    assert (problems == []) is accepted, problems
    assert all(len(item) < 500 for item in problems)


@pytest.mark.parametrize('value', ['all', 'dc1:&transfer', ['a', 'b']])
def test_host_patterns(value):
    assert check(wan_tune_hosts=value) == []


@pytest.mark.parametrize('value', ['', [], [''], 5])
def test_bad_host_patterns(value):
    assert_message(only(check(wan_tune_hosts=value)), 'wan_tune_hosts', vi.show(value), 'a host pattern')


# --------------------------------------------------------------------------- jumbo_mtu peers

def test_peers_from_the_play_are_checked_with_their_origin():
    message = only(check(mtu='9000', play_peers=peers(('198.18.0.2', 'ansible_host of host b'),
                                                      ('bad host', 'jumbo_mtu_address of host c'))))
    assert message == ("jumbo_mtu_address of host c: peer 'bad host' is neither an IP address nor a valid host "
                       'name; expected %s.' % linkmtu.PEER_HELP)


def test_peers_set_are_checked_by_index():
    message = only(check(mtu='9000', jumbo_mtu_peers=['198.18.0.2', 'bad..name', 'dc2-b.example']))
    assert_message(message, 'jumbo_mtu_peers[1]', "peer 'bad..name' is neither", linkmtu.PEER_HELP)


@pytest.mark.parametrize('peer, reason', [
    ('224.0.0.1', 'is not a unicast address'), ('ff02::1', 'is not a unicast address'),
    ('0.0.0.0', 'is not a unicast address'), ('::', 'is not a unicast address'),
    ('bad..name', 'is neither an IP address nor a valid host name'), ('1.2.3', 'is neither'), (' ', 'is not usable'),
])
def test_peers_are_refused_in_the_words_of_parse_peer(peer, reason):
    # linkmtu.parse_peer, which the link_mtu module runs before it changes anything, gives the message
    with pytest.raises(linkmtu.MtuError) as info:
        linkmtu.parse_peer(peer)
    assert reason in str(info.value)
    message = only(check(mtu='9000', jumbo_mtu_peers=['198.18.0.2', peer]))
    assert message == 'jumbo_mtu_peers[1]: %s' % info.value
    message = only(check(mtu='9000', play_peers=peers((peer, 'jumbo_mtu_address of host c'))))
    assert message == 'jumbo_mtu_address of host c: %s' % info.value


def test_a_peer_that_is_not_a_string():
    message = only(check(mtu='9000', jumbo_mtu_peers=[5]))
    assert message == 'jumbo_mtu_peers[0]: peer 5 is a number, not a string; expected %s.' % linkmtu.PEER_HELP
    message = only(check(mtu='9000', play_peers=peers((5, 'jumbo_mtu_address of host c'))))
    assert message == 'jumbo_mtu_address of host c: peer 5 is not usable; expected %s.' % linkmtu.PEER_HELP


def test_a_long_peer_is_shortened():
    message = only(check(mtu='9000', jumbo_mtu_peers=['x' * 5000]))
    assert len(message) < 300 and '(5000 characters)' in message


def test_every_bad_peer_is_listed():
    problems = check(mtu='9000', jumbo_mtu_peers=['198.18.0.2', 'bad..name', '224.0.0.1'])
    assert [item.split(':')[0] for item in problems] == ['jumbo_mtu_peers[1]', 'jumbo_mtu_peers[2]']


def test_bad_peers_set_do_not_fall_back_to_the_play():
    problems = check(mtu='9000', jumbo_mtu_peers=['bad..name'], play_peers=peers(('x y', 'inventory name of x y')))
    assert [item.split(':')[0] for item in problems] == ['jumbo_mtu_peers[0]']


def test_no_peers():
    message = only(check(mtu='9000', play_peers=peers()))
    assert message.startswith('jumbo_mtu_peers: no peers')
    message = only(check(jumbo_mtu_enabled='true', jumbo_mtu_peers_from_play='false'))
    assert message.startswith('jumbo_mtu_peers: no peers, and jumbo_mtu_peers_from_play is false')


@pytest.mark.parametrize('variables, jumbo_mtu', [
    ({}, True),                                             # no mtu: the role does not run
    ({'mtu': 9000, 'jumbo_mtu_state': 'absent'}, True),
    ({'mtu': 9000, 'wan_tune_state': 'absent'}, True),
    ({'mtu': 9000}, False),                                 # --skip-tags jumbo_mtu
])
def test_peers_only_where_jumbo_mtu_runs(variables, jumbo_mtu):
    assert check(jumbo_mtu=jumbo_mtu, play_peers=peers(), **variables) == []


def test_unresolved_values_are_reported():
    message = only(check(bbr_qdisc=vi.Unresolved("'undefined_thing' is undefined")))
    assert message == "bbr_qdisc: its value could not be templated: 'undefined_thing' is undefined"


# --------------------------------------------------------------------------- several problems, one message

def test_a_host_with_several_problems_lists_all_in_one_message():
    problems = check(wan_tune_state='presnt', bbr_qdisc='fq_codel', tcp_buffers_flows='four', bbr_verify='maybe',
                     rate='1GB', tcp_buffers_headroom='1000', bbr_interfaces=['bad name'],
                     bbr_sysctl_file='relative.conf', mtu='70000', play_peers=peers(('b', 'inventory name of b')))
    names = [item.split(':')[0] for item in problems]
    assert names == ['wan_tune_state', 'bbr_qdisc', 'bbr_interfaces[0]', 'bbr_verify', 'bbr_sysctl_file',
                     'tcp_buffers_rate (-e rate=...)', 'tcp_buffers_headroom', 'tcp_buffers_flows',
                     'jumbo_mtu_target (-e mtu=...)']
    message = vi.failure_message('dc1-a', problems)
    lines = message.splitlines()
    assert lines[0] == 'Inputs of host dc1-a are not usable (9 problems):'
    assert lines[1:-1] == ['- ' + item for item in problems]
    assert lines[-1] == 'Nothing was changed on any host.'
    assert not INTERNAL.search(message)


def test_one_problem_is_singular():
    assert vi.failure_message('h', ['x']).splitlines()[0] == 'Inputs of host h are not usable (1 problem):'


# --------------------------------------------------------------------------- display

class _AnsibleTaggedStr(str):
    """Stands in for ansible-core 2.19's tagged strings."""


class _AnsibleTaggedList(list):
    """Stands in for ansible-core 2.19's tagged lists."""


def test_tagged_values_never_show_their_class():
    problems = check(tcp_buffers_flows=_AnsibleTaggedStr('four'), bbr_interfaces=_AnsibleTaggedStr('eth0'),
                     rate=_AnsibleTaggedList(['1g']), bbr_qdisc=_AnsibleTaggedList([_AnsibleTaggedStr('fq')]))
    assert len(problems) == 4, problems
    for message in problems:
        assert 'Tagged' not in message and '<class' not in message, message


@pytest.mark.parametrize('value, text', [
    ('x' * 100, repr('x' * 40) + '... (100 characters)'),
    (10 ** 45, '1' + '0' * 39 + '... (46 characters)'),
    (True, 'true'), (None, 'null (empty)'), (['a'], '[a]'), ({'a': 1}, '{a: 1}'),
    (list(range(100)), '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1... (390 characters)'),
])
def test_show(value, text):
    assert vi.show(value) == text


def test_show_an_int_too_long_for_str():
    assert vi.show(10 ** 5000) == '1' + '0' * 39 + '... (5001 characters)'


# --------------------------------------------------------------------------- the action, with a real Templar

def run_action(task_vars, args=None):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    connection = mock.MagicMock()
    connection._shell.tmpdir = None
    connection.exec_command.side_effect = AssertionError('validate_inputs must not touch the host')
    connection._connect.side_effect = AssertionError('validate_inputs must not connect')
    task = mock.MagicMock(args=args or {}, async_val=0, check_mode=False, action='bdp.wan_tune.validate_inputs')
    templar = Templar(loader=DataLoader(), variables=task_vars)
    action = vi.ActionModule(task, connection, mock.MagicMock(), DataLoader(), templar, None)
    result = action.run(task_vars=task_vars)
    assert not connection.exec_command.called and not connection._connect.called
    return result


def trusted(text):
    try:
        from ansible.template import trust_as_template
    except ImportError:         # ansible-core before 2.19: every string is a template
        return text
    return trust_as_template(text)


def test_action_passes_good_inputs_without_touching_the_host():
    result = run_action({'inventory_hostname': 'a', 'rate': '1g', 'rtt': '98', 'tcp_buffers_flows': '4',
                         'bbr_verify': 'false'})
    assert result.get('failed') is not True, result
    assert result['changed'] is False


def test_action_templates_the_values_and_reports_every_problem():
    result = run_action({'inventory_hostname': 'a', 'rate': trusted('{{ link }}'), 'link': '1GB', 'rtt': '98',
                         'bbr_qdisc': 'fq_codel', 'tcp_buffers_flows': 'four'})
    assert result['failed'] is True
    lines = result['msg'].splitlines()
    assert lines[0] == 'Inputs of host a are not usable (3 problems):'
    assert lines[1].startswith("- bbr_qdisc: 'fq_codel' is not one of the choices")
    assert lines[2].startswith("- tcp_buffers_rate (-e rate=...): '1GB' is in bytes")
    assert lines[3].startswith("- tcp_buffers_flows: 'four' is not usable; expected %s" % bdp.FLOWS_HELP)
    assert lines[-1] == 'Nothing was changed on any host.'
    assert not INTERNAL.search(result['msg'])


def test_action_reports_an_undefined_variable():
    result = run_action({'inventory_hostname': 'a', 'rate': '1g', 'rtt': trusted('{{ nowhere }}')})
    assert result['failed'] is True
    assert '- tcp_buffers_rtt (-e rtt=...): its value could not be templated: ' in result['msg']
    assert 'nowhere' in result['msg']


def test_action_treats_a_loaded_role_default_as_unset():
    result = run_action({'inventory_hostname': 'a', 'rate': '1GB', 'rtt': '98',
                         'tcp_buffers_rate': trusted("{{ rate | default('') }}")})
    assert "- tcp_buffers_rate (-e rate=...): '1GB'" in result['msg']


def test_action_takes_the_peers_from_the_other_hosts():
    hostvars = {'a': {'ansible_host': '198.18.0.1'}, 'b': {'jumbo_mtu_address': 'bad host'}, 'c': {}}
    result = run_action({'inventory_hostname': 'a', 'rate': '1g', 'rtt': '98', 'mtu': '9000',
                         'ansible_play_hosts_all': ['a', 'b', 'c'], 'hostvars': hostvars})
    assert result['failed'] is True
    assert ("- jumbo_mtu_address of host b: peer 'bad host' is neither an IP address nor a valid host name"
            in result['msg'])
    assert 'of host c' not in result['msg']


def test_action_reads_the_peers_in_the_order_of_the_peer_addresses_filter():
    # module_utils/common/peers.py: wan_address before jumbo_mtu_address before ansible_host (an empty one is not set)
    hostvars = {'a': {}, 'b': {'wan_address': 'bad wan', 'jumbo_mtu_address': '198.18.0.2', 'ansible_host': '10.0.0.2'},
                'c': {'wan_address': '', 'ansible_host': 'bad host'}}
    result = run_action({'inventory_hostname': 'a', 'rate': '1g', 'rtt': '98', 'mtu': '9000',
                         'ansible_play_hosts_all': ['a', 'b', 'c'], 'hostvars': hostvars})
    assert "- wan_address of host b: peer 'bad wan' is neither an IP address" in result['msg']
    assert "- ansible_host of host c: peer 'bad host' is neither an IP address" in result['msg']


def test_action_refuses_unknown_options():
    from ansible.errors import AnsibleActionFail

    with pytest.raises(AnsibleActionFail):
        run_action({'inventory_hostname': 'a'}, args={'roles': ['bbr']})


# ----------------------------------------------------------------------------- rate=auto, rtt=auto, rollout

@pytest.mark.parametrize('variables', [{'rate': 'auto'}, {'rtt': 'auto', 'wan_peer': 'b'}, {'rtt': 'AUTO', 'wan_peers': ['b']},
                                       {'rate': 'auto', 'rtt': 'auto', 'tcp_buffers_rtt_peers': ['198.18.0.2']}])
def test_auto_is_accepted(variables):
    assert check(**variables) == []


def test_auto_rtt_with_peers_from_the_play():
    assert check(rtt='auto', play_peers=peers(('198.18.0.2', 'ansible_host of host b'))) == []


def test_auto_rtt_without_peers_says_what_to_set():
    message = only(check(rtt='auto', play_peers=peers()))
    assert message.startswith('tcp_buffers_rtt (-e rtt=...) is auto, but the host has no peers')
    assert 'wan_peers' in message and 'rtt=98' in message


def test_bad_rate_mentions_auto():
    assert only(check(rate='fast')).endswith('Or auto: the link speed of the NIC towards the peers.')


@pytest.mark.parametrize('value, batches', [('1', ['1']), ('1,10%,50%', ['1', '10%', '50%']), ([1, '10%'], ['1', '10%']),
                                            (2, ['2']), ('100%', ['100%'])])
def test_serial_batches(value, batches):
    assert vi.serial_batches(value) == batches
    assert check(wan_tune_serial=value) == []


@pytest.mark.parametrize('value, shown', [('0', "'0'"), ('1,,2', "''"), ('150%', "'150%'"), ('ten', "'ten'"), ([1.5], '1.5')])
def test_serial_refused(value, shown):
    message = only(check(wan_tune_serial=value))
    assert message.startswith('wan_tune_serial: ') and 'batch size' in message and '-e wan_tune_serial=1,10%,50%' in message


@pytest.mark.parametrize('value, ok', [('0', True), ('100', True), ('25', True), ('101', False), ('-1', False), ('x', False)])
def test_max_fail_percentage(value, ok):
    problems = check(wan_tune_max_fail_percentage=value)
    assert (problems == []) is ok, problems
    if not ok:
        assert only(problems).startswith('wan_tune_max_fail_percentage: ')


def test_wan_peers_must_be_a_list():
    assert only(check(wan_peers='b')).startswith('wan_peers: ')


def test_no_hosts_matched_warns_with_the_fix():
    result = vi.no_hosts_check('all', 0, ['/etc/ansible/hosts'])
    assert result['changed'] is False and 'failed' not in result
    assert result['warnings'] == [result['msg']]
    assert "the pattern 'all'" in result['msg'] and '(/etc/ansible/hosts)' in result['msg'] and '-i inventory.ini' in result['msg']
    assert vi.no_hosts_check('dc1', 3) == {'changed': False, 'msg': "3 inventory hosts match 'dc1'."}


@pytest.mark.parametrize('variables, start', [
    ({'verify_min_fraction': '1.5'}, "verify_min_fraction: '1.5' is outside 0 to 1; expected a fraction above 0"),
    ({'verify_rate': '1GB'}, "verify_rate: '1GB' is in bytes"),
    ({'verify_streams': '0'}, "verify_streams: '0' is below 1"),
    ({'verify_duration': 'ten'}, "verify_duration: 'ten'"),
])
def test_the_canary_verification_inputs_are_checked_before_any_change(variables, start):
    assert only(check(**variables)).startswith(start)


def test_verify_rate_and_rtt_from_rate_and_rtt_are_reported_once():
    assert only(check(rate='fast')).startswith('tcp_buffers_rate (-e rate=...)')
    assert check(verify_rtt='auto', verify_min_fraction='0.5', verify_peer_addresses={'b': '198.18.0.2'}) == []


# ----------------------------------------------------------------------------- role: verify (roles/verify/tasks/plan.yml)

@pytest.mark.parametrize('variables, problem', [
    ({'verify_streams': '0'}, 'verify_streams: 0 is out of range; expected a whole number of streams from 1 to 128.'),
    ({'verify_streams': 129}, 'verify_streams: 129 is out of range; expected a whole number of streams from 1 to 128.'),
    ({'verify_streams': '-1'}, 'verify_streams: -1 is out of range; expected a whole number of streams from 1 to 128.'),
    ({'verify_duration': 0}, 'verify_duration: 0 is out of range; expected a whole number of seconds from 1 to 3600.'),
    ({'verify_omit': '601'}, 'verify_omit: 601 is out of range; expected a whole number of seconds from 0 to 600.'),
    ({'verify_min_fraction': '1.5'},
     'verify_min_fraction: 1.5 is out of range; expected a fraction above 0 and at most 1, such as 0.7.'),
    ({'verify_min_fraction': 0}, 'verify_min_fraction: 0 is out of range; expected a fraction above 0 and at most 1, such as 0.7.'),
    ({'verify_report_html_runs': 0},
     'verify_report_html_runs: 0 is out of range; expected a whole number of runs, 1 or more.'),
    ({'verify_streams': 'ten'}, "verify_streams: 'ten' is not a whole number; expected a whole number of streams from 1 to 128"),
])
def test_the_verify_role_ranges_are_the_ones_of_the_playbook_check(variables, problem):
    # the same value through check_host is refused too: one definition of each range
    assert len(check(**variables)) == 1
    problems = vi.range_problems('verify', variables)
    assert len(problems) == 1 and problems[0].startswith(problem)


def test_the_verify_role_ranges_pass_the_defaults():
    assert vi.range_problems('verify', {'verify_streams': 1, 'verify_duration': 10, 'verify_omit': 3,
                                        'verify_min_fraction': 0.7, 'verify_report_html_runs': 20}) == []
    assert vi.range_problems('verify', {'verify_streams': '128', 'verify_omit': '0', 'verify_min_fraction': '1'}) == []


def test_action_with_role_reports_without_failing_and_reads_only_that_role():
    result = run_action({'inventory_hostname': 'a', 'verify_streams': '0', 'verify_omit': 3,
                         'tcp_buffers_flows': 'four', 'rate': 'fast'}, args={'role': 'verify'})
    assert result.get('failed') is not True and result['changed'] is False
    assert result['problems'] == ['verify_streams: 0 is out of range; expected a whole number of streams from 1 to 128.']
    assert result['msg'] == result['problems'][0]
    result = run_action({'inventory_hostname': 'a'}, args={'role': 'verify'})
    assert result['problems'] == [] and result['msg'] == 'The numbers of role verify are in range.'


def test_the_transport_roles_rules_run_only_where_they_are_asked_for():
    assert check(rsync_daemon_modules=[{'name': 'in', 'path': '/etc/in', 'read_only': False}]) == []
    assert check(hpn_ssh_port=22) == []
    message = ' | '.join(check(rsync_daemon='true', rsync_daemon_modules=[{'name': 'in', 'path': '/etc/in'}]))
    assert 'rsync_daemon_modules' in message and '/etc' in message, message
    assert only(check(hpn_ssh='yes', hpn_ssh_port='22')).startswith("hpn_ssh_port: 22 is not usable; expected a TCP port")
    message = only(check(hpn_ssh='true', hpn_ssh_source='files'))
    assert message.startswith('hpn_ssh_source: files, but hpn_ssh_package_files is empty'), message
    assert check(hpn_ssh='false', hpn_ssh_source='files') == []
    assert check(hpn_ssh='true', hpn_ssh_state='absent', hpn_ssh_source='files') == []


def test_a_host_without_rsync_modules_is_left_alone_unless_present_is_asked_for():
    """Issue 15, item 4: -e rsync_daemon=true over senders and receivers sets up receivers only; a sender (no
    modules) passes, with users or hosts_allow that would not do for a daemon; an explicit state present without
    modules is refused, naming both variables."""
    assert check(rsync_daemon='true') == []
    assert check(rsync_daemon='true', rsync_daemon_hosts_allow=['not an address']) == []
    message = only(check(rsync_daemon='true', rsync_daemon_state='present'))
    assert message.startswith("rsync_daemon_state: 'present' is set, but rsync_daemon_modules is empty"), message
    assert 'expected the modules of this receiving host in rsync_daemon_modules' in message
    assert check(rsync_daemon='false', rsync_daemon_state='present') == []      # the role does not run
    assert check(rsync_daemon='true', rsync_daemon_state='absent') == []
    modules = [{'name': 'in', 'path': '/srv/in', 'hosts_allow': ['198.18.3.0/24']}]
    assert check(rsync_daemon='true', rsync_daemon_state='present', rsync_daemon_modules=modules) == []


def test_the_tls_daemon_inputs_are_refused_by_name_and_the_ca_key_never_shown(tmp_path):
    modules = [{'name': 'in', 'path': '/srv/in', 'read_only': False, 'auth_users': ['u'], 'hosts_allow': ['198.18.3.0/24']}]
    users = [{'name': 'u', 'password': 'pw'}]
    base = dict(rsync_daemon='true', rsync_daemon_modules=modules, rsync_daemon_users=users,
                rsync_daemon_tls_ca_dir=str(tmp_path / 'ca'))
    assert check(**base) == []
    message = only(check(rsync_daemon_tls_ca_cert='-----BEGIN CERTIFICATE-----\nAA\n-----END CERTIFICATE-----', **base))
    assert message.startswith('rsync_daemon_tls_ca_cert: is set but rsync_daemon_tls_ca_key is empty'), message
    secret = 'a "quoted\\ key % \u00e9'
    message = ' | '.join(check(rsync_daemon_tls_ca_key=secret, **base))
    assert 'rsync_daemon_tls_ca_key: is set but rsync_daemon_tls_ca_cert is empty' in message and secret not in message
    message = only(check(rsync_daemon_transport='tunnel', **base))
    assert message.startswith("rsync_daemon_transport: 'tunnel' is not one of the choices"), message
    assert only(check(rsync_daemon_tls_port='873', rsync_daemon_transport='both', **base)).startswith(
        'rsync_daemon_tls_port: 873 is also rsync_daemon_port')
    # the CA of the migration (named here; derived from the inventory sources when not) in its own directory
    (tmp_path / 'ca' / 'm1').mkdir(parents=True)
    (tmp_path / 'ca' / 'm1' / 'ca.crt').write_text('x')
    (tmp_path / 'ca' / 'm1' / 'ca.key').write_text('x')
    os.chmod(str(tmp_path / 'ca' / 'm1' / 'ca.key'), 0o644)
    assert check(rsync_daemon_tls_migration='m2', **base) == []
    assert 'has mode 0644, readable by others' in only(check(rsync_daemon_tls_migration='m1', **base))
    assert check(rsync_daemon_transport='plain', rsync_daemon_tls_migration='m1', **base) == []
    # a sender that is not an inventory host, named (the inventory as the play sees it)
    message = only(vi.check_host(dict(GOOD, rsync_daemon_tls_senders=['rsync-a', 'ghost'], **base),
                                 inventory=['rsync-a', 'rsync-b']))
    assert message.startswith("rsync_daemon_tls_senders[1]: 'ghost' is not a host of the inventory"), message


def test_action_refuses_an_undeclared_variable_given_with_e(monkeypatch):
    monkeypatch.setattr(vi, 'extra_var_names', lambda loader: frozenset(('rate', 'rtt', 'jumbo_mtu', 'jumbo_mtu_value',
                                                                         'my_own_var', 'rsync_deamon_users')))
    result = run_action({'inventory_hostname': 'a', 'rate': '1g', 'rtt': '98', 'jumbo_mtu': 'true',
                         'jumbo_mtu_value': '70000', 'my_own_var': 1, 'rsync_deamon_users': 'hunter2'})
    assert result['failed'] is True
    lines = result['msg'].splitlines()
    assert lines[0] == 'Inputs of host a are not usable (3 problems):'
    assert lines[1].startswith('- jumbo_mtu: no role or playbook of bdp.wan_tune declares this variable')
    assert lines[2].startswith('- jumbo_mtu_value: ') and 'jumbo_mtu_target (or -e mtu=...)' in lines[2]
    assert lines[3] == ('- rsync_deamon_users: no role or playbook of bdp.wan_tune declares this variable, so nothing '
                        'reads it; did you mean rsync_daemon_users?')
    assert 'my_own_var' not in result['msg'] and 'hunter2' not in result['msg'] and '70000' not in result['msg']


def test_action_warns_of_an_undeclared_inventory_variable(monkeypatch):
    # an inventory shared with other playbooks may hold a verify_* of its own: a warning, without the host's name
    monkeypatch.setattr(vi, 'extra_var_names', lambda loader: frozenset(('rate', 'rtt')))
    result = run_action({'inventory_hostname': 'a', 'rate': '1g', 'rtt': '98', 'verify_ssl': 'S3cret'})
    assert result.get('failed') is not True, result
    (warning,) = result['warnings']
    assert warning.startswith('Host variable verify_ssl: no role or playbook of bdp.wan_tune declares')
    assert 'S3cret' not in warning and 'host a' not in warning


def test_action_names_only_checks_the_names(monkeypatch):
    # the verify and migrate playbooks: their roles check the values
    monkeypatch.setattr(vi, 'extra_var_names', lambda loader: frozenset(('tcp_buffers_flows', 'migrate_sources')))
    result = run_action({'inventory_hostname': 'a', 'tcp_buffers_flows': 'four', 'migrate_sources': '/data'},
                        args={'names_only': True})
    assert result['failed'] is True and 'migrate_sources: ' in result['msg'] and 'tcp_buffers_flows' not in result['msg']
    result = run_action({'inventory_hostname': 'a', 'migrate_source': '/data', 'verify_passed': True},
                        args={'names_only': True})
    assert result.get('failed') is not True and 'warnings' not in result, result


def test_the_extra_vars_are_read_as_ansible_playbook_reads_them(monkeypatch):
    from ansible import context
    from ansible.parsing.dataloader import DataLoader
    from ansible.utils.vars import load_extra_vars

    monkeypatch.delattr(load_extra_vars, 'extra_vars', raising=False)     # what an earlier read kept
    monkeypatch.setattr(context, 'CLIARGS', {'extra_vars': ('rate=1g jumbo_mtu_value=70000', '{"bbr": false}')})
    assert vi.extra_var_names(DataLoader()) == frozenset(('rate', 'jumbo_mtu_value', 'bbr'))
    monkeypatch.delattr(load_extra_vars, 'extra_vars', raising=False)


def test_a_slip_in_the_inventory_is_a_warning_and_a_key_that_is_no_name_is_left_alone(monkeypatch):
    monkeypatch.setattr(vi, 'extra_var_names', lambda loader: frozenset((1, 'rate', 'rtt')))
    result = run_action({'inventory_hostname': 'a', 'rate': '1g', 'rtt': '98', 'rsync_daemons': True, 1: 'x'})
    assert result.get('failed') is not True, result
    assert result['warnings'] == ['Host variable rsync_daemons: no role or playbook of bdp.wan_tune declares this '
                                  'variable, so nothing reads it; did you mean rsync_daemon?']


@pytest.mark.parametrize('var, value, accepted', [
    ('nic_rings', 'huge', 'max, keep or a whole number from 1 to 65536'),
    ('nic_rings', '0', 'max, keep or a whole number from 1 to 65536'),
    ('nic_txqueuelen', 'max', 'keep or a whole number from 1 to 1000000'),
    ('nic_coalescing', '-5', 'adaptive, keep or a whole number from 0 to 100000'),
])
def test_the_nic_settings_are_read_by_the_modules_rule(var, value, accepted):
    # the rule of module_utils/nic/settings.py, which the nic_settings module reads
    assert only(check(**{var: value})) == "%s: %s is not accepted; expected %s." % (var, vi.show(value), accepted)


def test_the_nic_settings_take_their_words_and_numbers():
    assert check(nic_rings='MAX', nic_txqueuelen='20000', nic_coalescing='0') == []


@pytest.mark.parametrize('variables, message', [
    ({'wan_peers': [{'a': 1}]}, 'wan_peers: [{a: 1}] has an item [0] that is a mapping, not a string; expected a list '
                                'of strings.'),
    ({'wan_peers': [None]}, 'wan_peers: [null] has an item [0] that is empty (null), not a string'),
    ({'tcp_buffers_rtt_peers': ['b', 5]}, 'tcp_buffers_rtt_peers: [b, 5] has an item [1] that is a number'),
    ({'wan_peer': True}, 'wan_peer: true is a boolean, not a string'),
    ({'hpn_ssh_port': '3.0'}, "hpn_ssh_port: '3.0' is not a whole number; expected a TCP port"),
    ({'rsync_daemon_port': '1_000'}, "rsync_daemon_port: '1_000' is not a whole number"),
    ({'jumbo_mtu_proof_port': 873.0}, 'jumbo_mtu_proof_port: 873.0 is a number, not a whole number'),
    ({'rsync_daemon': True, 'rsync_daemon_modules': ['x']}, "rsync_daemon_modules[0]: 'x' is not a mapping"),
    # -e key=value gives text: the validator parses JSON and k=v text into a mapping, the roles read the text
    ({'hpn_ssh_sshd_options': '{"MaxStartups": "20"}'},
     'hpn_ssh_sshd_options: \'{"MaxStartups": "20"}\' is not a mapping; expected a mapping.'),
    ({'verify_peer_addresses': 'a=198.18.0.2'}, "verify_peer_addresses: 'a=198.18.0.2' is not a mapping"),
])
def test_what_ansible_s_validator_converts_but_the_roles_would_read_otherwise_is_refused(variables, message):
    # the validator turns these into Python text or numbers; the roles read the value as given
    assert only(check(**variables)).startswith(message)


def test_whole_numbers_in_digits_as_e_passes_them_are_taken():
    assert check(hpn_ssh_port='2222', rsync_daemon_port=' +8873 ', jumbo_mtu_proof_port=45000) == []


def test_the_nic_role_needs_interfaces_or_peers():
    assert only(check(nic=True)).startswith('nic: no interfaces to tune: nic_interfaces is empty')
    assert check(nic=True, nic_interfaces=['ens4']) == []
    assert check(nic=True, wan_peers=['198.18.0.2']) == []
    assert check(nic=True, nic_state='absent') == []
    assert check(nic=False) == []


@pytest.mark.parametrize('variables, message', [
    ({'nic_interfaces': ['bad name']}, 'nic_interfaces[0]: '),
    ({'nic_peers': ['1.2.3']}, 'nic_peers[0]: '),
    ({'nic_interfaces': 'ens4'}, 'nic_interfaces: '),
])
def test_the_nic_interfaces_and_peers_are_read_by_the_module_rules(variables, message):
    assert only(check(**variables)).startswith(message)


# ----------------------------------------------------------------------------- job artifacts as extra variables (AWX)

def stock_summary():
    """The verify_baseline artifact of a stock run, as the report module leaves it (through JSON, as AWX keeps it)."""
    import datetime
    import json
    from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report
    with open(os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'verify', 'lab-stock.json')) as handle:
        run = verify_report.build_run(json.load(handle), 'stock',
                                      datetime.datetime(2026, 11, 22, 19, 45, tzinfo=datetime.timezone.utc))
    return json.loads(json.dumps(verify_report.artifacts(run)))


def earlier_job_artifacts():
    """Every key a job of the collection leaves in its artifacts, each with a value of its shape: the verify role's
    (the report module's artifacts) and every set_stats key of the roles and playbooks (wan_tune, migrate)."""
    found = stock_summary()
    for key in specs_module.artifacts():
        found.setdefault(key, {'h1': {'state': 'present', 'changed': True}})
    return found


def test_the_artifacts_of_an_earlier_job_are_not_refused_by_any_playbook(monkeypatch):
    """AWX passes a job's artifacts to the next job of a workflow as extra variables: wan_tune.yml (every input
    checked), verify.yml and migrate.yml (the names, names_only) must take them."""
    artifacts = earlier_job_artifacts()
    assert {'verify', 'verify_baseline', 'wan_tune', 'migrate'} <= set(artifacts)
    monkeypatch.setattr(vi, 'extra_var_names', lambda loader: frozenset(artifacts) | {'rate', 'rtt'})
    variables = dict(artifacts, inventory_hostname='a', rate='1g', rtt='98')
    for args in ({}, {'names_only': True}):
        result = run_action(dict(variables), args=args)
        assert result.get('failed') is not True and 'warnings' not in result, (args, result)
    assert check(**artifacts) == []
    # the names alone: nothing of them is undeclared, nor a slip of a declared name
    assert vi.name_checks(variables, frozenset(artifacts)) == ([], [])


def test_an_artifact_name_with_another_value_is_still_a_typo(monkeypatch):
    # -e wan_tune=absent meant wan_tune_state=absent: wan_tune is declared only as the job artifact, a mapping
    monkeypatch.setattr(vi, 'extra_var_names', lambda loader: frozenset(('wan_tune',)))
    result = run_action({'inventory_hostname': 'a', 'wan_tune': 'absent'}, args={'names_only': True})
    assert result['failed'] is True and '- wan_tune: no role or playbook of bdp.wan_tune declares this variable' \
        in result['msg'] and 'did you mean wan_tune_state' in result['msg'], result['msg']


@pytest.mark.parametrize('value, start', [
    ([1], 'verify_baseline: is a list, not a verify summary; expected the verify_baseline artifact of a run labelled '
          'stock'),
    ('{"pair": {"key": "a -> b"}}', 'verify_baseline: is a mapping without a pairs list (its keys: pair)'),
    ({'label': 'stock', 'id': 'x', 'time': '2026-11-22T19:45:00Z', 'pairs': [{'status': 'PASS'}]},
     'verify_baseline: pairs[0] has no key'),
])
def test_a_bad_verify_baseline_is_refused_by_the_playbook_and_the_role_check(value, start):
    # wan_tune.yml checks it with every input (the canary runs the verify role); the role's own check, before any test
    assert only(check(verify_baseline=value)).startswith(start)
    result = run_action({'inventory_hostname': 'a', 'verify_baseline': value, 'verify_streams': 1},
                        args={'role': 'verify'})
    assert result.get('failed') is not True and len(result['problems']) == 1
    assert result['problems'][0].startswith(start) and result['msg'] == result['problems'][0]


def test_a_stock_summary_passes_both_checks_as_a_mapping_or_its_json_text():
    import json
    summary = stock_summary()['verify_baseline']
    for value in (summary, json.dumps(summary), {}, ''):
        assert check(verify_baseline=value) == []
        result = run_action({'inventory_hostname': 'a', 'verify_baseline': value}, args={'role': 'verify'})
        assert result['problems'] == [], result


@pytest.mark.parametrize('interpreter, what', [
    ('/usr/libexec/platform-python', "EL 8's platform-python, Python 3.6,"),
    ('/usr/bin/python3.6', 'Python 3.6,'),
    ('/usr/bin/python2', 'Python 2,'),
])
def test_an_interpreter_too_old_for_ansible_core_is_refused_with_what_to_install(interpreter, what):
    problem = only(check(ansible_python_interpreter=interpreter))
    assert problem == ("ansible_python_interpreter: '%s' is %s which cannot run ansible-core 2.19's modules; expected "
                       'Python 3.8 or later, such as /usr/bin/python3.11 (on EL 8: dnf install python3.11 or '
                       'python3.12 from AppStream; docs/platforms.md).' % (interpreter, what))


@pytest.mark.parametrize('interpreter', ['/usr/bin/python3.11', '/usr/bin/python3', 'auto', 'auto_silent',
                                         '/usr/bin/python3.8', '/usr/bin/python'])
def test_an_interpreter_whose_path_does_not_say_it_is_too_old_passes(interpreter):
    assert check(ansible_python_interpreter=interpreter) == []
