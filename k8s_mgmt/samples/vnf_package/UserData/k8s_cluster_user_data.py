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

    {'VDU': {'masterNode': {'flavor': ..., 'image': ..., 'desired_capacity': N},
             'workerNode': {...}},
     'CP': {'masterNode_CP1': {'network': <net id>, 'fixed_ips': [...]}, ...}}
"""

from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData
import tacker.vnfm.lcm_user_data.utils as user_data_utils


class KubernetesClusterUserData(AbstractUserData):

    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None,
                    grant_info=None):
        from_request = user_data_utils.get_diff_base_hot_param_from_api(
            base_hot_dict, inst_req_info)
        skeleton = user_data_utils.create_initial_param_server_port_dict(
            base_hot_dict)
        params = user_data_utils.create_final_param_dict(
            skeleton,
            user_data_utils.create_vdu_flavor_capability_name_dict(vnfd_dict),
            user_data_utils.create_sw_image_dict(vnfd_dict),
            user_data_utils.create_network_dict(inst_req_info, skeleton))
        level_id = getattr(inst_req_info, 'instantiation_level_id', None)
        for vdu, count in initial_instances(vnfd_dict, level_id).items():
            params['nfv']['VDU'].setdefault(vdu, {})['desired_capacity'] = count
        return {**params, **from_request}


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
