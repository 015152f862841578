# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An interface's qdisc tree from ``tc qdisc show dev NAME``, and the tc commands that put fq on it or give
it back to the kernel's default.

Linux attaches a default qdisc when an interface comes up: ``mq`` with one child per TX queue on a
multiqueue NIC, else ``net.core.default_qdisc`` (noqueue on devices without a queue). Those defaults
have handle ``0:``, and the classes of such an mq cannot be addressed by tc. fq belongs on a multiqueue NIC as the children of ``mq`` (one lock per queue),
never as a single root over all queues. A default qdisc cannot be deleted ("Cannot delete qdisc with
handle of zero"), so giving an interface back to the kernel first replaces its root with a plain
``pfifo`` and then deletes that: the kernel then attaches its default again, built from the
default_qdisc of that moment.
"""

MULTIQUEUE = ('mq',)


def _major(handle):
    """'8001:' -> '8001', '0:' -> '0', ':1' -> '0', '8001:3' -> '8001'."""
    return handle.split(':', 1)[0] or '0'


def parse(text):
    """qdiscs from ``tc qdisc show [dev NAME]``: a list of {'dev', 'kind', 'handle', 'parent'}.

    ``dev`` is None in the output for one device (tc leaves it out there); ``parent`` is 'root' or a class id.
    """
    qdiscs = []
    for line in (text or '').splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[0] != 'qdisc':
            continue
        dev = None
        if fields[3] == 'dev' and len(fields) > 5:
            dev = fields[4]
            fields = fields[:3] + fields[5:]
        if fields[3] == 'root':
            parent = 'root'
        elif fields[3] == 'parent' and len(fields) > 4:
            parent = fields[4]
        else:
            continue
        qdiscs.append({'dev': dev, 'kind': fields[1], 'handle': fields[2], 'parent': parent})
    return qdiscs


def trees(text):
    """Every interface's Tree from the output of ``tc qdisc show`` (all devices)."""
    by_dev = {}
    for item in parse(text):
        by_dev.setdefault(item['dev'], []).append(item)
    return dict((dev, Tree(dev, qdiscs)) for dev, qdiscs in by_dev.items() if dev)


class Tree(object):
    """The root qdisc of an interface and, under mq, its per-queue children."""

    def __init__(self, name, qdiscs):
        """``qdiscs``: parse() output for this interface (or the text of ``tc qdisc show dev NAME``)."""
        self.name = name
        if not isinstance(qdiscs, list):
            qdiscs = parse(qdiscs)
        roots = [item for item in qdiscs if item['parent'] == 'root']
        self.root = roots[0] if roots else None
        major = _major(self.root['handle']) if self.root else None
        self.children = [item for item in qdiscs if item['parent'] != 'root' and ':' in item['parent']
                         and _major(item['parent']) == major] if self.multiqueue else []

    @property
    def kind(self):
        return self.root['kind'] if self.root else 'none'

    @property
    def multiqueue(self):
        return self.kind in MULTIQUEUE

    @property
    def default(self):
        """Attached by the kernel (handle 0:), not configured by anyone."""
        return self.root is None or _major(self.root['handle']) == '0'

    def describe(self):
        """'fq_codel', 'mq/fq_codel', 'mq/fq+fq_codel' (mixed children), 'none'."""
        if self.multiqueue:
            kinds = sorted(set(child['kind'] for child in self.children))
            return '%s/%s' % (self.kind, '+'.join(kinds) or 'none')
        return self.kind

    def has(self, kind):
        """The interface's traffic goes through ``kind``: as its root, or as every child of mq."""
        if self.multiqueue:
            return bool(self.children) and all(child['kind'] == kind for child in self.children)
        return self.kind == kind

    def default_with(self, kind):
        """It has ``kind`` only because the kernel attached it as the default (handles 0:)."""
        return self.has(kind) and self.default and all(_major(child['handle']) == '0' for child in self.children)

    def set_commands(self, tc, kind):
        """tc commands that give every TX queue ``kind``: the children of mq, else the root.

        The classes of a default mq (handle 0:) cannot be addressed ("Failed to find specified qdisc"), so such
        an mq is first replaced by one with handle 1: (its children start as the default and are replaced next).
        """
        if not self.multiqueue:
            return [[tc, 'qdisc', 'replace', 'dev', self.name, 'root', kind]]
        major, cmds = _major(self.root['handle']), []
        if major == '0':
            major = '1'
            cmds.append([tc, 'qdisc', 'replace', 'dev', self.name, 'root', 'handle', '1:', self.kind])
        for child in self.children:
            if child['kind'] != kind or _major(child['parent']) == '0':
                minor = child['parent'].split(':', 1)[1]
                cmds.append([tc, 'qdisc', 'replace', 'dev', self.name, 'parent', '%s:%s' % (major, minor), kind])
        return cmds

    def reset_commands(self, tc):
        """tc commands that give the interface back to the kernel's default qdisc."""
        cmds = [[tc, 'qdisc', 'replace', 'dev', self.name, 'root', 'pfifo']] if self.default else []
        return cmds + [[tc, 'qdisc', 'del', 'dev', self.name, 'root']]
