"""One flavour's life through Tacker's v2 API, one test per LCM call (it
holds no test itself; test_through_tacker_v2_<flavour>.py run it): the
lab's verbs on a lab of its own (``lab up --api v2``) on the worker's
control plane, kept between labs as an operator's Tacker outlives its
VNFs (the complex flavour's life: test_through_tacker_v2.py).

The steps: instantiate (every node Ready, the stack Tacker's v2 names
``vnf-<instance id>``); a change (simple: a certificate check by a PATCH
of the metadata; the others: scaled out by a worker, Ready); terminate
(the cluster's Kubernetes VIM gone with it, the lab's OpenStack VIM
left).

Real: Tacker 16 (v2 conductor running the package's script, which runs
the installed driver), Heat, Keystone, Barbican, the message bus and the
database; the lab's VMs with OpenSSH, HAProxy, keepalived and etcd.
Stand-ins: Nova, Neutron, Cinder and Glance (the lab's), the Kubernetes
binaries.
"""

import contextlib
import json

import module_steps
import readme_session


class FlavourLife(module_steps.Ordered):
    """The lab of one flavour and what its steps found."""

    def __init__(self, cli, flavour):
        self.cli, self.flavour = cli, flavour
        self.kubernetes = self.master = None

    def report(self, *verb):
        """A lab verb's LCM report, which must be COMPLETED."""
        found = json.loads(self.cli(*verb, '--json').stdout)
        assert found['operation_state'] == 'COMPLETED', found
        return found

    def status(self):
        return json.loads(self.cli('status', '--json').stdout)

    def ready(self, expected):
        """Every one of ``expected`` nodes Ready, as the API says."""
        found = readme_session.nodes_ready(self.cli,
                                           self.master['server_id'])
        assert len(found) == expected and all(found.values()), found

    def vim_types(self):
        return sorted(v['type'] for v in readme_session.openstack_json(
            self.cli, 'vim', 'list'))


def fixtures(cli, subnet, flavour):
    """A module's ``life`` and ``step`` fixtures (module_steps): the lab
    up with Tacker's v2 API, held until the module ends."""
    @contextlib.contextmanager
    def make(assert_lab_clean):
        with cli.fresh(assert_lab_clean):
            cli('up', '--flavour', flavour, '--subnet', subnet,
                '--own-control-plane', '--api', 'v2')
            yield FlavourLife(cli, flavour)
    return module_steps.fixtures(make)


def instantiate(life):
    report = life.report('instantiate')
    status = life.status()
    assert status['heat']['stack_name'] == (
        'vnf-%s' % report['vnf_instance_id'])
    life.kubernetes = [vm for vm in status['vms']
                       if vm['role'] in ('master', 'worker')]
    life.master = [vm for vm in life.kubernetes
                   if vm['role'] == 'master'][0]
    life.ready(len(life.kubernetes))


def certificates_checked(life):
    """The lab's own verb: a v2 PATCH of the metadata."""
    life.report('certs', 'check')


def scaled_out(life):
    """One worker more, Ready."""
    workers = [vm for vm in life.kubernetes if vm['role'] == 'worker']
    life.report('scale', '--type', 'SCALE_OUT')
    now = [vm for vm in life.status()['vms'] if vm['role'] == 'worker']
    assert len(now) == len(workers) + 1
    life.ready(len(life.kubernetes) + 1)


def terminate(life):
    assert life.vim_types() == ['kubernetes', 'openstack']
    life.report('terminate')
    assert life.vim_types() == ['openstack']
