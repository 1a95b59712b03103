"""Requests for Tacker's v2 API: ``load_request(..., api='v2')`` and
``k8s-mgmt validate --api``. The v2 bodies are the ones ``k8s-mgmt package
request --api v2`` prints."""

import json

import pytest

from k8s_mgmt import params
from k8s_mgmt import shipped
from k8s_mgmt.cli import main as cli_main
from k8s_mgmt.cli import package as package_cli
from k8s_mgmt.cli import validate as validate_cli
from k8s_mgmt.params import request_body

import params_helpers as h

FLAVOURS = shipped.sample_flavours()
VIM = 'vimConnectionInfo'
CP0 = 'extVirtualLinks|0|extCps|0|cpConfig'


def v2(flavour='complex'):
    return package_cli.filled_request(flavour, vim_id='my-vim', api='v2')


def v2_lines(body, **kwargs):
    return h.lines(body, api='v2', **kwargs)


def run_cli(tmp_path, capsys, body, *args):
    """``k8s-mgmt validate`` in this process: (exit, stdout, stderr)."""
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(body))
    code = cli_main.main(['validate', str(path)] + list(args))
    out, err = capsys.readouterr()
    return (code, out.replace(str(path), 'request.json'),
            err.replace(str(path), 'request.json'))


def test_the_apis_agree():
    assert validate_cli.APIS == request_body.APIS


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_auto_accepts_each_v2_request_and_each_v1_sample(flavour, tmp_path,
                                                         capsys):
    code, out, err = run_cli(tmp_path, capsys, v2(flavour))
    assert (code, err) == (0, '')
    assert out.startswith('request.json: valid for instantiate (Tacker API '
                          'v2), flavour %s, ' % flavour)
    code, out, err = run_cli(tmp_path, capsys, h.sample(flavour))
    assert (code, err) == (0, '')
    assert out.startswith('request.json: valid for instantiate (Tacker API '
                          'v1), flavour %s, ' % flavour)


def test_the_api_is_told_by_vim_connection_info():
    assert validate_cli.api_of(v2(), 'auto') == 'v2'
    assert validate_cli.api_of(h.sample(), 'auto') == 'v1'
    without = h.changed(v2(), VIM, h.DELETE)
    assert validate_cli.api_of(without, 'auto') == 'v1'
    assert validate_cli.api_of(h.sample(), 'v2') == 'v2'
    assert validate_cli.api_of([], 'auto') == 'v1'
    for body in (v2(), h.sample(), without, []):
        assert request_body.detect_api(body) == validate_cli.api_of(
            body, 'auto')


def test_two_vim_entries_are_refused(tmp_path, capsys):
    body = v2()
    body[VIM]['vim2'] = dict(body[VIM]['vim1'], vimId='other')
    assert v2_lines(body) == [
        'vimConnectionInfo: v2 supports exactly one VIM connection: Tacker '
        'cannot tell which of several to use (got 2)']
    code, out, err = run_cli(tmp_path, capsys, body)
    assert code == validate_cli.EXIT_INVALID == 2
    assert out.startswith('vimConnectionInfo: v2 supports exactly one VIM')
    assert err == 'request.json: 1 problem(s) for Tacker API v2\n'


def test_a_list_cp_config_is_refused_under_v2(tmp_path, capsys):
    body = h.changed(v2(), CP0, [{'cpProtocolData': [
        {'layerProtocol': 'IP_OVER_ETHERNET'}]}])
    expected = [
        'extVirtualLinks[0].extCps[0].cpConfig: expected an object keyed by '
        'a name (Tacker API v2\'s map of VnfExtCpConfig, e.g. {"<cpdId>_1": '
        '{"cpProtocolData": [...]}}), got a list']
    assert v2_lines(body) == expected
    code, out, _ = run_cli(tmp_path, capsys, body)
    assert (code, out.splitlines()) == (2, expected)


def test_user_data_keys_are_refused_under_v2(tmp_path, capsys):
    expected = [
        'additionalParams.lcm-operation-user-data: remove it and '
        'lcm-operation-user-data-class: the v2 package uses Tacker\'s '
        'DefaultUserData to build the stack; the v1 UserData class cannot '
        'run under v2']
    for key in package_cli.USER_DATA_KEYS:
        body = h.changed(v2(), 'additionalParams|' + key, 'x')
        assert v2_lines(body) == expected
    body = h.changed(v2(), 'additionalParams|lcm-operation-user-data',
                     './UserData/k8s_cluster_user_data.py')
    code, out, _ = run_cli(tmp_path, capsys, body)
    assert (code, out.splitlines()) == (2, expected)


def test_a_v1_sample_checked_as_v2_names_each_difference():
    assert [line.split(':')[0] for line in v2_lines(h.sample('simple'))] == [
        'vimConnectionInfo',
        'extVirtualLinks[0].extCps[0].cpConfig',
        'extVirtualLinks[1].extCps[0].cpConfig',
        'additionalParams.lcm-operation-user-data']


def test_a_v2_request_checked_as_v1_is_refused(tmp_path, capsys):
    code, out, err = run_cli(tmp_path, capsys, v2(), '--api', 'v1')
    assert code == 2
    assert out == 'vimConnectionInfo: expected a list, got an object\n'
    assert err.splitlines()[-1] == 'request.json: 1 problem(s)'


@pytest.mark.parametrize('path, value, expected', [
    (VIM, [], 'vimConnectionInfo: expected an object keyed by a name '
              '(Tacker API v2), got a list'),
    (VIM, {}, 'vimConnectionInfo: v2 supports exactly one VIM connection: '
              'Tacker cannot tell which of several to use (got 0)'),
    (VIM + '|vim1', 'x', 'vimConnectionInfo.vim1: expected an object, got '
                         'a string'),
    (VIM + '|vim1|vimType', h.DELETE,
     'vimConnectionInfo.vim1.vimType: required'),
    (VIM + '|vim1|vimId', h.DELETE,
     'vimConnectionInfo.vim1: needs vimId, or accessInfo and '
     'interfaceInfo'),
    (VIM + '|vim1|vimId', 5,
     'vimConnectionInfo.vim1.vimId: expected a string, got a number'),
    (VIM + '|vim1', {'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
                     'accessInfo': {'username': 'u'}},
     'vimConnectionInfo.vim1.interfaceInfo: required'),
    (CP0, h.DELETE, 'extVirtualLinks[0].extCps[0].cpConfig: required'),
    (CP0, {}, 'extVirtualLinks[0].extCps[0].cpConfig: needs at least 1 '
              'entry'),
    (CP0 + '|masterNode_CP1_1', [],
     'extVirtualLinks[0].extCps[0].cpConfig.masterNode_CP1_1: expected an '
     'object, got a list'),
], ids=['vim-list', 'vim-empty', 'vim-string', 'no-type', 'no-id',
        'id-number', 'access-only', 'no-cp-config', 'cp-config-empty',
        'cp-config-item'])
def test_v2_shape_problems(path, value, expected):
    assert v2_lines(h.changed(v2(), path, value)) == [expected]


def test_inline_access_info_is_fine():
    body = h.changed(v2(), VIM + '|vim1', {
        'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
        'accessInfo': {'username': 'u', 'password': 'p', 'project': 'x'},
        'interfaceInfo': {'endpoint': 'http://keystone/v3'}})
    assert params.load_request(body, api='v2').warnings == ()


def test_v2_is_not_warned_about_absent_user_data():
    # v1 warns that Tacker would then use heat-translator; v2 never does.
    assert params.load_request(v2('simple'), api='v2').warnings == ()
    body = h.sample('simple')
    for key in package_cli.USER_DATA_KEYS:
        del body['additionalParams'][key]
    assert [path for path, _ in params.load_request(body).warnings] == [h.UD]


def test_an_unknown_api_is_a_programming_error():
    with pytest.raises(ValueError, match='api must be one of v1, v2'):
        params.load_request(v2(), api='v3')


# -- with the package --------------------------------------------------


@pytest.fixture(scope='module')
def v2_package(tmp_path_factory):
    from k8s_mgmt import package
    path = str(tmp_path_factory.mktemp('built_v2') / 'vnf_package')
    package.build(output_dir=path, api='v2')
    return path


@pytest.mark.parametrize('flavour', ['complex', 'storage', 'kubespray'])
def test_a_v2_request_fits_the_v2_package(flavour, v2_package):
    # No UserData is demanded; the CPs and volumes are still checked.
    assert params.load_request(v2(flavour), package_dir=v2_package,
                               api='v2').warnings == ()


def test_the_v2_package_still_checks_what_v2_uses(v2_package):
    body = h.changed(v2('simple'), 'extVirtualLinks|1|extCps|0|cpdId',
                     'workerNode_CP9')
    assert v2_lines(body, package_dir=v2_package) == [
        "extVirtualLinks[1].extCps[0].cpdId: workerNode_CP9 is not a CP of "
        "flavour simple's VNFD (its CPs: masterNode_CP1, workerNode_CP2)"]


def test_a_v2_request_with_a_v1_package_is_refused(built_package):
    assert v2_lines(v2('simple'), package_dir=built_package) == [
        'flavourId: the VNF package has no Scripts/k8s_mgmt_v2.py: it is not '
        'built for Tacker API v2 (build it with "k8s-mgmt package build '
        '--api v2")']


def test_the_cli_end_to_end(tmp_path, v2_package):
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(v2('storage')))
    done = h.validate_cli(str(path), '--package-dir', v2_package)
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'valid for instantiate (Tacker API v2), flavour storage' in (
        done.stdout)
    body = v2('storage')
    body[VIM]['vim2'] = body[VIM]['vim1']
    path.write_text(json.dumps(body))
    done = h.validate_cli(str(path), '--api', 'auto')
    assert done.returncode == 2
    assert done.stdout.startswith('vimConnectionInfo: ')
    assert done.stderr == '%s: 1 problem(s) for Tacker API v2\n' % path


def test_an_ip_over_ethernet_port_without_its_address_data_is_refused():
    # Tacker's v2 infra driver reads ipOverEthernet of every such entry:
    # without it the instantiate fails after the grant ("Cannot load
    # 'ipOverEthernet'"); the driver refuses it first, naming the field.
    body = v2()
    config = body['extVirtualLinks'][0]['extCps'][0]['cpConfig']
    entry = list(config)[0]
    del config[entry]['cpProtocolData'][0]['ipOverEthernet']
    found = v2_lines(body)
    assert any(line.startswith(
        'extVirtualLinks[0].extCps[0].cpConfig.%s.cpProtocolData[0]'
        '.ipOverEthernet: required by Tacker API v2' % entry)
        for line in found), found


# Map keys that would add, rewrite or hide a line where a path is shown.
FORGING_KEYS = ['vim1\nvimConnectionInfo.vim2: forged', 'a\rb', 'x\x1b[2Jy',
                'nel\x85x', 'ls\u2028x', 'bidi\u202ex', 'tab\tx', 'nul\x00x',
                'v\x0bf\x0cx']


@pytest.mark.parametrize('key', FORGING_KEYS)
def test_map_keys_in_error_paths_are_escaped(key, tmp_path, capsys):
    body = h.changed(v2(), VIM, {key: 'x'})
    body = h.changed(body, CP0, {key: [], key + '_2': {'cpProtocolData': [
        {'layerProtocol': 'IP_OVER_ETHERNET'}]}})
    cp_config = 'extVirtualLinks[0].extCps[0].cpConfig.'
    found = v2_lines(body)
    assert found == [
        'vimConnectionInfo.[%r]: expected an object, got a string' % key,
        cp_config + '[%r]: expected an object, got a list' % key,
        cp_config + '[%r].cpProtocolData[0].ipOverEthernet: required by '
        'Tacker API v2 for IP_OVER_ETHERNET (e.g. {"ipAddresses": '
        '[{"type": "IPV4", "numDynamicAddresses": 1}]}: one address from '
        'the network\'s subnet)' % (key + '_2')]
    assert all(line.isprintable() for line in found)
    code, out, _ = run_cli(tmp_path, capsys, body)
    assert code == 2 and out.splitlines() == found
