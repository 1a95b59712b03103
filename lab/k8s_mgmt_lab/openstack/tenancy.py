"""One lab's place in a control plane: a Keystone region and a project of
its own, named ``lab-<tag>``.

Several labs can share one control plane (a test session does): each
lab's Nova, Neutron, Cinder and Glance stand-ins are its region's
endpoints, beside Keystone's and Heat's own, and its stacks live in its
project. Heat picks the region per request (``X-Region-Name``, which
heatclient and keystoneauth send for a region-bound client), so real Heat
builds each lab's servers on that lab's stand-ins; a stack name is unique
per project, so two labs may both call their stack ``k8s-lab-simple``.

    tenancy.register(plane, 'lab-k8t', iaas.endpoints())
    tenancy.credentials(plane, 'lab-k8t')   # what the lab record keeps
    tenancy.unregister(plane, 'lab-k8t')    # endpoints, region, project
"""

import os

# keystoneauth1 and oslo.log are imported where they are used: ``k8s-mgmt
# lab openstack`` imports this module for client_command alone.
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import stacks as stacks_mod
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.openstack import venvs

USER = 'admin'
DOMAIN = 'Default'
INTERFACES = ('public', 'internal', 'admin')


def name_for(tag):
    """The region id and project name of the lab tagged ``tag``."""
    return 'lab-%s' % tag


def _identity(plane):
    return bootstrap.Identity(
        bootstrap.admin_session(plane.ports, state.secrets(plane.layout)),
        config.keystone_url(plane.ports))


def _service_id(identity, service_type):
    found = identity.session.get('%s/services' % identity.url, params={
        'type': service_type}).json()['services']
    if not found:
        raise LookupError('no %s service in the catalog' % service_type)
    return found[0]['id']


def register(plane, name, iaas_endpoints, region=None):
    """The region (``name``, or ``region`` when given: a lab with a control
    plane of its own has its stand-ins in RegionOne, where a client that
    names no region, such as Tacker's v1 infra driver, finds them) with the
    stand-ins' endpoints and Keystone's and Heat's own, and the project
    ``name`` with the admin as its admin; found or made, so a re-run adds
    nothing twice. The project's id."""
    project_name, name = name, region or name
    identity = _identity(plane)
    session, url = identity.session, identity.url
    if session.get('%s/regions/%s' % (url, name),
                   raise_exc=False).status_code == 404:
        session.post('%s/regions' % url, json={'region': {
            'id': name, 'description': 'k8s-mgmt lab %s' % name}})
    bootstrap.register_iaas(plane.ports, state.secrets(plane.layout),
                            iaas_endpoints, region=name)
    own = {'identity': config.keystone_url(plane.ports),
           'orchestration': config.heat_url(plane.ports)}
    for service_type, endpoint in own.items():
        service = _service_id(identity, service_type)
        for interface in INTERFACES:
            identity.ensure_endpoint(service, interface, endpoint, name)
    project = identity.ensure('project', {
        'name': project_name, 'domain_id': 'default',
        'description': 'k8s-mgmt lab %s' % project_name},
        domain_id='default')
    admin_user = identity.find('user', USER, domain_id='default')
    for role in ('admin', 'heat_stack_owner'):
        identity.grant('projects', project, admin_user,
                       identity.find('role', role))
    return project


def unregister(plane, name, region=None):
    """Abandon the project's stacks (Heat forgets them; the lab's teardown
    removes their servers and volumes), remove the region's endpoints, the
    region and the project; what is already gone is skipped, so a shared
    control plane keeps nothing of a lab that is down. With ``region``
    (the plane's own, RegionOne, of a kept plane) only the stand-ins'
    endpoints go from it, never the region or the plane's own services."""
    identity = _identity(plane)
    admin, url = identity.session, identity.url
    try:
        heat = stacks_mod.Stacks(session(credentials(plane, name,
                                                     region or name)),
                                 region_name=region or name)
        for path in heat.project_stacks():
            heat.abandon(path)
        # Heat finishes an abandon in the background, through the
        # region's endpoints: they stay until it has.
        heat.wait_no_stacks()
    except Exception as err:    # the region's project may be gone already
        from oslo_log import log as logging
        logging.getLogger(__name__).warning(
            'stacks of lab region %s not abandoned: %s', name, err)
    iaas = None
    if region:
        iaas = {_service_id(identity, service_type)
                for service_type, _n, _d in bootstrap.IAAS_SERVICES}
    for endpoint in admin.get('%s/endpoints' % url, params={
            'region_id': region or name}).json()['endpoints']:
        if iaas is None or endpoint['service_id'] in iaas:
            admin.delete('%s/endpoints/%s' % (url, endpoint['id']),
                         raise_exc=False)
    if not region:
        admin.delete('%s/regions/%s' % (url, name), raise_exc=False)
    project = identity.find('project', name, domain_id='default')
    if project:
        admin.delete('%s/projects/%s' % (url, project), raise_exc=False)


def credentials(plane, name, region=None):
    """The lab's Keystone credentials as its record keeps them (the record
    is 0600: the password is the control plane's admin password)."""
    return {'auth_url': config.keystone_url(plane.ports),
            'username': USER,
            'password': state.secrets(plane.layout)['admin'],
            'project_name': name, 'user_domain_name': DOMAIN,
            'project_domain_name': DOMAIN, 'region_name': region or name}


def session(credentials):
    """A keystoneauth session scoped to the lab's project."""
    from keystoneauth1.identity import v3
    from keystoneauth1 import session as ks_session
    auth = v3.Password(
        auth_url=credentials['auth_url'], username=credentials['username'],
        password=credentials['password'],
        project_name=credentials['project_name'],
        user_domain_name=credentials['user_domain_name'],
        project_domain_name=credentials['project_domain_name'])
    return ks_session.Session(auth=auth)


def client_env(credentials):
    """OS_* variables for python-openstackclient as the lab's admin, in
    the lab's project and region (the password among them)."""
    return {'OS_AUTH_URL': credentials['auth_url'],
            'OS_IDENTITY_API_VERSION': '3',
            'OS_REGION_NAME': credentials['region_name'],
            'OS_PROJECT_NAME': credentials['project_name'],
            'OS_PROJECT_DOMAIN_NAME': credentials['project_domain_name'],
            'OS_USERNAME': credentials['username'],
            'OS_USER_DOMAIN_NAME': credentials['user_domain_name'],
            'OS_PASSWORD': credentials['password']}


def client_command(record, words):
    """The argv and environment that run python-openstackclient (from the
    lab's cache) with ``words`` as the admin of the lab whose record is
    ``record``, in its project and region (the password in the
    environment, never on the command line)."""
    plane = control_plane.ControlPlane(record['openstack']['control_plane'])
    env = dict(os.environ)
    env.update(client_env(record['heat']))
    return venvs.entry_point_argv(plane.client_venv(), 'openstack',
                                  *words), env


def openrc(credentials, password_file):
    """An openrc for the lab; the password is read from ``password_file``
    (0600) when it is sourced, so the text itself holds no secret."""
    env = client_env(credentials)
    del env['OS_PASSWORD']
    lines = ['export %s=%s' % item for item in env.items()]
    lines.append('export OS_PASSWORD="$(cat %s)"' % password_file)
    return '\n'.join(lines) + '\n'
