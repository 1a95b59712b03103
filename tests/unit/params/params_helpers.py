"""Shared helpers of the parameter tests: fixture paths, request builders."""

import copy
import json
import os
import re
import subprocess
import sys

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt import shipped

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FIXTURES = os.path.join(REPO, 'tests', 'fixtures', 'requests')
SAMPLES = os.path.join(REPO, 'k8s_mgmt', 'samples', 'requests')
SEEDS = os.environ.get('K8S_MGMT_SEEDS', '/work/shared/seeds')
ROOT = 'k8s_cluster_installation_param'
PASSWORD = 'Tr0ub4dor&3-not-printed'


def load_json(path):
    with open(path, encoding='utf-8') as handle:
        return json.load(handle)


# The seeds' sample proxies name their port "port1"/"port2": placeholders
# the validator refuses. Their real-looking stand-ins for the other checks.
SEED_PLACEHOLDER_PORTS = {':port1': ':3128', ':port2': ':3129'}


def without_placeholders(value):
    """A copy of a seed body (or part) with its placeholder ports filled."""
    if isinstance(value, dict):
        return {k: without_placeholders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_placeholders(v) for v in value]
    if isinstance(value, str):
        for placeholder, port in SEED_PLACEHOLDER_PORTS.items():
            value = value.replace(placeholder, port)
    return value


def load_seed(path):
    """A seed request body, its placeholder ports filled."""
    return without_placeholders(load_json(path))


def base_params():
    """A valid snake_case additionalParams for the simple flavour."""
    return {
        ROOT: {
            'script_path': 'Scripts/install_k8s_cluster.sh',
            'vim_name': 'kubernetes_vim',
            'master_node': {
                'aspect_id': 'master_instance',
                'ssh_cp_name': 'masterNode_CP1',
                'nic_cp_name': 'masterNode_CP1',
                'username': 'ubuntu',
                'password': PASSWORD,
                'pod_cidr': '192.168.0.0/16',
                'cluster_cidr': '10.199.187.0/24',
                'cluster_cp_name': 'masterNode_CP1',
            },
            'worker_node': {
                'aspect_id': 'worker_instance',
                'ssh_cp_name': 'workerNode_CP2',
                'nic_cp_name': 'workerNode_CP2',
                'username': 'ubuntu',
                'password': PASSWORD,
            },
            'proxy': {'k8s_node_cidr': '10.254.0.0/24'},
        },
        'lcm-operation-user-data': './UserData/k8s_cluster_user_data.py',
        'lcm-operation-user-data-class': 'KubernetesClusterUserData',
    }


def storage_section():
    return {
        'ssh_cp_name': 'storage_server_CP',
        'username': 'ubuntu',
        'password': PASSWORD,
        'cinder_volume_setup_params': [
            {'volume_resource_id': 'storage_server_volume',
             'mount_to': '/volume'}],
        'nfs_server_setup_params': [
            {'export_dir': '/volume/nfs/pv1', 'export_to': '10.254.0.0/24'}],
    }


def with_change(path, value, params=None):
    """A copy of ``params`` (default: base_params) with the dotted ``path``
    set to ``value``; a value of ``DELETE`` removes the key."""
    params = copy.deepcopy(params if params is not None else base_params())
    keys = path.split('.')
    target = params
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return params


DELETE = object()


def problems_of(call, *args, **kwargs):
    """The (path, message) problems a call raises; fails if it passes."""
    with pytest.raises(exceptions.ValidationError) as info:
        call(*args, **kwargs)
    return info.value.problems


def paths(problems):
    return [path for path, _ in problems]


def _command():
    script = os.path.join(os.path.dirname(sys.executable), 'k8s-mgmt')
    if os.path.exists(script):
        return [script]
    return [sys.executable, '-m', 'k8s_mgmt.cli.main']


def validate_cli(*args):
    """``k8s-mgmt validate ARGS`` as a process; never a traceback."""
    done = subprocess.run(_command() + ['validate'] + list(args),
                          capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    assert 'Traceback' not in done.stderr + done.stdout
    return done


UD = 'additionalParams.lcm-operation-user-data'
UDC = 'additionalParams.lcm-operation-user-data-class'


def sample(flavour='complex'):
    return load_json(os.path.join(SAMPLES, flavour + '.json'))


def changed(body, path, value):
    """A copy of ``body`` with the dotted ``path`` (list indexes as
    numbers) set to ``value``, or removed when ``value`` is DELETE."""
    body = copy.deepcopy(body)
    keys = [int(k) if k.isdigit() else k for k in path.split('|')]
    target = body
    for key in keys[:-1]:
        target = target[key]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return body


def lines(body, **kwargs):
    """The problems of ``body`` as printed ``path: message`` lines."""
    problems = problems_of(params.load_request, body, **kwargs)
    return ['%s: %s' % problem for problem in problems]


def package_with_file(package_copy, relative, text, without_feature=None):
    """``package_copy`` with ``text`` as its file ``relative``; with
    ``without_feature``, its install script's k8s-mgmt-features line lacks
    that word (a script older than the option)."""
    path = os.path.join(package_copy, *relative.split('/'))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    if without_feature:
        script = os.path.join(package_copy, 'Scripts', shipped.INSTALL_SCRIPT)
        with open(script, 'rb') as handle:
            data = handle.read()
        with open(script, 'wb') as handle:
            handle.write(re.sub(
                rb'(# k8s-mgmt-features:.*) ' +
                re.escape(without_feature.encode()) + rb'\b', rb'\1', data,
                count=1))
    return package_copy
