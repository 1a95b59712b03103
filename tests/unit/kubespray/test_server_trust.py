"""Before any VM: the kubespray driver refuses a request whose first contact
with the Ansible server could not follow host_key_policy, and an address
no Ansible server can have, whatever path the parameters took."""

import dataclasses
import os
import sys

import paramiko
import pytest

from k8s_mgmt import exceptions
from k8s_mgmt.ansible import ansible_server
from k8s_mgmt.kubespray import driver as kubespray_driver
from k8s_mgmt.modes.kubespray import server_phases
from k8s_mgmt.ansible import server_trust
from k8s_mgmt.ssh import hostkeys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_kubespray_plan as plan_tests  # noqa: E402

ADDRESS = '10.254.0.250'
KEY = paramiko.ECDSAKey.generate()
KEY_PRINT = hostkeys.fingerprint(KEY)
OTHER_PRINT = plan_tests.FINGERPRINT


def request(fingerprint=None):
    body = plan_tests.kubespray_body()
    section = body['additionalParams']['k8s_cluster_installation_param'][
        'ansible']
    section.pop('host_key_fingerprint')
    if fingerprint is not None:
        section['host_key_fingerprint'] = fingerprint
    return {'flavour_id': 'kubespray',
            'additional_params': body['additionalParams']}


def instantiate_start(fingerprint=None, instance='inst-1'):
    kubespray_driver.KubesprayMgmtDriver().instantiate_start(
        None, {'id': instance}, request(fingerprint), None, None)


def refused(fingerprint=None):
    with pytest.raises(exceptions.ValidationError) as info:
        instantiate_start(fingerprint)
    [(path, message)] = info.value.problems
    assert path == server_trust.FIELD
    assert '\n' not in message
    return message


def pin(key=KEY, instance='inst-1'):
    server_trust.store_for(instance).add(
        '%s:22' % ADDRESS, key.get_name(), key.get_base64())


def test_console_needs_a_fingerprint_or_a_pin_and_says_how(config):
    message = refused()
    for hint in ('required with host_key_policy console',
                 'ssh-keyscan -t ed25519 %s | ssh-keygen -lf -' % ADDRESS,
                 'ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub',
                 'k8s-mgmt hostkeys add %s:22' % ADDRESS,
                 'host_key_policy = tofu'):
        assert hint in message
    instantiate_start(KEY_PRINT)
    pin()
    instantiate_start()


def test_tofu_must_be_chosen_explicitly(config):
    config.config(group='k8s_mgmt', host_key_policy='tofu')
    instantiate_start()


def test_strict_needs_a_pin_even_with_a_fingerprint(config):
    config.config(group='k8s_mgmt', host_key_policy='strict')
    assert 'host_key_policy is strict' in refused(KEY_PRINT)
    pin()
    instantiate_start()
    instantiate_start(KEY_PRINT)


@pytest.mark.parametrize('policy', ['console', 'tofu', 'strict'])
def test_a_fingerprint_other_than_the_pin_is_refused_naming_both(config,
                                                                 policy):
    config.config(group='k8s_mgmt', host_key_policy=policy)
    pin()
    message = refused(OTHER_PRINT)
    assert OTHER_PRINT in message and KEY_PRINT in message
    assert '--replace' in message


def test_every_operation_checks_before_it_runs(config):
    # scale, heal and terminate go through _check_mode as well.
    ctx = dataclasses.make_dataclass('Ctx', ['params', 'vnf_instance_id'])(
        plan_tests.params(), 'inst-2')
    ctx.params = dataclasses.replace(ctx.params, ansible=dataclasses.replace(
        ctx.params.ansible, host_key_fingerprint=None))
    check = kubespray_driver.KubesprayMgmtDriver()._check_mode
    with pytest.raises(exceptions.ValidationError):
        check(ctx)
    pin(instance='inst-2')
    check(ctx)


@pytest.mark.parametrize('address', ['127.0.0.1', '169.254.169.254',
                                     '224.0.0.1', '0.0.0.1', '::1'])
def test_the_connection_refuses_an_address_validation_would(address):
    params = plan_tests.params()
    params = dataclasses.replace(params, ansible=dataclasses.replace(
        params.ansible, ip_address=address))
    for make in (lambda: server_phases.server_node(params),
                 lambda: ansible_server.target_for(params.ansible)):
        with pytest.raises(exceptions.ValidationError) as info:
            make()
        assert [p for p, _ in info.value.problems] == [
            ansible_server.SECTION + '.ip_address']


@pytest.mark.parametrize('path', ['/tmp', '/tmp/inv', '/var/tmp/x',
                                  '/dev/shm/x', '//tmp/x'])
def test_the_server_refuses_a_shared_directory_before_any_ssh(path):
    params = dataclasses.replace(plan_tests.params().ansible,
                                 transferring_inventory_path=path)
    with pytest.raises(exceptions.ValidationError) as info:
        ansible_server.AnsibleServer(None, params, 'inst-1')
    assert [p for p, _ in info.value.problems] == [
        ansible_server.INVENTORY_FIELD]


def test_the_connect_phase_opens_the_servers_own_session(monkeypatch,
                                                         config):
    # open_session itself is tested over SSH (test_server_over_ssh.py).
    opened, adopted, connected = [], {}, []

    def open_session(target, params, store, **kwargs):
        opened.append((target.host, target.server_id, params, store))
        return 'server-session'

    class Sessions(object):
        def adopt(self, sessions):
            adopted.update(sessions)

    class Op(object):
        params = plan_tests.params()
        store = object()
        sessions = Sessions()
        ctx = dataclasses.make_dataclass('Ctx', ['vnf_instance_id'])('i-1')
        dry = False

        def connected(self, name):
            return name in adopted

        def connect(self, nodes):
            connected.extend(n.name for n in nodes if n.name not in adopted)

        def session(self, name):
            return adopted[name]

        def assume(self, value):
            return None

    monkeypatch.setattr(server_trust, 'open_session', open_session)
    op = Op()
    nodes = plan_tests.topology(1, 1).masters
    server = server_phases.connect_phase(op, 'Connect', nodes).action()
    assert opened == [(ADDRESS, None, op.params.ansible, op.store)]
    assert adopted == {server_phases.SERVER_NAME: 'server-session'}
    assert connected == [n.name for n in nodes]
    assert server.session == 'server-session'
