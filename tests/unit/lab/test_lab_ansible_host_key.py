"""The lab gives its kubespray request the fingerprint of the Ansible
server it made, as an operator reads it on the server's console."""

import copy

from k8s_mgmt import shipped
from k8s_mgmt_lab.machines import ansible_server

PRINT = 'SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU'
SERVER = {'ip': '10.254.0.254', 'host_key_sha256': PRINT}


def section(body):
    return body['additionalParams']['k8s_cluster_installation_param'][
        'ansible']


def body_on(address):
    body = shipped.sample_request('kubespray')
    section(body)['ip_address'] = address
    return body


def test_the_labs_server_gets_its_fingerprint():
    body = ansible_server.give_host_key(body_on('10.254.0.254'), SERVER)
    assert section(body)['host_key_fingerprint'] == PRINT


def test_another_server_or_a_given_fingerprint_is_left_alone():
    other = body_on('10.254.0.9')
    assert ansible_server.give_host_key(copy.deepcopy(other), SERVER) == \
        other
    given = body_on('10.254.0.254')
    section(given)['host_key_fingerprint'] = 'SHA256:' + 'A' * 43
    assert ansible_server.give_host_key(copy.deepcopy(given), SERVER) == \
        given
