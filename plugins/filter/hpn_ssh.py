# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the hpn_ssh role: the package source, the input check and the configuration text.

The logic is in plugins/module_utils/transfer/hpnssh.py; documentation lives in the .yml files beside this file.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import hpnssh


def hpn_ssh_plan(facts, source='auto', files=None, repository=None, server=True, client=True, packages=None):
    """The install plan for the host these facts describe; {'error': message} when there is none."""
    try:
        server, client = hpnssh.to_bool(server), hpnssh.to_bool(client)
    except ValueError as exc:
        return {'error': 'hpn_ssh_server and hpn_ssh_client must be booleans, got %s.' % exc}
    try:
        result = hpnssh.plan(dict(facts or {}), source, list(files or []), dict(repository or {}), server, client,
                             list(packages or []))
    except hpnssh.PlanError as exc:
        return {'error': str(exc)}
    result['error'] = ''
    return result


def hpn_ssh_problems(values):
    """Every problem with the role's inputs, one message each."""
    if not isinstance(values, dict):
        raise AnsibleFilterError('hpn_ssh_problems: expected a mapping of variables, got %r' % (values,))
    problems = hpnssh.check_inputs(values)
    if values.get('hpn_ssh_state', 'present') == 'present':
        problems.extend(hpnssh.controller_file_problems(values.get('hpn_ssh_package_files', [])))
    return problems


def hpn_ssh_installed(results, requested, before, after):
    """{'packages', 'dependencies'}: what the role installed and may remove again (module_utils/transfer/hpnssh.py)."""
    if not isinstance(results, (list, tuple)):
        results = [results]
    return hpnssh.packages_to_record(list(requested or []), hpnssh.reported_installs(list(results)),
                                     list(before or []), list(after or []))


def hpn_ssh_removal_problems(simulated, allowed):
    """The packages a simulated removal would take besides the role's own."""
    return hpnssh.removal_problems(str(simulated or ''), list(allowed or []))


def hpn_ssh_config(settings, known, side='server', header=''):
    """{'text', 'dropped', 'guarded'}: the configuration file of the server or the client."""
    try:
        if side == 'server':
            lines, dropped = hpnssh.server_lines(dict(settings), list(known or []))
            return {'text': hpnssh.render(lines, header), 'dropped': dropped, 'guarded': []}
        if side == 'client':
            lines, guarded, dropped = hpnssh.client_lines(dict(settings), list(known or []))
            return {'text': hpnssh.render(lines, header, host_block=True), 'dropped': dropped, 'guarded': guarded}
    except (ValueError, KeyError) as exc:
        raise AnsibleFilterError('hpn_ssh_config: %s' % exc)
    raise AnsibleFilterError('hpn_ssh_config: side must be server or client, got %r' % (side,))


class FilterModule(object):
    def filters(self):
        return {'hpn_ssh_plan': hpn_ssh_plan, 'hpn_ssh_problems': hpn_ssh_problems, 'hpn_ssh_config': hpn_ssh_config,
                'hpn_ssh_installed': hpn_ssh_installed, 'hpn_ssh_removal_problems': hpn_ssh_removal_problems}
