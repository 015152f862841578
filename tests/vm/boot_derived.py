# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find the sysctl keys the kernel derives at boot, by comparing stock boots of each test VM.

The VM tier compares `sysctl -a` before and after the collection's runs, across reboots. Some keys the
kernel computes at each boot from the memory it finds free, the CPU count or a random seed
(net.ipv4.inet_peer_threshold differed by one between two boots of the same VM and turned a run red).
Such a key says nothing about the collection, so the comparison leaves it out, by this rule:

  a key is boot-derived when its value differs between stock boots of the same pristine disk: a boot
  and a reboot at the tier's memory and CPU count, and fresh boots with other memory sizes and CPU counts
  (these show every key computed from memory or CPUs, even when two boots of one size happen to agree).

Keys the collection writes, or that follow from what it writes, are never left out (protected_keys()):
when one of them is boot-derived, the tier compares it anyway and this tool says so.

    python tests/vm/boot_derived.py [SUITE ...]          compare and print (default: bookworm trixie)
    python tests/vm/boot_derived.py --write [SUITE ...]  and record the result in fixtures/boot_derived.json

The VMs of one suite boot one after the other; suites run in parallel (about 3 min under TCG).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmlib  # noqa: E402  pylint: disable=wrong-import-position

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'boot_derived.json')
# (memory MiB, CPUs, reboot first): the tier's own size twice (a boot and a reboot), then other sizes.
BOOTS = ((1024, 2, False), (1024, 2, True), (1536, 1, False), (768, 2, False))
# Sysctl key names in the collection's own code: what it writes, and what it reads back to decide.
KEY_IN_CODE = re.compile(r'\bnet\.(?:core|ipv4|ipv6)\.[a-z0-9_]+(?:\.[a-z0-9_*]+)*')
# Keys that follow from what the collection writes, beyond the names in its code.
FOLLOWERS = (re.compile(r'^net\.ipv6\.conf\.[^.]+\.mtu$'),                 # a link's MTU (jumbo_mtu)
             re.compile(r'^net\.ipv4\.tcp_(available|allowed)_congestion_control$'))  # module loads (bbr)


def protected_keys(root=vmlib.ROOT):
    """Every sysctl key named in roles/ and plugins/ (what the collection writes or reads back)."""
    found = set()
    for top in ('roles', 'plugins'):
        for base, _dirs, files in os.walk(os.path.join(root, top)):
            for name in files:
                if name.endswith(('.py', '.yml', '.j2')):
                    with open(os.path.join(base, name), errors='replace') as handle:
                        found.update(KEY_IN_CODE.findall(handle.read()))
    return found


def is_protected(key, protected):
    return key in protected or any(rule.match(key) for rule in FOLLOWERS)


def sysctl_values(vm):
    """{key: value} of `sysctl -a` on the running VM, less runtime counters (vmlib.COUNTERS)."""
    values = {}
    for line in vm.out('sysctl -a 2>/dev/null').splitlines():
        key, sep, value = line.partition(' = ')
        if sep and not vmlib.COUNTERS.match(key):
            values[key] = value
    return values


def compare(suite):
    """{'kernel': ..., 'boots': [...], 'keys': {key: [value per boot]}} for one suite."""
    boots, seen, kernel = [], [], None
    vm = None
    for memory, cpus, reboot in BOOTS:
        if reboot:
            vm.reboot()
        else:
            if vm:
                vm.stop()
            vm = vmlib.VM(suite, tempfile.mkdtemp(prefix='boot-derived-%s-' % suite), memory=memory, cpus=cpus)
            vm.start()
        kernel = vm.out('uname -r').strip()
        boots.append({'memory_mib': memory, 'cpus': cpus, 'how': 'reboot' if reboot else 'boot'})
        seen.append(sysctl_values(vm))
        print('boot-derived: %s %s %d MiB %d CPUs: %d keys' % (suite, boots[-1]['how'], memory, cpus, len(seen[-1])),
              file=sys.stderr)
    vm.stop()
    keys = set().union(*seen)
    derived = dict((key, [values.get(key) for values in seen]) for key in sorted(keys)
                   if len(set(values.get(key) for values in seen)) > 1)
    return {'kernel': kernel, 'boots': boots, 'keys': derived}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--write', action='store_true', help='record the result in %s' % FIXTURE)
    parser.add_argument('suites', nargs='*', default=['bookworm', 'trixie'])
    args = parser.parse_args(argv)
    results, errors = {}, []

    def run(suite):
        try:
            results[suite] = compare(suite)
        except Exception as error:  # pylint: disable=broad-except
            errors.append('%s: %s' % (suite, error))

    threads = [threading.Thread(target=run, args=(suite,)) for suite in args.suites]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        sys.exit('boot-derived: ' + '; '.join(errors))
    protected = protected_keys()
    for suite in args.suites:
        for key, values in results[suite]['keys'].items():
            mark = '  PROTECTED: still compared' if is_protected(key, protected) else ''
            print('%s %s: %s%s' % (suite, key, ' | '.join(str(v) for v in values), mark))
    if args.write:
        recorded = {}
        if os.path.exists(FIXTURE):
            with open(FIXTURE) as handle:
                recorded = json.load(handle)
        recorded.setdefault('suites', {}).update(results)
        recorded['how'] = ('python tests/vm/boot_derived.py --write: sysctl -a of stock boots of the pristine disk '
                           '(boots: memory MiB, CPUs, a fresh boot or a reboot); keys: every key whose value '
                           'differed, with its value per boot')
        os.makedirs(os.path.dirname(FIXTURE), exist_ok=True)
        with open(FIXTURE, 'w') as handle:
            json.dump(recorded, handle, indent=1, sort_keys=True)
            handle.write('\n')
        print('boot-derived: wrote %s' % FIXTURE, file=sys.stderr)


if __name__ == '__main__':
    main()
