# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nic_settings' changes to the running host: set what the plan (module_utils/nic/settings.py) says, undo this
run's changes when a later step fails, and put back the recorded originals (state=absent).

The record (nic_settings.json in the state directory) holds, under "original", the value each setting had before
the module first changed it, keyed 'rings:IF', 'coalescing:IF', 'txqueuelen:IF' and 'governor:PATH'; under
"applied" the value the module set last (a live value that differs from it was changed by someone else since, and
state=absent leaves it alone); under "settled" {'asked', 'took'} per key where the driver took another value than
the one asked (a ring size rounded to the driver's step), so that the same request meeting that value is settled;
under "refused" per interface the driver's name and {'rings' or 'coalescing.FIELD': {'value', 'reason'}}, the
values its driver refused (planned 'unsupported' up front while the driver is the same); under "files" what each
file it wrote replaced; under "link_source" the .link file whose keys each of ours carries.

``owner`` is the module's call object: ``module``, ``record``, ``run_ip(args)``, ``fail(msg)``.
"""

import copy
import os

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import settings
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import survey

SETTINGS = ('rings', 'coalescing', 'txqueuelen')
APPLIED = 'applied'
SETTLED = 'settled'
REFUSED = 'refused'
show = settings.show


def refusals(record, name, driver):
    """{'rings' or 'coalescing.FIELD': {'value', 'reason'}} the driver of interface ``name`` refused before, when
    it is still the same ``driver``; {} otherwise."""
    item = record.data.get(REFUSED, {}).get(name) or {}
    return item.get('settings', {}) if item.get('driver') == driver else {}


class Setters(object):
    """Setting one value on the running host, each with its undo (``undo``), and the driver's refusals (recorded
    in the record under "refused", and this run's in ``refusals``).  ``owner``: the module's call object."""

    def __init__(self, owner):
        self.owner = owner
        self.undo = []          # [(what, function)] of this run's changes, in order
        self.refusals = {}      # {interface: {'rings' or 'coalescing.FIELD': reason}} of this run

    def refused_step(self, key, entry, exc):
        """Whether ``exc`` of setting ``key`` is the driver's refusal (then recorded, the entry 'unsupported')."""
        setting, name = key.split(':', 1)
        if not (isinstance(exc, OSError) and setting == 'rings' and ethtool.refused(exc)):
            return False
        reason = 'the driver refused %s (%s)' % (show(entry['after']), ethtool.refusal_code(exc, self.driver(name)))
        self.refuse(name, setting, entry['after'], reason)
        self.refusals.setdefault(name, {})[setting] = reason
        return True

    def driver(self, name):
        return survey.driver(name, survey.SYS_CLASS_NET)

    def refuse(self, name, setting, value, reason):
        """Record that the driver of ``name`` refused ``value`` of ``setting`` ('rings', 'coalescing.FIELD')."""
        refused = self.owner.record.data.setdefault(REFUSED, {})
        driver = self.driver(name)
        if (refused.get(name) or {}).get('driver') != driver:
            refused[name] = {'driver': driver, 'settings': {}}
        refused[name]['settings'][setting] = {'value': value, 'reason': reason}

    def set_rings(self, name, before, after):
        ethtool.set_rings(name, after['rx'], after['tx'])
        self.undo.append(('%s rings %s' % (name, show(before)),
                          lambda: ethtool.set_rings(name, before['rx'], before['tx'])))
        now = ethtool.rings(name)
        return {'rx': now['rx'], 'tx': now['tx']} if now.get('supported') else None

    def set_coalescing(self, name, before, after):
        """Set the fields that differ together; when the driver refuses that, each on its own (ENA takes adaptive
        rx, not adaptive tx): a field it refuses is recorded and stays as it was."""
        fields = dict((key, value) for key, value in after.items() if before.get(key) != value)
        try:
            ethtool.set_coalescing(name, **fields)
            done = fields
        except OSError as exc:
            if not ethtool.refused(exc):
                raise
            done = self.coalescing_one_by_one(name, fields, exc)
        if done:
            self.undo.append(('%s coalescing %s' % (name, show(before)), lambda: ethtool.set_coalescing(
                name, **dict((key, before[key]) for key in done))))
        now = ethtool.coalescing(name)
        return dict((key, now[key]) for key in before) if now.get('supported') else None

    def coalescing_one_by_one(self, name, fields, exc):
        """Set each field of ``fields`` on its own (after the driver refused them together); {field: value} set."""
        done = {}
        order = [key for key in ('adaptive_rx', 'rx_usecs', 'adaptive_tx') if key in fields]
        for field in order if len(order) > 1 else []:
            try:
                ethtool.set_coalescing(name, **{field: fields[field]})
                done[field] = fields[field]
            except OSError as error:
                if not ethtool.refused(error):
                    raise
                exc = error
                self.refuse_field(name, field, fields[field], error)
        for field in order if len(order) == 1 else []:
            self.refuse_field(name, field, fields[field], exc)
        return done

    def refuse_field(self, name, field, value, exc):
        reason = 'the driver refused %s %s (%s)' % (field.replace('_', ' '), value if not isinstance(value, bool)
                                                    else 'on' if value else 'off',
                                                    ethtool.refusal_code(exc, self.driver(name)))
        self.refuse(name, 'coalescing.' + field, value, reason)
        self.refusals.setdefault(name, {})['coalescing.' + field] = reason

    def set_txqueuelen(self, name, before, after):
        self.owner.run_ip(['link', 'set', 'dev', name, 'txqueuelen', str(after)])
        self.undo.append(('%s txqueuelen %s' % (name, before),
                          lambda: self.owner.run_ip(['link', 'set', 'dev', name, 'txqueuelen', str(before)])))
        return survey.read_int(os.path.join(survey.SYS_CLASS_NET, name, 'tx_queue_len'))

    def set_governor(self, path, before, after):
        write_sysfs(path, after)
        self.undo.append(('%s %s' % (path, before), lambda: write_sysfs(path, before)))


class Changes(Setters):
    """The changes of one call: ``plan`` {interface: {setting: entry}}, the governor's entry and its writes
    {path: governor}, ``found`` settings.governors()."""

    def __init__(self, owner, plan, governor, writes, found):
        Setters.__init__(self, owner)
        self.plan = plan
        self.governor = governor
        self.writes = writes
        self.found = found
        self.saved = copy.deepcopy(owner.record.data)     # the record as it was before this run

    def pending(self):
        """Whether a setting changes (or would, in check mode)."""
        return any(entries[key]['status'] == 'changed' for entries in self.plan.values() for key in SETTINGS) or bool(
            self.governor and self.governor['status'] == 'changed')

    def describe(self, which):
        """The settings before or after, one line each, for --diff."""
        lines = ['%s %s: %s' % (name, key, show(entries[key][which])) for name, entries in sorted(self.plan.items())
                 for key in SETTINGS if entries[key][which] is not None]
        if self.governor and self.governor[which] is not None:
            lines.append('governor: %s' % self.governor[which])
        return ''.join(line + '\n' for line in lines)

    def summary(self, count):
        """One line: each interface's settings and statuses, the governor, the files."""
        parts = []
        for name, entries in sorted(self.plan.items()):
            shown = []
            for key in [key for key in SETTINGS + ('persist',) if key in entries]:
                entry = entries[key]
                shown.append('%s %s%s' % (key, entry['status'], ' (%s)' % show(entry['after'])
                                          if entry['status'] == 'changed' and key != 'persist' else ''))
            parts.append('%s: %s' % (name, ', '.join(shown)))
        if self.governor:
            parts.append('governor %s' % self.governor['status'])
        parts.append('%d file(s) %s' % (count, 'to write or remove' if self.owner.module.check_mode else
                                        'written or removed'))
        return ('check mode, nothing changed: ' if self.owner.module.check_mode else '') + '; '.join(parts)

    # ------------------------------------------------------------------------------------------ present

    def steps(self):
        """[(record key, entry, set function)] of the planned changes."""
        out = []
        for name, entries in sorted(self.plan.items()):
            for key in SETTINGS:
                if entries[key]['status'] == 'changed':
                    out.append(('%s:%s' % (key, name), entries[key], getattr(self, 'set_' + key)))
        for path, value in sorted(self.writes.items()):
            out.append(('governor:' + path, {'before': self.found[path][0], 'after': value}, self.set_governor))
        return out

    def apply(self):
        """Record the originals, then make every change; a refusal is 'unsupported' (and recorded), another failure
        (of any kind) puts back what this run changed and fails.  Each status comes from the value read back."""
        record = self.owner.record
        steps = self.steps()
        added = [key for key, entry, _set in steps if record.original(key) is None]
        for key, entry, _set in steps:
            record.remember(key, entry['before'])
        record.save()
        for key, entry, setter in steps:
            name = key.split(':', 1)[1]
            try:
                result = setter(name, entry['before'], entry['after'])
            except Exception as exc:  # pylint: disable=broad-except
                if not self.refused_step(key, entry, exc):
                    self.failed('setting ' + key, exc)
                result = entry['before']
            self.settle(key, entry, result)
            if entry['after'] == entry['before'] and key in added:
                record.forget(key)
        save(record)

    def settle(self, key, entry, result):
        """The entry's after and status from the value read back (``result``; None: it cannot be read): 'changed'
        only when it differs from before; the value the driver took for another one asked is recorded."""
        setting, name = key.split(':', 1)
        refused = [reason for field, reason in self.refusals.get(name, {}).items() if field.split('.')[0] == setting]
        asked = entry['after']
        if isinstance(asked, dict) and setting == 'coalescing':
            asked = dict((field, entry['before'][field] if 'coalescing.' + field in self.refusals.get(name, {})
                          else value) for field, value in asked.items())
        for reason in refused:
            if reason not in entry['reason']:
                entry['reason'] = '; '.join(part for part in (entry['reason'], reason) if part)
        if result is None:
            result = asked
        elif result != asked and not refused:
            entry['reason'] = '; '.join(part for part in (entry['reason'], 'the driver took %s' % show(result))
                                        if part)
        settled = self.owner.record.data.setdefault(SETTLED, {})
        if result != asked and not refused:
            settled[key] = {'asked': asked, 'took': result}
        else:
            settled.pop(key, None)
        entry['after'] = result
        entry['status'] = 'changed' if result != entry['before'] else 'unsupported' if refused else 'ok'
        if entry['status'] == 'changed':
            self.owner.record.data.setdefault(APPLIED, {})[key] = result

    def failed(self, key, exc, unrestored=()):
        """A step failed: undo this run's changes (newest first), put the record back as it was (unless something
        could not be put back), fail."""
        back, errors = [], list(unrestored)
        for what, undo in reversed(self.undo):
            try:
                undo()
                back.append(what)
            except Exception as error:  # pylint: disable=broad-except
                errors.append('%s: %s' % (what, error))
        if not errors:
            self.owner.record.data = self.saved
        save(self.owner.record)
        self.owner.undone = not errors
        self.owner.fail('%s failed: %s. %s%s' % (
            key.replace(':', ' of ', 1), exc,
            'Put back what this run had changed: %s.' % '; '.join(back) if back else 'Nothing else had changed.',
            ' Could not put back: %s; the record keeps the originals, state=absent retries.' % '; '.join(errors)
            if errors else ''))

    # ------------------------------------------------------------------------------------------ absent

    def live(self, key):
        """The live value of a record key, or None when the interface or CPU is gone."""
        setting, _sep, name = key.partition(':')
        if setting == 'governor':
            text = files.read_text(name)
            return text.strip() if text is not None else None
        if not os.path.isdir(os.path.join(survey.SYS_CLASS_NET, name)):
            return None
        if setting == 'txqueuelen':
            return survey.read_int(os.path.join(survey.SYS_CLASS_NET, name, 'tx_queue_len'))
        now = ethtool.rings(name) if setting == 'rings' else ethtool.coalescing(name)
        keys = ('rx', 'tx') if setting == 'rings' else ('adaptive_rx', 'adaptive_tx', 'rx_usecs')
        return dict((item, now[item]) for item in keys) if now.get('supported') else None

    def restore_steps(self):
        """[(name, setting, live, original, key)] to put back; a value gone or changed by someone else since this
        module set it is left alone, with a warning."""
        record = self.owner.record
        applied = record.data.get(APPLIED, {})
        steps = []
        for key, original in sorted(record.originals().items()):
            setting, _sep, name = key.partition(':')
            live = self.live(key)
            if live is None:
                self.owner.module.warn('%s of %s cannot be read any more (gone?): not put back.' % (setting, name))
            elif isinstance(live, dict) and isinstance(original, dict):
                live = dict((item, live[item]) for item in original if item in live)
                if live != original:
                    steps.append((name, setting, live, original, key))
            elif live != original:
                steps.append((name, setting, live, original, key))
        kept = []
        for step in steps:
            if step[4] in applied and step[2] != applied[step[4]]:
                self.owner.module.warn('%s %s is %s, changed by someone else since bdp.wan_tune set %s: left alone.'
                                       % (step[0], step[1], show(step[2]), show(applied[step[4]])))
            else:
                kept.append(step)
        return kept

    def describe_steps(self, steps, which):
        index = 2 if which == 'before' else 3
        return ''.join('%s %s: %s\n' % (step[0], step[1], show(step[index])) for step in steps)

    def restore(self, steps):
        """Put back every step; fails (the record kept for a retry) when one could not be."""
        errors = []
        for name, setting, live, original, _key in steps:
            try:
                getattr(self, 'set_' + setting)(name, live, original)
            except Exception as exc:  # pylint: disable=broad-except
                errors.append('%s %s: %s' % (name, setting, exc))
        if errors:
            self.owner.fail('Putting back the recorded values failed: %s. The record was kept; run state=absent '
                            'again once the cause is fixed.' % '; '.join(errors))


def save(record):
    """Save the record without its empty sections (an empty record removes the file)."""
    for key in [key for key, value in record.data.items() if value in ({}, [], None)]:
        del record.data[key]
    record.save()


def write_sysfs(path, value):
    """Write ``value`` into a sysfs attribute (no temporary file: sysfs has no rename)."""
    with open(path, 'w') as handle:
        handle.write('%s\n' % value)
