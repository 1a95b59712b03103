"""VNF instances (``/vnflcm/v1/vnf_instances``, or ``v2``: the same calls
with v2's ``Version`` header and request shapes) and the LCM operations on
them. Create, show, list and delete answer at once; instantiate, scale,
heal, terminate, update (PATCH) and change_vnfpkg (v2) answer 202 and
return the id of the operation occurrence Tacker started (see ``op_occs``
to wait for it).

Request bodies are Tacker's own (SOL002/SOL003 v1 in camelCase): an
instantiate request goes as given, the others are built from their
arguments with ``additionalParams`` passed through untouched.
"""

import json

from k8s_mgmt_lab.tacker_api.rest import op_id_from

PATH = 'vnflcm/%s/vnf_instances'
TERMINATION_TYPES = ('GRACEFUL', 'FORCEFUL')
SCALE_TYPES = ('SCALE_OUT', 'SCALE_IN')


class Instances(object):

    def __init__(self, rest, api='v1'):
        self.rest = rest
        self.path = PATH % api

    def create(self, vnfd_id, name=None, description=None, metadata=None):
        """A new VNF instance (NOT_INSTANTIATED) of the VNFD ``vnfd_id``."""
        body = {'vnfdId': vnfd_id}
        for key, value in (('vnfInstanceName', name),
                           ('vnfInstanceDescription', description),
                           ('metadata', metadata)):
            if value is not None:
                body[key] = value
        return self.rest.json('create VNF instance of VNFD %s' % vnfd_id,
                              'POST', self.path, expect=(201,), json=body)

    def show(self, instance_id):
        return self.rest.json('show VNF instance %s' % instance_id, 'GET',
                              '%s/%s' % (self.path, instance_id))

    def list(self, filter=None):
        """Every VNF instance (``all_records``), filtered by a Tacker
        filter expression when one is given."""
        return self.rest.all_records('list VNF instances', self.path,
                                     filter)

    def delete(self, instance_id):
        """Delete a NOT_INSTANTIATED instance."""
        self.rest.call('delete VNF instance %s' % instance_id, 'DELETE',
                       '%s/%s' % (self.path, instance_id), expect=(204,))

    def instantiate(self, instance_id, request):
        """Start instantiating with the InstantiateVnfRequest ``request``
        (a dict, sent as given); the operation occurrence's id."""
        return self._start('instantiate', instance_id, request)

    def scale(self, instance_id, scale_type, aspect_id, steps=1,
              additional_params=None):
        """Start a SCALE_OUT or SCALE_IN of ``steps`` steps of the aspect
        ``aspect_id``; the operation occurrence's id."""
        _one_of('scale type', scale_type, SCALE_TYPES)
        body = {'type': scale_type, 'aspectId': aspect_id,
                'numberOfSteps': steps}
        if additional_params is not None:
            body['additionalParams'] = additional_params
        return self._start('scale', instance_id, body)

    def heal(self, instance_id, vnfc_instance_ids=None, cause=None,
             additional_params=None):
        """Start healing the VNFCs ``vnfc_instance_ids`` (none: the whole
        VNF); the operation occurrence's id."""
        body = {}
        if vnfc_instance_ids:
            body['vnfcInstanceId'] = list(vnfc_instance_ids)
        if cause is not None:
            body['cause'] = cause
        if additional_params is not None:
            body['additionalParams'] = additional_params
        return self._start('heal', instance_id, body)

    def terminate(self, instance_id, termination_type='FORCEFUL',
                  graceful_timeout=None, additional_params=None):
        """Start terminating, GRACEFUL (within ``graceful_timeout``
        seconds when given) or FORCEFUL; the operation occurrence's id."""
        _one_of('termination type', termination_type, TERMINATION_TYPES)
        body = {'terminationType': termination_type}
        if graceful_timeout is not None:
            body['gracefulTerminationTimeout'] = int(graceful_timeout)
        if additional_params is not None:
            body['additionalParams'] = additional_params
        return self._start('terminate', instance_id, body)

    def update(self, instance_id, body):
        """Start a change of the instance's information (a JSON merge
        patch: ``metadata``, ``vnfInstanceName``, ...); the operation
        occurrence's id."""
        operation = 'update VNF instance %s' % instance_id
        response = self.rest.call(
            operation, 'PATCH', '%s/%s' % (self.path, instance_id),
            expect=(202,), data=json.dumps(body).encode(),
            headers={'Content-Type': 'application/merge-patch+json'})
        return op_id_from(response, operation)

    def change_vnfpkg(self, instance_id, vnfd_id, additional_params):
        """Start a change of the instance's package to ``vnfd_id`` (v2's
        ChangeCurrentVnfPkgRequest); the operation occurrence's id."""
        return self._start('change_vnfpkg', instance_id, {
            'vnfdId': vnfd_id, 'additionalParams': additional_params})

    def _start(self, verb, instance_id, body):
        operation = '%s VNF instance %s' % (verb, instance_id)
        response = self.rest.call(
            operation, 'POST', '%s/%s/%s' % (self.path, instance_id, verb),
            expect=(202,), json=body)
        return op_id_from(response, operation)


def _one_of(what, value, allowed):
    if value not in allowed:
        raise ValueError('%s must be one of %s, not %r'
                         % (what, ', '.join(allowed), value))
