# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only connection to the lab's and the Molecule scenarios' containers: nsenter, with pipelining."""

from __future__ import annotations

DOCUMENTATION = r"""
name: podman_nsenter
short_description: Run tasks in a local podman container through nsenter, with pipelining (tests only)
description:
  - The connection of the WAN lab and the Molecule scenarios (scripts/env.sh and each molecule.yml find it). Each
    module runs as one C(nsenter) into the container's namespaces with the container's own environment, its payload
    piped to the interpreter (always, with no setting; async tasks take Ansible's usual files), where
    containers.podman.podman starts four C(podman) processes (mount, mkdir, exec, rm) per module, each through
    conmon and runc.
  - Files go through C(dd) in the container, never through the host's view of its root, so symbolic links resolve
    inside the container.
  - What differs from C(podman exec), and does not matter for privileged containers run as root. The module
    processes keep the controller's cgroup and resource limits, and every capability; C(ansible_user) is not used
    (always root).
  - Needs root on the controller and a rootful container. Not part of the collection (build_ignore has tests/).
options:
  remote_addr:
    description: The container's name.
    type: str
    default: inventory_hostname
    vars:
      - name: inventory_hostname
      - name: ansible_host
  podman_executable:
    description: The podman command, to read the container's PID and environment.
    type: str
    default: podman
    vars:
      - name: ansible_podman_executable
"""

import json
import os
import shlex
import subprocess

from ansible import constants as C
from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.connection import ConnectionBase
from ansible.utils.display import Display

display = Display()


class Connection(ConnectionBase):
    """nsenter into a running podman container."""

    transport = "podman_nsenter"
    has_pipelining = True
    default_user = "root"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pid = None
        self._env = []

    def _connect(self):
        if self._connected:
            return self
        name = self.get_option("remote_addr")
        cmd = [self.get_option("podman_executable"), "container", "inspect",
               "--format", "{{.State.Pid}} {{json .Config.Env}}", name]
        proc = subprocess.run(cmd, capture_output=True, check=False)
        pid, _sep, env = to_text(proc.stdout).strip().partition(" ")
        if proc.returncode != 0 or not pid.isdigit() or pid == "0":
            raise AnsibleConnectionFailure("container %s is not running: %s" % (name, to_text(proc.stderr).strip()))
        self._pid = pid
        # what `podman exec` gives a process: the container's configured environment and root's home
        self._env = [var for var in json.loads(env) if not var.startswith("HOME=")] + ["HOME=/root"]
        display.vvv("NSENTER PID %s" % pid, host=name)
        self._connected = True
        return self

    def _run(self, argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, in_data=None):
        # --root and --wd without a value: the container's own root and working directory (--wd=/ would be the
        # controller's root, opened before nsenter enters the namespaces)
        cmd = ["nsenter", "--target", self._pid, "--all", "--root", "--wd", "--", "/usr/bin/env", "-i"]
        display.vvv("EXEC %s" % shlex.join(argv), host=self.get_option("remote_addr"))
        proc = subprocess.run([to_bytes(arg) for arg in cmd + self._env + argv], input=in_data,
                              stdin=None if in_data is not None else stdin, stdout=stdout,
                              stderr=subprocess.PIPE, check=False)
        if proc.returncode != 0 and not os.path.exists("/proc/%s/ns/mnt" % self._pid):
            raise AnsibleConnectionFailure("container %s stopped during the task" % self.get_option("remote_addr"))
        return proc.returncode, proc.stdout, proc.stderr

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        return self._run(["/bin/sh", "-c", cmd], in_data=in_data)

    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)
        with open(to_bytes(in_path, errors="surrogate_or_strict"), "rb") as source:
            rc, _out, err = self._run(["dd", "of=" + out_path, "bs=65536", "status=none"], stdin=source)
        if rc != 0:
            raise AnsibleError("failed to put %s to %s: %s" % (in_path, out_path, to_text(err)))

    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        with open(to_bytes(out_path, errors="surrogate_or_strict"), "wb") as target:
            rc, _out, err = self._run(["cat", "--", in_path], stdout=target)
        if rc != 0:
            raise AnsibleError("failed to fetch %s: %s" % (in_path, to_text(err)))

    def is_pipelining_enabled(self, wrap_async=False):
        """Always, but for async tasks and ANSIBLE_KEEP_REMOTE_FILES (as ConnectionBase decides with pipelining on)."""
        return not wrap_async and not C.DEFAULT_KEEP_REMOTE_FILES

    def close(self):
        self._connected = False
