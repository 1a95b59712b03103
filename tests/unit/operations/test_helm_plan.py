"""Helm on every master: the request's two forms (ours, pinned; Tacker's
script), refused before any VM when wrong, and installed at instantiate
and on a healed master, walked without connecting."""

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params as params_mod
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads

import op_helpers

ROOT = 'k8s_cluster_installation_param'
SHA = 'ab' * 32
URL = 'https://get.helm.sh/helm-v3.16.2-linux-amd64.tar.gz'


def with_helm(flavour='complex', **install):
    body = op_helpers.sample_body(flavour)
    body['additionalParams'][ROOT].update(install)
    return body


def problems(body):
    try:
        params_mod.load_request(body)
    except exceptions.ValidationError as err:
        return ['%s: %s' % p for p in err.problems]
    return []


def test_a_pinned_helm_by_url_and_its_sha256_is_taken():
    found = params_mod.load_request(with_helm(
        helm={'version': 'v3.16.2', 'url': URL, 'sha256': SHA})).helm
    assert (found.version, found.url, found.sha256) == ('3.16.2', URL, SHA)


@pytest.mark.parametrize('helm, words', [
    ({'url': URL, 'sha256': SHA}, '.helm.version: required'),
    ({'version': '3.16', 'url': URL, 'sha256': SHA},
     '.helm.version: not a Helm 3 release'),
    ({'version': '2.17.0', 'url': URL, 'sha256': SHA},
     '.helm.version: not a Helm 3 release'),
    ({'version': '3.16.2'}, '.helm: needs its release archive'),
    ({'version': '3.16.2', 'url': URL}, '.helm.sha256: required with url'),
    ({'version': '3.16.2', 'url': URL, 'sha256': SHA.upper()},
     '.helm.sha256: not a SHA-256'),
    ({'version': '3.16.2', 'url': 'ftp://h/helm.tgz', 'sha256': SHA},
     '.helm.url: must start with http'),
])
def test_a_bad_helm_is_one_problem_naming_its_field(helm, words):
    found = problems(with_helm(helm=helm))
    assert len(found) == 1 and words in found[0], found


def test_not_both_forms():
    found = problems(with_helm(
        helm={'version': '3.16.2', 'url': URL, 'sha256': SHA},
        helm_installation_script_path='Scripts/install_helm.sh'))
    assert found == [ROOT + '.helm: give Helm by helm or by '
                     'helm_installation_script_path, not both']


def _params(**install):
    return params_mod.load_request(with_helm(**install))


def test_instantiate_installs_helm_on_every_master_after_the_labels():
    params = _params(helm={'version': '3.16.2', 'url': URL, 'sha256': SHA})
    topo = op_helpers.topology(3, 1, vip='10.0.0.100')
    walked = op_helpers.plan(params, topo)
    titles = op_helpers.titles(walked)
    title = 'Install Helm on master-1, master-2, master-3'
    assert titles.index(title) == titles.index('Label workers') + 1
    found = op_helpers.calls(op_helpers.phase(walked, title))
    assert sorted(c.node for c in found) == ['master-1', 'master-2',
                                             'master-3']
    assert found[0].argv == ('helm', '-L', '3.16.2', '-m', URL, '-M', SHA)


def test_the_archive_from_the_package_goes_to_the_masters_only():
    params = _params(helm={'version': '3.16.2',
                           'archive_path': 'Files/helm/helm.tar.gz'})
    master = op_helpers.node('master', 1)
    worker = op_helpers.node('worker', 1)
    assert uploads.HELM_ARCHIVE in uploads.names_for(master, params)
    assert uploads.HELM_ARCHIVE not in uploads.names_for(worker, params)
    assert uploads.package_path(params, uploads.HELM_ARCHIVE) == \
        'Files/helm/helm.tar.gz'
    call = scripts.helm_call(master, params)
    assert call.argv == ('helm', '-L', '3.16.2', '-m',
                         '.k8s-mgmt/' + uploads.HELM_ARCHIVE)


def test_tackers_script_runs_as_it_is_on_the_masters():
    params = _params(helm_installation_script_path='Scripts/install_k8s_'
                                                   'cluster.sh')
    master = op_helpers.node('master', 1)
    assert uploads.HELM_SCRIPT in uploads.names_for(master, params)
    call = scripts.helm_call(master, params)
    assert (call.script, call.argv, call.mode) == (
        uploads.HELM_SCRIPT, (), 'helm-script')


def test_a_healed_master_gets_helm_and_no_request_none():
    params = _params(helm={'version': '3.16.2', 'url': URL, 'sha256': SHA})
    topo = op_helpers.topology(3, 1, vip='10.0.0.100')
    target = topo.masters[1]
    names = {n.name for n in topo.all_nodes()}
    walked = op_helpers.plan(params, topo, 'heal_vnfc', 'heal_end',
                             ready=names - {target.name},
                             request={'vnfc_instance_id': [target.vnfc_id]})
    assert 'Install Helm on master-2' in op_helpers.titles(walked)
    plain = op_helpers.plan(op_helpers.sample_params('complex'), topo)
    assert not [t for t in op_helpers.titles(plain) if 'Helm' in t]
