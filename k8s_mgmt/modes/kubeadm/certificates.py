"""The cluster's certificates as operations (metadata
``k8sMgmtCertificates``: ``check`` or ``renew``).

check::

    Read the topology from Heat
    Connect to the masters
    Upload the scripts
    Read the certificates on every master   (certs-check, all at once)
    Record the certificates' expiry         (the cluster record; a WARNING
                                             per certificate that expires
                                             within 30 days)

Nothing on the cluster changes.

renew (HA; a single master skips the VIP, HAProxy and etcd phases)::

    Read the topology; connect to the masters; upload the scripts
    Probe the other masters; Read the API credentials through <master>
    Read etcd members and health  (one healthy member per master, else
                                   refused before any change)
    Find the VIP on <masters>; Read the cluster network's prefix
    -- each master, the VIP's holder last --
    Hand the VIP over from <m>    (its holder)
    Take <m> out of HAProxy       (the others', in the background)
    Wait until <m> is out of HAProxy
    Renew the certificates on <m> and restart its control plane
                                  (certs-renew: kubeadm certs renew all, the
                                   static pods restarted one by one, the
                                   API waited for; the new dates read)
    Check etcd on <other>: N members, all healthy
    Put <m> behind HAProxy again; Start keepalived on <m> (its holder)
    Check the registered VIM's credentials
    Record the certificates' expiry

The VIM's credentials (a ServiceAccount token and the cluster CA, which
``kubeadm certs renew`` does not renew) should stay valid: the check says
so, and only if the API refuses them are fresh ones read on a master and
the VIM registered again with them.
"""

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_owner
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import upgrade_scripts
from k8s_mgmt.engine import uploads
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import heal_master
from k8s_mgmt.shared_phases import maintenance
from k8s_mgmt.shared_phases import upgrade_plan

from k8s_mgmt.shared_phases import certs
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import node_work

LOG = logging.getLogger(__name__)

Phase = phases.Phase


def build_check(op):
    topology = yield node_work.topology_phase(op)
    masters = topology.masters
    yield node_work.connect_phase(op, 'Connect to the masters', masters)
    yield node_work.upload_phase(op, masters)
    found = yield certs.read_phase(op, masters)
    return (yield certs.record_phase(op, found or {}))


class CertificatesRefused(exceptions.MgmtDriverError):
    message = ('Certificate %(action)s refused, nothing was changed: '
               '%(reason)s')


def renew_phase(op, master):
    call = upgrade_scripts.certs_renew_call(master, op.params)
    return Phase('Renew the certificates on %s and restart its control '
                 'plane' % master.name, nodes=(master.name,),
                 work=(phases.script_work(call, uploads.REMOTE_DIR),),
                 action=lambda: certs.read(op, master, call), assume=())


def build_renew(op):
    if not op.scripts.features.certs_renew:
        raise CertificatesRefused(action='renewal', reason=(
            'the VNF package\'s install_k8s_cluster.sh cannot renew (its '
            'k8s-mgmt-features line lacks "certs-renew"): use a package '
            'built by this k8s-mgmt'))
    topology = yield node_work.topology_phase(op)
    masters = topology.masters
    yield node_work.connect_phase(op, 'Connect to the masters', masters)
    yield node_work.upload_phase(op, masters)
    helper, _access = yield from heal_master.api_through_a_master(
        op, topology, ())
    ha = len(masters) > 1 and topology.vip
    holder = prefix = None
    reachable = set(node_work.names(masters))
    if ha:
        _ctl, members, health = yield heal_master.etcd_phase(op, topology,
                                                             helper)
        problem = upgrade_plan.etcd_problem(
            members, health, node_work.names(masters))
        if problem:
            raise CertificatesRefused(action='renewal', reason=problem)
        holders = yield heal_master.vip_phase(op, masters, topology.vip)
        holder = next((m.name for m in masters
                       if m.name in (holders or ())), None)
        prefix = yield cluster.prefix_phase(op, topology, helper)
    order = [m for m in masters if m.name != holder] + [
        m for m in masters if m.name == holder]
    found = {}
    for master in order:
        holds = ha and master.name == holder
        others = [m for m in masters if m.name != master.name]
        if holds:
            yield heal_master.handover_phase(op, master, True)
        if ha:
            yield from maintenance.leave_haproxy(op, topology, master,
                                                 reachable, prefix)
        found[master.name] = yield renew_phase(op, master)
        if ha:
            yield maintenance.etcd_check_phase(op, others[0], masters)
            yield maintenance.master_in_phase(op, topology, master,
                                              reachable, prefix)
        if holds:
            yield maintenance.keepalived_start_phase(op, master)
    yield from vim_phases(op, topology, helper)
    return (yield certs.record_phase(op, found))


# What the check of the registered VIM found.
NO_VIM, ACCEPTED, REFUSED = 'no VIM', 'accepted', 'refused'


def vim_phases(op, topology, helper):
    """The registered VIM's credentials checked against the API; refused,
    they are read again on ``helper`` and the VIM registered again."""
    first = cluster.first_master_of(op, topology)
    ends = scripts.endpoints(topology, op.params, first)
    registrar = vim_mod.registrar_for(op.ctx, op.state)
    name = vim_mod.instance_vim_name(op.ctx)

    def check():
        if registrar.registered(name) is None:
            LOG.info('%s no VIM is registered for the cluster: nothing to '
                     'check', op.prefix)
            return NO_VIM
        known = cluster_access.registered_access(op, ends)
        return REFUSED if known is None else ACCEPTED
    found = yield Phase(
        cluster_access.TITLE_REGISTERED,
        work=(cluster_access.registered_work(ends),), action=check,
        assume=ACCEPTED)
    if found != REFUSED:
        return
    access = yield cluster_access.api_phase(
        op, 'Read fresh API credentials through %s' % helper.name,
        topology, helper, first, registered=False)
    yield Phase('Unregister the VIM whose credentials were refused',
                work=(phases.api_work('unregister Kubernetes VIM %s in %s'
                                      % (name, registrar.where),
                                      kind=registrar.kind),),
                action=lambda: vim_owner.unregister_vim(registrar, op.state,
                                                        name))
    yield cluster.register_phase(op, access)
