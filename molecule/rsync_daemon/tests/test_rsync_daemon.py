# -*- coding: utf-8 -*-
"""Verify the rsync daemon on rsync-a and rsync-b after converge: the files, the daemon, and transfers from the
other container (an authenticated write works; a wrong password and an anonymous write fail; a read works)."""

import json
import os
import subprocess
import uuid

import pytest
import testinfra

PASSWORD = 'molecule-Test-pw-7'
# As in molecule.yml (issue 15: a backslash or both quotes escaped in the logged repr defeated no_log's masking).
AWKWARD = {
    'back': 'QaBack\\slash9',
    'quotes': 'both\'and"quotes9',
    'percent': '100%sure%d%%9',
    'unicode': 'pässwört-密码-9',
    'shell': '$(touch /tmp/bdp-pwned)`id`9',
    'spaces': 'with spaces  inside 9',
}
USERS = dict(AWKWARD, migrate=PASSWORD)
# Where a host keeps logs, state and temporary files (the secrets file itself is the one allowed place).
SEARCHED = ['/etc', '/var', '/tmp', '/root', '/home', '/srv', '/run', '/opt', '/usr/local']


def forms(password):
    """The password as it could appear in a log: itself, its repr, its JSON (escaped and not)."""
    return sorted({password, repr(password)[1:-1], json.dumps(password)[1:-1],
                   json.dumps(password, ensure_ascii=False)[1:-1], password.replace('\\', '\\\\')})


PEER = {'rsync-a': ('rsync-b', '198.18.3.12'), 'rsync-b': ('rsync-a', '198.18.3.11')}


@pytest.fixture
def name(host):
    return host.check_output('hostname')


@pytest.fixture
def peer(name):
    """The other container, as a testinfra host, and this host's address as the peer reaches it."""
    other, dummy = PEER[name]
    return testinfra.get_host('podman://%s' % other), PEER[other][1]


def test_config(host):
    conf = host.file('/etc/rsyncd.conf')
    assert conf.exists and conf.user == 'root' and conf.mode == 0o644
    text = conf.content_string
    assert text.startswith('#\n# Ansible managed\n#\n')
    for line in ('port = 873', 'use chroot = yes', 'list = no', 'reverse lookup = no', 'read only = yes',
                 'hosts deny = *', 'secrets file = /etc/rsyncd.secrets', '[incoming]', '    read only = no',
                 '    auth users = migrate, back, quotes, percent, unicode, shell, spaces',
                 '    hosts allow = 198.18.3.0/24 127.0.0.1 ::1', '    uid = xfer',
                 '    max connections = 8', '[pub]'):
        assert line + '\n' in text, line
    assert PASSWORD not in text
    assert 'socket options =' not in text
    # Debian 12's rsync 3.2.7 has no auth digest parameter: none is written
    version = host.check_output('rsync --version')
    assert ('auth digest = sha256' in text) == ('3.2.' not in version.split('\n')[0])


def test_secrets(host):
    secrets = host.file('/etc/rsyncd.secrets')
    assert secrets.exists and secrets.user == 'root' and secrets.group == 'root' and secrets.mode == 0o600
    assert secrets.content.decode('utf-8') == ''.join('%s:%s\n' % (user, USERS[user]) for user in sorted(USERS))


def test_no_password_in_the_journal_or_any_other_file(host, name):
    """The journal (with the modules' "Invoked with" lines in it) and every file under SEARCHED but the secrets file
    hold none of the passwords in any form.  The patterns go to grep on stdin, not in its command line."""
    journal = host.run('journalctl --no-pager -o export').stdout_bytes
    assert b'Invoked with' in journal and b'rsync_daemon_config' in journal       # the journal is the right one
    assert b"'name': 'back'" in journal                  # the users are named there, their passwords are not
    found = [user for user, password in USERS.items()
             if any(form.encode('utf-8') in journal for form in forms(password))]
    assert found == [], 'the journal shows the password of %s' % found
    patterns = '\n'.join(form for password in USERS.values() for form in forms(password)) + '\n'
    grep = subprocess.run(['podman', 'exec', '-i', name, 'grep', '-rlaF', '-D', 'skip', '-f', '-'] + SEARCHED,
                          input=patterns.encode('utf-8'), stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                          env=dict(os.environ, LC_ALL='C'))
    hits = sorted(set(grep.stdout.decode('utf-8', 'replace').split()))
    assert grep.returncode in (0, 1), grep.stderr
    assert hits == ['/etc/rsyncd.secrets'], hits      # found there (the grep works), and nowhere else
    assert not host.file('/tmp/bdp-pwned').exists


def test_daemon_answers(host):
    assert host.service('rsync').is_running and host.service('rsync').is_enabled
    assert host.socket('tcp://0.0.0.0:873').is_listening
    greeting = host.check_output('timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/873; head -c 12 <&3"')
    assert greeting.startswith('@RSYNCD:')


def send(client, address, user, password, target):
    url = 'rsync://%s%s/incoming/%s' % ('%s@' % user if user else '', address, target)
    return client.run('printf data > /tmp/payload && RSYNC_PASSWORD=%s USER=nobody-anonymous rsync --contimeout=10 '
                      '--timeout=30 /tmp/payload %s', password, url)


def test_authenticated_transfer_from_the_peer(host, peer):
    client, address = peer
    target = 'from-peer-%s' % uuid.uuid4().hex
    result = send(client, address, 'migrate', PASSWORD, target)
    assert result.rc == 0, result.stderr
    landed = host.file('/srv/incoming/' + target)
    assert landed.exists and landed.user == 'xfer' and landed.content_string == 'data'
    host.run('rm -f /srv/incoming/%s', target)


@pytest.mark.parametrize('user', sorted(AWKWARD))
def test_awkward_passwords_authenticate_from_the_peer(host, peer, user):
    client, address = peer
    target = 'awkward-%s-%s' % (user, uuid.uuid4().hex)
    result = send(client, address, user, AWKWARD[user], target)
    assert result.rc == 0, result.stderr
    assert host.file('/srv/incoming/' + target).exists
    host.run('rm -f /srv/incoming/%s', target)


@pytest.mark.parametrize('user, password', [('migrate', 'not-the-password'), (None, '')])
def test_wrong_password_and_anonymous_write_fail(host, peer, user, password):
    client, address = peer
    target = 'refused-%s' % uuid.uuid4().hex
    result = send(client, address, user, password, target)
    assert result.rc != 0 and 'auth failed' in result.stdout + result.stderr
    assert not host.file('/srv/incoming/' + target).exists


def test_read_from_the_peer_and_no_listing(host, peer, name):
    client, address = peer
    read = client.run('rsync --contimeout=10 rsync://%s/pub/hello.txt /tmp/hello-%s', address, name)
    assert read.rc == 0, read.stderr
    assert client.file('/tmp/hello-%s' % name).content_string == 'hello from %s\n' % name
    # list = no: the module list is empty
    listing = client.run('rsync --contimeout=10 rsync://%s/', address)
    assert 'incoming' not in listing.stdout and 'pub' not in listing.stdout
    # a write to the read-only module is refused
    write = client.run('rsync --contimeout=10 /etc/hostname rsync://%s/pub/x', address)
    assert write.rc != 0 and 'read only' in write.stdout + write.stderr


def test_a_host_outside_hosts_allow_is_refused(host):
    """The same client and password: from 127.0.0.1 (allowed for the role's own verification) the write works,
    from 127.0.0.2 (in no hosts allow) it is refused; with list = no rsync hides the module ("Unknown module")."""
    command = ('RSYNC_PASSWORD=%s rsync --contimeout=10 --address=%s /etc/hostname '
               'rsync://migrate@127.0.0.1/incoming/hosts-allow-probe')
    allowed = host.run(command, PASSWORD, '127.0.0.1')
    assert allowed.rc == 0, allowed.stderr
    host.run('rm -f /srv/incoming/hosts-allow-probe')
    denied = host.run(command, PASSWORD, '127.0.0.2')
    output = denied.stdout + denied.stderr
    assert denied.rc != 0 and ('access denied' in output or "Unknown module 'incoming'" in output), output
    assert not host.file('/srv/incoming/hosts-allow-probe').exists
