"""What the lab takes from an operator's InstantiateVnfRequest for the
stack it makes: the one network it names, the driver's own validation
(a typo refused before any VM), and the groups' sizes in the HOT
parameters and the top template."""

import yaml

from k8s_mgmt_lab.errors import LabError

ROLE_OF_RESOURCE = {'masterNode': 'master', 'workerNode': 'worker',
                    'storage_server': 'storage', 'externalLB': 'external_lb',
                    'registry': 'registry'}


def raise_max_size(template, vdu, at_least):
    """The top template's text with the max_size of the group whose
    desired capacity is ``vdu``'s raised to ``at_least`` (unchanged when
    it is already as large)."""
    if not at_least:
        return template
    body = yaml.safe_load(template)
    wanted = {'get_param': ['nfv', 'VDU', vdu, 'desired_capacity']}
    changed = False
    for resource in (body.get('resources') or {}).values():
        props = resource.get('properties') or {}
        if resource.get('type') == 'OS::Heat::AutoScalingGroup' and \
                props.get('desired_capacity') == wanted and \
                isinstance(props.get('max_size'), int) and \
                props['max_size'] < at_least:
            props['max_size'] = at_least
            changed = True
    return yaml.safe_dump(body, sort_keys=False) if changed else template


def override_group_sizes(parameters, masters=None, workers=None):
    """Set the master and worker groups' desired capacities in the HOT
    parameters (None: as the request's instantiation level says). Other
    VDUs, such as the storage server, are no group and keep theirs."""
    sizes = {'master': masters, 'worker': workers}
    for vdu, role in ROLE_OF_RESOURCE.items():
        if sizes.get(role) is not None and vdu in parameters['nfv']['VDU']:
            parameters['nfv']['VDU'][vdu]['desired_capacity'] = sizes[role]
    return parameters


def check_request(request, package_dir, api='v1'):
    """The driver's own validation, with the built package: a typo is
    refused before the lab makes any VM."""
    from k8s_mgmt import exceptions
    from k8s_mgmt import params
    try:
        params.load_request(request, package_dir=package_dir, api=api)
    except exceptions.ValidationError as err:
        raise LabError('request: %s' % '; '.join(
            '%s: %s' % pair for pair in err.problems))


def request_network(request):
    """The id of the one network the request's extVirtualLinks name: an
    operator creates it before instantiating; the lab's stand-in Neutron
    has it, on the lab's bridge and subnet. LabError naming the field for
    none or several (the lab has one network)."""
    named = []
    for link in request.get('extVirtualLinks') or []:
        if isinstance(link, dict) and isinstance(link.get('resourceId'),
                                                 str):
            if link['resourceId'] not in named:
                named.append(link['resourceId'])
    if len(named) != 1:
        raise LabError('request: extVirtualLinks must name exactly one '
                       'network (resourceId) for the lab, found %d'
                       % len(named))
    return named[0]
