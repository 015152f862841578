# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    """The attributes that the collection's modules share.

    Each fragment sets only what a module supports; the descriptions of the attributes come from
    ansible.builtin.action_common_attributes, which a module lists after this fragment:

        extends_documentation_fragment:
          - bdp.wan_tune.attributes            # or bdp.wan_tune.attributes.no_diff, .controller
          - ansible.builtin.action_common_attributes

    A module that is documentation only, whose action plugin does the work on the controller:

        extends_documentation_fragment:
          - bdp.wan_tune.attributes.action_controller
          - ansible.builtin.action_common_attributes
          - ansible.builtin.action_common_attributes.conn
          - ansible.builtin.action_common_attributes.flow

    A module's own attributes: entry (typically only details:) is merged into the fragment's, key by key,
    and wins over it.
    """

    # A module that changes a Linux host, with check mode and diff mode.
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: linux
"""

    # A module that runs on a Linux host, with check mode but no diff.
    NO_DIFF = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: linux
"""

    # A module that runs on the controller (delegate_to=localhost), with check mode but no diff.
    CONTROLLER = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

    # A module whose action plugin does all the work on the controller: it never connects to the host.
    ACTION_CONTROLLER = r"""
attributes:
  action:
    support: full
  async:
    support: none
  become:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
  connection:
    support: none
  delegation:
    support: none
    details: It runs on the controller and never connects to the host.
  diff_mode:
    support: none
  platform:
    platforms: all
"""
