#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: migrate_report
short_description: Make a migration pass's report on the controller, and write its JSON
version_added: 0.4.0
description:
  - Makes the report of one migration pass (C(module_utils/migrate/report.py)) from what bdp.wan_tune.migrate_status
    read on the sender (the runner's state holds the plan, the passes before this one and the receiver's CPU time
    before the pass) and the destination, and writes C(migrate-<end of the pass>-<sender>-<receiver>.json) into
    O(report_dir) (made when missing), whole (atomically) when its content changed. Run it on the controller
    (C(delegate_to=localhost)). The migrate role renders the C(.md) and C(.html) pages of RV(paths) from RV(run)
    with its templates.
  - The JSON holds C(bytes), C(files), C(seconds) (the copying phase), C(proof_seconds), C(total_seconds) (the
    whole pass, as the sender's runner measured it), C(sent_bytes) and C(files_sent) (what this pass sent),
    C(goodput_bps) (what it sent over its copying phase), C(present_bytes) (what the receiver held of the tree before
    it), C(streams), C(transport), C(verified), C(mismatches) (C(changed_at_source), C(differs_at_receiver) with
    C(differs_at_receiver_names)), C(resent_bytes), C(vanished) with C(vanished_names), C(deleted) with
    C(deleted_names) (the first 50 names of each), C(extra), C(excludes), C(bwlimit_bps) and C(limits) (the rate at
    the start and each change), C(kept) and C(not_kept) (what the pass kept of the tree's attributes), C(passes)
    (each pass's state, bytes and files sent, deletes, vanished, changed at the source, differs at the receiver,
    copy, proof and whole pass seconds, goodput), the start-up seconds, each stream's bytes, files, times, rsync exit
    and CPU seconds, the CPU seconds per GB on each end, C(verdict), C(line) (the playbook's last line) and C(rows)
    (the pages' tables and lists of names, as text).
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  report_dir:
    description: The directory on the controller for the report files.
    type: path
    required: true
  status:
    description: The result of bdp.wan_tune.migrate_status.
    type: dict
    required: true
  target:
    description: The destination (receiver, module, dest, transport).
    type: dict
    required: true
  sender:
    description: The sender's inventory name.
    type: str
    required: true
  receiver_cpu_ns:
    description: The CPU time of the receiver's daemon now, in ns (C(systemctl show -P CPUUsageNSec)); null when its
      systemd does not account for it.
    type: int
extends_documentation_fragment:
  - bdp.wan_tune.attributes.controller
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Write the migration's report on the controller
  bdp.wan_tune.migrate_report:
    report_dir: "{{ migrate_report_dir }}"
    status: "{{ migration }}"
    target: "{{ target }}"
    sender: "{{ inventory_hostname }}"
  delegate_to: localhost
"""

RETURN = r"""
run:
  description: The report's figures (the JSON file's content).
  returned: always
  type: dict
paths:
  description: The report's files, C(json) (written, none in check mode), C(md) and C(html) (for the role's
    templates).
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files as _files
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report as _report

KINDS = ('json', 'md', 'html')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            report_dir=dict(type='path', required=True),
            status=dict(type='dict', required=True),
            target=dict(type='dict', required=True),
            sender=dict(type='str', required=True),
            receiver_cpu_ns=dict(type='int'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    run = _report.build(params['status'], params['target'], params['sender'], params['receiver_cpu_ns'])
    stem = os.path.join(params['report_dir'], _report.file_stem(run))
    result = {'changed': False, 'run': run, 'paths': dict((kind, '%s.%s' % (stem, kind)) for kind in KINDS)}
    if module.check_mode:
        module.exit_json(**result)
    # the receiver's CPU time is read again on each call: the first figure of the pass stays (write_atomic makes the
    # report directory)
    written = _files.load_record(result['paths']['json'])
    if written.get('run_id') == run['run_id'] and written.get('receiver_cpu_seconds_per_gb') is not None:
        run['receiver_cpu_seconds_per_gb'] = written['receiver_cpu_seconds_per_gb']
        run['rows'] = _report.rows(run)
    text = json.dumps(run, indent=2, sort_keys=True) + '\n'
    if _files.read_bytes(result['paths']['json']) != text.encode('utf-8'):
        _files.write_atomic(module, result['paths']['json'], text, mode=0o644)
        result['changed'] = True
    module.exit_json(**result)


if __name__ == '__main__':
    main()
