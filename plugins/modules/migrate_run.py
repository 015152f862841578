#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: migrate_run
short_description: Start a migration on the sender as a systemd unit of its own, which outlives the controller
version_added: 0.4.0
description:
  - Writes the migration's runner (C(module_utils/migrate/runner.py), as it is, with the two files it imports,
    C(tree.py) and C(excludes.py)), its O(config) and the password file into O(run_dir) (root's, 0700; the config
    and the password 0600 from their first byte) and starts the runner as the transient unit O(unit) with
    C(systemd-run), so that Ctrl-C on the controller, a lost SSH session or a closed laptop do not stop it. The
    runner walks the tree and moves it in parts over its streams while it walks, proves the copy and removes the
    password file when it ends.
  - The password is never a module argument. The action plugin reads it from the receiver's C(rsync_daemon_users)
    (the inventory the receiver was set up with, typically vaulted) on the controller and hands it over in a file;
    the runner gives it to rsync with C(--password-file), never on a command line or in the unit's environment.
  - When O(unit) runs already (a migration of the same sender, receiver and module; or its runner still holds the
    run's lock), nothing is written and nothing is started, and the result says so (RV(running)). Two runs that start
    at once take a lock in O(run_dir), and the second finds the first's unit.
  - Over TLS, the runner gets its own copy of the sender's client identity (the trust anchor, the certificate and the
    key that C(identity) names, copied into O(run_dir), the key 0600 from its first byte), and C(command) and C(env)
    are built again for the copies (rsync with openssl's C(s_client) as its C(RSYNC_CONNECT_PROG)), so that a
    certificate renewed or issued anew, or files released by the rsync_daemon role, while the pass runs do not change
    or cut it.
  - No key material outlives the unit. The unit removes the password file and the identity's copies when it ends,
    however it ends (success, failure, a stop, SIGKILL - C(ExecStopPost)); the runner removes the password too. A
    start that fails at any step removes what it wrote, and every start first removes what an ended run left (one
    whose C(ExecStopPost) never ran, because the host rebooted or lost power), so removing or re-issuing the
    sender's identity leaves no copy behind once its last pass ended.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  receiver:
    description: The receiver's inventory name, whose C(rsync_daemon_users) hold O(user)'s password.
    type: str
    required: true
  user:
    description: The rsync user that writes the module.
    type: str
    required: true
  run_dir:
    description: The migration's directory on the sender (root's, 0700; the runner's parts and state are there).
    type: path
    required: true
  unit:
    description: The systemd unit that runs the migration.
    type: str
    required: true
  config:
    description: What the runner moves and where - C(id), C(source), C(url), C(transport), C(command) and C(env)
      (the TLS client's start and environment, or rsync's), C(identity) (the sender's C(ca), C(cert) and C(key) files
      of the TLS client) and C(port) (the daemon's port), C(owners), C(bytes) and C(files) (the preflight's counts),
      C(streams), C(part_files) and C(part_bytes) (a part closes at so many names or bytes; bdp.wan_tune.migrate_plan's
      C(parts)), C(plan), C(proof), C(present_bytes), C(cpu_before), C(bwlimit_bps), C(delete), C(max_delete),
      C(excludes), C(preserve) (C(acls), C(xattrs), C(sparse)) and C(attributes) (what the tree has of them).
    type: dict
    required: true
  secret_src:
    description: Internal, set by the action plugin; the password file in Ansible's remote tmp dir, taken (removed)
      by the module. Setting it in a task is refused.
    type: path
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Start the migration (the password comes from the receiver's rsync_daemon_users)
  bdp.wan_tune.migrate_run:
    receiver: dc2-a
    user: migrate
    run_dir: /var/lib/bdp_wan_tune/migrate/bdp-migrate-dc2-a-incoming
    unit: bdp-migrate-dc2-a-incoming.service
    config: "{{ migrate_config }}"
"""

RETURN = r"""
started:
  description: Whether the unit was started (or would be, in check mode).
  returned: always
  type: bool
running:
  description: Whether the unit ran already, so that nothing was started.
  returned: always
  type: bool
unit:
  description: The unit.
  returned: always
  type: str
run_id:
  description: The run's id (in the config and the state the runner writes).
  returned: when started
  type: str
"""

import fcntl
import inspect
import json
import os
import re
import sys
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files as _files
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import excludes as _excludes
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import tree as _tree
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import unit as _unit
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls as _rsynctls

RUNNER = 'runner.py'
START_LOCK = 'start.lock'
# the run directory goes into the unit's ExecStopPost= line, where systemd reads quotes, % and $ as its own
RUN_DIR_RE = re.compile(r'^/[A-Za-z0-9_./@+-]+$')


# The sender's client identity the runner uses (config's identity: rsync_daemon's files for the receiver), and the
# names of their copies in the run's directory (the key root's and 0600, the others 0644).
IDENTITY = (('ca', 'tls-ca.crt', 0o644), ('cert', 'tls-host.crt', 0o644), ('key', 'tls-host.key', 0o600))


def secret_files(run_dir):
    """The files of a run that hold key material: the password and the identity's copies. The unit's ExecStopPost=
    removes them when it ends, however it ends; a start removes what a run that never reached its ExecStopPost= (the
    host rebooted or lost power) left."""
    return [os.path.join(run_dir, _runner.PASSWORD)] + [os.path.join(run_dir, name) for var, name, mode in IDENTITY]


def remove_secrets(run_dir):
    """Remove the key material an ended run left in ``run_dir``; the paths removed."""
    removed = []
    for path in secret_files(run_dir):
        if os.path.lexists(path):
            os.unlink(path)
            removed.append(path)
    return removed


def own_identity(module, run_dir, config, result):
    """The TLS client's command and environment (rsynctls.client_command, the one place of both) for the identity's
    files copied into ``run_dir``: the pass keeps them, whatever the rsync_daemon role renews, re-issues or removes
    while it runs.  (command, env) of the config as they are in cleartext."""
    identity = config.get('identity') or {}
    if config.get('transport') != 'tls' or not identity:
        return config.get('command'), config.get('env') or {}
    copies = {}
    for key, name, mode in IDENTITY:
        data = _files.read_bytes(identity.get(key) or '')
        if data is None:
            module.fail_json(msg='%s (the client %s) cannot be read: the sender has no client identity for the '
                                 'receiver\'s migration; run the rsync_daemon role for the receiver (-e '
                                 'rsync_daemon=true), which gives its senders one. Nothing was moved.'
                                 % (identity.get(key), key), **result)
        copies[key] = os.path.join(run_dir, name)
        _files.write_atomic(module, copies[key], data, mode=mode)
    return _rsynctls.client_command(copies, config['port'])


def start(module, params, secret, result):
    """Write the run's files and start the unit, under the start lock (one starter at a time), unless it runs."""
    run_dir = params['run_dir']
    _runner.private_dir(run_dir)
    lock = os.open(os.path.join(run_dir, START_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _unit.active(module, params['unit'], run_dir):         # another run started it meanwhile
            result.update(changed=False, started=False, running=True)
            return
        remove_secrets(run_dir)                 # an ended run's, if its ExecStopPost= never ran (a reboot)
        started = False
        try:
            started = start_unit(module, params, secret, result)
        finally:
            if not started:                     # a failure of any step: no key material stays behind
                remove_secrets(run_dir)
    finally:
        os.close(lock)


def start_unit(module, params, secret, result):
    """Write the run's files and start its unit; True when it started (else fail_json)."""
    run_dir = params['run_dir']
    config = dict(params['config'], run_id='%.6f' % time.time())
    config['command'], config['env'] = own_identity(module, run_dir, config, result)
    for name, source, mode in ((RUNNER, _runner, 0o700), ('tree.py', _tree, 0o600),
                               ('excludes.py', _excludes, 0o600)):
        _files.write_atomic(module, os.path.join(run_dir, name), inspect.getsource(source), mode=mode)
    _files.write_atomic(module, os.path.join(run_dir, _runner.CONFIG), json.dumps(config, indent=1), mode=0o600)
    _files.write_atomic(module, os.path.join(run_dir, _runner.PASSWORD), secret.rstrip(b'\n') + b'\n', mode=0o600)
    # the password and the identity's copies go when the unit ends, however it ends (success, failure, a stop,
    # SIGKILL, a crash of the runner)
    argv = [module.get_bin_path('systemd-run', required=True), '--unit=' + params['unit'], '--collect',
            '--property=CPUAccounting=yes',
            '--property=ExecStopPost=/bin/rm -f ' + ' '.join(secret_files(run_dir)),
            '--working-directory=' + run_dir,
            '--description=bdp.wan_tune migration to %s (%s)' % (params['receiver'], config.get('url')),
            sys.executable, os.path.join(run_dir, RUNNER), run_dir]
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg='systemd-run could not start %s (rc %d): %s. Nothing was moved; the password file and '
                         'the key copies this run wrote were removed.'
                         % (params['unit'], rc, ' '.join(err.split())[:300]), **result)
    result['run_id'] = config['run_id']
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            receiver=dict(type='str', required=True),
            user=dict(type='str', required=True),
            run_dir=dict(type='path', required=True),
            unit=dict(type='str', required=True),
            config=dict(type='dict', required=True),
            secret_src=dict(type='path', no_log=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = {'changed': False, 'started': False, 'running': False, 'unit': params['unit']}
    secret = _files.take_secret(params['secret_src']) if params['secret_src'] else None
    if not RUN_DIR_RE.match(params['run_dir']):
        module.fail_json(msg='wan_tune_state_dir: the run directory %r has characters that a systemd unit line would '
                         'read as its own; expected an absolute path of letters, digits and _ . / @ + -, such as '
                         '/var/lib/bdp_wan_tune.' % params['run_dir'], **result)
    if _unit.active(module, params['unit'], params['run_dir']):
        result['running'] = True
        module.exit_json(**result)
    result.update(changed=True, started=True)
    if module.check_mode:
        module.exit_json(**result)
    if secret is None:
        module.fail_json(msg='No password file was handed over; run the module through its action plugin.', **result)
    start(module, params, secret, result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
