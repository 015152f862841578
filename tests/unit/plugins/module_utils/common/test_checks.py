# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/common/checks.py: the one TCP port rule and the one stream-count rule."""

from __future__ import annotations

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks


@pytest.mark.parametrize('value, port', [
    (1, 1), (65535, 65535), ('873', 873), (' 873 ', 873), ('+873', 873), ('00022', 22),
])
def test_a_port_is_a_whole_number_from_1_to_65535(value, port):
    assert checks.read_port(value) == port and checks.is_port(value)


@pytest.mark.parametrize('value', [
    0, 65536, -1, '0', '65536', '-22', '22x', '2 2', '', None, True, False, 22.0, '22.0', [22],
    '\u0663',                   # an Arabic-Indic digit: str.isdigit() says yes, the port rule says no
    '9' * 5000,                 # more digits than int() takes: refused, not a crash
])
def test_anything_else_is_not_a_port(value):
    assert checks.read_port(value) is None and not checks.is_port(value)


def test_port_help_names_the_range_the_default_and_the_extra():
    assert checks.port_help() == 'a TCP port: a whole number from 1 to 65535'
    assert checks.port_help(default=874, extra=', other than rsync_daemon_port') == \
        'a TCP port: a whole number from 1 to 65535 (default 874), other than rsync_daemon_port'


@pytest.mark.parametrize('value, good', [
    (1, True), (128, True), ('4', True), (0, False), (129, False), ('4x', False), (True, False),
])
def test_streams_run_from_1_to_128(value, good):
    assert checks.is_streams(value) is good


def test_streams_help():
    assert checks.streams_help(default=1) == 'a whole number of streams from 1 to 128 (default 1)'


@pytest.mark.parametrize('port', ['+873', ' 873 ', 873])
def test_the_validation_play_and_the_daemon_check_read_a_port_alike(port):
    from ansible_collections.bdp.wan_tune.plugins.action import validate_inputs
    problems = validate_inputs.check_host({'rsync_daemon': True, 'rsync_daemon_port': port, 'tcp_buffers_rate': '1g',
                                           'tcp_buffers_rtt': '98', 'rsync_daemon_hosts_allow': ['198.18.0.0/15'],
                                           'rsync_daemon_modules': [{'name': 'x', 'path': '/srv/x'}]})
    assert [problem for problem in problems if 'rsync_daemon_port' in problem] == [], problems
    bad = validate_inputs.check_host({'rsync_daemon': True, 'rsync_daemon_port': '+87300'})
    assert any("rsync_daemon_port: '+87300' is above 65535; expected " + checks.port_help(default=873) in problem
               for problem in bad), bad
