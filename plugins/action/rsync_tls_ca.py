# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin ``bdp.wan_tune.rsync_tls_ca``: the migration CA on the controller signs a host's certificate.

Runs on the controller only (no module on the host).  The CA comes from the variables rsync_daemon_tls_ca_cert and
rsync_daemon_tls_ca_key (read from the host's variables here, never passed as task arguments, so never shown), or
from the directory ``ca_dir`` on the controller, where a new CA is made when there is none.  A host's present
certificate stays when it is signed by this CA, for the host's key, with the wanted names and valid for more than
30 days; otherwise the request ``csr`` is signed.
"""

import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.bdp.wan_tune.plugins.module_utils import rsynctls
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import tls_ca

CERT_VAR, KEY_VAR = 'rsync_daemon_tls_ca_cert', 'rsync_daemon_tls_ca_key'


class ActionModule(ActionBase):
    """Sign (or keep) one host's certificate with the migration CA."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def _var(self, task_vars, name):
        if not task_vars.get(name):
            return ''
        return str(self._templar.template(task_vars[name]) or '')

    def _ca(self, ca_dir, task_vars, result):
        """(cert, key) of the CA; None in check mode when it would be made."""
        given_cert, given_key = self._var(task_vars, CERT_VAR), self._var(task_vars, KEY_VAR)
        if given_cert or given_key:
            if not (given_cert and given_key):
                raise tls_ca.CaError(rsynctls.check({'tls_ca_cert': given_cert, 'tls_ca_key': given_key})[0])
            result['ca_source'] = 'variables %s and %s' % (CERT_VAR, KEY_VAR)
            return tls_ca.load(given_cert, given_key)
        ca_dir = os.path.expanduser(ca_dir)
        result['ca_source'] = ca_dir
        cert, key, created = tls_ca.from_dir(ca_dir, 'bdp.wan_tune migration CA (%s)' % os.path.basename(
            ca_dir.rstrip('/')), check_mode=self._task.check_mode)
        if created:
            result['changed'] = result['ca_created'] = True
        return None if cert is None else (cert, key)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=dict(
            ca_dir=dict(type='str', required=True),
            names=dict(type='list', elements='str', required=True),
            common_name=dict(type='str', required=True),
            days=dict(type='int', default=180),
            cert=dict(type='str'),
            csr=dict(type='str'),
        ))
        result.update(changed=False, ca_created=False, issued=False, warnings=[])
        try:
            ca = self._ca(args['ca_dir'], task_vars, result)
        except (tls_ca.CaError, OSError) as exc:
            return dict(result, failed=True, msg='The migration CA cannot be used: %s Nothing was changed on the '
                        'host.' % exc)
        if ca is None:
            result.update(issued=True, reason='a new CA would be made', cert=None, ca_cert=None,
                          msg='check mode: a new migration CA would be made in %s and the certificate issued'
                          % result['ca_source'])
            return result
        ca_cert, ca_key = ca
        result['ca_cert'] = tls_ca.pem(ca_cert)
        result['ca_subject'] = ca_cert.subject.rfc4514_string()
        result['ca_expires'], left = tls_ca.expires(ca_cert)
        if left < rsynctls.RENEW_DAYS:
            result['warnings'].append('The migration CA %s (%s) expires on %s, in %d days: every certificate it signed '
                                      'ends with it. Make a new CA (empty the CA directory, or give new %s and %s) '
                                      'and run the play again.' % (result['ca_subject'], result['ca_source'],
                                                                   result['ca_expires'], left, CERT_VAR, KEY_VAR))
        public = tls_ca.csr_public_key(args['csr']) if args['csr'] else None
        reason = tls_ca.judge(args['cert'], ca_cert, public, args['names'])
        result['reason'] = reason or 'the certificate is valid'
        if reason is None:
            result['cert'] = args['cert']
        elif not args['csr']:
            if not self._task.check_mode:
                raise AnsibleError('rsync_tls_ca: the host sent no certificate signing request')
            result.update(changed=True, issued=True, cert=None)
        else:
            result.update(changed=True, issued=True)
            result['cert'] = tls_ca.sign(args['csr'], ca_cert, ca_key, args['names'], args['days'],
                                         args['common_name'])
        if result['cert']:
            from cryptography import x509
            cert = x509.load_pem_x509_certificate(result['cert'].encode('ascii'))
            result['expires'], result['days_left'] = tls_ca.expires(cert)
        result['msg'] = '%s: %s' % ('issued' if result['issued'] else 'kept', result['reason'])
        if not result['warnings']:
            del result['warnings']
        return result
