"""The request parts that make Tacker run our BaseHOT and UserData, checked
without a package: the UserData keys and the shape of extVirtualLinks and
vimConnectionInfo."""

import json

import pytest

from k8s_mgmt import params

import params_helpers as h

UD, UDC, sample, changed, lines = (h.UD, h.UDC, h.sample, h.changed, h.lines)

# -- the UserData keys, without a package --------------------------------


@pytest.mark.parametrize('key, value, expected', [
    ('lcm-operation-user-data', h.DELETE,
     UD + ': required together with lcm-operation-user-data-class: Tacker '
          'runs the UserData only when both are given'),
    ('lcm-operation-user-data-class', h.DELETE,
     UDC + ': required together with lcm-operation-user-data: Tacker runs '
           'the UserData only when both are given'),
    ('lcm-operation-user-data-class', None,
     UDC + ': required together with lcm-operation-user-data: Tacker runs '
           'the UserData only when both are given'),
    ('lcm-operation-user-data', '/UserData/k8s_cluster_user_data.py',
     UD + ': absolute or non-POSIX path; give it relative to the VNF package '
          "root: '/UserData/k8s_cluster_user_data.py'"),
    ('lcm-operation-user-data', '../UserData/k8s_cluster_user_data.py',
     UD + ": escapes the VNF package: '../UserData/k8s_cluster_user_data.py'"),
    ('lcm-operation-user-data', 'UserData/../k8s_cluster_user_data.py',
     UD + ": Tacker imports it as the module 'UserData....k8s_cluster_user_"
          "data', but '..' is not a Python identifier"),
    ('lcm-operation-user-data', 'UserData/k8s_cluster_user_data.sh',
     UD + ": not a Python file (want a name ending in .py): "
          "'UserData/k8s_cluster_user_data.sh'"),
    ('lcm-operation-user-data', 'User-Data/k8s_cluster_user_data.py',
     UD + ": Tacker imports it as the module 'User-Data.k8s_cluster_user_"
          "data', but 'User-Data' is not a Python identifier"),
    ('lcm-operation-user-data', 'UserData/k8s-cluster.py',
     UD + ": Tacker imports it as the module 'UserData.k8s-cluster', but "
          "'k8s-cluster' is not a Python identifier"),
    ('lcm-operation-user-data', 'UserData//k8s_cluster_user_data.py',
     UD + ": Tacker imports it as the module 'UserData..k8s_cluster_user_"
          "data', but '' is not a Python identifier"),
    ('lcm-operation-user-data', '.UserData/k8s_cluster_user_data.py',
     UD + ': Tacker strips the leading "." and "/" and would import '
          "'UserData/k8s_cluster_user_data.py', not "
          "'.UserData/k8s_cluster_user_data.py'"),
    ('lcm-operation-user-data', 5,
     UD + ': expected a path string, got a number'),
    ('lcm-operation-user-data', '',
     UD + ': empty'),
    ('lcm-operation-user-data-class', 'Kubernetes-UserData',
     UDC + ": not a Python class name: 'Kubernetes-UserData'"),
    ('lcm-operation-user-data-class', 'class',
     UDC + ": not a Python class name: 'class'"),
    ('lcm-operation-user-data-class', ['KubernetesClusterUserData'],
     UDC + ': expected a string, got a list'),
], ids=['no-path', 'no-class', 'null-class', 'absolute', 'escapes',
        'dotdot', 'not-py', 'dir-not-identifier', 'stem-not-identifier',
        'double-slash', 'leading-dot', 'number', 'empty', 'class-dash',
        'class-keyword', 'class-list'])
def test_user_data_key_problems(key, value, expected):
    body = changed(sample(), 'additionalParams|' + key, value)
    assert lines(body) == [expected]


def test_user_data_keys_accept_the_forms_tacker_imports():
    for path in ('UserData/k8s_cluster_user_data.py',
                 './UserData/k8s_cluster_user_data.py',
                 '././UserData/k8s_cluster_user_data.py',
                 'k8s_cluster_user_data.py'):
        body = changed(sample(), 'additionalParams|lcm-operation-user-data',
                       path)
        assert params.load_request(body).warnings == ()


def test_without_user_data_keys_instantiate_is_warned_only():
    additional = h.base_params()
    del additional['lcm-operation-user-data']
    del additional['lcm-operation-user-data-class']
    result = params.load_cluster_params(additional, flavour='simple')
    assert result.warnings == ((
        UD, 'absent (and lcm-operation-user-data-class): Tacker will ignore '
            'the BaseHOT and UserData and build the stack with '
            'heat-translator instead'),)
    for operation in ('scale', 'heal', 'terminate'):
        assert params.load_cluster_params(
            additional, operation=operation, flavour='simple').warnings == ()
    nulls = dict(additional, **{'lcm-operation-user-data': None,
                                'lcm-operation-user-data-class': None})
    assert params.load_cluster_params(nulls, flavour='simple').warnings == (
        result.warnings)


def test_without_user_data_keys_the_cli_warns(tmp_path):
    body = sample('simple')
    del body['additionalParams']['lcm-operation-user-data']
    del body['additionalParams']['lcm-operation-user-data-class']
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(body))
    done = h.validate_cli(str(path))
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        'warning: ' + UD + ': absent (and lcm-operation-user-data-class): '
        'Tacker will ignore the BaseHOT and UserData and build the stack '
        'with heat-translator instead']


# -- the shape of extVirtualLinks and vimConnectionInfo ------------------


@pytest.mark.parametrize('path, value, expected', [
    ('extVirtualLinks', {}, 'extVirtualLinks: expected a list, got an '
                            'object'),
    ('extVirtualLinks|0', 'net', 'extVirtualLinks[0]: expected an object, '
                                 'got a string'),
    ('extVirtualLinks|0|id', h.DELETE, 'extVirtualLinks[0].id: required'),
    ('extVirtualLinks|1|resourceId', 5,
     'extVirtualLinks[1].resourceId: expected a string, got a number'),
    ('extVirtualLinks|1|resourceId', None,
     'extVirtualLinks[1].resourceId: required'),
    ('extVirtualLinks|0|extCps', h.DELETE,
     'extVirtualLinks[0].extCps: required'),
    ('extVirtualLinks|0|extCps', 'masterNode_CP1',
     'extVirtualLinks[0].extCps: expected a list, got a string'),
    ('extVirtualLinks|1|extCps', [],
     'extVirtualLinks[1].extCps: needs at least 1 item(s)'),
    ('extVirtualLinks|0|extCps|0', None,
     'extVirtualLinks[0].extCps[0]: expected an object, got null'),
    ('extVirtualLinks|0|extCps|0|cpdId', h.DELETE,
     'extVirtualLinks[0].extCps[0].cpdId: required'),
    ('extVirtualLinks|0|extCps|0|cpdId', ['masterNode_CP1'],
     'extVirtualLinks[0].extCps[0].cpdId: expected a string, got a list'),
    ('extVirtualLinks|0|extCps|0|cpdId', 'master CP',
     "extVirtualLinks[0].extCps[0].cpdId: a resource name has no "
     "whitespace: 'master CP'"),
    ('extVirtualLinks|0|extCps|0|cpd_id', 'workerNode_CP2',
     "extVirtualLinks[0].extCps[0].cpdId: given twice, as 'cpd_id' and "
     "'cpdId', with different values"),
    ('vimConnectionInfo', 'vim', 'vimConnectionInfo: expected a list, got '
                                 'a string'),
    ('vimConnectionInfo|0', [], 'vimConnectionInfo[0]: expected an object, '
                                'got a list'),
    ('vimConnectionInfo|0|vimType', h.DELETE,
     'vimConnectionInfo[0].vimType: required'),
    ('vimConnectionInfo|0|id', '', 'vimConnectionInfo[0].id: empty'),
], ids=['links-object', 'link-string', 'no-id', 'resource-number',
        'resource-null', 'no-cps', 'cps-string', 'cps-empty', 'cp-null',
        'no-cpd', 'cpd-list', 'cpd-space', 'cpd-twice', 'vim-string',
        'vim-item-list', 'no-vim-type', 'vim-id-empty'])
def test_request_shape_problems(path, value, expected):
    assert lines(changed(sample('complex'), path, value)) == [expected]


def test_absent_links_and_vim_info_are_fine(built_package):
    body = sample('complex')
    del body['extVirtualLinks'], body['vimConnectionInfo']
    assert params.load_request(body, package_dir=built_package).warnings == ()
