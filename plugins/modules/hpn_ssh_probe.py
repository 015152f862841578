#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: hpn_ssh_probe
short_description: Ask the installed HPN-SSH binaries which options they know, and find their systemd unit
version_added: 0.2.0
description:
  - Reads the version banner of O(server_binary) and O(client_binary) (C(-V)) and the HPN-SSH version in it, if any.
  - Asks each binary, option by option, whether it accepts the HPN-SSH options the P(bdp.wan_tune.hpn_ssh#role) role
    may write. The server is asked with C(hpnsshd -t -f) on a probe file holding a throw-away host key and the
    option; the client with C(hpnssh -G -F) on a probe file. An option counts as known when the binary exits 0 and
    does not call it bad, deprecated or unsupported (OpenSSH logs and ignores deprecated options). The probe files
    and the key are made in a temporary directory and removed; nothing on the host changes.
  - The answer comes from the binary, not from a version table, so an option is written only where the installed
    version knows it (HPNBufferSize and TcpRcvBuf are gone since HPN-SSH 18.2, and an unknown option stops
    the daemon).
  - Finds the first of O(services) that systemd has loaded, and which of O(sockets) are loaded.
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
options:
  server_binary:
    description: The HPN-SSH daemon.
    type: path
    default: /usr/sbin/hpnsshd
  client_binary:
    description: The HPN-SSH client.
    type: path
    default: /usr/bin/hpnssh
  keygen_binary:
    description: The key generator used for the probe's throw-away host key; C(ssh-keygen) from C(PATH) when missing.
    type: path
    default: /usr/bin/hpnssh-keygen
  services:
    description: Unit names the server may be installed as, in order of preference.
    type: list
    elements: str
    default: [hpnssh.service, hpnsshd.service]
  sockets:
    description: Socket units of the packages, reported when loaded (the role keeps them stopped).
    type: list
    elements: str
    default: [hpnssh.socket, hpnsshd.socket]
extends_documentation_fragment:
  - bdp.wan_tune.attributes.no_diff
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Which HPN options does the installed HPN-SSH know
  bdp.wan_tune.hpn_ssh_probe:
  register: hpn

- name: Show them
  ansible.builtin.debug:
    msg: "{{ hpn.server.known }} {{ hpn.client.known }} {{ hpn.service }}"
"""

RETURN = r"""
server:
  description: The daemon.
  returned: always
  type: dict
  contains:
    installed:
      description: Whether O(server_binary) exists and is executable.
      type: bool
    version:
      description: Its version banner (first line of C(-V)).
      type: str
    hpn_version:
      description: The HPN-SSH version in the banner as major, minor, patch; null for an OpenSSH without HPN.
      type: list
      elements: int
    known:
      description: The probed HPN options it accepts.
      type: list
      elements: str
    refused:
      description: The probed HPN options it refuses, each with what the binary said.
      type: dict
    error:
      description: Why it could not be probed (empty when it could).
      type: str
  sample:
    installed: true
    version: OpenSSH_9.9p2-hpn18.6.2
    hpn_version: [18, 6, 2]
    known: [HPNDisabled, NoneEnabled, TcpRcvBufPoll]
    refused: {HPNBufferSize: "line 3: Bad configuration option: HPNBufferSize"}
    error: ""
client:
  description: The client, with the same keys as RV(server).
  returned: always
  type: dict
service:
  description: The loaded unit of the server (empty when none of O(services) is loaded).
  returned: always
  type: str
  sample: hpnssh.service
sockets:
  description: The loaded socket units among O(sockets).
  returned: always
  type: list
  elements: str
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import hpnssh


def _run(module, argv):
    rc, out, err = module.run_command(argv)
    return rc, (out or '') + (err or '')


def _banner(module, binary):
    dummy, text = _run(module, [binary, '-V'])
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0].strip() if lines else ''


def _installed(module, binary):
    """A probe's result so far: whether ``binary`` exists and is executable, and its version."""
    result = {'installed': False, 'version': '', 'hpn_version': None, 'known': [], 'refused': {}, 'error': ''}
    if os.path.isfile(binary) and os.access(binary, os.X_OK):
        result.update(installed=True, version=_banner(module, binary))
        version = hpnssh.parse_hpn_version(result['version'])
        result['hpn_version'] = list(version) if version else None
    return result


def _check(module, path, text, argv):
    """(rc, output) of ``argv`` on the configuration ``path`` holding ``text``."""
    with open(path, 'w') as handle:
        handle.write(text)
    return _run(module, argv)


def _ask(module, result, path, argv, base, probes):
    """``result`` with each option of ``probes`` known or refused, checked alone after ``base``."""
    for option in probes:
        rc, text = _check(module, path, base + option + '\n', argv)
        if hpnssh.probe_verdict(rc, text):
            result['known'].append(option.split()[0])
        else:
            result['refused'][option.split()[0]] = ' '.join(text.split())
    return result


def probe_server(module, binary, keygen, workdir):
    """{'installed', 'version', 'hpn_version', 'known', 'refused', 'error'} for the daemon."""
    result = _installed(module, binary)
    if not result['installed']:
        return result
    key = os.path.join(workdir, 'probe_host_key')
    generator = keygen if os.path.isfile(keygen) else module.get_bin_path('ssh-keygen')
    if not generator:
        result['error'] = 'no key generator (%s or ssh-keygen) for the probe host key' % keygen
        return result
    rc, text = _run(module, [generator, '-q', '-t', 'ed25519', '-N', '', '-f', key])
    if rc != 0:
        result['error'] = 'could not make the probe host key: %s' % text.strip()
        return result
    base = 'HostKey %s\nPidFile %s\n' % (key, os.path.join(workdir, 'probe.pid'))
    path = os.path.join(workdir, 'sshd_config')
    argv = [binary, '-t', '-f', path]
    rc, text = _check(module, path, base, argv)
    if not hpnssh.probe_verdict(rc, text):
        result['error'] = '%s -t refuses a configuration with no HPN option (exit %d): %s' % (
            binary, rc, ' '.join(text.split()))
        return result
    return _ask(module, result, path, argv, base, hpnssh.SERVER_PROBES)


def probe_client(module, binary, workdir):
    """The same for the client, asked with -G (print the configuration and exit)."""
    result = _installed(module, binary)
    if not result['installed']:
        return result
    path = os.path.join(workdir, 'ssh_config')
    argv = [binary, '-G', '-F', path, 'probe.invalid']
    rc, text = _check(module, path, '\n', argv)
    if rc != 0:
        result['error'] = '%s -G refuses an empty configuration (exit %d): %s' % (binary, rc, ' '.join(text.split()))
        return result
    return _ask(module, result, path, argv, '', hpnssh.CLIENT_PROBES)


def loaded_units(module, names):
    systemctl = module.get_bin_path('systemctl')
    if not systemctl:
        return []
    loaded = []
    for name in names:
        rc, out, dummy = module.run_command([systemctl, 'show', '-p', 'LoadState', '--value', name])
        if rc == 0 and out.strip() == 'loaded':
            loaded.append(name)
    return loaded


def main():
    module = AnsibleModule(
        argument_spec=dict(
            server_binary=dict(type='path', default='/usr/sbin/hpnsshd'),
            client_binary=dict(type='path', default='/usr/bin/hpnssh'),
            keygen_binary=dict(type='path', default='/usr/bin/hpnssh-keygen'),
            services=dict(type='list', elements='str', default=['hpnssh.service', 'hpnsshd.service']),
            sockets=dict(type='list', elements='str', default=['hpnssh.socket', 'hpnsshd.socket']),
        ),
        supports_check_mode=True,
    )
    params = module.params
    workdir = tempfile.mkdtemp(prefix='bdp-wan-tune-hpn-probe-')
    try:
        server = probe_server(module, params['server_binary'], params['keygen_binary'], workdir)
        client = probe_client(module, params['client_binary'], workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    services = loaded_units(module, params['services'])
    module.exit_json(changed=False, server=server, client=client, service=services[0] if services else '',
                     sockets=loaded_units(module, params['sockets']))


if __name__ == '__main__':
    main()
