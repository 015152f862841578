# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad inputs stop playbooks/wan_tune.yml before any host changes (issue 7).

Two inventory hosts, both the controller itself (local connection), each with its own files in a
tmp dir. Each bad input, on one host or from -e, runs the real playbook (not check mode) and must
fail in the validation play with a message that names the variable, the value and what is accepted,
with nothing changed: no file of either host, /var/lib/bdp_wan_tune as it was, the live kernel values
as they were. Good -e strings ("false", "4") must pass and mean what they say (check mode).
Whatever happens, the fixture puts the live values back as it found them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

import yaml

from procsys import proc, read, write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(ROOT, 'playbooks', 'wan_tune.yml')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
KEYS = ('net.core.rmem_max', 'net.core.wmem_max', 'net.core.netdev_max_backlog', 'net.ipv4.tcp_rmem',
        'net.ipv4.tcp_wmem', 'net.ipv4.tcp_congestion_control', 'net.core.default_qdisc')
STATE_DIR = '/var/lib/bdp_wan_tune'     # wan_tune_state_dir's default (each host here has its own)
HOSTS = ('h1', 'h2')
NOTHING_CHANGED = 'Nothing was changed on any host.'
BOOL_HELP = 'expected true or false (also yes/no, on/off or 1/0, in any case)'

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='runs the roles on the controller: needs root')


def live():
    return dict((key, read(key)) for key in KEYS)


def snapshot(directory):
    """Every file below ``directory`` with its size, mtime and content hash; None when it does not exist."""
    if not os.path.isdir(directory):
        return None
    files = {}
    for base, dirs, names in os.walk(directory):
        for name in dirs + names:
            path = os.path.join(base, name)
            stat = os.lstat(path)
            digest = None
            if os.path.isfile(path):
                with open(path, 'rb') as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            files[os.path.relpath(path, directory)] = (stat.st_size, stat.st_mtime_ns, digest)
    return files


class Controller(object):
    """Two inventory hosts that are both this controller, each with its own files in ``tmp``."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.files = {}
        for host in HOSTS:
            # distinct base names too (a record is named after its file), and a state directory of its own
            self.files[host] = {
                'tcp_buffers_sysctl_file': str(tmp / host / ('90-bdp-wan-tune-badinput-%s-buffers.conf' % host)),
                'bbr_sysctl_file': str(tmp / host / ('90-bdp-wan-tune-badinput-%s-bbr.conf' % host)),
                'bbr_modules_load_file': str(tmp / host / ('bdp-wan-tune-badinput-%s.conf' % host)),
                'wan_tune_state_dir': str(tmp / host / 'state'),
            }

    def inventory(self, host_vars=None):
        hosts = {}
        for host in HOSTS:
            hosts[host] = dict(self.files[host], ansible_connection='local',
                               ansible_python_interpreter=sys.executable)
            hosts[host].update((host_vars or {}).get(host, {}))
        path = self.tmp / 'inventory.yml'
        path.write_text(yaml.safe_dump({'all': {'hosts': hosts, 'vars': {'wan_tune_become': False}}}))
        return str(path)

    def run(self, *args, host_vars=None, rate='rate=1g rtt=98'):
        cmd = [PLAYBOOK_BIN, PLAYBOOK, '-i', self.inventory(host_vars)]
        if rate:
            cmd += ['-e', rate]
        env = dict(os.environ, ANSIBLE_FORCE_COLOR='false', ANSIBLE_NOCOLOR='true')
        done = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=300, check=False,
                              cwd=str(self.tmp), env=env)
        return done.returncode, done.stdout + done.stderr

    def leftovers(self):
        """The per-host files and directories that exist (none may after a refused run)."""
        found = [path for files in self.files.values() for path in files.values() if os.path.exists(path)]
        found += [str(path) for path in self.tmp.glob('**/*') if 'relative' in path.name]
        return found


@pytest.fixture
def controller(tmp_path):
    if not os.stat(proc('net.core.rmem_max')).st_mode & 0o200:
        pytest.fail('not in the initial network namespace: net.core.rmem_max is read-only here')
    before = live()
    state = snapshot(STATE_DIR)
    host = Controller(tmp_path)
    try:
        yield host, before, state
    finally:
        if host.leftovers() or snapshot(STATE_DIR) != state or live() != before:
            # something got through: undo it with the collection's own rollback, then put the keys back
            host.run('-e', 'wan_tune_state=absent', rate='')
        for key, value in before.items():
            if read(key) != value:
                write(key, value)


def assert_nothing_changed(host, before, state, output):
    assert host.leftovers() == [], output
    assert snapshot(STATE_DIR) == state, 'the run changed %s:\n%s' % (STATE_DIR, output)
    assert live() == before, 'the run changed live values:\n' + output


# (id, -e arguments, inventory host variables, hosts that must be refused, fragments of each host's message)
BAD = [
    ('wan_tune_state on one host', [], {'h2': {'wan_tune_state': 'rollback'}}, ['h2'],
     ["wan_tune_state: 'rollback' is not one of the choices; expected one of present, absent."]),
    ('tcp_buffers_state on one host', [], {'h2': {'tcp_buffers_state': 'gone'}}, ['h2'],
     ["tcp_buffers_state: 'gone' is not one of the choices; expected one of present, absent."]),
    ('bbr_qdisc on one host', [], {'h1': {'bbr_qdisc': 'fq_codel'}}, ['h1'],
     ["bbr_qdisc: 'fq_codel' is not one of the choices; expected one of fq, none."]),
    ('wan_tune_state from -e', ['-e', 'wan_tune_state=absnt'], {}, ['h1', 'h2'],
     ["wan_tune_state: 'absnt' is not one of the choices; expected one of present, absent."]),
    ('tcp_buffers_flows=four', ['-e', 'tcp_buffers_flows=four'], {}, ['h1', 'h2'],
     ["tcp_buffers_flows: 'four' is not usable; expected a whole number of concurrent flows, 1 or more"]),
    ('tcp_buffers_flows=four with the memory guard off',
     ['-e', 'tcp_buffers_flows=four tcp_buffers_memory_guard=false'], {}, ['h1', 'h2'],
     ["tcp_buffers_flows: 'four' is not usable"]),
    ('bbr_verify=maybe', ['-e', 'bbr_verify=maybe'], {}, ['h1', 'h2'],
     ["bbr_verify: 'maybe' is not a boolean; " + BOOL_HELP]),
    ('bbr_verify with a space', ['-e', json.dumps({'bbr_verify': ' yes'})], {}, ['h1', 'h2'],
     ["bbr_verify: ' yes' is not a boolean: it has white space around the word, which Ansible's bool filter does "
      'not ignore']),
    ('tcp_buffers_companions on one host', [], {'h2': {'tcp_buffers_companions': 'sometimes'}}, ['h2'],
     ["tcp_buffers_companions: 'sometimes' is not a boolean; " + BOOL_HELP]),
    ('rate=1e999999999', ['-e', 'rate=1e999999999'], {}, ['h1', 'h2'],
     ["tcp_buffers_rate (-e rate=...): '1e999999999' is far too large", 'expected a number in bit/s']),
    ('rate=1GB', ['-e', 'rate=1GB'], {}, ['h1', 'h2'],
     ["tcp_buffers_rate (-e rate=...): '1GB' is in bytes (B)", 'multiply by 8 (1 GB/s is 8gbit)',
      'a number in bit/s (1000000000)']),
    ('tcp_buffers_rate on one host', [], {'h1': {'tcp_buffers_rate': '10 gigabit'}}, ['h1'],
     ["tcp_buffers_rate: '10 gigabit' has an unknown unit 'gigabit'; expected a number in bit/s"]),
    ('tcp_buffers_headroom=1000', ['-e', 'tcp_buffers_headroom=1000'], {}, ['h1', 'h2'],
     ["tcp_buffers_headroom: '1000' is outside 2 to 64; above 64 x BDP the buffers mostly waste memory",
      'Expected a number of BDPs from 2 (the floor) to 64']),
    ('bad interface name in bbr_interfaces', [], {'h2': {'bbr_interfaces': ['lo', 'eth 0']}}, ['h2'],
     ["bbr_interfaces[1]: interface 'eth 0' is not a Linux interface name (1 to 15 characters, no spaces, \"/\" or "
      '":").']),
    ('relative bbr_sysctl_file', [], {'h1': {'bbr_sysctl_file': 'relative-bbr.conf'}}, ['h1'],
     ["bbr_sysctl_file: 'relative-bbr.conf' is not an absolute path; expected an absolute path (starting with /)."]),
    ('mtu=70000', ['-e', 'mtu=70000'], {}, ['h1', 'h2'],
     ['jumbo_mtu_target (-e mtu=...): 70000 is outside 576..65535; expected a whole number of bytes from 576']),
    ('mtu=+9000', ['-e', 'mtu=+9000'], {}, ['h1', 'h2'],
     ["jumbo_mtu_target (-e mtu=...): '+9000' is not a whole number of bytes in digits 0-9 only"]),
    ('mtu: 9000.0', ['-e', json.dumps({'mtu': 9000.0})], {}, ['h1', 'h2'],
     ['jumbo_mtu_target (-e mtu=...): 9000.0 is not a whole number of bytes in digits 0-9 only']),
    ('multicast peer', ['-e', json.dumps({'mtu': 9000, 'jumbo_mtu_peers': ['224.0.0.1']})], {}, ['h1', 'h2'],
     ["jumbo_mtu_peers[0]: peer '224.0.0.1' is not a unicast address; expected an IPv4 or IPv6 address"]),
    ('unquoted off for jumbo_mtu_tcp_proof', [], {'h1': {'jumbo_mtu_tcp_proof': False}}, ['h1'],
     ["jumbo_mtu_tcp_proof: false is a boolean", "quote it ('off'); expected one of auto, required, off."]),
    ('bbr_algorithm of 16 characters', ['-e', 'bbr_algorithm=abcdefghijklmnop'], {}, ['h1', 'h2'],
     ["bbr_algorithm: 'abcdefghijklmnop' is longer than 15 characters"]),
    ('hpn_ssh package file missing on the controller',
     ['-e', json.dumps({'hpn_ssh': True, 'hpn_ssh_package_files': ['/nonexistent/bdp-wan-tune/hpnssh-server.deb']})],
     {}, ['h1', 'h2'],
     ['hpn_ssh_package_files[0]: "/nonexistent/bdp-wan-tune/hpnssh-server.deb" does not exist on the controller']),
]


@pytest.mark.parametrize('extra, host_vars, refused, fragments', [case[1:] for case in BAD],
                         ids=[case[0] for case in BAD])
def test_bad_input_stops_every_host_before_any_change(controller, extra, host_vars, refused, fragments):
    host, before, state = controller
    rc, output = host.run(*extra, host_vars=host_vars)
    assert rc != 0, output
    assert 'PLAY [Tune TCP for long fat networks]' not in output, 'the tuning play started:\n' + output
    for name in refused:
        assert 'Inputs of host %s are not usable' % name in output, output
    for name in set(HOSTS) - set(refused):
        assert 'Inputs of host %s are not usable' % name not in output, output
    for fragment in fragments:
        assert output.count(fragment) >= len(refused), 'missing %r:\n%s' % (fragment, output)
    assert NOTHING_CHANGED in output
    for internal in ('_AnsibleTagged', '<class', 'Traceback', 'decimal.', 'argument_spec'):
        assert internal not in output, output
    assert max(len(line) for line in output.splitlines()) < 2000, 'a huge line in the output'
    assert_nothing_changed(host, before, state, output)


HPN_CACHE = '/var/cache/bdp_wan_tune/hpn_ssh'     # the hpn_ssh role's package directory (roles/hpn_ssh/vars)


def test_hpn_ssh_without_a_package_source_stops_in_the_validation_play(controller):
    """-e "rate=1g rtt=98 hpn_ssh=true" on Debian (this controller) with neither hpn_ssh_repository nor
    hpn_ssh_package_files: Debian has no public HPN-SSH package, which only the host's facts tell. The validation play
    reads them (setup, read-only) and refuses every host before any host changes: tcp_buffers and bbr never ran."""
    host, before, state = controller
    cache = os.path.exists(HPN_CACHE)
    with open('/etc/os-release') as handle:
        if 'ID=debian' not in handle.read():
            pytest.skip('the controller is not Debian: it may have a public HPN-SSH source')
    rc, output = host.run('-e', 'hpn_ssh=true')
    assert rc != 0, output
    assert 'PLAY [Tune TCP for long fat networks]' not in output, 'the tuning play started:\n' + output
    for name in HOSTS:
        assert re.search(r'%s: There is no public HPN-SSH package source for Debian [0-9.]+ ' % name, output), output
    assert 'Give hpn_ssh_repository' in output and 'hpn_ssh_package_files' in output
    assert NOTHING_CHANGED in output
    assert 'changed=0' in output and not re.search(r'changed=[1-9]', output), output
    assert os.path.exists(HPN_CACHE) == cache
    assert_nothing_changed(host, before, state, output)


def test_every_problem_of_a_host_comes_in_one_message(controller):
    host, before, state = controller
    rc, output = host.run('-e', 'tcp_buffers_flows=four',
                          host_vars={'h2': {'bbr_qdisc': 'fq_codel', 'bbr_interfaces': ['eth 0'],
                                            'tcp_buffers_headroom': 1}})
    assert rc != 0, output
    assert 'Inputs of host h2 are not usable (4 problems):' in output, output
    assert 'Inputs of host h1 are not usable (1 problem):' in output, output
    for line in ("- bbr_qdisc: 'fq_codel' is not one of the choices", "- bbr_interfaces[0]: interface 'eth 0' is not",
                 '- tcp_buffers_headroom: 1 is outside 2 to 64', "- tcp_buffers_flows: 'four' is not usable"):
        assert line in output, output
    assert_nothing_changed(host, before, state, output)


def test_the_same_file_through_a_dot_is_refused(controller):
    # /dir/./x.conf is /dir/x.conf: two roles would share one file
    host, before, state = controller
    bbr_file = host.files['h1']['bbr_sysctl_file']
    same = os.path.join(os.path.dirname(bbr_file), '.', os.path.basename(bbr_file))
    rc, output = host.run(host_vars={'h1': {'tcp_buffers_sysctl_file': same}})
    assert rc != 0, output
    assert 'Inputs of host h1 are not usable (1 problem):' in output, output
    assert 'Inputs of host h2 are not usable' not in output, output
    assert re.search(r"- tcp_buffers_sysctl_file: '[^\n]* is also bbr_sysctl_file \('[^\n]*\); expected a file of its "
                     r'own for each role\.', output), output
    assert NOTHING_CHANGED in output
    assert_nothing_changed(host, before, state, output)


# -e strings that must pass and mean what they say (check mode: nothing is written)
GOOD = [
    ('false means false', ['-e', 'tcp_buffers_flows=4 tcp_buffers_companions=false bbr_verify=false '
                                 'tcp_buffers_memory_guard=false'], False),
    ('other spellings', ['-e', 'tcp_buffers_flows=8 tcp_buffers_companions=No bbr_verify=OFF '
                               'tcp_buffers_memory_guard=0 tcp_buffers_headroom=4'], False),
    ('true means true', ['-e', 'tcp_buffers_flows=4 tcp_buffers_companions=true bbr_verify=yes '
                               'tcp_buffers_memory_guard=on'], True),
]


@pytest.mark.parametrize('extra, companions', [case[1:] for case in GOOD], ids=[case[0] for case in GOOD])
def test_strings_from_minus_e_pass_and_mean_what_they_say(controller, extra, companions):
    host, before, state = controller
    rc, output = host.run('--check', '--diff', *extra)
    assert rc == 0, output
    assert 'PLAY [Tune TCP for long fat networks]' in output
    assert ('net.ipv4.tcp_sack' in output) is companions, output
    assert_nothing_changed(host, before, state, output)


def ran(output, role):
    """The tasks of ``role`` that ran (ok or changed) on some host, from the default callback's output."""
    tasks = []
    for block in output.split('\nTASK [')[1:]:
        title, body = block.split(']', 1)
        if title.startswith(role + ' : ') and re.search(r'^(ok|changed): ', body, re.M):
            tasks.append(title)
    return tasks


# Issue 15, item 5: a rollback needs no tuning inputs.  -e rsync_daemon_state=absent without rate and rtt was refused
# with "tcp_buffers_rate (-e rate=...) is not set"; now it is a rollback only (bbr and tcp_buffers, left at present,
# do not run), and wan_tune_state=absent rolls back every role without them.
@pytest.mark.parametrize('extra', [['-e', 'rsync_daemon_state=absent'], ['-e', 'wan_tune_state=absent'],
                                   ['-e', 'wan_tune_state=absent rsync_daemon=true']],
                         ids=['rsync_daemon_state=absent', 'wan_tune_state=absent', 'wan_tune_state=absent+rsync'])
def test_a_rollback_needs_no_tuning_inputs(controller, extra):
    host, before, state = controller
    rc, output = host.run(*extra, rate='')
    assert rc == 0, output
    assert 'is not set' not in output and 'Inputs of host' not in output, output
    assert 'PLAY RECAP' in output and 'failed=0' in output, output
    if 'rsync_daemon_state=absent' in extra:
        # a rollback only: the tuning roles did not run, the daemon's rollback did
        assert ran(output, 'bdp.wan_tune.tcp_buffers') == [] and ran(output, 'bdp.wan_tune.bbr') == [], output
        assert 'nothing to undo (the role had not changed this host)' in output, output
    assert_nothing_changed(host, before, state, output)


def test_a_rollback_with_a_rate_still_tunes_the_other_roles(controller):
    """With the tuning inputs given, the other roles run as before (here in check mode)."""
    host, before, state = controller
    rc, output = host.run('--check', '-e', 'rsync_daemon_state=absent')
    assert rc == 0, output
    assert ran(output, 'bdp.wan_tune.tcp_buffers'), output     # (bbr hands its request to the tcp_buffers call)
    assert_nothing_changed(host, before, state, output)
