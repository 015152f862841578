#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: migrate_status
short_description: Read how a migration is going on the sender, wait for it with a progress line, or stop it
version_added: 0.4.0
description:
  - Reads the migration's unit and the state its runner writes in O(run_dir) - the phase (counting deletes,
    destination, copying, deleting, proving, resending, proving again, proving deletes, directories; done, failed,
    stopped, refused (a mirror pass past its guard); interrupted when the unit is gone before the runner ended, as
    after SIGKILL or a reboot), the bytes and files moved, the walk that lists the tree while the copy runs (listing
    or listed, and how much so far - the totals are known once it ends), each stream's bytes, files, parts and times,
    the proof.
  - With O(wait) (the action plugin), it reads again every O(interval) seconds until the unit has ended, and shows one
    progress line each time on the controller (bytes, %, files and files per second, Mbit/s, ETA, and while the tree
    is still being listed, how much is listed so far); Ctrl-C on the controller leaves the migration running, and a
    later run with C(migrate_action=status) comes back to it.
  - O(stop=true) stops the unit (the runner ends its streams with SIGTERM; the partial files stay for the next run
    and the password file goes).
  - O(limit_bps) changes the rate of the migration that runs (C(migrate_action=limit)) - it writes the new limit into
    the run's config and tells the runner (SIGHUP to the unit's main process only), which restarts its running
    rsyncs with it; the parts done stay done, and each restarted part continues from what the rsync before sent (the
    partial files, rsync's quick check), so nothing is sent twice. Later parts and phases (the proof, a second
    sending) take it too.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  run_dir:
    description: The migration's directory on the sender.
    type: path
    required: true
  unit:
    description: The migration's systemd unit.
    type: str
    required: true
  stop:
    description: Stop the migration.
    type: bool
    default: false
  wait:
    description: Wait until the migration has ended, with a progress line every O(interval) seconds (the action
      plugin; the module itself reads once).
    type: bool
    default: false
  interval:
    description: Seconds between two progress lines with O(wait).
    type: int
    default: 30
  limit_bps:
    description: A new limit for the migration that runs, in bit/s for all its streams together; V(0) removes the
      limit. Nothing changes when the migration does not run, or runs at that limit already.
    type: int
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Wait for the migration, with a progress line about every 30 s
  bdp.wan_tune.migrate_status:
    run_dir: /var/lib/bdp_wan_tune/migrate/bdp-migrate-dc2-a-incoming
    unit: bdp-migrate-dc2-a-incoming.service
    wait: true
  register: migration
"""

RETURN = r"""
active:
  description: Whether the unit runs.
  returned: always
  type: bool
state:
  description: The runner's phase (none when it never ran); interrupted when the unit is gone before the runner
    ended.
  returned: always
  type: str
bwlimit_bps:
  description: The limit of the migration (the last run's config) in bit/s for all its streams, 0 for none.
  returned: always
  type: int
line:
  description: The progress line of a migration that runs (bytes, %, files, Mbit/s, ETA, phase, streams); empty
    when it does not run.
  returned: always
  type: str
progress:
  description: The runner's state (bytes_total, bytes_done, files, files_done, walk, streams, first_rsync,
    first_byte, peak_rss_kb, started, ended, phases, proof, verified, mismatches, differs_at_receiver and
    differs_at_receiver_names, vanished and vanished_names, resent_bytes, literal_bytes, tree_present_bytes,
    bwlimit_bps, bwlimit_start_bps, limits, cpu_seconds, message, runs, summary, history), or null.
  returned: always
  type: dict
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import unit as _unit

ENDED = ('done', 'failed', 'stopped', 'refused')


def unstarted(config, previous, unit, active=False):
    """The progress of a start whose runner has written none yet: the figures of its config, no end of its own (the
    state there is the run's before) - starting while its unit runs, failed when the unit ended first."""
    out = dict((key, config.get(key)) for key in ('id', 'run_id', 'plan', 'proof', 'transport', 'files',
                                                  'present_bytes', 'bwlimit_bps'))
    out.update(state='starting' if active else 'failed', runs=(previous or {}).get('runs'),
               started=float(config['run_id']), ended=None, bytes_total=config.get('bytes'),
               stream_count=config.get('streams'), bytes_done=0, streams=[], phases={},
               message='' if active else 'the last start of the migration ended before its runner wrote anything: '
               'see journalctl -u %s on the sender' % unit)
    return out


def read(module, params):
    """{active, state, progress, bwlimit_bps}: interrupted when the unit is gone before the runner ended; the state of
    an earlier run is not this run's (the runner of the last start has not written any yet, or ended before it
    did); the limit is the run's config's (migrate_action=limit changes it)."""
    active = _unit.active(module, params['unit'], params['run_dir'])
    progress = _runner.read_state(params['run_dir'])
    config = _runner.read_json(os.path.join(params['run_dir'], _runner.CONFIG)) or {}
    state = (progress or {}).get('state')
    if config.get('run_id') and (progress or {}).get('run_id') != config['run_id']:
        progress = unstarted(config, progress, params['unit'], active)
        state = progress['state']
    elif not active and state is not None and state not in ENDED:
        state = 'interrupted'
    return {'active': active, 'state': state, 'progress': progress, 'bwlimit_bps': config.get('bwlimit_bps') or 0}


def limit(module, params, result):
    """Give the running migration the limit ``limit_bps``: in its config, and to its runner (SIGHUP)."""
    path = os.path.join(params['run_dir'], _runner.CONFIG)
    config = _runner.read_json(path) or {}
    result['limit_bps'] = params['limit_bps']
    if not result['active'] or config.get('bwlimit_bps', 0) == params['limit_bps']:
        return
    result['changed'] = True
    if module.check_mode:
        return
    _runner.write_json(path, dict(config, bwlimit_bps=params['limit_bps']))
    rc, dummy, err = module.run_command([module.get_bin_path('systemctl', required=True), 'kill',
                                        '--kill-whom=main', '--signal=HUP', params['unit']])
    if rc != 0:
        module.fail_json(msg='The new limit is in %s, but %s could not be told (systemctl kill: %s); it applies to the '
                             'next pass.' % (path, params['unit'], ' '.join(err.split())[:300]), **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            run_dir=dict(type='path', required=True),
            unit=dict(type='str', required=True),
            stop=dict(type='bool', default=False),
            wait=dict(type='bool', default=False),
            interval=dict(type='int', default=30),
            limit_bps=dict(type='int'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = dict(read(module, params), changed=False)
    if params['limit_bps'] is not None:
        limit(module, params, result)
    if params['stop'] and result['active']:
        result['changed'] = True
        if not module.check_mode:
            module.run_command([module.get_bin_path('systemctl', required=True), 'stop', params['unit']])
            for dummy in range(30):
                result.update(read(module, params))
                if not result['active']:
                    break
                time.sleep(1)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
