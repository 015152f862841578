# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The congestion-control engine of the tcp_congestion module: the kernel (modules, persisted loading, fq on the
interfaces), the default congestion control and qdisc in the bbr role's drop-in file (with the sysctl_dropin engine
of dropin.py), the live-socket check, and the rollback of the qdiscs and module loading.

Used by the tcp_congestion module and, for its option ``congestion``, by the sysctl_dropin module: there the
bbr role's request runs in the same execution as the tcp_buffers role's drop-in file, so that playbooks/wan_tune.yml
makes one module execution per host for both roles (docs/fleet.md). The functions take the module; ``Request``
gives them the module with the request's options as its params."""

import os
import socket

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.record import Record
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import kmod, qdisc, sysctl
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning.dropin import CC_KEY, DropIn
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning.kmod import Kernel, congestion_control_name


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


def missing_algorithm(release, algorithm, cc_list):
    """The refusal of a congestion control the kernel does not have: the variable, its value, what the host offers
    and the fix. Version facts only where they are true (BBR came with Linux 4.9; other names have their own)."""
    loadable = [name for name in kmod.loadable_congestion_controls(release) or [] if name not in cc_list]
    offers = '%s (available now)' % (' '.join(cc_list) or 'nothing')
    if loadable:
        offers += ', %s (loadable modules)' % ' '.join(loadable)
    fix = 'Set bbr_algorithm to one of these, or boot a kernel built with CONFIG_TCP_CONG_%s' % algorithm.upper()
    if algorithm == 'bbr':
        fix += ' (BBR: Linux 4.9 or later; every current distribution kernel has it as a module)'
    return ('bbr_algorithm (the algorithm option): %r is not a congestion control of kernel %s: it is neither built in '
            'nor available as module tcp_%s. This host offers: %s. %s; inside a container, the host\'s kernel '
            'decides: load tcp_%s on the host.' % (algorithm, release, algorithm, offers, fix, algorithm))


def available(module):
    params = module.params
    kernel = Kernel(module)
    algorithm = params['algorithm']
    result = {'changed': False, 'kernel': kernel.release, 'loaded': [], 'interfaces': {}, 'diff': []}
    cc_list = (sysctl.read_live('net.ipv4.tcp_available_congestion_control') or '').split()
    source = kernel.congestion_source(algorithm, algorithm in cc_list)
    if source in ('missing', 'unknown') and algorithm not in cc_list:
        module.fail_json(msg=missing_algorithm(kernel.release, algorithm, cc_list), **result)
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
            module.warn('The fq qdisc (sch_fq) is not available on kernel %s (%s); continuing without it.%s'
                        % (kernel.release, qsource, ' BBR paces its own flows on Linux 4.13 and later, so it still '
                                                    'works.' if params['algorithm'] == 'bbr' else ''))
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
            module.warn('%s has no queue of its own (%s) and no device below it; it is left without fq%s.'
                        % (name, tree.kind, ' (BBR paces its flows itself on Linux 4.13 and later)'
                           if module.params['algorithm'] == 'bbr' else ''))
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


# The options of a request (tcp_congestion's, without state and state_dir).
OPTIONS = dict(
    algorithm=dict(type='str', default='bbr'),
    qdisc=dict(type='str', default='fq', choices=['fq', 'none']),
    interfaces=dict(type='list', elements='str', default=[]),
    modules_load_file=dict(type='path', default='/etc/modules-load.d/bdp-wan-tune.conf'),
    header=dict(type='str', default=''),
    sysctl_file=dict(type='path'),
    strict=dict(type='bool', default=False),
    verify=dict(type='bool', default=False),
)


def check_algorithm(module):
    if congestion_control_name(module.params['algorithm']) is not None:
        module.fail_json(msg='algorithm: %r is not a kernel congestion control name such as bbr or cubic.'
                             % module.params['algorithm'])


def run(module, state):
    """tcp_congestion with ``state`` (available, absent, verified): its result."""
    check_algorithm(module)
    return {'available': available, 'absent': absent, 'verified': verified}[state](module)


class Request(object):
    """The module as the engine sees it for a request given as one option (sysctl_dropin's ``congestion``): its
    params are the request's, everything else is the module's; a failure reports the engine's result under
    ``result_key``, where a success puts it."""

    def __init__(self, module, params, result_key):
        self._module = module
        self.params = params
        self._result_key = result_key

    def __getattr__(self, name):
        return getattr(self._module, name)

    def fail_json(self, msg, **result):
        self._module.fail_json(msg=msg, **{self._result_key: dict(result, failed=True, msg=msg)})
