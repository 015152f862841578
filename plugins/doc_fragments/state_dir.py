# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    """The option state_dir of a module that records what was there before its first change, so that its
    state=absent puts it back (module_utils/common/files.py, STATE_DIR).  A module lists it as

        extends_documentation_fragment:
          - bdp.wan_tune.state_dir

    and says in its own description what it records, if more than the files it writes.
    """

    DOCUMENTATION = r"""
options:
  state_dir:
    description: Where the module records what was there before its first change (and keeps copies of the files it
      replaces), for O(state=absent).
    type: path
    default: /var/lib/bdp_wan_tune
notes:
  - Before its first change the module records in O(state_dir) what was there. O(state=absent) removes what the
    module wrote and puts back what was there; a second O(state=absent) changes nothing.
"""
