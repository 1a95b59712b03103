"""Every flavour but the complex one through Tacker's v2 API: each
instantiated, changed (simple: a certificate check by a PATCH; the others
scaled out by a worker) and terminated through the lab's verbs on a lab of
its own
(``lab up --api v2``), one after the other on the worker's control plane,
kept between them as an operator's Tacker outlives its VNFs (the complex
flavour's life: test_through_tacker_v2.py).

Real: Tacker 16 (v2 conductor running the package's script, which runs
the installed driver), Heat, Keystone, Barbican, the message bus and the
database; the lab's VMs with OpenSSH, HAProxy, keepalived and etcd.
Stand-ins: Nova, Neutron, Cinder and Glance (the lab's), the Kubernetes
binaries.
"""

import json

import pytest

import readme_session
from lab_cli import LabCLI

flavours_lab = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-v2f',
                      bridge='k8slabv3', tag='kv3t', timeout=1800)
FLAVOURS_SUBNET = '10.254.246.0/24'


@pytest.mark.parametrize('flavour', ['simple', 'podaffinity', 'storage',
                                     'kubespray'])
def test_every_other_flavour_through_v2(assert_lab_clean, flavour):
    with flavours_lab.fresh(assert_lab_clean):
        flavours_lab('up', '--flavour', flavour, '--subnet',
                     FLAVOURS_SUBNET, '--own-control-plane', '--api', 'v2')
        report = json.loads(flavours_lab('instantiate', '--json').stdout)
        assert report['operation_state'] == 'COMPLETED', report
        status = json.loads(flavours_lab('status', '--json').stdout)
        assert status['heat']['stack_name'] == (
            'vnf-%s' % report['vnf_instance_id'])
        kubernetes = [vm for vm in status['vms']
                      if vm['role'] in ('master', 'worker')]
        master = [vm for vm in kubernetes if vm['role'] == 'master'][0]
        ready = readme_session.nodes_ready(flavours_lab, master['server_id'])
        assert len(ready) == len(kubernetes) and all(ready.values()), ready
        if flavour == 'simple':
            # The lab's own verb: a v2 PATCH of the metadata.
            report = json.loads(flavours_lab('certs', 'check',
                                             '--json').stdout)
            assert report['operation_state'] == 'COMPLETED', report
        else:
            # A change of the cluster: one worker more, Ready.
            report = json.loads(flavours_lab('scale', '--type', 'SCALE_OUT',
                                             '--json').stdout)
            assert report['operation_state'] == 'COMPLETED', report
            status = json.loads(flavours_lab('status', '--json').stdout)
            workers = [vm for vm in status['vms'] if vm['role'] == 'worker']
            assert len(workers) == len(
                [vm for vm in kubernetes if vm['role'] == 'worker']) + 1
            ready = readme_session.nodes_ready(flavours_lab,
                                               master['server_id'])
            assert len(ready) == len(kubernetes) + 1 and all(
                ready.values()), ready
        vims = readme_session.openstack_json(flavours_lab, 'vim', 'list')
        assert sorted(v['type'] for v in vims) == [
            'kubernetes', 'openstack'], vims
        report = json.loads(flavours_lab('terminate', '--json').stdout)
        assert report['operation_state'] == 'COMPLETED', report
        vims = readme_session.openstack_json(flavours_lab, 'vim', 'list')
        assert [v['type'] for v in vims] == ['openstack'], vims
