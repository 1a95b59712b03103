"""The control plane's files as text, its pins, its recorded ports and
secrets, and the order ControlPlane stops things in: no process runs."""

import os
import stat

import pytest

from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import pins
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.openstack import venvs

PORTS = {'mariadb': 13306, 'epmd': 14369, 'rabbitmq': 15672,
         'rabbitmq_dist': 25672, 'keystone': 15000, 'heat_api': 18004}
SECRETS = {name: 'pw-' + name for name in state.SECRET_NAMES}


@pytest.fixture
def layout(tmp_path):
    return state.Layout(str(tmp_path / 'plane'))


def test_mariadb_listens_on_loopback_with_its_files_in_the_state_dir(layout):
    text = config.mariadb_cnf(layout, PORTS)
    assert 'bind-address = 127.0.0.1\n' in text
    assert 'port = 13306\n' in text
    assert 'datadir = %s/mariadb/data\n' % layout.root in text
    assert 'tmpdir = %s/run\n' % layout.root in text
    # Clients use the socket: root may log in only there.
    client = text.split('[client]')[1]
    assert client.split() == ['socket', '=', layout.mariadb_socket]


def test_rabbitmq_and_its_epmd_stay_on_loopback_and_in_the_state_dir(layout):
    env = config.rabbitmq_env(layout, PORTS, 'rabbit@localhost')
    assert env['ERL_EPMD_ADDRESS'] == '127.0.0.1'
    assert env['ERL_EPMD_PORT'] == '14369'
    assert env['RABBITMQ_NODE_IP_ADDRESS'] == '127.0.0.1'
    assert '{127,0,0,1}' in env['RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS']
    paths = [value for key, value in env.items()
             if key == 'HOME' or key.endswith(('_FILE', '_BASE', '_LOGS'))]
    assert paths and all(p.startswith(layout.root + '/') for p in paths)


def test_gunicorn_takes_no_command_line_and_makes_no_control_socket(layout):
    keystone = config.keystone_gunicorn(layout, PORTS)
    heat = config.heat_gunicorn(layout, PORTS)
    for text in (keystone, heat):
        assert 'control_socket_disable = True' in text
        compile(text, 'gunicorn.conf.py', 'exec')
    assert "bind = '127.0.0.1:15000'" in keystone
    assert 'OS_KEYSTONE_CONFIG_DIR=%s/keystone' % layout.root in keystone
    assert ("sys.argv = ['heat-api', '--config-file', '%s/heat/heat.conf']"
            % layout.root) in heat


def test_heat_conf_points_at_this_planes_services(layout):
    text = config.heat_conf(layout, PORTS, SECRETS)
    assert ('transport_url = rabbit://openstack:pw-rabbitmq@127.0.0.1:15672/'
            in text)
    assert 'heat:pw-heat_db@127.0.0.1:13306/heat' in text
    assert text.count('auth_url = http://127.0.0.1:15000/v3') == 2
    assert 'stack_domain_admin_password = pw-heat_domain_admin' in text


def test_openrc_prints_no_password_unless_asked():
    assert 'OS_PASSWORD' not in config.openrc(PORTS)
    assert "OS_PASSWORD='x'" in config.openrc(PORTS, 'x')
    assert 'OS_AUTH_URL=http://127.0.0.1:15000/v3' in config.openrc(PORTS)


def test_the_clients_environment_is_the_openrcs():
    env = config.admin_env(PORTS, 'pa ss')
    assert env['OS_PASSWORD'] == 'pa ss'
    assert env['OS_AUTH_URL'] == 'http://127.0.0.1:15000/v3'
    assert env['OS_USER_DOMAIN_NAME'] == 'Default'
    assert 'OS_PASSWORD' not in config.admin_env(PORTS)
    text = config.openrc(PORTS, 'pa ss')
    for name, value in env.items():
        wanted = "'%s'" % value if name == 'OS_PASSWORD' else value
        assert 'export %s=%s\n' % (name, wanted) in text


def test_the_client_needs_a_started_plane(tmp_path):
    plane = control_plane.ControlPlane(str(tmp_path), str(tmp_path))
    with pytest.raises(control_plane.NeverStarted):
        plane.client_env()


def test_pins_come_from_the_packaged_constraints_file():
    assert pins.version('keystone') == '30.0.0'
    assert pins.version('openstack-heat') == '27.0.1'
    assert pins.version('gunicorn')
    for line in pins.constraints_text().splitlines():
        assert line.startswith('#') or '==' in line, line


def test_a_venv_is_named_for_its_pins(monkeypatch, tmp_path):
    first = venvs.venv_path(str(tmp_path), 'heat')
    assert os.path.basename(first).startswith('heat-')
    monkeypatch.setattr(pins, 'constraints_text',
                        lambda release=pins.RELEASE: 'keystone==31.0.0\n')
    assert venvs.venv_path(str(tmp_path), 'heat') != first


def test_ports_and_secrets_are_recorded_private_and_kept(layout):
    os.makedirs(layout.root)
    ports = state.ports(layout)
    assert sorted(ports) == sorted(state.PORT_NAMES)
    assert len(set(ports.values())) == len(ports)
    made = state.secrets(layout)
    assert state.secrets(layout) == made
    assert state.ports(layout, PORTS) == ports
    for path in (layout.ports, layout.secrets):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_wanted_ports_are_taken_on_first_use(layout):
    os.makedirs(layout.root)
    assert state.ports(layout, PORTS) == PORTS


class _Recorder(object):
    def __init__(self):
        self.stopped = []

    def stop(self, name, timeout):
        self.stopped.append(name)


def test_down_stops_the_last_started_first(layout):
    plane = control_plane.ControlPlane(layout.root)
    plane.supervisor = _Recorder()
    plane.down()
    # Tacker's services too, every conductor a plane may run (first, side
    # by side): a plane made without tacker=True stops them when another
    # process started them.
    stopped = plane.supervisor.stopped
    assert sorted(stopped[:4]) == ['tacker-conductor', 'tacker-conductor-2',
                                   'tacker-conductor-3', 'tacker-conductor-4']
    assert stopped[4:] == list(reversed(
        control_plane.SERVICE_NAMES + control_plane.TACKER_SERVICE_NAMES[:-1]))


def test_a_failed_up_stops_what_it_started(layout, monkeypatch):
    plane = control_plane.ControlPlane(layout.root, ports=PORTS)
    plane.supervisor = _Recorder()
    monkeypatch.setattr(plane, 'venvs', lambda names: {'keystone': 'k',
                                                       'heat': 'h'})
    monkeypatch.setattr(plane, '_write_configs', lambda *args: None)

    def _fail(*args):
        raise RuntimeError('rabbitmq did not come up')
    monkeypatch.setattr(plane, '_start_all', _fail)
    with pytest.raises(RuntimeError):
        plane.up()
    assert len(plane.supervisor.stopped) == len(
        control_plane.EVERY_SERVICE_NAME)
    assert not os.path.exists(layout.openrc)


def test_a_new_build_removes_the_services_superseded_venvs(
        tmp_path, monkeypatch):
    cache = tmp_path / 'venvs'
    for name in ('heat-old1', 'heat-busy', 'keystone-old'):
        (cache / name / 'bin').mkdir(parents=True)
    monkeypatch.setattr(venvs, '_build', lambda target, service, log: (
        os.makedirs(target)))
    busy = str(cache / 'heat-busy')
    monkeypatch.setattr(venvs, '_paths_in_use', lambda paths: {
        p for p in paths if p == busy})
    target = venvs.ensure(str(tmp_path), 'heat')
    assert sorted(os.listdir(cache)) == sorted(
        ['.lock', 'heat-busy', 'keystone-old', os.path.basename(target)])
