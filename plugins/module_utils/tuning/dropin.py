# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sysctl drop-in engine: one file in /etc/sysctl.d with all its keys, applied live key by key, read back,
rolled back on failure, floors from the recorded values, the memory guard, and the rollback (state=absent).

Used by the sysctl_dropin module and, for the bbr role's file, by the tcp_congestion module, so that the bbr role
needs one module execution per host (docs/fleet.md)."""

import os

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import bdp, files
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.record import Record
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import sysctl
from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning.kmod import Kernel, congestion_control_name

NAMESPACE_REASON = 'owned by the host kernel; read-only in this network namespace'
CC_KEY = 'net.ipv4.tcp_congestion_control'
TCP_MEM_KEY = bdp.TCP_MEM_KEY
MEMINFO = '/proc/meminfo'


def mem_total_bytes():
    """MemTotal of /proc/meminfo (MEMINFO) in bytes (the kernel writes kB, 1024 bytes), or None when unreadable."""
    try:
        with open(MEMINFO, 'r') as handle:
            for line in handle:
                fields = line.split()
                if fields[:1] == ['MemTotal:'] and len(fields) >= 2 and fields[1].isdigit():
                    return int(fields[1]) * (1024 if fields[2:3] == ['kB'] else 1)
    except (IOError, OSError):
        pass
    return None


def page_size():
    """The page size net.ipv4.tcp_mem counts in."""
    return os.sysconf('SC_PAGE_SIZE')


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


class DropInFile(object):
    """One drop-in: its module parameters, its file, its record of originals and the result. The concerns are
    the mixins below: planning (DropInPlan), the memory guard (MemoryGuard), apply and rollback (DropIn)."""

    def __init__(self, module, params=None):
        """``params`` are the sysctl_dropin module's options (path, settings, header, allow_lower, strict, state_dir,
        memory_guard); by default the module's own."""
        self.module = module
        self.params = module.params if params is None else params
        self.path = self.params['path']
        # the record of the values the host had: <state_dir>/<file name>.json, {"original": {key: value},
        # "file_existed": bool}
        self.record = Record(module, self.params['state_dir'], os.path.basename(self.path) + '.json')
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


class DropInPlan(DropInFile):
    """What to write and set: the keys, their floors, what cannot be set here, and what goes back."""

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

    def floor_base(self, key, current):
        """What a floor protects: the value the host had before this file first changed ``key`` (recorded), as
        long as the live value is still this file's own; else the live value (the host's, or someone else's)."""
        original = self.record.original(key)
        if original is None or current is None:
            return current
        ours = dict(sysctl.parse_conf(self.read_file() or '')).get(key)
        return original if ours == current else current

    def check_congestion_control(self, key, wanted, info):
        """The kernel must offer ``wanted``; in check mode an algorithm that is a loadable module will be offered
        once the bbr role has loaded it, so it is predicted, not refused."""
        available = _fields(sysctl.read_live('net.ipv4.tcp_available_congestion_control'))
        if wanted in available:
            return
        source = Kernel(self.module).congestion_source(wanted, False) if congestion_control_name(wanted) is None else None
        if source == 'module' and self.module.check_mode:
            info['note'] = 'available once the module tcp_%s is loaded (check mode: not loaded)' % wanted
            return
        hint = ('load its module first (modprobe tcp_%s; the bbr role does this before it sets the default)'
                % wanted if source == 'module' else 'use a kernel built with it (CONFIG_TCP_CONG_%s)' % wanted.upper())
        self.fail('%s: the kernel (%s) has no %s congestion control (available: %s); %s.'
                  % (key, os.uname()[2], wanted, ' '.join(available), hint))

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
            base = self.floor_base(key, current)
            if current is None and self.initial and not setting['optional']:
                self.fail('%s does not exist on this kernel (%s); remove it from the settings or mark it optional.'
                          % (key, os.uname()[2]))
            try:
                requested = _wanted(setting, base)
            except ValueError as exc:
                self.fail('settings: %s' % exc)
            wanted = requested
            if setting['floor'] and not self.params['allow_lower']:
                wanted = _floored(requested, base)
            info = {'before': current, 'after': current, 'wanted': wanted}
            if wanted != requested:
                info['requested'] = requested  # the host had more before the collection first changed it; kept
            if base != current:
                info['host_before_first_run'] = base
            if key == CC_KEY and current is not None:
                self.check_congestion_control(key, wanted, info)
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
        changes += self.plan_given_back(seen)
        return entries, changes

    def plan_given_back(self, managed):
        """Keys this file set before but no longer manages (companions or tcp_mem switched off) go back to what
        the host had, as long as their live value is still this file's own."""
        previous = dict(sysctl.parse_conf(self.read_file() or ''))
        back = []
        for key, original in sorted(self.record.originals().items()):
            if key in managed or original is None or key not in previous:
                continue
            current = sysctl.read_live(key)
            if current != previous[key] or self.skip_reason(key, original, current):
                continue
            self.result['settings'][key] = {'before': current, 'after': current, 'wanted': original,
                                            'status': 'changed', 'given_back': True}
            back.append(key)
        return back

    def content(self, entries):
        header = self.params['header']
        skipped = self.result['skipped_keys']
        if skipped:
            header = header.rstrip('\n') + ('\n' if header else '') + '\n'.join(
                ['# Not set by this file on this host:'] + ['#   %s: %s' % item for item in sorted(skipped.items())])
        return sysctl.render(header, entries)


class MemoryGuard(DropInFile):
    """The memory guard: the planned flows against this host's net.ipv4.tcp_mem and RAM."""

    def memory_guard(self):
        """Check the planned flows against this host's net.ipv4.tcp_mem and RAM, read here (bdp.memory_plan); with
        fit_tcp_mem, add net.ipv4.tcp_mem to the settings as a floor key. Returns (plan against the live tcp_mem,
        plan the fit started from) or None."""
        guard = self.params['memory_guard']
        if not guard:
            return None
        fit = guard['fit_tcp_mem']
        if fit and any(sysctl.normalize_key(item['key']) == TCP_MEM_KEY for item in self.params['settings']):
            self.fail('memory_guard: fit_tcp_mem sets %s itself; remove that key from the settings or set fit_tcp_mem '
                      'to false.' % TCP_MEM_KEY)
        live, mem = sysctl.read_live(TCP_MEM_KEY), mem_total_bytes()
        base = self.floor_base(TCP_MEM_KEY, live) if fit else live     # the host's own value, if ours is live
        unknown = [name for name, value in (('MemTotal from %s' % MEMINFO, mem), (TCP_MEM_KEY, live)) if value is None]
        if unknown:
            self.module.warn('memory_guard: could not read %s on this host, so that check was left out%s.'
                             % (' or '.join(unknown), ' and net.ipv4.tcp_mem is not changed' if fit else ''))
        args = dict(flows=guard['flows'], buffer_bytes=guard['buffer_bytes'], mem_total_bytes=mem,
                    page_size=page_size(), memory_share=guard['memory_share'],
                    names={'flows': 'memory_guard.flows', 'memory_share': 'memory_guard.memory_share'})
        try:
            plain = bdp.memory_plan(tcp_mem_pages=live, **args)
            fitted = bdp.memory_plan(tcp_mem_pages=base, fit_tcp_mem=True, **args) if fit else plain
        except bdp.UnitError as exc:
            self.fail('memory_guard: %s' % exc)
        proposed = fitted['proposed_tcp_mem']
        if fit and proposed and (proposed != fitted['tcp_mem'] or TCP_MEM_KEY in self.record.originals()):
            self.params['settings'].append({
                'key': TCP_MEM_KEY, 'value': [None] + proposed[1:], 'floor': True, 'optional': False,
                'comment': 'memory_guard.fit_tcp_mem: pressure holds %d flows x %d bytes (%d pages of %d bytes); '
                           'max = 3/2 x pressure, at most %g%% of RAM; min as the host had it.'
                           % (plain['flows'], plain['buffer_bytes'], plain['needed_pages'], plain['page_size'],
                              plain['memory_share'] * 100)})
        self.result['memory'] = dict(plain, fit_tcp_mem=fit, proposed_tcp_mem=proposed,
                                     tcp_mem_capped=fitted['tcp_mem_capped'])
        return plain, fitted

    def memory_warnings(self, guard):
        """Show the guard's warnings: those of the fit when net.ipv4.tcp_mem was set (or nothing needed setting),
        else those against the live value (fit_tcp_mem off, or the key skipped in a container)."""
        if not guard:
            return
        plain, fitted = guard
        info = self.result['settings'].get(TCP_MEM_KEY)
        applied = self.result['memory']['fit_tcp_mem'] and fitted['proposed_tcp_mem'] and (
            info is None or info['status'] != 'skipped')
        warnings = (fitted if applied else plain)['warnings']
        memory = self.result['memory']
        memory['warnings'] = warnings
        outcome = ['does not fit: see the warnings' if warnings else 'fits']
        if applied and info is not None and info['wanted'] != info['before']:
            outcome.insert(0, '%s %s -> %s' % (TCP_MEM_KEY, info['before'], info['wanted']))
        memory['summary'] = '; '.join([plain['summary']] + outcome)
        for warning in warnings:
            self.module.warn(warning)


class DropIn(DropInPlan, MemoryGuard):
    """Apply (file, live values, read back, rollback on failure) and the rollback of state=absent."""

    def apply(self, changes, old_text, new_text):
        for key in changes:
            self.record.remember(key, self.result['settings'][key]['before'])
        self.record.data.setdefault('file_existed', old_text is not None)
        written = []
        try:
            if changes:
                self.record.save()
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
            given_back = [key for key in changes if self.result['settings'][key].get('given_back')]
            if given_back:
                self.record.forget(*given_back)
                self.record.save()
        except (IOError, OSError, RuntimeError) as exc:
            errors = self.rollback(written, old_text)
            if not errors:
                self.fail('Applying %s failed and was rolled back (file and live values restored): %s. Check the value '
                          'against the kernel limits (see docs/troubleshooting.md).' % (self.path, exc))
            self.fail('Applying %s failed: %s. The rollback is incomplete: %s. Everything else was restored; put '
                      'these back by hand (sysctl -w KEY=VALUE; see docs/troubleshooting.md).'
                      % (self.path, exc, '; '.join(errors)), rollback_errors=errors)

    def rollback(self, written, old_text):
        """Put back the live values of ``written`` and the file as it was; what could not be put back, one message
        each (an empty list: everything was restored)."""
        errors = []
        for key in written:
            before = self.result['settings'][key]['before']
            try:
                sysctl.write_live(key, before)
                self.result['settings'][key]['after'] = before
            except (IOError, OSError) as exc:
                try:
                    now = repr(sysctl.read_live(key))
                except (IOError, OSError):
                    now = 'unreadable'
                errors.append('%s is still %s, not restored to %r (%s)' % (key, now, before, exc))
        try:
            if old_text is None:
                if os.path.exists(self.path):
                    os.unlink(self.path)
            elif self.read_file() != old_text:
                self.write_file(old_text)
        except (IOError, OSError) as exc:
            errors.append('%s could not be put back as it was (%s)' % (self.path, exc))
        return errors

    def present(self):
        guard = self.memory_guard()
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
        self.memory_warnings(guard)
        wanted = dict((key, value) for key, value, comment in entries)
        self.result['overrides'] = sysctl.overrides(self.path, wanted)
        for item in self.result['overrides']:
            via = ' (read at boot through %s)' % item['via'] if item.get('via') else ''
            self.module.warn('%s sets %s = %s and is applied after this file at boot%s, so the host will come up with '
                             '%s instead of %s; remove that line or the key from it.'
                             % (item['file'], item['key'], item['value'], via, item['value'], item['ours']))

    def absent(self):
        old_text = self.read_file()
        ours = dict(sysctl.parse_conf(old_text or ''))
        restore = {}
        for key, value in self.record.originals().items():
            if value is not None and key in ours and sysctl.read_live(key) == ours[key]:
                restore[key] = value
        self.result['restored'] = restore
        self.result['changed'] = old_text is not None or bool(restore) or bool(self.record.data)
        self.result['diff'] = [
            {'before': old_text or '', 'after': '', 'before_header': self.path, 'after_header': self.path},
            {'before': ''.join('%s = %s\n' % (key, ours[key]) for key in sorted(restore)),
             'after': ''.join('%s = %s\n' % (key, restore[key]) for key in sorted(restore)),
             'before_header': 'live values (/proc/sys)', 'after_header': 'live values (/proc/sys)'},
        ]
        if self.module.check_mode or not self.result['changed']:
            return
        # every key is tried, even after a failure; all back: the file goes, then the record
        _restored, failed = self.record.restore(sorted(restore.items()), sysctl.write_live,
                                                finish=lambda: old_text is not None and os.unlink(self.path))
        if failed:
            # the file and the whole record stay: a reboot before the retry brings back this file's values, and
            # the retry restores every key whose live value is still this file's own
            errors = ['Restoring %s to %s failed: %s' % (key, restore[key], failed[key]) for key in sorted(failed)]
            for key in failed:
                del self.result['restored'][key]
            self.fail('%s. The other keys were restored; %s and the record of the failed keys were kept so that a '
                      'second rollback can retry.' % ('; '.join(errors), self.path))

    def diff(self, old_text, new_text, changes):
        live = self.result['settings']
        return [
            {'before': old_text or '', 'after': new_text, 'before_header': self.path, 'after_header': self.path},
            {'before': ''.join('%s = %s\n' % (key, live[key]['before']) for key in changes),
             'after': ''.join('%s = %s\n' % (key, live[key]['wanted']) for key in changes),
             'before_header': 'live values (/proc/sys)', 'after_header': 'live values (/proc/sys)'},
        ]
