"""`k8s-mgmt lab instantiate`: the hooks called as Tacker calls them.

Real parts: the lab (namespace VMs with sshd behind the Keystone/Heat APIs),
the real KubernetesMgmtDriver (a subclass only writes down the arguments of
each call before running the real hook), the package builder. Stand-ins: the
OpenStack APIs and, for the cluster itself, the lab's Kubernetes stand-ins.
"""

import inspect
import json
import os

import pytest

from k8s_mgmt import conf
from k8s_mgmt.driver import KubernetesMgmtDriver
from k8s_mgmt import package
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-lcmhooks'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.234.0/24',
                               bridge='k8slabq1', tag='lq1', compute_hosts=4)
CLI_STATE_DIR = '/var/lib/k8s-mgmt-lab-test-lcmcli'
k8s_mgmt = LabCLI(CLI_STATE_DIR, bridge='k8slabq2', tag='lq2', timeout=900)
CLI_SUBNET = '10.254.232.0/24'
TACKER_ARGS = {'context', 'vnf_instance', 'instantiate_vnf_request', 'grant',
               'grant_request'}
LAB_ARGS = {'vnf_package_path', 'vim_info'}


class RecordingDriver(KubernetesMgmtDriver):
    """The real driver; each hook call's arguments are written down first."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def instantiate_start(self, *args, **kwargs):
        self.calls.append(('instantiate_start', args, kwargs, id(self)))
        return super().instantiate_start(*args, **kwargs)

    def instantiate_end(self, *args, **kwargs):
        self.calls.append(('instantiate_end', args, kwargs, id(self)))
        return super().instantiate_end(*args, **kwargs)


@pytest.fixture
def lab(assert_lab_clean):
    the_lab = manager.Lab(SETTINGS)
    the_lab.down()
    try:
        yield the_lab
    finally:
        conf.CONF.clear_override('state_dir', group='k8s_mgmt')
        the_lab.down()
        assert_lab_clean(STATE_DIR, SETTINGS.tag, SETTINGS.bridge)


def test_hooks_get_the_conductors_keyword_arguments(lab):
    record = lab.up('simple', workers=2)
    driver = RecordingDriver()
    # The real hooks run to the end: a hook that raised would have been
    # called with arguments the driver cannot use.
    result = lcm.instantiate(SETTINGS, driver=driver)
    assert result.vnf_instance_id and os.path.isdir(result.driver_state)
    assert [c[0] for c in driver.calls] == ['instantiate_start',
                                            'instantiate_end']
    assert all(not c[1] for c in driver.calls)    # keyword arguments only
    assert len({c[3] for c in driver.calls}) == 1  # one driver instance
    start, end = driver.calls[0][2], driver.calls[1][2]
    assert set(start) == TACKER_ARGS | LAB_ARGS
    assert set(end) == TACKER_ARGS | LAB_ARGS | {'vnf'}
    for name, kwargs in (('instantiate_start', start),
                         ('instantiate_end', end)):
        inspect.signature(getattr(KubernetesMgmtDriver, name)).bind(
            driver, **kwargs)
        assert kwargs['grant'] is None and kwargs['grant_request'] is None

    saved = manager.read_record(SETTINGS)
    inst_id = saved['vnf_instance_id']
    assert lcm.instance_id(SETTINGS, saved) == inst_id  # stable per lab
    before, after = start['vnf_instance'], end['vnf_instance']
    assert before['id'] == after['id'] == end['vnf']['id'] == inst_id
    assert 'instance_id' not in before['instantiated_vnf_info']  # pre-Heat
    info = after['instantiated_vnf_info']
    assert info['instance_id'] == end['vnf']['instance_id'] == \
        record['stack_id']
    servers = {s.server_id for s in lab.region.stacks().servers(
        '%s/%s' % (record['stack_name'], record['stack_id']))}
    vnfcs = info['vnfc_resource_info']
    assert {v['compute_resource']['resource_id'] for v in vnfcs} == servers
    assert {v['id'] for v in vnfcs} == set(record['vnfc_ids'].values())
    assert {v['vdu_id'] for v in vnfcs} == {'masterNode', 'workerNode'}
    # As sent, as Tacker 16 stores them (seen through --tacker).
    stored = info['additional_params']
    request = start['instantiate_vnf_request']
    assert stored == request['additional_params']
    assert request['flavour_id'] == 'simple'
    assert 'master_node' in request['additional_params'][
        'k8s_cluster_installation_param']

    pkg = end['vnf_package_path']
    assert pkg.startswith(STATE_DIR + '/')
    with open(package.driver_module_path(), 'rb') as installed, \
            open(os.path.join(pkg, package.DRIVER_ARTIFACT), 'rb') as art:
        assert art.read() == installed.read()
    auth = end['vim_info']['vim_auth']
    assert end['vim_info']['vim_type'] == 'openstack'
    assert auth['auth_url'] == record['heat']['auth_url']
    assert auth['password'] == record['heat']['password']
    assert conf.CONF.k8s_mgmt.state_dir == lcm.driver_state_dir(SETTINGS)


@pytest.fixture
def cli_lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        yield


def test_instantiate_without_a_lab_is_one_line(cli_lab):
    proc = k8s_mgmt('instantiate', check=False)
    assert proc.returncode == 1
    assert proc.stderr.count('\n') == 1 and 'no lab is up' in proc.stderr


def test_lab_instantiate_ends_with_every_node_ready(cli_lab):
    k8s_mgmt('up', '--flavour', 'simple', '--workers', '2',
             '--subnet', CLI_SUBNET)
    proc = k8s_mgmt('instantiate', '--json', check=False)
    assert 'Traceback' not in proc.stderr
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert len(report['nodes']) == 3
    assert all(node['ready'] for node in report['nodes']), report['nodes']
    assert os.path.isfile(report['kubeconfig'])
    assert report['kubeconfig'].startswith(CLI_STATE_DIR + '/')
    assert report['vim_endpoint'].startswith('https://10.254.232.')
