# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recorded facts of each row of the support matrix (docs/platforms.md), and a check-mode run of a role's tasks that
sees them: ansible-playbook --check against localhost with the facts passed as ansible_facts (-e @vars.json), as
test_rsync_tls_platforms.py and test_hpn_ssh_sources.py do with facts they write themselves.

The fixtures (tests/unit/fixtures/platforms/<distribution>-<version>.json) hold the facts the roles read, in the
shape real hosts of each kind report them (distribution, versions, os_family, pkg_mgr, service_mgr, selinux, python,
interfaces, default_ipv4 and the interface's own dict); they are written from that shape, not captured here.
"""

from __future__ import annotations

import json
import os
import subprocess

from labenv import ROOT, ansible_env

FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'platforms')
ROWS = sorted(name[:-len('.json')] for name in os.listdir(FIXTURES) if name.endswith('.json'))


def facts(name):
    """The recorded ansible_facts of one fixture ('rocky-9')."""
    with open(os.path.join(FIXTURES, name + '.json')) as handle:
        return json.load(handle)


def run_check(tmp_path, playbook, variables):
    """ansible-playbook --check of ``playbook`` (its text, or the path of one of the collection's playbooks) against
    localhost with ``variables`` as extra variables (among them ansible_facts); (exit code, [(play name, task name,
    localhost's result)]) from the json callback."""
    path = playbook if playbook.endswith('.yml') else str(tmp_path / 'play.yml')
    if path != playbook:
        (tmp_path / 'play.yml').write_text(playbook)
    (tmp_path / 'vars.json').write_text(json.dumps(variables))
    env = dict(ansible_env(), ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    proc = subprocess.run(['ansible-playbook', '--check', '-c', 'local', '-i', 'localhost,', path,
                           '-e', '@' + str(tmp_path / 'vars.json')],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    report = json.loads(proc.stdout)
    return proc.returncode, [(play['play']['name'], task['task']['name'], task['hosts'].get('localhost', {}))
                             for play in report['plays'] for task in play['tasks']]
