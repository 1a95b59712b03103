"""A vim_name another VIM holds is refused at instantiate_start, before
Heat makes any VM (issue 47): v1's driver through Tacker's NFVO plugin,
v2's hook through Tacker's VIM REST API. The message names the clashing
VIM, its project and its type, and what to do."""

import copy
import types

import pytest

from k8s_mgmt import driver
from k8s_mgmt import exceptions
from k8s_mgmt import state as state_mod
from k8s_mgmt.v2 import operations
from tests.helpers import fake_nfvo
from tests.helpers.driver_paths import driver_paths
from tests.unit.v2 import test_vim_rest as rest
from tests.unit.v2.test_v2_instance import INSTANCE

import params_helpers as h

OTHER = 'project-other'


def additional(vim_name='k8s'):
    body = h.sample('simple')
    return h.changed(body['additionalParams'], h.ROOT + '|vim_name',
                     vim_name)


def v1_instantiate_start(package, vim_name='k8s', instance_id='vnf-1'):
    request = {'flavour_id': 'simple',
               'additional_params': additional(vim_name)}
    driver.KubernetesMgmtDriver().instantiate_start(
        fake_nfvo.tacker_context('project-mine'), {'id': instance_id},
        request, None, None, vnf_package_path=package)


def test_v1_a_clash_is_refused_at_instantiate_start(monkeypatch,
                                                    built_package):
    nfvo = fake_nfvo.install(monkeypatch)
    theirs = nfvo.add('k8s', OTHER, vim_type='openstack')
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        v1_instantiate_start(built_package)
    text = str(caught.value)
    assert '\n' not in text
    assert theirs in text and OTHER in text and 'openstack' in text
    assert [c[0] for c in nfvo.calls] == ['get_vims']
    # Another name passes, and so does the instance's own recorded VIM.
    v1_instantiate_start(built_package, vim_name='k8s-2')
    state_mod.InstanceState('vnf-1').update_cluster_record(vim_id=theirs)
    v1_instantiate_start(built_package)


def test_v2_a_clash_is_refused_at_instantiate_start(monkeypatch, tmp_path):
    api = rest.FakeApi()
    theirs = api.add(OTHER, vim_type='kubernetes', name='k8s')
    names = ['k8s']

    def context(hook, operation, hook_name, validate=None, kwargs=None):
        # The validated request's context (validation has its own tests).
        return types.SimpleNamespace(
            params=types.SimpleNamespace(is_registry=False,
                                         uses_ansible=False,
                                         vim_name=names[-1]),
            vim_registrar=rest.registrar(api), vnf_instance_id=hook.
            instance_id, log_prefix='[v2]', flavour='simple')
    monkeypatch.setattr(operations.V2Hook, 'context', context)
    script = {'vnf_instance': copy.deepcopy(INSTANCE), 'request': {}}
    with driver_paths(tmp_path / 'state', tmp_path / 'state.key'):
        with pytest.raises(exceptions.MgmtDriverError) as caught:
            operations.instantiate_start(script)
        text = str(caught.value)
        assert theirs in text and OTHER in text and 'kubernetes' in text
        assert [c[0] for c in api.calls] == ['GET']
        names.append('k8s-2')
        operations.instantiate_start(script)
