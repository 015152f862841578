# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rsync daemon's configuration: checking the inputs, rendering rsyncd.conf and the secrets file, and judging the
installed rsync against the 2024-2025 CVEs.  Shared by the filter ``rsync_daemon_problems`` and the action plugin
``validate_inputs`` (on the controller, before any host changes) and the module ``rsync_daemon_config`` (on the host,
before it writes).  Pure functions, but for ``version_at_least``, which asks the host's package manager.
"""

import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import ipnet
from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import BOOL_HELP, read_bool, show_value
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import read_whole

# The daemon's settings, the one list of them: the role's variables rsync_daemon_<key>.  The role's task hands them to
# rsync_daemon_config in its option settings (the users only by name: the action plugin reads their passwords itself);
# validate_inputs and the filter rsync_daemon_problems check them with check() below.
PREFIX = 'rsync_daemon_'
# The daemon's defaults and bounds, written once for the collection's Python (the role's defaults/main.yml states the
# defaults for Ansible; tests/unit/test_one_rule.py keeps them in one place, test_role_argument_specs.py equal).
PORT = 873                  # rsync's own port: the plain transport
TLS_PORT = 874              # rsync-ssl's default: the TLS transport
TRANSPORT = 'tls'
STREAMS, STREAMS_MAX = 4, 1024
STREAMS_HELP = ('a whole number from 1 to %d (default %d): the parallel streams you plan, one rsync connection each'
                % (STREAMS_MAX, STREAMS))
SETTINGS = ('modules', 'users', 'address', 'port', 'streams', 'socket_options', 'auth_digest', 'hosts_allow',
            'allow_self')
# Module paths below these are read-only for Debian's rsync.service (ProtectSystem=full).
PROTECTED_DIRS = ('/usr', '/etc', '/boot')
MODULE_KEYS = ('name', 'path', 'comment', 'read_only', 'auth_users', 'hosts_allow', 'uid', 'gid', 'numeric_ids',
               'max_connections')
DIGESTS = ('sha512', 'sha256', 'sha1', 'md5', 'md4')
# Global settings read only when the daemon starts: a change needs a restart.  Module settings are read again on
# every connection (rsync rereads rsyncd.conf for each client).
RESTART_KEYS = ('port', 'address', 'socket options', 'listen backlog')
CVES = ('CVE-2024-12084', 'CVE-2024-12085', 'CVE-2024-12086', 'CVE-2024-12087', 'CVE-2024-12088', 'CVE-2024-12747')
FIRST_FIXED_UPSTREAM = '3.4.0'
# Distribution packages that carry the fixes as backports: (os-release ID, VERSION_ID) -> first fixed version.
BACKPORTS = {
    ('debian', '12'): '3.2.7-1+deb12u1',
}
SELF_ADDRESSES = ('127.0.0.1', '::1')

NAME_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$')
ID_RE = re.compile(r'^([A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]{1,10})$')
NAME_HELP = 'a name of 1 to 64 letters, digits, _ . - (not starting with . or -)'
USER_HELP = 'a user name of 1 to 64 letters, digits, _ . - (not starting with . or -)'
ID_HELP = 'a user or group name, or a numeric id'
HOST_HELP = ipnet.NETWORK_HELP
PATH_HELP = 'an absolute path outside /usr, /etc and /boot, such as /srv/incoming'
SOCKET_HELP = ('rsync socket options without SO_SNDBUF and SO_RCVBUF, such as SO_KEEPALIVE; usually leave it empty '
               'so that the kernel autotunes the window up to the tuned tcp_rmem/tcp_wmem maximum')


class Problems(list):
    """Messages, each 'name: value reason; expected accepted.'"""

    def add(self, name, value, reason, accepted):
        self.append('%s: %s %s; expected %s.' % (name, show(value), reason, accepted))


def show(value):
    """bdp.show_value, but a list or mapping only by its kind: it may hold passwords (users)."""
    if isinstance(value, dict):
        return 'a mapping'
    if isinstance(value, (list, tuple)):
        return 'a list' if value else '[] (empty)'
    return show_value(value)


def _strings(problems, name, value, check, accepted):
    """A list of strings, each passing ``check``; a single string is refused (a list is expected)."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        problems.add(name, value, 'is not a list', 'a list, each item ' + accepted)
        return None
    good = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not check(item):
            problems.add('%s[%d]' % (name, index), item, 'is not usable', accepted)
            continue
        good.append(item)
    return good if len(good) == len(value) else None


def _hosts(problems, name, value):
    """hosts allow: a list of addresses and networks as the daemon parses them with reverse lookup = no
    (module_utils/common/ipnet.py); None when any item is not usable, each named with its reason."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        problems.add(name, value, 'is not a list', 'a list, each item ' + HOST_HELP)
        return None
    good = []
    for index, item in enumerate(value):
        try:
            ipnet.parse_network(item)
        except ValueError as exc:
            problems.add('%s[%d]' % (name, index), item, str(exc), HOST_HELP)
            continue
        good.append(item)
    return good if len(good) == len(value) else None


def under(path, directory):
    return path == directory or path.startswith(directory.rstrip('/') + '/')


def normalise_path(path):
    parts = []
    for part in path.split('/'):
        if part in ('', '.'):
            continue
        if part == '..':
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return '/' + '/'.join(parts)


def check_path(problems, name, value):
    if not isinstance(value, str) or not value.startswith('/'):
        problems.add(name, value, 'is not an absolute path', PATH_HELP)
        return None
    if re.search(r'[\x00-\x1f\x7f]', value):
        problems.add(name, value, 'contains a control character', PATH_HELP)
        return None
    normal = normalise_path(value)
    if normal == '/':
        problems.add(name, value, 'is the root directory, which holds /usr, /etc and /boot', PATH_HELP)
        return None
    for directory in PROTECTED_DIRS:
        if under(normal, directory):
            problems.add(name, value, "is under %s, which Debian's rsync.service makes read-only "
                         "(ProtectSystem=full), and a system directory is no transfer area" % directory, PATH_HELP)
            return None
    return normal


def check_socket_options(problems, name, value):
    if value in (None, ''):
        return ''
    if not isinstance(value, str) or re.search(r'[\x00-\x1f\x7f]', value):
        problems.add(name, value, 'is not a single line of text', SOCKET_HELP)
        return None
    if re.search(r'SO_(SND|RCV)BUF', value, re.IGNORECASE):
        problems.add(name, value, 'sets SO_SNDBUF or SO_RCVBUF: a fixed socket buffer turns off the kernel\'s '
                     'autotuning for the connection and caps the TCP window at that size, whatever the tuned '
                     'tcp_rmem/tcp_wmem allow', SOCKET_HELP)
        return None
    return value.strip()


def _check_scalars(problems, settings, names):
    """state, address, port, streams, auth digest, socket options: {key: value} of the usable ones."""
    out = {}
    port = checks.read_port(settings.get('port', PORT))
    if port is None:
        problems.add(names['port'], settings.get('port'), 'is not a TCP port', checks.port_help(default=PORT))
    out['port'] = port
    streams = read_whole(settings.get('streams', STREAMS))
    if streams is None or not 1 <= streams <= STREAMS_MAX:
        problems.add(names['streams'], settings.get('streams'), 'is not a number of streams', STREAMS_HELP)
    out['streams'] = streams
    address = settings.get('address', 'all')
    if address in (None, ''):
        address = 'all'
    if address != 'all':
        try:
            address = str(ipnet.parse_address(address))
        except ValueError:
            problems.add(names['address'], address, 'is not an IP address', 'all (every address of the host) or '
                         'one address of the host, such as 198.18.3.11 or 2001:db8::11')
            address = None
    out['address'] = address
    digest = settings.get('auth_digest', 'sha256')
    if digest in (None, ''):
        digest = ''
    elif digest not in DIGESTS:
        problems.add(names['auth_digest'], digest, 'is not a digest rsync knows',
                     'one of %s, or empty for no floor' % ', '.join(DIGESTS))
        digest = None
    out['auth_digest'] = digest
    out['socket_options'] = check_socket_options(problems, names['socket_options'], settings.get('socket_options'))
    allow_self = read_bool(settings.get('allow_self', True))
    if allow_self is None:
        problems.add(names['allow_self'], settings.get('allow_self'), 'is not a boolean', BOOL_HELP)
    out['allow_self'] = allow_self
    return out


def _check_users(problems, users, name, passwords=True):
    """{user: password} from [{name, password}]; passwords are never shown.  ``passwords`` False: the list holds
    the names only (on the host, where the passwords arrive in a file, not as module arguments); the values are
    then None."""
    secrets = {}
    if users is None:
        return secrets
    if not isinstance(users, (list, tuple)):
        problems.append('%s: is %s, not a list; expected a list of {name, password}.'
                        % (name, 'a string' if isinstance(users, str) else 'not a list'))
        return None
    for index, user in enumerate(users):
        where = '%s[%d]' % (name, index)
        if not isinstance(user, dict) or set(user) - {'name', 'password'}:
            problems.append('%s: is not a mapping with the keys name and password only; expected {name: alice, '
                            'password: ...} (the keys it has: %s).'
                            % (where, ', '.join(sorted(str(k) for k in user)) if isinstance(user, dict) else 'none'))
            continue
        user_name, password = user.get('name'), user.get('password')
        if not isinstance(user_name, str) or not NAME_RE.match(user_name):
            problems.add(where + '.name', user_name, 'is not a user name', USER_HELP)
            continue
        if user_name in secrets:
            problems.add(where + '.name', user_name, 'is given twice', 'each user once')
        if not passwords:
            secrets[user_name] = None
            continue
        if not isinstance(password, str) or not password or re.search(r'[\x00-\x1f\x7f]', password):
            problems.append('%s.password (user %s): is empty, not a string, or holds a control character (the value '
                            'is not shown); expected a non-empty single-line string, best from Ansible Vault.'
                            % (where, user_name))
            secrets[user_name] = None       # known, so auth_users naming it give no second message
            continue
        secrets[user_name] = password
    return secrets


def _check_module(problems, index, module, names, scalars, secrets, global_allow):
    where = '%s[%d]' % (names['modules'], index)
    if not isinstance(module, dict):
        problems.add(where, module, 'is not a mapping', 'a mapping with the keys %s' % ', '.join(MODULE_KEYS))
        return None
    unknown = sorted(str(key) for key in module if key not in MODULE_KEYS)
    if unknown:
        problems.append('%s: has the unknown key%s %s; expected only %s.'
                        % (where, 's' if len(unknown) > 1 else '', ', '.join(unknown), ', '.join(MODULE_KEYS)))
    name = module.get('name')
    if not isinstance(name, str) or not NAME_RE.match(name) or name.lower() == 'global':
        problems.add(where + '.name', name, 'is not a module name', NAME_HELP + ', and not global')
        return None
    where = '%s[%d] (%s)' % (names['modules'], index, name)
    bad = len(problems)
    out = {'name': name}
    out['path'] = check_path(problems, where + '.path', module.get('path'))
    comment = module.get('comment', '')
    if comment is None:
        comment = ''
    if not isinstance(comment, str) or re.search(r'[\x00-\x1f\x7f]', comment):
        problems.add(where + '.comment', comment, 'is not a single line of text', 'a single line of text')
    out['comment'] = comment
    for key, default in (('read_only', True), ('numeric_ids', None)):
        value = module.get(key, default)
        out[key] = value if value is None else read_bool(value)
        if value is not None and out[key] is None:
            problems.add('%s.%s' % (where, key), value, 'is not a boolean', BOOL_HELP)
    out['auth_users'] = _strings(problems, where + '.auth_users', module.get('auth_users'),
                                 lambda text: bool(NAME_RE.match(text)), USER_HELP)
    for user in out['auth_users'] or []:
        if secrets is not None and user not in secrets:
            problems.add(where + '.auth_users', user, 'has no password in %s, so it could never log in'
                         % names['users'], 'a user listed in %s with a password' % names['users'])
    hosts = _hosts(problems, where + '.hosts_allow', module.get('hosts_allow'))
    out['hosts_allow'] = hosts if hosts else list(global_allow or [])
    if hosts is None or (not hosts and global_allow is None):
        return None                         # said above; whether anyone may connect is not known
    for key in ('uid', 'gid'):
        value = module.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0) and \
                not (isinstance(value, str) and ID_RE.match(value)):
            problems.add('%s.%s' % (where, key), value, 'is not a user or group', ID_HELP)
        out[key] = None if value is None else str(value)
    streams = scalars.get('streams')
    value = module.get('max_connections')
    if value is None:
        out['max_connections'] = streams
    else:
        number = read_whole(value)
        out['max_connections'] = number
        if number is None or number < 1:
            problems.add(where + '.max_connections', value, 'is not a whole number of connections',
                         'a whole number, at least %s (the planned parallel streams)' % (streams or 1))
        elif streams is not None and number < streams:
            problems.add(where + '.max_connections', value, 'is below the %d parallel streams planned (%s): the '
                         'daemon would refuse the streams above it' % (streams, names['streams']),
                         'at least %d, or leave it unset (it then is %d)' % (streams, streams))
    if out['read_only'] is False and (not module.get('auth_users') or not out['hosts_allow']):
        missing = [what for what, ok in (('auth_users', module.get('auth_users')), ('hosts_allow', out['hosts_allow']))
                   if not ok]
        problems.append('%s: read_only is false, but %s %s empty: a writable module needs both auth_users (users '
                        'with a password in %s) and hosts_allow (or %s), so that no anonymous or unlisted client can '
                        'write; expected both set, or read_only: true.'
                        % (where, ' and '.join(missing), 'are' if len(missing) > 1 else 'is', names['users'],
                           names['hosts_allow']))
    elif not out['hosts_allow']:
        problems.append('%s: hosts_allow is empty and so is %s: the daemon writes hosts deny = * for every module, '
                        'so nobody could connect; expected the addresses or networks of the peers that transfer, '
                        'such as [198.18.3.0/24].' % (where, names['hosts_allow']))
    return out if len(problems) == bad else None


def check_users(users, name='rsync_daemon_users'):
    """({user: password}, problems) of the users alone (the action plugin, before it renders the secrets file)."""
    problems = Problems()
    secrets = _check_users(problems, users, name)
    return secrets, list(problems)


def check(settings, names=None, passwords=True):
    """(plan, problems) for the daemon's settings.

    ``settings``: the keys of SETTINGS (the role's variables without the prefix); others are not read.
    ``names``: how each is called in messages (the role's variable names).
    ``plan`` is None when there is any problem; otherwise the normalised settings the renderer takes.
    ``passwords`` False: the users carry their names only (the module on the host); plan['users'] maps them to None.
    """
    names = dict(dict((key, PREFIX + key) for key in SETTINGS), **(names or {}))
    problems = Problems()
    scalars = _check_scalars(problems, settings, names)
    secrets = _check_users(problems, settings.get('users'), names['users'], passwords)
    global_allow = _hosts(problems, names['hosts_allow'], settings.get('hosts_allow'))
    modules = settings.get('modules')
    plan_modules = []
    if modules is None:
        modules = []
    if not isinstance(modules, (list, tuple)):
        problems.append('%s: is %s, not a list; expected a list of modules ({name, path, ...}).'
                        % (names['modules'], show(modules)))
        modules = []
    seen = set()
    for index, module in enumerate(modules):
        out = _check_module(problems, index, module, names, scalars, secrets, global_allow)
        if out is None:
            continue
        if out['name'] in seen:
            problems.add('%s[%d].name' % (names['modules'], index), out['name'], 'is given twice',
                         'each module name once')
        seen.add(out['name'])
        plan_modules.append(out)
    if problems:
        return None, list(problems)
    plan = dict(scalars, modules=plan_modules, users=secrets, hosts_allow=global_allow or [])
    return plan, []


def self_addresses(address):
    """The addresses the host itself connects from when it verifies the daemon."""
    return list(SELF_ADDRESSES) if address == 'all' else [address]


TRANSPORT_NOTES = {
    'plain': ['# bdp.wan_tune.rsync_daemon. rsync daemon traffic is not encrypted: use it on a private circuit, a VPN or',
              '# IPsec (docs/migration.md, "The rsync daemon").'],
    'both': ['# bdp.wan_tune.rsync_daemon. Reached over TLS through stunnel on port %(tls_port)d, and in cleartext on the',
             '# port below: use that only on a private circuit, a VPN or IPsec (docs/migration.md).'],
    'tls': ['# bdp.wan_tune.rsync_daemon. Reached only over TLS: stunnel on port %(tls_port)d starts rsync for each',
            '# connection (bdp-rsync-tls.service) with the client\'s address; nothing listens on the port below.'],
}


def render_config(plan, header='', secrets_file='/etc/rsyncd.secrets', auth_digest=True, transport=TRANSPORT,
                  tls_port=TLS_PORT):
    """rsyncd.conf for ``plan`` (from check()).  ``auth_digest``: whether this rsync knows the parameter.
    ``transport``: only the comment at the top says how the daemon is reached."""
    def yes(flag):
        return 'yes' if flag else 'no'

    lines = [line.rstrip() for line in header.rstrip('\n').split('\n')] if header else []
    lines += [line % {'tls_port': tls_port} for line in TRANSPORT_NOTES[transport]]
    lines += [
        '# No socket options with SO_SNDBUF/SO_RCVBUF: they would turn off the kernel\'s window autotuning.',
        'port = %d' % plan['port'],
    ]
    if plan['address'] != 'all':
        lines.append('address = %s' % plan['address'])
    if plan.get('socket_options'):
        lines.append('socket options = %s' % plan['socket_options'])
    lines += [
        'use chroot = yes',
        'list = no',
        'reverse lookup = no',
        'read only = yes',
        'hosts deny = *',
        'secrets file = %s' % secrets_file,
        'strict modes = yes',
    ]
    if plan.get('auth_digest') and auth_digest:
        lines.append('auth digest = %s' % plan['auth_digest'])
    extra = self_addresses(plan['address']) if plan.get('allow_self') else []
    for module in plan['modules']:
        lines += ['', '[%s]' % module['name'], '    path = %s' % module['path']]
        if module.get('comment'):
            lines.append('    comment = %s' % module['comment'])
        lines.append('    read only = %s' % yes(module['read_only']))
        if module.get('auth_users'):
            lines.append('    auth users = %s' % ', '.join(module['auth_users']))
        allow = list(module['hosts_allow'])
        allow += [item for item in extra if item not in allow]
        lines.append('    hosts allow = %s' % ' '.join(allow))
        lines.append('    hosts deny = *')
        for key in ('uid', 'gid'):
            if module.get(key) is not None:
                lines.append('    %s = %s' % (key, module[key]))
        if module.get('numeric_ids') is not None:
            lines.append('    numeric ids = %s' % yes(module['numeric_ids']))
        lines.append('    max connections = %d' % module['max_connections'])
    return '\n'.join(lines) + '\n'


def render_secrets(users):
    """The secrets file: user:password, one a line, sorted by user."""
    return ''.join('%s:%s\n' % (name, users[name]) for name in sorted(users))


def parse_secrets(text):
    """{user: password} of a secrets file as render_secrets() writes it (comments and @group lines skipped)."""
    users = {}
    for line in (text or '').split('\n'):
        if not line or line[0] in '#@' or ':' not in line:
            continue
        name, password = line.split(':', 1)
        users.setdefault(name, password.rstrip('\r'))
    return users


def global_settings(text):
    """{key: value} of the global section of an rsyncd.conf (before the first [module]), keys lower-case."""
    settings = {}
    for line in (text or '').split('\n'):
        line = line.strip()
        if line.startswith('['):
            break
        if not line or line[0] in '#;' or '=' not in line:
            continue
        key, value = line.split('=', 1)
        settings[' '.join(key.lower().split())] = value.strip()
    return settings


def restart_needed(old_text, new_text):
    """Whether the daemon must restart for ``new_text``: a setting it reads only at start-up differs."""
    if old_text is None:
        return True
    old, new = global_settings(old_text), global_settings(new_text)
    return any(old.get(key) != new.get(key) for key in RESTART_KEYS)


# ----------------------------------------------------------------------------- versions and CVEs

# What rpm's vercmp is handed: version characters only (it is written into a Lua expression).
RPM_VERSION_RE = re.compile(r'^[0-9A-Za-z.:+~^_-]+$')


def version_at_least(module, version, floor):
    """Whether ``version`` is ``floor`` or later as the host's package manager orders versions (epochs, ~,
    revisions): ``dpkg --compare-versions``, or rpm's vercmp on a host without dpkg.  None when neither can tell."""
    dpkg = module.get_bin_path('dpkg')
    if dpkg:
        rc, dummy, dummy = module.run_command([dpkg, '--compare-versions', version, 'ge', floor])
        return {0: True, 1: False}.get(rc)      # 2: a version dpkg cannot read
    rpm = module.get_bin_path('rpm')
    if rpm and RPM_VERSION_RE.match(version) and RPM_VERSION_RE.match(floor):
        lua = '%%{lua: print(rpm.vercmp("%s", "%s"))}' % (version, floor)
        rc, out, dummy = module.run_command([rpm, '--eval', lua])
        if rc == 0 and out.strip() in ('-1', '0', '1'):
            return int(out.strip()) >= 0
    return None


def upstream_version(version_output):
    """'3.2.7' from the first line of ``rsync --version``; None when it is not there."""
    match = re.search(r'rsync\s+version\s+v?([0-9][0-9A-Za-z.+~]*)', version_output or '')
    return match.group(1) if match else None


def auth_list(version_output):
    """The digests listed under 'Daemon auth list:' in ``rsync --version`` ([] for an rsync that has none)."""
    match = re.search(r'Daemon auth list:\s*\n\s*([^\n]*)', version_output or '')
    return match.group(1).split() if match else []


def cve_status(upstream, package=None, os_id=None, os_version=None, changelog='', at_least=None):
    """Whether the installed rsync has the fixes for the 2024-2025 CVEs (CVE-2024-12084 to 12088, CVE-2024-12747).

    Fixed when: the upstream version is 3.4.0 or later; or the distribution package is at least the known backport
    of its release (Debian 12: 3.2.7-1+deb12u1); or the package changelog names every CVE.  ``at_least(version,
    floor)``: True, False or None (cannot tell), the host's own ordering (version_at_least).
    Returns {'fixed': True/False/None, 'reason': text}; None when the version is unknown.
    """
    at_least = at_least or (lambda version, floor: None)
    newer = upstream and at_least(upstream, FIRST_FIXED_UPSTREAM)
    if newer:
        return {'fixed': True, 'reason': 'upstream %s is %s or later, the first release with the fixes'
                % (upstream, FIRST_FIXED_UPSTREAM)}
    backport = BACKPORTS.get(((os_id or '').lower(), (os_version or '').split('.')[0]))
    patched = backport and package and at_least(package, backport)
    if patched:
        return {'fixed': True, 'reason': 'package %s is at least %s, the %s %s security update with the '
                'backported fixes' % (package, backport, os_id, os_version)}
    missing = [cve for cve in CVES if cve not in (changelog or '')]
    if package and changelog and not missing:
        return {'fixed': True, 'reason': 'the changelog of package %s names all of %s' % (package, ', '.join(CVES))}
    if not upstream and not package:
        return {'fixed': None, 'reason': 'the rsync version is unknown'}
    if (upstream and newer is None) or (backport and package and patched is None):
        return {'fixed': None, 'reason': 'rsync %s%s: the host\'s package manager (dpkg or rpm) could not order the '
                'versions' % (upstream or '?', ' (package %s)' % package if package else '')}
    return {'fixed': False, 'reason': (
        'rsync %s%s predates the fixes for %s (first fixed upstream release %s%s); update rsync from the '
        'distribution\'s security updates' % (
            upstream or '?', ' (package %s)' % package if package else '', ', '.join(CVES), FIRST_FIXED_UPSTREAM,
            ', backport for this release: %s' % backport if backport else ''))}
