"""Forget an instance: unregister its VIM, drop its host keys and its
state directory. Terminate is these phases; a whole-VNF heal needs them
before it rebuilds the cluster. Each reads what is there and removes it,
so a second run finds nothing and succeeds.
"""

import os
import shutil

from oslo_log import log as logging

from k8s_mgmt import ssh
from k8s_mgmt import state as state_mod
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_owner
from k8s_mgmt.engine import phases
from k8s_mgmt.tacker_objects import field
from k8s_mgmt.tacker_objects import path

Phase = phases.Phase

LOG = logging.getLogger(__name__)


def forget_phases(op):
    """Forget the servers' host keys and remove the instance's state."""
    ids = server_ids_of(op.ctx.vnf_instance, op.state)
    forgotten = yield Phase(
        'Forget the servers\' host keys',
        work=(phases.Work(None, 'local', 'drop the pinned host keys of '
                          'servers %s' % (', '.join(ids) or '(none)')),),
        action=lambda: forget_host_keys(op.state, ids))
    removed = yield Phase(
        'Remove the instance\'s state',
        work=(phases.Work(None, 'local', 'remove %s' % op.state.path),),
        action=lambda: remove_state_dir(op.state))
    return {'host_keys_forgotten': forgotten, 'state_removed': removed}


def unregister_phase(op):
    registrar = vim_mod.registrar_for(op.ctx, op.state)
    name = vim_mod.instance_vim_name(op.ctx)
    return Phase('Unregister the VIM', work=(phases.api_work(
        'delete VIM %s from %s' % (name, registrar.where),
        kind=registrar.kind),),
        action=lambda: vim_owner.unregister_vim(registrar, op.state, name))


def forget_state_phase(op):
    return Phase('Forget the old cluster\'s state', work=(phases.Work(
        None, 'local', 'drop the host keys and remove %s (the Kubernetes '
        'version kept)' % op.state.path),),
        action=lambda: forget_state(op.ctx, op.state))


def server_ids_of(vnf_instance, state):
    """Server ids Tacker still lists for the instance, plus the recorded
    first master's: the pins a shared pin file holds for it."""
    ids = []
    info = field(vnf_instance, 'instantiated_vnf_info')
    for vnfc in field(info, 'vnfc_resource_info') or ():
        sid = path(vnfc, 'compute_resource', 'resource_id')
        if sid and sid not in ids:
            ids.append(sid)
    recorded = state.cluster_record().get('init_master_server_id')
    if recorded and recorded not in ids:
        ids.append(recorded)
    return ids


def forget_host_keys(state, server_ids):
    """Drop the instance's pins from a shared pin file (its own pin file
    goes with the state dir)."""
    path = state.host_key_file()
    inside = os.path.dirname(os.path.abspath(path)) == \
        os.path.abspath(state.path)
    if inside or not server_ids or not os.path.exists(path):
        return []
    store = ssh.HostKeyStore(path)
    store.forget_many(server_ids)
    return list(server_ids)


def remove_state_dir(state):
    """Remove ``<state_dir>/<id>/``; False when it was already gone."""
    if not os.path.isdir(state.path):
        return False
    shutil.rmtree(state.path)
    state_mod.changed(state.path)
    LOG.info('Removed the state of VNF instance %s (%s)',
             state.vnf_instance_id, state.path)
    return True


# What the new cluster of a whole-VNF heal keeps of the old one's record:
# the version it ran (an upgrade's, not the instantiate request's).
KEPT_RECORD = ('kubernetes_version',)


def forget_state(ctx, state):
    """Whole-VNF heal: the old cluster's pins and state are meaningless,
    but for the Kubernetes version it ran, which the new one installs."""
    forget_host_keys(state, server_ids_of(ctx.vnf_instance, state))
    kept = {key: value for key, value in state.cluster_record().items()
            if key in KEPT_RECORD}
    removed = remove_state_dir(state)
    if kept:
        state.update_cluster_record(**kept)
    return removed
