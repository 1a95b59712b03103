"""Public entry points: load, validate and merge cluster parameters."""

import dataclasses

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt.params import casing
from k8s_mgmt.params import fields
from k8s_mgmt.params import model
from k8s_mgmt.params import package_checks
from k8s_mgmt.params import package_version
from k8s_mgmt.params import registry_vnf
from k8s_mgmt.params import request_body
from k8s_mgmt.params import validate
from k8s_mgmt.params.fields import key_for_path

# What a scale or heal request may change in the stored parameters: how to
# log in (credentials are rotated) and the proxy. Everything else was fixed
# when the cluster was built.
_OVERRIDABLE = {
    'master_node': ('username', 'password', 'ssh_private_key'),
    'worker_node': ('username', 'password', 'ssh_private_key'),
    'storage_server': ('username', 'password', 'ssh_private_key'),
    'ansible': ('username', 'password', 'ssh_private_key'),
    'external_lb_param': ('ssh_username', 'ssh_password', 'ssh_private_key'),
    'proxy': ('http_proxy', 'https_proxy', 'no_proxy'),
}
_OVERRIDABLE_REGISTRY = ('ssh_username', 'ssh_password', 'ssh_private_key')
_CREDENTIAL_PAIRS = (('password', 'ssh_private_key'),
                     ('ssh_password', 'ssh_private_key'))
_MAX_KEY_DEPTH = 6


def _default_version(report=None, package_dir=None):
    """The version an instantiate request without one gets: the one the
    VNF package names, else ``[k8s_mgmt] kubernetes_version``."""
    try:
        named = package_version.read(package_dir)
    except exceptions.ValidationError as err:
        for path, message in err.problems:
            report.problem(path, message)
        named = None
    return named or conf.CONF.k8s_mgmt.kubernetes_version


def _finish(report, params):
    validate.log_warnings(report.warnings)
    if report.problems or params is None:
        error = exceptions.ValidationError(problems=report.problems or [
            ('additionalParams', 'no cluster parameters could be read')])
        error.warnings = list(report.warnings)
        raise error
    return dataclasses.replace(params, warnings=tuple(report.warnings),
                               unknown_keys=tuple(report.unknown_keys))


def _check_operation(operation):
    if operation not in model.OPERATIONS:
        raise exceptions.ValidationError(problems=[(
            'operation', 'must be one of %s, got %s' % (
                ', '.join(model.OPERATIONS), fields.show(str(operation))))])


def load_cluster_params(additional_params, *, operation='instantiate',
                        flavour=None, package_dir=None,
                        ext_virtual_links=None, api='v1'):
    """Validate ``additionalParams`` (either casing) into ClusterParams.

    ``ext_virtual_links`` (the request's, either casing) are checked too
    when given. With ``package_dir`` what they and the parameters name must
    exist in the VNF package (see :mod:`k8s_mgmt.params.package_checks`).

    Raises :class:`~k8s_mgmt.exceptions.ValidationError` naming every
    problem (its ``warnings`` attribute holds the warnings too). Warnings
    are logged and kept in ``ClusterParams.warnings``.
    """
    _check_operation(operation)
    report = _report_for(api)
    params = _validate(report, operation, flavour, package_dir,
                       additional_params, ext_virtual_links)
    return _finish(report, params)


def _validate(report, operation, flavour, package_dir, additional_params,
              ext_virtual_links):
    cps = request_body.ext_cps(report, ext_virtual_links)
    validator = validate.ClusterValidator(report, operation, flavour,
                                          package_dir)
    params = validator.run(additional_params,
                           _default_version(report, package_dir), cps)
    if package_dir is not None:
        package_checks.check_api(report, package_dir,
                                 request_body.api_of(report))
    return params


def _report_for(api):
    if api not in request_body.APIS:
        raise ValueError('api must be one of %s, not %r'
                         % (', '.join(request_body.APIS), api))
    return (request_body.V2Report() if api == request_body.API_V2
            else fields.Report())


def load_request(body, *, operation='instantiate', package_dir=None,
                 api='v1'):
    """Validate a whole InstantiateVnfRequest body: flavourId,
    vimConnectionInfo, extVirtualLinks and additionalParams.

    ``api`` is the Tacker VNF LCM API the request is for, 'v1' or 'v2'
    (:func:`k8s_mgmt.params.request_body.detect_api` tells from the body).
    """
    _check_operation(operation)
    report = _report_for(api)
    if not isinstance(body, dict):
        report.problem('request', 'expected a JSON object (an '
                       'InstantiateVnfRequest), got %s'
                       % fields.describe(body))
        return _finish(report, None)
    flavour = body.get('flavourId')
    if flavour is None:
        hint = (' (this looks like additionalParams itself: wrap it as '
                '{"flavourId": ..., "additionalParams": {...}})'
                if validate.ROOT in body or 'k8sClusterInstallationParam'
                in body else '')
        report.problem('flavourId', 'required' + hint)
    elif fields.string(report, 'flavourId', flavour) is None:
        flavour = None
    request_body.vim_connection_info(report, body.get('vimConnectionInfo'))
    if 'additionalParams' not in body:
        report.problem('additionalParams', 'required: it carries %s'
                       % validate.ROOT)
        return _finish(report, None)
    params = _validate(report, operation, flavour, package_dir,
                       body['additionalParams'], body.get('extVirtualLinks'))
    return _finish(report, params)


def merge_overrides(stored, request_additional, operation):
    """Apply a scale/heal/terminate request's additionalParams over the
    parameters stored at instantiate.

    The request may carry ``force_drain`` (scale, heal) and a subset of
    ``k8s_cluster_installation_param`` (either casing) changing only what
    ``_OVERRIDABLE`` lists; changing anything else is a problem. Giving a
    password drops a stored private key and vice versa. The merged result
    is validated again for ``operation``.
    """
    _check_operation(operation)
    request = _snake_keys(
        {} if request_additional is None else request_additional, 0)
    report = fields.Report()
    if not isinstance(request, dict):
        report.problem('additionalParams', 'expected an object, got %s'
                       % fields.describe(request))
        return _finish(report, None)
    root = registry_vnf.ROOT if stored.is_registry else validate.ROOT
    subset = request.get(root)
    merged = stored.to_dict()
    if stored.is_registry:
        merged = merged[root]
    if isinstance(subset, dict):
        if stored.is_registry:
            _merge_registry(report, merged, subset)
        else:
            _merge_subset(report, merged, subset)
    elif subset is not None:
        report.problem(root, 'expected an object, got %s'
                       % fields.describe(subset))
    additional = {key: value for key, value in request.items()
                  if key != root}
    additional[root] = merged
    validator = validate.ClusterValidator(report, operation, stored.flavour)
    params = validator.run(additional, stored.kubernetes_version)
    if params is not None:
        params = dataclasses.replace(
            params, kubernetes_version=stored.kubernetes_version)
    return _finish(report, params)


def _merge_subset(report, merged, subset):
    for section, value in subset.items():
        path = '%s.%s' % (validate.ROOT, key_for_path(section))
        _merge_section(report, path, merged, section, value,
                       _OVERRIDABLE.get(section, ()))


def _merge_registry(report, merged, subset):
    """The registry VNF's root: its SSH credentials and its proxy."""
    own = {key: value for key, value in subset.items() if key != 'proxy'}
    _merge_fields(report, registry_vnf.ROOT, merged, own,
                  _OVERRIDABLE_REGISTRY)
    if 'proxy' in subset:
        _merge_section(report, registry_vnf.ROOT + '.proxy', merged,
                       'proxy', subset['proxy'], _OVERRIDABLE['proxy'])


def _merge_section(report, path, merged, section, value, allowed):
    if not isinstance(value, dict) or not allowed:
        if merged.get(section) != value:
            report.problem(path, 'cannot be changed after instantiate')
        return
    target = merged.setdefault(section, {})
    if isinstance(target, dict):
        _merge_fields(report, path, target, value, allowed)


def _merge_fields(report, path, target, value, allowed):
    for key, item in value.items():
        if key not in allowed:
            if target.get(key) != item:
                report.problem('%s.%s' % (path, key_for_path(key)),
                               'cannot be changed after instantiate')
            continue
        for pair in _CREDENTIAL_PAIRS:
            if key in pair:
                for other in pair:
                    if other != key and other not in value:
                        target.pop(other, None)
        target[key] = item


def _snake_keys(value, depth):
    """Request keys in snake_case, for the few levels parameters use."""
    if isinstance(value, dict) and depth < _MAX_KEY_DEPTH:
        return {(casing.camel_to_snake(k) if isinstance(k, str) else k):
                _snake_keys(v, depth + 1) for k, v in value.items()}
    return value
