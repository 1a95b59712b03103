"""One flavour's life through the lab's real Tacker, the operator's way (it
holds no test itself; test_through_tacker_<flavour>.py run it, one test
per step).

The README's session (readme_session) with python-tackerclient: package,
instance, instantiate, scale out, heal a worker, terminate, delete; the
cluster Ready after each change. The operator's edits of the request
(README step 4) are those of their network: the nodes' subnet where the
sample names one (the proxy's node CIDR, the NFS exports), and for
kubespray their Ansible server (address, user, password, and the
fingerprint of its host key, read on its console: ``lab exec``).

Each flavour adds what only it has, still through ``openstack vnflcm``:

* storage: the storage server's heal refused when nothing says what
  becomes of its volume (FAILED_TEMP, Tacker's error naming the way on,
  given up with ``vnflcm op fail``), then healed with the volume kept and
  its data still there;
* podaffinity: every worker, the scaled-out one too, labelled with the
  compute host Nova put it on;
* kubespray: the masters' aspect refused by Tacker's own API;
* simple: Kubernetes upgraded one minor by a PATCH of the instance's
  metadata (``openstack vnflcm update --I``), every node then at the new
  version, and the README's scale-out after it adds a worker at that
  version too.
"""

import json
import re

import pytest

from k8s_mgmt_lab import manager

import readme_session
import tacker_checks

# python-tackerclient merges the file into the heal request's body.
KEEP_VOLUME = {'additionalParams': {
    'tacker_extension_heal_include_block_storage': False}}
MARKER = '/volume/tacker-heal-marker'


def _kubectl(cli, server, *args):
    return cli('exec', server, '--', 'kubectl', '--kubeconfig',
               '/etc/kubernetes/admin.conf', *args).stdout


def operators_edits(cli, subnet, flavour):
    """``edit_request`` of the session: what an operator sets in the
    sample request for their network and, for kubespray, Ansible
    server."""
    def edit(path):
        with open(path) as handle:
            body = json.load(handle)
        manager.sample_on_subnet(body, subnet)
        if flavour == 'kubespray':
            server = json.loads(cli('status', '--json').stdout)[
                'ansible_server']
            # Its console shows the key's fingerprint: the lab's is exec.
            line = cli('exec', server['vm_id'], '--', 'ssh-keygen', '-lf',
                       '/etc/ssh/ssh_host_ed25519_key.pub').stdout.split()
            assert line[1].startswith('SHA256:'), line
            root = body['additionalParams']['k8s_cluster_installation_param']
            root['ansible']['host_key_fingerprint'] = line[1]
        with open(path, 'w') as handle:
            json.dump(body, handle, indent=2)
    return edit


def _master(session):
    return next(readme_session.server_id(v) for v in session.vnfcs()
                if v['vduid'] == 'masterNode')


def check_storage_heal(session):
    cli, instance = session.cli, session.instance_id()
    master = _master(session)
    pvs = _kubectl(cli, master, 'get', 'pv', '-o', 'name').split()
    assert pvs and all(p.startswith('persistentvolume/') for p in pvs)
    storage = next(v for v in session.vnfcs()
                   if v['vduid'] == 'storage_server')
    before = readme_session.server_id(storage)
    cli('exec', before, '--', 'sh', '-c', 'echo kept > %s' % MARKER)
    # Nothing says what becomes of the volume: the driver refuses, and
    # Tacker's error says so in one line.
    heal = 'openstack vnflcm heal --vnfc-instance %s -- %s' % (
        storage['id'], instance)
    failed = session.lcm(heal, expect='FAILED_TEMP')
    detail = readme_session.openstack_json(
        cli, 'vnflcm', 'op', 'show', failed['id'])['error']['detail']
    assert 'Heal refused' in detail, detail
    assert 'new, empty Cinder volume' in detail, detail
    assert '\n' not in detail.strip() and 'Traceback' not in detail
    session.bash('openstack vnflcm op fail %s' % failed['id'])
    assert readme_session.openstack_json(
        cli, 'vnflcm', 'op', 'show', failed['id'])[
        'operationstate'] == 'FAILED'
    # Kept: a new server, the same volume, the data still there.
    with open('%s/keep-volume.json' % session.workdir, 'w') as handle:
        json.dump(KEEP_VOLUME, handle)
    session.lcm('openstack vnflcm heal --vnfc-instance %s '
                '--additional-param-file keep-volume.json -- %s'
                % (storage['id'], instance))
    healed = next(v for v in session.vnfcs()
                  if v['vduid'] == 'storage_server')
    after = readme_session.server_id(healed)
    assert after != before
    assert cli('exec', after, '--', 'cat', MARKER).stdout.strip() == 'kept'
    assert _kubectl(cli, master, 'get', 'pv', '-o', 'name').split() == pvs
    session.cluster_ready()


def check_podaffinity(session):
    """Each worker's node (found by its address) is labelled with the
    compute host Nova reports for its server; no other node is."""
    cli = session.cli
    nodes = json.loads(_kubectl(cli, _master(session), 'get', 'nodes', '-o',
                                'json'))['items']
    labels = {n['metadata']['name']: n['metadata']['labels'].get('CIS-node')
              for n in nodes}
    by_address = {a['address']: n['metadata']['name'] for n in nodes
                  for a in n['status']['addresses']
                  if a['type'] == 'InternalIP'}
    workers = set()
    for vnfc in session.vnfcs():
        if vnfc['vduid'] != 'workerNode':
            continue
        server = readme_session.openstack_json(
            cli, 'server', 'show', readme_session.server_id(vnfc))
        host = server['os-ext-srv-attr:host']
        (name,) = {by_address[a] for a in
                   re.findall(r'[\d.]+', str(server['addresses']))
                   if a in by_address}
        workers.add(name)
        assert host and labels[name] == host, (labels, name, host)
    assert len(workers) == 2, labels
    assert {n for n, label in labels.items() if label} == workers, labels


def check_kubespray(session):
    # The masters' aspect never scales: Tacker's own API refuses it.
    refused = session.bash(
        'openstack vnflcm scale --type SCALE_OUT --aspect-id master_instance '
        '%s' % session.instance_id(), check=False)
    assert refused.returncode != 0
    assert 'can not scale_out' in refused.stderr, refused.stderr
    assert not [o for o in session.operations()
                if o['operationstate'] not in ('COMPLETED',)]


UPGRADE = {'metadata': {'k8sMgmtUpgrade': '1.36'}}


def _kubelets(session):
    return tacker_checks.kubelets(session.cli, _master(session))


def check_upgrade(session):
    """The cluster one minor up through Tacker's v1 PATCH."""
    before = set(_kubelets(session).values())
    assert len(before) == 1 and before.pop().startswith('v1.35.'), before
    with open('%s/upgrade.json' % session.workdir, 'w') as handle:
        json.dump(UPGRADE, handle)
    done = session.lcm('openstack vnflcm update %s --I upgrade.json'
                       % session.instance_id())
    assert done['operation'] == 'MODIFY_INFO', done
    assert set(_kubelets(session).values()) == {'v1.36.1'}
    session.cluster_ready()
    # The certificates read again, by the operator's PATCH.
    with open('%s/check.json' % session.workdir, 'w') as handle:
        json.dump({'metadata': {'k8sMgmtCertificates': 'check'}}, handle)
    done = session.lcm('openstack vnflcm update %s --I check.json'
                       % session.instance_id())
    assert done['operation'] == 'MODIFY_INFO', done


def check_upgraded_scale_out(session):
    """The worker the README's scale-out added runs the upgraded version."""
    assert set(_kubelets(session).values()) == {'v1.36.1'}


def steps_fixture(cli, subnet, flavour):
    """A module's ``steps`` fixture: ``lab up`` with Tacker through
    ``cli`` on ``subnet``, then the README's session for ``flavour``
    (readme_session.Steps), held until the module ends."""
    @pytest.fixture(scope='module')
    def steps(assert_lab_clean, tmp_path_factory):
        workdir = str(tmp_path_factory.mktemp(flavour))
        with cli.fresh(assert_lab_clean):
            cli('up', '--flavour', flavour, '--subnet', subnet,
                '--own-control-plane')
            status = json.loads(cli('status', '--json').stdout)
            yield readme_session.Steps(readme_session.Session(
                cli, workdir, status['tacker']['vim_id'], flavour=flavour,
                edit_request=operators_edits(cli, subnet, flavour)))
    return steps


def check_end(steps):
    """After the README's terminate and delete: each change left as many
    Ready nodes as it should (scaled out by one worker, then healed), no
    instance, and the cluster's VIM went with it."""
    steps.finish()
    session, cli = steps.session, steps.session.cli
    sizes = [len(nodes) for nodes in session.ready_nodes]
    assert sizes[1:] == [sizes[0] + 1] * 2, session.ready_nodes
    assert not json.loads(cli('openstack', 'vnflcm', 'list', '-f',
                              'json').stdout)
    vims = readme_session.openstack_json(cli, 'vim', 'list')
    assert [v['type'] for v in vims] == ['openstack'], vims
