#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Documentation only: the work is done on the controller by the action plugin plugins/action/validate_inputs.py.

DOCUMENTATION = r"""
---
module: validate_inputs
short_description: Check every input of the collection's roles for one host, on the controller
version_added: 0.2.0
description:
  - Checks every variable of the P(bdp.wan_tune.bbr#role), P(bdp.wan_tune.tcp_buffers#role),
    P(bdp.wan_tune.jumbo_mtu#role), P(bdp.wan_tune.rsync_daemon#role), P(bdp.wan_tune.hpn_ssh#role) and
    P(bdp.wan_tune.verify#role) roles (the last runs as the canary)
    (the options of each role's C(meta/argument_specs.yml), with the defaults
    of its C(defaults/main.yml)) and the playbook's own variables (C(playbooks/meta/argument_specs.yml), entry
    point C(wan_tune)), as the host's variables give them. C(rate) and C(rtt) may be V(auto); C(rtt=auto) needs
    peers.
  - A variable of the collection's namespaces (C(tcp_buffers), C(bbr), C(jumbo_mtu), C(rsync_daemon), C(hpn_ssh),
    C(wan_tune) and their C(_*), C(verify_*), C(migrate_*), C(nic_*)) that no role or playbook declares, as an
    option of its argument specification or as a result its tasks register, and a name one slip from a declared
    option (C(rsync_deamon_users)), are named with the closest declared names (C(jumbo_mtu_value) names
    C(jumbo_mtu_target) and C(-e mtu=...)). Given with C(-e), such a variable fails the host; set anywhere else
    (inventory, play variables), it is a warning.
  - Each value is templated and checked by its type (choices, booleans, whole numbers, numbers, absolute paths,
    lists) and then by its meaning with the one implementation the roles' filter and modules use, whose messages
    are passed on as they are. Rate, RTT, headroom, C(tcp_buffers_flows) and C(tcp_buffers_memory_share) are read
    as the buffer plan and the memory guard read them. The MTU, interface names and peers are checked by the
    functions the P(bdp.wan_tune.link_mtu#module) module runs before it changes anything; a peer such as
    V(224.0.0.1) is refused as not a unicast address. The congestion control name is checked by the rule
    P(bdp.wan_tune.tcp_congestion#module) and P(bdp.wan_tune.sysctl_dropin#module) share (lower-case letters, digits
    and _, at most 15 characters, the kernel's limit).
  - The MTU is an integer or a string of the digits 0-9 only, from 576 to 65535. A sign (V(+9000)), spaces around
    the digits and a decimal point (V(9000.0)) are refused.
  - Values from C(-e key=value) are strings, so V(true), V(false), V(yes), V(no), V(on), V(off), V(1) and V(0) (in
    any case) are accepted where a boolean is expected, exactly what Ansible's C(bool) filter takes. White space
    around the word is refused, as C(| bool) reads V(yes) with a space before it as false. Whole numbers written as strings
    are accepted where a number is.
  - Where C(rsync_daemon) or C(hpn_ssh) is true, the transport role's own rules run too, with the code the role runs
    (C(module_utils/transfer/rsyncd.py), C(module_utils/transfer/hpnssh.py)), for example no anonymous writable rsync module, no module path under
    C(/usr), C(/etc) or C(/boot), no C(SO_SNDBUF)/C(SO_RCVBUF) socket options, HPN-SSH never on port 22, package
    files and repositories complete. The value of an option marked C(no_log) in its specification
    (C(rsync_daemon_users), C(rsync_daemon_tls_ca_key)) is never shown.
  - The files the roles own must end in C(.conf) and be distinct once normalised (V(/etc/sysctl.d/./x.conf) is
    V(/etc/sysctl.d/x.conf)).
  - A role variable left at a default built from a playbook variable is reported under that variable, for example
    C(tcp_buffers_rate (-e rate=...)), and a role state left at its default under C(wan_tune_state).
  - Every problem of the host is reported in one message, one line each, with the variable, the value (long values
    shortened) and what is accepted.
  - Runs on the controller only and never connects to the host, so C(playbooks/wan_tune.yml) runs it for every
    host with C(any_errors_fatal) before any host changes.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  tcp_buffers:
    description:
      - Whether the P(bdp.wan_tune.tcp_buffers#role) role runs (it may be left out with tags). Only then are
        C(tcp_buffers_rate) and C(tcp_buffers_rtt) required, for hosts where its state is V(present).
      - Set values are checked either way.
    type: bool
    default: true
  jumbo_mtu:
    description:
      - Whether the P(bdp.wan_tune.jumbo_mtu#role) role may run (it may be left out with tags). Its peers are then
        worked out and checked for hosts where it is enabled (C(mtu) or C(jumbo_mtu_enabled) set) and its state is
        V(present).
    type: bool
    default: true
  hosts_pattern:
    description: With O(hosts_matched), the play's host pattern, shown in the warning.
    type: raw
  hosts_matched:
    description:
      - The number of inventory hosts the play's pattern matches. When given, only this is checked, and a warning
        says that nothing will be tuned when it is 0 (C(ansible-playbook) without C(-i) runs against no host and
        exits 0).
    type: int
  role:
    description:
      - Check only the ranges of this role's numbers, as the role asks before it runs (the ranges are defined once,
        here). For V(verify), C(verify_streams), C(verify_duration), C(verify_omit), C(verify_min_fraction) and
        C(verify_report_html_runs).
      - The problems are returned in RV(problems), in the words of the role's other checks (the variable, its value,
        V(is out of range) and what is expected), and do not fail the task; the role reports them with its other
        checks.
    type: str
    choices: [verify]
  names_only:
    description:
      - Check only that every variable of the collection's namespaces is declared (the verify and migrate
        playbooks, whose roles check the values).
    type: bool
    default: false
extends_documentation_fragment:
  - bdp.wan_tune.attributes.action_controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.conn
  - ansible.builtin.action_common_attributes.flow
notes:
  - Nothing changes anywhere. The module only reads the host's variables and the collection's role files.
seealso:
  - module: ansible.builtin.validate_argument_spec
"""

EXAMPLES = r"""
- name: Validate the inputs of every host before any host changes
  hosts: transfer_nodes
  gather_facts: false
  any_errors_fatal: true
  tasks:
    - name: Check every input on the controller
      bdp.wan_tune.validate_inputs:

- name: The same when only the bbr role will run (rate and RTT are not needed)
  hosts: transfer_nodes
  gather_facts: false
  any_errors_fatal: true
  tasks:
    - name: Check every input on the controller
      bdp.wan_tune.validate_inputs:
        tcp_buffers: false
        jumbo_mtu: false

- name: Warn when the play will match no host
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Count the hosts the pattern matches
      bdp.wan_tune.validate_inputs:
        hosts_pattern: "{{ wan_tune_hosts | default('all') }}"
        hosts_matched: "{{ query('ansible.builtin.inventory_hostnames', wan_tune_hosts | default('all')) | length }}"

- name: The ranges of the verify role's numbers, as the role checks them before it tests
  hosts: transfer_nodes
  gather_facts: false
  tasks:
    - name: Check the ranges on the controller (the problems are returned, the task does not fail)
      bdp.wan_tune.validate_inputs:
        role: verify
      register: ranges

    - name: Stop on a number out of range
      ansible.builtin.assert:
        that: ranges.problems | length == 0
        fail_msg: "{{ ranges.problems | join(' | ') }}"
"""

RETURN = r"""
msg:
  description: What was found; on failure every problem of the host, one line each.
  returned: always
  type: str
  sample: |-
    Inputs of host dc1-a are not usable (2 problems):
    - bbr_qdisc: 'fq_codel' is not one of the choices; expected one of fq, none.
    - tcp_buffers_memory_share: '25%' is not usable; expected a share of RAM above 0 and at most 1, e.g. 0.25.
    Nothing was changed on any host.
problems:
  description: With O(role), the role's numbers that are out of range, one message each (empty when all are in range).
  returned: when O(role) is given
  type: list
  elements: str
  sample:
    - "verify_streams: 0 is out of range; expected a whole number of streams from 1 to 128."
"""
