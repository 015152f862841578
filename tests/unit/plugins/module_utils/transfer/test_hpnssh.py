# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/transfer/hpnssh.py: source selection, input checks, option probing verdicts, configuration text."""

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import hpnssh

UBUNTU = {'os_family': 'Debian', 'distribution': 'Ubuntu', 'distribution_version': '24.04',
          'distribution_major_version': '24', 'pkg_mgr': 'apt'}
DEBIAN = {'os_family': 'Debian', 'distribution': 'Debian', 'distribution_version': '12.8',
          'distribution_major_version': '12', 'pkg_mgr': 'apt'}
FEDORA = {'os_family': 'RedHat', 'distribution': 'Fedora', 'distribution_version': '41',
          'distribution_major_version': '41', 'pkg_mgr': 'dnf5'}
ROCKY9 = {'os_family': 'RedHat', 'distribution': 'Rocky', 'distribution_version': '9.4',
          'distribution_major_version': '9', 'pkg_mgr': 'dnf'}
CENTOS7 = {'os_family': 'RedHat', 'distribution': 'CentOS', 'distribution_version': '7.9',
           'distribution_major_version': '7', 'pkg_mgr': 'yum'}
ARCH = {'os_family': 'Archlinux', 'distribution': 'Archlinux', 'pkg_mgr': 'pacman'}
REPO = {'url': 'https://repo.example.invalid/Debian_12/', 'key': 'https://repo.example.invalid/Release.key'}
SHA = 'sha256:' + 'a' * 64


# ----------------------------------------------------------------------------- source selection

def test_ubuntu_takes_the_ppa():
    plan = hpnssh.plan(UBUNTU)
    assert plan['source'] == 'ppa' and plan['manager'] == 'apt'
    assert plan['packages'] == ['hpnssh-server', 'hpnssh-client']
    assert plan['files'] == [] and plan['repository'] == {}


def test_fedora_and_el_take_copr_with_the_rpm_names():
    for facts in (FEDORA, ROCKY9):
        plan = hpnssh.plan(facts)
        assert plan['source'] == 'copr' and plan['manager'] == 'dnf'
        assert plan['packages'] == ['hpnssh-server', 'hpnssh-clients']


def test_client_only_and_server_only():
    assert hpnssh.plan(UBUNTU, server=False)['packages'] == ['hpnssh-client']
    assert hpnssh.plan(FEDORA, client=False)['packages'] == ['hpnssh-server']
    assert hpnssh.plan(UBUNTU, packages=['hpnssh'])['packages'] == ['hpnssh']


def test_debian_without_repository_or_files_says_what_to_give():
    with pytest.raises(hpnssh.PlanError) as exc:
        hpnssh.plan(DEBIAN)
    message = str(exc.value)
    assert 'no public HPN-SSH package source for Debian 12.8' in message
    assert 'hpn_ssh_repository' in message and 'hpn_ssh_package_files' in message and '.deb' in message
    assert 'does not build HPN-SSH from source' in message


def test_debian_takes_the_operators_repository_then_files():
    plan = hpnssh.plan(DEBIAN, repository=REPO)
    assert plan['source'] == 'repository' and plan['repository'] == REPO
    assert plan['packages'] == ['hpnssh-server', 'hpnssh-client']
    files = ['/srv/hpnssh-server_18.6_amd64.deb', {'url': 'https://x.invalid/c.deb', 'checksum': SHA}]
    plan = hpnssh.plan(DEBIAN, files=files)
    assert plan['source'] == 'files' and plan['packages'] == []
    assert [item['name'] for item in plan['files']] == ['hpnssh-server_18.6_amd64.deb', 'c.deb']
    assert plan['files'][1]['checksum'] == SHA


def test_explicit_sources_the_distribution_cannot_use():
    with pytest.raises(hpnssh.PlanError, match='not Ubuntu'):
        hpnssh.plan(DEBIAN, source='ppa')
    with pytest.raises(hpnssh.PlanError, match='does not use dnf'):
        hpnssh.plan(UBUNTU, source='copr')
    with pytest.raises(hpnssh.PlanError, match='are not .deb files|is not .deb files'):
        hpnssh.plan(DEBIAN, source='files', files=['/srv/hpnssh-server.rpm'])
    with pytest.raises(hpnssh.PlanError, match='hpn_ssh_repository is empty'):
        hpnssh.plan(FEDORA, source='repository')
    with pytest.raises(hpnssh.PlanError, match='knows apt'):
        hpnssh.plan(ARCH)


def test_old_el_has_no_copr_and_explicit_files_win_over_the_ppa():
    with pytest.raises(hpnssh.PlanError, match='no public HPN-SSH package source for CentOS 7.9'):
        hpnssh.plan(CENTOS7)
    plan = hpnssh.plan(UBUNTU, source='files', files=['/srv/a.deb'])
    assert plan['source'] == 'files'


# ----------------------------------------------------------------------------- inputs

def test_good_inputs_have_no_problems():
    assert hpnssh.check_inputs({}) == []
    assert hpnssh.check_inputs({'hpn_ssh_port': '2022', 'hpn_ssh_server': 'no', 'hpn_ssh_none_cipher': 'False',
                                'hpn_ssh_firewall': 0, 'hpn_ssh_allow_users': ['xfer', '*@198.18.0.0/15'],
                                'hpn_ssh_repository': REPO, 'hpn_ssh_source': 'repository',
                                'hpn_ssh_package_files': [{'url': 'https://h.invalid/a.deb', 'checksum': SHA}],
                                'hpn_ssh_sshd_options': {'MaxSessions': 20, 'clientaliveinterval': '30',
                                                         'X11Forwarding': False, 'TcpRcvBufPoll': 'yes'}}) == []


def test_sshd_options_are_written_as_sshd_reads_them():
    lines, dropped = hpnssh.server_lines({'port': 2222, 'extra': {'X11Forwarding': False, 'MaxSessions': 20}}, set())
    assert ('X11Forwarding', 'no') in lines and ('MaxSessions', '20') in lines


def test_the_documented_keywords_and_the_roles_own_lines_do_not_overlap():
    lower = {name.lower() for name in hpnssh.SSHD_KEYWORDS}
    assert not lower & {name.lower() for name in hpnssh.SSHD_ROLE_KEYWORDS}
    written, dummy = hpnssh.server_lines({'port': 2222, 'host_keys': ['/k'], 'allow_users': ['a'],
                                          'allow_groups': ['g']}, {'NoneEnabled'})
    assert {keyword.lower() for keyword, value in written} <= {name.lower() for name in hpnssh.SSHD_ROLE_KEYWORDS}


@pytest.mark.parametrize('values, words', [
    ({'hpn_ssh_port': 22}, ['hpn_ssh_port: 22', 'other than 22']),
    ({'hpn_ssh_port': '2222x'}, ["hpn_ssh_port: '2222x'"]),
    ({'hpn_ssh_port': 70000}, ['hpn_ssh_port: 70000']),
    ({'hpn_ssh_port': True}, ['hpn_ssh_port: true']),
    ({'hpn_ssh_none_cipher': 'maybe'}, ["hpn_ssh_none_cipher: 'maybe' is not a boolean"]),
    ({'hpn_ssh_state': 'gone'}, ["hpn_ssh_state: 'gone'", 'present or absent']),
    ({'hpn_ssh_source': 'source'}, ["hpn_ssh_source: 'source'", 'auto, ppa, copr, repository, files']),
    ({'hpn_ssh_source': 'files'}, ['hpn_ssh_package_files is empty']),
    ({'hpn_ssh_package_files': ['relative.deb']}, ["hpn_ssh_package_files[0]: 'relative.deb'"]),
    ({'hpn_ssh_package_files': [{'url': 'https://h.invalid/a.deb'}]},
     ['hpn_ssh_package_files[0].checksum: null (empty)']),
    ({'hpn_ssh_package_files': [{'url': 'https://h.invalid/a.deb', 'checksum': 'abc'}]}, ["'abc' is not a checksum"]),
    ({'hpn_ssh_package_files': '/srv/a.deb'}, ["hpn_ssh_package_files: '/srv/a.deb' is not a list"]),
    ({'hpn_ssh_repository': {'url': 'https://r.invalid/'}}, ['hpn_ssh_repository.key', 'no unsigned repository']),
    ({'hpn_ssh_repository': {'url': 'ftp://r', 'key': '/etc/k.asc'}}, ["hpn_ssh_repository.url: 'ftp://r'"]),
    ({'hpn_ssh_repository': {'url': 'https://r.invalid/', 'key': 'http://r.invalid/Release.key'}},
     ["hpn_ssh_repository.key: 'http://r.invalid/Release.key' is not a key the role can trust", 'never plain http']),
    ({'hpn_ssh_repository': {'url': 'https://r.invalid/', 'key': 'HTTP://r.invalid/Release.key'}},
     ["hpn_ssh_repository.key: 'HTTP://r.invalid/Release.key'"]),
    ({'hpn_ssh_repository': {'url': 'https://r.invalid/', 'key': 'ftp://r.invalid/Release.key'}},
     ["hpn_ssh_repository.key: 'ftp://r.invalid/Release.key'"]),
    ({'hpn_ssh_repository': {'url': 'https://r.invalid/', 'key': 'Release.key'}},
     ["hpn_ssh_repository.key: 'Release.key'"]),
    ({'hpn_ssh_allow_users': 'xfer'}, ["hpn_ssh_allow_users: 'xfer' is not a list"]),
    ({'hpn_ssh_allow_groups': ['a b']}, ["hpn_ssh_allow_groups[0]: 'a b'"]),
    ({'hpn_ssh_permit_root_login': 'yes'}, ["hpn_ssh_permit_root_login: 'yes'", 'never written']),
    ({'hpn_ssh_host_key_types': ['dsa']}, ['hpn_ssh_host_key_types']),
    ({'hpn_ssh_sshd_options': {'Bad Key': 1}},
     ["hpn_ssh_sshd_options: 'Bad Key' is not an sshd_config keyword", 'HPNDisabled']),
    ({'hpn_ssh_sshd_options': {'NoSuchOption': 'yes'}}, ["hpn_ssh_sshd_options: 'NoSuchOption' is not an sshd_config "
                                                         'keyword hpnsshd knows', 'OpenSSH 8.0 to 9.9']),
    ({'hpn_ssh_sshd_options': {'passwordauthentication': 'yes'}},
     ['hpn_ssh_sshd_options: passwordauthentication is written by the role itself',
      'set hpn_ssh_password_authentication instead']),
    ({'hpn_ssh_sshd_options': {'Match': 'User x'}}, ['Match is written by the role itself', 'Match block']),
    ({'hpn_ssh_sshd_options': {'Banner': '/etc/issue\nPermitRootLogin yes'}},
     ['hpn_ssh_sshd_options.Banner:', 'is not one line of text']),
    ({'hpn_ssh_sshd_options': {'MaxStartups': ['10', '20']}}, ['hpn_ssh_sshd_options.MaxStartups:']),
    ({'hpn_ssh_sshd_options': 'MaxSessions=20'}, ["hpn_ssh_sshd_options: 'MaxSessions=20' is not a mapping"]),
])
def test_bad_inputs_name_the_variable_the_value_and_what_is_accepted(values, words):
    problems = hpnssh.check_inputs(values)
    assert len(problems) == 1, problems
    for word in words:
        assert word in problems[0], (word, problems[0])


def test_every_problem_is_reported_together():
    problems = hpnssh.check_inputs({'hpn_ssh_port': 22, 'hpn_ssh_firewall': 'perhaps', 'hpn_ssh_state': 'x'})
    assert len(problems) == 3


# ----------------------------------------------------------------------------- versions and probes

def test_hpn_versions_from_banners():
    assert hpnssh.parse_hpn_version('OpenSSH_9.9p2-hpn18.6.2, OpenSSL 3.0.13') == (18, 6, 2)
    assert hpnssh.parse_hpn_version('OpenSSH_9.3-hpn14v15') == (14, 15, 0)
    assert hpnssh.parse_hpn_version('OpenSSH_9.2p1 Debian-2+deb12u6, OpenSSL 3.0.19') is None


def test_probe_verdicts_on_recorded_outputs():
    # what Debian 12 sshd 9.2 and ssh 9.2 print (recorded in the test image localhost/bdp-wan-tune-debian12)
    refused_server = '/tmp/c: line 2: Bad configuration option: NoneEnabled\n/tmp/c: terminating, 1 bad configuration options\n'
    refused_client = '/tmp/cc: line 1: Bad configuration option: fallback\n/tmp/cc: terminating, 1 bad configuration options\n'
    assert not hpnssh.probe_verdict(255, refused_server)
    assert not hpnssh.probe_verdict(255, refused_client)
    # a build that logs and ignores an option (servconf.c sDeprecated / sUnsupported) does not apply it
    assert not hpnssh.probe_verdict(0, '/tmp/c line 2: Deprecated option HPNBufferSize\n')
    assert not hpnssh.probe_verdict(0, '/tmp/c line 2: Unsupported option noneenabled\n')
    assert hpnssh.probe_verdict(0, '')
    assert not hpnssh.probe_verdict(1, '')


# ----------------------------------------------------------------------------- configuration text

SERVER = {'port': 2222, 'host_keys': ['/etc/hpnssh/ssh_host_ed25519_key'], 'allow_users': ['xfer'],
          'allow_groups': [], 'none_cipher': False, 'extra': {'MaxSessions': '20'}}


def test_server_defaults_root_and_passwords_off():
    lines, dropped = hpnssh.server_lines(SERVER, known=[])
    text = hpnssh.render(lines, '#\n# Ansible managed\n#')
    assert text.startswith('#\n# Ansible managed\n#\nPort 2222\nHostKey /etc/hpnssh/ssh_host_ed25519_key\n')
    for line in ('PermitRootLogin no', 'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
                 'AllowUsers xfer', 'PidFile /run/hpnsshd.pid', 'Subsystem sftp internal-sftp', 'MaxSessions 20'):
        assert '\n%s\n' % line in text
    assert 'AllowGroups' not in text and 'NoneEnabled' not in text and dropped == []


def test_none_cipher_only_where_the_daemon_knows_it():
    settings = dict(SERVER, none_cipher=True)
    lines, dropped = hpnssh.server_lines(settings, known=['NoneEnabled', 'HPNDisabled'])
    assert ('NoneEnabled', 'yes') in lines and dropped == []
    lines, dropped = hpnssh.server_lines(settings, known=[])
    assert all(keyword != 'NoneEnabled' for keyword, value in lines) and dropped == ['NoneEnabled']
    # known but not wanted: written as no, so the intent is in the file
    lines, dropped = hpnssh.server_lines(SERVER, known=['NoneEnabled'])
    assert ('NoneEnabled', 'no') in lines


def test_removed_options_are_never_written():
    for known in ([], ['HPNBufferSize', 'TcpRcvBuf', 'NoneEnabled']):
        text = hpnssh.render(hpnssh.server_lines(SERVER, known)[0])
        assert 'HPNBufferSize' not in text and 'TcpRcvBuf' not in text


def test_client_fallback_no_plain_or_guarded():
    lines, guarded, dropped = hpnssh.client_lines({'port': 2222}, known=['Fallback', 'FallbackPort', 'NoneEnabled'])
    text = hpnssh.render(lines, host_block=True)
    assert text == 'Host *\n    Port 2222\n    Fallback no\n' and guarded == []
    lines, guarded, dropped = hpnssh.client_lines({'port': 2022, 'none_cipher': True}, known=[])
    text = hpnssh.render(lines, host_block=True)
    assert text == 'Host *\n    IgnoreUnknown Fallback\n    Port 2022\n    Fallback no\n'
    assert guarded == ['Fallback'] and dropped == ['NoneEnabled']
    lines, guarded, dropped = hpnssh.client_lines({'port': 2222, 'none_cipher': True}, known=['Fallback', 'NoneEnabled'])
    assert ('NoneEnabled', 'yes') in lines and ('NoneSwitch', 'yes') not in lines


def test_port_22_and_newlines_are_refused_in_the_text():
    with pytest.raises(ValueError):
        hpnssh.server_lines(dict(SERVER, port=22), [])
    with pytest.raises(ValueError):
        hpnssh.render([('Banner', '/x\nPermitRootLogin yes')])


def test_package_files_by_path_must_exist_and_be_readable_on_the_controller(tmp_path):
    present = tmp_path / 'hpnssh-client_18.6.2_amd64.deb'
    present.write_bytes(b'!<arch>\n')
    locked = tmp_path / 'hpnssh-server_18.6.2_amd64.deb'
    locked.write_bytes(b'!<arch>\n')
    gone = str(tmp_path / 'hpnssh-sftp-server_18.6.2_amd64.deb')
    value = [str(present), {'url': 'https://f.example.invalid/a.deb', 'checksum': 'sha256:' + '0' * 64}, gone,
             str(locked), 'relative.deb']
    problems = hpnssh.controller_file_problems(value, readable=lambda path: path != str(locked))
    assert problems == [
        'hpn_ssh_package_files[2]: "%s" does not exist on the controller (or is not a file); expected %s.'
        % (gone, hpnssh.FILES_HELP),
        'hpn_ssh_package_files[3]: "%s" cannot be read on the controller; expected %s.' % (locked, hpnssh.FILES_HELP),
    ]                                           # URLs are checked by their checksum; a bad path by file_items
    assert hpnssh.controller_file_problems(str(present)) == []
    assert hpnssh.controller_file_problems([str(tmp_path)]) == []   # not a .deb: file_items refuses it


APT_STDOUT = '''Reading package lists...
Building dependency tree...
The following additional packages will be installed:
  libhpn1
The following NEW packages will be installed:
  hpnssh-client hpnssh-server libhpn1:amd64
0 upgraded, 3 newly installed, 0 to remove and 0 not upgraded.
Setting up libhpn1:amd64 (1.0-1) ...
Setting up tzdata (2025b-0+deb12u1) ...
'''
DPKG_STDOUT = '''Selecting previously unselected package bdp-hpnssh-standin.
(Reading database ... 6363 files and directories currently installed.)
Unpacking bdp-hpnssh-standin (0.1) ...
Selecting previously unselected package libfoo2:amd64.
Setting up bdp-hpnssh-standin (0.1) ...
'''


def test_reported_installs_reads_apt_dpkg_and_dnf_results():
    results = [
        {'changed': True, 'stdout': APT_STDOUT},
        {'results': [{'item': {'name': 'a.deb'}, 'stdout': DPKG_STDOUT}, {'skipped': True}]},
        {'results': ['Installed: hpnssh-server-18.6.2-1.fc41.x86_64', 'Installed: hpnssh-1:18.6.2-1.el9.noarch',
                     'Removed: old-1-1.noarch']},
        {'skipped': True}, None,
    ]
    assert hpnssh.reported_installs(results) == ['bdp-hpnssh-standin', 'hpnssh', 'hpnssh-client', 'hpnssh-server',
                                                 'libfoo2', 'libhpn1']


def test_the_record_holds_what_was_asked_for_and_what_the_manager_reported_and_nothing_else():
    before = ['openssh-server', 'libc6', 'libhpn1-old']
    # unattended-upgrades installed linux-image-x meanwhile; libc6 was there already
    after = before + ['hpnssh-server', 'hpnssh-client', 'libhpn1', 'linux-image-x']
    record = hpnssh.packages_to_record(['hpnssh-server', 'hpnssh-client'], ['hpnssh-server', 'libhpn1', 'libc6'],
                                       before, after)
    assert record == {'packages': ['hpnssh-client', 'hpnssh-server'], 'dependencies': ['libhpn1']}
    # asked for, but already there before: not the role's to remove
    assert hpnssh.packages_to_record(['openssh-server'], [], before, before) == {'packages': [], 'dependencies': []}


def test_a_removal_that_would_take_another_package_is_a_problem():
    simulated = ('Reading package lists...\nPurg hpnssh-server [18.6.2]\nPurg libhpn1:amd64 [1.0-1]\n'
                 'Remv mytool [2.0]\nPurg libhpn1 [1.0-1]\n')
    assert hpnssh.removal_problems(simulated, ['hpnssh-server', 'libhpn1']) == ['mytool']
    assert hpnssh.removal_problems(simulated, ['hpnssh-server', 'libhpn1', 'mytool']) == []


def test_a_signing_key_is_taken_over_https_file_a_path_or_inline_only():
    for key in ('https://r.invalid/Release.key', 'file:///srv/repo/Release.key', '/etc/apt/keyrings/hpn.asc',
                '-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBF...\n-----END PGP PUBLIC KEY BLOCK-----\n'):
        assert hpnssh.repository_problems({'url': 'http://r.invalid/debian/', 'key': key}) == [], key
