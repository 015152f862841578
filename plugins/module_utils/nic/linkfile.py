# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Persistence of NIC settings the host's own way: systemd ``.link`` files, which systemd-udevd applies when a
device appears (at boot), and a tmpfiles.d line for the CPU governor.

udev applies only the FIRST ``.link`` file (in the order of the file names, over /etc, /run and /usr/lib) whose
[Match] section matches a device.  A file of ours that sorts first therefore replaces the one that applied before,
usually /usr/lib/systemd/network/99-default.link with NamePolicy=, AlternativeNamesPolicy= and MACAddressPolicy=:
ours must carry every key of that file, or the interface would lose its predictable name at the next boot.  udev
records which file it applied in ID_NET_LINK_FILE (/run/udev/data/n<ifindex>, ``udevadm info``).

The keys and the systemd version that added each (systemd.link(5), "Added in version"): Debian 12 has systemd 252,
Debian 13 has 257, so both take all of them; an older systemd gets only the keys it knows.
"""

import glob
import os
import re

UDEV_DATA = '/run/udev/data'
UDEV_CONTROL = '/run/udev/control'
LINK_DIR = '/etc/systemd/network'
TMPFILES_DIR = '/etc/tmpfiles.d'
LINK_NAME = '10-bdp-wan-tune-%s.link'
TMPFILES_NAME = 'bdp-wan-tune-governor.conf'
GOVERNOR_LINE = 'w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - performance'
# The .link files systemd ships; another file that applies is an administrator's, named in the result.
SHIPPED = ('99-default.link', '73-usb-net-by-mac.link')
# Where udev looks for .link files and their drop-ins (<dir>/<name>.link.d/*.conf), systemd.link(5).
DROPIN_DIRS = ('/etc/systemd/network', '/run/systemd/network', '/usr/local/lib/systemd/network',
               '/usr/lib/systemd/network')
KEY_SINCE = {
    'RxBufferSize': 244, 'TxBufferSize': 244,
    'TransmitQueueLength': 248,
    'UseAdaptiveRxCoalesce': 250, 'UseAdaptiveTxCoalesce': 250, 'RxCoalesceSec': 250,
}


def systemd_version(text):
    """The version number of ``udevadm --version`` ('252', '257.9-1~deb13u1', '252 (252.22-1~deb12u1)'), or None."""
    found = re.match(r'\s*(\d+)', text or '')
    return int(found.group(1)) if found else None


def parse(text):
    """A .link file as [(section, key, value)] in order (comments and blank lines left out)."""
    items, section = [], None
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1].strip()
        elif '=' in line and section:
            key, value = line.split('=', 1)
            items.append((section, key.strip(), value.strip()))
    return items


def applied(ifindex, udev_data=UDEV_DATA, run=None):
    """The .link file udev applied to the device with ``ifindex``: E:ID_NET_LINK_FILE= of /run/udev/data/n<ifindex>,
    else of ``run(['info', '--query=property', '--path=...'])`` (udevadm) when given; None when unknown."""
    text = None
    try:
        with open(os.path.join(udev_data, 'n%d' % int(ifindex))) as handle:
            text = handle.read()
    except (IOError, OSError, TypeError, ValueError):
        text = run(ifindex) if run else None
    for line in (text or '').splitlines():
        key, _sep, value = line.partition('=')
        if key in ('E:ID_NET_LINK_FILE', 'ID_NET_LINK_FILE') and value.strip():
            return value.strip()
    return None


def kept(items, ours):
    """The entries of the applied file that ours carries: all but [Match] and the keys ``ours`` sets."""
    return [item for item in items if item[0] != 'Match' and not (item[0] == 'Link' and item[1] in ours)]


def header_lines(header):
    """``header`` (one or more lines) as comment lines."""
    return ['%s' % line if line.startswith('#') else '# %s' % line if line else '#'
            for line in (header or '').splitlines()]


def render(header, name, match, keep, ours, source):
    """Our .link file for interface ``name``: the header, [Match] (``match``: [(key, value)]), the [Link] keys of
    the file udev applied before (``keep``: [(section, key, value)] from kept()) and ours ([(key, value)])."""
    lines = header_lines(header) + [
        '# bdp.wan_tune.nic_settings: ring, queue and coalescing settings of %s.' % name,
        '# udev applies only the first matching .link file, so this one also carries the keys of',
        '# %s, which applied before.' % (source or 'no other file (none applied)'),
        '', '[Match]'] + ['%s=%s' % item for item in match] + ['', '[Link]']
    lines += ['%s=%s' % (key, value) for section, key, value in keep if section == 'Link']
    lines += ['%s=%s' % item for item in ours]
    others = []
    for section, key, value in keep:
        if section != 'Link':
            if section not in others:
                others.append(section)
    for section in others:
        lines += ['', '[%s]' % section] + ['%s=%s' % (key, value) for sec, key, value in keep if sec == section]
    return '\n'.join(lines) + '\n'


def keys(settings, version):
    """[(key, value)] that persist ``settings`` ({'rings': {'rx', 'tx'}, 'txqueuelen': n, 'coalescing': the fields
    of adaptive_rx, adaptive_tx and rx_usecs to persist}, each only when it is to be persisted) where systemd
    ``version`` accepts the key; ([], [skipped keys])."""
    out = []
    rings = settings.get('rings')
    if rings:
        out += [('RxBufferSize', rings['rx']), ('TxBufferSize', rings['tx'])]
    if settings.get('txqueuelen') is not None:
        out.append(('TransmitQueueLength', settings['txqueuelen']))
    coalescing = settings.get('coalescing') or {}
    if 'adaptive_rx' in coalescing:
        out.append(('UseAdaptiveRxCoalesce', 'yes' if coalescing['adaptive_rx'] else 'no'))
    if 'adaptive_tx' in coalescing:
        out.append(('UseAdaptiveTxCoalesce', 'yes' if coalescing['adaptive_tx'] else 'no'))
    if 'rx_usecs' in coalescing:
        out.append(('RxCoalesceSec', '%dus' % coalescing['rx_usecs']))
    accepted = [(key, value) for key, value in out if version is not None and KEY_SINCE[key] <= version]
    return accepted, [key for key, _value in out if (key, _value) not in accepted]


def dropins(path, dirs=None):
    """The drop-ins of the .link file ``path`` (``<dir>/<name>.d/*.conf`` over DROPIN_DIRS; a name in an earlier
    directory hides the same name in a later one), in the order udev reads them."""
    found = {}
    for directory in dirs or DROPIN_DIRS:
        for conf in sorted(glob.glob(os.path.join(directory, os.path.basename(path) + '.d', '*.conf'))):
            found.setdefault(os.path.basename(conf), conf)
    return [found[name] for name in sorted(found)]


def sorts_before(applied_path, ours_name):
    """Whether the file udev applied sorts before ours (so udev would keep applying it, not ours)."""
    return applied_path is not None and os.path.basename(applied_path) < ours_name


def governor_text(header):
    """The tmpfiles.d file that sets the governor at boot (systemd-tmpfiles-setup.service)."""
    return '\n'.join(header_lines(header) + [
        '# bdp.wan_tune.nic_settings: the CPU frequency governor "performance" at boot.', GOVERNOR_LINE]) + '\n'
