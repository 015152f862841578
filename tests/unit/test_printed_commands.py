# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commands the rsync_daemon role prints for the senders (vars/main.yml __rsync_daemon_tls_commands), the manual
fallback of a migration: they hold no backslash and no double quote (Ansible's default output escapes both, and a
copied command would break), and the N-stream command, run by sh with a stand-in rsync-ssl that records its lists,
sends every file once, cleans up its lists, and exits 1 and says so when one stream fails."""

from __future__ import annotations

import os
import subprocess

import jinja2
import pytest
import yaml

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls

VARS = os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'rsync_daemon', 'vars', 'main.yml')
STAND_IN = '''#!/bin/sh
# rsync-ssl's stand-in: records the files of its list, fails when FAIL names one of them
for arg in "$@"; do case $arg in --files-from=*) list=${arg#--files-from=};; esac; done
cat "$list" >> "$RECORD"
if [ -n "$FAIL" ] && grep -qx "$FAIL" "$list"; then echo "rsync error: stand-in" >&2; exit 23; fi
exit 0
'''


def commands():
    with open(VARS, encoding='utf-8') as handle:
        return yaml.safe_load(handle)['__rsync_daemon_tls_commands']


def render(template, tmp_path, streams=3):
    text = jinja2.Environment().from_string(template).render(
        __rsync_daemon_tls=rsynctls.layout('m1'), __rsync_daemon_tls_url='rsync://u@h/m/')
    return text.replace('SRC', str(tmp_path / 'src')).replace('r/N', 'r/%d' % streams).replace(
        'PASSWORD_FILE', str(tmp_path / 'pw'))


@pytest.mark.parametrize('name', ['one_stream', 'n_streams'])
def test_no_backslash_and_no_double_quote(name):
    template = commands()[name]
    assert '\\\\' not in template and '"' not in template, template


@pytest.mark.parametrize('fail', ['', './d/f3'])
def test_every_stream_is_waited_for(tmp_path, fail):
    (tmp_path / 'src' / 'd').mkdir(parents=True)
    names = ['./d/f%d' % index for index in range(7)]
    for name in names:
        (tmp_path / 'src' / name).write_text('x')
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'bin' / 'rsync-ssl').write_text(STAND_IN)
    os.chmod(str(tmp_path / 'bin' / 'rsync-ssl'), 0o755)
    env = dict(os.environ, PATH='%s:%s' % (tmp_path / 'bin', os.environ['PATH']), RECORD=str(tmp_path / 'record'),
               FAIL=fail, TMPDIR=str(tmp_path / 'tmp'))
    (tmp_path / 'tmp').mkdir()
    proc = subprocess.run(['sh', '-c', render(commands()['n_streams'], tmp_path)], env=env, capture_output=True,
                          text=True, check=False)
    assert sorted((tmp_path / 'record').read_text().split()) == names       # each file once, in one of the lists
    assert os.listdir(str(tmp_path / 'tmp')) == []                          # the lists are gone
    if fail:
        assert proc.returncode == 1 and 'a stream failed' in proc.stderr and 'rsync error: stand-in' in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
