# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support matrix (plugins/module_utils/common/platforms.py): rows from facts, the limits' refusals, and the
matrix in docs/platforms.md, README and the roles' meta/main.yml naming the same rows."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import platforms

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'platforms')
# galaxy_info.platforms' names and versions of each row
GALAXY = {'Debian 12': ('Debian', 'bookworm'), 'Debian 13': ('Debian', 'trixie'), 'Ubuntu 22.04': ('Ubuntu', 'jammy'),
          'Ubuntu 24.04': ('Ubuntu', 'noble'), 'EL 8': ('EL', '8'), 'EL 9': ('EL', '9')}


def facts(distribution, version, major=None):
    return {'distribution': distribution, 'distribution_version': version,
            'distribution_major_version': major or version.split('.')[0]}


@pytest.mark.parametrize('given, row', [
    (facts('Debian', '12.8'), 'Debian 12'),
    (facts('Debian', '13.1'), 'Debian 13'),
    (facts('Ubuntu', '22.04'), 'Ubuntu 22.04'),
    (facts('Ubuntu', '24.04'), 'Ubuntu 24.04'),
    (facts('OracleLinux', '8.10'), 'EL 8'),
    (facts('AlmaLinux', '9.5'), 'EL 9'),
    (facts('Ubuntu', '22.10'), None),            # not an LTS release: outside the matrix
    (facts('Debian', '11.11'), None),
    (facts('CentOS', '9'), None),                # CentOS Stream: not a row
    (facts('Fedora', '41'), None),
    ({}, None),
    (None, None),
])
def test_rows(given, row):
    assert platforms.row(given) == row


def test_every_fixture_is_the_row_its_name_says():
    for name in os.listdir(FIXTURES):
        with open(os.path.join(FIXTURES, name)) as handle:
            recorded = json.load(handle)
        distribution, version = name[:-len('.json')].split('-')
        assert recorded['distribution'].lower() == distribution
        assert platforms.row(recorded) is not None
        assert recorded['distribution_version'].startswith(version)
        assert recorded['python']['version']['minor'] >= 8      # ansible-core 2.19's modules need Python 3.8+


# A limit as LIMITS holds one (there is none now: the TLS client needs no rsync-ssl since rsynctls.client_command
# runs openssl s_client as rsync's connect program), to prove how problem() reads and words one.
LIMIT = {'role': 'rsync_daemon', 'rows': ('EL 9',), 'variable': 'rsync_daemon_transport', 'values': ('tls', 'both'),
         'why': 'its example lacks what the TLS daemon needs', 'works': 'rsync_daemon_transport=plain'}


def test_a_limit_names_the_host_the_platform_the_variable_why_and_what_works(monkeypatch):
    monkeypatch.setattr(platforms, 'LIMITS', (LIMIT,))
    problem = platforms.problem('rsync_daemon', 'rx1', facts('Rocky', '9.5'), {'rsync_daemon_transport': 'both'})
    assert problem.startswith('rx1: rsync_daemon_transport=both is not supported on Rocky 9.5 (EL 9): its example '
                              'lacks what the TLS daemon needs')
    assert 'What works: rsync_daemon_transport=plain (docs/platforms.md)' in problem
    assert platforms.problem('rsync_daemon', 'rx1', facts('Rocky', '9.5'), {'rsync_daemon_transport': 'plain'}) is None
    assert platforms.problem('rsync_daemon', 'rx1', facts('Rocky', '8.9'), {'rsync_daemon_transport': 'tls'}) is None
    assert problem.endswith('Nothing was changed on this host.')
    assert 'Debian 12.8 (' not in (platforms.problem('rsync_daemon', 'rx1', facts('Debian', '12.8'), {}) or '')


@pytest.mark.parametrize('role, given, inputs', [
    ('rsync_daemon', facts('RedHat', '8.10'), {'rsync_daemon_transport': 'plain'}),
    ('rsync_daemon', facts('Debian', '12.8'), {'rsync_daemon_transport': 'tls'}),
    ('rsync_daemon', facts('Ubuntu', '22.04'), {'rsync_daemon_transport': 'both'}),
    ('rsync_daemon', facts('CentOS', '7.9'), {'rsync_daemon_transport': 'tls'}),   # outside the matrix: no limit
    # the TLS client is rsync with openssl s_client (no rsync-ssl): EL 8's rsync 3.1.3 and EL 9's 3.2.3 serve
    ('rsync_daemon', facts('OracleLinux', '8.10'), {'rsync_daemon_transport': 'tls'}),
    ('rsync_daemon', facts('Rocky', '9.5'), {'rsync_daemon_transport': 'both'}),
    ('migrate', facts('RedHat', '8.10'), {'migrate_transport': 'tls'}),
    ('migrate', facts('AlmaLinux', '9.5'), {'migrate_transport': 'tls'}),
    ('tcp_buffers', facts('RedHat', '8.10'), {}),
])
def test_what_is_not_limited(role, given, inputs):
    assert platforms.problem(role, 'h', given, inputs) is None


def test_the_matrix_is_the_same_in_the_docs_and_the_roles_meta():
    text = open(os.path.join(ROOT, 'docs', 'platforms.md')).read()
    readme = open(os.path.join(ROOT, 'README.md')).read()
    for name, _distributions, _version in platforms.ROWS:
        assert '| %s |' % name in text, name
        assert name in readme, name
    for limit in platforms.LIMITS:
        for name in limit['rows']:
            assert '%s: %s=%s' % (name, limit['variable'], '|'.join(limit['values'])) in text, (name, limit)
    for role in sorted(os.listdir(os.path.join(ROOT, 'roles'))):
        meta = os.path.join(ROOT, 'roles', role, 'meta', 'main.yml')
        if not os.path.exists(meta):
            continue
        with open(meta) as handle:
            listed = dict((entry['name'], [str(v) for v in entry['versions']])
                          for entry in yaml.safe_load(handle)['galaxy_info']['platforms'])
        for name, (galaxy, version) in GALAXY.items():
            assert version in listed.get(galaxy, []), (role, name)


@pytest.mark.parametrize('value, too_old', [
    ('/usr/libexec/platform-python', True), ('/usr/bin/python3.6', True), ('/usr/bin/python3.7', True),
    ('python2.7', True), ('/usr/bin/python2', True),
    ('/usr/bin/python3.8', False), ('/usr/bin/python3.11', False), ('python3.12', False), ('/usr/bin/python3', False),
    ('/usr/bin/python', False), ('auto', False), ('auto_legacy_silent', False), ('', False), (None, False), (3, False),
    ('/opt/python3.6/bin/python3.11', False),
])
def test_an_interpreter_is_too_old_only_where_its_path_says(value, too_old):
    assert (platforms.interpreter_problem(value) is not None) == too_old
