"""Per-call context: everything one hook call needs, read once, never shared.

Tacker keeps ONE driver instance per conductor and may run operations for
several VNFs at the same time, so nothing about an operation lives on the
driver: each hook builds an :class:`OperationContext` and hands it on.

Tacker passes versioned objects; the lab and the tests pass plain dicts. The
accessors here read both.
"""

import dataclasses
import typing

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import params as params_mod
from k8s_mgmt import state as state_mod
from k8s_mgmt import tacker_objects

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class OperationContext:
    """What one hook call works with. Built per call; never stored."""

    operation: str                  # instantiate | scale_in | scale_out | ...
    hook: str                       # the Tacker hook, e.g. instantiate_end
    vnf_instance_id: str
    flavour: typing.Optional[str]
    stack_id: typing.Optional[str]  # top Heat stack id, once Heat made it
    params: typing.Any              # k8s_mgmt.params.ClusterParams
    request: typing.Any             # the Tacker request object (or dict)
    vnf_instance: typing.Any
    tacker_context: typing.Any = None
    grant: typing.Any = None
    package_dir: typing.Optional[str] = None
    # From the hook's keyword arguments:
    vim_info: typing.Any = None       # the VIM holding the stack (lab)
    scale_out_ids: tuple = ()         # scale_out_id_list: member stacks
    scale_names: tuple = ()           # scale_name_list: member resources
    vim_registrar: typing.Any = None  # k8s_mgmt.vim's; None: by context
    api: str = 'v1'                   # Tacker's VNF LCM API running it
    # An upgrade's target ('1.36' or '1.36.1') and how many workers it
    # takes out at once (0: [k8s_mgmt] upgrade_max_unavailable).
    upgrade_target: typing.Optional[str] = None
    max_unavailable: int = 0

    @property
    def log_prefix(self):
        return '[%s %s]' % (self.operation, self.vnf_instance_id)


def package_dir_of(tacker_context, vnf_instance, kwargs):
    """Where the VNF package is unpacked, or None when it cannot be known.

    The lab passes ``vnf_package_path`` explicitly; inside Tacker it is derived
    from the VNFD id the way Tacker's own LCM driver does.
    """
    explicit = kwargs.get('vnf_package_path')
    if explicit:
        return explicit
    vnfd_id = tacker_objects.field(vnf_instance, 'vnfd_id')
    if tacker_context is None or not vnfd_id:
        return None
    try:
        from tacker.vnflcm import utils as vnflcm_utils
        return vnflcm_utils.get_vnf_package_path(tacker_context, vnfd_id)
    except Exception as err:  # no Tacker, no DB: validate without the files
        LOG.debug('VNF package path of VNFD %s unknown (%s); package files '
                  'will not be checked', vnfd_id, type(err).__name__)
        return None


def ext_virtual_links(request):
    """The request's extVirtualLinks as dicts (Tacker objects or dicts), so
    that validation can check their cpdIds against the VNFD."""
    links = tacker_objects.field(request, 'ext_virtual_links')
    if not isinstance(links, (list, tuple)):
        return links
    return [_plain_link(link) for link in links]


def _plain_link(link):
    if isinstance(link, dict):
        return link
    cps = tacker_objects.field(link, 'ext_cps')
    if isinstance(cps, (list, tuple)):
        cps = [cp if isinstance(cp, dict)
               else {'cpd_id': tacker_objects.field(cp, 'cpd_id')}
               for cp in cps]
    return {'id': tacker_objects.field(link, 'id'),
            'resource_id': tacker_objects.field(link, 'resource_id'),
            'ext_cps': cps}


def stored_additional_params(vnf_instance):
    """additionalParams Tacker stored at instantiation (camelCase keys)."""
    stored = tacker_objects.path(vnf_instance, 'instantiated_vnf_info',
                                 'additional_params')
    return stored or {}


def build(operation, hook, tacker_context, vnf_instance, request, grant,
          kwargs, additional_params=None, overrides=None, api='v1'):
    """Validate the parameters and return the context for one hook call.

    ``additional_params`` are the parameters to validate (the instantiate
    request's); without them the ones Tacker stored at instantiation are read
    and ``overrides`` (a scale/heal request's additionalParams) merged on top.
    Raises ValidationError naming every problem before anything remote runs.
    """
    if vnf_instance is None:
        raise exceptions.ValidationError([('vnf_instance', 'missing')])
    # The id names the state directory and the VIM, and prefixes log lines.
    reason = state_mod.instance_id_problem(
        tacker_objects.field(vnf_instance, 'id'))
    if reason is not None:
        raise exceptions.ValidationError([('vnf_instance.id', '%s: %.80r' % (
            reason, tacker_objects.field(vnf_instance, 'id')))])
    flavour = (tacker_objects.field(request, 'flavour_id') or
               tacker_objects.path(vnf_instance, 'instantiated_vnf_info',
                                   'flavour_id'))
    package_dir = package_dir_of(tacker_context, vnf_instance, kwargs)
    # The parameter model knows the LCM operations, not our sub-cases
    # (scale_in, heal_vnfc, ...).
    lcm_operation = operation.split('_', 1)[0]
    if additional_params is not None:
        cluster = params_mod.load_cluster_params(
            additional_params, operation=lcm_operation, flavour=flavour,
            package_dir=package_dir,
            ext_virtual_links=ext_virtual_links(request), api=api)
    else:
        cluster = params_mod.load_cluster_params(
            stored_additional_params(vnf_instance), operation=lcm_operation,
            flavour=flavour, package_dir=package_dir, api=api)
        if overrides:
            cluster = params_mod.merge_overrides(cluster, overrides,
                                                 lcm_operation)
    return OperationContext(
        operation=operation, hook=hook,
        vnf_instance_id=tacker_objects.field(vnf_instance, 'id'),
        flavour=flavour,
        stack_id=tacker_objects.path(vnf_instance, 'instantiated_vnf_info',
                                     'instance_id'),
        params=cluster, request=request, vnf_instance=vnf_instance,
        tacker_context=tacker_context, grant=grant, package_dir=package_dir,
        vim_info=kwargs.get('vim_info'),
        scale_out_ids=tuple(kwargs.get('scale_out_id_list') or ()),
        scale_names=tuple(kwargs.get('scale_name_list') or ()),
        vim_registrar=kwargs.get('vim_registrar'), api=api,
        upgrade_target=kwargs.get('upgrade_target'),
        max_unavailable=kwargs.get('max_unavailable') or 0)
