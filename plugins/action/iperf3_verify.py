# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``bdp.wan_tune.iperf3_verify``: ``credentials`` (the handle bdp.wan_tune.iperf3_server returned
with ``authenticate: true``) is taken here, on the controller (plugins/plugin_utils/iperf3_credentials.py; its file
is removed: one test), and reaches the module in a file (plugins/plugin_utils/secret_transfer.py), never as an
argument.  In check mode the credentials are left for the real run and nothing is transferred.
"""

from ansible.plugins.action import ActionBase

from ansible_collections.bdp.wan_tune.plugins.plugin_utils import iperf3_credentials
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import secret_transfer

MODULE = 'bdp.wan_tune.iperf3_verify'


class ActionModule(ActionBase):

    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if args.get('auth_src') is not None:
            result.update(failed=True, msg='auth_src is set by the action plugin itself; pass credentials.')
            return result
        handle = args.pop('credentials', None)
        if not handle or self._task.check_mode:
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result
        try:
            client_part = iperf3_credentials.take(handle)
        except iperf3_credentials.CredentialsError as exc:
            result.update(failed=True, measured=False, msg='%s. Nothing was measured.' % exc)
            return result
        result.update(secret_transfer.run_module(self, MODULE, args, task_vars, 'auth_src', client_part,
                                                 'iperf3.auth'))
        return result
