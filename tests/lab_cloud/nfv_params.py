"""``nfv`` parameters for the lab cloud's own tests, made without Tacker.

The lab itself builds its stacks from what the package's UserData returns
through Tacker's code path (k8s_mgmt_lab.user_data); these tests of the
cloud model alone derive the BaseHOT's ``get_param: [nfv, VDU|CP, <name>,
<key>]`` inputs from the templates, which needs no Tacker and is fast.
"""

from k8s_mgmt_lab import cloud
from k8s_mgmt_lab import hot


def _param_paths(value):
    if isinstance(value, dict):
        for key, arg in value.items():
            if key == 'get_param' and isinstance(arg, list) and len(arg) == 4:
                yield arg
            else:
                yield from _param_paths(arg)
    elif isinstance(value, list):
        for item in value:
            yield from _param_paths(item)


def sample_parameters(package_dir, flavour, masters=None, workers=None,
                      network=None):
    """The ``nfv`` parameter the package's UserData would produce for the lab.

    Group sizes default to each AutoScalingGroup's ``min_size``; ``masters`` /
    ``workers`` override the sizes of the masterNode / workerNode groups.
    """
    template = hot.load_template(cloud.top_template(package_dir, flavour))
    network = network or cloud.NETWORK_NAME
    sizes = {'masterNode': masters, 'workerNode': workers}
    nfv = {'VDU': {}, 'CP': {}}
    for definition in template.resources.values():
        props = definition.get('properties') or {}
        for _, kind, name, key in _param_paths(definition):
            entry = nfv.setdefault(kind, {}).setdefault(name, {})
            if key == 'desired_capacity':
                entry[key] = sizes.get(name) or int(props.get('min_size', 1))
            elif key == 'flavor':
                entry[key] = 'm1.medium'
            elif key == 'image':
                entry[key] = 'ubuntu-22.04-server-cloudimg-amd64'
            elif key == 'network':
                entry[key] = network
    return {'nfv': nfv}
