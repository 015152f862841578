# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commit-confirm timer of nic_settings: a ring change on the interface of the Ansible connection (or a NIC
below it) resets the link of many NICs, so it is made only under the timer jumbo_mtu uses (mtu/mtutimer.py).

The timer is armed before the change; unless ``state=confirmed`` arrives in time over a new connection, it puts the
rings back by itself.  Its script is Python, not shell: the rings are set with the SIOCETHTOOL ioctl and hosts need
not have the ethtool program.  The script carries the text of module_utils/nic/ethtool.py, the ioctl the module
itself uses, so there is one implementation of setting a ring; every value reaches it as JSON data.
"""

import inspect
import json
import sys
import time

from ansible_collections.bdp.wan_tune.plugins.module_utils.mtu import mtutimer
from ansible_collections.bdp.wan_tune.plugins.module_utils.nic import ethtool

REVERT = '''
# --- the revert: whoever creates the decision directory first (this script, or the module confirming or putting
# back) decides; mkdir is atomic.
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

DATA = json.loads(%r)


def main():
    try:
        os.mkdir(DATA['decided'])
    except OSError:
        return 0
    with open(os.path.join(DATA['decided'], 'by'), 'w') as handle:
        handle.write('timer\\n')
    failed = []
    for name, rx, tx in DATA['steps']:
        try:
            set_rings(name, rx, tx)
        except Exception:  # pylint: disable=broad-except
            failed.append(name)
    record = {'token': DATA['token'], 'by': 'timer', 'at': int(time.time()), 'restored': DATA['restored'],
              'rc': 1 if failed else 0, 'failed': ' '.join(failed)}
    with open(DATA['log'], 'a') as handle:
        handle.write(json.dumps(record) + '\\n')
    try:
        import syslog
        syslog.openlog('bdp-wan-tune')
        syslog.syslog('nic: ring change %%s not confirmed in time; put back %%s (rc %%d)'
                      %% (DATA['token'], DATA['restored'], record['rc']))
    except Exception:  # pylint: disable=broad-except
        pass
    return record['rc']


sys.exit(main())
'''


def restored_text(steps):
    """'ens4 rx 256 tx 256, ...': what the timer (or the module) puts back, for the log and the messages."""
    return ', '.join('%s rx %d tx %d' % (name, rings['rx'], rings['tx']) for name, _current, rings in steps)


def revert_script(token, steps, decided, log, deadline):
    """The Python script the timer runs: claim the decision, put back the rings of ``steps`` [(name, current,
    {'rx', 'tx'})], append the record to ``log``."""
    data = {'token': str(token), 'decided': str(decided), 'log': str(log), 'restored': restored_text(steps),
            'steps': [[str(name), int(rings['rx']), int(rings['tx'])] for name, _current, rings in steps]}
    header = [
        '# bdp.wan_tune.nic commit-confirm for change %s.' % json.dumps(str(token)),
        '# Unless the change is confirmed before %s, put back the rings: %s'
        % (time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(deadline)), json.dumps(data['restored'])),
        '# --- module_utils/nic/ethtool.py, the ioctl the module itself uses',
    ]
    return '\n'.join(header) + '\n' + inspect.getsource(ethtool) + REVERT % json.dumps(data)


class RingTimer(mtutimer.CommitTimer):
    """mtutimer.CommitTimer for the rings: its own file names, unit prefix, revert log and Python script."""

    NAME = 'nic'
    SUFFIX = '.py'
    UNIT_PREFIX = 'bdp-wan-tune-nic-'
    REVERT_LOG = 'nic-reverts.log'
    DESCRIPTION = 'bdp.wan_tune.nic commit-confirm: put the NIC rings back unless confirmed'

    def __init__(self, module, state_dir):
        mtutimer.CommitTimer.__init__(self, module, state_dir, self.set_rings)
        self.interpreter = sys.executable or '/usr/bin/python3'

    @staticmethod
    def set_rings(name, rings):
        try:
            ethtool.set_rings(name, rings['rx'], rings['tx'])
        except OSError as exc:
            raise RuntimeError('the rings of %s: %s' % (name, exc.strerror or exc))

    def script(self, token, revert_steps, decided, log, deadline):
        return revert_script(token, revert_steps, decided, log, deadline)
