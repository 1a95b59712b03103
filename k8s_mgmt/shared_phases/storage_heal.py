"""Whether a heal would empty the storage server's volume, and the refusal.

Tacker, not the driver, decides what Heat replaces. For a VNFC heal (v1)
it marks the VNFC's Cinder volumes unhealthy too, so that Heat creates them
again empty, when ``additionalParams[<key>]`` is truthy, or is absent and
``[vnf_lcm] heal_vnfc_block_storage`` is true (its default); the key is
``[vnf_lcm] heal_include_block_storage_key``. A whole-VNF heal deletes the
stack and creates a new one, volumes included. Either way every file on the
NFS shares is gone, so ``heal_start`` refuses such a heal of the storage
server unless the request says ``storage_volume_recreate: true``.

Tacker's v2 API decides otherwise: a heal, of VNFCs or of the whole VNF
(no ``vnfcInstanceId``), replaces the servers and keeps their volumes,
unless ``additionalParams.all`` is true, which recreates the volumes too
(and, without VNFC ids, the whole stack).
"""

from k8s_mgmt import tacker_settings
from k8s_mgmt.engine import phases
from k8s_mgmt.params import pv_manifests
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.tacker_objects import field

TITLE = 'Check that the heal keeps the storage server\'s volume'
ACKNOWLEDGE = 'storage_volume_recreate'


V2_ALL = 'all'


def v2_recreates(request):
    """Under Tacker's v2 API: whether the heal request's ``all`` is true."""
    return (field(request, 'additional_params') or {}).get(V2_ALL) is True


def recreates_volume(request, setting=None, api='v1'):
    """True when Tacker will give a healed VNFC new, empty volumes."""
    if api == 'v2':
        return v2_recreates(request)
    setting = setting or tacker_settings.heal_block_storage()
    additional = field(request, 'additional_params') or {}
    return bool(additional.get(setting.key, setting.default))


def whole_recreates_volume(request, api='v1'):
    """True when a heal of the whole VNF gives the storage server a new,
    empty volume: always under v1 (a new stack), only with ``all`` under
    v2 (else the servers are replaced, the volumes kept)."""
    return api != 'v2' or v2_recreates(request)


def keeps_volume(request, setting=None, api='v1'):
    """True when a VNFC heal of the storage server keeps its volume (the
    driver then frees it for Heat's new server: storage_release.py)."""
    return not recreates_volume(request, setting, api)


def _pv_names(op):
    """The PVs the request registers, named for the refusal (the files'
    paths when the package cannot be read)."""
    found, problems = pv_manifests.load_all(op.ctx.package_dir, op.params)
    names = ([p.pv_manifest_file_path
              for p in op.params.pv_registration_params] if problems
             else [m.name for m in found])
    return ', '.join(names) if names else 'none registered'


def _subject(op, node):
    """(the VM as the refusal names it, what would be lost)."""
    if op.params.is_registry:
        return ('the registry VM %s' % node.name,
                'every image in the registry https://%s:%d and the '
                'certificate its clients trust' % (
                    node.nic_ip, op.params.registry.port_no))
    return ('the storage server %s' % node.name,
            'every file on the NFS exports behind the PersistentVolumes '
            '(%s)' % _pv_names(op))


def _vnfc_reason(op, node, setting):
    additional = field(op.ctx.request, 'additional_params') or {}
    if setting.key in additional:
        why = 'the request sets %s: true' % setting.key
    else:
        why = 'the request does not set %s, and %s' % (setting.key,
                                                       setting.origin())
    subject, lost = _subject(op, node)
    return (
        'healing %s (server %s) would give it a new, empty Cinder volume: '
        '%s, so Tacker marks its volumes for replacement too, and %s would '
        'be lost. To keep the data (recommended), send the heal again with '
        'additionalParams {"%s": false}: the new server mounts the same '
        'volume. To accept losing the data, send it with additionalParams '
        '{"%s": true}'
        % (subject, node.server_id, why, lost, setting.key, ACKNOWLEDGE))


def _v2_reason(op, node):
    subject, lost = _subject(op, node)
    return (
        'healing %s with additionalParams {"%s": true} makes Tacker '
        'recreate its Cinder volume, empty, and %s would be lost. To keep '
        'the data (recommended), send the heal without "%s": the new server '
        'mounts the same volume. To accept losing the data, add "%s": true'
        % (subject, V2_ALL, lost, V2_ALL, ACKNOWLEDGE))


def _whole_reason(op, node):
    subject, lost = _subject(op, node)
    return (
        'a whole-VNF heal deletes the stack and creates it again, so %s '
        'gets a new, empty Cinder volume and %s would be lost. To keep the '
        'data (recommended), heal only the VNFCs that need it '
        '(vnfcInstanceId) with additionalParams {"%s": false}. To accept '
        'losing the data, send the whole-VNF heal with additionalParams '
        '{"%s": true}'
        % (subject, lost, tacker_settings.heal_block_storage().key,
           ACKNOWLEDGE))


def check_phase(op, node, whole=False):
    """Refuse (HealRefused, nothing changed yet) a heal that would empty
    the storage server ``node``'s volume without the request's consent.

    Decided from the request and Tacker's settings alone, so the dry run
    (``k8s-mgmt plan``) refuses exactly as the heal does."""
    setting = tacker_settings.heal_block_storage()
    api = op.ctx.api
    recreated = (whole_recreates_volume(op.ctx.request, api) if whole
                 else recreates_volume(op.ctx.request, setting, api))
    if not recreated:
        outcome = 'kept: the new server mounts the same volume'
    elif op.params.storage_volume_recreate:
        outcome = 'recreated empty (%s: true)' % ACKNOWLEDGE
    elif api == 'v2':
        raise heal_plan.HealRefused(reason=_v2_reason(op, node))
    else:
        raise heal_plan.HealRefused(
            reason=_whole_reason(op, node) if whole else
            _vnfc_reason(op, node, setting))
    return phases.Phase(TITLE, action=lambda: outcome, assume=outcome)
