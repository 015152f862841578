#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

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
  - Keys marked O(settings[].floor) never lower a value the host already has higher, unless
    O(allow_lower=true). Multi-value keys such as C(net.ipv4.tcp_rmem) compare whitespace-normalised, and a
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
    description: Let O(settings[].floor) keys lower values the host already has higher.
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
    type: path
    default: /var/lib/bdp_wan_tune
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: Shows the file change and the live value change of every key.
  platform:
    platforms: linux
notes:
  - Runs once per host whatever the number of keys; it opens one file in /proc/sys per key and starts no process.
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

- name: Remove the file and restore the values from before the first change
  bdp.wan_tune.sysctl_dropin:
    path: /etc/sysctl.d/90-bdp-wan-tune.conf
    state: absent
"""

RETURN = r"""
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
  description: Per key, the live value before and after and what happened to it.
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
  sample: [{"file": "/etc/sysctl.conf", "key": "net.core.rmem_max", "value": "8388608", "ours": "49000000"}]
restored:
  description: With O(state=absent), the keys set back to their recorded values.
  returned: when state is absent
  type: dict
  sample: {"net.ipv4.tcp_rmem": "4096 131072 6291456"}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils import files, sysctl

NAMESPACE_REASON = 'owned by the host kernel; read-only in this network namespace'
CC_KEY = 'net.ipv4.tcp_congestion_control'


def _fields(text):
    return text.split() if text is not None else []


def _wanted(setting, current):
    """The value to set: fill null fields from the host, then apply the floor."""
    value = setting['value']
    if isinstance(value, (list, tuple)):
        if current is None:
            # no such key: it is skipped (optional, other namespace) or has failed already
            return sysctl.normalize_value(['-' if item is None else item for item in value])
        have = _fields(current)
        if any(item is None for item in value) and len(have) != len(value):
            raise ValueError('%s: %r keeps host fields (null) but the host value %r has %d fields'
                             % (setting['key'], value, current, len(have)))
        value = [have[i] if item is None else item for i, item in enumerate(value)]
    return sysctl.normalize_value(value)


def _floored(wanted, current):
    want, have = wanted.split(), _fields(current)
    if len(want) != len(have) or not all(f.lstrip('-').isdigit() for f in want + have):
        return wanted
    return ' '.join(str(max(int(w), int(h))) for w, h in zip(want, have))


class DropIn(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.path = self.params['path']
        self.state_file = os.path.join(self.params['state_dir'],
                                       os.path.basename(self.path) + '.json')
        self.initial = sysctl.initial_netns()
        self.result = {'changed': False, 'path': self.path, 'initial_netns': self.initial,
                       'settings': {}, 'skipped_keys': {}, 'overrides': []}

    def fail(self, msg, **extra):
        self.result.update(extra)
        self.module.fail_json(msg=msg, **self.result)

    def read_file(self):
        return files.read_text(self.path)

    def write_file(self, content):
        files.write_atomic(self.module, self.path, content)

    # ----------------------------------------------------------------- plan
    def skip_reason(self, key, wanted, current):
        """Why ``key`` cannot be set here, or None."""
        if current is None:
            return None if self.initial else 'not present in this network namespace'
        if key == CC_KEY and not self.initial:
            allowed = _fields(sysctl.read_live('net.ipv4.tcp_allowed_congestion_control'))
            if wanted not in allowed:
                return ('the host allows only %s in network namespaces; on the host, add %s to '
                        'net.ipv4.tcp_allowed_congestion_control' % (' '.join(allowed) or 'none', wanted))
        if not sysctl.writable(key):
            return NAMESPACE_REASON if not self.initial else 'read-only /proc/sys on this host'
        return None

    def plan(self):
        seen, entries, changes, strict_errors = set(), [], [], []
        for setting in self.params['settings']:
            key = sysctl.normalize_key(setting['key'])
            names = [part.replace('/', '.') for part in key.split('.')]
            if not key or any(c.isspace() or c == '=' for c in key) or any(n in ('', '.', '..') for n in names):
                self.fail('settings: key %r is not a sysctl name such as net.ipv4.tcp_rmem.' % setting['key'])
            if key in seen:
                self.fail('settings: key %s is listed twice; give each key once.' % key)
            seen.add(key)
            current = sysctl.read_live(key)
            if current is None and self.initial and not setting['optional']:
                self.fail('%s does not exist on this kernel (%s); remove it from the settings or mark it optional.'
                          % (key, os.uname()[2]))
            try:
                requested = _wanted(setting, current)
            except ValueError as exc:
                self.fail('settings: %s' % exc)
            wanted = requested
            if setting['floor'] and not self.params['allow_lower']:
                wanted = _floored(requested, current)
            info = {'before': current, 'after': current, 'wanted': wanted}
            if wanted != requested:
                info['requested'] = requested  # the host already has more; kept
            if key == CC_KEY and current is not None:
                available = _fields(sysctl.read_live('net.ipv4.tcp_available_congestion_control'))
                if wanted not in available:
                    self.fail('%s: the kernel (%s) has no %s congestion control (available: %s); load its module '
                              '(modprobe tcp_%s) or use a kernel built with it.'
                              % (key, os.uname()[2], wanted, ' '.join(available), wanted))
            reason = None if wanted == current else self.skip_reason(key, wanted, current)
            if current is None and reason is None:
                reason = 'the kernel has no such key'
            if reason:
                info.update(status='skipped', reason=reason)
                self.result['skipped_keys'][key] = reason
                if self.params['strict']:
                    strict_errors.append('%s (%s)' % (key, reason))
            else:
                info['status'] = 'ok' if wanted == current else 'changed'
                if wanted != current:
                    changes.append(key)
                entries.append((key, wanted, setting['comment']))
            self.result['settings'][key] = info
        if strict_errors:
            self.fail('strict is set and these keys cannot be set here: %s. Nothing was changed. Run on the host '
                      '(initial network namespace) or set strict=false to skip them with a warning.'
                      % '; '.join(strict_errors))
        return entries, changes

    def content(self, entries):
        header = self.params['header']
        skipped = self.result['skipped_keys']
        if skipped:
            header = header.rstrip('\n') + ('\n' if header else '') + '\n'.join(
                ['# Not set by this file on this host:'] + ['#   %s: %s' % item for item in sorted(skipped.items())])
        return sysctl.render(header, entries)

    # ---------------------------------------------------------------- apply
    def apply(self, changes, old_text, new_text):
        state = files.load_record(self.state_file)
        originals = state.setdefault('original', {})
        for key in changes:
            originals.setdefault(key, self.result['settings'][key]['before'])
        state['file_existed'] = state.get('file_existed', old_text is not None)
        written = []
        try:
            if changes:
                files.save_record(self.module, self.state_file, state)
            if old_text != new_text:
                self.write_file(new_text)
            for key in changes:
                written.append(key)
                sysctl.write_live(key, self.result['settings'][key]['wanted'])
            wrong = []
            for key, info in self.result['settings'].items():
                if info['status'] == 'skipped':
                    continue
                info['after'] = sysctl.read_live(key)
                if info['after'] != info['wanted']:
                    wrong.append('%s is %r, wanted %r' % (key, info['after'], info['wanted']))
            if wrong:
                raise RuntimeError('the kernel did not take: %s' % '; '.join(wrong))
        except (IOError, OSError, RuntimeError) as exc:
            self.rollback(written, old_text)
            self.fail('Applying %s failed and was rolled back (file and live values restored): %s. Check the value '
                      'against the kernel limits (see docs/troubleshooting.md).' % (self.path, exc))

    def rollback(self, written, old_text):
        for key in written:
            before = self.result['settings'][key]['before']
            try:
                sysctl.write_live(key, before)
                self.result['settings'][key]['after'] = before
            except (IOError, OSError):
                pass
        if old_text is None:
            if os.path.exists(self.path):
                os.unlink(self.path)
        elif self.read_file() != old_text:
            self.write_file(old_text)

    def present(self):
        entries, changes = self.plan()
        old_text = self.read_file()
        new_text = self.content(entries)
        self.result['changed'] = bool(changes) or old_text != new_text
        self.result['diff'] = self.diff(old_text, new_text, changes)
        if self.result['changed'] and not self.module.check_mode:
            self.apply(changes, old_text, new_text)
        for key, info in self.result['settings'].items():
            if info['status'] == 'skipped':
                self.module.warn('%s was not set to %s: %s.' % (key, info['wanted'], info['reason']))
        wanted = dict((key, value) for key, value, comment in entries)
        self.result['overrides'] = sysctl.overrides(self.path, wanted)
        for item in self.result['overrides']:
            self.module.warn('%(file)s sets %(key)s = %(value)s and is applied after this file at boot, so the host '
                             'will come up with %(value)s instead of %(ours)s; remove that line or the key from it.'
                             % item)

    def absent(self):
        old_text = self.read_file()
        state = files.load_record(self.state_file)
        ours = dict(sysctl.parse_conf(old_text or ''))
        restore = {}
        for key, value in state.get('original', {}).items():
            if value is not None and key in ours and sysctl.read_live(key) == ours[key]:
                restore[key] = value
        self.result['restored'] = restore
        self.result['changed'] = old_text is not None or bool(restore) or bool(state)
        self.result['diff'] = [
            {'before': old_text or '', 'after': '', 'before_header': self.path, 'after_header': self.path},
            {'before': ''.join('%s = %s\n' % (key, ours[key]) for key in sorted(restore)),
             'after': ''.join('%s = %s\n' % (key, restore[key]) for key in sorted(restore)),
             'before_header': 'live values (/proc/sys)', 'after_header': 'live values (/proc/sys)'},
        ]
        if self.module.check_mode or not self.result['changed']:
            return
        for key, value in restore.items():
            try:
                sysctl.write_live(key, value)
            except (IOError, OSError) as exc:
                self.fail('Restoring %s to %s failed: %s; the file was kept so you can retry.' % (key, value, exc))
        if old_text is not None:
            os.unlink(self.path)
        files.save_record(self.module, self.state_file, {})

    def diff(self, old_text, new_text, changes):
        live = self.result['settings']
        return [
            {'before': old_text or '', 'after': new_text, 'before_header': self.path, 'after_header': self.path},
            {'before': ''.join('%s = %s\n' % (key, live[key]['before']) for key in changes),
             'after': ''.join('%s = %s\n' % (key, live[key]['wanted']) for key in changes),
             'before_header': 'live values (/proc/sys)', 'after_header': 'live values (/proc/sys)'},
        ]


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
        ),
        required_if=[('state', 'present', ('settings',))],
        supports_check_mode=True,
    )
    dropin = DropIn(module)
    if module.params['state'] == 'present':
        dropin.present()
    else:
        dropin.absent()
    module.exit_json(**dropin.result)


if __name__ == '__main__':
    main()
