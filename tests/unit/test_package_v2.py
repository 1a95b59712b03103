"""``k8s-mgmt package build --api v2``: the package Tacker's v2 API runs.

One v2 package is assembled per test session (about half a second); the
tests read its file map and never change it.
"""

import io
import posixpath
import re
import zipfile

import pytest
import yaml

from k8s_mgmt import package
from k8s_mgmt import package_v2
from k8s_mgmt import shipped
from k8s_mgmt.cli import package as package_cli
from k8s_mgmt.params import request_body

NEW_ID = '5b9e8f1e-0a4c-4b7d-9a57-3c1f2e8d7a10'
DF = re.compile(r'^Definitions/sample_kubernetes_df_(\w+)\.yaml$')
TOP_HOT = re.compile(r'^BaseHOT/[^/]+/[^/]+\.yaml$')
V1_PARAM = re.compile(r'\[\s*nfv\s*,\s*VDU\s*,\s*[^,\]\s]+\s*,\s*'
                      r'(flavor|image)\s*\]')
HOOKS = ('instantiate_start', 'instantiate_end', 'scale_start', 'scale_end',
         'heal_start', 'heal_end', 'terminate_start', 'terminate_end',
         'instantiate_rollback_start', 'instantiate_rollback_end',
         'scale_rollback_start', 'scale_rollback_end',
         'modify_information_start', 'modify_information_end',
         'change_current_package_start', 'change_current_package_end',
         'change_current_package_rollback_start',
         'change_current_package_rollback_end')


@pytest.fixture(scope='module')
def v1_files():
    return package.assemble()


@pytest.fixture(scope='module')
def v2_files():
    return package.assemble(api='v2')


def df_files(files):
    return {DF.match(name).group(1): data for name, data in files.items()
            if DF.match(name)}


def lcm_node(document):
    [node] = [node for node in
              document['topology_template']['node_templates'].values()
              if 'interfaces' in node]
    return node


def test_every_flavour_runs_every_hook_with_the_v2_script(v2_files):
    flavours = df_files(v2_files)
    assert sorted(flavours) == sorted(shipped.sample_flavours())
    for flavour, data in flavours.items():
        node = lcm_node(yaml.safe_load(data))
        hooks = node['interfaces']['Vnflcm']
        assert list(hooks) == list(HOOKS) == list(package_v2.HOOKS)
        assert {hook['implementation'] for hook in hooks.values()} == {
            'k8s-mgmt-v2'}, flavour
        assert node['artifacts'] == {'k8s-mgmt-v2': {
            'description': node['artifacts']['k8s-mgmt-v2']['description'],
            'type': 'tosca.artifacts.Implementation.Python',
            'file': '../Scripts/k8s_mgmt_v2.py'}}
        assert b'k8s_mgmt_driver' not in data
        assert b'kubespray_driver' not in data


def test_the_script_is_where_definitions_names_it_and_is_the_shim(v2_files):
    where = posixpath.normpath(posixpath.join('Definitions',
                                              '../Scripts/k8s_mgmt_v2.py'))
    with open(package_v2.shim_path(), 'rb') as handle:
        assert v2_files[where] == handle.read()
    assert package_v2.shim_path().endswith('k8s_mgmt/v2/shim.py')


def test_no_v1_driver_and_no_user_data_but_the_node_scripts(v2_files,
                                                            v1_files):
    assert not set(package.DRIVER_ARTIFACTS) & set(v2_files)
    assert not [name for name in v2_files if name.startswith('UserData/')]
    for name in shipped.SCRIPTS:
        assert v2_files['Scripts/' + name] == v1_files['Scripts/' + name]
    untouched = [name for name in v1_files
                 if '/nested/' in name or name.startswith('Files/')]
    assert untouched
    for name in untouched:
        assert v2_files[name] == v1_files[name], name
    # Scripts/README.md says what this package's Scripts/ holds.
    readme = v2_files['Scripts/README.md'].decode()
    assert 'k8s_mgmt_v2.py' in readme and 'k8s_mgmt_driver.py' not in readme


def test_every_tosca_meta_hash_matches(v2_files):
    entries = package.parse_tosca_meta(v2_files[package.TOSCA_META])
    assert set(entries) == set(v2_files) - {package.TOSCA_META}
    for name, (algorithm, digest) in entries.items():
        assert (algorithm, digest) == ('SHA-256',
                                       package.sha256_hex(v2_files[name]))
    assert v2_files[package.TOSCA_META].startswith(
        b'TOSCA-Meta-File-Version: 1.0\n')


def test_top_templates_ask_for_what_default_user_data_fills(v2_files,
                                                            v1_files):
    tops = [name for name in v2_files if TOP_HOT.match(name)]
    assert len(tops) == len(shipped.sample_flavours())
    for name in tops:
        text = v2_files[name].decode()
        assert not V1_PARAM.search(text), name
        assert not list(package_v2.v1_vdu_params(yaml.safe_load(text)))
        assert text.count('computeFlavourId') == text.count('vcImageId') \
            == v1_files[name].decode().count(', flavor ]') > 0
    # Only those two words changed.
    changed = v1_files[tops[0]].decode().replace(
        ', flavor ]', ', computeFlavourId ]').replace(
        ', image ]', ', vcImageId ]')
    assert changed == v2_files[tops[0]].decode()


@pytest.mark.parametrize('line', [
    'flavor: { get_param: [ nfv, VDU, masterNode, flavor ] }',
    'flavor: { get_param: [nfv, VDU, masterNode, flavor] }',
    'flavor: {get_param: [nfv,VDU,masterNode,flavor]}',
    'flavor: { get_param: [ "nfv", "VDU", "masterNode", "flavor" ] }',
    "flavor: { get_param: ['nfv', 'VDU', 'masterNode', 'flavor'] }",
])
def test_whitespace_and_quoting_variants_are_replaced(line):
    data = ('resources:\n  s:\n    properties:\n      %s\n' % line).encode()
    out = package_v2.v2_top_template('BaseHOT/x/top.yaml', data).decode()
    assert 'computeFlavourId' in out and 'flavor ]' not in out
    assert yaml.safe_load(out)['resources']['s']['properties']['flavor'][
        'get_param'] == ['nfv', 'VDU', 'masterNode', 'computeFlavourId']


def test_a_form_it_cannot_rewrite_is_refused():
    data = (b'resources:\n  s:\n    properties:\n      flavor:\n'
            b'        get_param:\n        - nfv\n        - VDU\n'
            b'        - masterNode\n        - flavor\n')
    with pytest.raises(package_v2.V2PackageError,
                       match='BaseHOT/x/top.yaml still asks for '
                             'nfv.VDU.masterNode.flavor'):
        package_v2.v2_top_template('BaseHOT/x/top.yaml', data)


def test_a_flavour_without_the_v1_hooks_is_refused(v1_files):
    files = dict(v1_files)
    name = 'Definitions/sample_kubernetes_df_simple.yaml'
    document = yaml.safe_load(files[name])
    del lcm_node(document)['interfaces']
    files[name] = yaml.safe_dump(document).encode()
    with pytest.raises(package_v2.V2PackageError, match=name):
        package_v2.transform(files)


def test_the_node_type_declares_every_hook(v2_files):
    types = yaml.safe_load(v2_files['Definitions/sample_kubernetes_types.'
                                    'yaml'])
    [(kind, node_type)] = types['node_types'].items()
    assert node_type['interfaces']['Vnflcm'] == {
        'type': package_v2.INTERFACE_TYPE}
    declared = types['interface_types'][package_v2.INTERFACE_TYPE]
    assert declared.pop('derived_from') == 'tosca.interfaces.nfv.Vnflcm'
    assert list(declared) == list(HOOKS)


def test_each_df_file_loads_and_uses_only_v2_hook_names(v2_files):
    for flavour, data in df_files(v2_files).items():
        document = yaml.safe_load(data)
        for node in document['topology_template']['node_templates'].values():
            for operation in node.get('interfaces', {}).get('Vnflcm', {}):
                assert operation in HOOKS, (flavour, operation)


def test_the_build_is_reproducible_and_takes_the_vnfd_id(tmp_path):
    one = package.build(output=str(tmp_path / 'a.zip'), vnfd_id=NEW_ID,
                        api='v2')
    two = package.build(output=str(tmp_path / 'b.zip'), vnfd_id=NEW_ID,
                        api='v2')
    assert one == two
    assert (tmp_path / 'a.zip').read_bytes() == (
        tmp_path / 'b.zip').read_bytes()
    names = zipfile.ZipFile(io.BytesIO((tmp_path / 'a.zip').read_bytes()))
    assert sorted(names.namelist()) == sorted(one)
    definitions = b''.join(data for name, data in one.items()
                           if name.startswith('Definitions/'))
    assert package.SAMPLE_VNFD_ID.encode() not in definitions
    assert NEW_ID.encode() in definitions


def test_an_unknown_api_is_refused():
    with pytest.raises(package.PackageError, match='--api must be one of '
                                                   'v1, v2'):
        package.assemble(api='v3')


def test_the_v1_artifacts_it_drops_are_the_drivers():
    assert set(package_v2.V1_ARTIFACTS) == set(package.DRIVER_ARTIFACTS)


def test_the_clis_names_agree_with_the_modules():
    # The CLI module keeps copies: importing these would load yaml/oslo.
    assert package_cli.APIS == package.APIS
    assert package_cli.V2_SCRIPT == package_v2.V2_SCRIPT
    assert package_cli.USER_DATA_KEYS == (request_body.USER_DATA,
                                          request_body.USER_DATA_CLASS)


@pytest.fixture(scope='module')
def v2_dir(v2_files, tmp_path_factory):
    root = tmp_path_factory.mktemp('v2') / 'pkg'
    package.write_dir(v2_files, str(root))
    return root


@pytest.mark.parametrize('flavour', sorted(shipped.sample_flavours()))
def test_tosca_parser_accepts_each_v2_flavour(flavour, v2_dir):
    # What Tacker runs on onboarding: every hook must be an operation the
    # node type's interface declares.
    tosca = pytest.importorskip('toscaparser.tosca_template')
    root = v2_dir
    inputs = dict(descriptor_id=package.SAMPLE_VNFD_ID,
                  descriptor_version='1.0', provider='k8s-mgmt',
                  product_name='Sample Kubernetes cluster',
                  software_version='1.0', vnfm_info=['Tacker'],
                  flavour_id=flavour, flavour_description='x')
    parsed = tosca.ToscaTemplate(
        str(root / 'Definitions' / ('sample_kubernetes_df_%s.yaml'
                                    % flavour)), parsed_params=inputs)
    assert ('registry' if flavour == 'registry' else 'masterNode') in {
        node.name for node in parsed.nodetemplates}


def test_the_build_summary_names_the_v2_script(tmp_path, capsys):
    from k8s_mgmt.cli import main as cli_main
    out = tmp_path / 'pkg'
    assert cli_main.main(['package', 'build', '--api', 'v2', '--output-dir',
                          str(out)]) == 0
    digest = package.sha256_hex((out / 'Scripts' / 'k8s_mgmt_v2.py')
                                .read_bytes())
    count = sum(1 for path in out.rglob('*') if path.is_file())
    assert capsys.readouterr().out == '%s: %d files, %s sha256 %s\n' % (
        out, count, package_v2.V2_SCRIPT, digest)
    assert not (out / 'UserData').exists()
