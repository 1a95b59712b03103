"""Tacker 16's Kubernetes VIM on real Barbican (ControlPlane(tacker=True)
runs barbican-api): a VIM registered through Tacker's v1 API with the
lab's Kubernetes API stand-in as its cluster gets its fernet key stored
as a Barbican secret of Tacker's service project; Tacker's own VIM
client (the path the conductor takes) decrypts its credentials with it;
deleting the VIM deletes the secret."""

import hashlib
import json
import os
import subprocess
import time

import pytest

from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import processes
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.openstack import venvs
from k8s_mgmt_lab.tacker_api.client import Tacker
from tests.functional.openstack import iaas_fixture
from tests.helpers import standin_api

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
    yield from iaas_fixture.running_plane(tmp_path_factory,
                                          'tacker-barbican', tacker=True)


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
def tacker(plane):
    return Tacker.for_plane(plane)


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


def test_down_stops_barbican_by_its_pid(plane):
    pid = plane.status()['barbican-api']['pid']
    ended = plane.down()
    assert ended['barbican-api'] is not None
    assert not processes.group_alive(pid)
    assert not iaas_fixture.listening(plane.ports['barbican'])
