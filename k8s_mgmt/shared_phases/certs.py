"""The cluster's kubeadm certificates: read on every master, recorded,
and warned about before they expire.

``Read the certificates on every master`` runs ``certs-check`` (kubeadm's
expiry tables, :mod:`k8s_mgmt.kube_certs` reads them) on the masters at
once; ``Record the certificates' expiry`` keeps, per master, each
certificate's expiry in the cluster record (shared by every conductor).
Every operation then warns, from the record alone (no SSH), about each
certificate that expires within 30 days.
"""

import datetime

from oslo_log import log as logging

from k8s_mgmt import kube_certs
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import upgrade_scripts
from k8s_mgmt.engine import uploads
from k8s_mgmt.shared_phases import node_work

LOG = logging.getLogger(__name__)

Phase = phases.Phase
RECORD_KEY = 'certificates'
# When they were read (RFC 3339, UTC).
READ_KEY = 'certificates_read'


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def read(op, node, call):
    result = op.run_script(node, call)
    try:
        return kube_certs.parse_check_expiration(result.stdout)
    except kube_certs.UnreadableExpiration as err:
        raise script_output.output_error(node.name, call.mode, str(err))


def read_phase(op, masters):
    calls = {m.name: upgrade_scripts.certs_check_call(m, op.params)
             for m in masters}
    return Phase('Read the certificates on every master',
                 nodes=node_work.names(masters), parallel=True,
                 work=tuple(phases.script_work(c, uploads.REMOTE_DIR)
                            for c in calls.values()),
                 action=lambda: op.on_nodes(
                     'certs-check', masters,
                     lambda node, _session: read(op, node,
                                                 calls[node.name])),
                 assume={})


def as_record(found):
    """{master: {certificate: RFC 3339 expiry}} from read_phase's result."""
    return {node: {c.name: c.expires.isoformat() for c in certificates}
            for node, certificates in sorted(found.items())}


def record_phase(op, found):
    def record():
        kept = as_record(found)
        op.state.update_cluster_record(**{
            RECORD_KEY: kept, READ_KEY: now().isoformat(timespec='seconds')})
        warn_expiring(op)
        return kept
    return Phase('Record the certificates\' expiry', work=(phases.Work(
        None, 'local', 'cluster record: %s of every master' % RECORD_KEY),),
        action=record)


def expiring(record, at, days=kube_certs.WARNING_DAYS):
    """[(master, Certificate)] of the record's certificates that expire
    within ``days`` of ``at``."""
    found = []
    for node, certificates in sorted((record or {}).items()):
        for name, expires in sorted(certificates.items()):
            certificate = kube_certs.Certificate(
                name, datetime.datetime.fromisoformat(expires), 'recorded')
            if certificate.days_left(at) < days:
                found.append((node, certificate))
    return found


def warn_expiring(op, at=None):
    """A WARNING per recorded certificate that expires within 30 days:
    every operation logs them, from the record alone."""
    at = at or now()
    record = op.state.cluster_record().get(RECORD_KEY)
    lines = [kube_certs.warning(node, certificate, at)
             for node, certificate in expiring(record, at)]
    for line in lines:
        LOG.warning('%s %s', op.prefix, line)
    return lines
