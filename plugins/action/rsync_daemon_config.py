# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``bdp.wan_tune.rsync_daemon_config``: the passwords never become module arguments.

The task's ``users`` ({name, password}) are checked here (module_utils/rsyncd.py, no password in any message), the
secrets file (``user:password`` lines) is rendered here and handed to the module in a file
(plugins/plugin_utils/secret_transfer.py).  The module receives the user names and the file's path only, so no
password can reach the host's journal ("Invoked with"), the task result or -vvv, whatever characters it holds.
"""

from ansible.plugins.action import ActionBase

from ansible_collections.bdp.wan_tune.plugins.module_utils import rsyncd
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import secret_transfer


def module_args(args, secrets_src=None):
    """The module's arguments: the task's, with the users reduced to their names and the secrets file's path."""
    out = dict((key, value) for key, value in args.items() if key not in ('users', 'secrets_src'))
    users = args.get('users') or []
    out['users'] = [{'name': user.get('name')} if isinstance(user, dict) else {'name': None} for user in users] \
        if isinstance(users, (list, tuple)) else []
    if secrets_src is not None:
        out['secrets_src'] = secrets_src
    return out


class ActionModule(ActionBase):

    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if args.get('secrets_src') is not None:
            result.update(failed=True, msg='secrets_src is set by the action plugin itself; give the passwords in '
                          'users ({name, password}).')
            return result
        if args.get('state', 'present') != 'present':
            return self._run(result, module_args(args), task_vars)
        secrets, problems = rsyncd.check_users(args.get('users') or [], 'users')
        if problems:
            result.update(failed=True, msg='The rsync daemon settings are not usable (nothing was changed):\n'
                          + '\n'.join('- ' + item for item in problems))
            return result
        try:
            remote = secret_transfer.transfer(self, rsyncd.render_secrets(secrets), 'rsyncd.secrets')
            return self._run(result, module_args(args, remote), task_vars)
        finally:
            secret_transfer.finish(self)

    def _run(self, result, new_args, task_vars):
        result.update(self._execute_module(module_name='bdp.wan_tune.rsync_daemon_config', module_args=new_args,
                                           task_vars=task_vars))
        return result
