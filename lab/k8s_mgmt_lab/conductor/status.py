"""What ``k8s-mgmt lab status`` reports, read the way the driver reads it.

The VMs and their roles come from the lab's Heat API through the driver's own
topology reader, and ``ssh_ok`` from the driver's own SSH layer with host-key
pinning, so a green status means the driver will see the same thing.
"""

import os

from heatclient import client as heat_client

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt import parallel
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt_lab import hot
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import report as standins_report
from k8s_mgmt_lab.machines import ansible_server
from k8s_mgmt.ssh import console_keys
from k8s_mgmt.topology import heat as topology_heat
from k8s_mgmt.topology.from_params import spec_from_params
from k8s_mgmt_lab.machines import registry as registry_mod

SSH_PROBE_DEADLINE = 5.0
# The lab's names for the driver's topology roles, where they differ.
ROLE_NAMES = {'lb': 'external_lb'}

# Parts of the lab that stand in for something real, named for the report.
STAND_INS = {
    'openstack': 'Keystone v3, Heat v1 and Nova console-output APIs served '
                 'by the lab from the sample package\'s BaseHOT (stand-in)',
    'vms': 'network namespaces with an overlay root filesystem and a real '
           'OpenSSH server (stand-in for Nova VMs)',
    'kubernetes': standins_report.STAND_INS,
}


def lab_session(record):
    """A keystoneauth session on the lab's Keystone (Heat and Nova)."""
    heat = record['heat']
    return topology_heat.session_from_settings(
        heat['auth_url'], heat['username'], secrets.Secret(heat['password']),
        heat['project_name'])


def lab_heat(record):
    """A heatclient on the lab's Heat API, with the record's credentials."""
    return heat_client.Client('1', session=lab_session(record))


def read_topology(record):
    session = lab_session(record)
    cluster = params.load_request(manager.lab_request(record))
    reader = topology_heat.HeatReader(session)
    return reader.read_topology(spec_from_params(cluster), record['stack_id'],
                                vnfc_ids=record.get('vnfc_ids'))


def read_volumes(record):
    """The stack's Cinder volumes as its Heat shows them: id, the device
    and server of the attachment (None when not attached), size."""
    client = lab_heat(record)
    rows = []
    for res in client.resources.list(record['stack_id'], nested_depth=5,
                                     filters={'type': hot.VOLUME}):
        shown = client.resources.get(stack_of(res),
                                     res.resource_name).attributes
        attached = (shown.get('attachments') or [{}])[0]
        rows.append({'id': shown.get('id'), 'resource': res.resource_name,
                     'device': attached.get('device'),
                     'server': attached.get('server_id'),
                     'size': shown.get('size'),
                     'status': shown.get('status')})
    return rows


def stack_of(resource):
    """``name/id`` of the stack holding a resource of a Heat listing."""
    href = next(link['href'] for link in resource.links
                if link['rel'] == 'stack')
    return '/'.join(href.rstrip('/').split('/')[-2:])


def probe_ssh(settings, record, nodes):
    """{node name: True/False}: does the VM answer SSH with a pinned key?"""
    store = ssh.HostKeyStore(os.path.join(settings.state_dir,
                                          'host_keys.json'))
    password = secrets.Secret(record.get('vm_password', settings.password))
    # First contact verified as the driver does: the lab's Nova console.
    first_contact = console_keys.FirstContactVerifier(
        lambda: (lab_session(record), None))

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
    if not pid_alive(record.get('daemon_pid')):
        raise LabError('the lab daemon (pid %s) is not running; run '
                       '"k8s-mgmt lab down" to clean up'
                       % record.get('daemon_pid'))
    # A lab brought up with no stack has no VM until a client creates it.
    topology = read_topology(record) if record.get('stack_id') else None
    nodes = topology.all_nodes() if topology is not None else []
    answers = probe_ssh(settings, record, nodes) if check_ssh else {}
    heat = dict(record['heat'], stack_id=record['stack_id'],
                stack_name=record['stack_name'])
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
