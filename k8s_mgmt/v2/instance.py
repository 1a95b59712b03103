"""What a v2 hook reads from the dicts Tacker's v2 conductor sends.

Tacker's v2 objects reach the script as ``to_dict()`` output: camelCase
keys, unset fields left out (doc/design/tacker-v2-scripts.md, sections 1 to
4). These functions read them and give the driver's own shapes: the auth
dict :func:`k8s_mgmt.topology.heat.session_for_vim` takes, the top Heat
stack, the VNFCs and their servers, the servers a grant removes. Bad or
missing data is a ValidationError naming the field, never a KeyError.
"""

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.params.fields import key_for_path

OPENSTACK_VIM_TYPE = 'ETSINFV.OPENSTACK_KEYSTONE.V_3'
# Tacker names every v2 stack after the instance (its HeatClient).
STACK_NAME = 'vnf-%s'
COMPUTE = 'COMPUTE'


def _refuse(path, reason):
    raise exceptions.ValidationError([(path, reason)])


def _dict(value, path):
    if not isinstance(value, dict):
        _refuse(path, 'expected an object, got %s' % type(value).__name__)
    return value


def instance_id(vnf_instance):
    found = _dict(vnf_instance, 'vnf_instance').get('id')
    if not isinstance(found, str) or not found:
        _refuse('vnf_instance.id', 'missing')
    return found


def vim_connection(vnf_instance):
    """(key, entry) of the instance's one vimConnectionInfo: Tacker's v2
    code picks an arbitrary one when there are several, so the driver
    refuses them rather than guess."""
    connections = _dict(vnf_instance, 'vnf_instance').get(
        'vimConnectionInfo') or {}
    _dict(connections, 'vnf_instance.vimConnectionInfo')
    if len(connections) != 1:
        _refuse('vnf_instance.vimConnectionInfo',
                'expected exactly one VIM connection, got %d (Tacker\'s v2 '
                'API uses one, and this driver never adds one)'
                % len(connections))
    (key, entry), = connections.items()
    return key, _dict(entry, _vim_path(key))


def _vim_path(key):
    """Where the VIM connection ``key`` (the request's own name, escaped
    when it is not plain) is in the instance."""
    return 'vnf_instance.vimConnectionInfo.%s' % key_for_path(key)


def vim_auth(vnf_instance):
    """The instance's OpenStack VIM as the auth dict the driver's Heat and
    Nova clients take; the password a Secret."""
    key, entry = vim_connection(vnf_instance)
    path = _vim_path(key)
    if entry.get('vimType') != OPENSTACK_VIM_TYPE:
        _refuse(path + '.vimType', 'expected %s (an OpenStack VIM holds the '
                'VMs), got %.60r' % (OPENSTACK_VIM_TYPE,
                                     entry.get('vimType')))
    access = _dict(entry.get('accessInfo') or {}, path + '.accessInfo')
    interface = _dict(entry.get('interfaceInfo') or {},
                      path + '.interfaceInfo')
    missing = [name for name, value in (
        ('interfaceInfo.endpoint', interface.get('endpoint')),
        ('accessInfo.username', access.get('username')),
        ('accessInfo.password', access.get('password')),
        ('accessInfo.project', access.get('project'))) if not value]
    if missing:
        raise exceptions.ValidationError(
            [('%s.%s' % (path, name), 'missing') for name in missing])
    verify = not interface.get('skipCertificateVerification', False)
    return {'auth_url': interface['endpoint'],
            'username': access['username'],
            'password': secrets.Secret(secrets.reveal(access['password'])),
            'project_name': access['project'],
            'user_domain_name': access.get('userDomain') or 'Default',
            'project_domain_name': access.get('projectDomain') or 'Default',
            'region': access.get('region'),
            'cert_verify': 'True' if verify else 'False'}


def stack_ref(vnf_instance):
    """``vnf-<instance id>/<stack id>``, Heat's reference to the
    instance's top stack, or None before Heat made it."""
    info = vnf_instance.get('instantiatedVnfInfo') or {}
    stack_id = (info.get('metadata') or {}).get('stack_id')
    if not stack_id:
        return None
    return '%s/%s' % (STACK_NAME % instance_id(vnf_instance), stack_id)


def flavour(vnf_instance, request):
    """The deployment flavour: the instantiate request's, else the
    instance's."""
    found = (request or {}).get('flavourId') or (
        vnf_instance.get('instantiatedVnfInfo') or {}).get('flavourId')
    return found if isinstance(found, str) and found else None


def vnfcs(vnf_instance):
    """Every VNFC as ``{'id', 'vdu_id', 'server_id', 'stack'}``: the
    vnfcInfo id a heal request names (falling back to the resource's id
    when the instance has no vnfcInfo), the VDU, the Nova server and the
    Heat stack holding it; newest first, as Tacker lists them."""
    info = vnf_instance.get('instantiatedVnfInfo') or {}
    named = {entry.get('vnfcResourceInfoId'): entry.get('id')
             for entry in info.get('vnfcInfo') or ()
             if isinstance(entry, dict)}
    found = []
    for index, entry in enumerate(info.get('vnfcResourceInfo') or ()):
        path = 'vnf_instance.instantiatedVnfInfo.vnfcResourceInfo[%d]' % index
        _dict(entry, path)
        server = (entry.get('computeResource') or {}).get('resourceId')
        if not server or not entry.get('vduId'):
            _refuse(path, 'lacks computeResource.resourceId or vduId')
        found.append({'id': named.get(entry.get('id'), entry.get('id')),
                      'vdu_id': entry['vduId'], 'server_id': server,
                      'stack': (entry.get('metadata') or {}).get(
                          'stack_id')})
    return found


def removed_servers(grant_request):
    """The Nova servers a scale-in or a heal removes
    (``removeResources`` of type COMPUTE), in the grant's order."""
    servers = []
    for index, entry in enumerate((grant_request or {}).get(
            'removeResources') or ()):
        if not isinstance(entry, dict) or entry.get('type') != COMPUTE:
            continue
        server = (entry.get('resource') or {}).get('resourceId')
        if not server:
            _refuse('grant_request.removeResources[%d].resource.resourceId'
                    % index, 'missing')
        servers.append(server)
    return servers


def added_count(grant_request, vdu_id):
    """How many servers of ``vdu_id`` the grant adds (a scale-out's new
    VMs are then the first this many VNFCs of that VDU: Tacker lists them
    newest first)."""
    return sum(1 for entry in (grant_request or {}).get('addResources') or ()
               if isinstance(entry, dict) and entry.get('type') == COMPUTE
               and entry.get('resourceTemplateId') == vdu_id)
