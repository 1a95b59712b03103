"""Real Tacker 16 in a control plane of its own (ControlPlane(tacker=True):
MariaDB, RabbitMQ, Keystone, Heat, barbican-api, tacker-server and
tacker-conductor), up once for every test here. tacker-server answers both
VNF LCM API versions through Keystone, an operator's python-tackerclient
lists VIMs and packages, tacker-conductor loaded our management drivers
from the wheel built from this checkout. The lab's Tacker client
(k8s_mgmt_lab.tacker_api) has the sample VNF package built, uploaded and
ONBOARDED; an instance of its VNFD created, shown, listed and deleted; the
package disabled and deleted; Tacker's refusals read as one line. Nothing
is instantiated (that needs the lab's VMs). A Kubernetes VIM registered
through Tacker's v1 API with the lab's Kubernetes API stand-in as its
cluster gets its fernet key stored as a Barbican secret of Tacker's
service project; Tacker's own VIM client (the path the conductor takes)
decrypts its credentials with it; deleting the VIM deletes the secret.
Then everything down: nothing of the plane is left running or listening,
barbican-api stopped by its PID."""

import hashlib
import json
import os
import subprocess
import time
import uuid

import pytest

from k8s_mgmt import package as k8s_package
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import processes
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.openstack import tacker_driver
from k8s_mgmt_lab.openstack import venvs
from k8s_mgmt_lab.tacker_api.client import Tacker
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from tests.functional.openstack import iaas_fixture
from tests.helpers import standin_api

DRIVERS = ('mgmt-drivers-kubernetes', 'mgmt-drivers-kubespray')

TOKEN = 'vim-token-' + hashlib.sha256(os.urandom(16)).hexdigest()[:24]

# Run by the tacker virtualenv's python with tacker.conf and a VIM id:
# Tacker's VimClient reads the VIM as the conductor does (its key from
# Barbican) and prints digests of what it decrypted, never the values.
_READ_VIM = '''
import hashlib, json, sys
from tacker.common import config
# The conductor's module registers [keystone_authtoken]'s options that
# Tacker's key manager reads (auth_url, the service user's).
from tacker.conductor import conductor_server  # noqa
config.init(['--config-file', sys.argv[1]])
from tacker import context
from tacker.vnfm import vim_client
auth = vim_client.VimClient().get_vim(
    context.get_admin_context(), sys.argv[2])['vim_auth']
print(json.dumps({name: hashlib.sha256(auth[name].encode()).hexdigest()
                  for name in ('bearer_token', 'ssl_ca_cert')}))
'''


@pytest.fixture(scope='module')
def plane(tmp_path_factory):
    yield from iaas_fixture.running_plane(tmp_path_factory, 'tacker',
                                          tacker=True)


@pytest.fixture(scope='module')
def tacker(plane):
    return Tacker.for_plane(plane)


@pytest.fixture(scope='module')
def package(tacker, tmp_path_factory):
    """The sample package, as ``k8s-mgmt package build`` writes it,
    onboarded."""
    path = tmp_path_factory.mktemp('csar') / 'k8s_mgmt_vnf_package.zip'
    k8s_package.build(output=str(path))
    started = time.monotonic()
    onboarded = tacker.packages.onboard(str(path), deadline=120)
    print('package onboarded in %.1f s' % (time.monotonic() - started))
    return onboarded


@pytest.fixture(scope='module')
def default_vim(plane, tacker):
    """The plane's own OpenStack as Tacker's default VIM: Tacker creates
    no instance without one."""
    body = {'vim': {
        'name': 'lab-plane', 'description': 'the control plane itself',
        'type': 'openstack', 'is_default': True,
        'auth_url': config.keystone_url(plane.ports),
        'auth_cred': {'username': 'admin', 'user_domain_name': 'Default',
                      'password': state.secrets(plane.layout)['admin'],
                      'cert_verify': 'False'},
        'vim_project': {'name': 'admin', 'project_domain_name': 'Default'}}}
    return tacker.rest.json('register VIM', 'POST', 'v1.0/vims',
                            expect=(201,), json=body)['vim']


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    """The lab's Kubernetes API stand-in on 127.0.0.1 over a real etcd,
    with a bearer token of system:masters and namespace default."""
    if standin_api.ETCD is None:
        pytest.skip('needs etcd')
    with standin_api.running_etcd(tmp_path_factory.mktemp('etcd') / 'data',
                                  'barbican-test') as etcd:
        srv = standin_api.serve(etcd, tmp_path_factory.mktemp('pki'))
        srv.api.store.add_token(TOKEN, 'admin', ['system:masters'])
        srv.api.resources.create('', 'v1', 'namespaces', None,
                                 {'metadata': {'name': 'default'}})
        try:
            yield srv
        finally:
            srv.shutdown()
            srv.server_close()


@pytest.fixture(scope='module')
def barbican(plane):
    """A keystoneauth session as Tacker's service user (whose project
    owns the VIM keys) and Barbican's v1 URL from the catalog."""
    from keystoneauth1.identity import v3
    from keystoneauth1 import session
    ports, secrets = plane.ports, state.secrets(plane.layout)
    auth = v3.Password(auth_url=config.keystone_url(ports),
                       username='tacker', password=secrets['tacker'],
                       user_domain_id='default', project_name='service',
                       project_domain_id='default')
    made = session.Session(auth=auth, timeout=30)
    url = made.get_endpoint(service_type='key-manager',
                            interface='internal', region_name='RegionOne')
    return made, url.rstrip('/') + '/v1'


def _session(plane, authenticated=True):
    if not authenticated:
        from keystoneauth1 import session
        return session.Session()
    return iaas_fixture.admin_session(plane)


def _openstack(plane, *words):
    """``openstack WORDS -f json`` from the client venv as the plane's
    admin, parsed."""
    done = subprocess.run(
        venvs.entry_point_argv(plane.client_venv(), 'openstack', *words)
        + ['-f', 'json'], env=plane.client_env(), capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _refusal(call, *args):
    with pytest.raises(TackerApiError) as caught:
        call(*args)
    text = str(caught.value)
    print(text)
    assert '\n' not in text and 'Traceback' not in text
    return caught.value


def _secret_ids(barbican):
    made, url = barbican
    listed = made.get(url + '/secrets', params={'limit': 100}).json()
    return {ref['secret_ref'].rpartition('/')[2]
            for ref in listed['secrets']}


def _read_back(plane, vim_id):
    venv = venvs.ensure(plane.cache_dir, 'tacker')
    done = subprocess.run(
        [venvs.python(venv), '-c', _READ_VIM,
         os.path.join(plane.layout.tacker_etc, 'tacker.conf'), vim_id],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def processes_rss(pid):
    """The resident memory of ``pid``'s process group (gunicorn's master
    and its worker), in bytes."""
    total = 0
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != pid:
                continue
            with open('/proc/%s/status' % entry) as handle:
                for line in handle:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return total


# Tacker's services, before any VIM, package or instance exists.

def test_tacker_runs_beside_keystone_and_heat(plane):
    status = plane.status()
    assert all(service['alive'] for service in status.values()), status
    assert status['tacker-server']['version'] == '16.0.0'
    assert status['tacker-server']['url'] == config.tacker_url(plane.ports)
    assert status['tacker-conductor']['log'].startswith(plane.layout.logs)


def test_both_vnf_lcm_api_versions_answer_through_keystone(plane):
    keystone = _session(plane)
    url = keystone.get_endpoint(service_type='nfv-orchestration',
                                interface='public', region_name='RegionOne')
    assert url == plane.status()['tacker-server']['url']
    versions = keystone.get(url + 'vnflcm/api_versions').json()
    assert [v['version'] for v in versions['apiVersions']] == [
        '1.3.0', '2.0.0']
    assert keystone.get(url + 'vnflcm/v2/vnf_instances',
                        headers={'Version': '2.0.0'}).json() == []
    anonymous = _session(plane, authenticated=False).get(
        url + 'vnflcm/v2/vnf_instances', raise_exc=False)
    assert anonymous.status_code == 401


def test_an_operator_lists_vims_and_packages_with_tackerclient(plane):
    assert _openstack(plane, 'vim', 'list') == []
    assert _openstack(plane, 'vnf', 'package', 'list') == []
    assert _openstack(plane, 'vnflcm', 'list') == []


def test_the_conductor_loaded_our_drivers_from_this_checkout(plane):
    with open(plane.status()['tacker-conductor']['log']) as handle:
        registered = [line for line in handle
                      if 'Registered drivers from '
                         'tacker.tacker.mgmt.drivers' in line]
    assert registered and all(name in registered[-1] for name in DRIVERS)
    venv = venvs.ensure(plane.cache_dir, 'tacker')
    loaded = subprocess.run(
        [venvs.python(venv), '-c',
         'from importlib.metadata import entry_points\n'
         "for e in entry_points(group='tacker.tacker.mgmt.drivers'):\n"
         "    if e.name.startswith('mgmt-drivers-'):\n"
         "        print(e.name, e.load().__module__)\n"],
        capture_output=True, text=True, timeout=60, check=True)
    assert sorted(loaded.stdout.splitlines()) == [
        'mgmt-drivers-kubernetes k8s_mgmt.driver',
        'mgmt-drivers-kubespray k8s_mgmt.kubespray.driver']
    with open(os.path.join(plane.layout.run,
                           'tacker-conductor.driver')) as handle:
        assert handle.read().strip() == tacker_driver.recorded(venv)['wheel']


# The lab's Tacker client: a package, an instance, refusals.

def test_the_client_finds_tacker_in_keystones_catalog(plane, tacker):
    assert tacker.endpoint() == plane.status()['tacker-server']['url']


def test_the_sample_package_is_onboarded(tacker, package):
    assert (package['onboardingState'], package['operationalState'],
            package['usageState']) == ('ONBOARDED', 'ENABLED', 'NOT_IN_USE')
    assert package['vnfdId']
    assert tacker.packages.show(package['id'])['vnfdId'] == package['vnfdId']
    onboarded = tacker.packages.list(filter='(eq,onboardingState,ONBOARDED)')
    assert [p['id'] for p in onboarded] == [package['id']]


def test_an_instance_of_its_vnfd_is_created_shown_listed_and_deleted(
        tacker, package, default_vim):
    instance = tacker.instances.create(
        package['vnfdId'], name='lab-api', description='tacker_api test',
        metadata={'lab': 'functional'})
    shown = tacker.instances.show(instance['id'])
    assert (shown['vnfdId'], shown['vnfInstanceName'],
            shown['instantiationState']) == (
        package['vnfdId'], 'lab-api', 'NOT_INSTANTIATED')
    assert shown['metadata']['lab'] == 'functional'
    assert default_vim['is_default']
    assert instance['id'] in [i['id'] for i in tacker.instances.list()]
    assert tacker.packages.show(package['id'])['usageState'] == 'IN_USE'
    tacker.instances.delete(instance['id'])
    assert tacker.instances.list() == []
    gone = _refusal(tacker.instances.show, instance['id'])
    assert gone.status == 404
    assert tacker.packages.show(package['id'])['usageState'] == 'NOT_IN_USE'


def test_instantiate_of_a_missing_instance_is_one_line(tacker):
    missing = str(uuid.uuid4())
    refused = _refusal(tacker.instances.instantiate, missing,
                       {'flavourId': 'simple'})
    assert refused.status == 404 and refused.op_id is None
    assert str(refused).startswith(
        'instantiate VNF instance %s: HTTP 404: ' % missing)
    assert missing in refused.detail


def test_an_unknown_op_occurrence_is_one_line(tacker):
    missing = str(uuid.uuid4())
    refused = _refusal(tacker.op_occs.wait, missing, 5)
    assert refused.status == 404
    assert str(refused).startswith(
        'wait (op occurrence %s): HTTP 404: ' % missing)


def test_the_package_is_disabled_then_deleted(tacker, package):
    enabled = _refusal(tacker.packages.delete, package['id'])
    assert enabled.status == 409 and 'ENABLED' in enabled.detail
    assert tacker.packages.disable(package['id'])['operationalState'] == (
        'DISABLED')
    tacker.packages.delete(package['id'])
    assert _refusal(tacker.packages.show, package['id']).status == 404
    assert tacker.packages.list() == []


# Barbican: a Kubernetes VIM's key.

def test_barbican_api_runs_in_a_tacker_plane(plane, barbican):
    status = plane.status()['barbican-api']
    assert status['alive'] and status['version'] == '23.0.0'
    assert barbican[1] == config.barbican_url(plane.ports) + 'v1'
    rss = processes_rss(status['pid'])
    print('barbican-api RSS %.0f MiB' % (rss / 2 ** 20))
    # The KEK is in the plane's 0600 secrets and barbican.conf only.
    conf = os.path.join(plane.layout.barbican_etc, 'barbican.conf')
    assert os.stat(conf).st_mode & 0o077 == 0
    kek = state.secrets(plane.layout)['barbican_kek']
    with open(status['log']) as handle:
        assert kek not in handle.read()


def test_a_kubernetes_vim_keeps_its_key_in_barbican(plane, cluster, tacker,
                                                    barbican):
    before = _secret_ids(barbican)
    body = {'vim': {
        'name': 'k8s-on-barbican', 'type': 'kubernetes',
        'description': 'the API server stand-in',
        'auth_url': cluster.url,
        'auth_cred': {'bearer_token': TOKEN,
                      'ssl_ca_cert': cluster.ca_pem},
        'vim_project': {'name': 'default'}}}
    started = time.monotonic()
    vim = tacker.rest.json('register VIM', 'POST', 'v1.0/vims',
                           expect=(201,), json=body)['vim']
    print('Kubernetes VIM registered in %.1f s'
          % (time.monotonic() - started))
    auth = vim['auth_cred']
    assert auth['key_type'] == 'barbican_key', auth.get('key_type')
    # Tacker's API masks the token, the CA and the secret's id alike.
    assert auth['secret_uuid'] == '***'
    assert TOKEN not in json.dumps(vim)
    assert 'default' in vim['placement_attr']['regions']

    # One new secret of Tacker's service project: the VIM's key.
    added = _secret_ids(barbican) - before
    assert len(added) == 1, added
    secret_id = added.pop()
    made, url = barbican
    meta = made.get('%s/secrets/%s' % (url, secret_id)).json()
    assert meta['secret_type'] == 'opaque' and meta['status'] == 'ACTIVE'

    # Tacker reads it back: the VIM as shown, and its credentials as
    # the conductor decrypts them with the key from Barbican.
    shown = tacker.rest.json('show VIM', 'GET',
                             'v1.0/vims/%s' % vim['id'])['vim']
    assert shown['auth_cred']['key_type'] == 'barbican_key'
    assert shown['status'] in ('ACTIVE', 'REACHABLE', 'PENDING')
    assert _read_back(plane, vim['id']) == {
        'bearer_token': _digest(TOKEN),
        'ssl_ca_cert': _digest(cluster.ca_pem)}

    # The token reached no log.
    for name in ('tacker-server', 'tacker-conductor', 'barbican-api'):
        with open(plane.supervisor.log_path(name)) as handle:
            assert TOKEN not in handle.read(), name

    tacker.rest.call('delete VIM', 'DELETE', 'v1.0/vims/%s' % vim['id'],
                     expect=(204,))
    assert secret_id not in _secret_ids(barbican)
    gone = made.get('%s/secrets/%s' % (url, secret_id), raise_exc=False)
    assert gone.status_code == 404


# Restarts, after every test that calls Tacker: a conductor or a
# tacker-server restarting under another test would fail it.

def test_an_unchanged_checkout_restarts_nothing(plane):
    # The first call catches up with edits made since up (others may be
    # editing this checkout); the second must find nothing to do.
    plane.install_driver()
    pid = plane.supervisor.pid('tacker-conductor')
    started = time.monotonic()
    assert plane.install_driver() is False
    assert time.monotonic() - started < 5
    assert plane.supervisor.pid('tacker-conductor') == pid


def test_tacker_server_comes_back_after_a_stop(plane):
    plane.supervisor.stop('tacker-server', services.STOP_TIMEOUT)
    started = time.monotonic()
    plane.supervisor.start(services.tacker_server(
        plane.layout, plane.ports, venvs.ensure(plane.cache_dir, 'tacker')))
    print('tacker-server ready in %.1f s' % (time.monotonic() - started))
    assert plane.status()['tacker-server']['alive']


# Last: the plane down.

def test_down_leaves_no_process_no_listener_and_no_tacker(plane):
    status = plane.status()
    pids = [service['pid'] for service in status.values()]
    barbican_pid = status['barbican-api']['pid']
    started = time.monotonic()
    ended = plane.down()
    print('down in %.1f s' % (time.monotonic() - started))
    assert ended['tacker-server'] is not None
    assert ended['tacker-conductor'] is not None
    assert ended['barbican-api'] is not None
    assert not any(processes.group_alive(pid) for pid in pids)
    assert not processes.group_alive(barbican_pid)
    assert [name for name, port in plane.ports.items()
            if iaas_fixture.listening(port)] == []
    assert not iaas_fixture.listening(plane.ports['barbican'])
    assert not any(s['alive'] for s in plane.status().values())
