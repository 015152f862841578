#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: migrate_receiver
short_description: Read what a migration's receiver offers - free space, the tree's bytes there, attributes, devices
version_added: 0.4.0
description:
  - The receiver's half of the migration's preflight, run on the receiver. It reads and writes nothing, in check
    mode or not - no probe file, no attribute set.
  - RV(avail_bytes) is the free space under O(path) for an unprivileged writer (C(statvfs), as C(df) shows it).
  - RV(present_bytes) is what the receiver holds of the tree. With O(previous) (the sender's runner state of the
    last pass, C(migrate_status)) it is that pass's figure - the tree as that pass listed it when it ended done,
    else what was there before it and what it sent - and O(dest) is not walked, so a pass after the first costs no
    scan of the receiver (docs/migration.md, "The room check"). Without it, O(dest) is walked once (the bytes of its
    regular files, each inode once; 0 when it does not exist).
  - RV(xattrs) and RV(acls) say whether the filesystem of O(dest) (of O(path) while O(dest) does not exist) keeps
    user extended attributes and POSIX ACLs - asked with C(getxattr) for a name that is not set
    (C(user.bdp_wan_tune), C(system.posix_acl_access)), which the kernel answers with ENODATA where the filesystem
    keeps such attributes and EOPNOTSUPP where it does not. RV(filesystem) names the mount that holds it
    (C(/proc/self/mountinfo)).
  - RV(unit) is the first of O(units) that is active (else the first that is loaded); RV(cpu_ns) its CPU time and
    RV(device_nodes) whether it may create device nodes in a module's path - it runs as root, without
    C(PrivateDevices=yes), with C(CAP_MKNOD) in its bounding set, a device policy that allows C(m) (mknod) for
    C(char-*) and C(block-*) (or no device policy at all) and a system call filter that lets C(mknodat) through
    (C(systemctl show)). RV(device_nodes_why) names the settings that stop it.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  path:
    description: The path of the rsync daemon's module on the receiver.
    type: path
    required: true
  dest:
    description: The migration's destination under O(path) (the module's path and C(migrate_subdir)).
    type: path
    required: true
  previous:
    description:
      - The sender's runner state of the last pass of this migration (C(state), C(bytes_total), C(bytes_done),
        C(present_bytes)), or null for a migration without one - then O(dest) is walked.
    type: dict
  units:
    description: The systemd units that may serve the module, in order (the TLS daemon's, then the plain one's).
    type: list
    elements: str
    default: [rsync.service, rsyncd.service]
  devices:
    description:
      - What the tree asks of the receiver's device nodes, for RV(refusal).
    type: dict
    default: {}
    suboptions:
      count:
        description: The device nodes of the tree (C(migrate_plan)'s C(attributes.devices)).
        type: int
        default: 0
      keep:
        description: Whether the migration keeps them (C(devices) in C(migrate_preserve)).
        type: bool
        default: true
      owners:
        description: Whether the module runs as root (rsync creates device nodes only then).
        type: bool
        default: true
      transport:
        description: The migration's transport (C(migrate_transport)), for the way out the refusal names.
        type: str
        choices: [tls, plain]
        default: tls
      receiver:
        description: The receiver's inventory name, for the refusal.
        type: str
        default: the receiver
      module:
        description: The module's name, for the refusal.
        type: str
        default: the module
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Read the receiver's room, the tree's bytes there (from the last pass), attributes and devices
  bdp.wan_tune.migrate_receiver:
    path: /srv/incoming
    dest: /srv/incoming/dc1-a
    previous: "{{ migration.progress }}"
    units: [bdp-rsync-tls.service, rsync.service, rsyncd.service]
  delegate_to: dc2-a
  register: receiver
"""

RETURN = r"""
avail_bytes:
  description: The free space under O(path) in bytes (C(df)'s avail), or null when O(path) cannot be read.
  returned: always
  type: int
present_bytes:
  description: The bytes of the tree the receiver holds already.
  returned: always
  type: int
present_from:
  description: Where RV(present_bytes) comes from - C(last pass) (O(previous)) or C(walk) (of O(dest)).
  returned: always
  type: str
filesystem:
  description: The mount that holds O(dest) - C(type), C(mount) (its mount point) and C(options) (mount and
    superblock options); empty strings when unknown.
  returned: always
  type: dict
xattrs:
  description: C(yes) when the filesystem keeps user extended attributes, C(no) when it does not, C(unknown) when
    the answer was another error (RV(attributes_why)).
  returned: always
  type: str
acls:
  description: The same for POSIX ACLs.
  returned: always
  type: str
attributes_why:
  description: The errors that made RV(xattrs) or RV(acls) C(unknown), else empty.
  returned: always
  type: str
unit:
  description: The unit read, or null when none of O(units) is loaded.
  returned: always
  type: str
cpu_ns:
  description: The CPU time of RV(unit) in ns (C(CPUUsageNSec)), or null when it is not active or not accounted.
  returned: always
  type: int
device_nodes:
  description: Whether RV(unit) may create device nodes in a module's path.
  returned: always
  type: bool
device_nodes_why:
  description: Why RV(device_nodes) is false (the unit's settings, as systemd names them), else empty.
  returned: always
  type: str
refusal:
  description: Why a pass of the tree must not start for its device nodes (O(devices)), naming C(migrate_preserve),
    C(migrate_exclude) and the setting that would let the daemon create them; empty when it may start.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import receiver as _receiver
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import target as _target
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            dest=dict(type='path', required=True),
            previous=dict(type='dict'),
            units=dict(type='list', elements='str', default=['rsync.service', 'rsyncd.service']),
            devices=dict(type='dict', default={}, options=dict(
                count=dict(type='int', default=0),
                keep=dict(type='bool', default=True),
                owners=dict(type='bool', default=True),
                transport=dict(type='str', choices=list(_target.TRANSPORTS), default=rsyncd.TRANSPORT),
                receiver=dict(type='str', default='the receiver'),
                module=dict(type='str', default='the module'),
            )),
        ),
        supports_check_mode=True,
    )
    systemctl = module.get_bin_path('systemctl')

    def show(unit):
        if not systemctl:
            return None, 'no systemctl'
        rc, out, err = module.run_command([systemctl, 'show', '--property=' + ','.join(_receiver.PROPERTIES), unit])
        return (out, None) if rc == 0 else (None, ' '.join(err.split())[:200] or 'exit %d' % rc)

    params = module.params
    facts = _receiver.read(params['path'], params['dest'], params['previous'], params['units'], show)
    devices = params['devices'] or {}
    facts['refusal'] = _receiver.devices_refusal(
        devices.get('count') or 0, devices.get('keep', True), devices.get('owners', True), facts,
        devices.get('receiver') or 'the receiver', devices.get('module') or 'the module', devices.get('transport'))
    module.exit_json(changed=False, **facts)


if __name__ == '__main__':
    main()
