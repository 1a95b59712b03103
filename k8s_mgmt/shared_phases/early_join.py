"""Joins that start before the first master's init script has ended.

An install script with the ``join-first`` feature prints init -R's report
so that its first line holds the whole join data (``{"join": {...}``), as
soon as ``kubeadm init`` is done; the CNI manifest and the VIM's
ServiceAccount come after it. The joins need only the join data and a
working API (the init's own check saw it answer), so they start on that
line while the script goes on; the VIM's credentials, which the rest of
the operation needs, come when it ends.

The phases (they replace instantiate's init phase and its nodes read)::

    Initialise the first master (<name>)  (in the background; the line is
                                           caught as it arrives)
    Prepare the other nodes ...           (in the background: what the
                                           init phase ran alongside)
    Wait for the join data from <name>    (the line, or the init's error
                                           when it ends without it)
    Wait until the other nodes are ready  (a join never runs while the
                                           node's prepare does)
    Read the cluster's nodes with the registered VIM  (a re-run: none on a
                                           first run, which has no VIM yet)
    ... the joins (instantiate.join_missing) ...
    Wait for the end of the init on <name>  (the VIM's credentials)

A first run has no other node in the cluster yet and no VIM registered;
a re-run reads the nodes with the VIM its first run registered (and a
join the install script finds done changes nothing anyway).
"""

import dataclasses
import json
import threading

from k8s_mgmt import exceptions
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import storage

LINE_PREFIX = '{"join": '
TITLE_OTHERS = 'Prepare the other nodes'
TITLE_OTHERS_LB = ' and the other masters\' load balancers'
TITLE_WAIT_JOIN = 'Wait for the join data from %s'
TITLE_WAIT_OTHERS = 'Wait until the other nodes are ready to join'
TITLE_WAIT_INIT = 'Wait for the end of the init on %s'
TITLE_KNOWN_NODES = 'Read the cluster\'s nodes with the registered VIM'


def offered(op):
    """Whether the install script this operation uploads prints the join
    data first (and has init -R at all)."""
    features = op.scripts.features
    return features.init_report and features.join_first


class JoinLine(object):
    """Catches the join data in one init -R run's stdout (an ``on_line``
    callback). ``arrived`` is set by the line, or by the run's end."""

    def __init__(self, node, step, need_key):
        self.node, self.step, self.need_key = node, step, need_key
        self.arrived = threading.Event()
        self.join = None
        self.error = None

    def __call__(self, line):
        if self.arrived.is_set() or not line.startswith(LINE_PREFIX):
            return
        try:
            data = json.loads(line[len(LINE_PREFIX):])
        except ValueError:
            data = None  # the line holds secrets: named, never shown
        try:
            if not isinstance(data, dict):
                raise script_output.output_error(
                    self.node, self.step,
                    'the join data line is no JSON object')
            self.join = script_output.JoinData.from_data(
                self.node, self.step, data, self.need_key, within='join')
        except exceptions.SSHError as err:  # for the waiter to raise
            self.error = err
        self.arrived.set()

    def wait(self, running):
        """The join data once its line came; else the init's own error
        (or, when it ended well without the line, the missing line)."""
        self.arrived.wait()
        if self.join is not None:
            return self.join
        if self.error is not None:
            raise self.error
        running.result()
        raise script_output.output_error(self.node, self.step,
                                         'no join data line before the end')


def known_nodes_phase(op, ends):
    """The nodes the cluster has already (Ready or not), read with the VIM
    registered for the instance: on a re-run of a finished or half-built
    cluster its joined nodes are not joined again. A first run has no VIM
    registered yet (and no node but the first master): nothing is read."""
    def read():
        access = cluster_access.registered_access(op, ends)
        return {} if access is None else access.api.nodes()

    def assumed():
        return cluster_access.planned_states(op, op.facts.ready)
    return phases.Phase(
        TITLE_KNOWN_NODES, work=(phases.api_work(
            'GET %s/api/v1/nodes with the registered VIM\'s token and CA '
            '(when there is one)' % ends.api_url),),
        action=read, assume=op.assume(assumed))


def init_phases(op, first, ends, alongside, record, planned_report):
    """The phases above, up to the wait for the join data (a generator).
    ``alongside`` (node_work.Alongside or None): what runs on the nodes
    meanwhile (instantiate.with_prepare, with_lb, storage); ``record()``
    runs after the init. Returns (the join data, the phase that waits for
    the end of the init and gives its InitReport; ``planned_report`` in a
    dry run)."""
    call = scripts.init_call(first, op.params, ends, report=True,
                             prepared=node_work.prepared(op, first),
                             apt_repo=op.scripts.features.apt_repo)
    line = JoinLine(first.name, call.mode, need_key=op.params.is_ha)
    if alongside is None:
        alongside = node_work.Alongside()
    nodes, calls = alongside.nodes, alongside.calls
    after_init = list(calls.get(first.name, ()))

    def run_first():
        try:
            result = op.run_script(first, call, on_line=line)
            record()
            for extra in after_init:
                op.run_script(first, extra)
            return result
        finally:
            line.arrived.set()
    init = yield phases.Phase(
        scripts.title_init(first), nodes=(first.name,),
        work=tuple(phases.script_work(c, uploads.REMOTE_DIR)
                   for c in [call] + after_init),
        background=True, action=run_first)
    others = [n for n in nodes if n is not first and calls.get(n.name)]
    ready = None
    if others:
        modes = {c.mode for n in others for c in calls[n.name]}
        title = TITLE_OTHERS + (TITLE_OTHERS_LB if 'configure-lb' in modes
                                else '')
        if storage.enabled(op.params):
            title += storage.TITLE_ALONGSIDE_INIT
        started = dataclasses.replace(node_work.scripts_phase(
            op, title, others, {n.name: calls[n.name] for n in others},
            'prepare'), background=True)
        preparing = yield started
        ready = phases.wait_for(TITLE_WAIT_OTHERS, started, preparing)
    join = yield phases.Phase(
        TITLE_WAIT_JOIN % first.name, nodes=(first.name,),
        action=lambda: line.wait(init),
        assume=node_work.PLANNED_JOIN if op.params.is_ha
        else node_work.PLANNED_TOKEN)
    if ready is not None:
        yield ready
    return join, phases.Phase(
        TITLE_WAIT_INIT % first.name, nodes=(first.name,),
        action=lambda: script_output.InitReport.from_output(
            first.name, call.mode, init.result().stdout,
            need_key=op.params.is_ha),
        assume=planned_report)
