"""What ``k8s-mgmt lab status`` reports, read the way the driver reads it.

The VMs and their roles come from the lab's Heat (real Heat, in the lab's
own Keystone region) through the driver's own topology reader, and
``ssh_ok`` from the driver's own SSH layer with host-key pinning, so a
green status means the driver will see the same thing. The report's
``openstack`` section names each service behind it: the control plane's
(MariaDB, RabbitMQ, Keystone, Heat) and the lab daemon's stand-ins.
"""

import os

from heatclient import client as heat_client

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt import parallel
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import report as standins_report
from k8s_mgmt_lab.machines import ansible_server
from k8s_mgmt_lab.openstack import tacker_conductors
from k8s_mgmt.ssh import console_keys
from k8s_mgmt.topology import heat as topology_heat
from k8s_mgmt.topology.from_params import spec_from_params
from k8s_mgmt_lab.machines import registry as registry_mod
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import pins
from k8s_mgmt_lab.openstack import stacks as stacks_mod
from k8s_mgmt_lab.openstack.iaas import cinder as iaas_cinder
from k8s_mgmt_lab.openstack.iaas import nova as iaas_nova

SSH_PROBE_DEADLINE = 5.0
# The lab's names for the driver's topology roles, where they differ.
ROLE_NAMES = {'lb': 'external_lb'}

VOLUME = 'OS::Cinder::Volume'

# Parts of the lab that stand in for something real, named for the report.
STAND_INS = {
    'openstack': 'real Keystone %s and Heat %s (OpenStack %s, on MariaDB '
                 'and RabbitMQ); Nova, Neutron, Cinder and Glance are the '
                 'lab\'s stand-ins, served by the lab daemon'
                 % (pins.version('keystone'), pins.version('openstack-heat'),
                    pins.RELEASE),
    'vms': 'network namespaces with an overlay root filesystem and a real '
           'OpenSSH server (stand-in for Nova VMs)',
    'kubernetes': standins_report.STAND_INS,
}


# The API version each stand-in serves, for the report.
IAAS_VERSIONS = {
    'nova': 'compute v2.1, microversions %s to %s' % (
        iaas_nova.MIN_VERSION, iaas_nova.MAX_VERSION),
    'neutron': 'network v2.0',
    'cinder': 'volume v3, microversions %s to %s' % (
        iaas_cinder.MIN_VERSION, iaas_cinder.MAX_VERSION),
    'glance': 'image v2',
}


def region_name(record):
    """The lab's own Keystone region (None in a record made before)."""
    return record['heat'].get('region_name')


def lab_session(record):
    """A keystoneauth session on the lab's Keystone (Heat and Nova); every
    client on it passes :func:`region_name`."""
    heat = record['heat']
    return topology_heat.session_from_settings(
        heat['auth_url'], heat['username'], secrets.Secret(heat['password']),
        heat['project_name'],
        user_domain_name=heat.get('user_domain_name') or 'Default',
        project_domain_name=heat.get('project_domain_name') or 'Default')


def lab_heat(record):
    """A heatclient on the lab's Heat, in the lab's region."""
    kwargs = {'session': lab_session(record)}
    if region_name(record):
        kwargs['region_name'] = region_name(record)
    return heat_client.Client('1', **kwargs)


def lab_stacks(record, **kwargs):
    """The lab's Heat side (:class:`.openstack.stacks.Stacks`) on the
    record's session and region."""
    return stacks_mod.Stacks(lab_session(record),
                             region_name=region_name(record), **kwargs)


def stack_path(record):
    """``name/id`` of the lab's stack: the path Heat serves directly."""
    return '%s/%s' % (record['stack_name'], record['stack_id'])


def read_topology(record):
    session = lab_session(record)
    cluster = params.load_request(manager.lab_request(record))
    reader = topology_heat.HeatReader(session,
                                      region_name=region_name(record))
    return reader.read_topology(spec_from_params(cluster), record['stack_id'],
                                vnfc_ids=record.get('vnfc_ids'))


def volume_resources(listing):
    """The Cinder volumes of a nested resource listing."""
    return [r for r in listing if r.get('resource_type') == VOLUME]


def volume_row(resource, shown):
    """A volume's row of the report from its listing entry and the
    attributes Heat shows for it."""
    attached = (shown.get('attachments') or [{}])[0]
    return {'id': shown.get('id'), 'resource': resource['resource_name'],
            'device': attached.get('device'),
            'server': attached.get('server_id'),
            'size': shown.get('size'), 'status': shown.get('status')}


def read_volumes(record, stacks=None):
    """The stack's Cinder volumes as its Heat shows them: id, the device
    and server of the attachment (None when not attached), size."""
    stacks = stacks or lab_stacks(record)
    rows = []
    for res in volume_resources(stacks.resources(stack_path(record))):
        shown = stacks.resource(stack_of(res), res['resource_name'])
        rows.append(volume_row(res, shown.get('attributes') or {}))
    return rows


def stack_of(resource):
    """``name/id`` of the stack holding a resource of a Heat listing."""
    href = next(link['href'] for link in resource['links']
                if link['rel'] == 'stack')
    return '/'.join(href.rstrip('/').split('/')[-2:])


def openstack_report(record):
    """Keystone's URL, the lab's region, project and user, and per
    service its pid, version, url, log and whether it runs; None for a
    record without the ``openstack`` key."""
    found = record.get('openstack')
    if not found:
        return None
    heat = record['heat']
    services = control_plane.ControlPlane(found['control_plane']).status()
    if found.get('tacker') is False:
        # A lab without Tacker on a plane that runs it for other labs:
        # Tacker's services are not the lab's (one may be down by
        # another lab's doing).
        services = {name: fields for name, fields in services.items()
                    if name in control_plane.SERVICE_NAMES}
    daemon = record.get('daemon_pid')
    alive = pid_alive(daemon)
    for name, version in IAAS_VERSIONS.items():
        services[name] = {'pid': daemon, 'version': version,
                          'url': (found.get('iaas') or {}).get(name),
                          'log': found.get('log'), 'alive': alive}
    return {'auth_url': heat['auth_url'],
            'region': found.get('region') or region_name(record),
            'project': found.get('project') or heat['project_name'],
            'user': heat['username'], 'services': services}


def probe_ssh(settings, record, nodes):
    """{node name: True/False}: does the VM answer SSH with a pinned key?"""
    store = ssh.HostKeyStore(os.path.join(settings.state_dir,
                                          'host_keys.json'))
    password = secrets.Secret(record.get('vm_password', settings.password))
    # First contact verified as the driver does: the lab's Nova console.
    first_contact = console_keys.FirstContactVerifier(
        lambda: (lab_session(record), region_name(record)))

    def probe(node):
        target = ssh.SSHTarget(name=node.name, host=node.ssh_ip,
                               username='ubuntu', password=password,
                               server_id=node.server_id)
        with ssh.SSHSession(target, store=store,
                            connect_deadline=SSH_PROBE_DEADLINE,
                            first_contact=first_contact) as session:
            session.run(ssh.Command('true'), step='probe', timeout=10)
        return True

    try:
        return parallel.run_on_nodes('lab status', 'ssh', nodes, probe)
    except exceptions.NodesFailed as err:
        answers = dict(getattr(err, 'results', {}) or {})
        for name, _error in err.failures:
            answers[name] = False
        return answers


def lab_status(settings, check_ssh=True):
    record = manager.read_record(settings)
    if record is None:
        raise LabError('no lab is up in %s; run "k8s-mgmt lab up"'
                       % settings.state_dir)
    openstack = openstack_report(record)
    dead = dead_services(record, openstack)
    if dead:
        raise LabError('the lab in %s is not running: %s; run "k8s-mgmt '
                       'lab down" to clean up' % (settings.state_dir,
                                                  ', '.join(dead)))
    # A lab brought up with no stack has no VM until a client creates it.
    topology = read_topology(record) if record.get('stack_id') else None
    nodes = topology.all_nodes() if topology is not None else []
    answers = probe_ssh(settings, record, nodes) if check_ssh else {}
    # The record's copy has the password (the file is 0600); a report
    # does not.
    heat = {key: value for key, value in record['heat'].items()
            if key != 'password'}
    heat.update(stack_id=record['stack_id'], stack_name=record['stack_name'])
    vms = registry_mod.Registry(settings.state_dir).read()['vms']
    kubernetes = standins_report.cluster_report(
        settings.state_dir, [vms.get(n.server_id, {}).get('vm_dir')
                             for n in (topology.masters if topology
                                       else [])])
    report = {
        'flavour': record['flavour'],
        'state_dir': settings.state_dir,
        'heat': heat,
        'vip': topology.vip if topology is not None else None,
        'vms': [{'name': n.name, 'role': ROLE_NAMES.get(n.role, n.role),
                 'vnfc_id': n.vnfc_id,
                 'server_id': n.server_id, 'ip': n.ssh_ip,
                 'compute_host': n.compute_host,
                 'ssh_ok': answers.get(n.name) if check_ssh else None}
                for n in nodes],
        'volumes': read_volumes(record) if topology is not None else [],
        'stand_ins': STAND_INS,
        'openstack': openstack,
    }
    server = ansible_server.status_entry(
        registry_mod.Registry(settings.state_dir), record)
    if server is not None:
        # Outside the stack: no VNFC, no Nova server, no compute host.
        server.update(vnfc_id=None, compute_host=None,
                      ssh_ok=(ansible_server.answers_ssh(server['ip'])
                              if check_ssh else None))
        report['vms'].append(server)
        report['ansible_server'] = server
    if kubernetes is not None:  # only once a cluster was made
        report['kubernetes'] = kubernetes
        report['etcd_members'] = kubernetes.pop('etcd_members', None)
    return report


def dead_services(record, openstack=None):
    """What of a lab is not running, each as "<name> (pid N)": its daemon
    (the stand-ins) and the control plane's services (after a machine
    restart, or a crash)."""
    dead = []
    if not pid_alive(record.get('daemon_pid')):
        dead.append('the lab daemon (pid %s)' % record.get('daemon_pid'))
    openstack = openstack or openstack_report(record) or {}
    services = openstack.get('services') or {}
    # Tacker goes on while one of its conductors does, as with several
    # conductor hosts when one is lost (lab status shows which).
    conductor_alive = any(
        found['alive'] for name, found in services.items()
        if tacker_conductors.number_of(name) is not None)
    for name, found in sorted(services.items()):
        if name in IAAS_VERSIONS or found['alive']:
            continue
        if conductor_alive and tacker_conductors.number_of(name):
            continue
        dead.append('%s (pid %s)' % (name, found['pid']))
    return dead


def pid_alive(pid):
    """Whether process ``pid`` exists (a false pid: no)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
