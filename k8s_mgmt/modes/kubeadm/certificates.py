"""The cluster's certificates as an operation (metadata
``k8sMgmtCertificates: check``)::

    Read the topology from Heat
    Connect to the masters
    Upload the scripts
    Read the certificates on every master   (certs-check, all at once)
    Record the certificates' expiry         (the cluster record; a WARNING
                                             per certificate that expires
                                             within 30 days)

Nothing on the cluster changes.
"""

from k8s_mgmt.shared_phases import certs
from k8s_mgmt.shared_phases import node_work


def build_check(op):
    topology = yield node_work.topology_phase(op)
    masters = topology.masters
    yield node_work.connect_phase(op, 'Connect to the masters', masters)
    yield node_work.upload_phase(op, masters)
    found = yield certs.read_phase(op, masters)
    return (yield certs.record_phase(op, found or {}))
