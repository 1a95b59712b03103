"""Which phase list each hook call runs, in either mode, and the two ways
to go through it.

:func:`run` executes the operation of a hook call; :func:`plan` walks the
same phase list without connecting anywhere and returns the phases (a dry
run). Both pick the operation from the context's ``operation`` and
``hook`` and the mode from the request, so the drivers and ``k8s-mgmt
plan`` cannot disagree on it.
"""

from k8s_mgmt import DRIVER_TYPE
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import run as run_mod
from k8s_mgmt.shared_phases import certs
from k8s_mgmt.modes.kubeadm import certificates as kubeadm_certificates
from k8s_mgmt.modes.kubeadm import heal as kubeadm_heal
from k8s_mgmt.modes.kubeadm import instantiate as kubeadm_instantiate
from k8s_mgmt.modes.kubeadm import scale as kubeadm_scale
from k8s_mgmt.modes.kubeadm import terminate as kubeadm_terminate
from k8s_mgmt.modes.kubeadm import upgrade as kubeadm_upgrade
from k8s_mgmt.modes.kubespray import heal as kubespray_heal
from k8s_mgmt.modes.kubespray import instantiate as kubespray_instantiate
from k8s_mgmt.modes.kubespray import scale as kubespray_scale
from k8s_mgmt.modes.kubespray import terminate as kubespray_terminate
from k8s_mgmt.modes.registry import heal as registry_heal
from k8s_mgmt.modes.registry import instantiate as registry_instantiate
from k8s_mgmt.modes.registry import terminate as registry_terminate

MODE_KUBEADM = 'kubeadm'
MODE_KUBESPRAY = 'kubespray'
# The registry VNF (no cluster): the kubeadm driver builds it too.
MODE_REGISTRY = 'registry'
KUBESPRAY_DRIVER_TYPE = 'mgmt-drivers-kubespray'
# Which driver (Tacker's name for it) builds clusters of each mode.
DRIVER_OF_MODE = {MODE_KUBEADM: DRIVER_TYPE,
                  MODE_KUBESPRAY: KUBESPRAY_DRIVER_TYPE,
                  MODE_REGISTRY: DRIVER_TYPE}


def _builders(instantiate, scale, heal, terminate):
    """(operation, hook) -> the generator of its phases, for the mode
    whose operation modules are given."""
    return {
        ('instantiate', 'instantiate_end'): instantiate.build,
        ('scale_out', 'scale_end'): scale.build_scale_out,
        ('scale_in', 'scale_start'): scale.build_scale_in,
        ('scale_out_rollback', 'scale_start'): scale.build_rollback,
        ('heal_vnfc', 'heal_start'): heal.build_vnfcs_start,
        ('heal_vnfc', 'heal_end'): heal.build_vnfcs_end,
        ('heal_vnf', 'heal_start'): heal.build_vnf_start,
        # The whole VNF's heal_end builds the cluster on the new VMs.
        ('heal_vnf', 'heal_end'): instantiate.build,
        ('terminate', 'terminate_end'): terminate.build,
    }


UPGRADE = ('upgrade', 'modify_information_end')
# v2: a change of the instance's package that names a newer version
# upgrades before Heat updates the stack; its rollback is refused once any
# node was upgraded.
UPGRADE_PACKAGE = ('upgrade', 'change_current_package_start')
UPGRADE_ROLLBACK = ('upgrade_rollback',
                    'change_current_package_rollback_start')
CERTS_CHECK = ('certs_check', 'modify_information_end')
CERTS_RENEW = ('certs_renew', 'modify_information_end')


def _refuse(error, **words):
    """A builder that refuses with ``error(**words)`` before any phase."""
    def build(op):
        raise error(**words)
        yield  # a generator, as every builder
    return build


def _refuse_upgrade(why):
    from k8s_mgmt.shared_phases import upgrade_plan
    return _refuse(upgrade_plan.UpgradeRefused, reason=why)


def _nothing_changed(op):
    """A rollback where the upgrade was refused: nothing to undo."""
    return {}
    yield  # a generator, as every builder


def _refuse_certificates(action, why):
    return _refuse(kubeadm_certificates.CertificatesRefused, action=action,
                   reason=why)


_KUBESPRAY_UPGRADE = _refuse_upgrade(
    'the kubespray mode upgrades with kubespray\'s upgrade-cluster.yml, '
    'which this driver does not run')
_REGISTRY_UPGRADE = _refuse_upgrade('the registry VNF runs no Kubernetes')

BUILDERS = {
    MODE_KUBEADM: {**_builders(kubeadm_instantiate, kubeadm_scale,
                               kubeadm_heal, kubeadm_terminate),
                   UPGRADE: kubeadm_upgrade.build,
                   UPGRADE_PACKAGE: kubeadm_upgrade.build,
                   UPGRADE_ROLLBACK: kubeadm_upgrade.build_rollback,
                   CERTS_CHECK: kubeadm_certificates.build_check,
                   CERTS_RENEW: kubeadm_certificates.build_renew},
    MODE_KUBESPRAY: {**_builders(kubespray_instantiate, kubespray_scale,
                                 kubespray_heal, kubespray_terminate),
                     UPGRADE: _KUBESPRAY_UPGRADE,
                     UPGRADE_PACKAGE: _KUBESPRAY_UPGRADE,
                     UPGRADE_ROLLBACK: _nothing_changed,
                     CERTS_CHECK: _refuse_certificates(
                         'check', 'the kubespray mode\'s certificates are '
                         'kubespray\'s to check and renew'),
                     CERTS_RENEW: _refuse_certificates(
                         'renewal', 'the kubespray mode\'s certificates '
                         'are kubespray\'s to check and renew')},
    # One VM: nothing to scale.
    MODE_REGISTRY: {
        ('instantiate', 'instantiate_end'): registry_instantiate.build,
        ('heal_vnfc', 'heal_start'): registry_heal.build_vnfcs_start,
        ('heal_vnfc', 'heal_end'): registry_heal.build_vnfcs_end,
        ('heal_vnf', 'heal_start'): registry_heal.build_vnf_start,
        ('heal_vnf', 'heal_end'): registry_heal.build_vnf_end,
        ('terminate', 'terminate_end'): registry_terminate.build,
        UPGRADE: _REGISTRY_UPGRADE,
        UPGRADE_PACKAGE: _REGISTRY_UPGRADE,
        UPGRADE_ROLLBACK: _nothing_changed,
        CERTS_CHECK: _refuse_certificates(
            'check', 'the registry VNF runs no Kubernetes'),
        CERTS_RENEW: _refuse_certificates(
            'renewal', 'the registry VNF runs no Kubernetes'),
    },
}


def label(ctx):
    """The log prefix's words: ``instantiate <id>``, ``scale_out <id>``,
    ``heal_start <id>``, ..."""
    word = ctx.hook if ctx.operation.startswith('heal') else ctx.operation
    return '%s %s' % (word, ctx.vnf_instance_id)


def mode_of(params):
    """'registry' for the registry VNF, 'kubespray' when the request
    names an Ansible server, else 'kubeadm'."""
    if params.is_registry:
        return MODE_REGISTRY
    return MODE_KUBESPRAY if params.uses_ansible else MODE_KUBEADM


def builder(ctx):
    try:
        return BUILDERS[mode_of(ctx.params)][(ctx.operation, ctx.hook)]
    except KeyError:
        raise ValueError('no operation %s for hook %s'
                         % (ctx.operation, ctx.hook)) from None


def run(ctx):
    """Run the hook call's operation; return what the operation returns.
    Certificates recorded to expire within 30 days are warned about
    first, whatever the operation."""
    build = builder(ctx)
    with run_mod.OperationRun(ctx, label(ctx)) as op:
        certs.warn_expiring(op)
        return phases.run(build(op), op.prefix)


def plan(ctx, facts):
    """The phases the hook call would run, given ``facts`` (run.Facts)."""
    build = builder(ctx)
    with run_mod.OperationRun(ctx, label(ctx), facts=facts) as op:
        return phases.walk(build(op))
