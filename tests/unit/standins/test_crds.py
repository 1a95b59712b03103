"""The API server stand-in serves what a real one serves and nothing else:
404 for a resource no one defined, CustomResourceDefinitions checked and
established, their objects pruned and checked against the schema, in
discovery, gone with their definition; what it cannot check is refused,
not stored. Over an in-memory store (tests/helpers/memory_store.py): the
real request handling, no etcd."""

import copy
import json

import pytest

from k8s_mgmt_lab.kube import crds
from tests.helpers import memory_store

CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'
WIDGETS = '/apis/example.com/v1/namespaces/default/widgets'


def widget_crd(**overrides):
    schema = {'type': 'object', 'properties': {
        'apiVersion': {'type': 'string'}, 'kind': {'type': 'string'},
        'metadata': {'type': 'object'},
        'spec': {'type': 'object', 'required': ['size'], 'properties': {
            'size': {'type': 'integer', 'minimum': 1, 'maximum': 10},
            'colour': {'type': 'string', 'enum': ['red', 'blue'],
                       'default': 'red'},
            'title': {'type': 'string', 'pattern': '^[a-z]+$',
                      'maxLength': 8},
            'tags': {'type': 'array', 'x-kubernetes-list-type': 'set',
                     'items': {'type': 'string'}},
            'port': {'x-kubernetes-int-or-string': True},
            'free': {'type': 'object',
                     'x-kubernetes-preserve-unknown-fields': True},
            'labels': {'type': 'object',
                       'additionalProperties': {'type': 'string'}},
            'note': {'type': 'string', 'nullable': True}}},
        'status': {'type': 'object', 'properties': {
            'ready': {'type': 'boolean'}}}}}
    crd = {'apiVersion': 'apiextensions.k8s.io/v1',
           'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'widgets.example.com'},
           'spec': {'group': 'example.com', 'scope': 'Namespaced',
                    'names': {'plural': 'widgets', 'kind': 'Widget',
                              'shortNames': ['wd']},
                    'versions': [{'name': 'v1', 'served': True,
                                  'storage': True,
                                  'schema': {'openAPIV3Schema': schema}}]}}
    for path, value in overrides.items():
        target = crd
        keys = path.split('.')
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) \
                else target[key]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return crd


def widget(name='w1', **spec):
    return {'apiVersion': 'example.com/v1', 'kind': 'Widget',
            'metadata': {'name': name, 'namespace': 'default'},
            'spec': dict({'size': 3}, **spec)}


@pytest.fixture
def client():
    return memory_store.InProcessClient(memory_store.memory_api())


def post(client, path, body):
    return client.request('POST', path, body)


@pytest.fixture
def defined(client):
    status, crd = post(client, CRDS, widget_crd())
    assert status == 201, crd
    return client


def test_a_resource_nobody_defined_is_404_as_on_a_real_server(client):
    for method, path in (
            ('POST', WIDGETS), ('GET', WIDGETS), ('GET', WIDGETS + '/w1'),
            # A built-in plural under another group, a cluster-scoped one
            # under a namespace, a namespaced one by name across them.
            ('GET', '/apis/apps/v1/namespaces/default/pods'),
            ('GET', '/api/v1/namespaces/default/nodes'),
            ('GET', '/api/v1/pods/p1'),
            ('GET', '/apis/example.com/v1'), ('GET', '/apis/example.com')):
        status, answer = client.request(method, path, widget()
                                        if method == 'POST' else None)
        assert status == 404, (method, path, answer)
        assert answer['message'] == \
            'the server could not find the requested resource'
    # Listed across namespaces, never created there.
    assert client.request('GET', '/api/v1/pods')[0] == 200
    assert client.request('POST', '/api/v1/pods', {
        'metadata': {'name': 'p'}})[0] == 405


def test_a_definition_is_established_and_its_objects_served(defined):
    crd = defined.call('GET', CRDS + '/widgets.example.com')
    assert crd['status']['acceptedNames']['singular'] == 'widget'
    assert crd['status']['acceptedNames']['listKind'] == 'WidgetList'
    assert crd['status']['storedVersions'] == ['v1']
    assert {c['type']: c['status'] for c in crd['status']['conditions']} \
        == {'NamesAccepted': 'True', 'Established': 'True'}

    status, made = post(defined, WIDGETS, widget())
    assert status == 201, made
    assert made['kind'] == 'Widget' and made['apiVersion'] == \
        'example.com/v1'
    assert made['metadata']['uid'] and made['metadata']['resourceVersion']
    assert defined.call('GET', WIDGETS + '/w1')['spec']['size'] == 3
    listed = defined.call('GET', WIDGETS)
    assert listed['kind'] == 'WidgetList'
    assert [i['metadata']['name'] for i in listed['items']] == ['w1']
    # Across namespaces too; a second create is 409.
    assert len(defined.call('GET', '/apis/example.com/v1/widgets')[
        'items']) == 1
    status, answer = post(defined, WIDGETS, widget())
    assert status == 409 and answer['reason'] == 'AlreadyExists'
    # Namespaced: not under no namespace, nor in one that is not there.
    assert post(defined, '/apis/example.com/v1/widgets', widget())[0] == 405
    missing = dict(widget(), metadata={'name': 'w2', 'namespace': 'gone'})
    assert post(defined, '/apis/example.com/v1/namespaces/gone/widgets',
                missing)[0] == 404


def test_discovery_lists_the_group_and_its_resource(defined):
    groups = defined.call('GET', '/apis')['groups']
    example = [g for g in groups if g['name'] == 'example.com']
    assert example[0]['preferredVersion']['groupVersion'] == \
        'example.com/v1'
    assert defined.call('GET', '/apis/example.com')['kind'] == 'APIGroup'
    listed = defined.call('GET', '/apis/example.com/v1')
    assert listed['resources'] == [{
        'name': 'widgets', 'singularName': 'widget', 'namespaced': True,
        'kind': 'Widget', 'shortNames': ['wd'], 'storageVersionHash': '',
        'verbs': ['delete', 'deletecollection', 'get', 'list', 'patch',
                  'create', 'update', 'watch']}]
    # The built-ins are there as before.
    apps = defined.call('GET', '/apis/apps/v1')['resources']
    assert 'daemonsets' in {r['name'] for r in apps}


def test_an_object_is_pruned_defaulted_and_checked(defined):
    status, made = post(defined, WIDGETS, widget(
        unknown='x', free={'any': {'thing': 1}}, port='http',
        labels={'a': 'b'}, note=None, tags=['x', 'y']))
    assert status == 201, made
    spec = made['spec']
    assert 'unknown' not in spec                 # pruned
    assert spec['colour'] == 'red'               # defaulted
    assert spec['free'] == {'any': {'thing': 1}}
    assert spec['port'] == 'http' and spec['labels'] == {'a': 'b'}
    # A null of a nullable field is kept, as upstream keeps it.
    assert 'note' in spec and spec['note'] is None
    top = dict(widget('w3'), extra={'a': 1})
    assert 'extra' not in post(defined, WIDGETS, top)[1]


@pytest.mark.parametrize('spec, field, text', [
    ({'size': 'big'}, 'spec.size', 'in body must be of type integer'),
    ({'size': 11}, 'spec.size', 'should be less than or equal to 10'),
    ({'size': 0}, 'spec.size', 'should be greater than or equal to 1'),
    ({'size': None}, 'spec.size', 'Required value'),
    ({'colour': 'green'}, 'spec.colour', 'Unsupported value: "green"'),
    ({'title': 'Abc'}, 'spec.title', "should match '^[a-z]+$'"),
    ({'title': 'abcdefghij'}, 'spec.title', 'Too long'),
    ({'tags': ['a', 'a']}, 'spec.tags[1]', 'Duplicate value: "a"'),
    ({'port': 1.5}, 'spec.port', 'must be of type integer,string'),
    ({'labels': {'a': 1}}, 'spec.labels.a', 'must be of type string'),
])
def test_an_object_against_its_schema_is_422_naming_the_field(
        defined, spec, field, text):
    status, answer = post(defined, WIDGETS, widget(**spec))
    assert status == 422, answer
    assert answer['reason'] == 'Invalid'
    assert answer['message'].startswith(
        'Widget.example.com "w1" is invalid: ')
    causes = {c['field']: c['message'] for c in answer['details']['causes']}
    assert text in causes[field], causes
    assert defined.call('GET', WIDGETS)['items'] == []


def test_a_bad_name_kind_or_version_is_refused(defined):
    bad = widget('Not_A_Name')
    assert post(defined, WIDGETS, bad)[0] == 422
    wrong_kind = dict(widget(), kind='Gadget')
    status, answer = post(defined, WIDGETS, wrong_kind)
    assert status == 400 and 'Gadget' in answer['message']
    no_kind = {k: v for k, v in widget().items() if k != 'kind'}
    assert post(defined, WIDGETS, no_kind)[0] == 400
    # A built-in's body may leave kind out, never name another.
    assert post(defined, '/api/v1/namespaces/default/configmaps', {
        'metadata': {'name': 'c1'}})[0] == 201
    assert post(defined, '/api/v1/namespaces/default/configmaps', {
        'kind': 'Secret', 'metadata': {'name': 'c2'}})[0] == 400


def test_what_the_stand_in_cannot_check_is_refused_not_stored(client):
    crd = widget_crd()
    spec = crd['spec']['versions'][0]['schema']['openAPIV3Schema'][
        'properties']['spec']['properties']
    spec['cidr'] = {'type': 'string', 'format': 'cidr'}
    spec['rule'] = {'type': 'object', 'x-kubernetes-validations': [
        {'rule': 'self.a > 0'}], 'properties': {'a': {'type': 'integer'}}}
    assert post(client, CRDS, crd)[0] == 201
    # Not reached by the object: nothing to check.
    assert post(client, WIDGETS, widget())[0] == 201
    for name, field, keyword in (('w2', {'cidr': '10.0.0.0/8'}, 'format'),
                                 ('w3', {'rule': {'a': 1}},
                                  'x-kubernetes-validations')):
        status, answer = post(client, WIDGETS, widget(name, **field))
        assert status == 500, answer
        assert '"%s"' % keyword in answer['message']
        assert 'widgets.example.com' in answer['message']
        assert 'refused, not stored unchecked' in answer['message']
        assert client.request('GET', WIDGETS + '/' + name)[0] == 404
    # Nor a conversion webhook.
    webhook = widget_crd(**{'metadata.name': 'gadgets.example.com',
                            'spec.names': {'plural': 'gadgets',
                                           'kind': 'Gadget'}})
    webhook['spec']['conversion'] = {'strategy': 'Webhook'}
    status, answer = post(client, CRDS, webhook)
    assert status == 500 and 'Webhook conversion' in answer['message']


@pytest.mark.parametrize('overrides, field', [
    ({'metadata.name': 'widget.example.com'}, 'metadata.name'),
    ({'spec.group': 'example'}, 'spec.group'),
    ({'spec.scope': 'Global'}, 'spec.scope'),
    ({'spec.names': {'plural': 'widgets'}}, 'spec.names.kind'),
    ({'spec.versions.0.storage': False}, 'spec.versions'),
    ({'spec.versions.0.schema': {}},
     'spec.versions[0].schema.openAPIV3Schema'),
    ({'spec.versions.0.schema': {'openAPIV3Schema': {
        'type': 'object', 'properties': {'spec': {'properties': {}}}}}},
     'spec.versions[0].schema.openAPIV3Schema.properties[spec].type'),
    ({'spec.preserveUnknownFields': True}, 'spec.preserveUnknownFields'),
])
def test_a_definition_a_real_server_refuses_is_422(client, overrides,
                                                   field):
    status, answer = post(client, CRDS, widget_crd(**overrides))
    assert status == 422, answer
    assert field in {c['field'] for c in answer['details']['causes']}, \
        answer
    assert answer['message'].startswith(
        'CustomResourceDefinition.apiextensions.k8s.io ')
    assert client.request('GET', WIDGETS)[0] == 404


def test_a_protected_group_needs_its_approval_annotation(client):
    crd = widget_crd(**{'metadata.name': 'widgets.policy.networking.k8s.io',
                        'spec.group': 'policy.networking.k8s.io'})
    status, answer = post(client, CRDS, crd)
    assert status == 422 and crds.APPROVAL in answer['message']
    crd['metadata']['annotations'] = {
        crds.APPROVAL: 'https://github.com/kubernetes/enhancements/pull/1'}
    assert post(client, CRDS, crd)[0] == 201


def test_objects_go_with_their_definition(defined):
    assert post(defined, WIDGETS, widget())[0] == 201
    defined.call('DELETE', CRDS + '/widgets.example.com')
    assert defined.request('GET', WIDGETS)[0] == 404
    assert defined.call('GET', '/apis/example.com/v1', ok=(404,))
    # Defined again: none of the old objects is back.
    assert post(defined, CRDS, widget_crd())[0] == 201
    assert defined.call('GET', WIDGETS)['items'] == []


def test_the_status_subresource_splits_the_writes(client):
    crd = widget_crd()
    crd['spec']['versions'][0]['subresources'] = {'status': {}}
    assert post(client, CRDS, crd)[0] == 201
    made = post(client, WIDGETS, dict(widget(), status={'ready': True}))[1]
    assert 'status' not in made                  # dropped at create
    client.call('PATCH', WIDGETS + '/w1/status', {'status': {'ready': True},
                                                  'spec': {'size': 9}},
                content_type='application/merge-patch+json')
    got = client.call('GET', WIDGETS + '/w1')
    assert got['status'] == {'ready': True} and got['spec']['size'] == 3
    client.call('PATCH', WIDGETS + '/w1', {'status': {'ready': False},
                                           'spec': {'size': 4}},
                content_type='application/merge-patch+json')
    got = client.call('GET', WIDGETS + '/w1')
    assert got['status'] == {'ready': True} and got['spec']['size'] == 4
    discovered = client.call('GET', '/apis/example.com/v1')['resources']
    assert [r['name'] for r in discovered] == ['widgets', 'widgets/status']
    # Without the subresource there is no such path.
    assert post(client, CRDS, widget_crd(**{
        'metadata.name': 'gadgets.example.com',
        'spec.names': {'plural': 'gadgets', 'kind': 'Gadget'}}))[0] == 201
    gadget = dict(widget('g1'), kind='Gadget')
    gadgets = '/apis/example.com/v1/namespaces/default/gadgets'
    assert post(client, gadgets, gadget)[0] == 201
    assert client.request('PATCH', gadgets + '/g1/status', {}, 'application/'
                          'merge-patch+json')[0] == 404


def test_every_served_version_reads_the_same_objects(client):
    crd = widget_crd()
    beta = copy.deepcopy(crd['spec']['versions'][0])
    beta.update(name='v1beta1', storage=False)
    crd['spec']['versions'].insert(0, beta)
    assert post(client, CRDS, crd)[0] == 201
    assert post(client, WIDGETS, widget())[0] == 201
    got = client.call('GET', WIDGETS.replace('/v1/', '/v1beta1/') + '/w1')
    assert got['apiVersion'] == 'example.com/v1beta1'
    group = client.call('GET', '/apis/example.com')
    assert [v['version'] for v in group['versions']] == ['v1', 'v1beta1']
    assert group['preferredVersion']['version'] == 'v1'


def test_annotations_past_the_limit_are_422(client):
    big = {'metadata': {'name': 'c1', 'annotations': {
        'a': 'x' * (256 * 1024)}}}
    status, answer = post(client, '/api/v1/namespaces/default/configmaps',
                          big)
    assert status == 422
    assert 'must have at most 262144 bytes' in answer['message']


def test_version_priority_orders_as_discovery_does():
    names = ['v1alpha1', 'v2', 'foo', 'v1', 'v1beta2', 'v1beta1', 'v10']
    assert sorted(names, key=crds.version_priority) == [
        'v10', 'v2', 'v1', 'v1beta2', 'v1beta1', 'v1alpha1', 'foo']


def test_patch_keeps_its_merge_semantics_on_custom_objects(defined):
    assert post(defined, WIDGETS, widget(labels={'a': 'b'}))[0] == 201
    defined.call('PATCH', WIDGETS + '/w1', json.dumps(
        {'spec': {'labels': {'a': None, 'c': 'd'}}}).encode(),
        content_type='application/merge-patch+json')
    assert defined.call('GET', WIDGETS + '/w1')['spec']['labels'] == {
        'c': 'd'}
