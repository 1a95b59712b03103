"""The lab's Keystone registered as Tacker's default OpenStack VIM.

Through the NFVO plugin's ``create_vim``, as ``POST /v1.0/vims`` does: its
OpenStack VIM driver checks the auth URL (version discovery), gets a token,
reads the regions, and stores the password fernet-encrypted with the key
in ``[vim_keys] openstack``.
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

VIM_NAME = 'k8s-mgmt-lab'


def vim_body(heat, tenant_id):
    """The ``vim`` body of a VIM registration from the lab record's
    ``heat`` credentials."""
    return {'vim': {
        'type': 'openstack', 'name': VIM_NAME,
        'description': 'the k8s-mgmt lab\'s Keystone and Heat',
        'tenant_id': tenant_id, 'is_default': True,
        'auth_url': heat['auth_url'],
        'auth_cred': {'username': heat['username'],
                      'password': heat['password'],
                      'user_domain_name': heat['user_domain_name'],
                      'cert_verify': 'False'},
        'vim_project': {'name': heat['project_name'],
                        'project_domain_name': heat['project_domain_name']},
        'extra': {}}}


def register(context, heat):
    """Register the lab's VIM; returns Tacker's VIM dict."""
    from tacker import manager
    nfvo = manager.TackerManager.get_service_plugins()['NFVO']
    vim = nfvo.create_vim(context, vim_body(heat, context.tenant_id))
    LOG.info('VIM %s registered (%s, regions %s)', vim['id'],
             vim['auth_url'], vim['placement_attr'].get('regions'))
    return vim
