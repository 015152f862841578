# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``bdp.wan_tune.rsync_daemon_config``: the passwords never become module arguments.

The daemon's settings are the task's ``settings`` (keys of module_utils/transfer/rsyncd.py SETTINGS, the one list),
as the role's task gives them, in sight.  Only the users ({name, password}) come from the host's variable
``rsync_daemon_users`` where the task leaves them out, so that no password is ever a task argument.  They are checked
here (no password in any message), the secrets file (``user:password`` lines) is rendered here and
handed to the module in a file (plugins/plugin_utils/secret_transfer.py).  The module receives the user names and
the file's path only, so no password can reach the host's journal ("Invoked with"), the task result or -vvv,
whatever characters it holds.
"""

from ansible.plugins.action import ActionBase

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd
from ansible_collections.bdp.wan_tune.plugins.modules.rsync_daemon_config import ARGUMENT_SPEC
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import secret_transfer

FAILED = 'The rsync daemon settings are not usable (nothing was changed):\n'


def module_args(args, settings=None):
    """The module's arguments: the task's, with the settings (users reduced to their names); the secrets file is
    added by secret_transfer.run_module()."""
    out = dict((key, value) for key, value in args.items() if key not in ('settings', 'secrets_src'))
    if settings is not None:
        out['settings'] = dict(settings)
        users = settings.get('users') or []
        out['settings']['users'] = [{'name': user.get('name')} if isinstance(user, dict) else {'name': None}
                                    for user in users] if isinstance(users, (list, tuple)) else []
    return out


class ActionModule(ActionBase):

    TRANSFERS_FILES = True

    def settings(self, given, task_vars):
        """(settings, problems): the task's settings; the users, where it leaves them out, from rsync_daemon_users."""
        if not isinstance(given, dict) or set(given) - set(rsyncd.SETTINGS):
            return None, ['settings: %s; expected a mapping with the keys %s only.' % (
                'has the unknown keys %s' % ', '.join(sorted(set(given) - set(rsyncd.SETTINGS)))
                if isinstance(given, dict) else 'is not a mapping', ', '.join(rsyncd.SETTINGS))]
        settings = dict(given)
        if 'users' not in settings and rsyncd.PREFIX + 'users' in task_vars:
            settings['users'] = self._templar.template(task_vars[rsyncd.PREFIX + 'users'])
        return settings, []

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        # an option the module lacks would be echoed, unmasked, in its failed result: refused here, before it travels
        unknown = sorted(set(args) - set(ARGUMENT_SPEC))
        if unknown:
            # names only: the values may hold passwords
            verb = 'is not an option' if len(unknown) == 1 else 'are not options'
            result.update(failed=True, msg='%s %s of bdp.wan_tune.rsync_daemon_config (nothing was sent to the host, '
                          'nothing was changed); give the daemon settings (%s) in settings, and the users with their '
                          'passwords as the host variable rsync_daemon_users.'
                          % (', '.join(unknown), verb, ', '.join(rsyncd.SETTINGS)))
            return result
        if args.get('secrets_src') is not None:
            result.update(failed=True, msg='secrets_src is set by the action plugin itself; give the passwords in '
                          'rsync_daemon_users ({name, password}).')
            return result
        if args.get('state', 'present') != 'present':
            return self._run(result, module_args(args), task_vars)
        settings, problems = self.settings(args.get('settings') or {}, task_vars or {})
        if not problems:
            secrets, problems = rsyncd.check_users(settings.get('users') or [])
        if problems:
            result.update(failed=True, msg=FAILED + '\n'.join('- ' + item for item in problems))
            return result
        result.update(secret_transfer.run_module(self, 'bdp.wan_tune.rsync_daemon_config', module_args(args, settings),
                                                 task_vars, 'secrets_src', rsyncd.render_secrets(secrets),
                                                 'rsyncd.secrets'))
        return result

    def _run(self, result, new_args, task_vars):
        result.update(self._execute_module(module_name='bdp.wan_tune.rsync_daemon_config', module_args=new_args,
                                           task_vars=task_vars))
        return result
