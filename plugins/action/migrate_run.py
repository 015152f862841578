# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``bdp.wan_tune.migrate_run``: the rsync password never becomes a module argument.

It comes from the receiver's ``rsync_daemon_users`` (the inventory the receiver was set up with, typically vaulted),
read here on the controller, and reaches the module in a file (plugins/plugin_utils/secret_transfer.py).  No message
here names the password.
"""

from ansible.plugins.action import ActionBase

from ansible_collections.bdp.wan_tune.plugins.plugin_utils import secret_transfer


class ActionModule(ActionBase):

    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = dict(self._task.args)
        if args.get('secret_src') is not None:
            result.update(failed=True, msg='secret_src is set by the action plugin itself; the password comes from '
                          'the receiver\'s rsync_daemon_users.')
            return result
        receiver, user = args.get('receiver'), args.get('user')
        hostvars = task_vars.get('hostvars', {})
        users = self._templar.template(hostvars[receiver].get('rsync_daemon_users', [])) if receiver in hostvars \
            else None
        password = next((item.get('password') for item in users or [] if isinstance(item, dict)
                         and item.get('name') == user), None)
        if not isinstance(password, str) or not password:
            result.update(failed=True, msg='migrate_user: %s has no password in the rsync_daemon_users of %s; '
                          'expected the receiver\'s inventory (the variables it was set up with, typically vaulted) '
                          'to hold it. Nothing was started.' % (user, receiver))
            return result
        if self._task.check_mode:
            result.update(self._execute_module(module_name='bdp.wan_tune.migrate_run', module_args=args,
                                               task_vars=task_vars))
            return result
        result.update(secret_transfer.run_module(self, 'bdp.wan_tune.migrate_run', args, task_vars, 'secret_src',
                                                 password + '\n', 'migrate.password'))
        return result
