# -*- coding: utf-8 -*-
# Copyright: (c) 2026, bdp.wan_tune contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The migration CA as the controller reads it before any host changes (plugin_utils/tls_ca.py), and the TLS rules
of module_utils/transfer/rsynctls.py: the layout, the migration's name, the names of a certificate, how long one is issued,
the senders to issue for, the outer gate's marks and the platforms.  The CAs here are made by the cryptography
library in the test; the collection makes its own with community.crypto (Molecule rsync_daemon)."""

from __future__ import annotations

import datetime
import os

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.bdp.wan_tune.plugins.module_utils.transfer import rsynctls
from ansible_collections.bdp.wan_tune.plugins.plugin_utils import tls_ca


def make_ca(directory=None, days=825, ca=True):
    """(certificate PEM, key PEM) of a CA valid for ``days``, written as ca.crt and ca.key (0600) into
    ``directory`` when given."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'unit CA')])
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode('ascii')
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode('ascii')
    if directory:
        os.makedirs(directory, 0o700, exist_ok=True)
        with open(os.path.join(directory, 'ca.crt'), 'w') as handle:
            handle.write(cert_pem)
        with open(os.open(os.path.join(directory, 'ca.key'), os.O_WRONLY | os.O_CREAT, 0o600), 'w') as handle:
            handle.write(key_pem)
    return cert_pem, key_pem


def settings(**kwargs):
    base = {'transport': 'tls', 'tls_port': 874, 'port': 873, 'tls_days': 180, 'tls_names': [], 'tls_ca_cert': '',
            'tls_ca_key': '', 'tls_migration': 'm1', 'tls_senders': []}
    base.update(kwargs)
    return base


def test_the_controller_ca_of_an_earlier_version_is_read_in_the_migrations_directory_not_its_parent(tmp_path):
    """Earlier versions kept the CA on the controller; the role moves it to the receiver, so it is checked first."""
    make_ca(str(tmp_path / 'ca'))                                   # the flat layout of 0.3: not read any more
    assert tls_ca.problems(settings(tls_ca_dir=str(tmp_path / 'ca'))) == []
    make_ca(str(tmp_path / 'ca' / 'm1'))
    os.chmod(str(tmp_path / 'ca' / 'm1' / 'ca.key'), 0o644)
    found = tls_ca.problems(settings(tls_ca_dir=str(tmp_path / 'ca')))
    assert len(found) == 1 and found[0].startswith('rsync_daemon_tls_ca_dir: ') and 'mode 0644' in found[0]
    assert tls_ca.problems(settings(tls_ca_dir=str(tmp_path / 'ca'), tls_migration='m2')) == []
    os.unlink(str(tmp_path / 'ca' / 'm1' / 'ca.key'))
    assert 'is missing' in tls_ca.problems(settings(tls_ca_dir=str(tmp_path / 'ca')))[0]


def test_the_derived_migration_finds_its_own_directory(tmp_path):
    sources = [str(tmp_path / 'dc1-to-dc2.yml')]
    name = rsynctls.default_migration(sources)
    make_ca(str(tmp_path / 'ca' / name))
    os.chmod(str(tmp_path / 'ca' / name / 'ca.key'), 0o640)
    found = tls_ca.problems(settings(tls_ca_dir=str(tmp_path / 'ca'), tls_migration=''), sources=sources)
    assert found and name in found[0]


def test_a_given_ca_is_checked_without_showing_its_key():
    cert, key = make_ca()
    assert tls_ca.problems(settings(tls_ca_cert=cert, tls_ca_key=key)) == []
    other_cert, other_key = make_ca()
    found = tls_ca.problems(settings(tls_ca_cert=cert, tls_ca_key=other_key))
    assert 'is not the key of the certificate' in found[0] and other_key.split('\n')[1] not in found[0]
    leaf, leaf_key = make_ca(ca=False)
    assert 'is not a CA' in tls_ca.problems(settings(tls_ca_cert=leaf, tls_ca_key=leaf_key))[0]
    assert 'rsync_daemon_tls_ca_key is empty' in tls_ca.problems(settings(tls_ca_cert=cert))[0]


def test_a_ca_too_close_to_its_end_is_refused_before_anything_changes(tmp_path):
    cert, key = make_ca(days=20)
    found = tls_ca.problems(settings(tls_ca_cert=cert, tls_ca_key=key))
    assert 'valid for more than 30 days' in found[0] and 'in 19 days' in found[0]
    make_ca(str(tmp_path / 'm1'), days=20)
    assert 'valid for more than 30 days' in tls_ca.problems(settings(tls_ca_dir=str(tmp_path)))[0]


def test_senders_must_be_inventory_hosts_and_the_migration_a_name():
    found = tls_ca.problems(settings(tls_senders=['rsync-a', 'ghost'], tls_migration='../up'),
                            inventory=['rsync-a', 'rsync-b'])
    assert found == ["rsync_daemon_tls_migration: '../up' is not a migration name; expected %s."
                     % rsynctls.MIGRATION_HELP,
                     "rsync_daemon_tls_senders[1]: 'ghost' is not a host of the inventory, so it could get no client "
                     "certificate; expected %s." % rsynctls.SENDERS_HELP]
    assert tls_ca.problems(settings(tls_senders='rsync-a'))[0].startswith("rsync_daemon_tls_senders: 'rsync-a' is not")
    assert tls_ca.problems(settings(transport='plain', tls_senders=['ghost']), inventory=[]) == []


def test_the_migration_name_keeps_two_inventories_apart(tmp_path):
    one, two = str(tmp_path / 'a' / 'hosts.yml'), str(tmp_path / 'b' / 'hosts.yml')
    assert rsynctls.default_migration([one]) != rsynctls.default_migration([two])
    assert rsynctls.default_migration([one]) == rsynctls.default_migration([one])
    assert rsynctls.default_migration([one]).startswith('hosts-')
    assert rsynctls.MIGRATION_RE.match(rsynctls.default_migration(['198.18.3.11,198.18.3.12,']))
    assert rsynctls.migration_name('dc1-to-dc2', [one]) == 'dc1-to-dc2'


def test_the_layout_is_scoped_by_the_migration_and_the_receiver():
    layout = rsynctls.layout('m1', '/srv/client', '/ca', 8874, 'dc2-a', '/state')
    assert layout['ca'] == {'dir': '/state/rsync-tls-ca/m1', 'cert': '/state/rsync-tls-ca/m1/ca.crt',
                            'key': '/state/rsync-tls-ca/m1/ca.key'}
    assert layout['controller_ca'] == {'dir': '/ca/m1', 'cert': '/ca/m1/ca.crt', 'key': '/ca/m1/ca.key'}
    assert layout['client']['dir'] == '/srv/client/m1/dc2-a' and layout['client']['parent'] == '/srv/client'
    assert layout['client']['key'] == '/srv/client/m1/dc2-a/host.key'
    assert layout['server']['self_cert'] == '/etc/bdp-wan-tune/rsync-tls/self.crt'
    assert layout['env'] == ('RSYNC_CONNECT_PROG="openssl s_client -quiet -verify_quiet -verify_return_error -tls1_3 '
                             '-CAfile /srv/client/m1/dc2-a/ca.crt -cert /srv/client/m1/dc2-a/host.crt -key '
                             '/srv/client/m1/dc2-a/host.key -servername \'%H\' -verify_hostname \'%H\' -connect '
                             '\'[%H]:8874\'"')
    assert layout['command'] == ['rsync', '-M--no-msgs2stderr']
    assert rsynctls.layout('m1')['ca']['dir'] == '/var/lib/bdp_wan_tune/rsync-tls-ca/m1'


@pytest.mark.parametrize('name, component', [('dc2-a', 'dc2-a'), ('dc2 a/b', 'dc2-a-b'), ('..', '_..'), ('.', '_.'),
                                             ('[2001:db8::1]', '-2001-db8--1-'), ('host.key', 'host.key')])
def test_an_inventory_name_is_one_path_component_and_two_names_never_share_one(name, component):
    assert rsynctls.path_name(name, unique=False) == component
    found = os.path.basename(rsynctls.client_dir('/c', 'm1', name))
    assert found == component if name == component and name not in rsynctls.CLIENT_FILES.values() else \
        found.startswith(component + '-') and len(found) == len(component) + 9
    assert rsynctls.path_name('dc2:a') != rsynctls.path_name('dc2-a') == 'dc2-a'


def test_an_address_is_named_as_ip_and_as_dns():
    assert rsynctls.subject_alt_names(['rsync-B.', '198.18.3.12', '198.18.3.12', 'not a name']) == [
        'DNS:198.18.3.12', 'DNS:rsync-b', 'IP:198.18.3.12']


def test_validity_renews_within_30_days_and_never_outlives_the_ca():
    now = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.timezone.utc)
    fine = rsynctls.validity('20270301000000Z', '20290101000000Z', 180, now)
    assert fine == {'renew': False, 'not_after': '20270525120000Z', 'capped': False, 'ca_days_left': 766}
    assert rsynctls.validity('20261220000000Z', '20290101000000Z', 180, now)['renew']
    assert not rsynctls.validity(None, '20290101000000Z', 180, now)['renew']
    # the CA ends in 60 days: a new certificate ends with it, and a second run keeps it (no renewal loop)
    capped = rsynctls.validity(None, '20270125120000Z', 180, now)
    assert capped['capped'] and capped['not_after'] == '20270125120000Z'
    assert not rsynctls.validity(capped['not_after'], '20270125120000Z', 180, now)['renew']
    with pytest.raises(rsynctls.ValidityError, match='ends on 2026-12-20, in 23 days'):
        rsynctls.validity(None, '20261220000000Z', 180, now)


def receiver(name, migration, senders):
    layout = rsynctls.layout(migration, receiver=name)
    return {'receiver': name, 'senders': senders, 'migration': migration, 'client': layout['client'],
            'ca': {'given': False, 'host': name, 'pem': 'PEM', 'cert': layout['ca']['cert'], 'key': layout['ca']['key'],
                   'not_after': '20290101000000Z'}, 'days': 90, 'state_dir': '/var/lib/bdp_wan_tune'}


def test_each_sender_is_issued_one_identity_per_receiver_signed_by_that_receivers_ca():
    ids = rsynctls.sender_identities([receiver('r1', 'm1', ['s1', 's2']), receiver('r2', 'm1', ['s1']),
                                      receiver('r3', 'm2', ['s1'])], predict=['s2'])
    assert [(item['host'], item['migration'], item['receiver'], item['ca']['host']) for item in ids] == [
        ('s1', 'm1', 'r1', 'r1'), ('s1', 'm1', 'r2', 'r2'), ('s1', 'm2', 'r3', 'r3'), ('s2', 'm1', 'r1', 'r1')]
    assert ids[0]['days'] == 90 and ids[0]['parent'] == rsynctls.CLIENT_DIR
    assert ids[1]['cert'] == '/etc/bdp-wan-tune/rsync-tls-client/m1/r2/host.crt' and ids[1]['usage'] == 'clientAuth'
    assert ids[2]['anchor'] == '/etc/bdp-wan-tune/rsync-tls-client/m2/r3/ca.crt'
    assert [item['predict'] for item in ids] == [False, False, False, True]


def test_the_source_gate_sets_and_the_marks_of_earlier_versions():
    """The gate's sets by family, collapsed (nftables refuses overlapping elements of an interval set), a netmask as
    rsyncd takes it; the marks of the hosts.allow block of 0.3 and 0.4, which the role takes out, are still checked."""
    assert rsynctls.gate_sets(['198.18.3.0/24', '198.18.3.11', '::1', '2001:db8::5/64', '10.1.0.0/255.255.0.0',
                               '127.0.0.1']) == {'ipv4': ['10.1.0.0/16', '127.0.0.1', '198.18.3.0/24'],
                                                 'ipv6': ['::1', '2001:db8::/64']}
    assert rsynctls.gate_sets([]) == {'ipv4': [], 'ipv6': []}
    with pytest.raises(ValueError, match='host name'):
        rsynctls.gate_sets(['rsync-b.example.org'])
    whole = 'x\n# %s\nrules\n# %s\ny\n' % (rsynctls.WRAP_MARK_BEGIN, rsynctls.WRAP_MARK_END)
    assert rsynctls.wrap_problem(whole) is None and rsynctls.wrap_problem(None) is None
    assert 'BEGIN on line(s) 2, END on line(s) none' in rsynctls.wrap_problem(whole.replace('# END', '# end'))


def test_the_host_firewall_opens_to_the_sources_but_not_to_loopback():
    rules = rsynctls.firewall_rules(['198.18.3.0/24', '198.18.3.11', '127.0.0.1', '::1', '2001:db8::5/64'], '874')
    assert [(rule['family'], rule['source'], rule['port']) for rule in rules] == [
        ('ipv4', '198.18.3.0/24', 874), ('ipv6', '2001:db8::/64', 874)]
    assert rules[0]['rich_rule'] == 'rule family="ipv4" source address="198.18.3.0/24" port port="874" protocol="tcp" accept'
    assert rsynctls.firewall_rules(['127.0.0.1', '::1'], 874) == []


def test_the_gate_refusal_names_the_variable_the_host_and_what_would_work():
    problem = rsynctls.gate_problem('rsync-b', 'the kernel refuses nftables requests: Operation not permitted')
    assert problem.startswith('rsync_daemon_transport (tls or both) on rsync-b: the kernel refuses nftables requests')
    assert 'CAP_NET_ADMIN' in problem and 'nf_tables' in problem and 'rsync_daemon_transport=plain' in problem
    assert problem.endswith('Nothing was changed on this host.')
