#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: migrate_plan
short_description: Count a tree before it moves - files, bytes, hard links, attributes - and size its streams and parts
version_added: 0.4.0
description:
  - The migration's preflight. Walks O(source) on the sender once and keeps counts only (files, bytes with each
    inode once, directories, symbolic links and other entries, hard links, the largest file, the attributes a
    receiver may not keep), so that its memory does not grow with the tree (RV(peak_memory_kb)). It writes nothing -
    the migration's runner walks the tree again itself and cuts it into parts while it copies
    (C(module_utils/migrate/runner.py), docs/migration.md "How the copy proceeds").
  - O(streams=auto) takes the rule of C(module_utils/migrate/plan.py) (docs/migration.md, "How many streams") - one
    stream per 2 Gbit/s of O(rate_bps), and 4 for a tree of more than 1000 files of less than 256 kB on average -
    never more than O(max_streams) or the number of files.
  - RV(parts) are the limits at which the runner closes a part (20,000 names or 8 GiB, or less so that the tree makes
    at least one part per stream); rsync moves each file on one connection, so a file larger than a stream's share
    decides its stream's run, which RV(bound) says.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  source:
    description: The tree to move (an absolute directory on the sender).
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
    description: The path's rate in bit/s (C(migrate_rate)), for O(streams=auto) and the estimated time (0 when not
      known).
    type: int
    default: 0
  bwlimit_bps:
    description: The migration's limit in bit/s for all its streams (C(migrate_bwlimit)), for the estimated time (0
      when none) - the runner holds each stream to its share of it, so the time is at the lower of O(rate_bps) and
      the limit, and a file larger than a stream's share takes its stream's share.
    type: int
    default: 0
  excludes:
    description: rsync exclude patterns (C(migrate_exclude)) - what they match is left out of the counts, as rsync
      leaves it out of the copy (C(module_utils/migrate/excludes.py)).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Count the tree /data and size its streams
  bdp.wan_tune.migrate_plan:
    source: /data
    max_streams: 4
    rate_bps: 1000000000
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
  description: The bytes of all files, each inode once.
  returned: always
  type: int
files:
  description: The number of names of regular files.
  returned: always
  type: int
inodes:
  description: The number of regular files, each inode once.
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
  description: The preflight's peak memory on the sender (the module's largest resident set, C(VmHWM)), in kB.
  returned: always
  type: int
parts:
  description: The runner's part limits for this tree, C(files) (names) and C(bytes).
  returned: always
  type: dict
largest:
  description: The largest file, C(path) and C(bytes).
  returned: always
  type: dict
bound:
  description: What bounds the run when the largest file is more than a stream's share, or null.
  returned: always
  type: str
seconds:
  description: The time the tree takes at the lower of O(rate_bps) and O(bwlimit_bps) (the largest file at a
    stream's share of the limit, when that takes longer); the least time when only the limit is known; null when
    neither is.
  returned: always
  type: float
rate_bps:
  description: The rate of RV(seconds) for the whole tree, in bit/s (the limit as the runner applies it, a stream's
    share in whole KiB/s), or null.
  returned: always
  type: int
rate_by:
  description: What bounds RV(seconds) - V(migrate_rate) (the path's rate) or V(migrate_bwlimit) (the migration's
    limit), or null.
  returned: always
  type: str
estimate:
  description: The plan's words for RV(seconds) and what bounds it, such as "about 200 s at 40 Mbit/s
    (migrate_bwlimit, below migrate_rate's 500 Mbit/s)"; empty when no rate is known.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import excludes as _excludes
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import plan as _plan
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import target as _target


def main():
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type='path', required=True),
            streams=dict(type='str', default='auto'),
            max_streams=dict(type='int', required=True),
            rate_bps=dict(type='int', default=0),
            bwlimit_bps=dict(type='int', default=0),
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
    try:
        counts = _plan.survey(params['source'], params['excludes'])
    except _plan.PlanError as exc:
        module.fail_json(msg='migrate_source: %s; expected a directory the sender can read. Nothing was moved.' % exc)
    auto, reason = _plan.auto_streams(counts['inodes'], counts['bytes'], params['rate_bps'])
    try:
        count = _target.streams(params['streams'], auto, params['max_streams'])
    except _target.TargetError as exc:
        module.fail_json(msg=str(exc))
    if str(params['streams']).strip().lower() != 'auto':
        reason = 'migrate_streams=%d' % count
    elif count < auto:
        reason += ', held to the module\'s max connections'
    result = _plan.plan(counts, count, params['rate_bps'], params['bwlimit_bps'])
    result.update(changed=False, streams_reason=reason,
                  peak_memory_kb=_runner.peak_kb())
    module.exit_json(**result)


if __name__ == '__main__':
    main()
