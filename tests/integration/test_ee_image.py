# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment that ``make ee`` builds (scripts/build-ee.sh, ee/Containerfile) meets the EE contract of
ansible-builder 3 and AWX, and holds the checkout's collection.

The image must exist (``make ee``); only a machine without podman skips. Each check runs the image with podman:
ansible-core and ansible-runner at requirements.txt's pins, bdp.wan_tune at galaxy.yml's version and community.crypto
3.x on the collections path, iperf3 and ssh, /runner as the working directory, an arbitrary non-root uid (gid 0) with a
writable HOME, and a playbook through ``ansible-runner run --process-isolation`` with the image. The installed
bdp.wan_tune must have the files of a build of the checkout (FILES.json, and plugins/module_utils/common/bdp.py
byte for byte): an image older than the checkout fails here, and ``make ee`` brings it up to date.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
IMAGE = os.environ.get('BDP_EE_IMAGE', 'localhost/bdp-wan-tune-ee:latest')
COLLECTION = '/usr/share/ansible/collections/ansible_collections/bdp/wan_tune'
PODMAN = shutil.which('podman')
ENV = dict(os.environ, CONTAINERS_CONF=os.environ.get('CONTAINERS_CONF', os.path.join(ROOT, 'scripts', 'containers.conf')))

pytestmark = pytest.mark.skipif(PODMAN is None, reason='podman is not installed (scripts/setup.sh installs it)')


def pin(name):
    with open(os.path.join(ROOT, 'requirements.txt')) as handle:
        for line in handle:
            match = re.match(r'%s==(\S+)' % re.escape(name), line.strip())
            if match:
                return match.group(1)
    raise AssertionError('requirements.txt pins no %s' % name)


def galaxy():
    with open(os.path.join(ROOT, 'galaxy.yml')) as handle:
        return yaml.safe_load(handle)


def podman(*args, **kwargs):
    return subprocess.run([PODMAN] + list(args), env=ENV, capture_output=True, text=True, check=False, timeout=300,
                          **kwargs)


def run(*command, user=None):
    """``podman run --rm [--user USER] IMAGE COMMAND...``: the completed process, asserted to exit 0."""
    args = ['run', '--rm'] + (['--user', user] if user else []) + [IMAGE] + list(command)
    proc = podman(*args)
    assert proc.returncode == 0, 'podman %s: rc %d\n%s%s' % (' '.join(args), proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope='module')
def inspect():
    proc = podman('image', 'inspect', IMAGE)
    if proc.returncode != 0:
        pytest.fail('no image %s: run make ee (scripts/build-ee.sh)\n%s' % (IMAGE, proc.stderr), pytrace=False)
    return json.loads(proc.stdout)[0]


@pytest.fixture(scope='module')
def checkout_build(inspect, tmp_path_factory):
    """FILES.json and the bytes of plugins/module_utils/common/bdp.py of the tarball the checkout builds."""
    out = tmp_path_factory.mktemp('build')
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', str(out), ROOT],
                   check=True, capture_output=True, text=True)
    tarball, = out.iterdir()
    with tarfile.open(str(tarball)) as tar:
        files = json.load(tar.extractfile('FILES.json'))
        bdp = tar.extractfile('plugins/module_utils/common/bdp.py').read()
    return files, bdp


def test_ee_metadata(inspect):
    config = inspect['Config']
    labels = config.get('Labels') or {}
    assert labels.get('ansible-execution-environment') == 'true'
    assert labels.get('org.bdp.wan_tune.build-hash'), 'no input hash label: not built by scripts/build-ee.sh'
    assert config.get('WorkingDir') == '/runner'
    assert config.get('Entrypoint') == ['/opt/builder/bin/entrypoint', 'dumb-init']
    assert '/sbin/init' not in (config.get('Cmd') or []), 'an EE runs commands, not systemd'
    assert 'HOME=/runner' in (config.get('Env') or [])


def test_ansible_core_and_runner(inspect):
    out = run('ansible-playbook', '--version').stdout
    assert re.search(r'\[core %s\]' % re.escape(pin('ansible-core')), out), out
    assert '[core 2.19.' in out, out
    assert run('ansible-runner', '--version').stdout.strip() == pin('ansible-runner')


def test_collections(inspect):
    out = run('ansible-galaxy', 'collection', 'list', '--format', 'json').stdout
    found = {}
    for collections in json.loads(out).values():
        for name, info in collections.items():
            found[name] = info['version']
    assert found.get('bdp.wan_tune') == galaxy()['version'], out
    assert found.get('community.crypto', '').startswith('3.'), out
    # every dependency galaxy.yml declares (ansible.posix and community.general: the rsync daemon's host firewall step)
    assert set(galaxy()['dependencies']) <= set(found), out
    # the table a user reads, with community.crypto's version
    table = run('ansible-galaxy', 'collection', 'list').stdout
    assert re.search(r'^community\.crypto\s+3\.\d+\.\d+', table, re.M), table
    assert re.search(r'^bdp\.wan_tune\s+%s' % re.escape(galaxy()['version']), table, re.M), table


def test_tools(inspect):
    assert 'iperf 3.' in run('iperf3', '--version').stdout
    proc = run('ssh', '-V')
    assert 'OpenSSH' in proc.stdout + proc.stderr


def test_working_directory(inspect):
    assert run('pwd').stdout.strip() == '/runner'


def test_arbitrary_uid(inspect):
    out = run('ansible', '--version', user='12345:0').stdout
    assert '[core 2.19.' in out, out
    # ssh and ansible's temporary files need a passwd entry and a writable HOME
    out = run('sh', '-c', 'id -u; getent passwd "$(id -u)" >/dev/null && echo passwd-ok; '
              'mkdir -p "$HOME/.ansible/tmp" && touch "$HOME/.ansible/tmp/x" && echo "home-ok $HOME"',
              user='12345:0').stdout.split()
    assert out[:3] == ['12345', 'passwd-ok', 'home-ok'], out


def test_collection_matches_checkout(inspect, checkout_build):
    files, bdp = checkout_build
    installed = json.loads(run('cat', COLLECTION + '/FILES.json').stdout)
    want = {item['name']: item['chksum_sha256'] for item in files['files']}
    have = {item['name']: item['chksum_sha256'] for item in installed['files']}
    differ = sorted(name for name in set(want) | set(have) if want.get(name) != have.get(name))
    assert not differ, ('the image %s does not hold the checkout\'s collection (stale: run make ee); files that differ: '
                        '%s' % (IMAGE, differ))
    image_bdp = podman('run', '--rm', IMAGE, 'cat', COLLECTION + '/plugins/module_utils/common/bdp.py')
    assert image_bdp.returncode == 0, image_bdp.stderr
    assert image_bdp.stdout.encode() == bdp, 'plugins/module_utils/common/bdp.py differs from the checkout: run make ee'


def test_ansible_runner_process_isolation(inspect, tmp_path):
    """The way ansible-runner (and AWX) use an EE: the command is passed, /runner is the private data dir."""
    runner = os.path.join(BIN, 'ansible-runner')
    if not os.path.exists(runner):
        pytest.fail('ansible-runner is not in the venv: run make setup (requirements.txt pins it)', pytrace=False)
    (tmp_path / 'project').mkdir()
    (tmp_path / 'inventory').mkdir()
    (tmp_path / 'inventory' / 'hosts').write_text('localhost ansible_connection=local\n')
    (tmp_path / 'project' / 'ee.yml').write_text(
        '- hosts: localhost\n'
        '  gather_facts: false\n'
        '  tasks:\n'
        '    - ansible.builtin.debug:\n'
        '        msg: "rate {{ \'1g\' | bdp.wan_tune.rate_bps }} python {{ ansible_playbook_python }}"\n')
    proc = subprocess.run([runner, 'run', str(tmp_path), '-p', 'ee.yml', '--process-isolation',
                           '--process-isolation-executable', 'podman', '--container-image', IMAGE],
                          env=ENV, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'rate 1000000000 python /opt/ansible/bin/python' in proc.stdout, proc.stdout
