"""The registry VNF's phases, walked without connecting: which scripts run
with which arguments, what a heal keeps or refuses, what terminate
forgets; the summary the registry script prints, read back."""

import dataclasses

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params as params_mod
from k8s_mgmt import secrets
from k8s_mgmt import shared_state
from k8s_mgmt import shipped
from k8s_mgmt import state as state_mod
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import uploads
from k8s_mgmt.modes import catalog
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.topology import from_params
from k8s_mgmt.topology import model

import op_helpers

ROOT = 'private_registry_installation_param'
VOLUME_ID = '0c3f5a8e-3b1d-4d47-9a0e-4b6f2d8c1e77'
KEY = ('-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAKeyBody'
       '\n-----END OPENSSH PRIVATE KEY-----\n')
CA = ('-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0E=\n'
      '-----END CERTIFICATE-----\n')


def registry_params(**changes):
    body = shipped.sample_request('registry')
    body['additionalParams'][ROOT].update(changes)
    return params_mod.load_request(body)


def registry_topology(attached=True):
    vm = dataclasses.replace(op_helpers.node('registry', 1),
                             resource_name='registry', nic_ip='10.254.0.9',
                             ssh_ip='10.254.0.9')
    volume = model.Volume('registry_volume', VOLUME_ID,
                          '/dev/vdb' if attached else None,
                          vm.server_id if attached else None)
    return model.Topology(stack_id='stack-top', masters=(), workers=(),
                          registries=(vm,), volumes=(volume,))


def plan(params=None, topo=None, **kwargs):
    return op_helpers.plan(params or registry_params(),
                           topo or registry_topology(), **kwargs)


def test_the_request_is_the_registry_mode_and_its_topology():
    params = registry_params()
    assert catalog.mode_of(params) == catalog.MODE_REGISTRY
    spec = from_params.spec_from_params(params)
    assert [(g.role, g.ssh_cp_name) for g in spec.groups] == [
        ('registry', 'registry_CP')]
    assert spec.volume_resource_ids == ('registry_volume',)


def test_instantiate_prepares_the_volume_then_the_registry():
    walked = plan()
    assert op_helpers.titles(walked) == [
        'Read the topology from Heat', 'Connect to the registry VM',
        'Upload the scripts', 'Prepare the registry\'s volume on registry-1',
        'Set up the registry on registry-1',
        'Publish the registry\'s address and CA']
    [volume] = op_helpers.calls(walked[3])
    assert (volume.script, volume.argv) == (
        'setup_storage.sh',
        ('volumes', '--volume', '%s,/dev/vdb,/srv/registry' % VOLUME_ID))
    [registry] = op_helpers.calls(walked[4])
    assert registry.script == 'setup_registry.sh'
    assert registry.argv == (
        '--listen', '10.254.0.9:5000', '--dir', '/srv/registry',
        '--self-signed', 'registry.k8s-mgmt.example', '--require-mount',
        '--print-ca')
    assert registry.stdin_secrets == ()


def test_the_uploads_and_the_certificate_forms(tmp_path):
    (tmp_path / 'Files' / 'registry').mkdir(parents=True)
    for name in ('tls.crt', 'ca.crt'):
        (tmp_path / 'Files' / 'registry' / name).write_text(CA)
    node = registry_topology().registries[0]
    assert uploads.names_for(node, registry_params()) == [
        'k8s_mgmt_lib.sh', 'setup_storage.sh', 'setup_registry.sh']
    # No host name: the certificate names the address alone.
    [call] = op_helpers.calls(plan(registry_params(tls={}))[4])
    assert '--self-signed-ip' in call.argv
    given = registry_params(tls={
        'certificate_path': 'Files/registry/tls.crt',
        'ca_certificate_path': 'Files/registry/ca.crt', 'private_key': KEY},
        proxy={'https_proxy': 'http://u:Pr0xy-pw@proxy.example:3128'})
    assert uploads.names_for(node, given)[-2:] == [
        'registry-tls.crt', 'registry-tls-ca.crt']
    assert uploads.package_path(given, 'registry-tls.crt') == (
        'Files/registry/tls.crt')
    [call] = op_helpers.calls(plan(given, package_dir=str(tmp_path))[4])
    assert call.argv[4:8] == ('--certificate', '.k8s-mgmt/registry-tls.crt',
                              '--ca', '.k8s-mgmt/registry-tls-ca.crt')
    # The key goes on stdin, base64 on one line; never in argv.
    assert [key for key, _ in call.stdin_secrets] == ['https_proxy',
                                                      'tls_key_base64']
    shown = call.command().display() + repr(call.argv)
    assert 'Pr0xy-pw' not in shown and 'KeyBody' not in shown
    stdin = secrets.reveal(call.stdin())
    assert stdin.count('\n') == 2 and 'tls_key_base64=LS0t' in stdin


def test_a_stack_without_its_volume_attached_is_refused_before_any_change():
    with pytest.raises(exceptions.TopologyError) as err:
        plan(topo=registry_topology(attached=False))
    assert 'is attached to no server, not to the registry VM registry-1' in (
        str(err.value))


def heal(hook, additional=None, vnfc=True, api='v1', params=None):
    request = {'vnfc_instance_id': ['vnfc-registry-1'] if vnfc else [],
               'additional_params': additional or {}}
    return plan(params, operation='heal_vnfc' if vnfc else 'heal_vnf',
                hook=hook, request=request, api=api)


def test_a_heal_that_would_empty_the_volume_is_refused_in_words():
    with pytest.raises(heal_plan.HealRefused) as err:
        heal('heal_start')
    text = str(err.value)
    assert text.startswith('Heal refused, nothing was changed: healing the '
                           'registry VM registry-1 (server srv-registry-1) '
                           'would give it a new, empty Cinder volume')
    assert 'every image in the registry https://10.254.0.9:5000' in text
    with pytest.raises(heal_plan.HealRefused) as err:
        heal('heal_start', vnfc=False)
    assert 'a whole-VNF heal deletes the stack' in str(err.value)
    with pytest.raises(heal_plan.HealRefused) as err:
        heal('heal_start', {'all': True}, api='v2')
    assert 'the registry VM registry-1 with additionalParams {"all": ' \
        'true}' in str(err.value)


def test_a_heal_that_keeps_the_volume_frees_it_first():
    key = 'tacker_extension_heal_include_block_storage'
    walked = heal('heal_start', {key: False})
    assert op_helpers.titles(walked) == [
        'Read the topology from Heat',
        'Check that the heal keeps the storage server\'s volume',
        'Probe the registry VM to heal',
        'Stop the registry and unmount the volume on registry-1',
        'Detach the volume from registry-1 and wait until it is available',
        'Forget the healed VMs\' host keys']
    assert walked[3].work[0].text.endswith('systemctl stop docker-registry')
    # heal_end: instantiate's phases on the new VM.
    assert op_helpers.titles(heal('heal_end', {key: False}))[1] == (
        'Connect to the new registry VM')
    # Consent to lose the images: the volume is not freed.
    walked = heal('heal_start', {key: True}, params=dataclasses.replace(
        registry_params(), storage_volume_recreate=True))
    assert walked[3].skip.startswith('the volume is recreated')


def test_a_vnfc_other_than_the_registry_vm_is_refused():
    request = {'vnfc_instance_id': ['vnfc-nobody']}
    with pytest.raises(heal_plan.HealRefused) as err:
        plan(operation='heal_vnfc', hook='heal_start', request=request)
    assert 'the registry VNFCs are: vnfc-registry-1' in str(err.value)


def test_terminate_forgets_and_registers_no_vim():
    walked = plan(operation='terminate', hook='terminate_end')
    assert op_helpers.titles(walked) == [
        'Forget the servers\' host keys', 'Remove the instance\'s state']


def test_the_registry_does_not_scale():
    with pytest.raises(ValueError):
        plan(operation='scale_out', hook='scale_end')


SUMMARY = ('registry: https://10.254.0.9:5000 started (certificate made), '
           'images in /srv/registry/data\n')


def test_the_registry_report_is_read_from_the_scripts_output():
    report = script_output.RegistryReport.from_output('registry-1',
                                                      SUMMARY + CA)
    assert (report.server, report.certificate, report.ca_pem) == (
        '10.254.0.9:5000', 'certificate made', CA)
    assert len(report.ca_sha256) == 64
    for broken in ('', SUMMARY, CA + SUMMARY):
        with pytest.raises(exceptions.SSHError) as err:
            script_output.RegistryReport.from_output('registry-1', broken)
        assert 'unexpected script output' in str(err.value)


class FakeOp(object):
    def __init__(self, state, instance):
        self.state = state
        self.prefix = ''
        self.ctx = type('Ctx', (), {'vnf_instance': instance})()


def test_publishing_keeps_the_record_and_shows_the_ca(tmp_path):
    from k8s_mgmt.shared_phases import registry as registry_phases
    state = state_mod.InstanceState('inst-1', base_dir=str(tmp_path))
    instance = {'id': 'inst-1', 'metadata': {'other': 'kept'}}
    report = script_output.RegistryReport.from_output('registry-1',
                                                      SUMMARY + CA)
    volume = registry_topology().volumes[0]
    record = registry_phases.publish(FakeOp(state, instance), report, volume)
    assert state.read_json(state_mod.REGISTRY)['volume_id'] == VOLUME_ID
    assert instance['metadata'] == {
        'other': 'kept', 'k8sMgmtRegistryServer': '10.254.0.9:5000',
        'k8sMgmtRegistryConnectionType': '1',
        'k8sMgmtRegistryCaSha256': report.ca_sha256,
        'k8sMgmtRegistryCaPem': CA}
    assert record['metadata'] == sorted(instance['metadata'])[:4]
    # A kept volume must be the published one.
    registry_phases.check_same_volume(state, volume)
    with pytest.raises(exceptions.TopologyError) as err:
        registry_phases.check_same_volume(
            state, dataclasses.replace(volume, volume_id='other-id'))
    assert 'published with volume %s' % VOLUME_ID in str(err.value)
    assert state_mod.REGISTRY in shared_state.SHARED_FILES
