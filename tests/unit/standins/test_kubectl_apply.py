"""kubectl stand-in's apply and resource names, against the API server
stand-in's real request handling in this process (an in-memory store):
kinds are mapped through discovery, an unknown kind is kubectl's error
without stopping the rest, re-applying sends nothing when nothing
changed, and the three-way merge drops what the file no longer sets.
The CNI presets' real manifests go in whole (skipped, saying which is
missing, where their clones are not on this machine)."""

import copy
import json

import pytest
import yaml

from k8s_mgmt import cni_presets
from k8s_mgmt import shipped
from k8s_mgmt_lab.kube import kubectl
from k8s_mgmt_lab.machines import cni_mirror
from tests.helpers import memory_store

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"""
WIDGET = """\
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3, colour: red}
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: c1, namespace: kube-system}
data: {a: "1"}
"""


@pytest.fixture
def client():
    return memory_store.InProcessClient(memory_store.memory_api())


def apply(client, tmp_path, text, namespace=None, capsys=None):
    path = tmp_path / 'manifest.yaml'
    path.write_text(text)
    errors = kubectl.apply(client, str(path), namespace)
    out = capsys.readouterr().out.splitlines() if capsys else None
    return errors, out


def test_an_unknown_kind_is_an_error_the_others_still_go_in(
        client, tmp_path, capsys):
    errors, out = apply(client, tmp_path, WIDGET + '---\n' + CONFIGMAP,
                        capsys=capsys)
    assert out == ['configmap/c1 created']
    assert errors == [
        'error: resource mapping not found for name: "w1" namespace: "" '
        'from "%s": no matches for kind "Widget" in version '
        '"example.com/v1"\nensure CRDs are installed first'
        % (tmp_path / 'manifest.yaml')]
    # Once the definition is in, the same file applies.
    assert apply(client, tmp_path, CRD, capsys=capsys) == ([], [
        'customresourcedefinition.apiextensions.k8s.io/widgets.example.com '
        'created'])
    errors, out = apply(client, tmp_path, WIDGET + '---\n' + CONFIGMAP,
                        capsys=capsys)
    assert errors == []
    assert out == ['widget.example.com/w1 created', 'configmap/c1 unchanged']
    got = client.call('GET', '/apis/example.com/v1/namespaces/default/'
                      'widgets/w1')
    assert got['spec'] == {'size': 3, 'colour': 'red'}


def test_reapplying_sends_nothing_and_a_change_is_a_three_way_merge(
        client, tmp_path, capsys):
    apply(client, tmp_path, CRD, capsys=capsys)
    apply(client, tmp_path, WIDGET, capsys=capsys)
    path = '/apis/example.com/v1/namespaces/default/widgets/w1'
    version = client.call('GET', path)['metadata']['resourceVersion']
    client.requests.clear()
    assert apply(client, tmp_path, WIDGET, capsys=capsys)[1] == [
        'widget.example.com/w1 unchanged']
    assert client.call('GET', path)['metadata']['resourceVersion'] == version
    assert [m for m, _ in client.requests if m not in ('GET', 'POST')] == []
    # A field the cluster got from elsewhere stays; one the file dropped
    # goes; a changed one changes.
    client.call('PATCH', path, {'spec': {'owner': 'someone'}},
                content_type='application/merge-patch+json')
    changed = WIDGET.replace('size: 3, colour: red', 'size: 4')
    assert apply(client, tmp_path, changed, capsys=capsys)[1] == [
        'widget.example.com/w1 configured']
    got = client.call('GET', path)
    assert got['spec'] == {'size': 4, 'owner': 'someone'}
    last = json.loads(got['metadata']['annotations'][kubectl.LAST_APPLIED])
    assert last['spec'] == {'size': 4}
    assert kubectl.LAST_APPLIED not in last['metadata'].get(
        'annotations', {})


def test_the_namespace_flag_and_the_object_must_agree(
        client, tmp_path, capsys):
    errors, out = apply(client, tmp_path, CONFIGMAP, namespace='default',
                        capsys=capsys)
    assert out == [] and 'does not match the namespace "default"' in \
        errors[0]
    errors, out = apply(client, tmp_path, CONFIGMAP.replace(
        ', namespace: kube-system', ''), namespace='kube-system',
        capsys=capsys)
    assert errors == [] and out == ['configmap/c1 created']
    assert client.call('GET', '/api/v1/namespaces/kube-system/configmaps/'
                       'c1')['data'] == {'a': '1'}


def test_a_server_refusal_names_the_file_and_the_reason(
        client, tmp_path, capsys):
    apply(client, tmp_path, CRD, capsys=capsys)
    errors, _ = apply(client, tmp_path, WIDGET.replace(
        'name: w1', 'name: W_1'), capsys=capsys)
    assert errors[0].startswith('Error from server (Invalid): error when '
                                'applying "%s": Widget.example.com "W_1" '
                                'is invalid' % (tmp_path / 'manifest.yaml'))


def test_resource_words_map_through_discovery(client, tmp_path, capsys):
    mapper = kubectl.Mapper(client)
    assert mapper.for_word('ds').path('kube-system') == \
        '/apis/apps/v1/namespaces/kube-system/daemonsets'
    assert mapper.for_word('crd').path(None, 'x') == \
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x'
    assert mapper.for_word('widgets') is None
    apply(client, tmp_path, CRD, capsys=capsys)
    for word in ('widgets', 'widget', 'wd', 'Widget', 'widgets.example.com'):
        found = kubectl.Mapper(client).for_word(word)
        assert found.path('default', 'w1') == \
            '/apis/example.com/v1/namespaces/default/widgets/w1', word
    assert kubectl.Mapping('example.com', 'v1', 'widgets', 'Widget',
                           True).shown('w1') == 'widget.example.com/w1'


def test_three_way_patch():
    original = {'a': 1, 'b': {'c': 1, 'd': 2}, 'gone': 1}
    modified = {'a': 1, 'b': {'c': 2}}
    current = {'a': 1, 'b': {'c': 1, 'd': 2, 'server': 3}, 'gone': 1,
               'other': 4}
    assert kubectl.three_way(original, modified, current) == {
        'b': {'c': 2, 'd': None}, 'gone': None}
    assert kubectl.three_way(modified, modified, dict(
        modified, extra=1)) == {}


MISSING = cni_mirror.missing()


@pytest.mark.skipif(MISSING is not None, reason=str(MISSING))
def test_the_presets_real_manifests_and_the_sample_nad_go_in(
        client, tmp_path, capsys):
    for manifest in cni_mirror.manifests():
        path = tmp_path / manifest.name
        path.write_bytes(cni_mirror.read(manifest))
        assert kubectl.apply(client, str(path), None) == [], manifest.name
        docs = [d for d in yaml.safe_load_all(path.read_bytes()) if d]
        assert len(capsys.readouterr().out.splitlines()) == len(docs)
        for doc in docs:
            mapping = kubectl.Mapper(client).for_kind(doc['apiVersion'],
                                                      doc['kind'])
            meta = doc['metadata']
            stored = client.call('GET', mapping.path(
                meta.get('namespace'), meta['name']))
            wanted = copy.deepcopy(doc)
            if doc['kind'] == 'CustomResourceDefinition':
                # What the real API server defaults in a definition too.
                spec = wanted['spec']
                spec.setdefault('conversion', {'strategy': 'None'})
                spec['names'].setdefault('singular',
                                         spec['names']['kind'].lower())
                spec['names'].setdefault('listKind',
                                         spec['names']['kind'] + 'List')
            for key in doc:
                if key not in ('metadata', 'status'):
                    assert stored[key] == wanted[key], (manifest.name, key)
        # Again: no object changes. (Calico's network-policy definitions
        # carry a status and a null creationTimestamp, which differ from
        # the server's: kubectl sends those, "configured", and the server
        # writes nothing, as a real one.)
        before = client.api.store.list('/registry/')[0]
        assert kubectl.apply(client, str(path), None) == []
        said = capsys.readouterr().out.splitlines()
        assert client.api.store.list('/registry/')[0] == before
        assert [line for line in said if not line.endswith(' unchanged')] \
            == ['customresourcedefinition.apiextensions.k8s.io/%s '
                'configured' % doc['metadata']['name'] for doc in docs
                if 'status' in doc]
    nad = shipped.sample_package() / 'Files' / 'kubernetes' / \
        'multus-macvlan-nad.yaml'
    assert kubectl.apply(client, str(nad), None) == []
    assert capsys.readouterr().out == \
        'networkattachmentdefinition.k8s.cni.cncf.io/data-net created\n'
    assert client.call('GET', '/apis/k8s.cni.cncf.io/v1/namespaces/default/'
                       'network-attachment-definitions/data-net')['spec'] \
        == yaml.safe_load(nad.read_text())['spec']
    # Calico's custom resources are served, empty.
    pools = client.call('GET', '/apis/crd.projectcalico.org/v1/ippools')
    assert pools['kind'] == 'IPPoolList' and pools['items'] == []
    assert cni_presets.MULTUS in cni_mirror.manifests()
