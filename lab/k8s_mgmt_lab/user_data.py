"""Run a VNF package's UserData the way Tacker 16 runs it, for the lab.

Tacker's conductor turns an InstantiateVnfRequest into HOT parameters like
this (``tacker.api.vnflcm.v1.controller`` and
``tacker.vnfm.infra_drivers.openstack.openstack.OpenStack.create``):

1. the API converts the body with ``convert_camelcase_to_snakecase`` and
   builds ``objects.InstantiateVnfRequest.obj_from_primitive``;
2. at onboarding, ``csar_utils.load_csar_data`` parses the CSAR and the
   flavour's ``tpl_dict`` is stored as YAML (``vnfd_<flavour>``), which
   ``create`` loads back with ``yaml.safe_load``;
3. ``vnflcm.utils.get_base_nest_hot_dict`` reads ``BaseHOT/<flavour>``;
4. the ``lcm-operation-user-data`` path becomes a module name, imported
   with the extracted package on ``sys.path``, and the class's
   ``instantiate(base_hot_dict, vnfd_dict, inst_req_info, grant_info)``
   runs with ``base_hot_dict`` = the nested templates plus
   ``heat_template``.

:func:`run` does exactly those calls with Tacker's own functions, in a
child process (importing Tacker's objects swaps green locks into
``threading``, which must not happen inside the lab daemon). The one thing
replaced is the database lookup of the package's directory
(``vnflcm.utils._get_vnf_package_path``): there is no Tacker database here.
"""

import copy
import importlib
import json
import os
import subprocess
import sys
import tempfile

from k8s_mgmt_lab.errors import LabError

DEADLINE = 120.0


def hot_parameters(csar_path, body):
    """The HOT parameters the package's UserData returns for ``body``.

    Raises LabError with Tacker's or the UserData's own message when the
    request cannot be turned into parameters.
    """
    try:
        proc = subprocess.run(
            [sys.executable, '-m', 'k8s_mgmt_lab.user_data', csar_path],
            input=json.dumps(body), capture_output=True, text=True,
            timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        raise LabError('the package\'s UserData gave no answer within %d s'
                       % DEADLINE)
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = proc.stderr.strip().splitlines()[-3:]
        raise LabError('running the package\'s UserData failed: %s'
                       % (' / '.join(tail) or 'no output'))
    if 'error' in answer:
        raise LabError('the package\'s UserData refused the request: %s'
                       % answer['error'])
    return answer['parameters']


def run(csar_path, body):
    """Tacker's UserData path, in this process (needs the tacker extra).

    Returns ``(parameters, templates)``: what the UserData returned, and
    the BaseHOT as Tacker read it (``{'heat_template': top, <nested file
    name>: nested template}``).
    """
    with tempfile.TemporaryDirectory(prefix='k8s-mgmt-csar-') as csar_root:
        return _run(csar_root, csar_path, body)


def _run(csar_root, csar_path, body):
    import yaml
    from oslo_config import cfg
    from tacker.common import csar_utils
    from tacker.common import utils as tacker_utils
    import tacker.conf  # noqa: F401  (registers [vnf_package])
    from tacker import context as tacker_context
    from tacker import objects
    from tacker.vnflcm import utils as vnflcm_utils

    objects.register_all()
    context = tacker_context.get_admin_context()
    cfg.CONF.set_override('vnf_package_csar_path', csar_root,
                          group='vnf_package')
    package_id = 'lab-package'
    vnf_data, flavours, _ = csar_utils.load_csar_data(
        context, package_id, csar_path)
    package_path = os.path.join(csar_root, package_id)
    request = objects.InstantiateVnfRequest.obj_from_primitive(
        tacker_utils.convert_camelcase_to_snakecase(copy.deepcopy(body)),
        context=context)
    stored = {'vnfd_' + f['flavour_id']:
              yaml.dump(f.get('tpl_dict'), default_flow_style=False)
              for f in flavours}
    key = 'vnfd_' + request.flavour_id
    if key not in stored:
        raise ValueError('flavourId %s is not a flavour of the package '
                         '(it has %s)' % (request.flavour_id, ', '.join(
                             sorted(k[len('vnfd_'):] for k in stored))))
    vnfd_dict = yaml.safe_load(stored[key])
    # The DB lookup of the package directory; everything else is Tacker's.
    vnflcm_utils._get_vnf_package_path = lambda ctx, vnfd_id: package_path
    base_hot, nested = vnflcm_utils.get_base_nest_hot_dict(
        context, request.flavour_id, vnf_data.get('descriptor_id'))
    if base_hot is None:
        raise ValueError('the package has no BaseHOT/%s'
                         % request.flavour_id)
    params = request.additional_params or {}
    path = params.get('lcm-operation-user-data')
    class_name = params.get('lcm-operation-user-data-class')
    if path is None or class_name is None:
        raise ValueError('additionalParams has no lcm-operation-user-data '
                         'and lcm-operation-user-data-class: Tacker would '
                         'run heat-translator, not the BaseHOT')
    module_name = os.path.splitext(path.lstrip('./'))[0].replace('/', '.')
    sys.path.append(package_path)
    try:
        module = importlib.import_module(module_name)
        klass = getattr(module, class_name)
    finally:
        sys.path.remove(package_path)
        _forget_module(module_name)
    base_hot_dict = copy.deepcopy(nested)
    base_hot_dict['heat_template'] = base_hot
    parameters = klass.instantiate(copy.deepcopy(base_hot_dict), vnfd_dict,
                                   request, None)
    return parameters, base_hot_dict


def _forget_module(module_name):
    """Drop the UserData module and its parents, as Tacker does, so the
    next package's ``UserData`` is imported afresh."""
    parts = module_name.split('.')
    while parts:
        sys.modules.pop('.'.join(parts), None)
        parts.pop()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    body = json.loads(sys.stdin.read())
    try:
        parameters, _ = run(argv[0], body)
        answer = {'parameters': parameters}
    except Exception as err:  # every failure becomes one line for the lab
        answer = {'error': '%s: %s' % (type(err).__name__, err)}
    sys.stdout.write('\n' + json.dumps(answer) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
