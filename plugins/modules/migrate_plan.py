#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: migrate_plan
short_description: Read a tree and split its files into streams of about equal bytes, largest files first
version_added: 0.4.0
description:
  - Walks O(source) on the sender (files, directories, symbolic links and other entries) and partitions the files
    into O(streams) lists of about equal bytes, the largest files first (each file, largest first, goes to the stream
    with the fewest bytes so far). rsync moves each file on one connection, so a file larger than a stream's share
    decides its stream's run; the result says so in RV(bound).
  - O(streams=auto) takes the rule of C(module_utils/migrate/plan.py) (docs/migration.md, "How many streams") - one
    stream per 2 Gbit/s of O(rate_bps), and 4 for a tree of more than 1000 files of less than 256 kB on average -
    never more than O(max_streams) or the number of files.
  - Writes the lists (NUL-separated paths for rsync's C(--from0 --files-from)) and the list of the directories (whose
    modes and times a last pass sets) in O(run_dir), root's and 0700, where they differ from those there (changed
    only then).
  - In check mode it reads the tree and returns the plan, and writes nothing; neither does it while the migration
    runs (its O(unit) is active, or its runner holds the run's lock), whose lists they are.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  source:
    description: The tree to move (an absolute directory on the sender).
    type: path
    required: true
  run_dir:
    description: The migration's directory on the sender, for the lists (root's, 0700).
    type: path
    required: true
  streams:
    description: The number of streams, or V(auto).
    type: str
    default: auto
  max_streams:
    description: The most streams allowed (the receiving module's max connections).
    type: int
    required: true
  rate_bps:
    description: The path's rate in bit/s, for O(streams=auto) and the estimated time (0 when not known).
    type: int
    default: 0
  unit:
    description: The systemd unit of the migration (while it is active, the lists are not written).
    type: str
    required: true
  excludes:
    description: rsync exclude patterns (C(migrate_exclude)) - what they match is left out of the plan, as rsync
      leaves it out of the copy (C(module_utils/migrate/excludes.py)).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Plan the migration of /data in streams of about equal bytes
  bdp.wan_tune.migrate_plan:
    source: /data
    run_dir: /var/lib/bdp_wan_tune/migrate/bdp-migrate-dc2-a-incoming
    max_streams: 4
    rate_bps: 1000000000
    unit: bdp-migrate-dc2-a-incoming.service
  register: plan
"""

RETURN = r"""
streams:
  description: The number of streams.
  returned: always
  type: int
streams_reason:
  description: Why that many (the rule of O(streams=auto), or that it was given).
  returned: always
  type: str
bytes:
  description: The bytes of all files.
  returned: always
  type: int
files:
  description: The number of files.
  returned: always
  type: int
dirs:
  description: The number of directories.
  returned: always
  type: int
linked:
  description: The names of files beyond the first name of their inode (hard links), in RV(files).
  returned: always
  type: int
others:
  description: The symbolic links, devices, fifos and sockets.
  returned: always
  type: int
attributes:
  description: How many entries of the tree have C(acls), C(xattrs) (extended attributes other than ACLs and
    SELinux labels), C(sparse) (files with holes), C(devices) (0 when none).
  returned: always
  type: dict
peak_memory_kb:
  description: The plan's peak memory on the sender (the module's largest resident set), in kB.
  returned: always
  type: int
per_stream:
  description: Each stream's bytes and files.
  returned: always
  type: list
  elements: dict
largest:
  description: The largest file, C(path) and C(bytes).
  returned: always
  type: dict
bound:
  description: What bounds the run when the largest file is more than a stream's share, or null.
  returned: always
  type: str
seconds:
  description: The time the tree takes at O(rate_bps), or null.
  returned: always
  type: float
running:
  description: Whether a migration of this run directory runs; its lists are its own, and were not written.
  returned: always
  type: bool
"""

import os
import resource

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files as _files
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import excludes as _excludes
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import plan as _plan
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import target as _target
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import unit as _unit


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type='path', required=True),
            run_dir=dict(type='path', required=True),
            streams=dict(type='str', default='auto'),
            max_streams=dict(type='int', required=True),
            rate_bps=dict(type='int', default=0),
            unit=dict(type='str', required=True),
            excludes=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not os.path.isabs(params['source']):
        module.fail_json(msg='migrate_source: %s is not an absolute path; expected the tree to move, such as /data.'
                         % params['source'])
    problems = _excludes.check(params['excludes'])
    if problems:
        module.fail_json(msg=' '.join(problems))
    found = dict((name, 0) for name in ('acls', 'xattrs', 'sparse', 'devices'))
    try:
        tree_files, dirs, others = _plan.walk(params['source'], _excludes.compile_patterns(params['excludes']), found)
    except _plan.PlanError as exc:
        module.fail_json(msg='migrate_source: %s; expected a directory the sender can read. Nothing was moved.' % exc)
    auto, reason = _plan.auto_streams(_plan.groups(tree_files), params['rate_bps'])
    try:
        count = _target.streams(params['streams'], auto, params['max_streams'])
    except _target.TargetError as exc:
        module.fail_json(msg=str(exc))
    if str(params['streams']).strip().lower() != 'auto':
        reason = 'migrate_streams=%d' % count
    elif count < auto:
        reason += ', held to the module\'s max connections'
    result = _plan.plan(tree_files, dirs, others, count, params['rate_bps'])
    lists = result.pop('lists')
    result['streams_reason'] = reason
    result['attributes'] = found
    result['peak_memory_kb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wanted = dict((os.path.join(params['run_dir'], _runner.LISTS % index), _runner.nul_list(paths))
                  for index, paths in enumerate(lists))
    # '.' first: the tree's top directory gets its mode and times too
    wanted[os.path.join(params['run_dir'], _runner.DIRS_LIST)] = _runner.nul_list(['.'] + dirs)
    if _unit.active(module, params['unit'], params['run_dir']):
        # the lists of the migration that runs are its own: this plan is shown, not written
        result.update(changed=False, running=True)
        module.exit_json(**result)
    changed = [path for path, data in sorted(wanted.items()) if _files.read_bytes(path) != data]
    result.update(changed=bool(changed), running=False)
    if changed and not module.check_mode:
        _runner.private_dir(params['run_dir'])
        for path in changed:
            _files.write_atomic(module, path, wanted[path], mode=0o600)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
