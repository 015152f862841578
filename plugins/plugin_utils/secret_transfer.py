# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hand a secret to a module in a file, never as a module argument (controller side; action plugins only).

Ansible logs a module's arguments on the host (the journal's "Invoked with" line), masking no_log values by
matching their text; a value whose logged form is escaped (a backslash, both quote characters) is not masked.  A
secret that is never an argument cannot be logged that way: the action plugin renders the file content on the
controller, writes it to a 0600 file in Ansible's private local tmp dir, transfers it into the task's remote tmp dir
(0700, the connection user's) and passes only the remote path to the module.  The module takes it with
module_utils/common/files.py ``take_secret()`` (which removes it) and installs it with ``write_atomic(..., mode=0o600)``.
The action plugin removes the remote tmp dir when the module has run (``finish()``).

Action plugins call ``run_module()``, which transfers, runs the module and finishes: rsync_daemon_config (the rsyncd
secrets file), migrate_run (the rsync password), iperf3_server and iperf3_verify (a test's credentials).
"""

import os
import tempfile

from ansible import constants as C
from ansible.module_utils.common.text.converters import to_bytes


def transfer(action, content, name='secret'):
    """Transfer ``content`` (text or bytes) into the task's remote tmp dir as ``name``; the remote path.

    ``action`` is the running ActionBase.  The local copy exists only during the transfer, 0600 (mkstemp) in
    Ansible's per-process local tmp dir.  The remote tmp dir is made when the task has none yet; with become to an
    unprivileged user, Ansible's _fixup_perms2() makes the file readable to that user only (or refuses).
    """
    shell = action._connection._shell
    if shell.tmpdir is None:
        action._make_tmp_path()
    remote = shell.join_path(shell.tmpdir, name)
    fd, local = tempfile.mkstemp(dir=C.DEFAULT_LOCAL_TMP, prefix='.bdp-wan-tune-')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(to_bytes(content, errors='surrogate_or_strict'))
        action._transfer_file(local, remote)
    finally:
        os.unlink(local)
    action._fixup_perms2((shell.tmpdir, remote))
    return remote


def finish(action):
    """Remove the task's remote tmp dir (and a secret the module did not take, if it failed before)."""
    action._remove_tmp_path(action._connection._shell.tmpdir)


def run_module(action, module_name, args, task_vars, option, content, name):
    """Run ``module_name`` with ``args`` and ``option`` set to the remote path of ``content`` (transferred as
    ``name``); the module's result.  The remote tmp dir goes when the module has run, whatever happened."""
    try:
        args = dict(args)
        args[option] = transfer(action, content, name)
        return action._execute_module(module_name=module_name, module_args=args, task_vars=task_vars)
    finally:
        finish(action)
