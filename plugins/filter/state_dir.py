# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's state directory on the host: wan_tune_state_dir, or the role's own deprecated <role>_state_dir.

Documentation lives in state_dir.yml beside this file.
"""

from ansible.utils.display import Display


def state_dir(shared, own=None, name='<role>_state_dir'):
    """``own`` where the role's deprecated option ``name`` is set (it wins for its role), with a deprecation warning
    that names wan_tune_state_dir (Ansible shows it once per run); else ``shared``, wan_tune_state_dir."""
    if own is None:
        return shared
    Display().deprecated('%s is deprecated: set wan_tune_state_dir, the one state directory of every role of '
                         'bdp.wan_tune (while %s is set, it is the state directory of its role)' % (name, name),
                         version='0.5.0', collection_name='bdp.wan_tune')     # deprecated in 0.4.0
    return own


class FilterModule(object):
    def filters(self):
        return {'state_dir': state_dir}
