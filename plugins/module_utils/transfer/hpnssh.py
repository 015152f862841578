# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HPN-SSH beside the system OpenSSH: the package source per distribution, the options an installed HPN-SSH knows,
and the text of its server and client configuration (role bdp.wan_tune.hpn_ssh, docs/hpn_ssh.md).

What this relies on (read in the HPN-SSH sources and documentation, none of it copied here):

- rapier1/hpn-ssh README.md: the programs are hpnssh, hpnscp, hpnsshd, hpnssh-keygen ...; the configuration and host
  keys live in /etc/hpnssh; hpnsshd listens on port 2222; the client tries 2222 and falls back to port 22.
- rapier1/hpn-ssh HPN-README: Fallback / FallbackPort (client, since 17v3); NoneEnabled (client and server),
  NoneSwitch (client), NoneMacEnabled; HPNDisabled; TcpRcvBufPoll.
- rapier1/hpn-ssh servconf.c (the keyword table of 2026): hpndisabled, tcprcvbufpoll, noneenabled, nonemacenabled,
  usemptcp, disableMTAES, and no hpnbuffersize or tcprcvbuf any more; an unknown keyword is "Bad configuration
  option" and the daemon stops ("terminating, N bad configuration options").  HPNBufferSize and TcpRcvBuf were removed
  in HPN-SSH 18.2 (issue 8), HPNBufferLimit in 18.4.1 (rapier1/hpn-ssh pull request 81).
- rapier1/hpn-ssh hpnsshd.service.in: the unit runs "hpnsshd -D $SSHD_OPTS" with EnvironmentFile /etc/default/hpnssh
  and Alias=hpnsshd.service; the Debian packages (hpnssh-client, hpnssh-server, hpnssh-sftp-server) enable it as
  hpnssh.service; the Copr packages (hpnssh, hpnssh-clients, hpnssh-server) as hpnsshd.service.

Which option an installed binary knows is never taken from a version table: the role asks the binary
(module hpn_ssh_probe, probe_verdict() below).
"""

import os
import re

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import checks
from ansible_collections.bdp.wan_tune.plugins.module_utils.common.bdp import BOOL_HELP, read_bool, show_value

SOURCES = ('auto', 'ppa', 'copr', 'repository', 'files')
SYSTEM_SSH_PORT = 22
# The packages per package manager: server and client parts.
PACKAGES = {
    'apt': {'server': ['hpnssh-server'], 'client': ['hpnssh-client']},
    'dnf': {'server': ['hpnssh-server'], 'client': ['hpnssh-clients']},
}
FILE_SUFFIX = {'apt': '.deb', 'dnf': '.rpm'}
# Enterprise Linux rebuilds the Copr builds for (epel-N chroots); Fedora is separate.
EL_DISTRIBUTIONS = ('RedHat', 'CentOS', 'Rocky', 'AlmaLinux', 'OracleLinux', 'CentOS Stream')
CHECKSUM = re.compile(r'^(sha1|sha224|sha256|sha384|sha512|md5):([0-9a-fA-F]+)$')
CHECKSUM_HELP = 'algorithm:hex digest, such as sha256:<64 hex digits>'
FILES_HELP = ('a list, each item an absolute path on the controller to a .deb or .rpm file, or a mapping '
              '{url: https://..., checksum: "sha256:<hex>"}')
REPOSITORY_HELP = ('a mapping with url (http://, https:// or file://) and key (the signing key: an https:// or file:// '
                   'URL, a path on the host or the ASCII-armoured key), and for apt suites (default "/") and components '
                   '(default none)')
KEY_HELP = ('an https:// or file:// URL, an absolute path on the host, or the ASCII-armoured key '
            '(-----BEGIN PGP PUBLIC KEY BLOCK-----)')
USERS_HELP = 'a list of user names or patterns (alice, "*@10.0.0.0/8"), without spaces'
PORT_HELP = checks.port_help(default=2222, extra=', other than %d (the system OpenSSH)' % SYSTEM_SSH_PORT)
HOST_KEY_TYPES = ('ed25519', 'rsa', 'ecdsa')

# hpn_ssh_sshd_options: the keywords of sshd_config(5) of OpenSSH 8.0 to 9.9 (with Debian's and Fedora's GSSAPI key
# exchange), and HPN-SSH's server options (HPN-README); sshd reads keywords without regard to case.  The lines the
# role writes itself are set through its own variables (a second line would be ignored: sshd keeps the first value),
# and Match / Include would change the meaning of every line after them.  hpnsshd -t still checks the values.
SSHD_KEYWORDS = frozenset((
    'AcceptEnv', 'AddressFamily', 'AllowAgentForwarding', 'AllowStreamLocalForwarding', 'AllowTcpForwarding',
    'AuthenticationMethods', 'AuthorizedKeysCommand', 'AuthorizedKeysCommandUser', 'AuthorizedPrincipalsCommand',
    'AuthorizedPrincipalsCommandUser', 'AuthorizedPrincipalsFile', 'Banner', 'CASignatureAlgorithms',
    'ChannelTimeout', 'ChrootDirectory', 'Ciphers', 'ClientAliveCountMax', 'ClientAliveInterval', 'Compression',
    'DebianBanner', 'DenyGroups', 'DenyUsers', 'DisableForwarding', 'ExposeAuthInfo', 'FingerprintHash',
    'ForceCommand', 'GatewayPorts', 'GSSAPIAuthentication', 'GSSAPICleanupCredentials', 'GSSAPIKexAlgorithms',
    'GSSAPIKeyExchange', 'GSSAPIStoreCredentialsOnRekey', 'GSSAPIStrictAcceptorCheck', 'HostbasedAcceptedAlgorithms',
    'HostbasedAuthentication', 'HostbasedUsesNameFromPacketOnly', 'HostCertificate', 'HostKeyAgent',
    'HostKeyAlgorithms', 'IgnoreRhosts', 'IgnoreUserKnownHosts', 'IPQoS', 'KerberosAuthentication',
    'KerberosGetAFSToken', 'KerberosOrLocalPasswd', 'KerberosTicketCleanup', 'KexAlgorithms', 'ListenAddress',
    'LoginGraceTime', 'LogLevel', 'LogVerbose', 'MACs', 'MaxAuthTries', 'MaxSessions', 'MaxStartups', 'ModuliFile',
    'PermitListen', 'PermitOpen', 'PermitTTY', 'PermitTunnel', 'PermitUserEnvironment', 'PermitUserRC',
    'PerSourceMaxStartups', 'PerSourceNetBlockSize', 'PrintLastLog', 'PrintMotd', 'PubkeyAcceptedAlgorithms',
    'PubkeyAuthOptions', 'RDomain', 'RekeyLimit', 'RequiredRSASize', 'RevokedKeys', 'SecurityKeyProvider', 'SetEnv',
    'StreamLocalBindMask', 'StreamLocalBindUnlink', 'StrictModes', 'SyslogFacility', 'TCPKeepAlive',
    'TrustedUserCAKeys', 'UnusedConnectionTimeout', 'UseDNS', 'UsePAM', 'VersionAddendum', 'X11DisplayOffset',
    'X11Forwarding', 'X11UseLocalhost', 'XAuthLocation',
    'HPNDisabled', 'NoneMacEnabled', 'TcpRcvBufPoll',
))
# keyword -> how to set it instead (the role writes these lines itself)
SSHD_ROLE_KEYWORDS = {
    'Port': 'hpn_ssh_port', 'HostKey': 'hpn_ssh_host_key_types (or hpn_ssh_reuse_host_keys)',
    'PermitRootLogin': 'hpn_ssh_permit_root_login', 'PasswordAuthentication': 'hpn_ssh_password_authentication',
    'AllowUsers': 'hpn_ssh_allow_users', 'AllowGroups': 'hpn_ssh_allow_groups', 'NoneEnabled': 'hpn_ssh_none_cipher',
    'PidFile': 'nothing (the role\'s unit and its PidFile go together)',
    'KbdInteractiveAuthentication': 'nothing (always no)', 'ChallengeResponseAuthentication': 'nothing (always no)',
    'PermitEmptyPasswords': 'nothing (always no)', 'PubkeyAuthentication': 'nothing (always yes)',
    'AuthorizedKeysFile': 'nothing (.ssh/authorized_keys)', 'Subsystem': 'nothing (sftp is internal-sftp)',
    'Match': 'nothing (a Match block would take in every line after it)',
    'Include': 'nothing (an included file is not checked by the role)',
}
_SSHD_KEYWORDS_LOWER = dict((name.lower(), name) for name in SSHD_KEYWORDS)
_SSHD_ROLE_LOWER = dict((name.lower(), name) for name in SSHD_ROLE_KEYWORDS)
SSHD_OPTIONS_HELP = ('a keyword of sshd_config(5) (OpenSSH 8.0 to 9.9) or an HPN-SSH server option (HPNDisabled, '
                     'NoneMacEnabled, TcpRcvBufPoll), see SSHD_KEYWORDS in plugins/module_utils/transfer/hpnssh.py')


def sshd_option_problems(options, var='hpn_ssh_sshd_options'):
    """One message per key of ``options`` the role cannot write: not a mapping, a keyword sshd does not have, a line
    the role writes itself, or a value that is not one line of text."""
    if not isinstance(options, dict):
        return ['%s: %s is not a mapping of sshd_config keywords to values.' % (var, show_value(options))]
    problems = []
    for key in sorted(options, key=str):
        value, name = options[key], str(key)
        if name.lower() in _SSHD_ROLE_LOWER:
            problems.append('%s: %s is written by the role itself; set %s instead.'
                            % (var, name, SSHD_ROLE_KEYWORDS[_SSHD_ROLE_LOWER[name.lower()]]))
        elif name.lower() not in _SSHD_KEYWORDS_LOWER:
            problems.append('%s: %s is not an sshd_config keyword hpnsshd knows; expected %s.'
                            % (var, show_value(name), SSHD_OPTIONS_HELP))
        elif isinstance(value, (dict, list, tuple)) or value is None or '\n' in str(value) or not str(value).strip():
            problems.append('%s.%s: %s is not one line of text; expected the value as sshd_config(5) writes it, '
                            'such as "20" or "yes".' % (var, name, show_value(value)))
    return problems


SERVER_PROBES = ('HPNDisabled no', 'NoneEnabled no', 'TcpRcvBufPoll yes', 'HPNBufferSize 2048', 'TcpRcvBuf 2048')
CLIENT_PROBES = ('Fallback no', 'FallbackPort 22', 'NoneEnabled no', 'NoneSwitch no', 'HPNDisabled no')
# What OpenSSH-derived parsers say about an option they do not apply (servconf.c / readconf.c).
_REFUSED = re.compile(r'Bad configuration option|Deprecated option|Unsupported option|unsupported option|'
                      r'deprecated option|Unknown option', re.IGNORECASE)
_HPN_VERSION = re.compile(r'hpn(\d+)(?:v|\.)(\d+)(?:\.(\d+))?', re.IGNORECASE)


class PlanError(ValueError):
    """A source that cannot be used on this host, said in words."""


def parse_hpn_version(text):
    """(18, 6, 2) from a version banner such as 'OpenSSH_9.9p2-hpn18.6.2' or 'hpn14v15' (14, 15, 0); None when the
    banner names no HPN version (an OpenSSH without HPN, such as the test stand-in)."""
    match = _HPN_VERSION.search(text or '')
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def probe_verdict(rc, output):
    """Whether a parser accepted a one-option probe: exit code 0 and no complaint about the option (an option a
    build marks deprecated or unsupported is logged and ignored, so it counts as unknown)."""
    return rc == 0 and not _REFUSED.search(output or '')


# ----------------------------------------------------------------------------- inputs

def to_bool(value):
    """A boolean as Ansible's ``bool`` filter reads it (module_utils/common/bdp.py reads it); ValueError for anything else."""
    result = read_bool(value)
    if result is None:
        raise ValueError(value)
    return result


def to_port(value):
    """A TCP port (checks.read_port) other than 22; ValueError otherwise."""
    port = checks.read_port(value)
    if port is None or port == SYSTEM_SSH_PORT:
        raise ValueError(value)
    return port


def file_items(value, name='hpn_ssh_package_files'):
    """The package files as [{'path': ...} or {'url': ..., 'checksum': ...}, each with 'name'], and the problems."""
    problems, items = [], []
    if not isinstance(value, (list, tuple)):
        return [], ['%s: %s is not a list; expected %s.' % (name, show_value(value), FILES_HELP)]
    for index, item in enumerate(value):
        where = '%s[%d]' % (name, index)
        if isinstance(item, str):
            if not item.startswith('/') or not item.endswith(('.deb', '.rpm')) or '\n' in item:
                problems.append('%s: %s is not an absolute path to a .deb or .rpm file; expected %s.'
                                % (where, show_value(item), FILES_HELP))
                continue
            items.append({'path': item, 'name': item.rsplit('/', 1)[-1]})
        elif isinstance(item, dict):
            url, checksum = item.get('url'), item.get('checksum')
            extra = sorted(set(item) - {'url', 'checksum'})
            if (not isinstance(url, str) or not re.match(r'^(https?|ftp|file)://\S+$', url)
                    or not url.split('?')[0].endswith(('.deb', '.rpm'))):
                problems.append('%s.url: %s is not an http(s), ftp or file URL of a .deb or .rpm file; expected %s.'
                                % (where, show_value(url), FILES_HELP))
            elif not isinstance(checksum, str) or not CHECKSUM.match(checksum):
                problems.append('%s.checksum: %s is not a checksum; expected %s (a download is installed only when '
                                'it matches).' % (where, show_value(checksum), CHECKSUM_HELP))
            elif extra:
                problems.append('%s: unknown keys %s; expected only url and checksum.' % (where, ', '.join(extra)))
            else:
                items.append({'url': url, 'checksum': checksum, 'name': url.split('?')[0].rsplit('/', 1)[-1]})
        else:
            problems.append('%s: %s is neither a path nor a mapping; expected %s.'
                            % (where, show_value(item), FILES_HELP))
    return items, problems


def controller_file_problems(value, name='hpn_ssh_package_files', isfile=None, readable=None):
    """The package files given by path that the controller cannot read (the role copies them from there): one
    message each. Runs on the controller only (the validation play's action plugin and the role's input filter)."""
    isfile = isfile or os.path.isfile
    readable = readable or (lambda path: os.access(path, os.R_OK))
    problems = []
    for index, item in enumerate(value if isinstance(value, (list, tuple)) else []):
        if isinstance(item, str) and not file_items([item])[1]:      # a well-formed path (file_items says the rest)
            if not isfile(item):
                problems.append('%s[%d]: "%s" does not exist on the controller (or is not a file); expected %s.'
                                % (name, index, item, FILES_HELP))
            elif not readable(item):
                problems.append('%s[%d]: "%s" cannot be read on the controller; expected %s.'
                                % (name, index, item, FILES_HELP))
    return problems


def repository_problems(value, name='hpn_ssh_repository'):
    """What is wrong with the operator's repository mapping ({} is 'none given')."""
    if value in (None, {}):
        return []
    if not isinstance(value, dict):
        return ['%s: %s is not a mapping; expected %s.' % (name, show_value(value), REPOSITORY_HELP)]
    problems = []
    url, key = value.get('url'), value.get('key')
    if not isinstance(url, str) or not re.match(r'^(https?|file)://\S+$', url):
        problems.append('%s.url: %s is not an http(s) or file URL; expected %s.'
                        % (name, show_value(url), REPOSITORY_HELP))
    if not isinstance(key, str) or not key.strip():
        problems.append('%s.key: %s is missing or empty; the role adds no unsigned repository; expected %s.'
                        % (name, show_value(key), REPOSITORY_HELP))
    elif not re.match(r'^(https://\S+|file:///\S+|/\S+)$', key.strip()) and not key.strip().startswith('-----BEGIN'):
        # the key is what makes the repository trustworthy: fetched over plain http (or ftp), anyone on the path
        # could replace it together with the packages
        problems.append('%s.key: %s is not a key the role can trust; expected %s. A signing key is fetched only over '
                        'https, never plain http.' % (name, show_value(key), KEY_HELP))
    suites = value.get('suites', '/')
    if not isinstance(suites, str) or not suites.strip() or ' ' in suites.strip():
        problems.append('%s.suites: %s is not one suite; expected a suite name or "/" (a flat repository).'
                        % (name, show_value(suites)))
    components = value.get('components', [])
    if not isinstance(components, (list, tuple)) or not all(isinstance(c, str) and c for c in components):
        problems.append('%s.components: %s is not a list of component names.' % (name, show_value(components)))
    extra = sorted(set(value) - {'url', 'key', 'suites', 'components'})
    if extra:
        problems.append('%s: unknown keys %s; expected url, key, suites, components.' % (name, ', '.join(extra)))
    return problems


def check_inputs(values):
    """Every problem with the role's inputs (``values``: variable -> value, as set), one message each; [] if none.

    Needs no facts: the source a distribution allows is checked by plan() once the facts are known.
    """
    problems = []
    state = values.get('hpn_ssh_state', 'present')
    if state not in ('present', 'absent'):
        problems.append('hpn_ssh_state: %s is not one of the choices; expected present or absent.' % show_value(state))
    source = values.get('hpn_ssh_source', 'auto')
    if source not in SOURCES:
        problems.append('hpn_ssh_source: %s is not one of the choices; expected one of %s.'
                        % (show_value(source), ', '.join(SOURCES)))
    for var in ('hpn_ssh_server', 'hpn_ssh_client', 'hpn_ssh_reuse_host_keys', 'hpn_ssh_none_cipher',
                'hpn_ssh_firewall', 'hpn_ssh_password_authentication'):
        if var in values:
            try:
                to_bool(values[var])
            except ValueError:
                problems.append('%s: %s is not a boolean; expected %s.' % (var, show_value(values[var]), BOOL_HELP))
    if 'hpn_ssh_port' in values:
        try:
            to_port(values['hpn_ssh_port'])
        except ValueError:
            problems.append('hpn_ssh_port: %s is not usable; expected %s.'
                            % (show_value(values['hpn_ssh_port']), PORT_HELP))
    for var in ('hpn_ssh_allow_users', 'hpn_ssh_allow_groups'):
        value = values.get(var, [])
        if not isinstance(value, (list, tuple)):
            problems.append('%s: %s is not a list; expected %s.' % (var, show_value(value), USERS_HELP))
            continue
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item or re.search(r'[\s#"]', item):
                problems.append('%s[%d]: %s is not a name or pattern; expected %s.'
                                % (var, index, show_value(item), USERS_HELP))
    root = values.get('hpn_ssh_permit_root_login', 'no')
    if root not in ('no', 'prohibit-password', 'forced-commands-only'):
        problems.append('hpn_ssh_permit_root_login: %s is not one of the choices; expected no, prohibit-password or '
                        'forced-commands-only (password logins for root are never written).' % show_value(root))
    dummy, file_problems = file_items(values.get('hpn_ssh_package_files', []))
    problems.extend(file_problems)
    problems.extend(repository_problems(values.get('hpn_ssh_repository', {})))
    if source == 'files' and not values.get('hpn_ssh_package_files'):
        problems.append('hpn_ssh_source: files, but hpn_ssh_package_files is empty; expected %s.' % FILES_HELP)
    if source == 'repository' and not values.get('hpn_ssh_repository'):
        problems.append('hpn_ssh_source: repository, but hpn_ssh_repository is empty; expected %s.' % REPOSITORY_HELP)
    types = values.get('hpn_ssh_host_key_types', ['ed25519'])
    if (not isinstance(types, (list, tuple)) or not types
            or not all(isinstance(kind, str) and kind in HOST_KEY_TYPES for kind in types)):
        problems.append('hpn_ssh_host_key_types: %s is not usable; expected a non-empty list of %s.'
                        % (show_value(types), ', '.join(HOST_KEY_TYPES)))
    problems.extend(sshd_option_problems(values.get('hpn_ssh_sshd_options', {})))
    return problems


# ----------------------------------------------------------------------------- source selection

def package_manager(facts):
    """'apt' or 'dnf' from the facts (os_family, pkg_mgr); None for anything else."""
    family = facts.get('os_family')
    if family == 'Debian':
        return 'apt'
    if family == 'RedHat' or facts.get('pkg_mgr') in ('dnf', 'dnf5'):
        return 'dnf'
    return None


def auto_source(facts):
    """The public source for this distribution: ppa on Ubuntu, copr on Fedora and Enterprise Linux 8 and later, None
    elsewhere (Debian: the operator's repository or files)."""
    distribution = facts.get('distribution')
    if distribution == 'Ubuntu':
        return 'ppa'
    if distribution == 'Fedora':
        return 'copr'
    if distribution in EL_DISTRIBUTIONS:
        major = str(facts.get('distribution_major_version', ''))
        if major.isdigit() and int(major) >= 8:
            return 'copr'
    return None


def plan(facts, source='auto', files=None, repository=None, server=True, client=True, packages=None):
    """What the role installs from where on the host these facts describe; PlanError when it cannot.

    Returns {'source', 'manager', 'distribution', 'packages', 'files', 'repository', 'reason'}.
    """
    facts = facts or {}
    distribution = ('%s %s' % (facts.get('distribution', '?'), facts.get('distribution_version', ''))).strip()
    manager = package_manager(facts)
    if manager is None:
        raise PlanError('HPN-SSH cannot be installed on %s (os_family %s): the role knows apt (Debian, Ubuntu) and '
                        'dnf (Fedora, Enterprise Linux) hosts.' % (distribution, facts.get('os_family', '?')))
    items, problems = file_items(files or [])
    if problems:
        raise PlanError(' '.join(problems))
    chosen, reason = source, 'hpn_ssh_source is %s' % source
    if source == 'auto':
        chosen = auto_source(facts)
        if chosen:
            reason = 'the public %s for %s' % ('PPA rapier1/hpnssh' if chosen == 'ppa' else 'Copr rapier1/hpnssh',
                                               facts.get('distribution'))
        elif repository:
            chosen, reason = 'repository', 'no PPA or Copr for %s: the repository in hpn_ssh_repository' % distribution
        elif items:
            chosen, reason = 'files', 'no PPA or Copr for %s: the files in hpn_ssh_package_files' % distribution
        else:
            raise PlanError('There is no public HPN-SSH package source for %s (the PPA is for Ubuntu, the Copr for '
                            'Fedora and Enterprise Linux). Give hpn_ssh_repository (a package repository you trust) or '
                            'hpn_ssh_package_files (.%s files, by path or by URL with a checksum). The project does '
                            'not build HPN-SSH from source.' % (distribution, FILE_SUFFIX[manager][1:]))
    if chosen == 'ppa' and facts.get('distribution') != 'Ubuntu':
        raise PlanError('hpn_ssh_source: ppa, but %s is not Ubuntu; a Launchpad PPA is built for Ubuntu releases only. '
                        'Use repository or files.' % distribution)
    if chosen == 'copr' and manager != 'dnf':
        raise PlanError('hpn_ssh_source: copr, but %s does not use dnf; Copr builds are for Fedora and Enterprise '
                        'Linux. Use repository or files.' % distribution)
    if chosen == 'repository' and not repository:
        raise PlanError('hpn_ssh_source: repository, but hpn_ssh_repository is empty; expected %s.' % REPOSITORY_HELP)
    if chosen == 'files':
        if not items:
            raise PlanError('hpn_ssh_source: files, but hpn_ssh_package_files is empty; expected %s.' % FILES_HELP)
        wrong = [item['name'] for item in items if not item['name'].endswith(FILE_SUFFIX[manager])]
        if wrong:
            raise PlanError('hpn_ssh_package_files: %s %s not %s files, which %s installs.'
                            % (', '.join(wrong), 'is' if len(wrong) == 1 else 'are', FILE_SUFFIX[manager], manager))
    wanted = list(packages or [])
    if not wanted and chosen != 'files':
        for part, enabled in (('server', server), ('client', client)):
            if enabled:
                wanted.extend(PACKAGES[manager][part])
    return {
        'source': chosen,
        'manager': manager,
        'distribution': distribution,
        'packages': wanted,
        'files': items if chosen == 'files' else [],
        'repository': dict(repository) if chosen == 'repository' else {},
        'reason': reason,
    }


# ----------------------------------------------------------------------------- what an installation installed

_APT_NEW = re.compile(r'^The following NEW packages will be installed:\n((?:[ \t]+\S.*\n?)+)', re.M)
_DPKG_NEW = re.compile(r'^Selecting previously unselected package ([a-z0-9][a-z0-9+.-]*?)(?::[a-z0-9]+)?\.?$', re.M)
_DNF_INSTALLED = re.compile(r'^Installed: (\S+)$')


def _rpm_name(nevra):
    """'hpnssh-server' from 'hpnssh-server-1:18.6.2-1.fc41.x86_64' (name-[epoch:]version-release.arch)."""
    without_arch = nevra.rsplit('.', 1)[0] if '.' in nevra.rsplit('-', 1)[-1] else nevra
    return without_arch.rsplit('-', 2)[0]


def reported_installs(results):
    """The packages that the package manager said it newly installed, from the registered results of the role's
    install tasks (ansible.builtin.package/apt: stdout of apt-get and dpkg; dnf: 'Installed: NEVRA' in results)."""
    names = set()
    for result in results or []:
        if not isinstance(result, dict):
            continue
        nested = result.get('results')
        if isinstance(nested, list) and any(isinstance(item, dict) for item in nested):
            names.update(reported_installs(nested))         # a loop's items
        stdout = result.get('stdout') or ''
        for block in _APT_NEW.findall(stdout):
            names.update(word.split(':')[0] for word in block.split())
        names.update(_DPKG_NEW.findall(stdout))
        for line in nested if isinstance(nested, list) else []:
            match = _DNF_INSTALLED.match(line) if isinstance(line, str) else None
            if match:
                names.add(_rpm_name(match.group(1)))
    return sorted(names)


def packages_to_record(requested, reported, before, after):
    """{'packages': [...], 'dependencies': [...]}: what the role may remove again with state=absent.

    Only packages that are new on the host (in ``after``, not in ``before``: package_facts) and that the role asked
    for by name (``requested``) or that the package manager reported as installed by the role's own transaction
    (``reported``, reported_installs()). A package that appeared meanwhile for another reason (unattended-upgrades)
    is neither.
    """
    new = set(after or []) - set(before or [])
    packages = sorted(new & set(requested or []))
    dependencies = sorted((new & set(reported or [])) - set(packages))
    return {'packages': packages, 'dependencies': dependencies}


def removal_problems(simulated, allowed):
    """The packages a simulated removal (apt-get -s purge: 'Purg NAME ...' / 'Remv NAME ...' lines) would take away
    besides ``allowed``: removing a dependency would also remove a package the role did not install."""
    gone = set(re.findall(r'^(?:Purg|Remv) (\S+)', simulated or '', re.M))
    return sorted(name.split(':')[0] for name in gone if name.split(':')[0] not in set(allowed))


# ----------------------------------------------------------------------------- configuration text

def _yes(flag):
    return 'yes' if flag else 'no'


def server_lines(settings, known):
    """[(keyword, value)] for /etc/hpnssh/sshd_config, and the HPN options left out because the binary does not know
    them.  ``settings``: port, host_keys, permit_root_login, password_authentication, allow_users, allow_groups,
    none_cipher, sftp, pid_file, extra (a mapping).  ``known``: the HPN options the installed hpnsshd accepts."""
    lines = [('Port', str(to_port(settings['port'])))]
    for key in settings.get('host_keys', []):
        lines.append(('HostKey', key))
    lines.extend([
        ('PidFile', settings.get('pid_file', '/run/hpnsshd.pid')),
        ('PermitRootLogin', settings.get('permit_root_login', 'no')),
        ('PasswordAuthentication', _yes(settings.get('password_authentication', False))),
        ('KbdInteractiveAuthentication', 'no'),
        ('PermitEmptyPasswords', 'no'),
        ('PubkeyAuthentication', 'yes'),
        ('AuthorizedKeysFile', '.ssh/authorized_keys'),
    ])
    if settings.get('allow_users'):
        lines.append(('AllowUsers', ' '.join(settings['allow_users'])))
    if settings.get('allow_groups'):
        lines.append(('AllowGroups', ' '.join(settings['allow_groups'])))
    lines.append(('Subsystem', 'sftp %s' % settings.get('sftp', 'internal-sftp')))
    dropped = []
    wanted = [('NoneEnabled', _yes(settings.get('none_cipher', False)))]
    for keyword, value in wanted:
        if keyword in known:
            lines.append((keyword, value))
        elif value == 'yes':
            dropped.append(keyword)
    for keyword, value in sorted((settings.get('extra') or {}).items()):
        # YAML reads yes/no as booleans; sshd_config wants the words
        lines.append((str(keyword), _yes(value) if isinstance(value, bool) else str(value)))
    return lines, dropped


def client_lines(settings, known):
    """[(keyword, value)] for /etc/hpnssh/ssh_config (a Host * block), and whether Fallback had to be guarded.

    Fallback no is always written: with it a missing hpnsshd is an error instead of a silent transfer over port 22 at
    the stock window.  A client that does not know Fallback (older than HPN 17v3, or the stand-in, which is OpenSSH)
    has no fallback to turn off; IgnoreUnknown then lets it read the file.
    """
    lines = []
    guarded = [keyword for keyword in ('Fallback',) if keyword not in known]
    if guarded:
        lines.append(('IgnoreUnknown', ','.join(guarded)))
    lines.append(('Port', str(to_port(settings['port']))))
    lines.append(('Fallback', 'no'))
    dropped = []
    if settings.get('none_cipher'):
        if 'NoneEnabled' in known:
            lines.append(('NoneEnabled', 'yes'))
        else:
            dropped.append('NoneEnabled')
    return lines, guarded, dropped


def render(lines, header='', host_block=False):
    """The configuration text: the header (comment lines), then one 'Keyword value' per line."""
    text = header.rstrip('\n') + '\n' if header else ''
    if host_block:
        text += 'Host *\n'
    indent = '    ' if host_block else ''
    for keyword, value in lines:
        if '\n' in keyword or '\n' in value:
            raise ValueError('a configuration value may not contain a newline: %r %r' % (keyword, value))
        text += '%s%s %s\n' % (indent, keyword, value)
    return text
