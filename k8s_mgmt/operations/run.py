"""What one hook call holds while it works, and closes when it ends."""

from k8s_mgmt import ssh
from k8s_mgmt import state as state_mod
from k8s_mgmt.operations import nodes as nodes_mod
from k8s_mgmt.operations import steps as steps_mod


class OperationRun(object):
    """Titled steps, the instance's state, one SSH session per node and the
    Kubernetes API client of one hook call. A context manager: leaving it
    closes every session and the client and logs the step summary."""

    def __init__(self, ctx, label):
        self.ctx = ctx
        self.params = ctx.params
        self.prefix = '[%s]' % label
        self.steps = steps_mod.StepRunner(self.prefix)
        self.state = state_mod.InstanceState(ctx.vnf_instance_id)
        self.store = ssh.HostKeyStore(self.state.host_key_file())
        self.sessions = nodes_mod.Sessions(label, self.store)
        self.api = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        self.sessions.close_all()
        if self.api is not None:
            self.api.close()
        self.steps.summary()
