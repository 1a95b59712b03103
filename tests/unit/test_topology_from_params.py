import json
import pathlib

from k8s_mgmt import params
from k8s_mgmt.topology.from_params import spec_from_params

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(path):
    return params.load_request(json.loads(path.read_text()))


def test_complex_request_names_groups_and_vip():
    spec = spec_from_params(
        _load(ROOT / 'k8s_mgmt/samples/requests/complex.json'))
    [master] = spec.groups_of('master')
    [worker] = spec.groups_of('worker')
    assert (master.aspect_id, master.ssh_cp_name) == ('master_instance',
                                                      'masterNode_CP1')
    assert (worker.aspect_id, worker.ssh_cp_name) == ('worker_instance',
                                                      'workerNode_CP2')
    assert spec.cluster_cp_name == 'vip_CP'
    assert not spec.groups_of('storage') and spec.volume_resource_ids == ()


def test_storage_server_and_volumes_come_from_the_storage_params():
    # The seed's proxy ports are placeholders ("port1") the validator
    # refuses; they do not matter here.
    seed = (ROOT / 'tests/fixtures/requests/seed_003_0_simple.json')
    text = seed.read_text().replace(':port1"', ':3128"').replace(
        ':port2"', ':3129"')
    spec = spec_from_params(params.load_request(json.loads(text)))
    [storage] = spec.groups_of('storage')
    assert storage.ssh_cp_name == 'storage_server_CP'
    assert storage.aspect_id is None
    assert spec.volume_resource_ids == ('storage_server_volume',)
