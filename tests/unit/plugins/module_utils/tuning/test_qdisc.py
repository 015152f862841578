# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""qdisc trees (plugins/module_utils/tuning/qdisc.py): parsing ``tc qdisc show`` and the tc commands for each tree.

The fixtures marked "recorded" are verbatim outputs of a Debian VM (kernel 6.12, ens4 a 2-queue virtio NIC);
the others are built in the same format.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.module_utils.tuning import qdisc

TC = '/usr/sbin/tc'


def _recorded(name):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'fixtures', 'tc', name)) as handle:
        return handle.read()


# recorded: `tc qdisc show` on a stock host (default_qdisc fq_codel)
STOCK = _recorded('stock.txt')

# recorded: `tc qdisc show` after default_qdisc=fq and a reset of both (what a reboot with default_qdisc=fq gives)
REBOOTED = _recorded('rebooted.txt')

# recorded: `tc qdisc show dev ens4` after `replace root handle 1: mq` + `replace parent 1:1 fq` + `replace parent 1:2 fq`
ENS4_MQ_FQ = """\
qdisc mq 1: root
qdisc fq 8007: parent 1:2 limit 10000p flow_limit 100p ...
qdisc fq 8006: parent 1:1 limit 10000p flow_limit 100p ...
"""

# recorded: `tc qdisc show dev ens4` after `tc qdisc replace dev ens4 root pfifo`
ENS4_PFIFO = 'qdisc pfifo 8001: root refcnt 3 limit 1000p\n'

# recorded: an ingress qdisc in `tc qdisc show`
INGRESS = 'qdisc ingress ffff: dev ens3 parent ffff:fff1 ----------------\n'

# built: `tc qdisc show dev ens4` after `replace root handle 1: mq` + `replace parent 1:1 fq` only
ENS4_MQ_MIXED = """\
qdisc mq 1: root
qdisc fq_codel 0: parent 1:2 limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64
qdisc fq 8006: parent 1:1 limit 10000p flow_limit 100p ...
"""  # noqa: E501

# built: `tc qdisc show dev ens3` with an htb shaper someone configured, and a clsact qdisc for eBPF
ENS3_HTB = ('qdisc htb 1: root refcnt 2 r2q 10 default 0x30 direct_packets_stat 0 direct_qlen 1000\n'
            'qdisc clsact ffff: parent ffff:fff1\n')

# built: `tc qdisc show dev ens3` after `tc qdisc replace dev ens3 root fq`
ENS3_FQ = 'qdisc fq 8001: root refcnt 2 limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023\n'


def show_dev(text, name):
    """The lines of ``name`` in a ``tc qdisc show`` output, as ``tc qdisc show dev NAME`` prints them."""
    return ''.join(line.replace(' dev %s ' % name, ' ', 1) for line in text.splitlines(True)
                   if ' dev %s ' % name in line)


def replace(name, *args):
    return [TC, 'qdisc', 'replace', 'dev', name] + list(args)


def delete(name):
    return [TC, 'qdisc', 'del', 'dev', name, 'root']


# --------------------------------------------------------------------------- parse()

def test_parse_all_devices():
    assert qdisc.parse(STOCK) == [
        {'dev': 'lo', 'kind': 'noqueue', 'handle': '0:', 'parent': 'root'},
        {'dev': 'ens3', 'kind': 'fq_codel', 'handle': '0:', 'parent': 'root'},
        {'dev': 'ens4', 'kind': 'mq', 'handle': '0:', 'parent': 'root'},
        {'dev': 'ens4', 'kind': 'fq_codel', 'handle': '0:', 'parent': ':2'},
        {'dev': 'ens4', 'kind': 'fq_codel', 'handle': '0:', 'parent': ':1'},
    ]


def test_parse_one_device():
    assert qdisc.parse(ENS4_MQ_FQ) == [
        {'dev': None, 'kind': 'mq', 'handle': '1:', 'parent': 'root'},
        {'dev': None, 'kind': 'fq', 'handle': '8007:', 'parent': '1:2'},
        {'dev': None, 'kind': 'fq', 'handle': '8006:', 'parent': '1:1'},
    ]
    assert qdisc.parse(ENS4_PFIFO) == [{'dev': None, 'kind': 'pfifo', 'handle': '8001:', 'parent': 'root'}]


def test_show_dev_gives_the_one_device_form():
    # the helper the tests below use is faithful to tc: the same qdiscs, without the dev field
    assert qdisc.parse(show_dev(STOCK, 'ens4')) == [dict(item, dev=None) for item in qdisc.parse(STOCK)
                                                    if item['dev'] == 'ens4']


def test_parse_keeps_ingress_as_a_non_root_qdisc():
    assert qdisc.parse(INGRESS) == [{'dev': 'ens3', 'kind': 'ingress', 'handle': 'ffff:', 'parent': 'ffff:fff1'}]


@pytest.mark.parametrize('line', [
    '',
    '   ',
    'qdisc',
    'qdisc fq 8001:',
    'qdisc fq 8001: dev',
    'qdisc fq 8001: dev eth0',
    'qdisc fq 8001: dev eth0 parent',
    'qdisc fq 8001: parent',
    'qdisc fq 8001: refcnt 2',
    'class mq :1 root',
    ' Sent 1234 bytes 12 pkt (dropped 0, overlimits 0 requeues 0)',
    'Error: Cannot find device "eth9"',
    'Cannot find device "eth9"',
    'garbage qdisc fq 8001: root',
])
def test_parse_skips_garbage(line):
    assert qdisc.parse(line) == []
    assert qdisc.parse(line + '\n' + ENS4_PFIFO) == qdisc.parse(ENS4_PFIFO)


@pytest.mark.parametrize('text', [None, ''])
def test_parse_nothing(text):
    assert qdisc.parse(text) == []


# --------------------------------------------------------------------------- trees()

def test_trees_of_all_devices():
    found = qdisc.trees(STOCK + INGRESS)
    assert sorted(found) == ['ens3', 'ens4', 'lo']
    assert dict((name, tree.describe()) for name, tree in found.items()) == {
        'lo': 'noqueue', 'ens3': 'fq_codel', 'ens4': 'mq/fq_codel'}
    assert [tree.name for tree in found.values()] == list(found)
    assert [child['parent'] for child in found['ens4'].children] == [':2', ':1']


def test_trees_ignores_output_without_devices():
    # the one-device form has no dev field: trees() needs the all-devices form
    assert qdisc.trees(ENS4_MQ_FQ) == {}
    assert qdisc.trees('') == {}
    assert qdisc.trees(None) == {}


def test_trees_match_trees_of_one_device():
    for name, tree in qdisc.trees(REBOOTED).items():
        alone = qdisc.Tree(name, show_dev(REBOOTED, name))
        assert (alone.root, alone.children) == (dict(tree.root, dev=None),
                                                [dict(child, dev=None) for child in tree.children])


# --------------------------------------------------------------------------- Tree

class Case(object):
    """One interface's ``tc qdisc show dev NAME`` and what Tree says about it."""

    def __init__(self, name, text, describe, has_fq, default, default_with_fq, set_fq, reset):
        self.name, self.text, self.describe, self.has_fq = name, text, describe, has_fq
        self.default, self.default_with_fq = default, default_with_fq
        self.set_fq, self.reset = set_fq, reset

    def tree(self):
        return qdisc.Tree(self.name, self.text)


def pfifo_del(name):
    """The reset of a default root: a default qdisc cannot be deleted, a pfifo put in its place can."""
    return [replace(name, 'root', 'pfifo'), delete(name)]


def mq_fq(name, *minors):
    """fq under a new mq 1: for every queue of a default mq."""
    return [replace(name, 'root', 'handle', '1:', 'mq')] + [replace(name, 'parent', '1:' + minor, 'fq')
                                                            for minor in minors]


CASES = {
    'single-queue default': Case(
        'ens3', show_dev(STOCK, 'ens3'), 'fq_codel', False, True, False,
        set_fq=[replace('ens3', 'root', 'fq')], reset=pfifo_del('ens3')),
    'single-queue default fq (after a reboot)': Case(
        'ens3', show_dev(REBOOTED, 'ens3'), 'fq', True, True, True,
        set_fq=[replace('ens3', 'root', 'fq')], reset=pfifo_del('ens3')),
    'fq already (replaced by tc)': Case(
        'ens3', ENS3_FQ, 'fq', True, False, False,
        set_fq=[replace('ens3', 'root', 'fq')], reset=[delete('ens3')]),
    'noqueue (lo)': Case(
        'lo', show_dev(STOCK, 'lo'), 'noqueue', False, True, False,
        set_fq=[replace('lo', 'root', 'fq')], reset=pfifo_del('lo')),
    'mq 0: with fq_codel children': Case(
        'ens4', show_dev(STOCK, 'ens4'), 'mq/fq_codel', False, True, False,
        set_fq=mq_fq('ens4', '2', '1'), reset=pfifo_del('ens4')),
    'mq 1: with mixed children': Case(
        'ens4', ENS4_MQ_MIXED, 'mq/fq+fq_codel', False, False, False,
        set_fq=[replace('ens4', 'parent', '1:2', 'fq')], reset=[delete('ens4')]),
    'mq 1: with fq children': Case(
        'ens4', ENS4_MQ_FQ, 'mq/fq', True, False, False,
        set_fq=[], reset=[delete('ens4')]),
    'mq 0: with fq children (after a reboot)': Case(
        'ens4', show_dev(REBOOTED, 'ens4'), 'mq/fq', True, True, True,
        set_fq=mq_fq('ens4', '2', '1'), reset=pfifo_del('ens4')),
    'configured htb 1:': Case(
        'ens3', ENS3_HTB, 'htb', False, False, False,
        set_fq=[replace('ens3', 'root', 'fq')], reset=[delete('ens3')]),
    'pfifo left by a reset': Case(
        'ens4', ENS4_PFIFO, 'pfifo', False, False, False,
        set_fq=[replace('ens4', 'root', 'fq')], reset=[delete('ens4')]),
    'no qdisc output': Case(
        'eth9', '', 'none', False, True, False,
        set_fq=[replace('eth9', 'root', 'fq')], reset=pfifo_del('eth9')),
}


@pytest.fixture(params=sorted(CASES))
def case(request):
    return CASES[request.param]


def test_tree_describe(case):
    assert case.tree().describe() == case.describe


def test_tree_has(case):
    assert case.tree().has('fq') is case.has_fq
    if case.has_fq:
        assert case.tree().has('fq_codel') is False


def test_tree_default(case):
    assert case.tree().default is case.default


def test_tree_default_with(case):
    assert case.tree().default_with('fq') is case.default_with_fq


def test_tree_set_commands(case):
    assert case.tree().set_commands(TC, 'fq') == case.set_fq


def test_tree_reset_commands(case):
    assert case.tree().reset_commands(TC) == case.reset


def test_tree_from_parse_output_equals_tree_from_text(case):
    from_list = qdisc.Tree(case.name, qdisc.parse(case.text))
    assert (from_list.root, from_list.children) == (case.tree().root, case.tree().children)


def test_tree_of_a_multiqueue_nic():
    tree = qdisc.trees(STOCK)['ens4']
    assert tree.kind == 'mq'
    assert tree.multiqueue is True
    assert tree.root == {'dev': 'ens4', 'kind': 'mq', 'handle': '0:', 'parent': 'root'}
    assert [(child['kind'], child['parent']) for child in tree.children] == [('fq_codel', ':2'), ('fq_codel', ':1')]


def test_tree_of_a_single_queue_interface_has_no_children():
    tree = qdisc.trees(STOCK + INGRESS)['ens3']
    assert tree.kind == 'fq_codel'
    assert tree.multiqueue is False
    assert tree.children == []


def test_ingress_and_clsact_are_not_children_of_mq():
    text = show_dev(STOCK, 'ens4') + 'qdisc ingress ffff: parent ffff:fff1 ----------------\n'
    tree = qdisc.Tree('ens4', text)
    assert tree.describe() == 'mq/fq_codel'
    assert [child['parent'] for child in tree.children] == [':2', ':1']
    assert qdisc.Tree('ens3', ENS3_HTB).children == []


def test_ingress_alone_is_no_root():
    tree = qdisc.Tree('ens3', 'qdisc ingress ffff: parent ffff:fff1 ----------------\n')
    assert tree.root is None
    assert tree.describe() == 'none'
    assert tree.default is True


def test_mq_without_children():
    tree = qdisc.Tree('ens4', 'qdisc mq 0: root\n')
    assert tree.describe() == 'mq/none'
    assert tree.has('fq') is False
    assert tree.default_with('fq') is False
    assert tree.set_commands(TC, 'fq') == [replace('ens4', 'root', 'handle', '1:', 'mq')]


def test_default_mq_with_a_configured_child_is_not_default_with():
    # an fq child someone attached with an explicit handle: not only the kernel's doing
    text = 'qdisc mq 0: root\nqdisc fq 0: parent :2 limit 10000p\nqdisc fq 5: parent :1 limit 10000p\n'
    tree = qdisc.Tree('ens4', text)
    assert tree.has('fq') is True
    assert tree.default is True
    assert tree.default_with('fq') is False


def test_set_commands_for_other_kinds():
    tree = qdisc.trees(STOCK)['ens4']
    assert tree.set_commands(TC, 'fq_codel') == [replace('ens4', 'root', 'handle', '1:', 'mq'),
                                                 replace('ens4', 'parent', '1:2', 'fq_codel'),
                                                 replace('ens4', 'parent', '1:1', 'fq_codel')]
    assert qdisc.Tree('ens4', ENS4_MQ_MIXED).set_commands(TC, 'fq_codel') == [
        replace('ens4', 'parent', '1:1', 'fq_codel')]


def test_many_queues_keep_tc_minor_numbers():
    # tc prints the minor of a class in hex: queue 10 is :a
    text = 'qdisc mq 0: root\n' + ''.join('qdisc fq_codel 0: parent :%x limit 10240p\n' % queue
                                          for queue in range(12, 0, -1))
    commands = qdisc.Tree('eth0', text).set_commands(TC, 'fq')
    assert commands[0] == replace('eth0', 'root', 'handle', '1:', 'mq')
    assert [argv[6] for argv in commands[1:]] == ['1:%x' % queue for queue in range(12, 0, -1)]
