"""Cases run by test_tacker_compat.py in a process of their own.

The sample package's UserData through Tacker 16's own code path
(k8s_mgmt_lab.user_data.run): the request body checked against Tacker's API
schema, converted and built into an InstantiateVnfRequest as Tacker's API
does, the VNFD as Tacker stores it after load_csar_data, the BaseHOT read
by Tacker's get_base_nest_hot_dict, the UserData imported from the extracted
CSAR. Only Tacker's database lookup of the package directory is replaced.
"""

import copy
import json
import logging

import pytest
from oslo_config import cfg

tacker = pytest.importorskip('tacker', reason='tacker extra not installed')

from tacker.api.schemas import vnf_lcm  # noqa: E402
from tacker.api.validation import validators  # noqa: E402
from tacker.common import csar_utils  # noqa: E402
from tacker.common import exceptions as tacker_exceptions  # noqa: E402
from tacker.common import utils as tacker_utils  # noqa: E402
from tacker import context as tacker_context  # noqa: E402
from tacker import objects  # noqa: E402
from tacker.vnflcm import utils as vnflcm_utils  # noqa: E402
from tacker.vnfm.lcm_user_data import utils as tacker_user_data  # noqa

from k8s_mgmt import package  # noqa: E402
from k8s_mgmt import shipped  # noqa: E402
from k8s_mgmt_lab import user_data  # noqa: E402

pytestmark = pytest.mark.tacker

NET = 'c5d8e5e4-6d7e-4f6a-9b0b-1f6f0a4c2e11'
SUBNET = '0f6b7c1e-2b4d-4d5e-8f9a-3c2b1a0d9e8f'


@pytest.fixture(autouse=True)
def tolerate_tackers_broken_log_call(monkeypatch):
    # Tacker 16's tosca.utils.path_sol001_def logs with a malformed format
    # string ("'%'") when the PyPI wheel lacks etc/etsi-nfv; the stdlib
    # handler reports and goes on, pytest's capture handler re-raises.
    monkeypatch.setattr(logging, 'raiseExceptions', False)


@pytest.fixture(scope='module')
def csar(tmp_path_factory):
    path = tmp_path_factory.mktemp('csar') / 'package.zip'
    package.build(output=str(path))
    return str(path)


def nfv_paths(templates):
    """Every [nfv, kind, name, key] get_param of the templates."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            arg = value.get('get_param')
            if isinstance(arg, list) and arg[:1] == ['nfv']:
                found.append(arg)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(templates)
    return found


def resolve(parameters, path):
    value = parameters
    for key in path:
        value = value[key]
    return value


def with_protocol(body, cpd_id, protocol):
    body = copy.deepcopy(body)
    for link in body['extVirtualLinks']:
        for ext_cp in link['extCps']:
            if ext_cp['cpdId'] == cpd_id:
                ext_cp['cpConfig'] = [{'cpProtocolData': [protocol]}]
    return body


def ip_over_ethernet(**address):
    return {'layerProtocol': 'IP_OVER_ETHERNET',
            'ipOverEthernet': {'ipAddresses': [dict(type='IPV4',
                                                    **address)]}}


@pytest.mark.parametrize('flavour', shipped.sample_flavours())
def test_sample_request_passes_tackers_api_schema(flavour):
    body = shipped.sample_request(flavour)
    validators._SchemaValidator(vnf_lcm.instantiate).validate(body)
    broken = copy.deepcopy(body)
    del broken['extVirtualLinks'][0]['extCps'][0]['cpConfig']
    with pytest.raises(tacker_exceptions.ValidationError):
        validators._SchemaValidator(vnf_lcm.instantiate).validate(broken)


@pytest.mark.parametrize('flavour', shipped.sample_flavours())
def test_sample_request_fills_every_nfv_param_of_the_basehot(csar, flavour):
    parameters, templates = user_data.run(csar, shipped.sample_request(
        flavour))
    paths = nfv_paths(templates)
    assert paths, 'the BaseHOT reads no nfv parameter'
    for path in paths:
        assert resolve(parameters, path) not in (None, '', {}), path
    network = shipped.sample_request(flavour)['extVirtualLinks'][0][
        'resourceId']
    if flavour == 'registry':
        # One VM on its own port, in no group.
        assert parameters['nfv']['CP']['registry_CP'] == {
            'network': network, 'fixed_ips': []}
        assert parameters['nfv']['VDU']['registry']['flavor'] == 'm1.medium'
        return
    assert parameters['nfv']['CP']['masterNode_CP1'] == {
        'network': network, 'fixed_ips': []}
    masters = 1 if flavour in ('simple', 'storage') else 3
    assert parameters['nfv']['VDU']['masterNode']['desired_capacity'] == (
        masters)
    assert parameters['nfv']['VDU']['workerNode']['flavor'] == 'm1.medium'


def test_every_ip_over_ethernet_shape(csar):
    body = shipped.sample_request('complex')
    for link in body['extVirtualLinks']:
        link['resourceId'] = NET
    shapes = {
        'no ipOverEthernet': ({'layerProtocol': 'IP_OVER_ETHERNET'}, []),
        'fixed addresses in a subnet': (
            ip_over_ethernet(fixedAddresses=['10.10.0.5', '10.10.0.6'],
                             subnetId=SUBNET),
            [{'ip_address': '10.10.0.5', 'subnet': SUBNET},
             {'ip_address': '10.10.0.6', 'subnet': SUBNET}]),
        'fixed address, no subnet': (
            ip_over_ethernet(fixedAddresses=['10.10.0.7']),
            [{'ip_address': '10.10.0.7'}]),
        'dynamic addresses in a subnet': (
            ip_over_ethernet(numDynamicAddresses=2, subnetId=SUBNET),
            [{'subnet': SUBNET}, {'subnet': SUBNET}]),
        'MAC address only': (
            {'layerProtocol': 'IP_OVER_ETHERNET',
             'ipOverEthernet': {'macAddress': 'fa:16:3e:00:00:01'}}, []),
    }
    for name, (protocol, expected) in shapes.items():
        request = with_protocol(body, 'workerNode_CP2', protocol)
        validators._SchemaValidator(vnf_lcm.instantiate).validate(request)
        parameters, _ = user_data.run(csar, request)
        assert parameters['nfv']['CP']['workerNode_CP2'] == {
            'network': NET, 'fixed_ips': expected}, name
        assert parameters['nfv']['CP']['masterNode_CP1'] == {
            'network': NET, 'fixed_ips': []}, name


def test_tackers_network_helper_fails_where_ours_does_not():
    """Why the UserData builds the CPs itself: Tacker 16's helper raises on
    cpProtocolData without ipOverEthernet (the user guide's shape)."""
    context = tacker_context.get_admin_context()
    objects.register_all()
    body = shipped.sample_request('complex')
    request = objects.InstantiateVnfRequest.obj_from_primitive(
        tacker_utils.convert_camelcase_to_snakecase(body), context=context)
    skeleton = {'nfv': {'CP': {'masterNode_CP1': {}, 'workerNode_CP2': {}}}}
    with pytest.raises(AttributeError):
        tacker_user_data.create_network_dict(request, skeleton)


def test_a_cp_without_a_link_is_named_before_heat(csar):
    body = shipped.sample_request('complex')
    body['extVirtualLinks'] = body['extVirtualLinks'][:1]
    with pytest.raises(ValueError) as caught:
        user_data.run(csar, body)
    assert 'workerNode_CP2' in str(caught.value)
    assert 'extVirtualLinks' in str(caught.value)


def test_the_lab_gets_the_same_parameters_from_a_child_process(csar):
    body = shipped.sample_request('podaffinity')
    expected, _ = user_data.run(csar, body)
    assert user_data.hot_parameters(csar, body) == json.loads(
        json.dumps(expected))


@pytest.fixture(scope='module')
def extracted(csar, tmp_path_factory):
    """The CSAR as Tacker's onboarding extracts it: {package id: path}."""
    root = tmp_path_factory.mktemp('csar-root')
    cfg.CONF.set_override('vnf_package_csar_path', str(root),
                          group='vnf_package')
    raising, logging.raiseExceptions = logging.raiseExceptions, False
    try:
        csar_utils.load_csar_data(tacker_context.get_admin_context(), 'pkg',
                                  csar)
    finally:
        logging.raiseExceptions = raising
        cfg.CONF.clear_override('vnf_package_csar_path',
                                group='vnf_package')
    return str(root / 'pkg')


@pytest.mark.parametrize('flavour', shipped.sample_flavours())
def test_tacker_counts_the_vnfcs_heat_is_asked_for(csar, extracted,
                                                   monkeypatch, flavour):
    """Tacker builds instantiated_vnf_info with one VNFC per instance it
    counts from the VNFD (``_get_compute_nodes``: a VDU's scaling aspect,
    deltas and instantiation level; one for a VDU in no aspect). The
    UserData asks Heat for its desired_capacity from the VNFD too; the two
    must agree for every VDU, or Tacker lists fewer VNFCs than run."""
    parameters, _ = user_data.run(csar, shipped.sample_request(flavour))
    context = tacker_context.get_admin_context()
    objects.register_all()
    # The database lookup of the package's directory, as in user_data.run.
    monkeypatch.setattr(vnflcm_utils, '_get_vnf_package_path',
                        lambda ctx, vnfd_id: extracted)
    vnfd_dict = vnflcm_utils.get_vnfd_dict(context, 'vnfd', flavour)
    request = objects.InstantiateVnfRequest.obj_from_primitive(
        tacker_utils.convert_camelcase_to_snakecase(
            shipped.sample_request(flavour)), context=context)
    counted = {vdu: found['COUNT'] for vdu, found in
               vnflcm_utils._get_compute_nodes(vnfd_dict, request).items()}
    asked = {vdu: entry['desired_capacity'] for vdu, entry in
             parameters['nfv']['VDU'].items() if 'desired_capacity' in entry}
    if flavour == 'registry':
        # Its one VM is in no group: Heat makes one, Tacker counts one.
        assert asked == {} and counted == {'registry': 1}
        return
    assert asked
    assert {vdu: counted.get(vdu) for vdu in asked} == asked
