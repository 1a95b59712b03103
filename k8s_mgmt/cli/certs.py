"""``k8s-mgmt certs check VNF_INSTANCE_ID``: each master's certificates and
when they expire, as the driver last read them.

The driver reads every master's kubeadm certificates (``kubeadm certs
check-expiration``) when the instance's metadata asks for a check or a
renewal (``k8sMgmtCertificates``), and keeps them in the instance's
cluster record, which is sealed into the instance's metadata in Tacker's
database. This command shows that record: from ``openstack vnflcm show
VNF_INSTANCE_ID -f json`` saved to a file (``--instance``; the state key
opens it, on any conductor host), else from this host's cache of the
instance's state. It connects to nothing; to read the certificates again,
PATCH the metadata ``{"k8sMgmtCertificates": "check"}`` first.

Exit status 0; 3 when a certificate expires within ``--days`` (default
30) or has expired, for monitoring.
"""

import datetime
import json

from k8s_mgmt.cli.errors import UserError

EXPIRING = 3
DEFAULT_DAYS = 30


def register(subparsers):
    parser = subparsers.add_parser(
        'certs', help='show when the cluster\'s certificates expire',
        description=__doc__.split('\n\n', 1)[1])
    verbs = parser.add_subparsers(dest='certs_command', metavar='VERB')
    check = verbs.add_parser(
        'check', help='each master\'s certificates and their expiry, as '
                      'last read')
    check.add_argument('vnf_instance_id', metavar='VNF_INSTANCE_ID')
    check.add_argument('--instance', metavar='FILE',
                       help='"openstack vnflcm show VNF_INSTANCE_ID -f json" '
                            'saved: its sealed metadata is read (default: '
                            'this host\'s state cache)')
    check.add_argument('--config-file', metavar='FILE',
                       help='read [k8s_mgmt] state_dir and state_key_file '
                            'from this file (e.g. /etc/tacker/tacker.conf)')
    check.add_argument('--days', type=int, default=DEFAULT_DAYS,
                       metavar='N', help='exit status %d when a certificate '
                                         'expires within N days (default '
                                         '%d)' % (EXPIRING, DEFAULT_DAYS))
    check.add_argument('--json', action='store_true')
    check.set_defaults(func=cmd_check)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _shown_metadata(shown):
    """The metadata of ``openstack vnflcm show -f json``'s output (its key
    is "VNF Instance Metadata", "metadata" or alike)."""
    if not isinstance(shown, dict):
        return None
    for key, value in shown.items():
        if 'metadata' in key.lower().replace(' ', '') and \
                isinstance(value, dict):
            return value
    return None


def record_of(args):
    """The instance's cluster record: from the saved ``vnflcm show``, else
    from this host's state cache."""
    from k8s_mgmt import shared_state
    from k8s_mgmt import state as state_mod
    from k8s_mgmt import state_key
    instance = args.vnf_instance_id
    if state_mod.instance_id_problem(instance) is not None:
        raise UserError('%r is not a VNF instance id' % (instance,))
    if not args.instance:
        return state_mod.InstanceState(instance).cluster_record(), \
            'this host\'s state cache'
    try:
        with open(args.instance) as handle:
            shown = json.load(handle)
    except OSError as err:
        raise UserError('cannot read --instance %s: %s'
                        % (args.instance, err.strerror))
    except ValueError as err:
        raise UserError('--instance %s is not JSON: %s' % (args.instance,
                                                           err))
    metadata = _shown_metadata(shown)
    if metadata is None or shared_state.METADATA_KEY not in metadata:
        raise UserError('--instance %s holds no metadata %s: is it the '
                        'output of "openstack vnflcm show %s -f json" for an '
                        'instance this driver built?'
                        % (args.instance, shared_state.METADATA_KEY,
                           instance))
    files = shared_state.unseal(state_key.load(), instance,
                                metadata[shared_state.METADATA_KEY])
    text = files.get(state_mod.CLUSTER)
    return (json.loads(text) if text else {}), 'Tacker\'s database'


def rows(record, now, days):
    """(master, certificate, expiry, days left, state) per recorded
    certificate, masters and names sorted."""
    from k8s_mgmt import kube_certs
    found = []
    for master, certificates in sorted((record.get('certificates') or {})
                                       .items()):
        for name, expires in sorted(certificates.items()):
            left = kube_certs.Certificate(
                name, datetime.datetime.fromisoformat(expires)).days_left(now)
            state = ('expired' if left < 0 else
                     'renew' if left < days else 'ok')
            found.append((master, name, expires, left, state))
    return found


def cmd_check(args):
    from k8s_mgmt import exceptions
    if args.config_file:
        from k8s_mgmt.cli import hostkeys
        hostkeys.read_config(args.config_file)
    try:
        record, where = record_of(args)
    except exceptions.MgmtDriverError as err:
        raise UserError(str(err))
    found = rows(record, datetime.datetime.now(datetime.timezone.utc),
                 args.days)
    if not found:
        raise UserError(
            'no certificates are recorded for VNF instance %s in %s: read '
            'them first with a PATCH of its metadata {"k8sMgmtCertificates": '
            '"check"} (openstack vnflcm update %s --I check.json)'
            % (args.vnf_instance_id, where, args.vnf_instance_id))
    if args.json:
        print(json.dumps([{'master': m, 'certificate': n, 'expires': e,
                           'days_left': round(d, 1), 'state': s}
                          for m, n, e, d, s in found], indent=1))
    else:
        print('%-16s %-26s %-26s %9s  %s' % ('MASTER', 'CERTIFICATE',
                                             'EXPIRES', 'DAYS LEFT',
                                             'STATE'))
        for master, name, expires, left, state in found:
            print('%-16s %-26s %-26s %9d  %s' % (master, name, expires,
                                                 int(left), state))
        read = record.get('certificates_read')
        print('(as the driver read them%s; from %s)'
              % (' on %s' % read if read else '', where))
    return EXPIRING if any(s != 'ok' for *_rest, s in found) else 0
