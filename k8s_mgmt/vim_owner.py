"""Which Kubernetes VIM in Tacker is the instance's: the one whose id it
recorded, never every VIM of its name.

Tacker's VIM names are unique per project only, and the credentials that
list them are often admin's. :func:`register_vim` records the id of the
VIM the instance registered in its (sealed) cluster record;
:func:`unregister_vim` deletes that id alone and clears it. Another VIM
already under the instance's name is a clash (:func:`owned_vim`), refused
at instantiate_start (:func:`check_vim_name`) before any VM is made and
again at registration, never adopted. State without a recorded id deletes
only what :func:`legacy_owned` proves the instance's.
"""

from oslo_log import log as logging

from k8s_mgmt import exceptions

LOG = logging.getLogger(__name__)

VIM_TYPE = 'kubernetes'


def vim_description(vnf_instance_id):
    """The description the driver gives the VIM it registers."""
    return 'Kubernetes cluster of VNF instance %s' % vnf_instance_id


def clash(name, vim):
    """The one-line refusal of a VIM name another VIM holds."""
    return exceptions.MgmtDriverError(error_message=(
        'vim_name %s is taken by VIM %s (project %s, type %s), which this '
        'VNF instance did not register: choose another '
        'k8s_cluster_installation_param.vim_name in additionalParams, or '
        'delete that VIM' % (name, vim.get('id'),
                             vim.get('tenant_id') or 'not shown',
                             vim.get('type') or 'not shown')))


def owned_vim(found, name, owned):
    """Of the VIMs ``found`` under ``name``, the one whose id is
    ``owned`` (the instance's recorded VIM: a re-run), or None when there
    is none at all; any other VIM under the name while the owned one is
    not there is a clash (:func:`clash`): never adopted."""
    for vim in found:
        if owned and vim.get('id') == owned:
            return vim
    if found:
        raise clash(name, found[0])
    return None


def legacy_owned(found, name, vnf_instance_id, project_id):
    """The ids of the VIMs ``found`` under ``name`` that state without a
    recorded VIM id (an older version's, or nothing registered) may
    delete: type kubernetes, the driver's own description of this
    instance, and (where the listing shows it) the instance's project.
    Each one deleted or left is logged, with the rule."""
    description = vim_description(vnf_instance_id)
    mine = []
    for vim in found:
        tenant = vim.get('tenant_id')
        why = _not_provably_owned(vim, description, project_id)
        if why is None:
            LOG.info('VIM %s (%s): no VIM id recorded; deleted as the '
                     'instance\'s (type %s, description "%s"%s)', name,
                     vim.get('id'), VIM_TYPE, description,
                     ', project %s' % tenant if tenant else '')
            mine.append(vim.get('id'))
        else:
            LOG.warning('VIM %s (%s) left alone: no VIM id is recorded '
                        'for the instance and it is not provably its own '
                        '(%s)', name, vim.get('id'), why)
    if not found:
        LOG.info('VIM %s is not registered; nothing to delete', name)
    return mine


def check_vim_name(registrar, state, name):
    """Refuse ``name`` when a VIM the instance did not register holds it
    (a registrar with no such check, the files', has no clash)."""
    check = getattr(registrar, 'check_name', None)
    if check is not None:
        check(name, state.cluster_record().get('vim_id'))


def register_vim(registrar, state, record):
    """Register ``record`` and record the VIM's id in the instance's
    cluster record (the one id :func:`unregister_vim` deletes)."""
    owned = state.cluster_record().get('vim_id')
    result = registrar.register(record, owned)
    vim_id = (result or {}).get('vim_id')
    if vim_id and vim_id != owned:
        state.update_cluster_record(vim_id=vim_id)
    return result


def unregister_vim(registrar, state, name):
    """Delete the VIM the instance registered (by its recorded id) and
    clear the id: a later registration makes and records a new one."""
    owned = state.cluster_record().get('vim_id')
    result = registrar.unregister(name, owned)
    if owned:
        state.update_cluster_record(vim_id=None)
    return result


def _not_provably_owned(vim, description, project_id):
    """Why ``vim`` is not provably the instance's, or None."""
    if vim.get('type') != VIM_TYPE:
        return 'type %s' % vim.get('type')
    if vim.get('description') != description:
        return 'another description'
    tenant = vim.get('tenant_id')
    if tenant and tenant != project_id:
        return 'project %s; the instance\'s is %s' % (
            tenant, project_id or 'unknown')
    return None
