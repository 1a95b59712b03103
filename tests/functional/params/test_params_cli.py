"""``k8s-mgmt validate`` run as a real process: exit codes and output."""

import json
import os

import pytest

import params_helpers as h

SEED_SIMPLE = os.path.join(h.FIXTURES, 'seed_002_0_simple.json')


validate = h.validate_cli


def write(tmp_path, content, name='request.json'):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def test_seed_request_is_refused_for_its_placeholder_ports():
    done = validate(SEED_SIMPLE)
    assert done.returncode == 2
    assert [line.split(':')[0] for line in done.stdout.splitlines()] == [
        'k8s_cluster_installation_param.proxy.http_proxy',
        'k8s_cluster_installation_param.proxy.https_proxy']
    assert '2 problem(s)' in done.stderr
    assert 'port is not a number from 1 to 65535' in done.stdout
    assert 'password1' not in done.stdout + done.stderr   # proxy credentials


def test_seed_request_with_real_ports_is_valid(tmp_path):
    done = validate(write(tmp_path, json.dumps(h.load_seed(SEED_SIMPLE))))
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert 'valid for instantiate' in lines[0] and 'flavour simple' in lines[0]
    assert 'warning: k8s_cluster_installation_param.master_node.pod_cidr' \
        in done.stderr
    assert 'password1' not in done.stdout + done.stderr   # proxy credentials


def test_every_problem_one_line_and_no_secret(tmp_path):
    body = {'flavourId': 'complex', 'additionalParams': h.base_params()}
    root = body['additionalParams'][h.ROOT]
    root['master_node']['pod_cidr'] = '300.1.0.0/16'
    del root['master_node']['aspect_id']
    root['script_path'] = '../../etc/passwd'
    root['worker_node']['ssh_private_key'] = 'garbage ' + h.PASSWORD
    done = validate(write(tmp_path, json.dumps(body)))
    assert done.returncode == 2
    assert sorted(done.stdout.splitlines()) == sorted([
        "k8s_cluster_installation_param.master_node.pod_cidr: "
        "not a CIDR: '300.1.0.0/16'",
        "k8s_cluster_installation_param.master_node.aspect_id: required for "
        "the HA flavour 'complex' (the group of 3+ masters)",
        "k8s_cluster_installation_param.script_path: escapes the VNF "
        "package: '../../etc/passwd'",
        'k8s_cluster_installation_param.worker_node.password: give password '
        'or ssh_private_key, not both',
        'k8s_cluster_installation_param.worker_node.ssh_private_key: not a '
        'PEM private key (want the text from "-----BEGIN ... PRIVATE '
        'KEY-----" to "-----END ... PRIVATE KEY-----")',
    ])
    assert h.PASSWORD not in done.stdout + done.stderr


@pytest.mark.parametrize('content, message', [
    ('{"flavourId": ', 'request: not valid JSON'),
    (b'\xff\xfe{}', 'request: not UTF-8 text'),
    ('', 'request: not valid JSON'),
    ('[1, 2]', 'request: expected a JSON object (an InstantiateVnfRequest), '
               'got a list'),
    ('42', 'request: expected a JSON object'),
    ('null', 'request: expected a JSON object'),
    ('[' * 10000 + ']' * 10000, 'request: '),
    ('{"a":' * 100000 + '1' + '}' * 100000, 'request: '),
    ('{"flavourId": "simple"}', 'additionalParams: required'),
    ('{"flavourId": ["x"], "additionalParams": []}',
     'flavourId: expected a string, got a list'),
    ('{"k8s_cluster_installation_param": {}}', 'this looks like '
                                               'additionalParams itself'),
], ids=['truncated', 'not-utf8', 'empty', 'list', 'number', 'null',
        'deep-list', 'deep-object', 'no-params', 'bad-flavour', 'unwrapped'])
def test_not_a_request_exits_2(tmp_path, content, message):
    done = validate(write(tmp_path, content))
    assert done.returncode == 2
    assert message in done.stdout


def test_legacy_seed_000_says_what_is_missing():
    done = validate(os.path.join(h.FIXTURES,
                                 'legacy_seed_000_0_cluster_install.json'))
    assert done.returncode == 2
    assert done.stdout.startswith('k8s_cluster_installation_param: required '
                                  'for instantiate')
    assert 'warning: input_params: unknown parameter' in done.stderr


@pytest.mark.parametrize('which', ['missing', 'directory'])
def test_unreadable_file_exits_1(tmp_path, which):
    path = str(tmp_path / 'nope.json') if which == 'missing' else str(
        tmp_path)
    done = validate(path)
    assert done.returncode == 1
    assert done.stdout == ''
    assert path in done.stderr


def test_package_dir_and_operation(tmp_path, built_package):
    sample = os.path.join(h.SAMPLES, 'simple.json')
    done = validate(sample, '--package-dir', str(tmp_path))
    assert done.returncode == 2
    assert 'no such file in the VNF package' in done.stdout
    done = validate(sample, '--package-dir', built_package,
                    '--operation', 'scale')
    assert done.returncode == 0, done.stdout
    assert 'valid for scale' in done.stdout
    assert done.stderr == ''
