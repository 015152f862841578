# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's template rendered in the test's own process as ansible.builtin.template renders it: Ansible's Templar
with the action's defaults (trim_blocks on, lstrip_blocks off, newline \\n, its filters and tests), without a playbook
run per page. One test per report still renders its pages through the role's own task (ansible-playbook)."""

from __future__ import annotations

import os

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from collection_path import REPO_ROOT


def render(role, name, variables):
    """The text of roles/<role>/templates/<name> rendered with ``variables``."""
    path = os.path.join(REPO_ROOT, 'roles', role, 'templates', name)
    with open(path, encoding='utf-8') as handle:
        source = trust_as_template(handle.read())
    templar = Templar(loader=DataLoader(), variables=dict(variables))
    return templar.template(source, escape_backslashes=False,
                            overrides=dict(trim_blocks=True, lstrip_blocks=False, newline_sequence='\n'))


def verify_markdown(run, runs):
    """report.md of the verify role for ``run`` among the kept ``runs``, from the module's page."""
    from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report
    return render('verify', 'report.md.j2', {'__page': verify_report.page(run, runs)})


def verify_html(runs, limit=20):
    """report.html of the verify role for the kept ``runs`` (the newest ``limit``), from the module's page."""
    from ansible_collections.bdp.wan_tune.plugins.module_utils.verify import verify_report
    latest = verify_report.sort_runs(runs)[-1]
    return render('verify', 'report.html.j2', {'__page': verify_report.page(latest, runs, limit)})
