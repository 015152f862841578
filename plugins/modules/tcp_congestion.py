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
    reported and the run continues, because Linux 4.13 and later pace TCP without fq.
  - With O(sysctl_file), the same run then makes O(algorithm) the default congestion control, and O(qdisc) the
    default qdisc where the kernel has it (C(net.ipv4.tcp_congestion_control), C(net.core.default_qdisc)), through
    that drop-in file with the engine of M(bdp.wan_tune.sysctl_dropin) (one implementation, in
    C(plugins/module_utils/dropin.py)), which writes it, applies each key live, reads it back, rolls back on failure
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
    type: path
    default: /var/lib/bdp_wan_tune
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

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils import files, qdisc, sysctl
from ansible_collections.bdp.wan_tune.plugins.module_utils.dropin import CC_KEY, DropIn
from ansible_collections.bdp.wan_tune.plugins.module_utils.kmod import Kernel, congestion_control_name
from ansible_collections.bdp.wan_tune.plugins.module_utils.record import Record


def default_route_interfaces():
    found = []
    for line in (files.read_text('/proc/net/route') or '').splitlines()[1:]:
        fields = line.split()
        if len(fields) > 2 and fields[1] == '00000000' and fields[0] not in found:
            found.append(fields[0])
    for line in (files.read_text('/proc/net/ipv6_route') or '').splitlines():
        fields = line.split()
        if len(fields) == 10 and fields[0] == '0' * 32 and fields[1] == '00' and fields[9] != 'lo' \
                and fields[9] not in found:
            found.append(fields[9])
    return found


def available(module):
    params = module.params
    kernel = Kernel(module)
    algorithm = params['algorithm']
    result = {'changed': False, 'kernel': kernel.release, 'loaded': [], 'interfaces': {}, 'diff': []}
    cc_list = (sysctl.read_live('net.ipv4.tcp_available_congestion_control') or '').split()
    source = kernel.congestion_source(algorithm, algorithm in cc_list)
    if source in ('missing', 'unknown') and algorithm not in cc_list:
        module.fail_json(msg='Kernel %s has no %s congestion control: it is neither built in nor available as module '
                             'tcp_%s (available: %s). Boot a kernel built with CONFIG_TCP_CONG_%s (Linux 4.9 or later; '
                             'every current distribution kernel has it as a module), or inside a container load '
                             'tcp_%s on the host.' % (kernel.release, algorithm, algorithm, ' '.join(cc_list),
                                                      algorithm.upper(), algorithm), **result)
    needs_load = []
    if source == 'module':
        needs_load.append('tcp_' + algorithm)
        if kernel.load('tcp_' + algorithm):
            result['loaded'].append('tcp_' + algorithm)
    result['algorithm_source'] = source
    result['qdisc_available'] = False
    result['qdisc_source'] = 'none'
    if params['qdisc'] == 'fq':
        qsource = kernel.source('sch_fq', 'CONFIG_NET_SCH_FQ', False)
        result['qdisc_source'] = qsource
        result['qdisc_available'] = qsource in ('builtin', 'module')
        if qsource == 'module':
            needs_load.append('sch_fq')
            if kernel.load('sch_fq'):
                result['loaded'].append('sch_fq')
        if not result['qdisc_available']:
            module.warn('The fq qdisc (sch_fq) is not available on kernel %s (%s); continuing without it. Linux 4.13 '
                        'and later pace TCP internally, so BBR still works.' % (kernel.release, qsource))
    result['changed'] = bool(result['loaded'])
    if result['loaded']:
        result['diff'].append({'before': '', 'after': ''.join(name + '\n' for name in result['loaded']),
                               'before_header': 'loaded kernel modules (lsmod)',
                               'after_header': 'loaded kernel modules (lsmod)'})
    persist(module, needs_load, result)
    if result['qdisc_available']:
        set_qdiscs(module, result)
    if params.get('sysctl_file'):
        make_default(module, result)
    return result


def make_default(module, result):
    """Make the algorithm (and the qdisc, where the kernel has it) the default through the drop-in file, with the
    sysctl_dropin engine, then check a live socket (verify) unless the algorithm was skipped here."""
    params = module.params
    settings = [{'key': CC_KEY, 'value': params['algorithm'], 'floor': False, 'optional': False,
                 'comment': 'Default congestion control for new TCP connections (bdp.wan_tune.bbr).'}]
    header = params['header'].rstrip('\n')
    if params['qdisc'] != 'none' and result['qdisc_available']:
        settings.append({'key': 'net.core.default_qdisc', 'value': params['qdisc'], 'floor': False, 'optional': True,
                         'comment': 'Default qdisc of new interfaces: fq paces each flow, as BBR is designed for.'})
        header += ', qdisc %s' % params['qdisc']
    dropin = DropIn(module, {'path': params['sysctl_file'], 'settings': settings, 'header': header,
                             'allow_lower': False, 'strict': params['strict'], 'state_dir': params['state_dir'],
                             'memory_guard': None})
    dropin.present()
    for key, value in dropin.result.items():
        if key == 'changed':
            result['changed'] = result['changed'] or value
        elif key == 'diff':
            result['diff'] += value
        else:
            result[key] = value
    if params['verify'] and CC_KEY not in result['skipped_keys']:
        result.update((key, value) for key, value in verified(module).items() if key not in ('changed', 'kernel'))


def persist(module, names, result):
    path = module.params['modules_load_file']
    old = files.read_text(path)
    header = module.params['header'].rstrip('\n')
    new = (header + '\n' if header else '') + ''.join(name + '\n' for name in names) if names else None
    if old == new:
        return
    result['changed'] = True
    result['diff'].append({'before': old or '', 'after': new or '', 'before_header': path, 'after_header': path})
    if module.check_mode:
        return
    if new is None:
        os.unlink(path)
        return
    files.write_atomic(module, path, new)


def qdisc_trees(module, tc):
    """Every interface's qdiscs, from one ``tc qdisc show``."""
    rc, out, err = module.run_command([tc, 'qdisc', 'show'])
    if rc != 0:
        module.fail_json(msg='tc qdisc show failed: %s' % err.strip())
    return qdisc.trees(out)


def qdisc_record(module):
    """What each interface had before fq: <state_dir>/qdisc.json, {interface: qdisc} at the top level."""
    return Record(module, module.params['state_dir'], 'qdisc.json', section=None)


def _tc(module, names, result):
    tc = module.get_bin_path('tc', opt_dirs=['/sbin', '/usr/sbin']) if names else None
    if names and not tc:
        module.fail_json(msg='tc is missing; install iproute2 to change the qdisc of %s.' % ', '.join(names), **result)
    return tc


def _change_qdisc(module, result, name, before, after, commands):
    """Report one interface's change; outside check mode run its tc commands. Returns an error or None."""
    result['interfaces'][name] = {'before': before, 'after': after}
    result['changed'] = True
    result['diff'].append({'before': 'qdisc %s\n' % before, 'after': 'qdisc %s\n' % after,
                           'before_header': name, 'after_header': name})
    if module.check_mode:
        return None
    for argv in commands:
        rc, out, err = module.run_command(argv)
        if rc != 0:
            return '%s failed: %s' % (' '.join(argv), err.strip())
    return None


def lower_devices(name):
    """The devices below a bond, bridge port list, VLAN or macvlan (/sys/class/net/NAME/lower_*)."""
    try:
        return sorted(entry[len('lower_'):] for entry in os.listdir('/sys/class/net/%s' % name)
                      if entry.startswith('lower_'))
    except OSError:
        return []


def queued(module, names, found, seen=None):
    """The interfaces whose queues carry the traffic of ``names``: a device without a queue of its own (noqueue,
    as the kernel gives bonds, bridges, VLANs, WireGuard) is replaced by its lower devices, whose queues its packets
    go through; one with none is left out with a warning (fq on it would be a root fq the kernel drops again at
    every boot)."""
    seen = set() if seen is None else seen
    result = []
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        tree = found.get(name) or qdisc.Tree(name, [])
        if not (tree.default and tree.kind == 'noqueue'):
            result.append(name)
            continue
        lower = lower_devices(name)
        if lower:
            module.warn('%s has no queue of its own (%s); fq goes on the devices below it: %s.'
                        % (name, tree.kind, ', '.join(lower)))
            result += queued(module, lower, found, seen)
        else:
            module.warn('%s has no queue of its own (%s) and no device below it; it is left without fq (BBR paces '
                        'its flows itself on Linux 4.13 and later).' % (name, tree.kind))
    return result


def set_qdiscs(module, result):
    """Put fq on every TX queue of the interfaces (under mq on a multiqueue NIC); record what each had."""
    names = module.params['interfaces'] or default_route_interfaces()
    missing = [name for name in names if not os.path.isdir('/sys/class/net/%s' % name)]
    if missing:
        module.fail_json(msg='interfaces: %s do not exist on this host (it has %s); name existing interfaces or leave '
                             'the list empty for the default-route interfaces.'
                             % (', '.join(missing), ', '.join(sorted(os.listdir('/sys/class/net')))), **result)
    tc = _tc(module, names, result)
    record = qdisc_record(module)
    found = qdisc_trees(module, tc) if names else {}
    for name in queued(module, names, found):
        before = found.get(name) or qdisc.Tree(name, [])
        if before.has('fq'):
            result['interfaces'][name] = {'before': before.describe(), 'after': before.describe()}
            continue
        if not before.default and not before.multiqueue:
            module.warn('%s has the root qdisc %s %s that someone configured; it is left alone (fq would replace that '
                        'configuration). Remove it, or add fq to it yourself, to pace BBR with fq.'
                        % (name, before.kind, before.root['handle']))
            result['interfaces'][name] = {'before': before.describe(), 'after': before.describe()}
            continue
        record.remember(name, before.describe())
        if not module.check_mode:
            record.save()
        after = 'mq/fq' if before.multiqueue else 'fq'
        error = _change_qdisc(module, result, name, before.describe(), after, before.set_commands(tc, 'fq'))
        if error:
            module.fail_json(msg=error, **result)


def _ours(record, name, current, default_qdisc):
    """fq on ``name`` that the collection put there: recorded by set_qdiscs, or attached at boot from the
    default_qdisc=fq of the bbr role's file when the default (already restored) is no longer fq."""
    leftover = name in record and current.kind == 'pfifo' and not current.default   # a reset stopped half-way
    if not current.has('fq') and not leftover:
        return False
    if name in record:
        return record[name] not in ('fq', 'mq/fq')
    return default_qdisc not in (None, 'fq') and current.default_with('fq')   # None: unknown, not ours to judge


def remove_qdiscs(module, result):
    """Give back to the kernel's default qdisc every interface whose fq the collection caused.

    Runs after the bbr role restored net.core.default_qdisc. Goes through every interface, even after a failure,
    and keeps the record of those that failed so that a retry still knows them."""
    kept = qdisc_record(module)
    record = kept.originals()
    default_qdisc = sysctl.read_live('net.core.default_qdisc')
    present = set(os.listdir('/sys/class/net')) if os.path.isdir('/sys/class/net') else set()
    recorded = sorted(name for name in record if name in present)
    look = bool(recorded) or (default_qdisc not in (None, 'fq') and bool(present))
    tc = module.get_bin_path('tc', opt_dirs=['/sbin', '/usr/sbin']) if look else None
    if recorded and not tc:
        module.fail_json(msg='tc is missing; install iproute2 to change the qdisc of %s.' % ', '.join(recorded),
                         **result)
    found = qdisc_trees(module, tc) if tc else {}
    errors, keep = [], {}
    for name in sorted(found):
        current = found[name]
        if not _ours(record, name, current, default_qdisc):
            continue
        after = ('kernel default (was %s)' % record[name] if name in record
                 else 'kernel default (default_qdisc %s)' % default_qdisc)
        error = _change_qdisc(module, result, name, current.describe(), after, current.reset_commands(tc))
        if error:
            errors.append(error)
            keep[name] = record.get(name, 'kernel default')     # a retry resets it, also from a leftover pfifo
    if record and record != keep:
        result['changed'] = True
        if not module.check_mode:
            kept.reset(keep)
            kept.save()
    return errors


def absent(module):
    result = {'changed': False, 'kernel': os.uname()[2], 'interfaces': {}, 'diff': []}
    errors = []
    try:
        persist(module, [], result)
    except (IOError, OSError) as exc:
        errors.append('removing %s failed: %s' % (module.params['modules_load_file'], exc))
    errors += remove_qdiscs(module, result)
    if errors:
        module.fail_json(msg='The rollback of the qdiscs and module loading is incomplete: %s. Everything else was '
                             'restored; fix the cause and run the rollback again.' % '; '.join(errors), **result)
    return result


def verified(module):
    algorithm = module.params['algorithm']
    result = {'changed': False, 'kernel': os.uname()[2]}
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    client = server = None
    try:
        listener.bind(('127.0.0.1', 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        client = socket.create_connection(('127.0.0.1', port), timeout=5)
        server, peer = listener.accept()
        raw = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
        result['socket_algorithm'] = raw.split(b'\0', 1)[0].decode('ascii')
        result['ss_algorithm'] = None
        # ss makes the kernel load inet_diag and tcp_diag where they are modules: not in check mode, which changes
        # nothing (the socket's own getsockopt answer is enough there)
        ss = None if module.check_mode else module.get_bin_path('ss', opt_dirs=['/sbin', '/usr/sbin'])
        if ss:
            rc, out, err = module.run_command([ss, '-tinH', 'state', 'established', '( sport = :%d )' % port])
            known = (sysctl.read_live('net.ipv4.tcp_available_congestion_control') or '').split()
            words = [word for word in out.split() if word in known]
            result['ss_algorithm'] = words[0] if words else None
    finally:
        for sock in (client, server, listener):
            if sock is not None:
                sock.close()
    seen = set([result['socket_algorithm'], result['ss_algorithm'] or result['socket_algorithm']])
    if seen != set([algorithm]) and module.check_mode:
        result['msg'] = ('check mode: new TCP connections use %s now; the run would make them use %s.'
                         % (' / '.join(sorted(seen)), algorithm))
    elif seen != set([algorithm]):
        module.fail_json(msg='New TCP connections use %s, not %s (net.ipv4.tcp_congestion_control is %s). Re-run the '
                             'bbr role; inside a container the host must allow %s in '
                             'net.ipv4.tcp_allowed_congestion_control.'
                             % (' / '.join(sorted(seen)), algorithm,
                                sysctl.read_live('net.ipv4.tcp_congestion_control'), algorithm), **result)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            algorithm=dict(type='str', default='bbr'),
            qdisc=dict(type='str', default='fq', choices=['fq', 'none']),
            interfaces=dict(type='list', elements='str', default=[]),
            modules_load_file=dict(type='path', default='/etc/modules-load.d/bdp-wan-tune.conf'),
            header=dict(type='str', default=''),
            state=dict(type='str', default='available', choices=['available', 'absent', 'verified']),
            state_dir=dict(type='path', default=files.STATE_DIR),
            sysctl_file=dict(type='path'),
            strict=dict(type='bool', default=False),
            verify=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    if congestion_control_name(module.params['algorithm']) is not None:
        module.fail_json(msg='algorithm: %r is not a kernel congestion control name such as bbr or cubic.'
                             % module.params['algorithm'])
    result = {'available': available, 'absent': absent, 'verified': verified}[module.params['state']](module)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
