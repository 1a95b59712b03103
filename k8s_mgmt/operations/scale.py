"""Scale: workers out (join) and in (cordon, drain, delete).

scale_end, SCALE_OUT::

    Read the topology from Heat
    Find the new workers            (scale_out_id_list -> member stacks)
    Connect to a master             (the initialised one first)
    Connect to the new workers      (all at once)
    Upload the scripts              (the master and the new workers)
    Read the API credentials        (token-secret on the master)
    Read the cluster's nodes        (a re-run skips new workers already Ready)
    Read join data                  (print-join: a fresh token)
    Join the new workers            (all at once)
    Wait until the new workers are Ready
    Label the new workers           (CIS-node, zone: from their placement)

scale_start, SCALE_IN (and the rollback of a failed SCALE_OUT)::

    Read the topology from Heat
    Find the workers to remove      (scale_name_list -> member resources)
    Connect to a master, read the API credentials
    Drain and delete the workers    (all at once: cordon, evict, delete)

Only the nodes that change and one master are touched, so a scale-out costs
the same on a cluster of 1 or 100 workers. Every step is decided from what
Heat and the API report, so a re-run finishes what a failed run left.
"""


from oslo_log import log as logging

from k8s_mgmt import context as ctx_mod
from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt import parallel
from k8s_mgmt.kube import drain
from k8s_mgmt.operations import instantiate
from k8s_mgmt.operations import labels as labels_mod
from k8s_mgmt.operations import run as run_mod
from k8s_mgmt.operations import scale_plan
from k8s_mgmt.operations import scripts
from k8s_mgmt.operations import uploads

LOG = logging.getLogger(__name__)


def scale_out(ctx):
    """scale_end for SCALE_OUT: join the new workers."""
    with _ScaleRun(ctx) as run:
        return run.scale_out()


def scale_in(ctx):
    """scale_start for SCALE_IN: drain and delete the workers Heat removes."""
    with _ScaleRun(ctx) as run:
        return run.scale_in(force=ctx.params.force_drain)


def rollback_scale_out(ctx):
    """scale_start with a SCALE_OUT request: undo a failed scale-out.

    The VMs go away with Heat's rollback anyway, so their pods are lost
    whatever happens: a blocked drain must not stop the rollback.
    """
    with _ScaleRun(ctx) as run:
        return run.scale_in(force=True, rollback=True)


class _ScaleRun(run_mod.OperationRun):
    """One scale hook call: its sessions, steps and API client."""

    def __init__(self, ctx):
        super().__init__(ctx, '%s %s' % (ctx.operation, ctx.vnf_instance_id))

    # -- the operations ------------------------------------------------------

    def scale_out(self):
        step = self.steps.run
        scale_plan.check_worker_aspect(self.params, self._aspect_id())
        topology = step('Read the topology from Heat',
                        instantiate.read_topology, self.ctx)
        ids = list(self.ctx.extra.get('scale_out_id_list') or ())
        new = ()
        if ids:
            new = step('Find the new workers', scale_plan.new_workers,
                       topology, ids)
        master = self._connect_master(topology)
        states = step('Read the cluster\'s nodes', self.api.wait_answering)
        if not ids:
            # No ids from the conductor: the workers the API does not know.
            new = scale_plan.workers_not_in_cluster(topology, states)
            LOG.warning('%s no scale_out_id_list given; joining the workers '
                        'the cluster does not list: %s', self.prefix,
                        ', '.join(n.name for n in new) or 'none')
        todo = scale_plan.join_targets(
            new, [n for n, s in states.items() if s.ready])
        if todo:
            step('Connect to the new workers', self.sessions.connect_all,
                 todo, self.params)
            step('Upload the scripts', self._upload, todo)
            join = step(scripts.TITLE_JOIN_DATA, self._join_data, master)
            ends = scripts.endpoints(topology, self.params, master)
            step(scale_plan.TITLE_JOIN_NEW, self._join, todo, ends, join)
        else:
            self.steps.skip(scale_plan.TITLE_JOIN_NEW,
                            'every new worker is already Ready')
        names = [n.name for n in new]
        states = step('Wait until the new workers are Ready',
                      self.api.wait_ready, names, prefix=self.prefix)
        labelled = step('Label the new workers', self._label, topology, new,
                        states)
        LOG.info('%s joined %d worker(s): %s', self.prefix, len(new),
                 ', '.join(names))
        return {'joined': [n.name for n in todo], 'nodes': names,
                'labels': labelled}

    def scale_in(self, force, rollback=False):
        step = self.steps.run
        if not rollback:
            scale_plan.check_worker_aspect(self.params, self._aspect_id())
        topology = step('Read the topology from Heat',
                        instantiate.read_topology, self.ctx)
        names = list(self.ctx.extra.get('scale_name_list') or ())
        ids = (list(self.ctx.extra.get('scale_out_id_list') or ())
               if rollback else [])
        removal = step('Find the workers to remove',
                       scale_plan.nodes_to_remove, topology, names, ids)
        self._check_removal(removal, rollback)
        if not removal.workers:
            self.steps.skip('Drain and delete the workers',
                            'no worker to remove')
            return {'removed': [], 'reports': {}}
        self._connect_master(topology)
        reports = step('Drain and delete the workers', self._drain_all,
                       removal.workers, force)
        return {'removed': sorted(r.node for r in reports.values()
                                  if r.node_deleted),
                'reports': reports}

    # -- steps ---------------------------------------------------------------

    def _aspect_id(self):
        return ctx_mod.field(self.ctx.request, 'aspect_id')

    def _check_removal(self, removal, rollback):
        if removal.unknown:
            LOG.warning('%s no server for %s in stack %s (already removed?)',
                        self.prefix, ', '.join(removal.unknown),
                        self.ctx.stack_id)
        if removal.masters and not rollback:
            raise exceptions.MgmtDriverError(
                error_message='scale-in would remove master node(s) %s; '
                              'only workers can be scaled in'
                              % ', '.join(removal.masters))
        if removal.masters:
            LOG.warning('%s rollback leaves master(s) %s to Heat',
                        self.prefix, ', '.join(removal.masters))

    def _connect_master(self, topology):
        """Sessions to a master (the initialised one first) and an API
        client from its credentials; the next master if one is down."""
        first = instantiate.first_master(topology, self.state.cluster_record())
        candidates = [first] + [m for m in topology.masters if m is not first]
        errors = []
        for master in candidates:
            try:
                self.steps.run('Connect to master %s' % master.name,
                               self.sessions.connect_all, [master],
                               self.params)
                self.steps.run('Upload the scripts to %s' % master.name,
                               self._upload, [master])
                self.api = self.steps.run('Read the API credentials',
                                          self._cluster_api, topology,
                                          master)
                return master
            except exceptions.MgmtDriverError as err:
                errors.append((master.name, err))
                if not self.params.is_ha:
                    raise
        raise exceptions.NodesFailed('%s reach a master' % self.prefix,
                                     errors, len(candidates))

    def _upload(self, nodes):
        script_set = uploads.ScriptSet(self.ctx.package_dir, self.params)
        self.sessions.on_nodes(
            'upload scripts', nodes,
            lambda node, session: uploads.upload_to(session, node,
                                                    script_set))

    def _run(self, node, call):
        return instantiate.run_script(self.sessions[node.name], call)

    def _cluster_api(self, topology, master):
        call = scripts.token_secret_call(master, self.params)
        creds = scripts.VimCredentials.from_output(
            master.name, call.mode, self._run(master, call).stdout)
        ends = scripts.endpoints(topology, self.params, master)
        return kube.ClusterAPI(ends.api_url, creds.token, creds.ca_cert)

    def _join_data(self, master):
        call = scripts.print_join_call(master, self.params)
        return scripts.JoinData.from_output(
            master.name, call.mode, self._run(master, call).stdout,
            need_key=self.params.is_ha)

    def _join(self, workers, ends, join):
        calls = {w.name: scripts.join_call(w, self.params, ends, join)
                 for w in workers}
        self.sessions.on_nodes(
            'join-worker', workers,
            lambda node, session: instantiate.run_script(session,
                                                         calls[node.name]))

    def _label(self, topology, new, states):
        wanted = scale_plan.new_worker_labels(topology, new, self.ctx.grant)
        return labels_mod.apply_missing(self.api, wanted, states,
                                        self.prefix)

    def _drain_all(self, workers, force):
        if force:
            LOG.info('%s force_drain: pods whose eviction is refused will '
                     'be deleted', self.prefix)
        return parallel.run_on_nodes(
            '%s %s' % (self.ctx.operation, self.ctx.vnf_instance_id),
            'drain and delete', workers,
            lambda node: drain.drain_and_delete(self.api, node.name,
                                                force=force,
                                                prefix=self.prefix))
