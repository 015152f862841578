# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    """The commit-confirm timer of a module whose change may cut the Ansible connection (module_utils/common/commit.py,
    one mechanism for link_mtu and nic_settings): its option commit_method, the option control_hosts (how the module
    knows the control connection's interface) and where its files are.  The module documents its own confirm_timeout
    (what the timer puts back) and its states."""

    DOCUMENTATION = r"""
options:
  commit_method:
    description: How the commit-confirm timer runs. V(auto) uses a transient systemd timer where systemd is PID 1,
      else a detached process with a pid file; V(systemd) fails where systemd does not run.
    type: str
    choices: [auto, systemd, process]
    default: auto
  control_hosts:
    description: Addresses or names the controller uses to reach this host (for example C(ansible_host)); an
      interface holding one of them counts as carrying the control connection. The SSH client address is also
      read from the SSH session's environment.
    type: list
    elements: str
    default: []
notes:
  - "The commit-confirm timer runs a Python script with the module's own interpreter. The script, the timer's pid
    file and the decision marker live in C(/run/bdp_wan_tune), which is cleared at boot: the marker of a decided
    change stays there until then, so that a timer that fires late backs off. Every put-back, by the timer or by the
    module, is a JSON line in the revert log in the state directory."
"""
