"""Steps 3 to 6 of the README's "Installing into Tacker", line by line
(readme_session), through the lab's real Tacker on two conductors, one
test per LCM call of the README, plus a scale in and a master's heal of
the operator's; before every LCM call the first conductor's driver state
directory is deleted (a new host, a wiped disk). After each, the cluster
is Ready, one master holds the VIP and no pinned host key went
unverified. The package is built beside the lab's own with a VNFD id of
its own (Tacker 16 never onboards one id twice), and the request names
the lab's package mirror, as the README's step 4 says. The tests run in
order on one lab; after a failure the later ones are skipped, naming it.

Real: Tacker, Heat, Keystone, Barbican, the message bus and the database;
the lab's VMs with OpenSSH, HAProxy, keepalived and etcd. Stand-ins: Nova,
Neutron, Cinder and Glance (the lab's), the Kubernetes binaries.
"""

import json
import os
import shutil

import pytest

from k8s_mgmt_lab import manager
import readme_session
import tacker_checks
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-readme', bridge='k8slabrd',
                  tag='krd', timeout=1800)
SUBNET = '10.254.230.0/24'


def _forget_conductor_one():
    """The first conductor's driver state directory, deleted."""
    path = tacker_checks.conductors(k8s_mgmt)['tacker-conductor'][
        'driver_state_dir']
    shutil.rmtree(path, ignore_errors=True)
    assert not os.path.exists(path)


def _the_operators_mirror(path):
    # README step 4: the nodes reach no pkgs.k8s.io, only the mirror.
    with open(path) as handle:
        request = json.load(handle)
    request['additionalParams']['k8s_cluster_installation_param'][
        'kubernetes_apt_repository'] = {
        'url': manager.repository_url(SUBNET)}
    with open(path, 'w') as handle:
        json.dump(request, handle)


def _checked(session):
    """The cluster Ready, one VIP holder, every pin verified."""
    session.cluster_ready()
    tacker_checks.one_vip_and_verified_pins(
        k8s_mgmt, SUBNET,
        [readme_session.server_id(v) for v in session.vnfcs()
         if v['vduid'] == 'masterNode'], session.instance_id())


@pytest.fixture(scope='module')
def steps(assert_lab_clean, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('readme'))
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'complex', '--subnet', SUBNET,
                 '--own-control-plane', '--conductors', '2')
        status = json.loads(k8s_mgmt('status', '--json').stdout)
        yield readme_session.Steps(readme_session.Session(
            k8s_mgmt, workdir, status['tacker']['vim_id'],
            edit_request=_the_operators_mirror,
            before_each=lambda line: _forget_conductor_one()))


session = readme_session.session_fixture()


def test_the_readme_to_its_instantiate(steps, session):
    steps.next_call('instantiate')
    _checked(session)


def test_the_readme_to_its_scale_out(steps, session):
    steps.next_call('scale')
    _checked(session)


def test_the_readme_to_its_heal_of_a_worker(steps, session):
    steps.next_call('heal')
    _checked(session)


def test_a_scale_in_the_operators_way(session):
    session.lcm('openstack vnflcm scale --type SCALE_IN --aspect-id '
                'worker_instance %s' % session.instance_id())
    _checked(session)


def test_a_heal_of_a_master_the_operators_way(session):
    master = next(v['id'] for v in session.vnfcs()
                  if v['vduid'] == 'masterNode')
    session.lcm('openstack vnflcm heal --vnfc-instance %s -- %s'
                % (master, session.instance_id()))
    _checked(session)


def test_the_readme_to_its_end(steps, session):
    """Terminate, then the README's delete: no instance left."""
    steps.next_call('terminate')
    steps.finish()
    assert [line for line, _code in session.transcript
            if 'vnflcm delete' in line]
    assert not readme_session.openstack_json(k8s_mgmt, 'vnflcm', 'list')
