"""What the lab's Tacker tests check of a cluster and of the conductors
that ran its operations (it holds no test itself): one VIP holder, the
same VRRP password on every master, host keys verified against the VMs'
consoles, and what each tacker-conductor ran and keeps."""

import ipaddress
import json
import os
import re

from k8s_mgmt_lab.openstack import conductor_operations

import readme_session


def conductors(cli):
    """The lab's tacker-conductors as ``lab status`` lists them."""
    services = json.loads(cli('status', '--json').stdout)['openstack'][
        'services']
    return {name: service for name, service in services.items()
            if name.startswith('tacker-conductor')}


def log_marks(cli):
    """{conductor: its log's size now}: where :func:`ran_by` starts to
    read (a warm plane's conductors served earlier labs too)."""
    return {name: _size(conductor['log'])
            for name, conductor in conductors(cli).items()}


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def ran_by(cli, since):
    """{conductor: [hook, ...]} of the hook calls each ran after
    ``since`` (:func:`log_marks`)."""
    ran = {}
    for name, conductor in conductors(cli).items():
        with open(conductor['log'], 'rb') as handle:
            handle.seek(since.get(name, 0))
            text = handle.read().decode('utf-8', 'replace')
        ran[name] = [o['hook'] for o in
                     conductor_operations.operations(text)]
    return ran


def vip_holders(cli, subnet, masters):
    """The masters (server ids) holding the VIP: a second address on the
    lab's network beside their own."""
    network = ipaddress.ip_network(subnet)
    holders = []
    for server in masters:
        out = cli('exec', server, '--', 'ip', '-o', '-4', 'addr',
                  'show').stdout
        mine = [a for a in re.findall(r' inet (\S+)/', out)
                if ipaddress.ip_address(a) in network]
        if len(mine) > 1:
            holders.append(server)
    return holders


def vrrp_passwords(cli, masters):
    """The VRRP password in each master's keepalived.conf."""
    found = set()
    for server in masters:
        conf = cli('exec', server, '--', 'cat',
                   '/etc/keepalived/keepalived.conf').stdout
        found.update(re.findall(r'auth_pass\s+(\S+)', conf))
    return found


def pins(cli, instance_id):
    """Every host-key pin of the instance each conductor holds now."""
    found = {}
    for name, conductor in conductors(cli).items():
        path = os.path.join(conductor['driver_state_dir'], instance_id,
                            'host_keys.json')
        if os.path.exists(path):
            with open(path) as handle:
                found[name] = json.load(handle)['keys']
    return found


def one_vip_and_verified_pins(cli, subnet, masters, instance_id):
    """Exactly one master holds the VIP, all with one VRRP password, and
    every pin any conductor holds was verified against a console."""
    holders = vip_holders(cli, subnet, masters)
    assert len(holders) == 1, holders
    assert len(vrrp_passwords(cli, masters)) == 1
    for conductor, keys in pins(cli, instance_id).items():
        assert keys and all(k['verified'] == 'console'
                            for k in keys.values()), (conductor, keys)


def kubelets(cli, master):
    """{node: kubelet version} as kubectl inside the master VM ``master``
    (its name or server id) reports, through ``cli`` (a LabCLI)."""
    nodes = json.loads(cli(
        'exec', master, '--', 'kubectl', '--kubeconfig',
        '/etc/kubernetes/admin.conf', 'get', 'nodes', '-o', 'json').stdout)
    return {n['metadata']['name']: n['status']['nodeInfo']['kubeletVersion']
            for n in nodes['items']}


def vip_url(cli):
    """The API's URL through the VIP, as the Kubernetes VIM the driver
    registered names it (``openstack vim show``), through ``cli``."""
    [vim] = [v for v in readme_session.openstack_json(cli, 'vim', 'list')
             if v['type'] == 'kubernetes']
    return readme_session.openstack_json(cli, 'vim', 'show',
                                         vim['id'])['authurl']
