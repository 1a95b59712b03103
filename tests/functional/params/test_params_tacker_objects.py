"""Tacker's own request objects (tacker.objects, imported in-process: a few
seconds, and eventlet with it) read by the driver's entry as Tacker's
conductor hands them over; moved here from the unit lane's
tests/unit/params/test_params_package_checks.py."""

import pytest

from k8s_mgmt import context
from k8s_mgmt import params

import params_helpers as h

sample = h.sample


def test_tacker_request_objects_are_read(built_package):
    objects = pytest.importorskip('tacker.objects')
    objects.register_all()
    body = sample('complex')
    request = objects.InstantiateVnfRequest(
        flavour_id='complex', additional_params=body['additionalParams'],
        ext_virtual_links=[objects.ExtVirtualLinkData(
            id='net', resource_id='r', ext_cps=[
                objects.VnfExtCpData(cpd_id='masterNode_CP1'),
                objects.VnfExtCpData(cpd_id='workerNode_CP9')])])
    assert context.ext_virtual_links(request) == [
        {'id': 'net', 'resource_id': 'r',
         'ext_cps': [{'cpd_id': 'masterNode_CP1'},
                     {'cpd_id': 'workerNode_CP9'}]}]
    problems = h.problems_of(
        params.load_cluster_params, body['additionalParams'],
        flavour='complex', package_dir=built_package,
        ext_virtual_links=context.ext_virtual_links(request))
    assert problems == [(
        'extVirtualLinks[0].extCps[1].cpdId',
        "workerNode_CP9 is not a CP of flavour complex's VNFD (its CPs: "
        "masterNode_CP1, workerNode_CP2)")]
