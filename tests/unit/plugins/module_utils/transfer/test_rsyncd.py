# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/transfer/rsyncd.py: the daemon's input checks, rsyncd.conf, the host's version order and the CVE verdict."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd

USERS = [{'name': 'migrate', 'password': 's3cret-Pa55'}]
WRITABLE = {'name': 'incoming', 'path': '/srv/incoming', 'read_only': False, 'auth_users': ['migrate'],
            'hosts_allow': ['198.18.3.0/24']}


def settings(**kwargs):
    base = {'modules': [dict(WRITABLE)], 'users': USERS}
    base.update(kwargs)
    return base


def problems(**kwargs):
    plan, found = rsyncd.check(settings(**kwargs))
    assert (plan is None) == bool(found)
    return found


def one_problem(**kwargs):
    found = problems(**kwargs)
    assert len(found) == 1, found
    return found[0]


def test_good_settings_give_a_plan_with_defaults():
    plan, found = rsyncd.check(settings(modules=[dict(WRITABLE), {'name': 'pub', 'path': '/srv/pub',
                                                                  'hosts_allow': ['198.18.3.12']}]))
    assert found == []
    assert plan['port'] == 873 and plan['address'] == 'all' and plan['streams'] == 4
    assert plan['users'] == {'migrate': 's3cret-Pa55'}
    writable, public = plan['modules']
    assert writable['read_only'] is False and writable['max_connections'] == 4
    assert public['read_only'] is True and public['auth_users'] == []


def test_strings_as_from_the_command_line_mean_what_they_say():
    plan, found = rsyncd.check(settings(port='8873', streams='16', modules=[dict(WRITABLE, read_only='no')]))
    assert found == []
    assert plan['port'] == 8873 and plan['streams'] == 16 and plan['modules'][0]['read_only'] is False
    assert plan['modules'][0]['max_connections'] == 16


@pytest.mark.parametrize('module, needle', [
    (dict(WRITABLE, auth_users=[]), 'read_only is false, but auth_users is empty'),
    (dict(WRITABLE, hosts_allow=[]), 'read_only is false, but hosts_allow is empty'),
    ({'name': 'x', 'path': '/srv/x', 'read_only': False}, 'auth_users and hosts_allow are empty'),
])
def test_no_anonymous_writable_module(module, needle):
    message = one_problem(modules=[module])
    assert needle in message and 'rsync_daemon_modules[0]' in message and 'expected both set' in message


def test_global_hosts_allow_serves_a_writable_module():
    plan, found = rsyncd.check(settings(modules=[dict(WRITABLE, hosts_allow=[])], hosts_allow=['198.18.3.0/24']))
    assert found == [] and plan['modules'][0]['hosts_allow'] == ['198.18.3.0/24']


def test_a_module_nobody_may_reach_is_refused():
    assert 'hosts_allow is empty and so is rsync_daemon_hosts_allow' in one_problem(
        modules=[{'name': 'pub', 'path': '/srv/pub'}])


@pytest.mark.parametrize('path, reason', [
    ('/usr/local/data', 'is under /usr'), ('/etc', 'is under /etc'), ('/boot/x', 'is under /boot'),
    ('/srv/../etc/x', 'is under /etc'), ('//usr//share', 'is under /usr'), ('/', 'is the root directory'),
    ('srv/data', 'is not an absolute path'), ('/srv/a\nb', 'control character'),
])
def test_protected_and_bad_paths(path, reason):
    message = one_problem(modules=[dict(WRITABLE, path=path)])
    assert reason in message and '.path' in message


def test_paths_that_only_look_alike_are_accepted():
    for path in ('/usr2/data', '/etcetera', '/srv/usr', '/bootstrap'):
        assert problems(modules=[dict(WRITABLE, path=path)]) == [], path


@pytest.mark.parametrize('options', ['SO_SNDBUF=1048576', 'SO_KEEPALIVE,so_rcvbuf=4194304', 'SO_RcvBuf=1'])
def test_socket_buffers_are_refused_with_the_reason(options):
    message = one_problem(socket_options=options)
    assert 'rsync_daemon_socket_options' in message and 'autotuning' in message and 'caps the TCP window' in message


def test_other_socket_options_pass():
    plan, found = rsyncd.check(settings(socket_options='SO_KEEPALIVE'))
    assert found == [] and plan['socket_options'] == 'SO_KEEPALIVE'


def test_max_connections_below_the_streams():
    message = one_problem(streams=8, modules=[dict(WRITABLE, max_connections=4)])
    assert 'below the 8 parallel streams' in message and 'at least 8' in message
    assert problems(streams=8, modules=[dict(WRITABLE, max_connections=12)]) == []


def test_users_without_password_and_unknown_auth_users():
    assert 'has no password in rsync_daemon_users' in one_problem(
        modules=[dict(WRITABLE, auth_users=['someone'])])
    message = one_problem(users=[{'name': 'migrate', 'password': ''}])
    assert 'rsync_daemon_users[0].password (user migrate)' in message
    # the password is never part of a message
    found = problems(users=[{'name': 'migrate', 'password': 'line\nbreak-secret'}], port=0)
    assert found and not any('secret' in item for item in found)


def test_unknown_keys_and_bad_scalars():
    found = problems(modules=[dict(WRITABLE, readonly=False)], port=70000, streams=0, address='198.18.3.999',
                     auth_digest='sha3', hosts_allow='198.18.3.0/24')
    text = '\n'.join(found)
    for needle in ('unknown key readonly', 'rsync_daemon_port: 70000 is not a TCP port',
                   'rsync_daemon_streams: 0', "rsync_daemon_address: '198.18.3.999' is not an IP address",
                   "rsync_daemon_auth_digest: 'sha3'", 'rsync_daemon_hosts_allow: ', 'is not a list'):
        assert needle in text, (needle, found)


def test_bad_names_and_duplicates():
    assert 'is not a module name' in one_problem(modules=[dict(WRITABLE, name='global')])
    assert 'is given twice' in one_problem(modules=[dict(WRITABLE), dict(WRITABLE)])
    assert 'holds a space or a comma' in one_problem(modules=[dict(WRITABLE, hosts_allow=['198.18.3.0/24 10.0.0.0/8'])])


def test_render_config():
    plan, found = rsyncd.check(settings(address='198.18.3.11', modules=[dict(WRITABLE, uid='xfer', gid='xfer',
                                                                             numeric_ids=True, comment='drop')]))
    text = rsyncd.render_config(plan, header='#\n# Ansible managed\n#\n')
    assert text.startswith('#\n# Ansible managed\n#\n')
    for line in ('port = 873', 'address = 198.18.3.11', 'use chroot = yes', 'list = no', 'reverse lookup = no',
                 'read only = yes', 'hosts deny = *', 'secrets file = /etc/rsyncd.secrets', 'auth digest = sha256',
                 '[incoming]', '    path = /srv/incoming', '    comment = drop', '    read only = no',
                 '    auth users = migrate', '    hosts allow = 198.18.3.0/24 198.18.3.11', '    uid = xfer',
                 '    hosts deny = *', '    numeric ids = yes', '    max connections = 4'):
        assert line in text.split('\n'), line          # a whole line: 'hosts deny = *' is in '    hosts deny = *' too
    assert 's3cret' not in text and 'socket options =' not in text
    bare = rsyncd.render_config(dict(plan, address='all', allow_self=False), auth_digest=False)
    assert 'auth digest' not in bare and 'address =' not in bare and '    hosts allow = 198.18.3.0/24\n' in bare
    assert '127.0.0.1 ::1' in rsyncd.render_config(dict(plan, address='all'))


def test_render_secrets():
    assert rsyncd.render_secrets({'b': 'x:y', 'a': 'p'}) == 'a:p\nb:x:y\n'


def test_restart_only_for_start_up_settings():
    old = 'port = 873\nuse chroot = yes\n[a]\n    path = /srv/a\n'
    assert not rsyncd.restart_needed(old, old.replace('/srv/a', '/srv/b'))
    assert not rsyncd.restart_needed(old, '# header\n' + old)
    assert rsyncd.restart_needed(old, old.replace('873', '8873'))
    assert rsyncd.restart_needed(old, 'address = 198.18.3.11\n' + old)
    assert rsyncd.restart_needed(None, old)


class Host(object):
    """A module's get_bin_path and run_command: ``answers`` {program: (rc, out)} stand in for the programs, each call
    recorded in ``calls``; without answers the programs of this machine run (only those named in ``programs``)."""

    def __init__(self, programs=('dpkg',), answers=None):
        self.programs, self.answers, self.calls = programs, answers, []

    def get_bin_path(self, name):
        if name not in self.programs:
            return None
        return '/usr/bin/' + name if self.answers is not None else shutil.which(name)

    def run_command(self, argv):
        self.calls.append(argv)
        if self.answers is not None:
            rc, out = self.answers[argv[0].rsplit('/', 1)[-1]]
            return rc, out, ''
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              check=False)
        return done.returncode, done.stdout, done.stderr


def dpkg_orders(version, floor):
    return rsyncd.version_at_least(Host(), version, floor)


needs_dpkg = pytest.mark.skipif(not shutil.which('dpkg'), reason='dpkg is not installed')


def test_the_host_orders_the_versions_with_dpkg_or_rpm():
    dpkg = Host(answers={'dpkg': (0, '')})
    assert rsyncd.version_at_least(dpkg, '3.2.7-1+deb12u1', '3.2.7-1+deb12u1') is True
    assert dpkg.calls == [['/usr/bin/dpkg', '--compare-versions', '3.2.7-1+deb12u1', 'ge', '3.2.7-1+deb12u1']]
    assert rsyncd.version_at_least(Host(answers={'dpkg': (1, '')}), '3.2.7-1', '3.2.7-1+deb12u1') is False
    # 2: dpkg cannot read a version; it is not taken as older or newer
    assert rsyncd.version_at_least(Host(answers={'dpkg': (2, '')}), 'x:1.0', '3.4.0') is None
    rpm = Host(programs=('rpm',), answers={'rpm': (0, '-1\n')})
    assert rsyncd.version_at_least(rpm, '3.2.3', '3.4.0') is False
    assert rpm.calls == [['/usr/bin/rpm', '--eval', '%{lua: print(rpm.vercmp("3.2.3", "3.4.0"))}']]
    assert rsyncd.version_at_least(Host(programs=('rpm',), answers={'rpm': (0, '1\n')}), '3.4.1', '3.4.0') is True
    # nothing but version characters goes into rpm's Lua expression
    quoted = Host(programs=('rpm',), answers={'rpm': (0, '1\n')})
    assert rsyncd.version_at_least(quoted, '3.4.0") os.exit(1) --', '3.4.0') is None and quoted.calls == []
    assert rsyncd.version_at_least(Host(programs=()), '3.4.0', '3.4.0') is None


@needs_dpkg
@pytest.mark.parametrize('version, floor, expected', [
    ('3.2.7-1+deb12u1', '3.2.7-1', True), ('3.2.7-1', '3.2.7-1+deb12u1', False),
    ('3.2.7-1+deb12u1~bpo', '3.2.7-1+deb12u1', False), ('3.5.0+ds1-0+deb12u1', '3.2.7-1+deb12u1', True),
    ('1:3.0-1', '3.9-1', True), ('3.4.0~rc1', '3.4.0', False), ('3.2.10', '3.2.9', True), ('3.4', '3.4.0', False),
])
def test_this_machines_dpkg_orders_the_versions_that_decide(version, floor, expected):
    assert dpkg_orders(version, floor) is expected


VERSION_OUTPUT = """rsync  version 3.2.7  protocol version 31
Copyright (C) 1996-2022 by Andrew Tridgell, Wayne Davison, and others.
Daemon auth list:
    sha512 sha256 sha1 md5 md4

rsync comes with ABSOLUTELY NO WARRANTY.
"""


def test_version_output():
    assert rsyncd.upstream_version(VERSION_OUTPUT) == '3.2.7'
    assert rsyncd.auth_list(VERSION_OUTPUT) == ['sha512', 'sha256', 'sha1', 'md5', 'md4']
    assert rsyncd.upstream_version('') is None and rsyncd.auth_list('rsync  version 3.1.3') == []


@needs_dpkg
def test_cve_upstream_fixed():
    assert rsyncd.cve_status('3.4.0', at_least=dpkg_orders)['fixed'] is True
    assert rsyncd.cve_status('3.5.0', '3.5.0+ds1-0+deb12u1', 'debian', '12', at_least=dpkg_orders)['fixed'] is True
    assert rsyncd.cve_status('3.3.0', '3.3.0-1', 'debian', '13', at_least=dpkg_orders)['fixed'] is False
    assert rsyncd.cve_status('3.4.0~rc1', at_least=dpkg_orders)['fixed'] is False


@needs_dpkg
def test_cve_debian_12_backport():
    fixed = rsyncd.cve_status('3.2.7', '3.2.7-1+deb12u1', 'debian', '12', at_least=dpkg_orders)
    assert fixed['fixed'] is True and '3.2.7-1+deb12u1' in fixed['reason']
    assert rsyncd.cve_status('3.2.7', '3.2.7-1+deb12u2', 'debian', '12', at_least=dpkg_orders)['fixed'] is True
    old = rsyncd.cve_status('3.2.7', '3.2.7-1', 'debian', '12', at_least=dpkg_orders)
    assert old['fixed'] is False and 'CVE-2024-12084' in old['reason'] and 'backport' in old['reason']
    # the backport of Debian 12 says nothing about another release
    assert rsyncd.cve_status('3.2.7', '3.2.7-1+deb12u1', 'ubuntu', '24.04', at_least=dpkg_orders)['fixed'] is False


def test_cve_changelog_backport():
    rpm = Host(programs=('rpm',), answers={'rpm': (0, '-1\n')})

    def rpm_orders(version, floor):
        return rsyncd.version_at_least(rpm, version, floor)
    changelog = 'rsync (3.2.3-20.el9_5.1)\n' + '\n'.join('- fix %s' % cve for cve in rsyncd.CVES)
    assert rsyncd.cve_status('3.2.3', '0:3.2.3-20.el9_5.1', 'rhel', '9.5', changelog, rpm_orders)['fixed'] is True
    partial = changelog.replace('CVE-2024-12747', '')
    assert rsyncd.cve_status('3.2.3', '0:3.2.3-20.el9_5', 'rhel', '9.5', partial, rpm_orders)['fixed'] is False


def test_cve_unknown():
    assert rsyncd.cve_status(None)['fixed'] is None
    # a host whose package manager cannot order the versions: not known, rather than a false alarm
    unknown = rsyncd.cve_status('3.4.1', '3.4.1-1', 'debian', '13', at_least=lambda version, floor: None)
    assert unknown['fixed'] is None and 'could not order' in unknown['reason']
