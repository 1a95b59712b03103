# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
# http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""LCM-operation UserData of the k8s-mgmt sample VNF package.

Tacker runs this at instantiation (``lcm-operation-user-data`` /
``lcm-operation-user-data-class`` in additionalParams) and passes what it
returns to Heat as the BaseHOT's parameters. Every BaseHOT flavour takes one
parameter, ``nfv``::

    {'VDU': {'masterNode': {'flavor': ..., 'image': ...,
                            'desired_capacity': N},
             'workerNode': {...}},
     'CP': {'masterNode_CP1': {'network': <net id>, 'fixed_ips': [...]}, ...}}

Every ``get_param: [nfv, ...]`` path of the top and nested templates is
filled, or instantiation stops here naming what is missing - before Heat
creates anything. The CPs' networks and addresses are read from
``extVirtualLinks`` by this module, not by Tacker's
``create_network_dict``: that helper fails on ``cpProtocolData`` without
``ipOverEthernet`` (the shape of the user guide's requests) and keeps only
the last of several fixed addresses.
"""

from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData
import tacker.vnfm.lcm_user_data.utils as user_data_utils


class UserDataError(ValueError):
    """The request, the VNFD and the BaseHOT do not fit together."""


class KubernetesClusterUserData(AbstractUserData):

    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None,
                    grant_info=None):
        templates = base_hot_dict or {}
        vnfd_dict = vnfd_dict or {}
        sources = {
            'flavor': user_data_utils.create_vdu_flavor_capability_name_dict(
                vnfd_dict),
            'image': user_data_utils.create_sw_image_dict(vnfd_dict),
            'desired_capacity': initial_instances(
                vnfd_dict, _field(inst_req_info, 'instantiation_level_id')),
        }
        ports = cp_ports(_field(inst_req_info, 'ext_virtual_links') or [])
        nfv = {'VDU': {}, 'CP': {}}
        missing = []
        for kind, name, key in sorted(nfv_param_paths(templates)):
            entry = nfv.setdefault(kind, {}).setdefault(name, {})
            if kind == 'VDU' and name in sources.get(key, {}):
                entry[key] = sources[key][name]
            elif kind == 'CP' and name in ports and key in ports[name]:
                entry.update(ports[name])
            else:
                missing.append(_why_missing(kind, name, key))
        if missing:
            raise UserDataError('the BaseHOT needs what neither the request '
                                'nor the VNFD gives: ' + '; '.join(missing))
        from_request = user_data_utils.get_diff_base_hot_param_from_api(
            templates, inst_req_info) if 'heat_template' in templates else {}
        return {'nfv': nfv, **from_request}


def _why_missing(kind, name, key):
    if kind == 'CP' and key == 'network':
        return ('CP %s: no extVirtualLinks entry has an extCp with cpdId %s'
                % (name, name))
    if kind == 'VDU' and key == 'flavor':
        return ('VDU %s: the VNFD gives no requested_additional_capability_'
                'name (its flavor)' % name)
    if kind == 'VDU' and key == 'image':
        return 'VDU %s: the VNFD gives no sw_image_data name' % name
    if kind == 'VDU' and key == 'desired_capacity':
        return ('VDU %s: the VNFD gives it no instantiation level or '
                'initial delta' % name)
    return '%s %s: no source for %s' % (kind, name, key)


def nfv_param_paths(templates):
    """(kind, name, key) of every ``get_param: [nfv, kind, name, key]`` in
    the top template and the nested ones."""
    found = set()

    def walk(value):
        if isinstance(value, dict):
            for key, arg in value.items():
                if (key == 'get_param' and isinstance(arg, list) and
                        len(arg) == 4 and arg[0] == 'nfv'):
                    found.add(tuple(arg[1:]))
                else:
                    walk(arg)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for template in templates.values():
        if isinstance(template, dict):
            walk(template.get('resources', {}))
    return found


def _field(obj, name):
    """An attribute of a Tacker object (None when unset) or a dict key."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    is_set = getattr(obj, 'obj_attr_is_set', None)
    if is_set is not None and not is_set(name):
        return None
    return getattr(obj, name, None)


def _items(value):
    """The entries of a list, or of a map keyed by id (newer SOL003)."""
    if isinstance(value, dict):
        return list(value.values())
    return list(value or [])


def cp_ports(ext_virtual_links):
    """{cpdId: {'network': id, 'fixed_ips': [...]}} from extVirtualLinks.

    ``fixed_ips`` holds one entry per fixed address (with its subnet when
    given) and one ``{'subnet': id}`` per dynamic address requested in a
    subnet; a CP without ``ipOverEthernet`` gets its network and no fixed
    IPs, and Neutron picks its address.
    """
    ports = {}
    for link in _items(ext_virtual_links):
        for ext_cp in _items(_field(link, 'ext_cps')):
            fixed_ips = []
            for config in _items(_field(ext_cp, 'cp_config')):
                for protocol in _items(_field(config, 'cp_protocol_data')):
                    fixed_ips.extend(_fixed_ips(
                        _field(protocol, 'ip_over_ethernet')))
            ports[_field(ext_cp, 'cpd_id')] = {
                'network': _field(link, 'resource_id'),
                'fixed_ips': fixed_ips}
    return ports


def _fixed_ips(ip_over_ethernet):
    entries = []
    for address in _items(_field(ip_over_ethernet, 'ip_addresses')):
        subnet = _field(address, 'subnet_id')
        fixed = _items(_field(address, 'fixed_addresses'))
        for ip in fixed:
            entry = {'ip_address': ip}
            if subnet:
                entry['subnet'] = subnet
            entries.append(entry)
        if not fixed and subnet:
            count = _field(address, 'num_dynamic_addresses') or 1
            entries.extend({'subnet': subnet} for _ in range(count))
    return entries


def initial_instances(vnfd_dict, level_id=None):
    """Number of instances of each VDU at instantiation.

    Read from the VNFD's VduInstantiationLevels for ``level_id`` (or the
    default level), falling back to VduInitialDelta.
    """
    policies = vnfd_dict.get('topology_template', {}).get('policies', [])
    named = {name: body for policy in policies
             for name, body in policy.items()}
    if level_id is None:
        for body in named.values():
            if body.get('type') == 'tosca.policies.nfv.InstantiationLevels':
                level_id = body['properties'].get('default_level')
    counts = {}
    for body in named.values():
        kind = body.get('type')
        props = body.get('properties', {})
        if kind == 'tosca.policies.nfv.VduInitialDelta':
            number = props['initial_delta']['number_of_instances']
        elif kind == 'tosca.policies.nfv.VduInstantiationLevels':
            level = props.get('levels', {}).get(level_id)
            if level is None:
                continue
            number = level['number_of_instances']
        else:
            continue
        for vdu in body.get('targets', []):
            # An instantiation level, when it names the VDU, wins over the
            # initial delta.
            if kind.endswith('Levels') or vdu not in counts:
                counts[vdu] = number
    return counts
