#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: migrate_report
short_description: Write a migration's report on the controller, as JSON, Markdown and HTML
version_added: 0.4.0
description:
  - Makes the report of one migration run (C(module_utils/migrate/report.py)) from what bdp.wan_tune.migrate_status
    read on the sender (the runner's state holds the plan and the receiver's CPU time before the run) and the
    destination, and writes
    C(migrate-<end of the run>-<sender>-<receiver>.json), C(.md) and C(.html) into O(report_dir) (made when
    missing), each written whole (atomically) when its content changed. Run it on the controller (C(delegate_to=localhost)).
  - The JSON holds C(bytes), C(files), C(seconds) (the copying phase), C(goodput_bps), C(streams), C(transport),
    C(verified), C(mismatches), C(resent_bytes), the start-up and proof seconds, each stream's bytes, times, rsync exit
    and CPU seconds, and the CPU seconds per GB on each end.
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
  description: The files written, C(json), C(md) and C(html) (none in check mode).
  returned: always
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files as _files
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report as _report


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
    result = {'changed': False, 'run': run, 'paths': {}}
    if module.check_mode:
        module.exit_json(**result)
    stem = os.path.join(params['report_dir'], _report.file_stem(run))
    # the receiver's CPU time is read again on each call: the first figure of the run stays (write_atomic makes the
    # report directory)
    written = _files.load_record(stem + '.json')
    if written.get('run_id') == run['run_id'] and written.get('receiver_cpu_seconds_per_gb') is not None:
        run['receiver_cpu_seconds_per_gb'] = written['receiver_cpu_seconds_per_gb']
    for kind, text in (('json', json.dumps(run, indent=2, sort_keys=True) + '\n'), ('md', _report.markdown(run)),
                       ('html', _report.html_page(run))):
        result['paths'][kind] = '%s.%s' % (stem, kind)
        if _files.read_bytes(result['paths'][kind]) != text.encode('utf-8'):
            _files.write_atomic(module, result['paths'][kind], text, mode=0o644)
            result['changed'] = True
    module.exit_json(**result)


if __name__ == '__main__':
    main()
