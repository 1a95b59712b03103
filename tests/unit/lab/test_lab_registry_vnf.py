"""The lab's parts for the registry VNF: its sample on a lab subnet, a
companion's settings and record file, the report of its instantiate."""

import json

import pytest

from k8s_mgmt import shipped
from k8s_mgmt_lab import companions
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.errors import LabError


def test_the_registry_sample_is_taken_on_any_lab_subnet():
    body = shipped.sample_request('registry')
    assert manager.sample_on_subnet(body, '10.254.219.0/24') == body
    assert manager.request_flavour(body) == 'registry'


def test_a_companion_reads_and_writes_its_own_record(tmp_path):
    settings = manager.LabSettings(state_dir=str(tmp_path),
                                   subnet='10.9.0.0/24')
    companion = companions.settings_of(settings, 'registry')
    assert companion.lab_file == str(tmp_path / 'companion-registry.json')
    # Everything else is the lab's: its package, subnet, state.
    assert (companion.package_dir, companion.subnet) == (
        settings.package_dir, settings.subnet)
    manager.write_record(companion.lab_file, {'flavour': 'registry'})
    assert manager.read_record(companion)['flavour'] == 'registry'
    assert manager.read_record(settings) is None


def test_a_companion_needs_a_lab_up_here(tmp_path):
    lab = manager.Lab(manager.LabSettings(state_dir=str(tmp_path)))
    with pytest.raises(LabError, match='needs a lab that is up'):
        companions.add(lab, 'registry', shipped.sample_request('registry'))


def test_the_registry_report_is_what_the_driver_published(tmp_path):
    record = {'url': 'https://10.9.0.7:5000', 'server': '10.9.0.7:5000',
              'certificate': 'certificate made', 'ca_sha256': 'ab' * 32,
              'ca_pem': 'PEM', 'volume_id': 'v-1'}
    (tmp_path / 'registry.json').write_text(json.dumps(record))
    result = lcm.InstantiateResult('inst-1', 'registry', 1.0, 20.0,
                                   str(tmp_path), 'pkg')
    report = lcm.registry_report(result)
    assert (report['url'], report['ca_sha256']) == (record['url'],
                                                    'ab' * 32)
    (tmp_path / 'registry.json').unlink()
    with pytest.raises(LabError, match='published no registry'):
        lcm.registry_report(result)
