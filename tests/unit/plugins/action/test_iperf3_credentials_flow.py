# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugins iperf3_server and iperf3_verify in a real ansible-playbook run on localhost (the way
roles/verify/tasks/pair.yml calls them): the credentials are made, handed over in files, used for one test, and
nothing secret shows in the output at -vvv (the module arguments, the results) or stays behind on either side."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.bdp.wan_tune.plugins.modules import iperf3_server

PLAY = '''- hosts: localhost
  gather_facts: false
  tasks:
    - block:
        - bdp.wan_tune.iperf3_server:
            port: {port}
            pidfile: {pidfile}
            bind: 127.0.0.1
            authenticate: true
          register: server
        - ansible.builtin.copy:
            content: "{{{{ server.credentials }}}}\\n"
            dest: {tmp}/handle
            mode: "0600"
        - bdp.wan_tune.iperf3_verify:
            server: 127.0.0.1
            port: "{{{{ server.port }}}}"
            duration: 1
            omit: 0
            expected_bps: 100m
            retries: 0
            credentials: "{{{{ server.credentials }}}}"
          register: measured
        - ansible.builtin.assert:
            that: measured.passed and measured.measured
      always:
        - bdp.wan_tune.iperf3_server:
            port: {port}
            pidfile: {pidfile}
            credentials: "{{{{ server.credentials | default(omit) }}}}"
            state: absent
'''


@pytest.mark.skipif(shutil.which('iperf3') is None or os.geteuid() != 0,
                    reason='needs iperf3 and root (the server is started as nobody)')
def test_credentials_travel_in_files_and_serve_one_test(tmp_path):
    base = tempfile.mkdtemp(prefix='bdp-wan-tune-test-', dir='/var/tmp')
    os.chmod(base, 0o755)
    port = random.randrange(40000, 60000)
    while iperf3_server.bind_error(port, '127.0.0.1') is not None:
        port = random.randrange(40000, 60000)
    pidfile = os.path.join(base, 'iperf3-%d.pid' % port)
    local_tmp = tmp_path / 'ansible-local'
    local_tmp.mkdir()
    playbook = tmp_path / 'play.yml'
    playbook.write_text(PLAY.format(port=port, pidfile=pidfile, tmp=tmp_path))
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_LOCAL_TEMP=str(local_tmp), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    try:
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-vvv',
                               '-i', 'localhost,', '-c', 'local', str(playbook)],
                              capture_output=True, text=True, env=env, check=False, timeout=300)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-4000:]
        assert 'PRIVATE KEY' not in output and 'authorized_users' not in output
        assert not re.search(r'"password"|IPERF3_PASSWORD=', output)
        assert re.search(r'"auth_src": "[^"]+iperf3\.auth"', output)          # a path, twice: server and client
        handle = (tmp_path / 'handle').read_text().strip()
        assert re.match(r'^[0-9a-f]{32}$', handle)
        assert os.listdir(base) == []                  # the server's key, pidfile and log went with state: absent
    finally:
        pid = iperf3_server.read_pid(pidfile)
        if pid and iperf3_server.iperf3_process(pid, pidfile):
            os.kill(pid, 9)
        shutil.rmtree(base)
