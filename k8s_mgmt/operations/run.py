"""What one hook call holds while it works, and closes when it ends."""

from k8s_mgmt import ssh
from k8s_mgmt import state as state_mod
from k8s_mgmt.ssh import console_keys
from k8s_mgmt.topology import heat
from k8s_mgmt.operations import nodes as nodes_mod
from k8s_mgmt.operations import steps as steps_mod


def vim_session(ctx):
    """(keystoneauth session, region) of the VIM holding the instance."""
    try:
        vim_info = ctx.extra.get('vim_info')
        if vim_info is None:
            vim_info = heat.vim_info_for_instance(ctx.tacker_context,
                                                  ctx.vnf_instance)
        return heat.session_for_vim(vim_info)
    except Exception as err:  # no Tacker, no VIM: no console to read
        raise console_keys.ConsoleUnavailable(
            'no VIM session to reach the compute API (%s: %s)'
            % (type(err).__name__, err))


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
        # First contact with a VM is checked against its console output,
        # read over the same VIM (Keystone session) as Heat.
        self.first_contact = console_keys.FirstContactVerifier(
            lambda: vim_session(ctx))
        self.sessions = nodes_mod.Sessions(label, self.store,
                                           first_contact=self.first_contact)
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
