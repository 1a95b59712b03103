"""The lab conductor's side of real Keystone and Heat without either: the
record's region on every client, the volumes and heal marks read from
Heat-shaped listings, and status's ``openstack`` section."""

import os

import pytest

from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import status
from k8s_mgmt_lab.openstack import pins

HEAT = 'http://127.0.0.1:18004/v1/p/stacks/'
RECORD = {'stack_name': 'vnf', 'stack_id': 'top', 'flavour': 'storage',
          'daemon_pid': os.getpid(),
          'heat': {'auth_url': 'http://127.0.0.1:5000/v3', 'username': 'u',
                   'password': 'p', 'project_name': 'lab-p',
                   'user_domain_name': 'Default',
                   'project_domain_name': 'Default', 'region_name': 'lab-r'}}


def _res(stack, name, rtype, physical):
    return {'resource_name': name, 'resource_type': rtype,
            'physical_resource_id': physical,
            'links': [{'rel': 'stack', 'href': HEAT + stack}]}


LISTING = [
    _res('vnf/top', 'storage_server', 'OS::Nova::Server', 'srv-s'),
    _res('vnf/top', 'storage_volume', 'OS::Cinder::Volume', 'vol-s'),
    _res('vnf-w-m1/m1', 'workerNode', 'OS::Nova::Server', 'srv-w'),
    _res('vnf-w-m1/m1', 'worker_volume', 'OS::Cinder::Volume', 'vol-w'),
]


def test_every_client_asks_for_the_labs_region():
    assert status.lab_stacks(RECORD).heat['region_name'] == 'lab-r'
    assert status.lab_heat(RECORD).http_client.region_name == 'lab-r'
    assert lcm.vim_info(RECORD)['vim_auth']['region'] == 'lab-r'
    old = dict(RECORD, heat=dict(RECORD['heat'], region_name=None))
    assert 'region' not in lcm.vim_info(old)['vim_auth']


class ShownStacks(object):
    def resources(self, path):
        assert path == 'vnf/top'
        return LISTING

    def resource(self, stack, name):
        return {'attributes': {
            'id': 'vol-s', 'size': 1, 'status': 'in-use',
            'attachments': [{'device': '/dev/vdb', 'server_id': 'srv-s'}],
            'os-extended-volumes:volumes_attached': [{'id': 'vol-w'}]}}


def test_volumes_are_read_from_the_nested_listing():
    rows = status.read_volumes(RECORD, stacks=ShownStacks())
    assert [r['resource'] for r in rows] == ['storage_volume',
                                             'worker_volume']
    assert rows[0] == {'id': 'vol-s', 'resource': 'storage_volume',
                       'device': '/dev/vdb', 'server': 'srv-s', 'size': 1,
                       'status': 'in-use'}


def test_a_vnfc_heal_marks_the_server_and_its_volumes_in_their_stacks():
    assert lcm_heal.unhealthy_resources(
        ShownStacks(), 'vnf/top', 'srv-w', True) == [
            ('vnf-w-m1/m1', 'workerNode'), ('vnf-w-m1/m1', 'worker_volume')]
    assert lcm_heal.unhealthy_resources(
        ShownStacks(), 'vnf/top', 'srv-w', False) == [
            ('vnf-w-m1/m1', 'workerNode')]


def test_stand_ins_say_keystone_and_heat_are_real():
    text = status.STAND_INS['openstack']
    assert 'real Keystone %s and Heat %s' % (
        pins.version('keystone'), pins.version('openstack-heat')) in text
    assert 'Nova, Neutron, Cinder and Glance are the lab\'s stand-ins' \
        in text


def test_the_openstack_section_names_every_service(tmp_path):
    assert status.openstack_report(RECORD) is None
    record = dict(RECORD, openstack={
        'control_plane': str(tmp_path), 'shared': False, 'region': 'lab-r',
        'project': 'lab-p', 'log': '/var/log/lab.log',
        'iaas': {'nova': 'http://127.0.0.1:1/v2.1',
                 'neutron': 'http://127.0.0.1:2',
                 'cinder': 'http://127.0.0.1:3/v3',
                 'glance': 'http://127.0.0.1:4'}})
    found = status.openstack_report(record)
    assert {k: found[k] for k in ('auth_url', 'region', 'project', 'user')} \
        == {'auth_url': 'http://127.0.0.1:5000/v3', 'region': 'lab-r',
            'project': 'lab-p', 'user': 'u'}
    services = found['services']
    assert set(services) == {'mariadb', 'epmd', 'rabbitmq', 'keystone',
                             'heat-api', 'heat-engine', 'nova', 'neutron',
                             'cinder', 'glance'}
    assert services['keystone']['version'] == pins.version('keystone')
    assert services['keystone']['alive'] is False   # never started here
    assert services['nova'] == {
        'pid': os.getpid(), 'alive': True, 'log': '/var/log/lab.log',
        'url': 'http://127.0.0.1:1/v2.1',
        'version': 'compute v2.1, microversions 2.1 to 2.96'}


class RecreatingStacks(object):
    def __init__(self):
        self.calls = []

    def parameters(self, path):
        return {'nfv': {'VDU': {}}}

    def delete_and_wait(self, path):
        self.calls.append(('delete_and_wait', path))

    def create(self, name, template, files, parameters):
        self.calls.append(('create', name, template, sorted(files),
                           parameters))
        return '%s/new-id' % name

    def wait(self, path, action):
        self.calls.append(('wait', path, action))


def test_a_whole_vnf_heal_recreates_the_stack_heat_held(monkeypatch,
                                                        tmp_path):
    import types
    from k8s_mgmt import shipped
    stacks = RecreatingStacks()
    held = {'heat_template_version': '2016-10-14', 'resources': {}}
    monkeypatch.setattr(status, 'lab_stacks', lambda record: stacks)
    monkeypatch.setattr(status, 'lab_heat', lambda record: types.
                        SimpleNamespace(stacks=types.SimpleNamespace(
                            template=lambda path: held)))
    node = types.SimpleNamespace(server_id='srv-new')
    monkeypatch.setattr(status, 'read_topology', lambda record: types.
                        SimpleNamespace(all_nodes=lambda: [node]))
    written = []
    monkeypatch.setattr(lcm_heal.manager, 'write_record',
                        lambda path, record: written.append(dict(record)))
    settings = types.SimpleNamespace(
        package_dir=str(shipped.sample_package()),
        lab_file=str(tmp_path / 'lab.json'))
    record = dict(RECORD, vnfc_ids={'srv-old': 'v1'})
    assert lcm_heal.recreate_stack(settings, record) == 'new-id'
    assert stacks.calls == [
        ('delete_and_wait', 'vnf/top'),
        ('create', 'vnf', held, ['storage_nested_master.yaml',
                                 'storage_nested_worker.yaml'],
         {'nfv': {'VDU': {}}}),
        ('wait', 'vnf/new-id', 'CREATE')]
    assert written[0]['stack_id'] == 'new-id' and \
        written[0]['vnfc_ids'] == {}
    assert list(record['vnfc_ids']) == ['srv-new']


def test_a_lab_whose_services_died_is_reported_as_such(tmp_path):
    """After a machine restart nothing of the lab runs: status names the
    daemon and every control-plane service, and points at lab down."""
    from k8s_mgmt_lab import manager
    from k8s_mgmt_lab.errors import LabError
    dead_pid = 2 ** 22 + 1          # above pid_max's default: no process
    record = dict(RECORD, daemon_pid=dead_pid, stack_id=None,
                  stack_name=None, openstack={
                      'control_plane': str(tmp_path / 'plane'),
                      'shared': False, 'region': 'lab-r', 'project': 'lab-r',
                      'iaas': {}, 'log': None})
    assert status.dead_services(record) == [
        'the lab daemon (pid %d)' % dead_pid, 'epmd (pid None)',
        'heat-api (pid None)', 'heat-engine (pid None)',
        'keystone (pid None)', 'mariadb (pid None)', 'rabbitmq (pid None)']
    settings = manager.LabSettings(state_dir=str(tmp_path / 'lab'))
    manager.write_record(settings.lab_file, record)
    with pytest.raises(LabError) as refused:
        status.lab_status(settings, check_ssh=False)
    message = str(refused.value)
    assert 'is not running: the lab daemon' in message
    assert 'heat-engine (pid None)' in message and 'lab down' in message
    assert '\n' not in message


def test_a_lost_conductor_is_no_dead_lab_while_another_runs():
    """As with several conductor hosts, Tacker goes on while one of its
    conductors runs; with none left the lab is dead."""
    alive, dead = {'alive': True, 'pid': 10}, {'alive': False, 'pid': 11}
    record = dict(RECORD, daemon_pid=os.getpid())
    plane = {'services': {'tacker-server': alive, 'tacker-conductor': dead,
                          'tacker-conductor-2': alive}}
    assert status.dead_services(record, plane) == []
    plane['services']['tacker-conductor-2'] = dead
    assert status.dead_services(record, plane) == [
        'tacker-conductor (pid 11)', 'tacker-conductor-2 (pid 11)']


def test_a_lab_without_tacker_reports_none_of_the_planes_tacker(
        monkeypatch, tmp_path):
    """A test worker's plane runs Tacker for its Tacker labs (a conductor
    of it may be down by such a lab's doing); a lab of that worker without
    Tacker reports, and is judged by, only the services it uses."""
    dead, alive = {'alive': False, 'pid': 11}, {'alive': True, 'pid': 10}
    monkeypatch.setattr(
        status.control_plane.ControlPlane, 'status', lambda self: {
            'keystone': dict(alive), 'heat-engine': dict(alive),
            'tacker-server': dict(alive), 'tacker-conductor': dict(dead)})
    section = {'control_plane': str(tmp_path), 'shared': True,
               'region': 'lab-r', 'project': 'lab-r', 'iaas': {},
               'log': None}
    record = dict(RECORD, daemon_pid=os.getpid(),
                  openstack=dict(section, tacker=False))
    assert set(status.openstack_report(record)['services']) == {
        'keystone', 'heat-engine', 'nova', 'neutron', 'cinder', 'glance'}
    assert status.dead_services(record) == []
    record['openstack'] = dict(section, tacker=True)
    assert status.dead_services(record) == ['tacker-conductor (pid 11)']
