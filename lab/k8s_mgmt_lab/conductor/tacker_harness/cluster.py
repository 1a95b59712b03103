"""The cluster as Tacker knows it: the Kubernetes VIM the MgmtDriver
registered on the instance, read back through ``VimClient`` (which
decrypts its token and CA with the key manager), and the nodes its API
server reports."""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

KUBERNETES = 'kubernetes'


def kubernetes_vim_ids(instance):
    return [conn.vim_id for conn in instance.vim_connection_info or []
            if conn.vim_type == KUBERNETES]


def nodes(context, instance_id):
    """{'vim_id', 'endpoint', 'nodes': [{name, ready, roles}]} of the
    instance's Kubernetes VIM, or None when it has none."""
    from k8s_mgmt.kube import client as kube_client
    from tacker import objects
    from tacker.vnfm import vim_client
    instance = objects.VnfInstance.get_by_id(context, instance_id)
    vim_ids = kubernetes_vim_ids(instance)
    if not vim_ids:
        return None
    vim = vim_client.VimClient().get_vim(context, vim_ids[0])
    auth = vim['vim_auth']
    with kube_client.ClusterAPI(auth['auth_url'], auth['bearer_token'],
                                auth['ssl_ca_cert']) as api:
        found = api.nodes()
    return {'vim_id': vim_ids[0], 'endpoint': auth['auth_url'],
            'nodes': [{'name': n.name, 'ready': n.ready,
                       'roles': sorted(n.roles)}
                      for n in sorted(found.values(), key=lambda n: n.name)]}


def all_ready(cluster):
    return bool(cluster and cluster['nodes'] and
                all(n['ready'] for n in cluster['nodes']))
