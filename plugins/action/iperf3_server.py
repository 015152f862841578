# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``bdp.wan_tune.iperf3_server``: with ``authenticate: true`` the credentials of one test are made
here, on the controller (plugins/plugin_utils/iperf3_credentials.py).  The server's key and user list reach the
module in a file (plugins/plugin_utils/secret_transfer.py), never as an argument; the result carries only the
handle of the client's part.  With ``state: absent`` and ``credentials``, an unused client part is removed.
"""

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.bdp.wan_tune.plugins.plugin_utils import iperf3_credentials
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import secret_transfer

MODULE = 'bdp.wan_tune.iperf3_server'


class ActionModule(ActionBase):

    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if args.get('auth_src') is not None:
            result.update(failed=True, msg='auth_src is set by the action plugin itself; set authenticate: true.')
            return result
        try:
            authenticate = boolean(args.get('authenticate', False), strict=True)
        except TypeError as exc:
            result.update(failed=True, msg='authenticate: %s' % exc)
            return result
        if args.get('state', 'present') == 'absent':
            handle = args.pop('credentials', None)
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            if handle and not self._task.check_mode:
                iperf3_credentials.discard(handle)
            return result
        if not authenticate or self._task.check_mode:
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result
        try:
            handle, server_part = iperf3_credentials.make()
        except iperf3_credentials.CredentialsError as exc:
            result.update(failed=True, msg='authenticate: true, but %s. Nothing was started.' % exc)
            return result
        try:
            result.update(secret_transfer.run_module(self, MODULE, args, task_vars, 'auth_src', server_part,
                                                     'iperf3.auth'))
        finally:
            if not result.get('pid'):
                iperf3_credentials.discard(handle)
        if result.get('pid'):
            result['credentials'] = handle
        return result
