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

LOG = logging.getLogger(__name__)


def target_for(node, params):
    try:
        group = params.group(node.role)
    except ValueError as err:
        raise ValueError('%s (%s)' % (err, node.name)) from None
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
