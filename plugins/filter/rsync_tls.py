# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rsync daemon over TLS: its layout, the names of a certificate, how long to issue one, the source gate's sets
and the platforms it runs on, from module_utils/transfer/rsynctls.py (the one place of each rule).

Documentation lives in the rsync_tls_*.yml files beside this file.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls


def rsync_tls_layout(migration, sources=None, client_dir=rsynctls.CLIENT_DIR, ca_dir=rsynctls.CONTROLLER_CA_DIR,
                     port=rsynctls.TLS_PORT, receiver='', state_dir=rsynctls.STATE_DIR):
    """The paths and environment of one receiver's migration (its name given, or derived from the inventory
    ``sources``)."""
    return rsynctls.layout(rsynctls.migration_name(migration, sources), client_dir, ca_dir, port, receiver, state_dir)


def rsync_tls_names(names):
    """['rsync-b', '198.18.3.12'] -> ['DNS:198.18.3.12', 'DNS:rsync-b', 'IP:198.18.3.12']."""
    if not isinstance(names, (list, tuple)):
        raise AnsibleFilterError('rsync_tls_names: expected a list of DNS names and addresses, got %r' % (names,))
    return rsynctls.subject_alt_names([str(name) for name in names])


def rsync_tls_validity(cert_not_after, ca_not_after, days):
    """{renew, not_after, capped, ca_days_left} of a host's certificate; a CA too close to its end is an error."""
    try:
        return rsynctls.validity(cert_not_after or None, ca_not_after, days)
    except rsynctls.ValidityError as exc:
        raise AnsibleFilterError(str(exc))


def rsync_tls_sender_ids(receivers, predict=()):
    """The client identities to issue: one per sender and receiver of the play's receivers."""
    try:
        return rsynctls.sender_identities(receivers, predict)
    except (ValueError, KeyError, TypeError) as exc:
        raise AnsibleFilterError(str(exc))


def rsync_tls_gate_sets(sources):
    """{ipv4, ipv6}: the elements of the source gate's sets in nftables for these addresses and networks."""
    try:
        return rsynctls.gate_sets(sources)
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError('rsync_tls_gate_sets: %s' % exc)


def rsync_tls_firewall_rules(sources, port):
    """[{source, family, port, rich_rule, comment}]: the host firewall's rules that open the TLS port to the sources."""
    try:
        return rsynctls.firewall_rules(sources, port)
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError('rsync_tls_firewall_rules: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'rsync_tls_layout': rsync_tls_layout, 'rsync_tls_names': rsync_tls_names,
                'rsync_tls_validity': rsync_tls_validity, 'rsync_tls_gate_sets': rsync_tls_gate_sets,
                'rsync_tls_firewall_rules': rsync_tls_firewall_rules,
                'rsync_tls_sender_ids': rsync_tls_sender_ids}
