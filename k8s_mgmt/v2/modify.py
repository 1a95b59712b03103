"""The v2 hooks that change an instantiated cluster: a PATCH of the
instance (``modify_information``) and a change of its package
(``change_current_package``).

* A PATCH's metadata asks for what it asks under v1 (``k8sMgmtUpgrade``,
  ``k8sMgmtCertificates``: :mod:`k8s_mgmt.modify_request`): checked at
  ``_start``, before Tacker saves it, run at ``_end``. A PATCH that sets
  or removes a key of the driver's own (``k8sMgmtState``,
  ``k8sMgmtRegistry*``) is refused there too.
* A change of package upgrades Kubernetes to the version the change names
  (``additionalParams.kubernetes_version``, else the new package's), in
  ``change_current_package_start``, so that a refusal comes before Heat
  updates the stack; ``_end`` checks that Heat kept every VM;
  ``change_current_package_rollback_start`` refuses once any node was
  upgraded (Kubernetes cannot be downgraded).
"""

import json

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import modify_request
from k8s_mgmt import shared_state
from k8s_mgmt.v2 import instance as v2_instance
from k8s_mgmt.v2 import operations

LOG = logging.getLogger(__name__)


def _asked(script_dict):
    """(operation, hook kwargs) the PATCH's metadata asks for, or None;
    ValidationError for a bad value."""
    request = script_dict.get('request') or {}
    return modify_request.asked({'metadata': request.get('metadata') or {}})


def modify_information_start(script_dict):
    """A PATCH of the driver's own metadata keys, or a bad k8sMgmtUpgrade
    or k8sMgmtCertificates, is refused before Tacker saves it."""
    modify_request.refuse_own_keys(script_dict.get('request'))
    _asked(script_dict)


def modify_information_end(script_dict):
    wanted = _asked(script_dict)
    if wanted is None:
        LOG.info('modify_information_end of VNF instance %s: nothing for '
                 'k8s-mgmt in this change',
                 v2_instance.instance_id(script_dict['vnf_instance']))
        return None
    operation, options = wanted
    hook = operations.V2Hook(script_dict)
    done = hook.run(operation, 'modify_information_end', kwargs=options)
    shared_state.drop_metadata(hook.instance, modify_request.KEYS)
    return done


# change_current_package_start's servers, for its _end (one conductor
# runs both hooks of an operation; a retry runs both again).
PACKAGE_SERVERS = 'v2_change_package_servers.json'
# A change of package's additionalParams that are this driver's or
# Tacker's, not the cluster's.
_PACKAGE_PARAMS = (modify_request.VERSION_PARAM,
                   modify_request.MAX_UNAVAILABLE_PARAM, 'upgrade_type',
                   'vdu_params')


def _servers(script_dict):
    return sorted(vnfc['server_id'] for vnfc in
                  v2_instance.vnfcs(script_dict['vnf_instance'])
                  if vnfc['server_id'])


def _cluster_request(script_dict):
    """The script_dict with only the cluster's additionalParams left in
    its request."""
    request = dict(script_dict.get('request') or {})
    request['additionalParams'] = {
        key: value for key, value in
        (request.get('additionalParams') or {}).items()
        if key not in _PACKAGE_PARAMS}
    return dict(script_dict, request=request)


def change_current_package_start(script_dict):
    """Upgrade Kubernetes to the version the change names, before Heat
    updates the stack: a refusal comes before anything changed."""
    wanted = modify_request.change_package_of(
        operations.additional_of(script_dict), script_dict.get('tmp_csar_dir'))
    hook = operations.V2Hook(script_dict)
    hook.local.write(PACKAGE_SERVERS, json.dumps(_servers(script_dict)))
    if wanted is None:
        LOG.info('change_current_package_start of VNF instance %s: the new '
                 'package names no Kubernetes version (%s) and the request '
                 'no additionalParams.%s: nothing to upgrade',
                 hook.instance_id, modify_request.PACKAGE_VERSION_FILE,
                 modify_request.VERSION_PARAM)
        return None
    hook.script_dict = _cluster_request(script_dict)
    return hook.run('upgrade', 'change_current_package_start',
                    kwargs=wanted)


class ServersReplaced(exceptions.MgmtDriverError):
    message = ('Heat replaced %(replaced)s while changing the package '
               '(the new package\'s templates differ for them): the new '
               'VMs are no nodes of the cluster; heal them '
               '(openstack vnflcm heal --vnfc-instance ...)')


def change_current_package_end(script_dict):
    """Heat kept every VM: a change of package replaces no node."""
    hook = operations.V2Hook(script_dict)
    recorded = hook.local.read(PACKAGE_SERVERS)
    if recorded is None:
        LOG.warning('change_current_package_end of VNF instance %s: '
                    'change_current_package_start\'s servers are not on '
                    'this conductor; not compared', hook.instance_id)
        return None
    hook.local.remove(PACKAGE_SERVERS)
    gone = sorted(set(json.loads(recorded)) - set(_servers(script_dict)))
    if gone:
        raise ServersReplaced(replaced='servers %s' % ', '.join(gone))
    return None


def change_current_package_rollback_start(script_dict):
    """Refused once the upgrade changed any node (Kubernetes cannot be
    downgraded); else Heat's rollback goes on."""
    return operations.V2Hook(_cluster_request(script_dict)).run(
        'upgrade_rollback', 'change_current_package_rollback_start')


OPERATIONS = {
    'modify_information_start': modify_information_start,
    'modify_information_end': modify_information_end,
    'change_current_package_start': change_current_package_start,
    'change_current_package_end': change_current_package_end,
    'change_current_package_rollback_start':
        change_current_package_rollback_start,
}
