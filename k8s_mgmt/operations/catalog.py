"""Which phase list each hook call runs, and the two ways to go through it.

:func:`run` executes the operation of a hook call; :func:`plan` walks the
same phase list without connecting anywhere and returns the phases (a dry
run). Both pick the operation from the context's ``operation`` and
``hook``, so the driver and ``k8s-mgmt plan`` cannot disagree on it.
"""

from k8s_mgmt import DRIVER_TYPE
from k8s_mgmt.kubespray import catalog as kubespray_catalog
from k8s_mgmt.operations import heal
from k8s_mgmt.operations import heal_vnf
from k8s_mgmt.operations import instantiate
from k8s_mgmt.operations import phases
from k8s_mgmt.operations import run as run_mod
from k8s_mgmt.operations import scale
from k8s_mgmt.operations import terminate

MODE_KUBEADM = 'kubeadm'
MODE_KUBESPRAY = 'kubespray'
# Which driver (Tacker's name for it) builds clusters of each mode.
DRIVER_OF_MODE = {MODE_KUBEADM: DRIVER_TYPE,
                  MODE_KUBESPRAY: kubespray_catalog.DRIVER_TYPE}

# (operation, hook) -> the generator of its phases (kubeadm mode; the
# kubespray mode's are in k8s_mgmt.kubespray.catalog).
BUILDERS = {
    ('instantiate', 'instantiate_end'): instantiate.build,
    ('scale_out', 'scale_end'): scale.build_scale_out,
    ('scale_in', 'scale_start'): scale.build_scale_in,
    ('scale_out_rollback', 'scale_start'): scale.build_rollback,
    ('heal_vnfc', 'heal_start'): heal.build_vnfcs_start,
    ('heal_vnfc', 'heal_end'): heal.build_vnfcs_end,
    ('heal_vnf', 'heal_start'): heal_vnf.build_start,
    ('heal_vnf', 'heal_end'): heal_vnf.build_end,
    ('terminate', 'terminate_end'): terminate.build,
}


def label(ctx):
    """The log prefix's words: ``instantiate <id>``, ``scale_out <id>``,
    ``heal_start <id>``, ..."""
    word = ctx.hook if ctx.operation.startswith('heal') else ctx.operation
    return '%s %s' % (word, ctx.vnf_instance_id)


def mode_of(params):
    """'kubespray' when the request names an Ansible server, else
    'kubeadm'."""
    return MODE_KUBESPRAY if params.uses_ansible else MODE_KUBEADM


def builder(ctx):
    table = (kubespray_catalog.BUILDERS
             if mode_of(ctx.params) == MODE_KUBESPRAY else BUILDERS)
    try:
        return table[(ctx.operation, ctx.hook)]
    except KeyError:
        raise ValueError('no operation %s for hook %s'
                         % (ctx.operation, ctx.hook)) from None


def run(ctx):
    """Run the hook call's operation; return what the operation returns."""
    build = builder(ctx)
    with run_mod.OperationRun(ctx, label(ctx)) as op:
        return phases.run(build(op), op.prefix)


def plan(ctx, facts):
    """The phases the hook call would run, given ``facts`` (run.Facts)."""
    build = builder(ctx)
    with run_mod.OperationRun(ctx, label(ctx), facts=facts) as op:
        return phases.walk(build(op))
