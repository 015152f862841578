# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support matrix (module_utils/common/platforms.py, its one place): a host's row, and why a role refuses it.

Documentation lives in the platform_*.yml files beside this file.
"""

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import platforms


def platform_row(facts):
    """The row of the support matrix ('EL 9') of a host's ansible_facts; '' outside the matrix."""
    return platforms.row(facts) or ''


def platform_problem(facts, role, host, inputs=None):
    """Why ``role`` refuses ``host`` (its ansible_facts, the role's inputs); '' when it serves it."""
    return platforms.problem(role, host, facts, inputs) or ''


class FilterModule(object):
    def filters(self):
        return {'platform_row': platform_row, 'platform_problem': platform_problem}
