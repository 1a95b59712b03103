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
until ``openstack vnflcm op list`` shows its operation COMPLETED.
"""

import json
import os
import re
import shlex
import subprocess
import sys

from k8s_mgmt.polling import Poll

README = os.path.join(os.path.dirname(__file__), '..', '..', 'README.md')
FIRST = '# 3. Build the VNF package'
LAB_NETWORK = 'lab-net'
# Where the README's tables put what the operator notes.
_TABLE_ID = re.compile(r'^\|\s*ID\s*\|\s*(\S+)', re.M)
_TABLE_VNFD = re.compile(r'^\|\s*VNFD ID\s*\|\s*(\S+)', re.M)
LCM_CALLS = ('instantiate', 'scale', 'heal', 'terminate')


def command_lines(path=README):
    """The command lines of steps 3 to 6: comments cut, continuations
    joined."""
    with open(path) as handle:
        text = handle.read()
    block = text[text.index(FIRST):]
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


class Session(object):
    """Runs the README's lines against the lab of ``cli`` (a LabCLI)."""

    def __init__(self, cli, workdir, vim_id, flavour='complex',
                 deadline=1500):
        """``flavour``: the README's ``complex`` (its request and file)
        replaced by another flavour's."""
        self.cli = cli
        self.workdir = workdir
        self.deadline = deadline
        self.flavour = flavour
        self.values = {'OPENSTACK_VIM_ID': vim_id}
        self.transcript = []
        # After each LCM call but terminate: {node: Ready} of the cluster.
        self.ready_nodes = []

    def _prelude(self):
        lab = ' '.join(shlex.quote(a) for a in [
            sys.executable, '-m', 'k8s_mgmt', 'lab'] + self.cli.global_args)
        return ('set -e\n'
                'openstack() { %s openstack "$@"; }\n'
                'k8s-mgmt() { %s -m k8s_mgmt "$@"; }\n'
                % (lab, shlex.quote(sys.executable)))

    def bash(self, line):
        proc = subprocess.run(['bash', '-c', self._prelude() + line],
                              cwd=self.workdir, capture_output=True,
                              text=True, timeout=600)
        self.transcript.append((line, proc.returncode))
        assert proc.returncode == 0, '%s\n%s' % (line, proc.stderr[-2000:])
        return proc.stdout

    def substituted(self, line):
        for name, value in self.values.items():
            line = re.sub(r'\b%s\b' % name, value, line)
        line = re.sub(r'\bcomplex\b', self.flavour, line)
        return re.sub(r'\bnet0\b', LAB_NETWORK, line)

    def run(self):
        for line in command_lines():
            words = line.split()
            lcm = words[:2] == ['openstack', 'vnflcm'] and \
                words[2] in LCM_CALLS
            known = {o['id'] for o in self.operations()} if lcm else ()
            out = self.bash(self.substituted(line))
            if lcm:
                self.wait_completed(known)
                if words[2] == 'instantiate':
                    self.values['VNFC_ID'] = self.a_worker_vnfc()
                if words[2] != 'terminate':
                    self.ready_nodes.append(self.cluster_ready())
            self._note(words, line, out)
        return self.transcript

    def _note(self, words, line, out):
        """What the README tells the operator to note."""
        if words[:4] == ['openstack', 'vnf', 'package', 'create']:
            self.values['PACKAGE_ID'] = _TABLE_ID.search(out).group(1)
        elif words[:4] == ['openstack', 'vnf', 'package', 'show']:
            out = self._until(lambda: self.bash(self.substituted(line)),
                              lambda text: 'ONBOARDED' in text)
            self.values['VNFD_ID'] = _TABLE_VNFD.search(out).group(1)
        elif words[:3] == ['openstack', 'vnflcm', 'create']:
            self.values['VNF_INSTANCE_ID'] = _TABLE_ID.search(out).group(1)

    def _until(self, read, done):
        for _ in Poll(self.deadline, first=1.0, maximum=5.0):
            out = read()
            if done(out):
                return out
        raise AssertionError('not done in %d s: %s' % (self.deadline, out))

    def operations(self):
        """The instance's operation occurrences (none before it exists)."""
        instance = self.values.get('VNF_INSTANCE_ID')
        if not instance:
            return []
        return [o for o in openstack_json(self.cli, 'vnflcm', 'op', 'list')
                if o.get('vnfinstanceid') == instance]

    def wait_completed(self, known):
        """Until the operation the last call started (the one not in
        ``known``) ends: COMPLETED, or the test fails with Tacker's
        state."""
        def ended(ops):
            new = [o for o in ops if o['id'] not in known]
            return new and all(o['operationstate'] in (
                'COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK')
                for o in new)
        ops = self._until(self.operations, ended)
        new = [o for o in ops if o['id'] not in known]
        assert all(o['operationstate'] == 'COMPLETED' for o in new), new

    def _vnfcs(self):
        shown = openstack_json(self.cli, 'vnflcm', 'show',
                               self.values['VNF_INSTANCE_ID'])
        info = shown.get('instantiatedvnfinfo') or {}
        return [norm(v) for v in info.get('vnfcResourceInfo') or
                info.get('vnfc_resource_info') or []]

    def cluster_ready(self):
        """{node: Ready} as kubectl in a master of the instance reports,
        every VM of a Kubernetes VDU a node."""
        vnfcs = self._vnfcs()
        masters = [norm(v['computeresource'])['resourceid'] for v in vnfcs
                   if v['vduid'] == 'masterNode']
        ready = nodes_ready(self.cli, masters[0])
        kubernetes = [v for v in vnfcs
                      if v['vduid'] in ('masterNode', 'workerNode')]
        assert len(ready) == len(kubernetes) and all(ready.values()), (
            ready, kubernetes)
        return ready

    def a_worker_vnfc(self):
        workers = [v['id'] for v in self._vnfcs()
                   if v['vduid'] == 'workerNode']
        assert workers, self.values
        return workers[0]
