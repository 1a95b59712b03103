"""The external load balancer VM of the kubespray mode.

Its script (``external_lb_param.script_path``; the sample package ships
``configure_external_lb.sh``) renders HAProxy's whole configuration from
the member lists it is given: the API frontend to every master's API
server and the NodePort frontend to every worker. Removing a member is
running it again without that member, so nothing is ever edited in place
and a member is never matched by a substring of its name. The script
changes nothing (and reloads nothing) when the lists are unchanged.
"""

from oslo_log import log as logging

from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads

LOG = logging.getLogger(__name__)

TITLE = 'Configure the external load balancer'


def members(nodes):
    return ','.join('%s=%s' % (n.name, n.nic_ip) for n in nodes)


def lb_call(lb, ends, masters, workers):
    """configure_external_lb.sh on ``lb`` with these members."""
    argv = ['--api-port', str(ends.api_port), '--apiserver-port',
            str(scripts.APISERVER_PORT), '--masters', members(masters)]
    if workers:
        argv += ['--workers', members(workers)]
    return scripts.ScriptCall(lb.name, scripts.EXTERNAL_LB, tuple(argv))


def lb_phase(op, topology, ends, title=TITLE, masters=None, workers=None):
    """The LB's members: every master, and ``workers`` (default: the
    topology's)."""
    lb = topology.lbs[0]
    masters = topology.masters if masters is None else masters
    workers = topology.workers if workers is None else workers
    call = lb_call(lb, ends, masters, workers)
    return node_work.script_phase(op, title, lb, call)


def upload_phase(op, nodes, title=node_work.TITLE_UPLOAD):
    """The scripts of ``nodes`` that need any (the LB VM, the master that
    reads the VIM's credentials)."""
    needing = [n for n in nodes if uploads.names_for(n, op.params)]
    return node_work.upload_phase(op, needing, title=title)
