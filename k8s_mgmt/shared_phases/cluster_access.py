"""The cluster's API as an operation reaches it: the credentials of the
registered VIM when they still work, else fresh ones from a master's
token-secret; then the phases that read the nodes through it and wait
until they are Ready.
"""

import dataclasses
import typing

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt import secrets
from k8s_mgmt import vim as vim_mod
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads
from k8s_mgmt.kube import client as kube_client
from k8s_mgmt.shared_phases import node_work

Phase = phases.Phase

LOG = logging.getLogger(__name__)

TITLE_NODES = 'Read the cluster\'s nodes'

# What a dry run shows for the output of token-secret.
PLANNED_CREDENTIALS = script_output.VimCredentials(
    token=secrets.Secret('<token from token-secret>'),
    ca_cert='<CA certificate from token-secret>')


@dataclasses.dataclass(frozen=True)
class ClusterAccess:
    """The cluster's API as the driver reaches it: where, with what."""

    api: typing.Any                      # kube.ClusterAPI (None: dry run)
    credentials: typing.Optional[script_output.VimCredentials]
    ends: scripts.Endpoints


TITLE_REGISTERED = 'Check the registered VIM\'s credentials'


def registered_work(ends, then=''):
    return phases.api_work(
        'GET %s/api/v1/nodes?limit=1 with the registered VIM\'s token and '
        'CA (when there is one)%s' % (ends.api_url, then))


def registered_phase(op, topology, first):
    """ClusterAccess from the VIM registered for the instance, or None
    (then the operation reads them on a master): an operation that needs
    no script on a master then opens no SSH connection to one. The dry
    run assumes None, so the plan shows the way through a master.

    Its users (scale-in, a worker heal's heal_start) reload no load
    balancer and move no VIP: the check's client, and its connection,
    serve the operation."""
    ends = scripts.endpoints(topology, op.params, first)
    return Phase(TITLE_REGISTERED, work=(registered_work(ends),),
                 action=lambda: registered_access(op, ends, keep_check=True),
                 assume=None)


def api_phase(op, title, topology, master, first, registered=True):
    """The VIM's token and CA, and an API client for the endpoint the
    cluster answers on (``first``'s): those of the VIM registered for the
    instance when the API accepts them (``registered``: not checked yet),
    else token-secret on ``master``."""
    ends = scripts.endpoints(topology, op.params, first)
    call = scripts.token_secret_call(master, op.params)

    def access():
        known = registered_access(op, ends) if registered else None
        if known is not None:
            return known
        result = op.run_script(master, call)
        return access_with(op, ends, script_output.VimCredentials.from_output(
            master.name, call.mode, result.stdout))
    return Phase(title, nodes=(master.name,),
                 work=((registered_work(ends, '; if refused:'),)
                       if registered else ()) + (
                     phases.script_work(call, uploads.REMOTE_DIR),),
                 action=access, assume=ClusterAccess(None, None, ends))


def access_with(op, ends, credentials):
    """ClusterAccess from credentials the operation has read (a dry run:
    no client)."""
    api = None if op.dry else op.keep(kube.ClusterAPI(
        ends.api_url, credentials.token, credentials.ca_cert))
    return ClusterAccess(api, credentials, ends)


def registered_access(op, ends, keep_check=False):
    """ClusterAccess from the VIM registered for the instance (Tacker's, or
    the VIM config file outside Tacker), checked with one request; None
    when there is none, it names another endpoint, or the API refuses it
    (a rebuilt cluster has a new CA, a revoked token fails).

    ``keep_check``: the checking client becomes the operation's. Without
    it the check's client is closed at once: the operation's own client
    must not start with a pooled connection that a later phase (a VIP
    hand-over, an HAProxy reload) may cut."""
    registrar = vim_mod.registrar_for(op.ctx, op.state)
    record = registrar.registered(vim_mod.instance_vim_name(op.ctx))
    if record is None or record.endpoint != ends.api_url:
        return None
    check = kube.ClusterAPI(ends.api_url, record.bearer_token,
                            record.ssl_ca_cert)
    try:
        check.call('check the registered VIM\'s token',
                   check.core.list_node, limit=1)
    except exceptions.KubernetesAPIError as err:
        check.close()
        LOG.info('%s the registered VIM\'s credentials were refused '
                 '(%s); reading them again from a master', op.prefix,
                 err.kwargs.get('reason'))
        return None
    except BaseException:
        check.close()
        raise
    LOG.info('%s using the registered VIM\'s credentials', op.prefix)
    if keep_check:
        api = op.keep(check)
    else:
        check.close()
        api = op.keep(kube.ClusterAPI(ends.api_url, record.bearer_token,
                                      record.ssl_ca_cert))
    return ClusterAccess(api, script_output.VimCredentials(
        token=record.bearer_token, ca_cert=record.ssl_ca_cert), ends)


def planned_states(op, names_):
    return {name: kube_client.NodeState(name, name in op.facts.ready, {})
            for name in names_}


def nodes_phase(op, access, title=TITLE_NODES, wait=True):
    """The nodes the API lists (Ready or not); ``wait``: poll until the
    API answers (it may still be settling), else one read."""
    def assumed():
        return planned_states(op, (n.name for n in
                                   op.facts.topology.all_nodes()
                                   if n.name in op.facts.ready))
    if wait:
        return Phase(title, work=(phases.api_work(
            'GET %s/api/v1/nodes until the API answers'
            % access.ends.api_url),),
            action=lambda: access.api.wait_answering(),
            assume=op.assume(assumed))
    return Phase(title, work=(phases.api_work(
        'GET %s/api/v1/nodes' % access.ends.api_url),),
        action=lambda: access.api.nodes(), assume=op.assume(assumed))


def ready_phase(op, title, access, nodes):
    wanted = node_work.names(nodes)

    def assumed():
        states = planned_states(op, (n.name for n in
                                     op.facts.topology.all_nodes()))
        states.update({n: kube_client.NodeState(n, True, {})
                       for n in wanted})
        return states
    return Phase(title, nodes=wanted, work=(phases.api_work(
        'GET %s/api/v1/nodes until %s Ready'
        % (access.ends.api_url, ', '.join(wanted) or 'it answers')),),
        action=lambda: access.api.wait_ready(wanted, prefix=op.prefix),
        assume=op.assume(assumed))
