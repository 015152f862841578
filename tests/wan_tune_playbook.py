# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/wan_tune.yml as the unit tests read it: its plays by name, its task files and the play variables its
conditions name (``when: __wan_tune_nic | bool``, where the play's vars hold what ``__wan_tune_nic`` means)."""

from __future__ import annotations

import os
import re

from ansible.parsing.dataloader import DataLoader

from collection_path import REPO_ROOT

TUNING = 'Tune TCP for long fat networks'
VALIDATION = 'Validate the inputs of every host before any host changes'
VARIABLE = re.compile(r'\b__wan_tune_\w+')


def load(*path):
    """A YAML file of the repository as Ansible loads it (strings trusted as templates, as a playbook's are)."""
    return DataLoader().load_from_file(os.path.join(REPO_ROOT, *path), trusted_as_template=True)


def play(name=TUNING):
    return [play_ for play_ in load('playbooks', 'wan_tune.yml') if play_['name'] == name][0]


def conditions(task):
    """A task's ``when`` as a list of conditions."""
    when = task.get('when', [])
    return [str(when)] if isinstance(when, str) else [str(condition) for condition in when]


def expanded(condition, variables):
    """A condition with each play variable it names replaced, recursively, by ``(its text)``, whitespace folded:
    ``__wan_tune_nic | bool`` becomes ``(nic | default(false) | bool or nic_state | default('') == 'absent') | bool``."""
    def text(match):
        value = variables.get(match.group(0))
        if not isinstance(value, str):
            return match.group(0)
        return '(%s)' % expanded(value.strip().removeprefix('{{').removesuffix('}}').strip(), variables)
    return ' '.join(VARIABLE.sub(text, condition).split())
