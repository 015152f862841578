#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: tcp_congestion
short_description: Make a TCP congestion control and the fq qdisc available, or verify them on a live socket
version_added: 0.1.0
description:
  - With O(state=available), finds out whether the kernel has the congestion control (built in, loaded, or as a
    loadable module), loads the module now and persists the load in C(/etc/modules-load.d), and does the same for
    the C(sch_fq) queueing discipline. It then puts fq on every TX queue of the given interfaces (the ones carrying
    default routes when none are named), as the root qdisc of a single-queue interface, and as the child of each
    queue under C(mq) on a multiqueue NIC (never one root fq over all queues, which would put every queue behind one
    lock). A root qdisc that someone configured (a handle other than C(0:), for example an htb shaper) is left alone
    with a warning. A kernel without the algorithm fails with its version and the fix; a kernel without fq is
    reported and the run continues, because BBR paces its own flows without fq on Linux 4.13 and later.
  - With O(sysctl_file), the same run then makes O(algorithm) the default congestion control, and O(qdisc) the
    default qdisc where the kernel has it (C(net.ipv4.tcp_congestion_control), C(net.core.default_qdisc)), through
    that drop-in file with the engine of M(bdp.wan_tune.sysctl_dropin) (one implementation, in
    C(plugins/module_utils/tuning/dropin.py)), which writes it, applies each key live, reads it back, rolls back on failure
    and records what the host had for O(bdp.wan_tune.sysctl_dropin#module:state=absent). With O(verify=true) it then
    checks a live socket as O(state=verified) does, unless the congestion control was skipped (a container whose host does not allow it).
    So the P(bdp.wan_tune.bbr#role) role makes one module execution per host (docs/fleet.md).
  - Without O(sysctl_file) it does not set the default congestion control.
  - With O(state=absent), removes O(modules_load_file) and gives the kernel's default qdisc back to the interfaces
    whose fq the collection caused, so run it after C(net.core.default_qdisc) was restored. Those are the ones this
    module put fq on (recorded in O(state_dir)), and those that got fq at boot from the C(default_qdisc=fq) that is
    no longer the default. fq an interface had before is left alone. Every interface is tried even after a failure; the
    failures are reported together and stay recorded for a retry. Loaded modules stay loaded until the next
    boot.
  - With O(state=verified), opens a TCP connection over loopback and reads the congestion control the kernel gave
    it (C(getsockopt TCP_CONGESTION), and C(ss -ti) where present; not in check mode, since ss makes the kernel load
    the tcp_diag module). Fails when it is not O(algorithm), except in check mode, where the change it verifies was
    not made; it then only reports. Never changes anything.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  algorithm:
    description: The congestion control, as the kernel names it.
    type: str
    default: bbr
  qdisc:
    description: The queueing discipline to make available and put on O(interfaces). V(none) leaves qdiscs alone.
    type: str
    choices: [fq, none]
    default: fq
  interfaces:
    description:
      - Interfaces that get O(qdisc) on every TX queue now. Empty means the interfaces of the IPv4 and IPv6 default
        routes. Interfaces that do not exist fail the task before anything changes.
    type: list
    elements: str
    default: []
  modules_load_file:
    description:
      - File in C(/etc/modules-load.d) listing the kernel modules to load at boot. Written only when the algorithm
        or qdisc is a loadable module; removed when neither needs loading.
    type: path
    default: /etc/modules-load.d/bdp-wan-tune.conf
  header:
    description: Comment text written at the top of O(modules_load_file) (for example C(ansible_managed)).
    type: str
    default: ''
  state_dir:
    description:
      - Where the qdiscs each interface had before this module changed them are recorded (C(qdisc.json)), for example
        V(fq_codel) or V(mq/fq_codel); with O(sysctl_file), also the values from before that file first changed them.
  sysctl_file:
    description:
      - With O(state=available), the drop-in file in C(/etc/sysctl.d) that makes O(algorithm) the default congestion
        control and, where the kernel has it and O(qdisc) is not V(none), O(qdisc) the default qdisc. Its header is
        O(header), its last line followed by C(, qdisc fq) when the file sets the default qdisc.
      - Not set (the default), the defaults are left alone. Roll the file back with M(bdp.wan_tune.sysctl_dropin)
        O(bdp.wan_tune.sysctl_dropin#module:state=absent).
    type: path
  strict:
    description:
      - With O(sysctl_file), fail before anything in that file changes when the host (a container) does not allow
        O(algorithm) in its network namespace, instead of skipping it with a warning.
    type: bool
    default: false
  verify:
    description:
      - With O(state=available) and O(sysctl_file), check a live socket after the change, as O(state=verified) does,
        in the same run. Skipped when the congestion control was skipped (RV(skipped_keys)).
    type: bool
    default: false
  state:
    description:
      - V(available) prepares the kernel; V(absent) undoes the files and qdiscs; V(verified) checks a live socket and
        changes nothing.
    type: str
    choices: [available, absent, verified]
    default: available
extends_documentation_fragment:
  - bdp.wan_tune.attributes
  - bdp.wan_tune.state_dir
  - ansible.builtin.action_common_attributes
attributes:
  diff_mode:
    details: Shows the modules to load, the modules-load file and each interface's qdisc change.
requirements:
  - C(tc) from iproute2 to change qdiscs; C(modprobe) from kmod to load modules.
seealso:
  - module: bdp.wan_tune.sysctl_dropin
"""

EXAMPLES = r"""
- name: Make BBR and fq available and put fq on eth1
  bdp.wan_tune.tcp_congestion:
    algorithm: bbr
    interfaces: [eth1]
  register: cc

- name: Prove new sockets use BBR
  bdp.wan_tune.tcp_congestion:
    algorithm: bbr
    state: verified

- name: All of it in one run, as the bbr role does it - kernel, default congestion control and qdisc, socket check
  bdp.wan_tune.tcp_congestion:
    algorithm: bbr
    sysctl_file: /etc/sysctl.d/90-bdp-wan-tune-bbr.conf
    header: "# Ansible managed"
    verify: true
"""

RETURN = r"""
kernel:
  description: The running kernel release.
  returned: always
  type: str
  sample: 6.1.0-28-amd64
algorithm_source:
  description: Where the algorithm comes from.
  returned: when state is available
  type: str
  sample: module
qdisc_available:
  description: Whether the kernel can use O(qdisc).
  returned: when state is available
  type: bool
  sample: true
qdisc_source:
  description: Where the qdisc comes from (V(builtin), V(module), V(missing), V(unknown)).
  returned: when state is available
  type: str
  sample: builtin
loaded:
  description: Kernel modules loaded by this run.
  returned: when state is available
  type: list
  elements: str
  sample: [tcp_bbr]
interfaces:
  description: Per interface, its qdiscs before and after (V(mq/fq) is mq with fq under every queue).
  returned: when state is available or absent
  type: dict
  sample: {"eth0": {"before": "fq_codel", "after": "fq"}, "eth1": {"before": "mq/fq_codel", "after": "mq/fq"}}
socket_algorithm:
  description: The congestion control of a fresh loopback TCP connection.
  returned: when state is verified, or available with sysctl_file and verify and the congestion control not skipped
  type: str
  sample: bbr
ss_algorithm:
  description: The congestion control C(ss -ti) shows for that connection, or null when ss is missing.
  returned: when socket_algorithm is
  type: str
  sample: bbr
path:
  description: O(sysctl_file).
  returned: when state is available with sysctl_file
  type: str
  sample: /etc/sysctl.d/90-bdp-wan-tune-bbr.conf
initial_netns:
  description: Whether the host runs in the initial network namespace (false in containers).
  returned: when state is available with sysctl_file
  type: bool
  sample: true
settings:
  description: Per key of O(sysctl_file), as M(bdp.wan_tune.sysctl_dropin) returns it (before, after, wanted, status).
  returned: when state is available with sysctl_file
  type: dict
  sample: {"net.ipv4.tcp_congestion_control": {"before": "cubic", "after": "bbr", "wanted": "bbr", "status": "changed"}}
skipped_keys:
  description: Keys of O(sysctl_file) that were not set, with the reason.
  returned: when state is available with sysctl_file
  type: dict
  sample: {"net.ipv4.tcp_congestion_control": "the host allows only reno bbr in network namespaces; ..."}
overrides:
  description: Entries in files applied after O(sysctl_file) at boot that set one of its keys to another value.
  returned: when state is available with sysctl_file
  type: list
  elements: dict
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files, runlock
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import congestion


def main():
    module = AnsibleModule(
        argument_spec=dict(
            congestion.OPTIONS,
            state=dict(type='str', default='available', choices=['available', 'absent', 'verified']),
            state_dir=dict(type='path', default=files.STATE_DIR),
        ),
        supports_check_mode=True,
    )
    if module.params['state'] == 'verified':          # reads only
        module.exit_json(**congestion.run(module, 'verified'))
    # one state-changing step at a time on the host: the records are read, changed and written under the lock
    with runlock.held(module, module.params['state_dir'], 'tcp_congestion %s' % module.params['state']):
        module.exit_json(**congestion.run(module, module.params['state']))


if __name__ == '__main__':
    main()
