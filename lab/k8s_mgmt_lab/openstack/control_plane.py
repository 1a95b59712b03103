"""ControlPlane: the real OpenStack services of one lab, started in
order on 127.0.0.1 under its state directory, set up on first start,
stopped in reverse order by PID.

    plane = ControlPlane(state_dir, cache_dir)   # tacker=True: Tacker too
    # conductors=N: N tacker-conductors (default: as recorded, else 1)
    plane.up()        # builds the venvs into the cache when missing
    plane.status()    # per service: pid, version, url, log, alive
    plane.openrc()    # text without the password; the file has it
    plane.down()
"""

import concurrent.futures
import os
import subprocess

from k8s_mgmt import polling
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import conductor_operations
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import pins
from k8s_mgmt_lab.openstack import processes
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.openstack import tacker_conductors
from k8s_mgmt_lab.openstack import tacker_driver
from k8s_mgmt_lab.openstack import venvs
# Defined beside the virtualenvs built there, where the command line reads
# it without importing the control plane.
from k8s_mgmt_lab.openstack.venvs import DEFAULT_CACHE

# Start order; down() stops in the reverse one.
SERVICE_NAMES = ('mariadb', 'epmd', 'rabbitmq', 'keystone', 'heat-api',
                 'heat-engine')
# Started after those by a plane made with tacker=True: Barbican, the key
# manager of Tacker's Kubernetes VIMs, first; then the conductors
# (tacker_conductors.service_names).
TACKER_SERVICE_NAMES = ('barbican-api', 'tacker-server', 'tacker-conductor')
# Every service a plane may run, in start order: what down() stops,
# whatever the plane's record says.
EVERY_SERVICE_NAME = (SERVICE_NAMES + TACKER_SERVICE_NAMES[:-1] +
                      tacker_conductors.ALL_NAMES)
# The ports each service listens on (state.PORT_NAMES and
# TACKER_PORT_NAMES), free before it starts.
SERVICE_PORTS = {'mariadb': ('mariadb',), 'epmd': ('epmd',),
                 'rabbitmq': ('rabbitmq', 'rabbitmq_dist'),
                 'keystone': ('keystone',), 'heat-api': ('heat_api',),
                 'barbican-api': ('barbican',), 'tacker-server': ('tacker',)}
# Seconds a port of a service may stay held before it starts.
PORT_WAIT = 30.0
# Every virtualenv a plane may run from: what ``control-plane build``
# makes.
VENV_NAMES = ('keystone', 'heat', 'tacker', 'barbican')


class NeverStarted(Exception):
    pass


class ControlPlane(object):

    def __init__(self, state_dir, cache_dir=DEFAULT_CACHE, ports=None,
                 tacker=False, conductors=None):
        self.layout = state.Layout(state_dir)
        self.cache_dir = cache_dir
        self._wanted_ports = ports
        # Opt-in for now: Tacker's services run only when asked for.
        self.tacker = tacker
        # How many tacker-conductors: asked for, else as last recorded.
        self.conductors = (
            tacker_conductors.check_count(conductors) if conductors
            else tacker_conductors.recorded_count(self.layout))
        self.supervisor = processes.Supervisor(self.layout.run,
                                               self.layout.logs)

    @property
    def ports(self):
        names = state.PORT_NAMES
        if self.tacker:
            names += state.TACKER_PORT_NAMES
        return state.ports(self.layout, self._wanted_ports, names)

    def venvs(self, names=VENV_NAMES):
        """The service virtualenvs ``names`` (by default every one),
        built into the cache if missing."""
        return {name: venvs.ensure(self.cache_dir, name) for name in names}

    def service_names(self):
        """What this plane runs, in start order: Tacker's services too
        when it was asked for or still runs."""
        if self.tacker or any(self.supervisor.pid(name)
                              for name in TACKER_SERVICE_NAMES):
            return SERVICE_NAMES + self._tacker_names()
        return SERVICE_NAMES

    def _tacker_names(self):
        return TACKER_SERVICE_NAMES[:-1] + tacker_conductors.service_names(
            self.conductors)

    def conductors_differ(self):
        """Whether the plane last ran another number of conductors than
        this one asks for (a kept plane restarted with another
        ``--conductors``)."""
        return self.conductors != tacker_conductors.recorded_count(
            self.layout)

    def client_venv(self):
        """The virtualenv of python-openstackclient (with Heat's
        plugin), built into the cache if missing."""
        return venvs.ensure(self.cache_dir, 'client')

    def client_env(self):
        """The environment ``openstack`` runs with as the lab's admin:
        this process's, with the openrc's variables (the password among
        them, from the 0600 secrets file: never on a command line)."""
        ports = state.recorded_ports(self.layout)
        if ports is None:
            raise NeverStarted('the control plane in %s was never started'
                               % self.layout.root)
        env = dict(os.environ)
        env.update(config.admin_env(ports,
                                    state.secrets(self.layout)['admin']))
        return env

    def up(self):
        """Start every service that does not run (setting up what was
        never set up): a plane that runs is left as it is, one whose Tacker
        or a conductor is missing gets them, one that runs another number
        of conductors has them (alone) restarted. On any failure stop
        everything and re-raise."""
        built = self.venvs(VENV_NAMES if self.tacker else ('keystone', 'heat'))
        if self.tacker and self.conductors_differ():
            self._stop_conductors()
        layout = self.layout
        for path in (layout.root, layout.run, layout.logs, layout.mariadb,
                     layout.rabbitmq, layout.keystone_etc, layout.heat_etc):
            os.makedirs(path, mode=0o700, exist_ok=True)
        ports, secrets = self.ports, state.secrets(layout)
        self._write_configs(ports, secrets, built['heat'])
        try:
            self._start_all(ports, secrets, built)
            if self.tacker:
                self._start_barbican(ports, secrets, built['barbican'])
                self._start_tacker(ports, secrets, built['tacker'])
        except BaseException:
            self.down()
            raise
        state.write_private(layout.openrc,
                            config.openrc(ports, secrets['admin']))

    def _write_configs(self, ports, secrets, heat_venv):
        layout = self.layout
        files = {
            layout.mariadb_cnf: config.mariadb_cnf(layout, ports),
            os.path.join(layout.rabbitmq, 'rabbitmq.conf'):
                config.rabbitmq_conf(),
            os.path.join(layout.rabbitmq, 'enabled_plugins'): '[].\n',
            os.path.join(layout.rabbitmq, 'rabbitmq-env.conf'): '',
            os.path.join(layout.keystone_etc, 'keystone.conf'):
                config.keystone_conf(layout, ports, secrets),
            os.path.join(layout.keystone_etc, 'gunicorn.conf.py'):
                config.keystone_gunicorn(layout, ports),
            os.path.join(layout.heat_etc, 'heat.conf'):
                config.heat_conf(layout, ports, secrets),
            os.path.join(layout.heat_etc, 'gunicorn.conf.py'):
                config.heat_gunicorn(layout, ports),
        }
        for path, text in files.items():
            state.write_private(path, text)
        bootstrap.heat_files(layout, heat_venv)
        os.makedirs(os.path.join(layout.keystone_etc, 'locks'),
                    exist_ok=True)

    def _start(self, service):
        """``service`` started unless it runs already, once its ports are
        free (a process of an earlier start that is not gone yet holds
        them for a moment; one that holds them longer is named)."""
        if self.supervisor.alive(service.name):
            return
        ports = self.ports
        held = [ports[name] for name in SERVICE_PORTS.get(service.name, ())]
        for _attempt in polling.Poll(PORT_WAIT, first=0.1, maximum=1.0):
            held = [port for port in held if not state.port_free(port)]
            if not held:
                break
        if held:
            raise processes.ServiceFailed(
                '%s cannot start: port %s on 127.0.0.1 is still held by '
                'another process after %d s (an earlier plane\'s? '
                '"ss -ltnp" names it)' % (
                    service.name, ', '.join(map(str, held)), PORT_WAIT))
        self.supervisor.start(service)

    def _start_all(self, ports, secrets, built):
        layout, start = self.layout, self._start
        bootstrap.once(layout, 'mariadb-install-db',
                       bootstrap.install_mariadb, layout)
        start(services.mariadb(layout, ports))
        bootstrap.once(layout, 'databases', bootstrap.create_databases,
                       layout, secrets)
        start(services.epmd(layout, ports))
        start(services.rabbitmq(layout, ports))
        bootstrap.once(layout, 'rabbitmq-user', bootstrap.add_rabbitmq_user,
                       layout, ports, secrets)
        bootstrap.once(layout, 'keystone-manage', bootstrap.keystone_manage,
                       layout, ports, secrets, built['keystone'])
        start(services.keystone(layout, ports, built['keystone']))
        bootstrap.once(layout, 'heat-registration', bootstrap.register_heat,
                       layout, ports, secrets)
        bootstrap.once(layout, 'heat-db-sync', bootstrap.heat_db_sync,
                       layout, built['heat'])
        start(services.heat_api(layout, ports, built['heat']))
        start(services.heat_engine(
            layout, built['heat'], self.supervisor.log_path('heat-engine')))

    def _start_barbican(self, ports, secrets, venv):
        """Barbican's database, Keystone user and catalog entry, schema,
        then barbican-api."""
        layout = self.layout
        os.makedirs(layout.barbican_etc, mode=0o700, exist_ok=True)
        files = {'barbican.conf': config.barbican_conf(layout, ports,
                                                       secrets),
                 'gunicorn.conf.py': config.barbican_gunicorn(layout, ports)}
        for name, text in files.items():
            state.write_private(os.path.join(layout.barbican_etc, name), text)
        bootstrap.barbican_files(layout, venv)
        bootstrap.once(layout, 'barbican-database',
                       bootstrap.create_databases, layout, secrets,
                       ('barbican',))
        bootstrap.once(layout, 'barbican-registration',
                       bootstrap.register_barbican, layout, ports, secrets)
        bootstrap.once(layout, 'barbican-db-manage',
                       bootstrap.barbican_db_manage, layout, venv)
        self._start(services.barbican_api(layout, ports, venv))

    def _start_tacker(self, ports, secrets, venv):
        """Tacker's database, Keystone user and catalog entry, schema,
        our driver in its virtualenv, the driver's state key, then
        tacker-server and the conductors."""
        layout = self.layout
        os.makedirs(layout.tacker_etc, mode=0o700, exist_ok=True)
        state.write_private(os.path.join(layout.tacker_etc, 'tacker.conf'),
                            config.tacker_conf(layout, ports, secrets))
        bootstrap.tacker_files(layout, venv)
        tacker_conductors.write_confs(layout, self.conductors)
        tacker_conductors.record_count(layout, self.conductors)
        bootstrap.tacker_state_key(layout)
        bootstrap.once(layout, 'tacker-database', bootstrap.create_databases,
                       layout, secrets, ('tacker',))
        bootstrap.once(layout, 'tacker-registration',
                       bootstrap.register_tacker, layout, ports, secrets)
        bootstrap.once(layout, 'tacker-db-manage',
                       bootstrap.tacker_db_manage, layout, venv)
        driver = self._install_driver(venv)
        self._start(services.tacker_server(layout, ports, venv))
        self._start_conductors(venv, driver, [
            number for number in range(1, self.conductors + 1)
            if not self.supervisor.alive(
                tacker_conductors.service_name(number))])

    def _install_driver(self, venv):
        with open(os.path.join(self.layout.logs, 'k8s-mgmt-driver.log'),
                  'ab') as log:
            return tacker_driver.ensure_installed(venv, log=log)

    def _start_conductors(self, venv, driver, numbers):
        """Start the conductors ``numbers`` side by side, as their hosts
        would, and record which driver wheel each loaded; the first
        failure is raised once all have come up or failed."""
        numbers, ports = list(numbers), self.ports
        if not numbers:
            return
        with concurrent.futures.ThreadPoolExecutor(len(numbers)) as pool:
            started = [pool.submit(self._start_conductor, venv, driver,
                                   ports, number) for number in numbers]
        for future in started:
            future.result()

    def _start_conductor(self, venv, driver, ports, number):
        self.supervisor.start(services.tacker_conductor(
            self.layout, ports, venv, number))
        state.write_private(self._conductor_driver_path(number),
                            driver + '\n')

    def _conductor_driver_path(self, number):
        return os.path.join(self.layout.run, '%s.driver' % (
            tacker_conductors.service_name(number)))

    def install_driver(self):
        """Reinstall the k8s-mgmt wheel into Tacker's virtualenv when a
        wheel of the checkout differs from the one there, and restart
        each running tacker-conductor that loaded another; True when one
        restarted."""
        venv = venvs.ensure(self.cache_dir, 'tacker')
        driver = self._install_driver(venv)
        stale = [number for number in range(1, self.conductors + 1)
                 if self._loaded_another(number, driver)]
        for number in stale:
            self.supervisor.stop(tacker_conductors.service_name(number),
                                 services.CONDUCTOR_STOP_TIMEOUT)
        if stale:
            self._start_conductors(venv, driver, stale)
        return bool(stale)

    def _loaded_another(self, number, driver):
        """Whether conductor ``number`` runs with a wheel other than
        ``driver``."""
        try:
            with open(self._conductor_driver_path(number)) as handle:
                loaded = handle.read().strip()
        except FileNotFoundError:
            loaded = None
        return self.supervisor.alive(
            tacker_conductors.service_name(number)) and loaded != driver

    def iaas_ports(self):
        """The ports of the Nova, Neutron, Cinder and Glance stand-ins,
        picked and recorded beside the others on first use."""
        return state.ports(self.layout, names=state.IAAS_PORT_NAMES)

    def register_iaas(self, endpoints=None):
        """The stand-ins (iaas.serve) in the catalog, once, at their
        recorded ports or at ``endpoints`` (service type -> URL)."""
        ports = self.ports
        ports.update(self.iaas_ports())
        bootstrap.register_iaas(ports, state.secrets(self.layout),
                                endpoints)

    def _stop_conductors(self):
        """Stop every conductor (each ignoring SIGTERM for seconds) side by
        side; the signal that ended each."""
        conductors = tacker_conductors.ALL_NAMES
        with concurrent.futures.ThreadPoolExecutor(len(conductors)) as pool:
            stopping = {name: pool.submit(
                self.supervisor.stop, name, _stop_timeout(name))
                for name in reversed(conductors)}
        return {name: future.result() for name, future in stopping.items()}

    def down(self):
        """Stop every service, last started first (the conductors side by
        side); returns the signal that ended each one that ran."""
        ended = self._stop_conductors()
        for name in reversed(EVERY_SERVICE_NAME):
            if name not in ended:
                ended[name] = self.supervisor.stop(name, _stop_timeout(name))
        return ended

    def status(self):
        """Per service: pid, alive, version, url and log (the urls are None
        before a first up chose the ports); per conductor also its driver
        state dir and the LCM operations its log shows."""
        ports = state.recorded_ports(self.layout)
        names = self.service_names()
        if ports is None:
            found = {name: {'pid': None, 'alive': False,
                            'version': version(name), 'url': None,
                            'log': self.supervisor.log_path(name)}
                     for name in names}
            return self._with_conductor_fields(found)
        urls = {'mariadb': 'mysql://%s:%d' % (config.HOST, ports['mariadb']),
                'epmd': 'epmd://%s:%d' % (config.HOST, ports['epmd']),
                'rabbitmq': 'rabbit://%s:%d' % (config.HOST,
                                                ports['rabbitmq']),
                'keystone': config.keystone_url(ports),
                'heat-api': config.heat_url(ports), 'heat-engine': None,
                'tacker-server': (config.tacker_url(ports)
                                  if 'tacker' in ports else None),
                'barbican-api': (config.barbican_url(ports)
                                 if 'barbican' in ports else None)}
        found = {}
        for name in names:
            found[name] = {
                'pid': self.supervisor.pid(name),
                'alive': self.supervisor.alive(name),
                'version': version(name), 'url': urls.get(name),
                'log': self.supervisor.log_path(name)}
        return self._with_conductor_fields(found)

    def _with_conductor_fields(self, found):
        for name, fields in found.items():
            number = tacker_conductors.number_of(name)
            if number is not None:
                fields['driver_state_dir'] = \
                    tacker_conductors.driver_state_dir(self.layout, number)
                fields['operations'] = conductor_operations.read_operations(
                    fields['log'])
        return found

    def openrc(self):
        """The admin's openrc without the password (the file at
        layout.openrc, 0600, has it)."""
        ports = state.recorded_ports(self.layout)
        if ports is None:
            raise NeverStarted('the control plane in %s was never started'
                               % self.layout.root)
        return config.openrc(ports)


def _stop_timeout(name):
    if tacker_conductors.number_of(name) is not None:
        return services.CONDUCTOR_STOP_TIMEOUT
    return {'heat-engine': services.ENGINE_STOP_TIMEOUT}.get(
        name, services.STOP_TIMEOUT)


def version(service):
    if service in ('keystone',):
        return pins.version('keystone')
    if service.startswith('heat'):
        return pins.version('openstack-heat')
    if service.startswith('tacker'):
        return pins.version('tacker')
    if service.startswith('barbican'):
        return pins.version('barbican')
    package = {'mariadb': 'mariadb-server', 'epmd': 'erlang-base',
               'rabbitmq': 'rabbitmq-server'}[service]
    done = subprocess.run(['dpkg-query', '-W', '-f=${Version}', package],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return done.stdout.decode().strip() or None
