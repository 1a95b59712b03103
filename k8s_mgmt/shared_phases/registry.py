"""The registry VNF's VM as phases: its volume, docker-registry, and what
clients need to know of it.

Instantiate (and the heal that gives it a new VM) runs::

    Prepare the registry's volume on <node>
                                  (setup_storage.sh volumes: found by its
                                   Cinder id, formatted only when it holds
                                   no filesystem at all, mounted)
    Set up the registry on <node> (setup_registry.sh: docker-registry over
                                   HTTPS on the NIC's address, images and
                                   certificate on the volume; a certificate
                                   found there is kept, never replaced)
    Publish the registry's address and CA
                                  (kept in the instance's shared state and
                                   shown, unsealed, in its metadata
                                   "k8sMgmtRegistry*": a cluster's
                                   private_registry_connection_info names
                                   the server and the CA as a package file)

A heal that kept the volume must find the very volume it was published
with: the set-up is refused on any other (its certificate would not be the
one clients trust).
"""

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import shared_state
from k8s_mgmt import state as state_mod
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import scripts
from k8s_mgmt.shared_phases import node_work

LOG = logging.getLogger(__name__)

Phase = phases.Phase

TITLE_PUBLISH = 'Publish the registry\'s address and CA'
PLANNED_CA = ('-----BEGIN CERTIFICATE-----\nplanned\n'
              '-----END CERTIFICATE-----\n')


def title_volume(node):
    return 'Prepare the registry\'s volume on %s' % node.name


def title_setup(node):
    return 'Set up the registry on %s' % node.name


def registry_node(topology):
    return topology.registries[0]


def attached_volume(params, topology, node):
    """The registry's topology Volume, attached to ``node``;
    TopologyError otherwise."""
    name = params.registry.volume.volume_resource_id
    volume = next((v for v in topology.volumes if v.resource_name == name),
                  None)
    if volume is None or not volume.volume_id:
        raise exceptions.TopologyError(
            reason='stack %s has no volume resource %s'
                   % (topology.stack_id, name))
    if volume.server_id != node.server_id:
        raise exceptions.TopologyError(
            reason='stack %s: volume %s (%s) is attached to %s, not to the '
                   'registry VM %s (%s)' % (
                       topology.stack_id, name, volume.volume_id,
                       volume.server_id or 'no server', node.name,
                       node.server_id))
    return volume


def published(state):
    """What the last set-up published (registry.json), or {}."""
    return state.read_json(state_mod.REGISTRY) or {}


def check_same_volume(state, volume):
    """A kept volume is the one the registry was published with."""
    known = published(state).get('volume_id')
    if known and known != volume.volume_id:
        raise exceptions.TopologyError(
            reason='the registry was published with volume %s, and the '
                   'stack now attaches volume %s: its images and the '
                   'certificate clients trust are on the first; nothing '
                   'was set up on the second' % (known, volume.volume_id))


def setup_phases(op, topology, node, kept_volume):
    """Volume, registry, publish: instantiate's phases on ``node``.
    ``kept_volume``: the heal kept the volume (checked against the
    published one before any change)."""
    volume = attached_volume(op.params, topology, node)
    if kept_volume:
        check_same_volume(op.state, volume)
    call = scripts.registry_volume_call(node, op.params, volume)
    yield node_work.script_phase(op, title_volume(node), node, call)
    call = scripts.registry_call(node, op.params)

    def set_up():
        result = op.run_script(node, call)
        return script_output.RegistryReport.from_output(node.name,
                                                        result.stdout)
    registry = op.params.registry
    planned = script_output.RegistryReport(
        url='https://%s:%d' % (node.nic_ip, registry.port_no),
        service='started', certificate='certificate made',
        data_dir=registry.volume.mount_to + '/data', ca_pem=PLANNED_CA)
    report = yield Phase(title_setup(node), nodes=(node.name,),
                         work=(phases.script_work(call, scripts.REMOTE_DIR),),
                         action=set_up, assume=op.assume(lambda: planned))
    return (yield publish_phase(op, report, volume))


def public(record):
    """What every reader of the instance sees of registry.json: strings
    under keys k8sMgmtRegistryServer, ...ConnectionType, ...CaSha256 and
    ...CaPem."""
    prefix = shared_state.PUBLIC_REGISTRY_PREFIX
    return {prefix + 'Server': record['server'],
            prefix + 'ConnectionType': '1',
            prefix + 'CaSha256': record['ca_sha256'],
            prefix + 'CaPem': record['ca_pem']}


def publish(op, report, volume):
    """registry.json and the instance's public metadata; the CA's
    fingerprint and PEM logged (public)."""
    before = published(op.state)
    record = dict(report.to_dict(), volume_id=volume.volume_id)
    if before.get('ca_sha256') not in (None, report.ca_sha256):
        LOG.warning('%(prefix)sThe registry %(url)s has a new certificate '
                    '(CA SHA-256 %(new)s, was %(old)s): clusters that '
                    'trust the old one cannot pull from it until their '
                    'private_registry_connection_info names the new CA',
                    {'prefix': op.prefix, 'url': report.url,
                     'new': report.ca_sha256, 'old': before['ca_sha256']})
    op.state.write_json(state_mod.REGISTRY, record)
    shown = shared_state.publish(op.ctx.vnf_instance, public(record))
    LOG.info('%(prefix)sRegistry %(url)s (%(certificate)s), CA SHA-256 '
             '%(sha)s; clients trust this CA:\n%(pem)s',
             {'prefix': op.prefix, 'url': report.url,
              'certificate': report.certificate, 'sha': report.ca_sha256,
              'pem': report.ca_pem})
    return dict(record, metadata=sorted(public(record)) if shown else None)


def publish_phase(op, report, volume):
    work = (phases.Work(None, 'local', 'write %s' % state_mod.REGISTRY),
            phases.api_work('the VNF instance\'s metadata %s*: server, CA'
                            % shared_state.PUBLIC_REGISTRY_PREFIX,
                            kind='tacker'))
    return Phase(TITLE_PUBLISH, work=work,
                 action=lambda: publish(op, report, volume),
                 assume=op.assume(lambda: dict(report.to_dict(),
                                               volume_id=volume.volume_id)))
