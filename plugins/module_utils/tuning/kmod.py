# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a kernel feature comes from (built in, a loadable module, missing) and loading it with modprobe.

Shared by tcp_congestion (which loads tcp_bbr and sch_fq) and sysctl_dropin (whose check mode must
predict that a congestion control will exist once its module is loaded).  congestion_control_name() is the one
rule for a congestion control's name, used by both modules and by the validation play (validate_inputs).
"""

import gzip
import os
import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files

# The kernel keeps a congestion control's name in TCP_CA_NAME_MAX (16) bytes, the terminating NUL included.
CONGESTION_CONTROL_NAME_MAX = 15
CONGESTION_CONTROL_HELP = ('the kernel name of a TCP congestion control: 1 to %d lower-case letters, digits or _ '
                           '(bbr, cubic, htcp)' % CONGESTION_CONTROL_NAME_MAX)
_CONGESTION_CONTROL_NAME = re.compile(r'[a-z0-9_]+\Z')


def congestion_control_name(value):
    """None when ``value`` can be the kernel name of a TCP congestion control, else why not (a phrase that follows
    the value: 'is not a congestion control name').

    The name is 1 to CONGESTION_CONTROL_NAME_MAX lower-case ASCII letters, digits or _: what the kernel's
    congestion controls are called (bbr, cubic, htcp, bbr2), and safe in a module name (modprobe tcp_<name>) and a
    CONFIG_TCP_CONG_<NAME> option.
    """
    if not isinstance(value, str):
        return 'is not a string'
    if not _CONGESTION_CONTROL_NAME.match(value):
        return 'is not a congestion control name'
    if len(value) > CONGESTION_CONTROL_NAME_MAX:
        return ('is longer than %d characters, the longest congestion control name the kernel takes (TCP_CA_NAME_MAX '
                'is %d bytes with the terminating NUL)'
                % (CONGESTION_CONTROL_NAME_MAX, CONGESTION_CONTROL_NAME_MAX + 1))
    return None


def loadable_congestion_controls(release):
    """The congestion controls this kernel has as loadable modules (tcp_<name>.ko under net/ipv4 in modules.dep),
    sorted; None when modules.dep cannot be read."""
    text = files.read_text('/lib/modules/%s/modules.dep' % release)
    if text is None:
        return None
    names = set(re.findall(r'^\S*/net/ipv4/tcp_(\w+)\.ko(?:\.\w+)?:', text, re.M))
    names.discard('diag')                   # tcp_diag: socket monitoring, not a congestion control
    return sorted(names)


def kernel_config(option):
    """'y', 'm', 'n' or None (unknown) for a CONFIG_ option, from /proc/config.gz or /boot/config-*."""
    release = os.uname()[2]
    text = None
    try:
        with gzip.open('/proc/config.gz', 'rt') as handle:
            text = handle.read()
    except (IOError, OSError, EOFError):
        text = files.read_text('/boot/config-%s' % release)
    if text is None:
        return None
    match = re.search(r'^%s=(\w+)$' % re.escape(option), text, re.M)
    return match.group(1) if match else 'n'


def loaded(name):
    """A loadable module that is loaded now (built-ins have no initstate)."""
    return os.path.exists('/sys/module/%s/initstate' % name)


class Kernel(object):
    def __init__(self, module):
        self.module = module
        self.release = os.uname()[2]
        self.modprobe = module.get_bin_path('modprobe', opt_dirs=['/sbin', '/usr/sbin'])

    def builtin(self, name):
        text = files.read_text('/lib/modules/%s/modules.builtin' % self.release)
        if text is not None:
            return re.search(r'/%s\.ko$' % re.escape(name), text, re.M) is not None
        return None

    def module_file(self, name):
        if not self.modprobe:
            return False
        rc, _out, _err = self.module.run_command([self.modprobe, '--dry-run', '--first-time', name])
        return rc == 0

    def source(self, name, config, present):
        """'builtin', 'module' (loadable, loaded or not), 'missing' or 'unknown'."""
        if loaded(name):
            return 'module'
        builtin = self.builtin(name)
        setting = kernel_config(config)
        # built-ins that have parameters also appear in /sys/module, without initstate
        if builtin or setting == 'y' or os.path.isdir('/sys/module/%s' % name):
            return 'builtin'
        if setting == 'm' or self.module_file(name):
            return 'module'
        if present:
            return 'builtin'
        return 'missing' if setting == 'n' or builtin is False else 'unknown'

    def congestion_source(self, algorithm, present):
        return self.source('tcp_' + algorithm, 'CONFIG_TCP_CONG_' + algorithm.upper(), present)

    def load(self, name):
        """Load ``name`` unless it is loaded; True when it was (or, in check mode, would be) loaded."""
        if loaded(name):
            return False
        if not self.modprobe:
            self.module.fail_json(msg='%s is a loadable module but modprobe is missing; install kmod.' % name)
        if not self.module.check_mode:
            rc, _out, err = self.module.run_command([self.modprobe, name])
            if rc != 0:
                self.module.fail_json(msg='modprobe %s failed on kernel %s: %s' % (name, self.release, err.strip()))
        return True
