"""What each service of the control plane runs, in start order, and how
the lab tells that it serves: a Service (processes.py) per process."""

import os
import socket
import subprocess
import urllib.error
import urllib.request

from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import processes
from k8s_mgmt_lab.openstack import tacker_conductors
from k8s_mgmt_lab.openstack import venvs

MARIADBD = '/usr/sbin/mariadbd'
EPMD = '/usr/bin/epmd'
RABBITMQ_BIN = '/usr/lib/rabbitmq/bin'
RABBITMQ_NODE = 'rabbit@localhost'
# Known to ignore SIGTERM for over 15 s (cotyledon's manager).
ENGINE_STOP_TIMEOUT = 20.0
STOP_TIMEOUT = 15.0
# tacker-conductor's cotyledon manager logs the shutdown SIGTERM asks
# for and stays up: SIGKILL follows soon.
CONDUCTOR_STOP_TIMEOUT = 5.0


def base_env(layout):
    """What every service sees of the environment: nothing of the
    caller's (no OS_* variable of an operator leaks in)."""
    return {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'HOME': layout.root,
            'LANG': 'C.UTF-8', 'PYTHONUNBUFFERED': '1'}


def rabbitmq_env(layout, ports):
    env = base_env(layout)
    env.update(config.rabbitmq_env(layout, ports, RABBITMQ_NODE))
    return env


def tcp_listening(port):
    def ready():
        with socket.socket() as probe:
            probe.settimeout(1.0)
            try:
                probe.connect((config.HOST, port))
            except OSError as error:
                raise processes.NotReady('port %d: %s' % (port, error))
        return True
    return ready


def http_answers(url):
    """Ready once ``url`` answers below 500 (401 included: the service
    itself answered)."""
    def ready():
        try:
            with urllib.request.urlopen(url, timeout=2.0) as answer:
                return answer.status < 500
        except urllib.error.HTTPError as error:
            if error.code < 500:
                return True
            raise processes.NotReady('%s answered %d' % (url, error.code))
        except (OSError, ValueError) as error:
            raise processes.NotReady('%s: %s' % (url, error))
    return ready


def rabbitmq_waited(layout, ports):
    """rabbitmqctl wait, bounded per call: ready once the node has booted
    its applications."""
    def ready():
        try:
            done = subprocess.run(
                [RABBITMQ_BIN + '/rabbitmqctl', '-q', 'wait', '--timeout',
                 '10', layout.run + '/rabbitmq-server.pid'],
                env=rabbitmq_env(layout, ports), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                timeout=30)
        except subprocess.TimeoutExpired:
            raise processes.NotReady('rabbitmqctl wait timed out')
        if done.returncode:
            raise processes.NotReady('rabbitmqctl wait: %s' % (
                done.stdout.decode('utf-8', 'replace').strip()[-200:]))
        return True
    return ready


def rabbitmq_consumed(layout, ports, queues):
    """Ready once each of ``queues`` has a consumer on the plane's
    RabbitMQ: a service's RPC server listens there."""
    def ready():
        try:
            done = subprocess.run(
                [RABBITMQ_BIN + '/rabbitmqctl', '-q', 'list_queues',
                 '--no-table-headers', 'name', 'consumers'],
                env=rabbitmq_env(layout, ports), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                timeout=30)
        except subprocess.TimeoutExpired:
            raise processes.NotReady('rabbitmqctl list_queues timed out')
        consumers = {}
        for line in done.stdout.decode('utf-8', 'replace').splitlines():
            name, _tab, count = line.strip().partition('\t')
            consumers[name] = count
        idle = [name for name in queues if consumers.get(name, '0') == '0']
        if done.returncode or idle:
            raise processes.NotReady('no consumer on %s yet' % (
                ', '.join(idle) or 'the queues'))
        return True
    return ready


def log_says(path, text):
    """Ready once ``text`` appears in the log after this point."""
    try:
        start = os.path.getsize(path)
    except OSError:
        start = 0

    def ready():
        try:
            with open(path, 'rb') as handle:
                handle.seek(start)
                found = text.encode() in handle.read()
        except OSError:
            found = False
        if not found:
            raise processes.NotReady('no %r in its log yet' % text)
        return True
    return ready


def mariadb(layout, ports):
    return processes.Service(
        'mariadb', [MARIADBD, '--defaults-file=' + layout.mariadb_cnf],
        layout.mariadb, base_env(layout), tcp_listening(ports['mariadb']),
        60.0, STOP_TIMEOUT)


def epmd(layout, ports):
    """Erlang's port mapper, started here (not by RabbitMQ, which would
    leave it running detached) on this control plane's own port."""
    env = base_env(layout)
    env['ERL_EPMD_ADDRESS'] = config.HOST
    return processes.Service(
        'epmd', [EPMD, '-port', str(ports['epmd']), '-address', config.HOST],
        layout.rabbitmq, env, tcp_listening(ports['epmd']), 20.0,
        STOP_TIMEOUT)


def rabbitmq(layout, ports):
    return processes.Service(
        'rabbitmq', [RABBITMQ_BIN + '/rabbitmq-server'], layout.rabbitmq,
        rabbitmq_env(layout, ports), rabbitmq_waited(layout, ports), 90.0,
        STOP_TIMEOUT)


def keystone(layout, ports, venv):
    """Keystone under gunicorn, which reads every setting from the
    gunicorn.conf.py in its working directory."""
    return processes.Service(
        'keystone', [venvs.python(venv), '-m', 'gunicorn'],
        layout.keystone_etc, base_env(layout),
        http_answers(config.keystone_url(ports)), 60.0, STOP_TIMEOUT)


def heat_api(layout, ports, venv):
    return processes.Service(
        'heat-api', [venvs.python(venv), '-m', 'gunicorn'], layout.heat_etc,
        base_env(layout),
        http_answers('http://%s:%d/' % (config.HOST, ports['heat_api'])),
        60.0, STOP_TIMEOUT)


def heat_engine(layout, venv, log):
    return processes.Service(
        'heat-engine', venvs.entry_point_argv(
            venv, 'heat-engine', '--config-file',
            os.path.join(layout.heat_etc, 'heat.conf')),
        layout.heat_etc, base_env(layout),
        log_says(log, ENGINE_READY_TEXT), 90.0, ENGINE_STOP_TIMEOUT)


# What heat-engine logs once its worker listens on the message bus.
ENGINE_READY_TEXT = 'Starting engine_worker'


def barbican_env(layout):
    """Barbican's environment: its HOME is its configuration directory.
    Barbican reads no --config-file: the API and each of its plugins
    parse oslo.config's default files, the first of which found here is
    ~/barbican.conf."""
    env = base_env(layout)
    env['HOME'] = layout.barbican_etc
    return env


def barbican_api(layout, ports, venv):
    """barbican-api under gunicorn, settings in the gunicorn.conf.py of
    its working directory; ready once its version document answers."""
    return processes.Service(
        'barbican-api', [venvs.python(venv), '-m', 'gunicorn'],
        layout.barbican_etc, barbican_env(layout),
        http_answers(config.barbican_url(ports)), 60.0, STOP_TIMEOUT)


def tacker_server(layout, ports, venv):
    return processes.Service(
        'tacker-server', venvs.entry_point_argv(
            venv, 'tacker-server', '--config-file',
            os.path.join(layout.tacker_etc, 'tacker.conf')),
        layout.tacker_etc, base_env(layout),
        http_answers(config.tacker_url(ports)), 60.0, STOP_TIMEOUT)


def v2_script_log(layout, number):
    """Where the driver's v2 script logs when conductor ``number`` runs
    it (``$K8S_MGMT_V2_LOG`` in the conductor's environment, inherited by
    the script): beside the conductor's own log."""
    return os.path.join(layout.logs, '%s-k8s-mgmt-v2.log'
                        % tacker_conductors.service_name(number))


def tacker_conductor(layout, ports, venv, number=1):
    """Conductor ``number`` (tacker_conductors), with tacker.conf and its
    own conductor-K.conf; ready once its worker consumes the v1 and v2
    conductor topics as its own host (it logs nothing at INFO when it
    gets there). The driver's v2 script finds the conductor's
    configuration on the conductor's command line."""
    env = dict(base_env(layout),
               K8S_MGMT_V2_LOG=v2_script_log(layout, number))
    return processes.Service(
        tacker_conductors.service_name(number), venvs.entry_point_argv(
            venv, 'tacker-conductor', '--config-file',
            os.path.join(layout.tacker_etc, 'tacker.conf'), '--config-file',
            tacker_conductors.conf_path(layout, number)),
        layout.tacker_etc, env,
        rabbitmq_consumed(layout, ports, tacker_conductors.queues(number)),
        90.0, CONDUCTOR_STOP_TIMEOUT)
