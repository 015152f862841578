# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""execution-environment.yml: ansible-builder accepts it and makes a build context with iperf3 in bindep and the
collection tarball that ``ansible-galaxy collection build`` makes from galaxy.yml (building the image needs a
registry, which this machine does not reach)."""

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


def test_ansible_builder_creates_the_context(tmp_path):
    tree = tmp_path / 'checkout'
    skip = shutil.ignore_patterns('.cache', '.venv', '.git', 'results', 'ee-build', '__pycache__', '.pytest_cache', '*.tar.gz')
    shutil.copytree(ROOT, str(tree), ignore=skip)
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', 'ee-build'],
                   cwd=str(tree), check=True, capture_output=True, text=True)
    built = os.listdir(str(tree / 'ee-build'))
    with open(str(tree / 'ee' / 'requirements.yml')) as handle:
        wanted = [os.path.basename(item['name']) for item in yaml.safe_load(handle)['collections']
                  if item.get('type') == 'file']
    assert wanted == built, 'ee/requirements.yml names %s, but galaxy.yml builds %s' % (wanted, built)
    context = tmp_path / 'context'
    proc = subprocess.run([BUILDER, 'create', '-f', 'execution-environment.yml', '--context', str(context)],
                          cwd=str(tree), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(str(context / '_build' / 'bindep.txt')) as handle:
        assert any(line.startswith('iperf3 ') for line in handle)
    assert os.listdir(str(context / '_build' / 'collections')) == built
    with open(str(context / 'Containerfile')) as handle:
        containerfile = handle.read()
    assert 'ansible-galaxy collection install' in containerfile and 'ARG EE_BASE_IMAGE=' in containerfile
