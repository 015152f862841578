#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: verify_report
short_description: Write the report of a run of path tests (JSON, Markdown and one HTML page)
version_added: 0.2.0
description:
  - Takes the pairs that the M(bdp.wan_tune.iperf3_verify) tests of one run measured, as the
    bdp.wan_tune.verify role collects them, and writes the report into O(report_dir) on the host it runs on
    (the controller, with C(delegate_to=localhost)).
  - Each run is kept as C(run-<UTC time>-<label>.json), written atomically (a temporary file in the same directory,
    then a rename). Run files that are not runs of this report are left alone and not shown.
  - Returns RV(page), the text of the two pages that the bdp.wan_tune.verify role renders from its templates into
    RV(files.markdown) and RV(files.html) - C(report.md) describes the latest run; C(report.html) is one
    self-contained page (inline style, inline script drawing into inline SVG, no external resource) with a plot per
    run, newest first - the goodput of each pair against its ceiling and, for runs not labelled V(stock), the
    latest earlier V(stock) measurement of the same pair as its baseline.
  - With O(surveys) (the M(bdp.wan_tune.nic_facts) results of each host, before and after the tests), the run keeps
    them as C(hosts) and the Markdown and HTML show a Hosts section - per host the CPU governor, irqbalance, the
    softnet drops and time squeezes, per interface the driver, speed, rings (current of maximum), transmit queue
    length, root qdisc, NUMA node and ring/missed drops. The diagnosis of a pair that failed (or fell short of its
    C(min_fraction) unjudged) then names the setting to change on its sender or receiver, from the counters that
    rose and the settings.
  - With O(baseline) (a stock run's summary from an earlier job, such as the C(verify_baseline) artifact that AWX
    passes to the next job of a workflow), that run competes with the V(stock) runs of O(report_dir) - for each pair
    the latest earlier measured V(stock) run is its baseline, whichever of the two it is in. So a report directory
    that starts empty (a fresh execution environment) still shows the stock baseline.
  - Returns RV(artifacts) for C(ansible.builtin.set_stats) - the run's compact summary as C(verify), and for a
    V(stock) run outside check mode the same as C(verify_baseline).
  - Never fails because a pair failed; it returns RV(failed_pairs) and RV(failure_msg), so that the caller decides.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  results:
    description:
      - The tested pairs. Each item is a mapping with C(pair) (the role's plan - C(source), C(target), C(address),
        C(rate), C(rtt_ms), C(rtt_source), C(streams), C(duration), C(omit), C(min_fraction), C(expect)),
        C(result) (the registered result of M(bdp.wan_tune.iperf3_verify), empty when it did not run) and C(error)
        (the message of the task that stopped the test, empty otherwise).
    type: list
    elements: dict
    required: true
  label:
    description:
      - Label of the run, 1 to 40 letters, digits, C(.), C(_) or C(-). V(stock) marks a baseline recorded before
        tuning; later runs show it next to their own measurement.
    type: str
    default: run
  report_dir:
    description: Absolute path of the report directory; created when missing.
    type: path
    required: true
  html_runs:
    description: How many runs, newest first, RV(page) has for the HTML page (all are kept as JSON).
    type: int
    default: 20
  surveys:
    description:
      - The host surveys of the run, as the bdp.wan_tune.verify role takes them - one M(bdp.wan_tune.nic_facts)
        call per host before the first test and one after the last. A result that failed or did not reach the host
        is shown with its message; a skipped one counts as not taken.
      - Not given, the run keeps C(hosts) null and the report says that no survey was taken.
    type: dict
    suboptions:
      before:
        description: The registered M(bdp.wan_tune.nic_facts) result of each host, by inventory name, before the tests.
        type: dict
        default: {}
      after:
        description: The same, after the tests.
        type: dict
        default: {}
  baseline:
    description:
      - A stock run from elsewhere, the summary of RV(artifacts) C(verify_baseline) of an earlier run labelled
        V(stock) (or a C(run-*.json) file of another report directory) - a mapping with C(id), C(time), C(label)
        V(stock) and C(pairs), each pair with C(key) and C(receiver_bps).
      - It competes with the V(stock) runs of O(report_dir) by time (the latest earlier one is the baseline of each
        pair); the same run found in both is the directory's.
      - A value that is not such a run (no C(pairs) list, a pair without C(key), another label, a check-mode run)
        fails the module, naming C(verify_baseline). Not given, or empty, the baseline comes from O(report_dir)
        alone.
    type: dict
extends_documentation_fragment:
  - bdp.wan_tune.attributes.controller
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    details: Nothing is written; the result names the files that would be written and has the run.
seealso:
  - module: bdp.wan_tune.iperf3_verify
  - module: bdp.wan_tune.iperf3_server
"""

EXAMPLES = r"""
- name: Write the report of the tests collected in verify_collected
  bdp.wan_tune.verify_report:
    results: "{{ verify_collected }}"
    label: tuned
    report_dir: "{{ lookup('env', 'PWD') }}/results/verify"
  delegate_to: localhost
  run_once: true
  register: report

- name: Fail naming the failed pairs
  ansible.builtin.fail:
    msg: "{{ report.failure_msg }}"
  when: report.failed_pairs | length > 0
  run_once: true

- name: Survey each host's NICs before the tests (and again after them, registered as survey_after)
  bdp.wan_tune.nic_facts:
    peers: "{{ wan_peers }}"
  register: survey_before

- name: The same report with the host surveys (a Hosts section; hints in the diagnosis of a pair that fell short)
  bdp.wan_tune.verify_report:
    results: "{{ verify_collected }}"
    report_dir: "{{ lookup('env', 'PWD') }}/results/verify"
    surveys:
      before: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'survey_before'))) }}"
      after: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'survey_after'))) }}"
  delegate_to: localhost
  run_once: true

- name: A fresh report directory with the stock baseline of an earlier job (-e @artifacts.json, or from AWX)
  bdp.wan_tune.verify_report:
    results: "{{ verify_collected }}"
    label: tuned
    report_dir: /runner/results/verify
    baseline: "{{ verify_baseline | default(omit, true) }}"
  delegate_to: localhost
  run_once: true
  register: report

- name: Pass the run on to the next job of the workflow
  ansible.builtin.set_stats:
    data: "{{ report.artifacts }}"
    per_host: false
    aggregate: false
  run_once: true
"""

RETURN = r"""
run:
  description:
    - The run as written to RV(files.json) - C(id), C(time), C(label), C(check_mode), C(pairs), C(failed_pairs),
      C(passed) and C(hosts).
    - C(hosts) is null without O(surveys); else, by inventory name, C(before) and C(after) (the survey - C(interfaces),
      C(nic) and C(host) of M(bdp.wan_tune.nic_facts) - or null when it was not taken or failed) and C(errors)
      (the messages of surveys that failed).
  returned: always
  type: dict
results:
  description:
    - One mapping per pair - C(key) (V(source -> target)), C(source), C(target), C(address), C(status) (V(PASS),
      V(FAIL), V(ERROR), V(CHECK MODE) or V(NOT JUDGED)), C(passed), C(receiver_bps), C(sender_bps),
      C(retransmits), C(ceiling_bps), C(limit), C(expectation_bps), C(fraction), C(diagnosis) (with O(surveys), for
      a pair that fell short, also the settings to change on its hosts), C(msg), C(rate),
      C(rate_bps), C(rtt_ms), C(rtt_source), C(streams), C(mean_rtt_ms), C(congestion), C(receive_buffer_bytes),
      C(send_buffer_bytes), C(baseline_bps) and C(baseline_run) (the stock baseline's goodput and run id, or null).
  returned: always
  type: list
  elements: dict
  sample: [{"key": "a -> b", "status": "PASS", "receiver_bps": 990123456, "ceiling_bps": 1000000000,
            "baseline_bps": 292000000, "baseline_run": "20261122T194500Z"}]
failed_pairs:
  description: The C(results) items with status V(FAIL) or V(ERROR).
  returned: always
  type: list
  elements: dict
passed:
  description: True when every pair passed; false when one failed; null in check mode or without pairs.
  returned: always
  type: bool
lines:
  description: One line per pair - goodput, ceiling, limit, expectation and verdict.
  returned: always
  type: list
  elements: str
  sample: ["a -> b (198.18.0.2): 990.1 Mbit/s of ceiling 1000.0 Mbit/s (link rate), expectation 1000.0 Mbit/s: PASS"]
artifacts:
  description:
    - The job's artifacts of the run, for C(ansible.builtin.set_stats) with C(per_host=false) (what AWX keeps of a
      job and passes to the next job of a workflow as extra variables).
    - C(verify) - the run's summary, C(label), C(id), C(time), C(passed), C(check_mode) and C(pairs), per pair
      C(key), C(source), C(target), C(address), C(status), C(receiver_bps), C(ceiling_bps), C(expectation_bps),
      C(limit), C(diagnosis), C(retransmits) (where the test counted them), C(rate_bps), C(rtt_ms), C(streams) and
      C(duration). Not the iperf3 output, not the host surveys.
    - C(verify_baseline) - the same summary, only for a run labelled V(stock) outside check mode; O(baseline) reads it
      back.
  returned: always
  type: dict
  sample: {"verify": {"label": "stock", "id": "20261122T194500Z", "time": "2026-11-22T19:45:00Z", "passed": false,
                      "check_mode": false, "pairs": [{"key": "a -> b", "status": "FAIL", "receiver_bps": 292000000}]},
           "verify_baseline": {"label": "stock", "id": "20261122T194500Z"}}
failure_msg:
  description: Every failed pair with its diagnosis, on one line; empty when none failed.
  returned: always
  type: str
page:
  description:
    - What the pages show, as text - C(latest) (the run for C(report.md)), C(runs) (the newest O(html_runs) runs for
      C(report.html), newest first) and C(kept) (how many runs the directory keeps), with C(hosts_note), C(no_survey),
      C(host_columns) and C(nic_columns). Each run has C(file), C(id), C(label), C(time), C(verdict),
      C(verdict_line), C(failed_pairs), C(pairs) (per pair its cells, C(problem), C(diagnosis), C(path) and the
      figures the plot draws) and C(hosts) (null for a run kept before surveys, C(rows) null for a run without one).
    - The bdp.wan_tune.verify role renders its templates C(report.md.j2) and C(report.html.j2) from it.
  returned: always
  type: dict
files:
  description:
    - The paths of the report - C(json) (written by the module outside check mode), C(markdown) and C(html) (where
      the role renders RV(page)).
  returned: always
  type: dict
  contains:
    json:
      description: The run's own file, C(run-<UTC time>-<label>.json).
      type: str
      sample: /srv/results/verify/run-20261122T201500Z-tuned.json
    markdown:
      description: C(report.md), the latest run.
      type: str
      sample: /srv/results/verify/report.md
    html:
      description: C(report.html), the runs with their plots.
      type: str
      sample: /srv/results/verify/report.html
"""

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report as report


def load_runs(directory):
    """Every run kept in ``directory``, each with its file name under 'file'."""
    runs = []
    if not os.path.isdir(directory):
        return runs
    for name in sorted(os.listdir(directory)):
        if not report.RUN_FILE_RE.match(name):
            continue
        run = report.parse_run(files.read_text(os.path.join(directory, name)) or '')
        if run is not None:
            run['file'] = name
            runs.append(run)
    return runs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type='list', elements='dict', required=True),
            label=dict(type='str', default='run'),
            report_dir=dict(type='path', required=True),
            html_runs=dict(type='int', default=20),
            surveys=dict(type='dict', options=dict(before=dict(type='dict', default={}),
                                                   after=dict(type='dict', default={}))),
            baseline=dict(type='dict'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    directory = params['report_dir']
    if not os.path.isabs(directory):
        module.fail_json(msg='report_dir (verify_report_dir): %r is not an absolute path; expected an absolute '
                             'directory on the controller, such as /srv/results/verify.' % directory)
    if params['html_runs'] < 1:
        module.fail_json(msg='html_runs: %r is out of range; expected a whole number, 1 or more.' % params['html_runs'])
    when = datetime.datetime.now(datetime.timezone.utc)
    try:
        run = report.build_run(params['results'], params['label'], when, module.check_mode, params['surveys'])
        given = report.given_baseline(params['baseline'])
    except report.ReportError as exc:
        module.fail_json(msg=str(exc))
    runs = load_runs(directory)
    run['file'] = report.run_file_name(run, [item['file'] for item in runs])
    paths = {'json': os.path.join(directory, run['file']), 'markdown': os.path.join(directory, 'report.md'),
             'html': os.path.join(directory, 'report.html')}
    runs.append(run)
    report.record_baselines(run, runs, given)
    results = [dict(pair) for pair in run['pairs']]
    failed = [pair for pair in results if pair['status'] in report.FAILED]
    result = dict(changed=False, run=run, results=results, failed_pairs=failed, passed=run['passed'],
                  lines=[report.one_line(pair) for pair in results], files=paths, artifacts=report.artifacts(run),
                  failure_msg=report.failure_message(run) if failed else '',
                  page=report.page(run, runs, params['html_runs']))
    if module.check_mode:
        result['msg'] = 'Check mode: nothing measured and no report written (it would go to %s).' % directory
        module.exit_json(**result)
    stored = dict((key, value) for key, value in run.items() if key != 'file')
    try:
        files.write_atomic(module, paths['json'], json.dumps(stored, indent=2, sort_keys=True) + '\n')
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot write the report in %s (verify_report_dir): %s' % (directory, exc), **result)
    result['changed'] = True
    result['msg'] = 'Run of %d pair%s kept in %s (%s%s).' % (
        len(results), '' if len(results) == 1 else 's', directory, run['file'],
        '; stock baseline: run %s, given as verify_baseline' % given['id']
        if given and any(pair['baseline_run'] == given['id'] for pair in results) else '')
    module.exit_json(**result)


if __name__ == '__main__':
    main()
