# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of originals: what a host had before the collection first changed it, so that state=absent can put
it back. One JSON file per module under the state directory (files.STATE_DIR by default), written atomically.

    rec = Record(module, state_dir, 'qdisc.json', section=None)   # the originals at the top level of the file
    rec = Record(module, state_dir, 'jumbo_mtu.json')             # the originals under "original"
    rec.remember(key, value)      # only the first time: an original is never overwritten
    rec.original(key)             # the recorded original, or None
    rec.put(key, entry)           # an entry that carries its own original (kept from original(key) when planned)
    rec.save()                    # write the file (an empty record removes it, and its directory when empty)
    rec.forget(key, ...)          # the key no longer needs restoring (save() to keep that)
    rec.reset(originals)          # replace the originals (what is left to restore after a partial rollback)
    rec.restore(items, put_back)  # put every item back; all done: the record is dropped, else kept for a retry
    rec.drop()                    # remove the file

``data`` is the whole record as on disk: the keys beside the originals (a pending change, the history, whether
a file existed) belong to the module that owns the record. The file names and JSON keys are those of the
hosts already tuned, so that they keep rolling back.
"""

import os

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files

ORIGINAL = 'original'


class Record(object):
    def __init__(self, module, state_dir, name, section=ORIGINAL):
        """``name``: the file under ``state_dir``; ``section``: the key whose dict holds the originals, or None
        when they are the top level of the file."""
        self.module = module
        self.path = os.path.join(state_dir or files.STATE_DIR, name)
        self.section = section
        self.data = files.load_record(self.path)

    def originals(self):
        """The recorded originals, {key: original} (a copy: change them with remember() and forget())."""
        section = self.data if self.section is None else self.data.get(self.section)
        return dict(section) if isinstance(section, dict) else {}

    def original(self, key, default=None):
        """The recorded original of ``key``, or ``default``."""
        return self.originals().get(key, default)

    def remember(self, key, value):
        """Record ``value`` as the original of ``key`` unless one is recorded already; returns the original."""
        return self._section().setdefault(key, value)

    def _section(self):
        if self.section is None:
            return self.data
        if not isinstance(self.data.get(self.section), dict):
            self.data[self.section] = {}
        return self.data[self.section]

    def put(self, key, entry):
        """Record ``entry`` for ``key``, replacing the one before: for records whose entries describe what the
        module wrote and carry their own original (planned from ``original(key)``, so that it is kept)."""
        self._section()[key] = entry

    def forget(self, *keys):
        """``keys`` no longer need restoring (their originals are dropped from the record)."""
        section = self.data if self.section is None else self.data.get(self.section)
        for key in keys if isinstance(section, dict) else ():
            section.pop(key, None)

    def reset(self, originals):
        """Replace the recorded originals with ``originals`` (those still to restore after a partial rollback)."""
        if self.section is None:
            self.data = dict(originals)
        else:
            self.data[self.section] = dict(originals)

    def save(self):
        files.save_record(self.module, self.path, self.data)

    def drop(self):
        """Forget the whole record and remove its file (and the state directory when it is left empty)."""
        self.data = {}
        files.save_record(self.module, self.path, {})

    def restore(self, items, put_back, finish=None, errors=(IOError, OSError)):
        """Call ``put_back(key, value)`` for every (key, value) of ``items``, even after a failure. When all went
        back, ``finish()`` (if given) runs and then the record is dropped; when one failed it is kept whole, so
        that a retry still knows every key. Returns (restored: {key: value}, failed: {key: exception})."""
        restored, failed = {}, {}
        for key, value in items:
            try:
                put_back(key, value)
                restored[key] = value
            except errors as exc:
                failed[key] = exc
        if not failed:
            if finish is not None:
                finish()
            self.drop()
        return restored, failed
