# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""execution-environment.yml: ``scripts/build-ee.sh ansible-builder create`` builds the collection's tarball into
ee-build/ and ansible-builder accepts the definition and makes a build context with iperf3 in bindep and that tarball,
whatever galaxy.yml's version (building the image needs an RPM-based EE base image, which this machine cannot
fetch)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
BUILDER = os.path.join(BIN, 'ansible-builder')

pytestmark = pytest.mark.skipif(not os.path.exists(BUILDER), reason='ansible-builder is not installed (scripts/setup.sh)')


def galaxy_version(tree):
    with open(os.path.join(str(tree), 'galaxy.yml')) as handle:
        return str(yaml.safe_load(handle)['version'])


def test_the_documented_ansible_builder_path_prepares_ee_build_itself(tmp_path):
    """``scripts/build-ee.sh ansible-builder create`` in a checkout without ee-build/ (where a bare ansible-builder
    makes a context whose COPY fails), and with a tarball of an older version left there: the context holds one
    tarball, of galaxy.yml's version, and the Containerfile installs it whatever its version."""
    tree = tmp_path / 'checkout'
    skip = shutil.ignore_patterns('.cache', '.venv', '.git', 'results', 'ee-build', '__pycache__', '.pytest_cache', '*.tar.gz')
    shutil.copytree(ROOT, str(tree), ignore=skip)
    assert not (tree / 'ee-build').exists()
    with open(str(tree / 'galaxy.yml')) as handle:
        text = handle.read()
    version = galaxy_version(tree)
    with open(str(tree / 'galaxy.yml'), 'w') as handle:     # a release other than the one of the repository
        handle.write(text.replace('\nversion: %s\n' % version, '\nversion: 9.8.7\n'))
    assert galaxy_version(tree) == '9.8.7'
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ['PATH'])
    context = tmp_path / 'context'
    proc = subprocess.run(['bash', str(tree / 'scripts' / 'build-ee.sh'), 'ansible-builder', 'create', '--context',
                           str(context)], cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tree / 'ee-build' / 'bdp-wan_tune-0.0.1.tar.gz').write_bytes(b'an older build')
    proc = subprocess.run(['bash', str(tree / 'scripts' / 'build-ee.sh'), 'ansible-builder', 'create', '--context',
                           str(context)], cwd=str(tmp_path), env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.listdir(str(tree / 'ee-build')) == ['bdp-wan_tune-9.8.7.tar.gz']
    with open(str(context / '_build' / 'bindep.txt')) as handle:
        assert any(line.startswith('iperf3 ') for line in handle)
    assert os.listdir(str(context / '_build' / 'collections')) == ['bdp-wan_tune-9.8.7.tar.gz']
    with open(str(context / 'Containerfile')) as handle:
        containerfile = handle.read()
    assert 'ARG EE_BASE_IMAGE=' in containerfile
    assert 'COPY _build/collections/ /tmp/collections/' in containerfile
    assert ('--collections-path /usr/share/ansible/collections /tmp/collections/bdp-wan_tune-*.tar.gz'
            in containerfile), containerfile
    with open(str(context / '_build' / 'requirements.yml')) as handle:
        names = [item['name'] for item in yaml.safe_load(handle)['collections']]
    with open(str(tree / 'galaxy.yml')) as handle:
        dependencies = sorted(yaml.safe_load(handle)['dependencies'])
    # bdp.wan_tune is installed from ee-build/, not by a name with a version; its dependencies by name
    assert sorted(names) == dependencies, names
    with open(str(context / '_build' / 'requirements.txt')) as handle:
        assert 'cryptography<51' in handle.read().split()
