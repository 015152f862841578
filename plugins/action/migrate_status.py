# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``bdp.wan_tune.migrate_status``: show one progress line (unit, bytes, %, Mbit/s, ETA) on the
controller while the migration runs; with ``wait``, read its state every ``interval`` seconds until its unit has
ended, a line each time, instead of a screen of retries.  The migration runs in a unit of its own on the sender: Ctrl-C here ends only this
waiting.
"""

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import report

display = Display()


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        wait, interval = args.get('wait', False), max(1, int(args.get('interval', 30)))
        host = (task_vars or {}).get('inventory_hostname', '')
        while True:
            status = self._execute_module(module_name='bdp.wan_tune.migrate_status', module_args=args,
                                          task_vars=task_vars)
            line = ''
            if status.get('active') and not status.get('failed'):
                line = report.progress_line(status.get('progress'), time.time())
                display.display('%s: %s: %s' % (host, args.get('unit'), line))
            if status.get('failed') or not wait or not status.get('active') or self._task.check_mode:
                break
            time.sleep(interval)
        result.update(status, line=line)
        return result
