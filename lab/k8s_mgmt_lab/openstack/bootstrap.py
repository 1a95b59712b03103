"""Setting the control plane up as a deployment guide would: databases
and their users, the message bus's user, Keystone's keys and admin, the
service catalog, Heat's users, roles and stack domain. Each step runs
once per state directory (a stamp file says it ran), so an up that
failed half-way takes up where it stopped. Passwords go to files, to
standard input or to the environment, never to a command line."""

import os
import shutil
import subprocess

from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import processes
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import venvs

# The region keystone-manage bootstrap makes, where Keystone's and Heat's
# own endpoints are.
REGION = 'RegionOne'


class StepFailed(Exception):
    pass


def once(layout, name, step, *args):
    stamp = os.path.join(layout.root, 'done', name)
    if os.path.exists(stamp):
        return
    step(*args)
    os.makedirs(os.path.dirname(stamp), mode=0o700, exist_ok=True)
    open(stamp, 'w').close()


def run(layout, name, argv, env=None, stdin_text=None):
    """Run a setup command with its output appended to logs/<name>.log;
    one line with that log's tail when it fails."""
    log = os.path.join(layout.logs, name + '.log')
    with open(log, 'ab') as out:
        done = subprocess.run(
            argv, env=env or services.base_env(layout), cwd=layout.root,
            input=(stdin_text or '').encode(), stdout=out,
            stderr=subprocess.STDOUT)
    if done.returncode:
        raise StepFailed('%s failed with exit code %d; log %s: %s' % (
            name, done.returncode, log, processes.log_tail(log)))


def install_mariadb(layout):
    shutil.rmtree(layout.mariadb_data, ignore_errors=True)
    run(layout, 'mariadb-install-db', [
        'mariadb-install-db', '--defaults-file=' + layout.mariadb_cnf,
        '--auth-root-authentication-method=socket', '--skip-test-db'])


def create_databases(layout, secrets, names=('keystone', 'heat')):
    sql = ''
    for name in names:
        password = secrets[name + '_db']
        sql += ("CREATE DATABASE IF NOT EXISTS {0};\n"
                "CREATE USER IF NOT EXISTS '{0}'@'127.0.0.1' "
                "IDENTIFIED BY '{1}';\n"
                "GRANT ALL PRIVILEGES ON {0}.* TO '{0}'@'127.0.0.1';\n"
                ).format(name, password)
    run(layout, 'mariadb-setup',
        ['mariadb', '--defaults-file=' + layout.mariadb_cnf], stdin_text=sql)


def add_rabbitmq_user(layout, ports, secrets):
    env = services.rabbitmq_env(layout, ports)
    ctl = services.RABBITMQ_BIN + '/rabbitmqctl'
    run(layout, 'rabbitmq-setup', [ctl, 'add_user', 'openstack'], env=env,
        stdin_text=secrets['rabbitmq'] + '\n')
    run(layout, 'rabbitmq-setup', [ctl, 'set_permissions', 'openstack',
                                   '.*', '.*', '.*'], env=env)


def keystone_manage(layout, ports, secrets, venv):
    conf = os.path.join(layout.keystone_etc, 'keystone.conf')
    url = config.keystone_url(ports)
    manage = ['--config-file', conf]
    owner = ['--keystone-user', 'root', '--keystone-group', 'root']
    for args in (['db_sync'], ['fernet_setup'] + owner,
                 ['credential_setup'] + owner):
        run(layout, 'keystone-manage', venvs.entry_point_argv(
            venv, 'keystone-manage', *(manage + args)))
    env = services.base_env(layout)
    env['OS_BOOTSTRAP_PASSWORD'] = secrets['admin']
    run(layout, 'keystone-manage', venvs.entry_point_argv(
        venv, 'keystone-manage', *(manage + [
            'bootstrap', '--bootstrap-username', 'admin',
            '--bootstrap-project-name', 'admin',
            '--bootstrap-role-name', 'admin',
            '--bootstrap-service-name', 'keystone',
            '--bootstrap-region-id', REGION,
            '--bootstrap-admin-url', url, '--bootstrap-internal-url', url,
            '--bootstrap-public-url', url])), env=env)


def heat_db_sync(layout, venv):
    run(layout, 'heat-manage', venvs.entry_point_argv(
        venv, 'heat-manage', '--config-file',
        os.path.join(layout.heat_etc, 'heat.conf'), 'db_sync'))


def tacker_db_manage(layout, venv):
    run(layout, 'tacker-db-manage', venvs.entry_point_argv(
        venv, 'tacker-db-manage', '--config-file',
        os.path.join(layout.tacker_etc, 'tacker.conf'), 'upgrade', 'head'))


def barbican_db_manage(layout, venv):
    """Barbican's schema, by barbican-manage (which reads barbican.conf
    as barbican-api does: from its HOME)."""
    run(layout, 'barbican-manage', venvs.entry_point_argv(
        venv, 'barbican-manage', 'db', 'upgrade'),
        env=services.barbican_env(layout))


def admin_session(ports, secrets, timeout=None):
    """A keystoneauth session as the plane's admin (``timeout``: of every
    request, Keystone's token requests included)."""
    from keystoneauth1.identity import v3
    from keystoneauth1 import session
    auth = v3.Password(auth_url=config.keystone_url(ports),
                       username='admin', password=secrets['admin'],
                       user_domain_id='default', project_name='admin',
                       project_domain_id='default')
    return session.Session(auth=auth, timeout=timeout)


class Identity(object):
    """Find-or-create over Keystone's REST API, so a re-run after a
    half-done registration creates only what is missing."""

    def __init__(self, session, url):
        self.session = session
        self.url = url

    def find(self, kind, name, **query):
        query['name'] = name
        answer = self.session.get('%s/%ss' % (self.url, kind),
                                  params=query).json()
        found = answer['%ss' % kind]
        return found[0]['id'] if found else None

    def ensure(self, kind, body, **query):
        found = self.find(kind, body['name'], **query)
        if found:
            return found
        answer = self.session.post('%s/%ss' % (self.url, kind),
                                   json={kind: body})
        return answer.json()[kind]['id']

    def grant(self, target, target_id, user_id, role_id):
        self.session.put('%s/%s/%s/users/%s/roles/%s' % (
            self.url, target, target_id, user_id, role_id))

    def ensure_endpoint(self, service_id, interface, url,
                        region=REGION):
        """The service's endpoint for ``interface`` in ``region``, made,
        or updated when its URL differs."""
        found = self.session.get('%s/endpoints' % self.url, params={
            'service_id': service_id, 'interface': interface,
            'region_id': region}).json()['endpoints']
        if found and found[0]['url'] != url:
            self.session.patch('%s/endpoints/%s' % (self.url, found[0]['id']),
                               json={'endpoint': {'url': url}})
        if found:
            return found[0]['id']
        answer = self.session.post('%s/endpoints' % self.url, json={
            'endpoint': {'service_id': service_id, 'interface': interface,
                         'region_id': region, 'url': url}})
        return answer.json()['endpoint']['id']


def _service_user(ports, secrets, name):
    """User ``name`` (password ``secrets[name]``), admin of the service
    project, as a deployment guide makes a service's user; returns the
    admin's Identity and the admin role's id."""
    identity = Identity(admin_session(ports, secrets),
                        config.keystone_url(ports))
    admin = identity.find('role', 'admin')
    service_project = identity.ensure(
        'project', {'name': 'service', 'domain_id': 'default',
                    'description': 'Service project'})
    user = identity.ensure('user', {'name': name, 'domain_id': 'default',
                                    'password': secrets[name]},
                           domain_id='default')
    identity.grant('projects', service_project, user, admin)
    return identity, admin


def register_heat(layout, ports, secrets):
    """Heat's users, roles, stack domain and catalog entry."""
    identity, admin = _service_user(ports, secrets, 'heat')
    domain = identity.ensure('domain', {
        'name': 'heat', 'description': 'Owns the users of Heat stacks'})
    domain_admin = identity.ensure(
        'user', {'name': 'heat_domain_admin', 'domain_id': domain,
                 'password': secrets['heat_domain_admin']},
        domain_id=domain)
    identity.grant('domains', domain, domain_admin, admin)
    for role in ('heat_stack_owner', 'heat_stack_user'):
        identity.ensure('role', {'name': role})
    orchestration = identity.ensure(
        'service', {'name': 'heat', 'type': 'orchestration',
                    'description': 'Orchestration'})
    for interface in ('public', 'internal', 'admin'):
        identity.ensure_endpoint(orchestration, interface,
                                 config.heat_url(ports))


def register_tacker(layout, ports, secrets):
    """Tacker's user (admin of the service project) and its catalog
    entry, nfv-orchestration."""
    identity, _admin = _service_user(ports, secrets, 'tacker')
    nfv = identity.ensure(
        'service', {'name': 'tacker', 'type': 'nfv-orchestration',
                    'description': 'NFV orchestration'},
        type='nfv-orchestration')
    for interface in ('public', 'internal', 'admin'):
        identity.ensure_endpoint(nfv, interface, config.tacker_url(ports))


def register_barbican(layout, ports, secrets):
    """Barbican's user (admin of the service project, which its
    keystonemiddleware logs in as) and its catalog entry: service type
    key-manager named barbican (the name Tacker's key manager asks the
    catalog for), public and internal endpoints in the plane's region."""
    identity, _admin = _service_user(ports, secrets, 'barbican')
    key_manager = identity.ensure(
        'service', {'name': 'barbican', 'type': 'key-manager',
                    'description': 'Key manager'},
        type='key-manager')
    for interface in ('public', 'internal'):
        identity.ensure_endpoint(key_manager, interface,
                                 config.barbican_url(ports))


def barbican_files(layout, venv):
    """barbican-api's paste pipeline from the Barbican release in its
    virtualenv."""
    shutil.copy(os.path.join(venv, 'etc', 'barbican',
                             'barbican-api-paste.ini'),
                os.path.join(layout.barbican_etc, 'barbican-api-paste.ini'))


def tacker_files(layout, venv):
    """tacker-server's paste pipeline from the Tacker release in its
    virtualenv, and the directories tacker.conf names (the conductor
    refuses to start without its package directory)."""
    shutil.copy(os.path.join(venv, 'etc', 'tacker', 'api-paste.ini'),
                os.path.join(layout.tacker_etc, 'api-paste.ini'))
    for path in config.tacker_dirs(layout).values():
        os.makedirs(path, mode=0o700, exist_ok=True)


def tacker_state_key(layout):
    """The driver's state key (config.state_key_file), made when missing:
    before any conductor starts, so none of them makes its own; a kept
    plane keeps its key."""
    from k8s_mgmt import state_key     # cryptography: only the key needs it
    path = config.state_key_file(layout)
    if not os.path.lexists(path):
        state_key.create(path)


def heat_files(layout, venv):
    """heat-api's paste pipeline and the default environment, from the
    Heat release installed in its virtualenv."""
    shipped = os.path.join(venv, 'etc', 'heat')
    for name in ('api-paste.ini', 'environment.d', 'templates'):
        source = os.path.join(shipped, name)
        target = os.path.join(layout.heat_etc, name)
        if os.path.isdir(source):
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif os.path.exists(source):
            shutil.copy(source, target)
    for name in ('environment.d', 'templates', 'plugins', 'locks'):
        os.makedirs(os.path.join(layout.heat_etc, name), exist_ok=True)


# The catalog entries of the lab's stand-ins (iaas.serve): service type,
# name, description.
IAAS_SERVICES = (('compute', 'nova', 'Compute (lab stand-in)'),
                 ('network', 'neutron', 'Networking (lab stand-in)'),
                 ('volumev3', 'cinderv3', 'Block storage (lab stand-in)'),
                 ('image', 'glance', 'Image (lab stand-in)'))


def iaas_endpoints(ports):
    """The stand-ins' catalog URLs from the recorded ports."""
    host = 'http://%s:%%d' % config.HOST
    return {'compute': host % ports['nova'] + '/v2.1',
            'network': host % ports['neutron'] + '/',
            'volumev3': host % ports['cinder'] + '/v3/%(project_id)s',
            'image': host % ports['glance'] + '/'}


def register_iaas(ports, secrets, endpoints=None, region=REGION):
    """The stand-ins in the catalog: each service found or made, and its
    public, internal and admin endpoints in ``region`` found or made (a
    URL that changed is updated), so a re-run adds no duplicate."""
    identity = Identity(admin_session(ports, secrets),
                        config.keystone_url(ports))
    endpoints = endpoints or iaas_endpoints(ports)
    for service_type, name, description in IAAS_SERVICES:
        service = identity.ensure('service', {
            'name': name, 'type': service_type,
            'description': description}, type=service_type)
        for interface in ('public', 'internal', 'admin'):
            identity.ensure_endpoint(service, interface,
                                     endpoints[service_type], region)
