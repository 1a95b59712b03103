"""The kubespray ``ansible`` section's own rules, before any VM: the
Ansible server's address, its host key fingerprint and the inventory
directory (:mod:`k8s_mgmt.params.ansible_checks`)."""

import json

import pytest

from k8s_mgmt import params
from k8s_mgmt.cli import main as cli_main
from k8s_mgmt.params import ansible_checks

import params_helpers as h

SECTION = h.ROOT + '.ansible'
# ssh-keygen -lf of a real key prints this shape (here: of an empty blob).
GOOD_PRINT = 'SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU'

BAD = [
    ('ip_address', '127.0.0.1', 'a loopback address'),
    ('ip_address', '127.8.9.10', 'a loopback address'),
    ('ip_address', '169.254.169.254', 'metadata service'),
    ('ip_address', '169.254.1.2', 'a link-local address'),
    ('ip_address', '224.0.0.251', 'a multicast address'),
    ('ip_address', '239.1.2.3', 'a multicast address'),
    ('ip_address', '255.255.255.255', 'the broadcast address'),
    ('ip_address', '0.1.2.3', 'an unspecified address'),
    ('host_key_fingerprint', 'SHA256:abc', 'not a host key fingerprint'),
    ('host_key_fingerprint', GOOD_PRINT[:-1] + 'V', 'not a SHA256 digest'),
    ('host_key_fingerprint', GOOD_PRINT + '=', 'not a host key fingerprint'),
    ('host_key_fingerprint', 'sha256:' + GOOD_PRINT[7:],
     'not a host key fingerprint'),
    ('host_key_fingerprint', '256 %s root@server (ED25519)' % GOOD_PRINT,
     'more than the fingerprint'),
    ('host_key_fingerprint', 'MD5:' + ':'.join(['ab'] * 16),
     'an MD5 fingerprint'),
    ('host_key_fingerprint', 42, 'expected a string SHA256:'),
    ('transferring_inventory_path', '/tmp', 'in /tmp, which every user'),
    ('transferring_inventory_path', '/tmp/k8s', 'in /tmp, which every user'),
    ('transferring_inventory_path', '/var/tmp/x', 'in /var/tmp'),
    ('transferring_inventory_path', '/dev/shm/inv', 'in /dev/shm'),
    ('transferring_inventory_path', '/run/lock/inv', 'in /run/lock'),
    ('transferring_inventory_path', '/tmp/./x', 'in /tmp'),
    ('transferring_inventory_path', '//tmp/x', 'in /tmp'),
]


def kubespray(**ansible):
    body = h.sample('kubespray')
    body['additionalParams'][h.ROOT]['ansible'].update(ansible)
    return body


@pytest.mark.parametrize('field,value,reason', BAD)
def test_each_bad_value_is_one_problem_naming_the_field(field, value,
                                                        reason):
    problems = h.problems_of(params.load_request,
                             kubespray(**{field: value}))
    assert h.paths(problems) == [SECTION + '.' + field]
    assert reason in problems[0][1]


@pytest.mark.parametrize('field,value,reason', BAD)
def test_validate_exits_2_with_one_line_naming_the_field(
        field, value, reason, tmp_path, capsys):
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(kubespray(**{field: value})))
    assert cli_main.main(['validate', str(path)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(SECTION + '.' + field + ': ')


def test_validate_as_a_process_names_the_field(tmp_path):
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(kubespray(ip_address='169.254.169.254')))
    done = h.validate_cli(str(path))
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        SECTION + '.ip_address: a link-local address (169.254.0.0/16 holds '
        'the cloud\'s metadata service, 169.254.169.254): '
        '\'169.254.169.254\'']


def test_good_values_pass_and_are_kept():
    found = params.load_request(kubespray(
        ip_address='10.0.0.7', host_key_fingerprint=GOOD_PRINT,
        transferring_inventory_path='/home/ubuntu/tmp/inventories/'))
    assert found.ansible.host_key_fingerprint == GOOD_PRINT
    assert found.ansible.transferring_inventory_path == \
        '/home/ubuntu/tmp/inventories'
    assert found.warnings == ()
    # The fingerprint is optional: the driver decides whether it is needed.
    assert params.load_request(kubespray()).ansible.host_key_fingerprint \
        is None


def test_camel_case_fingerprint_is_read():
    body = kubespray()
    body['additionalParams'][h.ROOT]['ansible']['hostKeyFingerprint'] = \
        GOOD_PRINT
    found = params.load_request(body)
    assert found.ansible.host_key_fingerprint == GOOD_PRINT


def test_the_sample_placeholder_address_stays_a_warning():
    found = params.load_request(kubespray(ip_address='0.0.0.0'))
    assert found.ansible.placeholders == (SECTION + '.ip_address',)


@pytest.mark.parametrize('text', [
    '::', '::1', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1',
    '::ffff:169.254.169.254', '0.0.0.0'])
def test_ipv6_and_mapped_addresses_are_classified_too(text):
    # IPv6 is refused by the field's form today; the driver's own check
    # must not depend on that.
    assert ansible_checks.address_problem(text) is not None


@pytest.mark.parametrize('text', ['10.0.0.1', '192.0.2.10', '172.16.0.1',
                                  '203.0.113.255', '2001:db8::1'])
def test_ordinary_addresses_pass(text):
    assert ansible_checks.address_problem(text) is None


@pytest.mark.parametrize('path', ['/tmpfoo', '/home/u/tmp', '/var/tmpx/a',
                                  '/srv/dev/shm'])
def test_only_the_shared_directories_themselves_are_refused(path):
    assert ansible_checks.shared_dir(path) is None
