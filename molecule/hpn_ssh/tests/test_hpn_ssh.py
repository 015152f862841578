# -*- coding: utf-8 -*-
"""Verify the hpn_ssh role on hpn-a and hpn-b after converge and idempotence.

What runs here is the TEST STAND-IN (tests/hpn_ssh/standin.py): Debian's OpenSSH 9.2 under the HPN-SSH names, not
HPN-SSH.  These tests prove the role's plumbing (package files, configuration, validation, keys, unit, port, client
configuration) against real programs; they do not prove HPN-SSH's own features (docs/hpn_ssh.md).
"""

import pytest

PORT = 2222


@pytest.fixture
def name(host):
    return host.check_output('hostname')


def test_unit_runs_and_listens_on_its_port(host):
    unit = host.service('hpnssh.service')
    assert unit.is_running and unit.is_enabled
    assert host.socket('tcp://0.0.0.0:%d' % PORT).is_listening
    # the daemon on 2222 is the hpnsshd of the unit, with its own configuration and pid file
    pid = host.check_output('systemctl show -p MainPID --value hpnssh.service')
    assert host.check_output('cat /run/hpnsshd.pid') == pid
    assert '-f /etc/hpnssh/sshd_config' in host.check_output('tr "\\0" " " < /proc/%s/cmdline' % pid)


def test_system_openssh_untouched(host):
    # checksums of /etc/ssh, sshd, ssh, scp and ssh.service as prepare.yml found them; the same running sshd
    host.run_expect([0], 'sha256sum --quiet -c /root/hpn-test/system-ssh.sha256')
    assert host.check_output('systemctl show -p MainPID --value ssh.service') == \
        host.check_output('cat /root/hpn-test/ssh.pid')
    assert host.service('ssh.service').is_running
    assert host.socket('tcp://0.0.0.0:22').is_listening
    assert host.run('dpkg --verify openssh-server openssh-client').stdout == ''


def test_server_configuration(host):
    text = host.file('/etc/hpnssh/sshd_config').content_string
    assert text.startswith('#\n# Ansible managed\n#\n')
    for line in ('Port 2222', 'HostKey /etc/hpnssh/ssh_host_ed25519_key', 'HostKey /etc/hpnssh/ssh_host_rsa_key',
                 'PidFile /run/hpnsshd.pid', 'PermitRootLogin no', 'PasswordAuthentication no',
                 'KbdInteractiveAuthentication no', 'AllowUsers xfer', 'Subsystem sftp internal-sftp'):
        assert '\n%s\n' % line in text, line
    # the stand-in is OpenSSH: the probe found that it knows no HPN option, so none is written
    for option in ('NoneEnabled', 'HPNDisabled', 'HPNBufferSize', 'TcpRcvBuf'):
        assert '\n%s ' % option not in text, option
    host.run_expect([0], 'hpnsshd -t -f /etc/hpnssh/sshd_config')
    effective = host.check_output('hpnsshd -T -f /etc/hpnssh/sshd_config').splitlines()
    for line in ('port 2222', 'permitrootlogin no', 'passwordauthentication no', 'kbdinteractiveauthentication no',
                 'allowusers xfer', 'pidfile /run/hpnsshd.pid'):
        assert line in effective, line


def test_own_host_keys(host):
    for kind in ('ed25519', 'rsa'):
        key = host.file('/etc/hpnssh/ssh_host_%s_key' % kind)
        assert key.exists and key.mode == 0o600 and key.user == 'root'
        assert key.content_string != host.file('/etc/ssh/ssh_host_%s_key' % kind).content_string


def test_client_configuration(host):
    text = host.file('/etc/hpnssh/ssh_config').content_string
    assert '\nHost *\n' in text
    assert '\n    Port 2222\n' in text
    assert '\n    Fallback no\n' in text
    # the stand-in client does not know Fallback (it has no fallback), so the role guards it with IgnoreUnknown
    assert '\n    IgnoreUnknown Fallback\n' in text
    host.run_expect([0], 'hpnssh -G hpn-b')


def test_key_login_from_a_to_b_on_2222(host, name):
    if name != 'hpn-a':
        pytest.skip('the transfer runs from hpn-a')
    run = host.run('su - xfer -c "hpnssh -v -o BatchMode=yes -o StrictHostKeyChecking=accept-new hpn-b hostname"')
    assert run.rc == 0, run.stderr
    assert run.stdout.strip() == 'hpn-b'
    assert 'port 2222' in run.stderr and 'Authenticated to hpn-b' in run.stderr


def test_password_and_root_refused(host, name):
    if name != 'hpn-a':
        pytest.skip('from hpn-a')
    run = host.run('su - xfer -c "hpnssh -o BatchMode=yes -o PreferredAuthentications=password,keyboard-interactive '
                   '-o StrictHostKeyChecking=accept-new hpn-b true"')
    assert run.rc != 0 and 'Permission denied (publickey)' in run.stderr, run.stderr
    run = host.run('su - xfer -c "hpnssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new root@hpn-b true"')
    assert run.rc != 0 and 'Permission denied' in run.stderr, run.stderr


def test_hpnscp_copies_a_file(host, name):
    if name != 'hpn-a':
        pytest.skip('from hpn-a')
    host.run_expect([0], 'su - xfer -c "head -c 4194304 /dev/urandom > /tmp/hpn-payload"')
    run = host.run('su - xfer -c "hpnscp -o BatchMode=yes -o StrictHostKeyChecking=accept-new /tmp/hpn-payload '
                   'hpn-b:payload && hpnssh -o BatchMode=yes hpn-b sha256sum payload"')
    assert run.rc == 0, run.stderr
    assert run.stdout.split()[0] == host.check_output('sha256sum /tmp/hpn-payload').split()[0]


def test_record_for_absent(host):
    record = host.file('/var/lib/bdp_wan_tune/hpn_ssh.json').content_string
    assert '"bdp-hpnssh-standin"' in record and '"manager": "apt"' in record
