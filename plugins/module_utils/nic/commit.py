# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rings for the commit-confirm timer (module_utils/common/commit.py): a ring change on the interface of the
Ansible connection (or a NIC below it) resets the link of many NICs, so nic_settings makes it only under the timer.

The rings are set with the SIOCETHTOOL ioctl, by the module and by the timer's script alike: the script carries the
text of module_utils/nic/ethtool.py, so hosts need not have the ethtool program and there is one implementation of
setting a ring.
"""

import inspect

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import commit
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool

SET_VALUE = '''

def set_value(name, rings):
    set_rings(name, rings['rx'], rings['tx'])
'''


class Rings(commit.Setting):
    """The files of nic (the role): nic-TOKEN.py, nic-reverts.log; the units bdp-wan-tune-nic-TOKEN."""

    NAME, UNIT_PREFIX, WHAT = 'nic', 'bdp-wan-tune-nic-', 'NIC rings'

    def source(self):
        return '# --- module_utils/nic/ethtool.py, the ioctl the module itself uses\n' + inspect.getsource(ethtool) \
            + SET_VALUE

    def set(self, name, value):
        try:
            ethtool.set_rings(name, value['rx'], value['tx'])
        except OSError as exc:
            raise RuntimeError('the rings of %s: %s' % (name, exc.strerror or exc))

    @staticmethod
    def describe(steps):
        """'ens4 rx 256 tx 256, ...': the rings put back, for the log and the messages."""
        return ', '.join('%s rx %d tx %d' % (name, rings['rx'], rings['tx']) for name, _current, rings in steps)
