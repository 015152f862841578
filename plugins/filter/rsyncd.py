# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The problems with the rsync daemon's inputs, on the controller, before any host changes.

Documentation lives in rsync_daemon_problems.yml beside this file.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import tls_ca


def rsync_daemon_problems(settings, inventory=None, sources=None):
    """{modules, users, address, ...} -> a list of messages (empty when every input is usable); no password shown.
    ``inventory``: the inventory's host names (tls_senders must be among them); ``sources``: the inventory sources
    (the migration's name is derived from them when none is given)."""
    if not isinstance(settings, dict):
        raise AnsibleFilterError('rsync_daemon_problems: expected a mapping of the daemon settings')
    dummy, problems = rsyncd.check(settings)
    return problems + tls_ca.problems(settings, inventory=inventory, sources=sources)


class FilterModule(object):
    def filters(self):
        return {'rsync_daemon_problems': rsync_daemon_problems}
