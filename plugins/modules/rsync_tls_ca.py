#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

# Documentation only: the work is done on the controller by the action plugin plugins/action/rsync_tls_ca.py.

DOCUMENTATION = r"""
---
module: rsync_tls_ca
short_description: Sign a host's certificate with the migration CA on the controller, or keep the one it has
version_added: 0.3.0
description:
  - Runs on the controller only. The CA is the one given in the host's variables C(rsync_daemon_tls_ca_cert) and
    C(rsync_daemon_tls_ca_key) (PEM text, for example from Ansible Vault; read here, never task arguments, never
    shown), or the one in O(ca_dir) (C(ca.crt), and C(ca.key) with mode 0600). When O(ca_dir) has none, a new CA
    (EC P-256, 825 days) is made there, its key 0600 from the first byte; parallel hosts share it (a lock).
  - The host's present certificate O(cert) is kept when it is signed by this CA, is for the key of O(csr), has
    exactly the subjectAltName of O(names) and is valid for more than 30 days. Otherwise the request O(csr) is
    signed (its key only; the subject and names are the CA's choice) for server and client authentication.
  - Warns when the CA itself expires within 30 days.
options:
  ca_dir:
    description: The CA directory on the controller (C(~) is expanded).
    type: str
    required: true
  names:
    description: The DNS names and addresses of the certificate; an address is written as an IP and a DNS entry
      (rsync-ssl checks the URL's host name with C(openssl s_client -verify_hostname)).
    type: list
    elements: str
    required: true
  common_name:
    description: The certificate's common name.
    type: str
    required: true
  days:
    description: Validity of a new certificate in days (at most the CA's own end).
    type: int
    default: 180
  cert:
    description: The host's present certificate (PEM), as P(bdp.wan_tune.rsync_daemon_tls#module) returns it.
    type: str
  csr:
    description: The host's certificate signing request (PEM); none in check mode before the host has a key.
    type: str
author:
  - bdp.wan_tune maintainers (@bdp-wan-tune)
extends_documentation_fragment:
  - bdp.wan_tune.attributes.action_controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.conn
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    details: In check mode no CA is made and nothing is signed; the result says what would be.
"""

EXAMPLES = r"""
- name: Make the host's key and ask for a certificate
  bdp.wan_tune.rsync_daemon_tls:
    state: request
  register: request

- name: Sign it with the migration CA, or keep the certificate the host has
  bdp.wan_tune.rsync_tls_ca:
    ca_dir: ~/.bdp_wan_tune/rsync_tls_ca
    names: [rsync-b, 198.18.3.12]
    common_name: rsync-b
    cert: "{{ request.cert }}"
    csr: "{{ request.csr }}"
  register: issued
"""

RETURN = r"""
cert:
  description: The certificate to install (the kept or the new one), PEM; null in check mode when it would be issued.
  returned: always
  type: str
ca_cert:
  description: The CA certificate (PEM), the trust anchor for the hosts.
  returned: always
  type: str
issued:
  description: Whether a certificate was issued (or would be, in check mode).
  returned: always
  type: bool
ca_created:
  description: Whether a new CA was made in O(ca_dir) (or would be).
  returned: always
  type: bool
reason:
  description: Why the certificate was issued, or that it is valid.
  returned: always
  type: str
expires:
  description: The last day of the certificate.
  returned: when there is a certificate
  type: str
ca_expires:
  description: The last day of the CA.
  returned: when there is a CA
  type: str
"""
