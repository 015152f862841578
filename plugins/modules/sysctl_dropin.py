#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: sysctl_dropin
short_description: Persist a set of kernel parameters in one sysctl.d file, apply them live and verify
version_added: 0.1.0
description:
  - Manages one drop-in file in C(/etc/sysctl.d) holding all the keys it is given, in one module run,
    however many keys there are.
  - Applies only those keys live (no blanket C(sysctl --system)), reads them back and fails if the kernel
    did not take a value. A failed apply is rolled back (live values and file), so the host is never left
    half-configured.
  - Keys marked O(settings[].floor) never go below what the host had before this module first changed them
    (recorded in O(state_dir)), unless O(allow_lower=true). While the live value is still this file's own, the
    floor is that recorded value, so lower inputs lower the module's own earlier values; a live value someone else
    set since is the floor instead. Multi-value keys such as C(net.ipv4.tcp_rmem) compare whitespace-normalised, and a
    V(null) field keeps the host's current field.
  - Inside a container or any non-initial network namespace, keys owned by the host kernel (for example
    C(net.core.rmem_max)) are read-only. They are skipped with a warning naming the key and left out of the
    file, unless O(strict=true) turns this into a failure. A congestion control the host does not allow in
    namespaces (C(net.ipv4.tcp_allowed_congestion_control)) is treated the same way.
  - Reports files that systemd-sysctl or C(sysctl --system) apply after this one and that set one of its keys
    to another value, since they would win at the next boot.
  - The values a key had before this module first changed it are kept in O(state_dir), so O(state=absent)
    removes the file and restores them.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  path:
    description:
      - The drop-in file. Choose a name that sorts after the distribution's files, for example
        C(/etc/sysctl.d/90-bdp-wan-tune.conf); never C(99-sysctl.conf), which is the admin's C(/etc/sysctl.conf).
    type: path
    required: true
  settings:
    description:
      - The keys to manage, in the order they are written. Required with O(state=present).
    type: list
    elements: dict
    suboptions:
      key:
        description: The key, with dots (C(net.ipv4.tcp_rmem)) or slashes (C(net/ipv4/conf/eth0.100/mtu)).
        type: str
        required: true
      value:
        description:
          - The value, as a string, number or list of fields. A V(null) field in a list keeps the host's current
            field, so V([null, null, 33554432]) sets only the maximum of C(net.ipv4.tcp_rmem).
        type: raw
        required: true
      floor:
        description:
          - Treat the value as a minimum. Each numeric field becomes the larger of the wanted and the host's
            current field, unless O(allow_lower=true).
        type: bool
        default: false
      optional:
        description: When the kernel has no such key, skip it with a warning instead of failing.
        type: bool
        default: false
      comment:
        description: Comment lines written above the key, for example the inputs the value came from.
        type: str
        default: ''
  header:
    description: Text at the top of the file, each line already commented (for example C(ansible_managed)).
    type: str
    default: ''
  allow_lower:
    description: Let O(settings[].floor) keys go below what the host had before the first change.
    type: bool
    default: false
  strict:
    description:
      - Fail instead of warning when a key cannot be set in this network namespace (container) or a congestion
        control is not allowed by the host. The check runs before anything is changed.
    type: bool
    default: false
  state:
    description:
      - V(present) writes the file and applies the values. V(absent) removes the file and restores the live values
        recorded when the module first changed them (keys changed by someone else since are left alone).
    type: str
    choices: [present, absent]
    default: present
  state_dir:
    description: Where the values from before the first change are recorded, one JSON file per drop-in file.
  congestion:
    description:
      - With O(state=present), first run a M(bdp.wan_tune.tcp_congestion) request with O(bdp.wan_tune.tcp_congestion#module:state=available)
        in the same execution, with its engine (C(plugins/module_utils/tuning/congestion.py), one implementation for both
        modules) - the kernel (modules, fq on the interfaces), the default congestion control and qdisc in its own
        drop-in file O(congestion.sysctl_file), and the live-socket check with O(congestion.verify). Then this
        module's own file is written. Check mode, diff and the rollback of each file on failure are those of the two
        modules run one after the other.
      - Its result is RV(congestion); C(changed) and the diff include it. When the request fails, this module's
        own file is left alone and the failure's details are in RV(congestion).
      - So P(bdp.wan_tune.bbr#role) and P(bdp.wan_tune.tcp_buffers#role) make one module execution per host
        together in C(playbooks/wan_tune.yml) (docs/fleet.md). O(state_dir) is the request's too.
      - The suboptions are those of M(bdp.wan_tune.tcp_congestion), with the same defaults.
    type: dict
    suboptions:
      algorithm:
        description: The congestion control, as the kernel names it.
        type: str
        default: bbr
      qdisc:
        description: The queueing discipline to make available and put on O(congestion.interfaces); V(none) leaves qdiscs alone.
        type: str
        choices: [fq, none]
        default: fq
      interfaces:
        description: Interfaces that get O(congestion.qdisc) now; empty means the interfaces of the default routes.
        type: list
        elements: str
        default: []
      modules_load_file:
        description: File in C(/etc/modules-load.d) listing the kernel modules to load at boot.
        type: path
        default: /etc/modules-load.d/bdp-wan-tune.conf
      header:
        description: Comment text at the top of O(congestion.modules_load_file) and O(congestion.sysctl_file).
        type: str
        default: ''
      sysctl_file:
        description: The drop-in file that makes O(congestion.algorithm) (and O(congestion.qdisc)) the default.
        type: path
      strict:
        description: Fail when the host does not allow O(congestion.algorithm) in its network namespace.
        type: bool
        default: false
      verify:
        description: Check a live socket after the change.
        type: bool
        default: false
  memory_guard:
    description:
      - With O(state=present), check O(memory_guard.flows) full buffers of O(memory_guard.buffer_bytes) against this
        host's own memory limits, read on the host itself with no fact gathering (C(MemTotal) from C(/proc/meminfo),
        the page size and C(net.ipv4.tcp_mem)), and warn when they exceed the C(tcp_mem) pressure mark or
        O(memory_guard.memory_share) of RAM. The run goes on; RV(memory) has the numbers.
      - With O(memory_guard.fit_tcp_mem=true), C(net.ipv4.tcp_mem) is raised so the flows fit, through this same file
        as a floor key (never lowered below the host's value, recorded and restored by O(state=absent)). It is a
        host-wide key; in a container it is read-only and skipped with a warning like every other host key.
      - The arithmetic is C(memory_plan) in C(plugins/module_utils/common/bdp.py); see docs/bdp.md, Memory guard.
    type: dict
    suboptions:
      flows:
        description: Concurrent bulk flows expected on the host, each with a full buffer.
        type: int
        required: true
      buffer_bytes:
        description: The buffer size of one flow in bytes (the C(tcp_rmem)/C(tcp_wmem) maximum this file sets).
        type: int
        required: true
      memory_share:
        description:
          - Share of RAM (above 0, at most 1) the flows may take before the guard warns. Also the ceiling for the
            C(tcp_mem) max that O(memory_guard.fit_tcp_mem) may set.
        type: float
        default: 0.25
      fit_tcp_mem:
        description:
          - Raise C(net.ipv4.tcp_mem) so the flows fit below its pressure mark. pressure = max(pressure, ceil(flows x
            buffer / page size)); max = max(max, ceil(pressure x 3 / 2)), the kernel's own ratio, but never above
            O(memory_guard.memory_share) of RAM (capped there, with a warning that the flows do not fit); min
            unchanged. Nothing is set while the flows already fit, unless this file raised it before.
        type: bool
        default: false
extends_documentation_fragment:
  - bdp.wan_tune.attributes
  - bdp.wan_tune.state_dir
  - ansible.builtin.action_common_attributes
attributes:
  diff_mode:
    details: Shows the file change and the live value change of every key.
notes:
  - Runs once per host whatever the number of keys; it opens one file in /proc/sys per key and starts no process.
  - O(memory_guard) reads C(/proc/meminfo) and C(net.ipv4.tcp_mem) in the same run, so the guard costs no extra
    module execution.
seealso:
  - module: ansible.posix.sysctl
  - name: sysctl.d(5)
    description: Boot-time order of sysctl.d files.
    link: https://www.freedesktop.org/software/systemd/man/latest/sysctl.d.html
"""

EXAMPLES = r"""
- name: Raise TCP buffer maxima for a 1 Gbit/s, 98 ms path (4 x BDP), keeping the host's min and default
  bdp.wan_tune.sysctl_dropin:
    path: /etc/sysctl.d/90-bdp-wan-tune.conf
    header: "# Ansible managed"
    settings:
      - key: net.core.rmem_max
        value: 49000000
        floor: true
        comment: "4 x BDP; BDP = 1 Gbit/s x 98 ms / 8 = 12250000 bytes"
      - key: net.ipv4.tcp_rmem
        value: [null, null, 49000000]
        floor: true

- name: BBR (kernel, default, socket check) and the buffer file in one execution, as playbooks/wan_tune.yml does it
  bdp.wan_tune.sysctl_dropin:
    path: /etc/sysctl.d/90-bdp-wan-tune-buffers.conf
    settings:
      - key: net.ipv4.tcp_rmem
        value: [null, null, 98000000]
        floor: true
    congestion:
      algorithm: bbr
      sysctl_file: /etc/sysctl.d/90-bdp-wan-tune-bbr.conf
      verify: true

- name: Remove the file and restore the values from before the first change
  bdp.wan_tune.sysctl_dropin:
    path: /etc/sysctl.d/90-bdp-wan-tune.conf
    state: absent
"""

RETURN = r"""
rollback_errors:
  description:
    - After a failed apply, what could not be put back (a live value the kernel refused to take back, the file); the
      message then says the rollback is incomplete instead of "file and live values restored".
  returned: failure, when the rollback was incomplete
  type: list
  elements: str
  sample: ["net.core.rmem_max is still '98000000', not restored to '212992' ([Errno 1] Operation not permitted)"]
path:
  description: The drop-in file.
  returned: always
  type: str
  sample: /etc/sysctl.d/90-bdp-wan-tune.conf
initial_netns:
  description: Whether the host runs in the initial network namespace (false in containers).
  returned: always
  type: bool
  sample: true
settings:
  description:
    - Per key, the live value before and after and what happened to it.
    - A key this file set before but no longer manages (left out of O(settings) since) is set back to the value the
      host had before the first change, while its live value is still this file's own; it has C(given_back=true).
  returned: always
  type: dict
  sample:
    net.ipv4.tcp_rmem:
      before: "4096 131072 6291456"
      after: "4096 131072 49000000"
      wanted: "4096 131072 49000000"
      status: changed
    net.core.rmem_max:
      before: "212992"
      after: "212992"
      wanted: "49000000"
      status: skipped
      reason: owned by the host kernel; read-only in this network namespace
    net.core.netdev_max_backlog:
      before: "5000"
      after: "5000"
      wanted: "5000"
      requested: "2500"
      status: ok
skipped_keys:
  description: Keys that were not set, with the reason.
  returned: always
  type: dict
  sample: {"net.core.rmem_max": "owned by the host kernel; read-only in this network namespace"}
overrides:
  description: Entries in files applied after this one at boot that set one of its keys to another value.
  returned: always
  type: list
  elements: dict
  sample: [{"file": "/etc/sysctl.conf", "via": "/etc/sysctl.d/99-sysctl.conf", "key": "net.core.rmem_max",
            "value": "8388608", "ours": "49000000"}]
restored:
  description: With O(state=absent), the keys set back to their recorded values.
  returned: when state is absent
  type: dict
  sample: {"net.ipv4.tcp_rmem": "4096 131072 6291456"}
congestion:
  description:
    - The result of the O(congestion) request, as M(bdp.wan_tune.tcp_congestion) returns it with
      O(bdp.wan_tune.tcp_congestion#module:state=available) (C(changed), C(kernel), C(algorithm_source), C(loaded),
      C(qdisc_available), C(qdisc_source), C(interfaces), the file's C(path), C(settings), C(skipped_keys),
      C(overrides), C(initial_netns), and C(socket_algorithm) and C(ss_algorithm) when the socket check ran).
    - When the request failed, also C(failed) and C(msg).
  returned: with O(congestion)
  type: dict
  sample: {"changed": false, "kernel": "6.1.0-28-amd64", "algorithm_source": "module", "socket_algorithm": "bbr"}
memory:
  description:
    - The memory guard, with O(memory_guard) and O(state=present). Sizes in bytes and pages (of RV(memory.page_size)
      bytes). C(tcp_mem) is the live value before this run; C(fits_tcp_mem) is whether C(needed_pages) is at most its
      pressure mark, C(fits_memory_share) whether C(needed_bytes) is at most C(share_bytes), and C(fits) both (a
      check whose input could not be read counts as passed; it is then V(null)).
    - C(proposed_tcp_mem) is what O(memory_guard.fit_tcp_mem) sets (computed also without it), C(tcp_mem_capped)
      whether its max was capped at C(share_bytes). C(fit_tcp_mem) repeats the option, C(warnings) the warnings shown.
  returned: when memory_guard is given and state is present
  type: dict
  contains:
    mem_total_bytes: {description: "MemTotal from /proc/meminfo, in bytes.", type: int}
    page_size: {description: "The page size in bytes (os.sysconf SC_PAGE_SIZE).", type: int}
    tcp_mem: {description: "net.ipv4.tcp_mem before this run: min, pressure, max (pages).", type: list, elements: int}
    needed_bytes: {description: "flows x buffer_bytes.", type: int}
    needed_pages: {description: "needed_bytes / page_size, rounded up.", type: int}
    fits: {description: "Whether the flows fit below the tcp_mem pressure mark and within memory_share of RAM.", type: bool}
    proposed_tcp_mem: {description: "The tcp_mem that makes the flows fit (pages).", type: list, elements: int}
  sample:
    flows: 4
    buffer_bytes: 980000000
    needed_bytes: 3920000000
    needed_pages: 957032
    page_size: 4096
    mem_total_bytes: 34359738368
    memory_share: 0.25
    share_bytes: 8589934592
    tcp_mem: [393216, 524288, 786432]
    tcp_mem_pressure_bytes: 2147483648
    tcp_mem_max_bytes: 3221225472
    fits_tcp_mem: false
    fits_memory_share: true
    fits: false
    proposed_tcp_mem: [393216, 957032, 1435548]
    tcp_mem_capped: false
    fit_tcp_mem: true
    summary: "4 flows x 980000000-byte buffers = 3738 MiB (957032 pages of 4096 bytes); ..."
    warnings: []
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files, runlock
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import congestion
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning.dropin import DropIn


def run_congestion(module):
    """The congestion option: tcp_congestion state=available with these options and this module's state_dir, in
    this execution, before this module's own file (the bbr role's part of playbooks/wan_tune.yml)."""
    params = dict(module.params['congestion'], state_dir=module.params['state_dir'])
    return congestion.run(congestion.Request(module, params, 'congestion'), 'available')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            settings=dict(type='list', elements='dict', options=dict(
                key=dict(type='str', required=True, no_log=False),
                value=dict(type='raw', required=True),
                floor=dict(type='bool', default=False),
                optional=dict(type='bool', default=False),
                comment=dict(type='str', default=''),
            )),
            header=dict(type='str', default=''),
            allow_lower=dict(type='bool', default=False),
            strict=dict(type='bool', default=False),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            state_dir=dict(type='path', default=files.STATE_DIR),
            memory_guard=dict(type='dict', options=dict(
                flows=dict(type='int', required=True),
                buffer_bytes=dict(type='int', required=True),
                memory_share=dict(type='float', default=0.25),
                fit_tcp_mem=dict(type='bool', default=False),
            )),
            congestion=dict(type='dict', options=congestion.OPTIONS),
        ),
        required_if=[('state', 'present', ('settings',))],
        supports_check_mode=True,
    )
    if module.params['congestion'] is not None and module.params['state'] != 'present':
        module.fail_json(msg='congestion goes with state=present only; roll back with tcp_congestion state=absent.')
    # one state-changing step at a time on the host: the records are read, changed and written under the lock
    with runlock.held(module, module.params['state_dir'], 'sysctl_dropin %s' % module.params['path']):
        cc_result = run_congestion(module) if module.params['congestion'] is not None else None
        dropin = DropIn(module)
        if cc_result is not None:
            dropin.result['congestion'] = cc_result        # also in a failure of this file
        if module.params['state'] == 'present':
            dropin.present()
        else:
            dropin.absent()
        if cc_result is not None:
            dropin.result['changed'] = dropin.result['changed'] or cc_result['changed']
            dropin.result['diff'] = cc_result['diff'] + dropin.result['diff']
        module.exit_json(**dropin.result)


if __name__ == '__main__':
    main()
