"""SSH to the cluster's nodes: targets from topology + params, one session
per node for the whole operation.

Sessions are opened once (all nodes in parallel, so a wrong password on one
node fails the operation within seconds, naming it), reused by every step,
and closed together at the end.
"""

import threading

from oslo_log import log as logging

from k8s_mgmt import parallel
from k8s_mgmt import ssh
from k8s_mgmt.params import model

LOG = logging.getLogger(__name__)


def group_params(params, node):
    """The SSH credentials of the node's group."""
    if node.role == 'master':
        return params.master_node
    if node.role == 'worker':
        return params.worker_node
    if node.role == 'storage' and params.storage_server is not None:
        return params.storage_server
    lb = params.external_lb_param
    if node.role == 'lb' and lb is not None:
        return model.NodeGroupParams(
            ssh_cp_name=lb.ssh_cp_name, username=lb.ssh_username,
            password=lb.ssh_password, ssh_private_key=lb.ssh_private_key)
    server = params.ansible
    if node.role == 'ansible' and server is not None:
        return model.NodeGroupParams(
            username=server.username, password=server.password,
            ssh_private_key=server.ssh_private_key)
    raise ValueError('no credentials for a %s node (%s)'
                     % (node.role, node.name))


def target_for(node, params):
    group = group_params(params, node)
    return ssh.SSHTarget(name=node.name, host=node.ssh_ip,
                         username=group.username, password=group.password,
                         private_key=group.ssh_private_key,
                         server_id=node.server_id)


class Sessions(object):
    """One open :class:`~k8s_mgmt.ssh.SSHSession` per node name."""

    def __init__(self, operation, store, **session_kwargs):
        self.operation = operation        # log prefix for run_on_nodes
        self.store = store
        self.session_kwargs = session_kwargs
        self._open = {}
        self._lock = threading.Lock()

    def connect_all(self, nodes, params):
        """Open a session to every node at once; NodesFailed names failures."""
        def connect(node):
            session = ssh.SSHSession(target_for(node, params),
                                     store=self.store, **self.session_kwargs)
            session.connect()
            with self._lock:
                self._open[node.name] = session
            return session.attempts

        todo = [n for n in nodes if n.name not in self._open]
        return parallel.run_on_nodes(self.operation, 'connect', todo,
                                     connect)

    def __getitem__(self, name):
        return self._open[name]

    def has(self, name):
        return name in self._open

    def on_nodes(self, step, nodes, fn, concurrency=None, session_of=None):
        """``fn(node, session)`` on every node in parallel (bounded);
        ``session_of(node)`` picks the session (default: this pool's)."""
        session_of = session_of or (lambda node: self._open[node.name])
        return parallel.run_on_nodes(
            self.operation, step, nodes,
            lambda node: fn(node, session_of(node)),
            concurrency=concurrency)

    def detach(self, names):
        """Take the open sessions to ``names`` out of the pool, open:
        name -> session (the caller closes them)."""
        with self._lock:
            return {n: self._open.pop(n) for n in names if n in self._open}

    def adopt(self, sessions):
        """Add open sessions (name -> session) to the pool."""
        with self._lock:
            self._open.update(sessions)

    def close_all(self):
        with self._lock:
            sessions, self._open = list(self._open.values()), {}
        for session in sessions:
            try:
                session.close()
            except Exception as err:  # closing must not hide the real error
                LOG.debug('%s: close failed: %s', session.node, err)
