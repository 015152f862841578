# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support matrix, written here once: its rows (a distribution and version a host can run), what a role cannot
do on a row (with why and what would work), and the Python a target needs.  The filter bdp.wan_tune.platform_problem
reads the limits in roles/rsync_daemon/tasks/set_vars.yml and roles/migrate/tasks/platform.yml, so a row a role cannot
serve is refused before the role changes anything (the rsync daemon's also in the validation play of
playbooks/wan_tune.yml, through its tasks/plan.yml); the action plugin validate_inputs reads interpreter_problem.
docs/platforms.md describes it; tests/unit/plugins/module_utils/common/test_platforms.py checks that the docs, README
and the roles' meta/main.yml name the same rows.
"""

import re

# Enterprise Linux: the rebuilds and Oracle's build report their own ansible_facts.distribution.
EL = ('RedHat', 'OracleLinux', 'Rocky', 'AlmaLinux')

# (row, the distributions of ansible_facts.distribution, the version): Ubuntu's rows are its LTS releases
# (distribution_version), the others' their major version (distribution_major_version).
ROWS = (
    ('Debian 12', ('Debian',), '12'),
    ('Debian 13', ('Debian',), '13'),
    ('Ubuntu 22.04', ('Ubuntu',), '22.04'),
    ('Ubuntu 24.04', ('Ubuntu',), '24.04'),
    ('EL 8', EL, '8'),
    ('EL 9', EL, '9'),
)

# What a role cannot do on a row: the role, the rows, the variable and the values that need what the row lacks, why,
# and what would work ({'role', 'rows', 'variable', 'values', 'why', 'works'}).  A role absent here serves every row.
# None now: the TLS daemon and the TLS sender on EL 8 and 9 were limits while the TLS client was rsync-ssl (EL 8's
# rsync 3.1.3 has none, EL 9's 3.2.3 no RSYNC_SSL_KEY); the client is rsync with openssl s_client as its connect
# program now (rsynctls.client_command), which every row has.
LIMITS = ()


def row(facts):
    """The row of the support matrix a host is on ('EL 9'), from its ansible_facts; None outside the matrix."""
    facts = facts if isinstance(facts, dict) else {}
    distribution = str(facts.get('distribution', ''))
    for name, distributions, version in ROWS:
        if distribution not in distributions:
            continue
        have = str(facts.get('distribution_version' if distribution == 'Ubuntu' else 'distribution_major_version',
                             ''))
        if have == version:
            return name
    return None


def describe(facts):
    """'Rocky 8.9 (EL 8)': how a message names a host's platform."""
    facts = facts if isinstance(facts, dict) else {}
    text = '%s %s' % (facts.get('distribution', 'an unknown distribution'),
                      facts.get('distribution_version', facts.get('distribution_major_version', '')))
    name = row(facts)
    return text.strip() + (' (%s)' % name if name and name.split()[0] != facts.get('distribution') else '')


def problem(role, host, facts, inputs=None):
    """Why ``role`` refuses ``host`` with these ansible_facts and role inputs ({variable: value}), or None."""
    inputs = inputs if isinstance(inputs, dict) else {}
    here = row(facts)
    for limit in LIMITS:
        if limit['role'] != role or here not in limit['rows']:
            continue
        value = inputs.get(limit['variable'])
        if value not in limit['values']:
            continue
        return ('%s: %s=%s is not supported on %s: %s. What works: %s (docs/platforms.md). Nothing was changed on '
                'this host.' % (host, limit['variable'], value, describe(facts), limit['why'], limit['works']))
    return None


# Python on the targets: ansible-core 2.19 runs its modules with Python 3.8 or later.  A path that names its version
# (python3.6, python2.7, python2) or EL 8's platform-python (3.6) tells; python3, python and auto do not.
PYTHON_MIN = (3, 8)
_PYTHON_PATH = re.compile(r'(?:^|/)(?:(?P<platform>platform-python)|python(?P<major>[0-9])(?:\.(?P<minor>[0-9]+))?)$')
PYTHON_HELP = ('Python %d.%d or later, such as /usr/bin/python3.11 (on EL 8: dnf install python3.11 or python3.12 from '
               'AppStream; docs/platforms.md)' % PYTHON_MIN)


def interpreter_problem(value):
    """Why ansible_python_interpreter cannot run the collection's modules, when its path says so; None otherwise."""
    if not isinstance(value, str):
        return None
    match = _PYTHON_PATH.search(value.strip())
    if not match:
        return None
    if match.group('platform'):
        what = "EL 8's platform-python, Python 3.6,"
    else:
        major, minor = int(match.group('major')), match.group('minor')
        if (major, int(minor or 99)) >= PYTHON_MIN or (minor is None and major >= 3):
            return None
        what = 'Python %d%s,' % (major, '.' + minor if minor is not None else '')
    return ('ansible_python_interpreter: %r is %s which cannot run ansible-core 2.19\'s modules; expected %s.'
            % (value, what, PYTHON_HELP))
