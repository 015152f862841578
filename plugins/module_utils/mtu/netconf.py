# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Persistent MTU configuration for the host's own network stack: parse, render, find conflicts.

One function family per backend, all pure (text in, text or commands out) so that each rendering is
unit tested without the backend installed:

* systemd-networkd: a drop-in ``<file>.network.d/90-bdp-wan-tune-mtu.conf`` with ``[Link] MTUBytes=``
  for the .network file that manages the interface.
* NetworkManager: ``nmcli connection modify <uuid> <setting>.mtu N`` on the interface's connection, then
  ``nmcli device reapply`` (no reactivation, the link stays up).
* netplan: ``/etc/netplan/90-bdp-wan-tune-mtu.yaml`` that adds ``mtu`` to the existing definition (same id,
  so netplan merges it); physical devices rendered by networkd are matched by MAC with ``set-name``, as
  netplan requires for MTU changes on them.  The netplan files are read with PyYAML, which netplan depends
  on; without it, yaml_load fails with a message that says so (the other backends need no YAML).
* ifupdown: ``/etc/network/interfaces.d/bdp-wan-tune-mtu`` with an ``iface NAME inet manual`` stanza and
  ``mtu N``; ifupdown applies every stanza of an interface.
* RHEL-style ifcfg (network-scripts without NetworkManager): ``MTU=N`` in ``ifcfg-NAME``, the previous
  line kept for the undo.
"""

import fnmatch
import os
import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import read_whole

try:
    import yaml
except ImportError:
    HAS_YAML = False
else:
    HAS_YAML = True

DROPIN_NAME = '90-bdp-wan-tune-mtu.conf'
NETPLAN_NAME = '90-bdp-wan-tune-mtu.yaml'
IFUPDOWN_NAME = 'bdp-wan-tune-mtu'
MARK = 'bdp.wan_tune.jumbo_mtu'
NETPLAN_SECTIONS = ('ethernets', 'bonds', 'bridges', 'vlans', 'tunnels', 'wifis', 'vrfs', 'modems',
                    'nm-devices', 'dummy-devices', 'virtual-ethernets')

# nmcli setting that holds the MTU, by connection.type
NM_MTU_SETTING = {
    '802-3-ethernet': '802-3-ethernet.mtu',
    'vlan': '802-3-ethernet.mtu',
    'bond': '802-3-ethernet.mtu',
    'bridge': '802-3-ethernet.mtu',
    'team': '802-3-ethernet.mtu',
    'macvlan': '802-3-ethernet.mtu',
    'veth': '802-3-ethernet.mtu',
    'infiniband': 'infiniband.mtu',
    '802-11-wireless': '802-11-wireless.mtu',
    'ip-tunnel': 'ip-tunnel.mtu',
    'wireguard': 'wireguard.mtu',
    'tun': '802-3-ethernet.mtu',
}


# Debian's netplan.io (the netplan command) depends on python3-yaml, on Debian 12 and 13, and so does cloud-init, which
# writes most netplan files.  A Debian 13 host with only netplan-generator (no netplan command, no cloud-init), or a
# module run by another Python (a virtualenv as ansible_python_interpreter), can lack it: then this message.
YAML_MISSING = ('reading netplan files needs PyYAML, which netplan itself depends on (Debian: python3-yaml), and the '
                'Python that runs this module cannot import it; install python3-yaml (apt-get install python3-yaml), '
                'point ansible_python_interpreter at the system Python, or choose another backend.')


class NetConfError(ValueError):
    """A configuration this module cannot handle safely; the message says what to do."""


def _header(header):
    return [line.rstrip() for line in (header or '').strip('\n').splitlines()]


# ----------------------------------------------------------------------------- systemd-networkd

def networkd_link_state(text):
    """Parse /run/systemd/netif/links/<ifindex> (KEY=VALUE lines)."""
    state = {}
    for line in (text or '').splitlines():
        if '=' in line and not line.startswith('#'):
            key, value = line.split('=', 1)
            state[key.strip()] = value.strip()
    return state


def networkd_managed(state):
    """The .network file managing a link, or None when networkd leaves it alone."""
    if state.get('ADMIN_STATE') in ('configured', 'configuring', 'pending') and state.get('NETWORK_FILE'):
        return state['NETWORK_FILE']
    return None


def networkd_dropin_path(network_file, etc_dir='/etc/systemd/network'):
    """Drop-ins for any .network file (in /etc, /run or /usr/lib) can live in /etc/systemd/network/<name>.d/."""
    return os.path.join(etc_dir, os.path.basename(network_file) + '.d', DROPIN_NAME)


def networkd_dropin(mtu, header='', note=''):
    lines = _header(header)
    if note:
        lines.append('# %s' % note)
    lines += ['[Link]', 'MTUBytes=%d' % mtu]
    return '\n'.join(lines) + '\n'


def ini_value(text, section, key):
    """Last value of ``key`` in ``[section]`` of a systemd unit-style file, or None."""
    current, value = None, None
    for raw in (text or '').splitlines():
        line = raw.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('[') and line.endswith(']'):
            current = line[1:-1].strip()
            continue
        if current == section and '=' in line:
            name, val = line.split('=', 1)
            if name.strip() == key:
                value = val.strip()
    return value


def parse_bytes(text):
    """MTUBytes value (1024-based suffixes K, M, G as systemd reads them) as int, or None."""
    if text is None:
        return None
    match = re.match(r'^\s*([0-9]+)\s*([KMG]?)\s*$', text)
    if not match:
        return None
    return int(match.group(1)) * {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}[match.group(2)]


def networkd_effective(main_text, dropins):
    """(mtu, source) networkd applies from a .network file and its drop-ins [(path, text)] (sorted by name)."""
    mtu, source = parse_bytes(ini_value(main_text, 'Link', 'MTUBytes')), 'the .network file'
    for path, text in sorted(dropins, key=lambda item: os.path.basename(item[0])):
        value = parse_bytes(ini_value(text, 'Link', 'MTUBytes'))
        if value is not None:
            mtu, source = value, path
    return mtu, source


# ----------------------------------------------------------------------------- NetworkManager

def nm_setting(conn_type):
    """The MTU property for an NM connection type; NetConfError for types without one."""
    if conn_type not in NM_MTU_SETTING:
        raise NetConfError('NetworkManager connection type %r has no MTU property this role knows; set the MTU in '
                           'that connection yourself.' % conn_type)
    return NM_MTU_SETTING[conn_type]


def nm_value(text):
    """'auto', '0' or '' (NetworkManager's "not set") -> None; a number -> int."""
    text = (text or '').strip()
    if text in ('', 'auto', '0', '--'):
        return None
    return read_whole(text)


def nm_commands(uuid, conn_type, mtu, device, reapply=True):
    """nmcli argv lists that persist ``mtu`` in the connection and hand it to the running device."""
    value = '0' if mtu is None else str(mtu)
    cmds = [['nmcli', 'connection', 'modify', uuid, nm_setting(conn_type), value]]
    if reapply and device:
        cmds.append(['nmcli', 'device', 'reapply', device])
    return cmds


def nm_describe(commands):
    return ''.join(' '.join(_shell_word(word) for word in cmd) + '\n' for cmd in commands)


def _shell_word(word):
    return word if re.match(r'^[A-Za-z0-9_./:=@%+-]+$', word) else "'%s'" % word.replace("'", "'\\''")


# ----------------------------------------------------------------------------- netplan

def yaml_load(text):
    """A netplan file's data, read with PyYAML (netplan itself needs it, so every netplan host has it)."""
    if not HAS_YAML:
        raise NetConfError(YAML_MISSING)
    return yaml.safe_load(text) or {}


def netplan_definitions(docs):
    """Merge netplan documents [(path, data)] in netplan's order (by file name): {(section, id): info}."""
    merged = {}
    renderer = None
    for path, data in sorted(docs, key=lambda item: os.path.basename(item[0])):
        network = (data or {}).get('network') or {}
        if network.get('renderer'):
            renderer = network['renderer']
        for section in NETPLAN_SECTIONS:
            for ident, conf in (network.get(section) or {}).items():
                entry = merged.setdefault((section, ident), {'section': section, 'id': ident, 'files': [],
                                                             'conf': {}, 'mtu_files': []})
                entry['files'].append(path)
                conf = conf or {}
                for key, value in conf.items():
                    if key == 'match' and isinstance(value, dict):
                        entry['conf'].setdefault('match', {}).update(value)
                    else:
                        entry['conf'][key] = value
                if 'mtu' in conf:
                    entry['mtu_files'].append((path, conf['mtu']))
                if conf.get('renderer'):
                    entry['renderer'] = conf['renderer']
    for entry in merged.values():
        entry.setdefault('renderer', renderer or 'networkd')
    return merged


def netplan_find(definitions, name, mac=None):
    """The netplan definition that configures interface ``name`` (MAC ``mac``), or None."""
    mac = (mac or '').lower()
    for key in sorted(definitions):
        entry = definitions[key]
        conf = entry['conf']
        match = conf.get('match') or {}
        if conf.get('set-name') == name:
            return entry
        if match:
            ok = True
            if match.get('name') and not fnmatch.fnmatch(name, str(match['name'])):
                ok = False
            if match.get('macaddress') and str(match['macaddress']).lower() != mac:
                ok = False
            if ok and (match.get('name') or match.get('macaddress')):
                return entry
        elif entry['id'] == name:
            return entry
    return None


def netplan_entry(entry, name, mac, mtu):
    """What our file says for one definition: same section and id, mtu, and MAC match where networkd needs it."""
    conf = {'mtu': mtu}
    match = (entry['conf'].get('match') or {})
    if entry['section'] == 'ethernets' and entry.get('renderer', 'networkd') == 'networkd' \
            and not match.get('macaddress') and mac:
        conf['match'] = {'macaddress': mac.lower()}
        conf['set-name'] = name
    return {'section': entry['section'], 'id': entry['id'], 'conf': conf}


def netplan_render(entries, header=''):
    """YAML for our netplan file from [{'section', 'id', 'conf'}], stable order."""
    lines = _header(header) + ['network:', '  version: 2']
    by_section = {}
    for entry in entries:
        by_section.setdefault(entry['section'], []).append(entry)
    for section in NETPLAN_SECTIONS:
        if section not in by_section:
            continue
        lines.append('  %s:' % section)
        for entry in sorted(by_section[section], key=lambda item: item['id']):
            lines.append('    %s:' % _yaml_key(entry['id']))
            conf = entry['conf']
            if 'match' in conf:
                lines.append('      match:')
                for key in sorted(conf['match']):
                    lines.append('        %s: "%s"' % (key, conf['match'][key]))
            if 'set-name' in conf:
                lines.append('      set-name: %s' % _yaml_key(conf['set-name']))
            lines.append('      mtu: %d' % conf['mtu'])
    return '\n'.join(lines) + '\n'


def _yaml_key(text):
    return text if re.match(r'^[A-Za-z0-9_.-]+$', text) else '"%s"' % text


def netplan_conflicts(entry, own_path):
    """Files after ours (by name) that set the MTU of the same definition: they would win."""
    own = os.path.basename(own_path)
    return [(path, mtu) for path, mtu in entry.get('mtu_files', [])
            if os.path.basename(path) > own and path != own_path]


# ----------------------------------------------------------------------------- ifupdown

def ifupdown_parse(text, path='interfaces'):
    """Stanzas and directives of one interfaces(5) file.

    Returns {'ifaces': [{'name', 'family', 'method', 'options': {key: value}, 'path', 'line'}],
    'auto': set of names, 'sources': [(kind, pattern)]}.
    """
    result = {'ifaces': [], 'auto': set(), 'sources': []}
    current = None
    for number, raw in enumerate((text or '').splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        words = line.split()
        head = words[0]
        if head == 'iface' and len(words) >= 4:
            current = {'name': words[1], 'family': words[2], 'method': words[3], 'options': {}, 'path': path,
                       'line': number}
            result['ifaces'].append(current)
        elif head in ('auto', 'allow-auto') or head.startswith('allow-'):
            result['auto'].update(words[1:])
            current = None
        elif head in ('source', 'source-directory'):
            result['sources'].append((head, ' '.join(words[1:])))
            current = None
        elif head in ('mapping', 'no-auto-down', 'no-scripts', 'rename'):
            current = None
        elif current is not None:
            current['options'][head] = ' '.join(words[1:])
            current.setdefault('option_lines', {})[head] = number
    return result


def ifupdown_includes(sources, base_dir='/etc/network', root='/'):
    """Glob patterns a parsed file includes, resolved against ``base_dir`` (absolute ones below ``root``)."""
    patterns = []
    for kind, arg in sources:
        path = os.path.join(root, arg.lstrip('/')) if os.path.isabs(arg) else os.path.join(base_dir, arg)
        if kind == 'source-directory':
            patterns.append(('dir', path))
        else:
            patterns.append(('glob', path))
    return patterns


def ifupdown_sources_file(sources, path, base_dir='/etc/network', root='/'):
    """Whether ``path`` would be read through these source/source-directory lines."""
    for kind, pattern in ifupdown_includes(sources, base_dir, root):
        if kind == 'dir':
            if os.path.dirname(path) == pattern.rstrip('/') and re.match(r'^[A-Za-z0-9_-]+$', os.path.basename(path)):
                return True
        elif fnmatch.fnmatch(path, pattern):
            return True
    return False


def ifupdown_render(entries, header=''):
    """Our interfaces.d file from [(name, mtu, needs_auto)]."""
    lines = _header(header)
    lines.append('# %s: MTU set after a path proof; ifupdown applies every stanza of an interface.' % MARK)
    for name, mtu, needs_auto in sorted(entries):
        lines.append('')
        if needs_auto:
            lines.append('auto %s' % name)
        lines.append('iface %s inet manual' % name)
        lines.append('    mtu %d' % mtu)
    return '\n'.join(lines) + '\n'


def ifupdown_conflicts(stanzas, name, mtu, own_path):
    """Other stanzas of ``name`` that set another mtu (the last one ifup applies wins)."""
    return [(item['path'], item.get('option_lines', {}).get('mtu', item['line']), item['options']['mtu'])
            for item in stanzas
            if item['name'] == name and item['path'] != own_path and 'mtu' in item['options']
            and item['options']['mtu'] != str(mtu)]


# ----------------------------------------------------------------------------- ifcfg (network-scripts)

_IFCFG_MTU = re.compile(r'^\s*MTU\s*=')


def ifcfg_get(text, key):
    value = None
    for line in (text or '').splitlines():
        match = re.match(r'^\s*%s\s*=\s*(.*?)\s*$' % re.escape(key), line)
        if match:
            value = match.group(1).strip('"\'')
    return value


def ifcfg_render(text, mtu):
    """(new text, the MTU= line it replaced or None): MTU=N with a marker comment, nothing else touched."""
    lines = (text or '').splitlines()
    original = None
    out = []
    placed = False
    skip_mark = False
    for line in lines:
        if line.strip() == '# %s' % MARK:
            skip_mark = True
            continue
        if _IFCFG_MTU.match(line):
            if original is None and not skip_mark:
                original = line
            if not placed:
                out += ['# %s' % MARK, 'MTU=%d' % mtu]
                placed = True
            skip_mark = False
            continue
        skip_mark = False
        out.append(line)
    if not placed:
        out += ['# %s' % MARK, 'MTU=%d' % mtu]
    return '\n'.join(out) + '\n', original


def ifcfg_restore(text, original):
    """Remove our MTU line (and marker) and put ``original`` (the line we replaced, or None) back."""
    out = []
    lines = (text or '').splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == '# %s' % MARK and i + 1 < len(lines) and _IFCFG_MTU.match(lines[i + 1]):
            if original:
                out.append(original)
            i += 2
            continue
        out.append(line)
        i += 1
    return '\n'.join(out) + '\n'
