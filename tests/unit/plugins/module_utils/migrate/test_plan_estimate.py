# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan's time (issue 36): at the lower of the path's rate (migrate_rate) and the migration's limit
(migrate_bwlimit) as the runner applies it, each stream held to its share, and the plan says which of the two bounds
it. The certificate check of the preflight takes twice this time, so a throttled migration gets its margin."""

from __future__ import annotations

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import plan as _plan
from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner
from wan_tune_playbook import load

MB = 10 ** 6
M = 10 ** 6


def tree(total=1000 * MB, largest=10 * MB):
    return {'files': 3289, 'bytes': total, 'inodes': 3289, 'linked': 0, 'dirs': 40, 'others': 0,
            'largest': {'path': 'big', 'bytes': largest}, 'attributes': {}}


def test_a_throttled_migration_is_planned_at_its_limit_not_at_the_paths_rate():
    # the new user's run: "about 16 s at 500m" for a copy that took 203 s at 40m
    planned = _plan.plan(tree(), 2, rate_bps=500 * M, bwlimit_bps=40 * M)
    applied = 2 * _runner.stream_limit_kib(40 * M, 2) * 8192          # what the rsyncs' --bwlimit gives together
    assert planned['rate_by'] == 'migrate_bwlimit' and planned['rate_bps'] == applied
    assert planned['seconds'] == pytest.approx(1000 * MB * 8.0 / applied) and planned['seconds'] > 200
    assert planned['estimate'] == 'about 200 s at 40 Mbit/s (migrate_bwlimit, below migrate_rate\'s 500 Mbit/s)'


def test_the_paths_rate_bounds_it_when_it_is_the_lower():
    planned = _plan.plan(tree(), 2, rate_bps=500 * M, bwlimit_bps=800 * M)
    assert (planned['rate_by'], planned['rate_bps']) == ('migrate_rate', 500 * M)
    assert planned['seconds'] == pytest.approx(16.0)
    assert planned['estimate'] == 'about 16 s at 500 Mbit/s (migrate_rate, below migrate_bwlimit\'s 800 Mbit/s)'
    alone = _plan.plan(tree(), 2, rate_bps=500 * M)
    assert alone['estimate'] == 'about 16 s at 500 Mbit/s (migrate_rate)' and alone['rate_by'] == 'migrate_rate'


def test_a_limit_without_the_paths_rate_gives_the_least_time():
    planned = _plan.plan(tree(), 1, bwlimit_bps=40 * M)
    assert planned['rate_by'] == 'migrate_bwlimit' and planned['seconds'] > 200
    assert planned['estimate'] == ('at least 200 s at 40 Mbit/s (migrate_bwlimit), the path\'s rate (migrate_rate) '
                                   'not known')
    unknown = _plan.plan(tree(), 1)
    assert (unknown['seconds'], unknown['rate_bps'], unknown['rate_by'], unknown['estimate']) == (None, None, None, '')


def test_the_largest_file_takes_its_streams_share_of_the_limit():
    # 1 GB of 1.2 GB in one file on one of 2 streams, each held to 20 Mbit/s: about 400 s, not 240 s
    planned = _plan.plan(tree(total=1200 * MB, largest=1000 * MB), 2, rate_bps=500 * M, bwlimit_bps=40 * M)
    per_stream = _runner.stream_limit_kib(40 * M, 2) * 8192
    assert planned['seconds'] == pytest.approx(1000 * MB * 8.0 / per_stream) and planned['rate_by'] == 'migrate_bwlimit'
    assert planned['estimate'] == ('about 400 s for the largest file, 1 GB, on one stream at its share of '
                                   'migrate_bwlimit (20 Mbit/s of 40 Mbit/s)')
    # the same with the path slower than the limit: the limit's share still bounds the largest file
    slower = _plan.plan(tree(total=1200 * MB, largest=1000 * MB), 2, rate_bps=30 * M, bwlimit_bps=40 * M)
    assert slower['rate_by'] == 'migrate_bwlimit' and slower['seconds'] == pytest.approx(planned['seconds'])
    # without a limit no stream is held to a share: the path's rate for the whole tree
    free = _plan.plan(tree(total=1200 * MB, largest=1000 * MB), 2, rate_bps=500 * M)
    assert free['seconds'] == pytest.approx(19.2) and free['rate_by'] == 'migrate_rate'


def test_the_runner_gives_each_rsync_its_share_of_the_limit():
    config = {'bwlimit_bps': 40 * M, 'streams': 2, 'source': '/data', 'url': 'rsync://b/m/', 'password_file': '/p'}
    assert '--bwlimit=%dk' % _runner.stream_limit_kib(40 * M, 2) in _runner.rsync_argv(config, None)
    assert _runner.stream_limit_kib(40 * M, 2) == 2441 and _runner.stream_limit_kib(8, 4) == 1


def certificate_margin(seconds, rate_bps):
    """__migrate_estimate of the preflight's certificate check, for a plan of ``seconds`` and migrate_rate's bit/s."""
    task = [task for task in load('roles', 'migrate', 'tasks', 'preflight.yml')
            if '__migrate_estimate' in task.get('vars', {})][0]
    variables = dict(task['vars'], __migrate_plan={'seconds': seconds}, __migrate_rate_bps=str(rate_bps))
    return int(Templar(loader=DataLoader(), variables=variables).template(task['vars']['__migrate_estimate']))


def test_the_certificate_must_outlast_twice_the_plans_time_and_two_days_when_the_rate_is_not_known():
    throttled = _plan.plan(tree(), 2, rate_bps=500 * M, bwlimit_bps=40 * M)
    assert certificate_margin(throttled['seconds'], 500 * M) == int(throttled['seconds'] * 2) == 400
    # a limit alone gives the least time: a slow path may take days, so two days at least
    assert certificate_margin(_plan.plan(tree(), 2, bwlimit_bps=40 * M)['seconds'], 0) == 2 * 86400
    assert certificate_margin(_plan.plan(tree(10 ** 15), 2, bwlimit_bps=40 * M)['seconds'], 0) > 2 * 86400
    assert certificate_margin(None, 0) == 2 * 86400


def test_the_refusal_of_a_certificate_that_ends_before_the_margin_says_the_margin():
    task = [task for task in load('roles', 'migrate', 'tasks', 'preflight.yml')
            if '__migrate_estimate' in task.get('vars', {})][0]
    throttled = _plan.plan(tree(), 2, rate_bps=500 * M, bwlimit_bps=40 * M)
    variables = dict(task['vars'], inventory_hostname='a', migrate_transport='tls', migrate_margin=5,
                     ansible_play_hosts=['a'], hostvars={'a': {'inventory_hostname': 'a', '__migrate_missing': 0}},
                     __migrate_plan=throttled, __migrate_rate_bps=str(500 * M), __migrate_room={},
                     __migrate_room_values={'avail': str(10 ** 12)}, __migrate_cert={'content': 'pem'},
                     __migrate_cert_left=300,
                     __migrate_target={'receiver': 'b', 'path': '/srv/in', 'migration': 'm', 'senders_of_module': ['a'],
                                       'client': {'cert': '/etc/c.crt'}})
    message = ' '.join(Templar(loader=DataLoader(), variables=variables).template(
        task['ansible.builtin.assert']['fail_msg']).split())
    assert message == ('the client certificate /etc/c.crt ends in 300 s, before the migration would end with a margin '
                       '(twice the time of the plan, at the lower of migrate_rate and migrate_bwlimit, at least two '
                       'days when migrate_rate is not known: 400 s): run the rsync_daemon role for b to renew it. '
                       'Nothing was moved.')
