# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration's systemd unit on the sender, as the modules migrate_run and migrate_status see it."""

from ansible_collections.bdp.wan_tune.plugins.module_utils.migrate import runner as _runner

ACTIVE = ('active', 'activating', 'reloading', 'deactivating')


def active(module, unit, run_dir):
    """Whether the migration runs: its unit is active, or its runner holds the run's lock."""
    rc, out, dummy = module.run_command([module.get_bin_path('systemctl', required=True), 'show', '-P', 'ActiveState',
                                         unit])
    return (rc == 0 and out.strip() in ACTIVE) or _runner.running(run_dir)
