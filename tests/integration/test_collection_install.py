# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The README's quick start, from a checkout, as a new user runs it (issue 15, item 6).

A copy of the checkout's tracked files gets the local clutter a user's checkout has (an inventory, results/,
.cache/, .venv/, test output, a tarball, ee-build/). Then:

- ``ansible-galaxy collection build`` must leave every piece of that clutter out of the tarball and keep the
  collection's own files (build_ignore in galaxy.yml);
- ``ansible-galaxy collection install .`` from the checkout must not copy it either;
- the installed tarball, and nothing else on the collections path, must run the quick start: preview
  (``bdp.wan_tune.wan_tune --check --diff``) and undo preview (``-e wan_tune_state=absent --check``) against the
  controller with a local connection, and the verify playbook must parse. Check mode: nothing on the controller
  changes (asserted on the live values).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tarfile

import pytest

from procsys import read

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# Where the `ansible` package put its collections (community.crypto among them).
SITE_PACKAGES = sysconfig.get_paths()['purelib']
KEYS = ('net.core.rmem_max', 'net.core.wmem_max', 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem',
        'net.ipv4.tcp_congestion_control')
# What a user's checkout holds besides the collection (relative path: content).
CLUTTER = {
    'inventory.ini': '[transfer_nodes]\ndc1-a ansible_host=198.18.0.1\n',
    'inventory/hosts.yml': 'all: {}\n',
    'playbooks/inventory.ini': '[x]\n',
    'results/verify/report.md': '# report\n',
    'results/demo-1.json': '{}\n',
    '.cache/collections/marker': 'x\n',
    '.venv/bin/marker': 'x\n',
    'tests/output/junit.xml': '<x/>\n',
    '.pytest_cache/v/cache/lastfailed': '{}\n',
    'plugins/module_utils/common/__pycache__/bdp.cpython-311.pyc': 'x\n',
    'bdp-wan_tune-0.0.9.tar.gz': 'x\n',
    'ee-build/context/Containerfile': 'FROM x\n',
}
# Directories that hold only clutter (or, for tests/, nothing an installed collection uses).
CLUTTER_DIRS = ('inventory', 'results', '.cache', '.venv', 'tests', '.pytest_cache', 'ee-build',
                'plugins/module_utils/common/__pycache__')
# Files the collection cannot work without: each must be in the tarball and in the installed copy.
REQUIRED = ('MANIFEST.json', 'FILES.json', 'README.md', 'meta/runtime.yml', 'playbooks/wan_tune.yml',
            'playbooks/verify.yml', 'playbooks/tasks/canary.yml', 'plugins/action/validate_inputs.py',
            'plugins/module_utils/common/bdp.py', 'plugins/modules/sysctl_dropin.py', 'roles/tcp_buffers/tasks/main.yml',
            'roles/bbr/meta/argument_specs.yml', 'roles/verify/tasks/main.yml', 'docs/roles.md')

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason='previews the roles on the controller: needs root')


def run(cmd, env=None, cwd=None):
    proc_ = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False, env=env, cwd=cwd)
    return proc_.returncode, proc_.stdout + proc_.stderr


def leaked(paths):
    """The clutter among ``paths`` (relative paths of files and directories)."""
    return sorted(path for path in paths
                  if path in CLUTTER or any(path == top or path.startswith(top + '/') for top in CLUTTER_DIRS))


@pytest.fixture(scope='module')
def checkout(tmp_path_factory):
    """A copy of the checkout's tracked files plus the clutter, laid out as a user's clone."""
    src = tmp_path_factory.mktemp('checkout') / 'wan_tune'
    files = subprocess.run(['git', '-C', ROOT, 'ls-files', '-z'], capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split('\0')):
        if not os.path.isfile(os.path.join(ROOT, rel)):
            continue                            # deleted in the worktree, not yet committed
        os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
        with open(os.path.join(ROOT, rel), 'rb') as source, open(os.path.join(src, rel), 'wb') as target:
            target.write(source.read())
    for rel, text in CLUTTER.items():
        os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
        with open(os.path.join(src, rel), 'w') as handle:
            handle.write(text)
    return str(src)


@pytest.fixture(scope='module')
def tarball(checkout, tmp_path_factory):
    out = tmp_path_factory.mktemp('build')
    rc, output = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', str(out),
                      checkout])
    assert rc == 0, output
    built = [name for name in os.listdir(out) if name.endswith('.tar.gz')]
    assert len(built) == 1 and re.match(r'bdp-wan_tune-[0-9.]+\.tar\.gz$', built[0]), built
    return os.path.join(out, built[0])


def installed_files(collections_path):
    base = os.path.join(collections_path, 'ansible_collections', 'bdp', 'wan_tune')
    found = set()
    for directory, dirs, names in os.walk(base):
        for name in dirs + names:
            found.add(os.path.relpath(os.path.join(directory, name), base))
    return found


def test_the_build_leaves_out_local_inventories_results_caches_and_venv(tarball):
    with tarfile.open(tarball) as archive:
        members = set(os.path.normpath(member.name) for member in archive.getmembers())
    assert not [path for path in members if path.endswith('.pyc') or '__pycache__' in path], sorted(members)
    assert not leaked(members), leaked(members)
    assert not [path for path in members if path.split('/')[0] in ('molecule', 'scripts')], sorted(members)
    missing = [path for path in REQUIRED if path not in members]
    assert not missing, 'the build lost files the collection needs: %s' % missing


def test_install_from_the_checkout_copies_no_local_files(checkout, tmp_path):
    # Only the target on the collections path: the test's own environment has this checkout on it, and
    # ansible-galaxy would find bdp.wan_tune "already installed" there.
    rc, output = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--no-deps', '.', '-p',
                      str(tmp_path)], cwd=checkout, env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path)))
    assert rc == 0, output
    found = installed_files(str(tmp_path))
    assert not leaked(found), leaked(found)
    assert not [path for path in found if path.endswith('.pyc')], 'compiled files copied'
    missing = [path for path in REQUIRED if path not in found]
    assert not missing, missing


def test_the_quick_start_runs_from_the_installed_tarball(tarball, tmp_path):
    collections = tmp_path / 'collections'
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_LOCALHOST_WARNING='false')
    env.pop('ANSIBLE_CONFIG', None)
    # Galaxy is unreachable here: the dependency (community.crypto) comes from the `ansible` package, as the README
    # says for a control node without Galaxy, and the collection is installed with --no-deps.
    rc, output = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--no-deps', tarball, '-p',
                      str(collections)], env=env)
    assert rc == 0, output
    env['ANSIBLE_COLLECTIONS_PATH'] = '%s:%s' % (collections, SITE_PACKAGES)
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('[transfer_nodes]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n'
                         % sys.executable)
    play = [os.path.join(BIN, 'ansible-playbook'), '-i', str(inventory)]
    before = dict((key, read(key)) for key in KEYS)
    # The checkout is not on the collections path: the playbook's modules resolve only from the installed copy.
    # There is no sudo on the controller and the test runs as root, so become is off.
    rc, output = run(play + ['bdp.wan_tune.wan_tune', '-e', 'rate=1g rtt=98', '-e', 'wan_tune_become=false',
                             '--check', '--diff'], env=env, cwd=str(tmp_path))
    assert rc == 0, output
    assert re.search(r'^localhost\s*:.*failed=0', output, re.M), output
    assert 'net.core.rmem_max' in output, output
    # The copy that ran is the installed one, the only one Ansible sees.
    listed = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'list', 'bdp.wan_tune'], env=env)[1]
    assert re.findall(r'^# (.*)$', listed, re.M) == [str(collections / 'ansible_collections')], listed
    # and its dependency resolves from the `ansible` package
    listed = run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'list', 'community.crypto'], env=env)[1]
    assert re.search(r'^community\.crypto\s+3\.', listed, re.M), listed
    rc, output = run(play + ['bdp.wan_tune.wan_tune', '-e', 'wan_tune_state=absent', '-e', 'wan_tune_become=false',
                             '--check'], env=env, cwd=str(tmp_path))
    assert rc == 0, output
    rc, output = run(play + ['bdp.wan_tune.verify', '-e', 'rate=1g rtt=98', '--syntax-check'], env=env,
                     cwd=str(tmp_path))
    assert rc == 0, output
    assert dict((key, read(key)) for key in KEYS) == before, 'check mode changed live values'
