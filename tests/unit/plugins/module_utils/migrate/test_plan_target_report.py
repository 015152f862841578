# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's preflight (the tree's counts, the rule of auto, the parts' limits), where it goes (the receiver's
rsync daemon as the inventory says, each refusal naming its variable) and its report."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.bdp.wan_tune.plugins.filter.migrate import migrate_target
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import plan as _plan
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report as _report
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import target as _target
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import tree as _tree

MB = 10 ** 6


def counts(**extra):
    """survey()'s counts of a tree: one 1 GB file, 200 of 5 MB, 2000 of 0.5 MB."""
    return dict({'files': 2201, 'bytes': 3000 * MB, 'inodes': 2201, 'linked': 0, 'dirs': 21, 'others': 1,
                 'largest': {'path': 'big', 'bytes': 1000 * MB}, 'attributes': {}}, **extra)


def test_the_parts_give_every_stream_work_and_the_largest_file_bounds_its_stream():
    planned = _plan.plan(counts(), 4, rate_bps=10 ** 9)
    # a part closes at a stream's share of the names or of the bytes, at most PART_FILES and PART_BYTES
    assert planned['parts'] == {'files': 551, 'bytes': 750 * MB} and planned['streams'] == 4
    assert 'the largest file, big (1 GB), is more than a stream\'s share (750 MB)' in planned['bound']
    assert planned['seconds'] == pytest.approx(24.0) and planned['bytes'] == 3000 * MB
    one = _plan.plan(counts(), 1)
    assert one['bound'] is None and one['seconds'] is None and one['parts'] == {'files': 2202, 'bytes': 3000 * MB}
    huge = _plan.plan(counts(files=10 ** 7, inodes=10 ** 7, others=0, bytes=400 * 2 ** 33), 4)
    assert huge['parts'] == {'files': _runner.PART_FILES, 'bytes': _runner.PART_BYTES}
    assert (_runner.PART_FILES, _runner.PART_BYTES) == (20000, 8 * 2 ** 30)
    assert _runner.part_limits(0, 0, 3) == (_runner.PART_FILES, _runner.PART_BYTES)      # an empty tree
    # whole rounds of parts of about equal size: 200,000 names on 4 streams make 12 parts, not 10 (2 streams idle in
    # the last round)
    assert _runner.part_limits(200000, 0, 4)[0] == 16667 and _runner.part_limits(5, 5, 8) == (1, 1)


def test_auto_takes_one_stream_per_2_gbits_and_more_for_many_small_files():
    assert _plan.auto_streams(10, 1000 * MB, 10 ** 9) == (1, 'one stream per 2 Gbit/s of the path rate')
    assert _plan.auto_streams(10, 1000 * MB, 10 * 10 ** 9)[0] == 5
    count, reason = _plan.auto_streams(5000, 5000 * 20000, 10 ** 9)
    assert count == 4 and 'per-file work on the receiver' in reason
    assert _plan.auto_streams(1, 1, 100 * 10 ** 9)[0] == 1          # never more streams than files


def test_the_tree_is_read_as_rsync_lists_it(tmp_path):
    (tmp_path / 'a' / 'b').mkdir(parents=True)
    (tmp_path / 'a' / 'b' / 'f').write_bytes(b'x' * 10)
    (tmp_path / 'a' / 'skip.tmp').write_bytes(b'x' * 99)
    (tmp_path / 'e').mkdir()
    os.symlink('a', str(tmp_path / 'l'))
    walked = [(path, info is None) for path, dummy, info in _tree.walk(str(tmp_path), ['*.tmp'])]
    assert sorted(walked) == [('a', True), ('a/b', True), ('a/b/f', False), ('e', True), ('l', False)]
    # a directory comes before what it holds
    assert walked.index(('a', True)) < walked.index(('a/b', True)) < walked.index(('a/b/f', False))
    found = _plan.survey(str(tmp_path), ['*.tmp'])
    assert (found['files'], found['bytes'], found['dirs'], found['others']) == (1, 10, 3, 1)
    assert found['largest'] == {'path': 'a/b/f', 'bytes': 10}
    with pytest.raises(_plan.PlanError, match='is not a directory'):
        _plan.survey(str(tmp_path / 'missing'))


def test_the_names_of_one_inode_count_once(tmp_path):
    """rsync -H links the names of one inode only within one transfer (the runner keeps them in one part): the
    preflight counts their bytes once, and holds only the inodes whose names it has not all met."""
    for index in range(8):
        (tmp_path / ('f%d' % index)).write_bytes(b'x' * (1000 + index))
    (tmp_path / 'd').mkdir()
    for index in range(3):
        os.link(str(tmp_path / 'f7'), str(tmp_path / 'd' / ('f7-%d' % index)))
    found = _plan.survey(str(tmp_path))
    assert found['files'] == 11 and found['linked'] == 3 and found['inodes'] == 8
    assert found['bytes'] == sum(1000 + index for index in range(8))


RECEIVER = {'rsync_daemon_modules': [{'name': 'pub', 'path': '/srv/pub'},
                                     {'name': 'incoming', 'path': '/srv/incoming', 'read_only': False,
                                      'auth_users': ['migrate', 'other'], 'hosts_allow': ['198.18.3.0/24'],
                                      'uid': 'root', 'gid': 'root', 'numeric_ids': True}],
            'rsync_daemon_users': [{'name': 'migrate', 'password': 'p'}, {'name': 'other', 'password': 'q'}],
            'rsync_daemon_tls_migration': 'm1', 'rsync_daemon_streams': 6, 'rsync_daemon_hosts_allow': ['198.18.3.0/24']}


def test_the_destination_comes_from_the_receivers_inventory():
    out = _target.target('dc1-a', 'dc2-a', RECEIVER, '198.18.3.11')
    assert (out['module'], out['user'], out['dest'], out['port'], out['max_connections']) == (
        'incoming', 'migrate', '/srv/incoming/dc1-a', 874, 6)
    assert out['client']['cert'] == '/etc/bdp-wan-tune/rsync-tls-client/m1/dc2-a/host.crt'
    assert ' -key /etc/bdp-wan-tune/rsync-tls-client/m1/dc2-a/host.key ' in out['env']['RSYNC_CONNECT_PROG']
    assert out['command'] == ['rsync', '-M--no-msgs2stderr']
    assert _target.url(out, '198.18.3.12') == 'rsync://migrate@198.18.3.12:874/incoming/dc1-a/'
    root = _target.target('dc1-a', 'dc2-a', RECEIVER, '198.18.3.11', subdir='/', user='other', transport='tls')
    assert root['dest'] == '/srv/incoming' and _target.url(root, 'h') == 'rsync://other@h:874/incoming/'
    assert _target.unit_name('dc2 a', 'in') == 'bdp-migrate-dc2-a-in.service'


@pytest.mark.parametrize('kwargs, message', [
    ({'module': 'pub'}, "migrate_module: 'pub' of dc2-a is read-only"),
    ({'module': 'nope'}, "migrate_module: 'nope' is not a module of dc2-a; expected one of pub, incoming"),
    ({'user': 'eve'}, "migrate_user: 'eve' may not write incoming on dc2-a; expected one of its auth_users: migrate, "
                      "other"),
    ({'sender_address': '203.0.113.9'}, "migrate_module: 'incoming' of dc2-a does not admit dc1-a (203.0.113.9)"),
    ({'transport': 'plain'}, 'migrate_transport: plain, but dc2-a serves tls only'),
    ({'subdir': '../up'}, "migrate_subdir: '../up' is not a directory name"),
])
def test_each_refusal_names_its_variable(kwargs, message):
    address = kwargs.pop('sender_address', '198.18.3.11')
    with pytest.raises(_target.TargetError) as info:
        _target.target('dc1-a', 'dc2-a', RECEIVER, address, **kwargs)
    assert str(info.value).startswith(message), str(info.value)


def test_a_receiver_whose_daemon_is_not_usable_is_named():
    with pytest.raises(_target.TargetError, match='the rsync daemon of dc2-a is not usable as it is set up: '
                                                  r'rsync_daemon_modules\[0\] \(pub\): hosts_allow is empty'):
        _target.target('dc1-a', 'dc2-a', dict(RECEIVER, rsync_daemon_hosts_allow=[]), '198.18.3.11')
    with pytest.raises(_target.TargetError, match='migrate_target: dc2-a has no rsync_daemon_modules'):
        _target.target('dc1-a', 'dc2-a', {}, '198.18.3.11')


def test_streams_never_above_the_modules_max_connections():
    assert _target.streams('auto', 4, 2) == 2 and _target.streams('3', 1, 6) == 3
    with pytest.raises(_target.TargetError, match='more than the module\'s max connections'):
        _target.streams(7, 1, 6)
    with pytest.raises(_target.TargetError, match='is not a number of streams'):
        _target.streams('many', 1, 6)


def test_the_report_has_the_fields_and_goodput_leaves_out_start_up_and_proof():
    progress = {'state': 'done', 'started': 100.0, 'ended': 140.0, 'bytes_total': 2 * 10 ** 9,
                'bytes_done': 2 * 10 ** 9, 'files': 3, 'stream_count': 2, 'proof': 'checksum', 'verified': True,
                'mismatches': 0, 'resent_bytes': 0, 'literal_bytes': 2 * 10 ** 9, 'cpu_seconds': 4.0,
                'phases': {'destination': [100.5, 101.5], 'copying': [102.0, 122.0], 'proving': [122.0, 138.0],
                           'directories': [138.0, 139.0]},
                'streams': [{'stream': 0, 'bytes': 10 ** 9, 'started': 102.0, 'ended': 121.0, 'rc': 0,
                             'cpu_seconds': 2.0, 'literal_bytes': 10 ** 9}],
                'plan': {'bytes': 2 * 10 ** 9, 'streams': 2, 'streams_reason': 'migrate_streams=2'},
                'cpu_before': 10 ** 10, 'files_sent': 3, 'first_rsync': {'at': 102.5, 'listed': {'files': 1}},
                'first_byte': 103.0, 'peak_rss_kb': 15000, 'walk': {'state': 'listed', 'parts': 2, 'files': 3}}
    target = {'receiver': 'dc2-a', 'module': 'incoming', 'transport': 'tls', 'dest': '/srv/in/x'}
    run = _report.build({'state': 'done', 'progress': progress}, target, 'dc1-a', receiver_cpu_after=16 * 10 ** 9,
                        when='2026-11-26T08:00:00Z')
    for key in ('bytes', 'files', 'seconds', 'goodput_bps', 'streams', 'transport', 'verified', 'mismatches',
                'resent_bytes', 'per_stream', 'sender_cpu_seconds_per_gb', 'receiver_cpu_seconds_per_gb'):
        assert key in run, key
    assert run['seconds'] == 20.0 and run['goodput_bps'] == 800 * 10 ** 6 and run['startup_seconds'] == 2.0
    assert run['proof_seconds'] == 16.0 and run['sender_cpu_seconds_per_gb'] == 2.0
    # files per second beside goodput; the time to the first rsync (how much was listed then) and to the first byte
    assert run['files_per_second'] == 0.1 and run['first_rsync_seconds'] == 2.5 and run['first_byte_seconds'] == 3.0
    assert run['runner_peak_rss_kb'] == 15000 and run['parts'] == 2 and run['listed_at_first_rsync'] == 1
    for row in (['files per second', '0.1'], ['time to the first rsync, s', '2.5 (1 files listed)'],
                ['time to the first byte, s', '3.0'], ['runner peak memory', '15.36 MB'], ['streams', '2 (2 parts)']):
        assert row in run['rows']['summary'], (row, run['rows']['summary'])
    assert run['receiver_cpu_seconds_per_gb'] == 3.0
    assert run['verdict'] == 'VERIFIED (checksum)' and ['goodput of this pass', '800 Mbit/s'] in run['rows']['summary']
    assert run['sent_bytes'] == 2 * 10 ** 9 and json.loads(json.dumps(run)) == run
    assert _report.file_stem(run) == 'migrate-20261126T080000Z-dc1-a-dc2-a'
    assert run['plan']['streams_reason'] == 'migrate_streams=2'
    # the name of a run's report is its end's, however often it is read; no CPU figure from a counter that fell
    again = _report.build({'state': 'done', 'progress': progress}, target, 'dc1-a', receiver_cpu_after=1)
    assert again['when'] == '1970-01-01T00:02:20Z' and again['receiver_cpu_seconds_per_gb'] is None
    killed = _report.build({'state': 'interrupted', 'progress': dict(progress, ended=None, run_id='100.000000')},
                           target, 'dc1-a')
    assert killed['when'] == '1970-01-01T00:01:40Z' and killed['run_id'] == '100.000000'
    phases = dict(progress['phases'], resending=[138.0, 139.0])
    phases['proving again'] = [139.0, 140.0]
    resent = dict(progress, phases=phases)
    assert _report.build({'state': 'done', 'progress': resent}, target, 'dc1-a')['proof_seconds'] == 18.0
    sized = _report.build({'state': 'done', 'progress': dict(progress, proof='size')}, {}, 'dc1-a')
    assert 'not the content' in sized['proof_note'] and sized['receiver_cpu_seconds_per_gb'] is None
    line = _report.progress_line(dict(progress, state='copying', bytes_done=10 ** 9, files_done=2), 112.0)
    assert line == '1 GB of 2 GB (50 %), 2 of 3 files (0/s), 800 Mbit/s, ETA 10 s (copying, 1 stream)'
    # while the runner still lists the tree, the totals are the preflight's, and the line says how much is listed
    listing = dict(progress, state='copying', bytes_done=10 ** 9, files_done=2000, files=3000,
                   walk={'state': 'listing', 'files': 2500, 'bytes': 15 * 10 ** 8})
    assert _report.progress_line(listing, 112.0) == (
        '1 GB of 2 GB (50 %), 2000 of 3000 files (200/s), 800 Mbit/s, ETA 10 s (copying, 1 stream; still listing the '
        "tree: 2500 files, 1.5 GB so far (the totals are the preflight's))")


def test_goodput_is_what_a_pass_sent_over_its_seconds_and_the_passes_converge():
    """A pass after a complete one sends little: its goodput is what it sent (rsync's literal data) over its copy,
    not the whole tree over it; the table of passes shows each one."""
    first = {'runs': 1, 'run_id': '1.0', 'state': 'done', 'started': 10.0, 'ended': 40.0, 'copy_seconds': 20.0,
             'literal_bytes': 2 * 10 ** 9, 'files_sent': 3000, 'deleted': 0, 'vanished': 2, 'changed_at_source': 1,
             'differs_at_receiver': 0, 'verified': True, 'delete': False, 'proof': 'checksum'}
    progress = {'state': 'done', 'runs': 2, 'started': 100.0, 'ended': 104.0, 'bytes_total': 2 * 10 ** 9,
                'bytes_done': 2 * 10 ** 9, 'literal_bytes': 10 ** 7, 'files_sent': 30, 'files': 3000,
                'present_bytes': 2 * 10 ** 9, 'proof': 'checksum', 'verified': True, 'mismatches': 0, 'delete': True,
                'deleted': 15, 'extra': 0, 'phases': {'copying': [101.0, 102.0]}, 'history': [first],
                'preserve': {'acls': True, 'xattrs': False, 'sparse': True},
                'plan': {'attributes': {'xattrs': 4}, 'linked': 2}}
    progress['summary'] = dict(first, runs=2, run_id='2.0', started=100.0, copy_seconds=1.0, literal_bytes=10 ** 7,
                               files_sent=30, deleted=15, vanished=0, changed_at_source=0, delete=True)
    run = _report.build({'state': 'done', 'progress': progress}, {'receiver': 'b', 'owners': True}, 'a')
    assert run['goodput_bps'] == 80 * 10 ** 6 and run['sent_bytes'] == 10 ** 7 and run['files_sent'] == 30
    assert [(item['runs'], item['goodput_bps'], item['deleted']) for item in run['passes']] == [
        (1, 800 * 10 ** 6, 0), (2, 80 * 10 ** 6, 15)]
    assert [row[0] for row in run['rows']['passes']] == ['1', '2'] and run['rows']['passes'][1][6] == '15'
    assert ['deleted at the receiver', '15, 0 left that the source has not'] in run['rows']['summary']
    assert 'ACLs' in run['kept'] and 'owners and groups (by number)' in run['kept']
    assert run['not_kept'] == ["extended attributes: the receiver's filesystem does not take them (4 entries of the "
                               "tree have them)"]
    nobody = _report.build({'state': 'done', 'progress': progress}, {'module': 'in', 'owners': False}, 'a')
    assert nobody['not_kept'][0].startswith('owners and groups: the module in does not run as root')


def hostvars(**senders):
    """An inventory of the receiver dc2-a and ``senders`` (name: their variables)."""
    out = {'dc2-a': dict(RECEIVER, wan_address='198.18.3.12')}
    for name, values in senders.items():
        out[name] = dict({'wan_address': '198.18.3.%d' % (20 + len(out)), 'migrate_source': '/data',
                          'wan_peer': 'dc2-a'}, **values)
    return out


def test_the_filter_finds_the_receiver_and_shares_the_modules_connections_among_its_senders():
    alone = migrate_target('dc1-a', hostvars(**{'dc1-a': {}}), source='/data')
    assert alone['problems'] == [] and alone['receiver'] == 'dc2-a' and alone['max_streams'] == 6
    assert alone['url'] == 'rsync://migrate@198.18.3.12:874/incoming/dc1-a/'
    three = hostvars(**{'dc1-a': {}, 'dc1-b': {'wan_peer': '', 'wan_peers': ['dc2-a']}, 'dc1-c': {}})
    out = migrate_target('dc1-a', three, source='/data')
    assert out['max_streams'] == 2 and out['senders_of_module'] == ['dc1-a', 'dc1-b', 'dc1-c']
    over = migrate_target('dc1-a', three, source='/data', streams='3')
    assert over['problems'] == ["migrate_streams: 3 is more than the module's max connections (2, rsync_daemon_streams "
                                "on the receiver, shared by every sender of the module); expected at most 2. 3 "
                                "senders of the inventory share its 6 connections: dc1-a, dc1-b, dc1-c."]
    # a host without migrate_source sends nothing and shares nothing
    idle = hostvars(**{'dc1-a': {}, 'dc1-b': {'migrate_source': ''}})
    assert migrate_target('dc1-a', idle, source='/data')['max_streams'] == 6


def test_two_senders_that_would_write_one_directory_are_refused():
    same = hostvars(**{'dc1-a': {'migrate_subdir': 'shared'}, 'dc1-b': {'migrate_subdir': 'shared'}})
    out = migrate_target('dc1-a', same, source='/data', subdir='shared')
    assert out['problems'] == ['migrate_subdir: dc1-a and dc1-b would both write /srv/incoming/shared on dc2-a; '
                               'expected a directory of its own for each sender (the default: its inventory name).']
    root = hostvars(**{'dc1-a': {'migrate_subdir': '/'}, 'dc1-b': {'migrate_subdir': '/'}})
    assert 'would both write /srv/incoming on dc2-a' in migrate_target('dc1-a', root, source='/data', subdir='/')[
        'problems'][0]
    assert migrate_target('dc1-a', hostvars(**{'dc1-a': {}, 'dc1-b': {}}), source='/data')['problems'] == []
    # the module's own directory holds every other sender's
    over = hostvars(**{'dc1-a': {'migrate_subdir': '/'}, 'dc1-b': {}})
    assert migrate_target('dc1-a', over, source='/data', subdir='/')['problems'] == [
        "migrate_subdir: dc1-a writes the module's own directory /srv/incoming on dc2-a, which holds the one of "
        "dc1-b; expected a directory of its own for each sender of the module (the default: its inventory name), / "
        "only for a module with one sender."]
    assert 'dc1-a writes the module\'s own directory' in migrate_target('dc1-b', over, source='/data')['problems'][0]
    assert migrate_target('dc1-a', hostvars(**{'dc1-a': {}}), source='/data', subdir='/')['problems'] == []


@pytest.mark.parametrize('values, kwargs, message', [
    ({'wan_peer': ''}, {}, 'migrate_target: dc1-a has no receiver'),
    ({'migrate_target': 'nowhere'}, {}, "migrate_target: 'nowhere' is not a host of this inventory"),
    ({}, {'source': 'data'}, "migrate_source: 'data' is not an absolute directory"),
    ({}, {'action': 'go'}, "migrate_action: 'go' is not an action"),
])
def test_the_filter_names_the_variable_of_each_refusal(values, kwargs, message):
    out = migrate_target('dc1-a', hostvars(**{'dc1-a': values}), **dict({'source': '/data'}, **kwargs))
    assert out['problems'] and out['problems'][0].startswith(message), out['problems']


def test_a_receiver_in_another_job_slice_is_refused_with_what_to_do():
    """An AWX job slice's inventory holds only the slice's hosts: a sender whose receiver is in another slice."""
    slice_of_one = {'dc1-a': dict(hostvars(**{'dc1-a': {}})['dc1-a'])}
    out = migrate_target('dc1-a', slice_of_one, source='/data')
    assert out['problems'] == ["migrate_target: 'dc2-a' is not a host of this inventory; expected the inventory name "
                               "of the receiver, whose rsync_daemon variables say where the tree goes. Under AWX job "
                               "slicing a slice holds only its own hosts: run the migration unsliced (job_slice_count "
                               "1; --limit keeps the whole inventory and is fine)."]


def test_a_pass_refuses_what_it_would_get_wrong_before_anything_moves():
    inventory = hostvars(**{'dc1-a': {}})
    assert migrate_target('dc1-a', inventory, source='/data', delete=True, max_delete=-1)['problems'] == []
    root = migrate_target('dc1-a', inventory, source='/data', subdir='/', delete=True)['problems']
    assert len(root) == 1 and root[0].startswith('migrate_delete: true with migrate_subdir=/ would delete, in the '
                                                 'module incoming\'s own directory /srv/incoming on dc2-a')
    assert migrate_target('dc1-a', inventory, source='/data', max_delete='many')['problems'] == [
        "migrate_max_delete: 'many' is not a number of files; expected %s." % _target.MAX_DELETE_HELP]
    assert migrate_target('dc1-a', inventory, source='/data', exclude=['- *.tmp'])['problems'][0].startswith(
        "migrate_exclude[0]: '- *.tmp' is not an exclude pattern")
    assert migrate_target('dc1-a', inventory, source='/data', preserve=['owners', 'colour'])['problems'][0].startswith(
        "migrate_preserve: ['owners', 'colour'] is not a list of what to keep")
    # a module that does not run as root writes every file as its user: refused while owners are asked for
    nobody = dict(RECEIVER, rsync_daemon_modules=[dict(RECEIVER['rsync_daemon_modules'][1], uid='nobody')])
    inventory = dict(hostvars(**{'dc1-a': {}}), **{'dc2-a': dict(nobody, wan_address='198.18.3.12')})
    refused = migrate_target('dc1-a', inventory, source='/data')['problems']
    assert len(refused) == 1 and refused[0].startswith('migrate_preserve: owners, but the module incoming of dc2-a '
                                                       'does not run as root')
    assert migrate_target('dc1-a', inventory, source='/data', preserve=['acls', 'xattrs'])['problems'] == []


def test_a_source_given_to_every_host_names_the_real_mistake():
    """-e migrate_source=/data makes the receiver a sender too: said so, rather than that its peer has no daemon."""
    inventory = hostvars(**{'dc1-a': {}})
    inventory['dc2-a'] = dict(inventory['dc2-a'], migrate_source='/data', wan_peer='dc1-a')
    for host in ('dc1-a', 'dc2-a'):
        problems = migrate_target(host, inventory, source='/data')['problems']
        assert len(problems) == 1 and problems[0].startswith('migrate_source: set on %s, which receives the tree of '
                                                             % host), problems
        assert 'an extra variable (-e migrate_source=...) sets it on every host' in problems[0]


def test_the_closing_line_says_what_differed_at_the_receiver_and_the_tree_bounds_what_was_there():
    """The playbook's last line says how many files differed at the receiver and were sent again; what was at the
    receiver is the runner's count of the tree, or at most the tree when the runner has none (the receiver holds
    files the source has not)."""
    progress = {'state': 'done', 'runs': 4, 'started': 100.0, 'ended': 118.0, 'bytes_total': 2 * 10 ** 9,
                'literal_bytes': 0, 'files_sent': 0, 'files': 3289, 'present_bytes': 3 * 10 ** 9, 'proof': 'checksum',
                'verified': True, 'mismatches': 2, 'differs_at_receiver': 2, 'changed_at_source': 0,
                'mismatches_after_resend': 0, 'differs_at_receiver_names': ['a/x', 'b/y'], 'stream_count': 2,
                'phases': {'copying': [101.0, 102.0], 'proving': [102.0, 110.0], 'resending': [110.0, 111.0],
                           'proving again': [111.0, 112.5]}, 'streams': [], 'limits': [], 'bwlimit_start_bps': 0}
    run = _report.build({'state': 'done', 'progress': progress}, {'receiver': 'b', 'owners': True}, 'a')
    assert run['present_bytes'] == 2 * 10 ** 9 and run['proof_seconds'] == 10.5 and run['total_seconds'] == 18.0
    assert run['line'] == ('pass 4 sent 0 B in 0 files (2 GB of the tree there before) in 1.0 s of copy, 10.5 s of '
                           'proof, 18.0 s in all, 2 stream(s), verified; 2 file(s) differed at the receiver and were '
                           'sent again (repaired)')
    assert run['rows']['names'] == [['Differed at the receiver, sent again (2)', ['a/x', 'b/y']]]
    assert ['rate limit', 'no limit'] in run['rows']['summary']
    counted = _report.build({'state': 'done', 'progress': dict(progress, tree_present_bytes=15 * 10 ** 8)}, {}, 'a')
    assert counted['present_bytes'] == 15 * 10 ** 8
    left = _report.build({'state': 'done', 'progress': dict(progress, verified=False, mismatches_after_resend=1)},
                         {}, 'a')
    assert left['line'].endswith('NOT verified; 2 file(s) differed at the receiver and were sent again')
