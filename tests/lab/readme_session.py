"""The operator's session of the README's "Installing into Tacker", steps 3
to 6, read from README.md and run line by line against a lab that runs
Tacker (it holds no test itself).

Each command line runs in bash as written, in a directory of the test's,
with ``openstack`` meaning ``k8s-mgmt lab ... openstack`` (the lab's
python-openstackclient with python-tackerclient, as the lab's admin) and
``k8s-mgmt`` this checkout's. Only the README's placeholders are replaced:
the IDs the operator is told to note (read from the earlier commands'
output, as the operator reads them), the VIM's ID (``openstack vim
list``), and ``net0``, the README's name for the operator's network, by
the lab's. After each LCM call the session waits, as the README says,
until ``openstack vnflcm op list`` shows its operation COMPLETED: it
polls the API that command reads (``GET .../vnf_lcm_op_occs``) from its
own process, since each ``openstack`` run costs seconds of CPU, and runs
``op list`` itself once the operation ended, to see it as the operator
does.
"""

import contextlib
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.tacker_lcm import logs

import module_steps

README = os.path.join(os.path.dirname(__file__), '..', '..', 'README.md')
FIRST = '# 3. Build the VNF package'
# The session of the README's "Through Tacker's v2 API".
FIRST_V2 = '# 3. Build the v2 VNF package'
V2_FLAG = '--os-tacker-api-version'
LAB_NETWORK = 'lab-net'
# Where the README's tables put what the operator notes.
_TABLE_ID = re.compile(r'^\|\s*ID\s*\|\s*(\S+)', re.M)
_TABLE_VNFD = re.compile(r'^\|\s*VNFD ID\s*\|\s*(\S+)', re.M)
_TABLE_ONBOARDING = re.compile(r'^\|\s*Onboarding State\s*\|\s*(\w+)',
                               re.M)
LCM_CALLS = ('instantiate', 'scale', 'heal', 'terminate')
ENDED = ('COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK')


def command_lines(path=README, first=FIRST):
    """The command lines of steps 3 to 6 (of the block starting at
    ``first``): comments cut, continuations joined."""
    with open(path) as handle:
        text = handle.read()
    block = text[text.index(first):]
    block = block[:block.index('```')]
    lines, pending = [], ''
    for raw in block.splitlines():
        if raw.lstrip().startswith('#') or not raw.strip():
            continue
        line = re.sub(r'\s+#\s.*$', '', raw).rstrip()
        if line.endswith('\\'):
            pending += line[:-1].rstrip() + ' '
            continue
        lines.append(pending + line.strip())
        pending = ''
    return lines


def nodes_ready(cli, master):
    """{node: Ready} as kubectl inside the master VM ``master`` (its name
    or server id) reports, through ``cli`` (a LabCLI)."""
    proc = cli('exec', master, '--', 'kubectl', '--kubeconfig',
               '/etc/kubernetes/admin.conf', 'get', 'nodes', '-o', 'json')
    ready = {}
    for item in json.loads(proc.stdout)['items']:
        condition = [c for c in item['status']['conditions']
                     if c['type'] == 'Ready']
        ready[item['metadata']['name']] = bool(
            condition and condition[0]['status'] == 'True')
    return ready


def norm(item):
    """python-tackerclient's keys, whether headers ("Operation State") or
    attributes ("operationState"), as "operationstate"."""
    return {k.replace(' ', '').replace('_', '').lower(): v
            for k, v in item.items()}


def openstack_json(cli, *words):
    """``openstack WORDS -f json`` as the lab's admin through ``cli`` (a
    LabCLI), every record's keys :func:`norm`-ed."""
    found = json.loads(cli('openstack', *words, '-f', 'json').stdout)
    return [norm(i) for i in found] if isinstance(found, list) \
        else norm(found)


def tacker_api(cli):
    """Tacker's API (k8s_mgmt_lab.tacker_api.Tacker), as the lab of
    ``cli`` reaches it with ``openstack``: its admin, in its project,
    through its VNF LCM API version."""
    from k8s_mgmt_lab import manager
    from k8s_mgmt_lab.tacker_lcm import operations as lab_operations
    record = manager.read_record(manager.LabSettings(
        state_dir=cli.state_dir))
    return lab_operations.client(record)


def server_id(vnfc):
    """The Nova server of a VNFC of ``openstack vnflcm show``."""
    return norm(vnfc['computeresource'])['resourceid']


class Session(object):
    """Runs the README's lines against the lab of ``cli`` (a LabCLI)."""

    def __init__(self, cli, workdir, vim_id, flavour='complex',
                 deadline=1500, edit_request=None, before_each=None):
        """``flavour``: the README's ``complex`` (its request and file)
        replaced by another flavour's. ``edit_request(path)``: what the
        operator sets in the request file before checking it (step 4);
        ``before_each(line)`` runs before every LCM call of :meth:`lcm`.
        The session runs through :meth:`steps`."""
        self.cli = cli
        self.workdir = workdir
        self.deadline = deadline
        self.flavour = flavour
        self.edit_request = edit_request
        self.before_each = before_each
        # Packages Tacker onboarded and lost (several conductors).
        self.packages_lost = 0
        # Whether the package being onboarded is stalled (logs.StallWatch).
        self.stalled = None
        self.values = {'OPENSTACK_VIM_ID': vim_id}
        self.transcript = []
        # After each LCM call but terminate: {node: Ready} of the cluster.
        self.ready_nodes = []
        # Tacker's API, once the lab is up (tacker_api).
        self._tacker = None

    def _prelude(self):
        lab = ' '.join(shlex.quote(a) for a in [
            sys.executable, '-m', 'k8s_mgmt', 'lab'] + self.cli.global_args)
        return ('set -e\n'
                'openstack() { %s openstack "$@"; }\n'
                'k8s-mgmt() { %s -m k8s_mgmt "$@"; }\n'
                % (lab, shlex.quote(sys.executable)))

    def bash(self, line, check=True):
        """``line`` run in bash; its stdout (``check``: it must succeed),
        else the CompletedProcess."""
        proc = subprocess.run(['bash', '-c', self._prelude() + line],
                              cwd=self.workdir, capture_output=True,
                              text=True, timeout=600)
        self.transcript.append((line, proc.returncode))
        if not check:
            return proc
        assert proc.returncode == 0, '%s\n%s' % (line, proc.stderr[-2000:])
        return proc.stdout

    def substituted(self, line):
        for name, value in self.values.items():
            line = re.sub(r'\b%s\b' % name, value, line)
        line = re.sub(r'\bcomplex\b', self.flavour, line)
        return re.sub(r'\bnet0\b', LAB_NETWORK, line)

    first = FIRST
    # What the session's own openstack calls add (v2: the API version).
    api_args = ()
    # The package the README builds, and how (again, under a new VNFD id).
    package_zip = 'k8s_mgmt_vnf_package.zip'
    build_args = ''

    def steps(self):
        """The session one LCM call at a time: runs the lines up to and
        including the next LCM call, waits for its operation to complete
        and for a Ready cluster (but after terminate), then yields the
        call (``instantiate``, ``scale``, ``heal``, ``terminate``); once
        exhausted, the lines after the last call ran too. A test module
        advances it one test per call (``next``)."""
        for line in command_lines(first=self.first):
            words = line.split()
            lcm = words[:2] == ['openstack', 'vnflcm'] and \
                words[2] in LCM_CALLS
            if not lcm:
                out = self.bash(self.substituted(line))
                self._note(words, line, out)
                continue
            self.lcm(self.substituted(line))
            if words[2] == 'instantiate':
                self.values['VNFC_ID'] = self.a_worker_vnfc()
            if words[2] != 'terminate':
                self.ready_nodes.append(self.cluster_ready())
            yield words[2]

    def lcm(self, line, expect='COMPLETED'):
        """Run the LCM call ``line`` and wait for the operation it starts
        to end in state ``expect``; that operation (keys :func:`norm`-ed).
        """
        known = {o['id'] for o in self.operations()}
        if self.before_each:
            self.before_each(line)
        self.bash(line)
        new = self.wait_ended(known)
        if len(new) != 1 or new[0]['operationstate'] != expect:
            errors = [openstack_json(self.cli, 'vnflcm', 'op', 'show',
                                     o['id'], *self.api_args).get('error')
                      for o in new]
            raise AssertionError('%s: %s, not one %s: %s' % (
                line, new, expect, errors))
        return new[0]

    def instance_id(self):
        return self.values['VNF_INSTANCE_ID']

    def _note(self, words, line, out):
        """What the README tells the operator to note (and sets)."""
        if words[:3] == ['k8s-mgmt', 'package', 'request']:
            if self.edit_request:
                words = shlex.split(self.substituted(line))
                self.edit_request(os.path.join(
                    self.workdir, words[words.index('--output') + 1]))
        elif words[:4] == ['openstack', 'vnf', 'package', 'create']:
            self._created(out)
        elif words[:4] == ['openstack', 'vnf', 'package', 'show']:
            # Polled through the API the line reads, then shown once.
            self._until(self._onboarding_state, self._onboarding_ended)
            out = self.bash(self.substituted(line))
            if _onboarding(out) != 'ONBOARDED':
                # The same race, the loser's revert saved last (CREATED),
                # or the download counter left above zero (PROCESSING).
                self._onboard_again(line)
                return
            self.values['VNFD_ID'] = _TABLE_VNFD.search(out).group(1)
            if not self._content_kept():
                self._onboard_again(line)
        elif words[:3] == ['openstack', 'vnflcm', 'create']:
            self.values['VNF_INSTANCE_ID'] = _TABLE_ID.search(out).group(1)

    def _created(self, out):
        """Note the new package's id, and watch its onboarding from now
        (before its upload) when several conductors read it."""
        package_id = _TABLE_ID.search(out).group(1)
        self.values['PACKAGE_ID'] = package_id
        paths = logs.conductor_logs(self.cli.state_dir)
        self.stalled = (logs.StallWatch(logs.Mark(paths), package_id)
                        if len(paths) > 1 else None)

    def _api(self):
        """Tacker's API as the session's ``openstack`` reaches it."""
        if self._tacker is None:
            self._tacker = tacker_api(self.cli)
        return self._tacker

    def _onboarding_state(self):
        """The package's onboardingState, as Tacker's API answers
        ``openstack vnf package show``."""
        return self._api().packages.show(
            self.values['PACKAGE_ID'])['onboardingState']

    def _onboarding_ended(self, state):
        """ONBOARDED or CREATED, or PROCESSING for good (Tacker 16 with
        several conductors, doc/source/tacker.rst)."""
        return state in ('ONBOARDED', 'CREATED') or (
            state == 'PROCESSING' and bool(self.stalled and self.stalled()))

    def _content_kept(self):
        """Whether Tacker still serves the package's zip: with several
        conductors Tacker 16 may onboard a package and lose its files
        (doc/source/tacker.rst, "Several conductors")."""
        return self.bash('openstack vnf package download %s --file '
                         'downloaded.zip' % self.values['PACKAGE_ID'],
                         check=False).returncode == 0

    def _onboard_again(self, show_line):
        """What the README says to do for a new package: build it under a
        new VNFD id (its paragraph after the session), create, upload."""
        self.packages_lost += 1
        assert self.packages_lost <= 2, 'Tacker lost the package 3 times'
        self.bash('k8s-mgmt package build %s--vnfd-id "$(python3 -c '
                  '\'import uuid; print(uuid.uuid4())\')" --output %s'
                  % (self.build_args, self.package_zip))
        self._created(self.bash('openstack vnf package create'))
        self.bash(self.substituted('openstack vnf package upload --path '
                                   '%s PACKAGE_ID' % self.package_zip))
        self._note(show_line.split(), show_line, '')

    def onboard(self, build_args, zip_name):
        """Another package, built with ``build_args`` under a new VNFD id
        and onboarded as the README onboards its own (lost packages built
        again); its VNFD id. The README's own ids are kept."""
        kept = dict(self.values)
        zip_kept, args_kept = self.package_zip, self.build_args
        self.package_zip, self.build_args = zip_name, build_args + ' '
        try:
            self.bash('k8s-mgmt package build %s--vnfd-id "$(python3 -c '
                      '\'import uuid; print(uuid.uuid4())\')" --output %s'
                      % (self.build_args, zip_name))
            self._created(self.bash('openstack vnf package create'))
            self.bash(self.substituted('openstack vnf package upload '
                                       '--path %s PACKAGE_ID' % zip_name))
            show = 'openstack vnf package show PACKAGE_ID'
            self._note(show.split(), show, '')
            return self.values['VNFD_ID']
        finally:
            self.values = kept
            self.package_zip, self.build_args = zip_kept, args_kept

    def _until(self, read, done):
        for _ in Poll(self.deadline, first=1.0, maximum=5.0):
            out = read()
            if done(out):
                return out
        raise AssertionError('not done in %d s: %s' % (self.deadline, out))

    def operations(self, as_listed=False):
        """The instance's operation occurrences (none before it exists),
        as Tacker's API answers ``op list``, or (``as_listed``) as
        ``openstack vnflcm op list`` shows them."""
        instance = self.values.get('VNF_INSTANCE_ID')
        if not instance:
            return []
        if as_listed:
            found = openstack_json(self.cli, 'vnflcm', 'op', 'list',
                                   *self.api_args)
        else:
            found = [norm(o) for o in self._api().op_occs.list()]
        return [o for o in found if o.get('vnfinstanceid') == instance]

    def wait_ended(self, known):
        """Until the operations the last call started (those not in
        ``known``) end (COMPLETED, FAILED_TEMP, FAILED, ROLLED_BACK);
        they, as ``openstack vnflcm op list`` shows them then."""
        def ended(ops):
            new = [o for o in ops if o['id'] not in known]
            return new and all(o['operationstate'] in ENDED for o in new)
        polled = self._until(self.operations, ended)
        listed = [o for o in self.operations(as_listed=True)
                  if o['id'] not in known]
        assert sorted((o['id'], o['operationstate']) for o in listed) == \
            sorted((o['id'], o['operationstate']) for o in polled
                   if o['id'] not in known), (listed, polled)
        return listed

    def shown(self):
        """``openstack vnflcm show`` of the instance's instantiated info."""
        shown = openstack_json(self.cli, 'vnflcm', 'show',
                               self.values['VNF_INSTANCE_ID'],
                               *self.api_args)
        return shown.get('instantiatedvnfinfo') or {}

    def vnfcs(self):
        """The instance's VNFCs as ``openstack vnflcm show`` lists them."""
        info = self.shown()
        return [norm(v) for v in info.get('vnfcResourceInfo') or
                info.get('vnfc_resource_info') or []]

    def cluster_ready(self):
        """{node: Ready} as kubectl in a master of the instance reports,
        every VM of a Kubernetes VDU a node."""
        vnfcs = self.vnfcs()
        masters = [server_id(v) for v in vnfcs if v['vduid'] == 'masterNode']
        ready = nodes_ready(self.cli, masters[0])
        kubernetes = [v for v in vnfcs
                      if v['vduid'] in ('masterNode', 'workerNode')]
        assert len(ready) == len(kubernetes) and all(ready.values()), (
            ready, kubernetes)
        return ready

    def a_worker_vnfc(self):
        workers = [v['id'] for v in self.vnfcs()
                   if v['vduid'] == 'workerNode']
        assert workers, self.values
        return workers[0]


class V2Session(Session):
    """The README's session through Tacker's v2 API: its own block of
    lines, ``--os-tacker-api-version 2`` on the session's own calls, and
    a heal naming a vnfcInfo id (v2's VNFC ids)."""

    first = FIRST_V2
    api_args = (V2_FLAG, '2')
    package_zip = 'k8s_mgmt_vnf_package_v2.zip'
    build_args = '--api v2 '

    def a_worker_vnfc(self):
        workers = [norm(v)['id'] for v in self.shown().get('vnfcInfo') or []
                   if norm(v)['vduid'] == 'workerNode']
        assert workers, self.values
        return workers[0]


class Steps(module_steps.Ordered):
    """A session (:meth:`Session.steps`) advanced by a module's tests in
    order, one LCM call each, with tests of their own between them;
    after a test that failed the later ones are skipped, naming it."""

    def __init__(self, session):
        self.session = session
        self.calls = session.steps()

    @contextlib.contextmanager
    def guard(self, request):
        """The session for the test of ``request`` (a fixture's), unless
        an earlier one failed; a failure of this one is remembered."""
        with super().guard(request):
            yield self.session

    def next_call(self, expected):
        """Run the session up to its next LCM call, which must be
        ``expected``."""
        assert next(self.calls) == expected

    def finish(self):
        """The session's lines after its last LCM call."""
        assert list(self.calls) == []


def session_fixture():
    """A module's ``session`` fixture over its ``steps`` fixture (a
    Steps): the session, unless an earlier test of the module failed."""
    @pytest.fixture
    def session(steps, request):
        with steps.guard(request) as guarded:
            yield guarded
    return session


def _onboarding(table):
    """The Onboarding State of ``openstack vnf package show``'s table."""
    found = _TABLE_ONBOARDING.search(table)
    return found.group(1) if found else None
