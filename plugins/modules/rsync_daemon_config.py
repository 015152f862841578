#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: rsync_daemon_config
short_description: Write rsyncd.conf and the secrets file for the rsync daemon, or restore what was there
version_added: 0.2.0
description:
  - Checks the settings with the rules of the filter bdp.wan_tune.rsync_daemon_problems and fails before writing
    anything when one is not usable; also fails when a module path is not a directory on the host.
  - "Writes O(conf_path) with secure defaults: C(use chroot), C(list = no), C(reverse lookup = no), C(read only) unless
    a module says otherwise, C(hosts allow) and C(hosts deny = *) for every module, C(max connections) of at least
    the planned streams (C(streams)), and C(auth digest) only where the installed rsync knows it and offers the digest."
  - Writes O(secrets_path) (root, mode 0600 from its first byte); its content never appears in a diff, the result or
    the host's log. The passwords are never module arguments. The action plugin of the same name renders the secrets
    file on the controller and hands it to the module in a file in Ansible's private remote tmp dir (O(secrets_src));
    the module receives the user names only.
  - It records copies of a pre-existing O(conf_path) and O(secrets_path), and whether the service was enabled and
    active; O(state=absent) also reports the service's earlier state.
  - Reports the installed rsync (upstream and package version) and whether it has the fixes for CVE-2024-12084 to
    CVE-2024-12088 and CVE-2024-12747, taking the distribution's backports into account (versions ordered by the
    host's C(dpkg --compare-versions), or rpm's vercmp on a host without dpkg); warns when it has not.
  - RV(restart_needed) says whether a setting the daemon reads only at start-up (port, address, socket options)
    changed; modules are read again on every connection.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  state:
    description: V(present) writes the files; V(absent) restores what was there before the first change.
    type: str
    choices: [present, absent]
    default: present
  settings:
    description:
      - The daemon's settings, keyed as the role's variables without the prefix C(rsync_daemon_), for example
        C(modules) for C(rsync_daemon_modules); P(bdp.wan_tune.rsync_daemon#role) documents each (the keys are
        C(SETTINGS) in C(module_utils/transfer/rsyncd.py)). A setting left out takes the module's default.
      - The passwords of C(users) (V({name, password})) are checked on the controller and written into the secrets
        file there; the module receives the user names only, and refuses a password. Where C(users) is left out, the
        action plugin reads the host's variable C(rsync_daemon_users), so that a password is never a task argument
        either (the role passes it so).
    type: dict
    default: {}
  secrets_src:
    description: Internal, set by the action plugin; the rendered secrets file in Ansible's remote tmp dir, removed
      by the module. Setting it in a task is refused.
    type: path
  transport:
    description: V(tls) (stunnel starts rsync for each TLS connection and hands it the client's address, so each
      module's C(hosts allow) holds; nothing listens on the plain port), V(plain) or V(both). Only the comment at
      the top of the file says which.
    type: str
    choices: [tls, plain, both]
    default: tls
  tls_port:
    description: The TLS port, for the comment.
    type: int
    default: 874
  conf_path:
    description: The daemon's configuration file.
    type: path
    default: /etc/rsyncd.conf
  secrets_path:
    description: The secrets file.
    type: path
    default: /etc/rsyncd.secrets
  service:
    description: The daemon's systemd unit, whose earlier state is recorded before the first change.
    type: str
    default: rsync.service
  header:
    description: Comment lines at the top of O(conf_path) (for example C(ansible_managed)).
    type: str
    default: ''
extends_documentation_fragment:
  - bdp.wan_tune.attributes
  - bdp.wan_tune.state_dir
  - ansible.builtin.action_common_attributes
notes:
  - rsync daemon traffic is not encrypted. Use it on a private circuit, a VPN or IPsec, otherwise rsync over SSH.
"""

EXAMPLES = r"""
- name: Write the daemon's configuration (the users with their passwords from the host's rsync_daemon_users)
  bdp.wan_tune.rsync_daemon_config:
    settings:
      modules:
        - {name: incoming, path: /srv/incoming, read_only: false, auth_users: [migrate], hosts_allow: [198.18.3.1]}
      streams: 4
    transport: tls
  register: rsync_daemon_result

- name: The same from a list of its own (no users given, so their passwords come from the host's rsync_daemon_users)
  bdp.wan_tune.rsync_daemon_config:
    settings:
      modules:
        - name: incoming
          path: /srv/incoming
          read_only: false
          auth_users: [migrate]
          hosts_allow: [198.18.3.0/24]
      streams: 8
"""

RETURN = r"""
restart_needed:
  description: A setting read only at start-up changed (or the file is new).
  returned: state=present
  type: bool
version:
  description: The installed rsync.
  returned: always
  type: dict
  contains:
    upstream:
      description: The version from C(rsync --version), or null when rsync is not installed.
      type: str
    package:
      description: The distribution package's version, or null.
      type: str
    auth_digest_supported:
      description: Whether this rsync knows the C(auth digest) parameter.
      type: bool
    auth_list:
      description: The digests listed as the daemon auth list.
      type: list
      elements: str
cve:
  description: Whether the installed rsync has the fixes for the 2024-2025 CVEs.
  returned: always
  type: dict
  contains:
    fixed:
      description: true, false, or null when unknown.
      type: bool
    reason:
      description: Why.
      type: str
    cves:
      description: The CVEs judged.
      type: list
      elements: str
auth_digest:
  description: The C(auth digest) written, or empty with the reason in RV(auth_digest_note).
  returned: state=present
  type: str
auth_digest_note:
  description: Why no C(auth digest) was written, when none was.
  returned: state=present
  type: str
modules:
  description: The modules as written (name, path, read_only, auth_users, hosts_allow, max_connections, ...).
  returned: state=present
  type: list
  elements: dict
check_mode:
  description: Whether the module ran in check mode (also when a task or an include set it, which C(ansible_check_mode)
    does not show).
  returned: always
  type: bool
rc_links_before:
  description: The unit's init script links (C(/etc/rc?.d/S01rsync) and the like) before the first change, as
    recorded then, for the role to put back after it restores the enablement (C(update-rc.d disable) turns S links
    into K links). Null when the record has none (written by an earlier version).
  returned: state=absent
  type: list
  elements: str
service_before:
  description: The service's state before the first change, C(enabled) and C(active) (null when unknown).
  returned: always
  type: dict
files:
  description: What happened to each file (written, unchanged, restored, removed).
  returned: always
  type: dict
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.common import files
from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsyncd

RECORD = 'rsync_daemon.json'
SECRETS_SHOWN = '(the secrets file: %d users; its content is not shown)\n'


def os_release():
    values = {}
    for line in (files.read_text('/etc/os-release') or '').split('\n'):
        if '=' in line:
            key, value = line.split('=', 1)
            values[key] = value.strip().strip('"')
    return values


def installed(module, os_info):
    """The installed rsync: upstream and package versions, auth digest support, and the CVE verdict."""
    info = {'upstream': None, 'package': None, 'auth_digest_supported': False, 'auth_list': []}
    changelog = ''
    binary = module.get_bin_path('rsync')
    if binary:
        rc, out, err = module.run_command([binary, '--version'])
        info['upstream'] = rsyncd.upstream_version(out)
        info['auth_list'] = rsyncd.auth_list(out)
        try:
            with open(os.path.realpath(binary), 'rb') as handle:
                info['auth_digest_supported'] = b'auth digest' in handle.read()
        except (IOError, OSError):
            pass
    dpkg, rpm = module.get_bin_path('dpkg-query'), module.get_bin_path('rpm')
    if dpkg:
        rc, out, err = module.run_command([dpkg, '-W', '-f', '${db:Status-Abbrev}${Version}', 'rsync'])
        if rc == 0 and out.startswith('ii'):
            info['package'] = out[2:].strip()
            rc, out, err = module.run_command('zcat /usr/share/doc/rsync/changelog.Debian.gz', use_unsafe_shell=False)
            changelog = out if rc == 0 else ''
    elif rpm:
        rc, out, err = module.run_command([rpm, '-q', '--qf', '%{EPOCHNUM}:%{VERSION}-%{RELEASE}', 'rsync'])
        if rc == 0:
            info['package'] = out.strip()
            rc, out, err = module.run_command([rpm, '-q', '--changelog', 'rsync'])
            changelog = out if rc == 0 else ''
    cve = rsyncd.cve_status(info['upstream'], info['package'], os_info.get('ID'), os_info.get('VERSION_ID'),
                            changelog, lambda version, floor: rsyncd.version_at_least(module, version, floor))
    cve['cves'] = list(rsyncd.CVES)
    return info, cve


def rc_links(service):
    """The init script links of ``service`` in /etc/rc?.d (sorted paths; [] where there are none)."""
    name = service[:-len('.service')] if service.endswith('.service') else service
    return sorted(glob.glob('/etc/rc[0-6S].d/[SK][0-9][0-9]%s' % glob.escape(name)))


def service_state(module, service):
    systemctl = module.get_bin_path('systemctl')
    if not systemctl:
        return {'enabled': None, 'active': None}
    rc_enabled, out_enabled, err = module.run_command([systemctl, 'is-enabled', service])
    rc_active, out_active, err = module.run_command([systemctl, 'is-active', service])
    return {'enabled': out_enabled.strip() == 'enabled', 'active': out_active.strip() == 'active'}


def copy_file(module, src, dest):
    """Copy ``src`` to ``dest`` with its mode and owner, never wider on the way (a secrets file stays 0600 from the
    first byte); whether there was a file."""
    data = files.read_bytes(src)
    if data is None:
        return False
    directory = os.path.dirname(dest)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    stat = os.stat(src)
    files.write_atomic(module, dest, data, mode=stat.st_mode & 0o7777, owner=stat.st_uid, group=stat.st_gid)
    return True


def present(module, params, result, secrets):
    """``secrets``: the secrets file's bytes, as the action plugin rendered them."""
    plan, problems = rsyncd.check(params['settings'], passwords=False)
    if problems:
        module.fail_json(msg='The rsync daemon settings are not usable (nothing was changed):\n'
                         + '\n'.join('- ' + item for item in problems), **result)
    missing = [item['path'] for item in plan['modules'] if not os.path.isdir(item['path'])]
    if missing:
        module.fail_json(msg='Module paths that are not directories on this host: %s. Create them (owned by the '
                         "module's uid/gid for a writable module) first; nothing was changed." % ', '.join(missing),
                         **result)
    version = result['version']
    digest, note = plan['auth_digest'], ''
    if digest and not version['auth_digest_supported']:
        digest, note = '', 'rsync %s does not know the auth digest parameter' % (version['upstream'] or '?')
    elif digest and digest not in version['auth_list']:
        digest, note = '', 'this rsync does not offer %s (daemon auth list: %s)' % (
            plan['auth_digest'], ' '.join(version['auth_list']) or 'none')
    text = rsyncd.render_config(dict(plan, auth_digest=digest), params['header'], params['secrets_path'],
                                transport=params['transport'], tls_port=params['tls_port'])
    old_text = files.read_text(params['conf_path'])
    old_secrets = files.read_bytes(params['secrets_path'])
    secrets_ok = files.secret_unchanged(params['secrets_path'], secrets)
    result.update(auth_digest=digest, auth_digest_note=note, modules=plan['modules'],
                  restart_needed=old_text != text and rsyncd.restart_needed(old_text, text))
    result['files'] = {params['conf_path']: 'unchanged' if old_text == text else 'written',
                       params['secrets_path']: 'unchanged' if secrets_ok else 'written'}
    result['changed'] = old_text != text or not secrets_ok
    if result['changed'] and module._diff:
        result['diff'] = [{'before_header': params['conf_path'], 'after_header': params['conf_path'],
                           'before': old_text or '', 'after': text}]
        if not secrets_ok:
            result['diff'].append({'before_header': params['secrets_path'], 'after_header': params['secrets_path'],
                                   'before': SECRETS_SHOWN % old_secrets.count(b'\n') if old_secrets else '',
                                   'after': SECRETS_SHOWN % len(plan['users'])
                                   + ('(owner root, mode 0600)\n' if old_secrets else '')})
    if not result['changed'] or module.check_mode:
        return
    record_path = os.path.join(params['state_dir'], RECORD)
    record = files.load_record(record_path)
    if not record:
        copies = os.path.join(params['state_dir'], 'rsync_daemon')
        conf_kept = copy_file(module, params['conf_path'], os.path.join(copies, 'rsyncd.conf'))
        secrets_kept = copy_file(module, params['secrets_path'], os.path.join(copies, 'rsyncd.secrets'))
        record = {
            'conf': {'path': params['conf_path'], 'existed': conf_kept},
            'secrets': {'path': params['secrets_path'], 'existed': secrets_kept},
            'service': service_state(module, params['service']),
            'rc_links': rc_links(params['service']),
        }
        files.save_record(module, record_path, record)
    result['service_before'] = record.get('service', {})
    files.write_atomic(module, params['secrets_path'], secrets, mode=0o600, owner=0, group=0)
    files.write_atomic(module, params['conf_path'], text, mode=0o644)


def absent(module, params, result):
    record_path = os.path.join(params['state_dir'], RECORD)
    record = files.load_record(record_path)
    copies = os.path.join(params['state_dir'], 'rsync_daemon')
    result['service_before'] = record.get('service', {'enabled': None, 'active': None})
    result['rc_links_before'] = record.get('rc_links')
    result['files'] = {}
    if not record:
        return
    result['changed'] = True
    for key, name in (('conf', 'rsyncd.conf'), ('secrets', 'rsyncd.secrets')):
        entry = record.get(key) or {}
        path, copy = entry.get('path'), os.path.join(copies, name)
        if not path:
            continue
        existed = entry.get('existed') and os.path.exists(copy)
        result['files'][path] = 'restored' if existed else 'removed'
        if module._diff and key == 'conf':
            result['diff'] = {'before_header': path, 'after_header': path, 'before': files.read_text(path) or '',
                              'after': files.read_text(copy) or '' if existed else ''}
        if module.check_mode:
            continue
        if existed:
            copy_file(module, copy, path)
            os.unlink(copy)
        elif os.path.exists(path):
            os.unlink(path)
    if not module.check_mode:
        if os.path.isdir(copies) and not os.listdir(copies):
            os.rmdir(copies)
        files.save_record(module, record_path, {})


# The options; the action plugin refuses any other before it sends anything to the host.
ARGUMENT_SPEC = dict(
    state=dict(type='str', choices=['present', 'absent'], default='present'),
    # rsyncd.SETTINGS, as the role's task gives them; the users by name only (the passwords come in secrets_src, a
    # password given here is refused)
    settings=dict(type='dict', default={}),
    secrets_src=dict(type='path'),
    transport=dict(type='str', choices=['tls', 'plain', 'both'], default=rsyncd.TRANSPORT),
    tls_port=dict(type='int', default=rsyncd.TLS_PORT),
    conf_path=dict(type='path', default='/etc/rsyncd.conf'),
    secrets_path=dict(type='path', default='/etc/rsyncd.secrets', no_log=False),
    service=dict(type='str', default='rsync.service'),
    header=dict(type='str', default=''),
    state_dir=dict(type='path', default=files.STATE_DIR),
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    params = module.params
    # Taken (and removed from the remote tmp dir) first, so that it is gone whatever happens next.
    secrets = files.take_secret(params['secrets_src']) if params['secrets_src'] else None
    users = params['settings'].get('users')
    if isinstance(users, list) and any(isinstance(user, dict) and 'password' in user for user in users):
        module.fail_json(msg='settings.users: a password reached the module as an argument; only the action plugin '
                         'bdp.wan_tune.rsync_daemon_config may call it (it hands the passwords over in a file). '
                         'Nothing was changed.')
    version, cve = installed(module, os_release())
    result = {'changed': False, 'version': version, 'cve': cve, 'check_mode': module.check_mode,
              'service_before': files.load_record(os.path.join(params['state_dir'], RECORD)).get(
                  'service', {'enabled': None, 'active': None})}
    if params['state'] == 'present':
        if cve['fixed'] is False:
            module.warn('The installed rsync lacks the fixes for %s: %s.' % (', '.join(rsyncd.CVES), cve['reason']))
        elif cve['fixed'] is None and (version['upstream'] or version['package']):
            module.warn('Whether the installed rsync has the fixes for %s is unknown: %s. Compare its version with '
                        'the distribution\'s security updates (first fixed upstream release %s).'
                        % (', '.join(rsyncd.CVES), cve['reason'], rsyncd.FIRST_FIXED_UPSTREAM))
        if secrets is None:
            module.fail_json(msg='No secrets file was handed over (secrets_src): run the module through its action '
                             'plugin, as the role does. Nothing was changed.', **result)
        present(module, params, result, secrets)
    else:
        absent(module, params, result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
