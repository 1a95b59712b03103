"""install_k8s_cluster.sh -o DIR: the generated kubeadm and proxy files."""

import ipaddress
import stat

import pytest
import yaml

from tests.functional.scripts.script_helpers import (
    CA_HASH, CERT_KEY, INSTALL, PROXY_PASSWORD, PROXY_URL, TOKEN,
    run_script)

VIP = '10.0.0.100'
ENDPOINT = VIP + ':16443'
NODE_CIDR = '10.0.0.0/24'
SECRETS = 'token=%s\ncertificate_key=%s\nhttps_proxy=%s\nhttp_proxy=%s\n' % (
    TOKEN, CERT_KEY, PROXY_URL, PROXY_URL)


def render(tmp_path, mode, *args, stdin='', env=None):
    out = tmp_path / mode
    result = run_script(INSTALL, [mode, '-o', str(out)] + list(args),
                        stdin=stdin, env=env)
    assert result.returncode == 0, result.stderr
    for secret in (TOKEN, CERT_KEY, PROXY_PASSWORD):
        assert secret not in result.stdout + result.stderr
    return out


def docs_by_kind(path):
    docs = list(yaml.safe_load_all(path.read_text()))
    kinds = [doc['kind'] for doc in docs]
    assert len(kinds) == len(set(kinds))
    return {doc['kind']: doc for doc in docs}


def render_ha_init(tmp_path, script_env, *extra, stdin=''):
    return render(tmp_path, 'init', '-a', '10.0.0.11', '-H', 'master-1',
                  '-e', ENDPOINT, '-A', '-P', '172.16.0.0/16',
                  '-S', '10.112.0.0/12', '-C', NODE_CIDR, *extra,
                  stdin=stdin, env=script_env)


def test_init_config_kinds_networks_endpoint(tmp_path, script_env):
    out = render_ha_init(tmp_path, script_env, '-F', '203.0.113.7,api.lab')
    docs = docs_by_kind(out / 'kubeadm-init.yaml')
    assert set(docs) == {'InitConfiguration', 'ClusterConfiguration',
                         'KubeletConfiguration'}
    init, cluster = docs['InitConfiguration'], docs['ClusterConfiguration']
    assert init['apiVersion'] == 'kubeadm.k8s.io/v1beta4'
    assert init['localAPIEndpoint'] == {'advertiseAddress': '10.0.0.11',
                                        'bindPort': 6443}
    registration = init['nodeRegistration']
    assert registration['name'] == 'master-1'
    assert registration['criSocket'] == (
        'unix:///run/containerd/containerd.sock')
    assert registration['kubeletExtraArgs'] == [{'name': 'node-ip',
                                                 'value': '10.0.0.11'}]
    assert cluster['controlPlaneEndpoint'] == ENDPOINT
    assert cluster['networking']['podSubnet'] == '172.16.0.0/16'
    assert cluster['networking']['serviceSubnet'] == '10.112.0.0/12'
    assert cluster['apiServer']['certSANs'] == ['203.0.113.7', 'api.lab']
    # The stand-in kubeadm on PATH reports v1.35.2: the config pins it.
    assert cluster['kubernetesVersion'] == 'v1.35.2'
    assert docs['KubeletConfiguration']['cgroupDriver'] == 'systemd'


def test_init_without_matching_kubeadm_uses_minor_label(tmp_path):
    out = render(tmp_path, 'init', '-a', '10.0.0.11', '-H', 'm1',
                 '-k', '1.36', env={'PATH': '/usr/bin:/bin'})
    cluster = docs_by_kind(out / 'kubeadm-init.yaml')['ClusterConfiguration']
    assert cluster['kubernetesVersion'] == 'stable-1.36'
    assert 'controlPlaneEndpoint' not in cluster
    assert 'pkgs.k8s.io/core:/stable:/v1.36/deb/' in (
        out / 'kubernetes.list').read_text()


def test_v1beta3_for_1_30_uses_map_extra_args(tmp_path):
    out = render(tmp_path, 'init', '-a', '10.0.0.11', '-H', 'm1',
                 '-k', '1.30', env={'PATH': '/usr/bin:/bin'})
    init = docs_by_kind(out / 'kubeadm-init.yaml')['InitConfiguration']
    assert init['apiVersion'] == 'kubeadm.k8s.io/v1beta3'
    assert init['nodeRegistration']['kubeletExtraArgs'] == {
        'node-ip': '10.0.0.11'}


def join_args(mode, address):
    return [mode, '-a', address, '-e', ENDPOINT, '-t', CA_HASH,
            '-C', NODE_CIDR, '-s', '-']


@pytest.mark.parametrize('mode, has_cert_key', [('join-master', True),
                                                ('join-worker', False)])
def test_join_config(tmp_path, script_env, mode, has_cert_key):
    args = join_args(mode, '10.0.0.12')[1:] + ['-H', 'node-2']
    out = render(tmp_path, mode, *args, stdin=SECRETS, env=script_env)
    path = out / 'kubeadm-join.yaml'
    docs = docs_by_kind(path)
    assert set(docs) == {'JoinConfiguration'}
    join = docs['JoinConfiguration']
    assert join['discovery']['bootstrapToken'] == {
        'apiServerEndpoint': ENDPOINT, 'token': TOKEN,
        'caCertHashes': [CA_HASH]}
    assert join['nodeRegistration']['name'] == 'node-2'
    if has_cert_key:
        assert join['controlPlane'] == {
            'localAPIEndpoint': {'advertiseAddress': '10.0.0.12',
                                 'bindPort': 6443},
            'certificateKey': CERT_KEY}
    else:
        assert 'controlPlane' not in join
        assert CERT_KEY not in path.read_text()


def test_secrets_only_where_needed_and_files_0600(tmp_path, script_env):
    init_out = render_ha_init(tmp_path, script_env)
    worker = render(tmp_path, 'join-worker',
                    *join_args('join-worker', '10.0.0.21')[1:],
                    stdin=SECRETS, env=script_env)
    master = render(tmp_path, 'join-master',
                    *join_args('join-master', '10.0.0.12')[1:],
                    stdin=SECRETS, env=script_env)
    init_text = (init_out / 'kubeadm-init.yaml').read_text()
    assert TOKEN not in init_text and CERT_KEY not in init_text
    assert 'token' not in init_text.lower()
    assert TOKEN in (worker / 'kubeadm-join.yaml').read_text()
    assert CERT_KEY in (master / 'kubeadm-join.yaml').read_text()
    for out in (init_out, worker, master):
        files = list(out.iterdir())
        assert files
        for path in files:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # The kubeadm files are the only files holding join secrets.
    for out in (worker, master):
        for path in out.iterdir():
            if path.name != 'kubeadm-join.yaml':
                text = path.read_text()
                assert TOKEN not in text and CERT_KEY not in text


def no_proxy_entries(text):
    for line in text.splitlines():
        if line.startswith('no_proxy='):
            return line.split('=', 1)[1].strip("'").split(',')
    raise AssertionError('no no_proxy line in %r' % text)


def test_no_proxy_holds_cidrs_not_address_lists(tmp_path, script_env):
    out = render_ha_init(tmp_path, script_env, '-x', 'registry.lab,.lab',
                         '-s', '-', stdin=SECRETS)
    entries = no_proxy_entries((out / 'proxy.env').read_text())
    for needed in ('localhost', '127.0.0.1', '.svc', '.cluster.local',
                   '172.16.0.0/16', '10.112.0.0/12', NODE_CIDR, VIP,
                   'registry.lab', '.lab'):
        assert needed in entries
    assert len(entries) == len(set(entries))
    node_net = ipaddress.ip_network(NODE_CIDR)
    single = [e for e in entries
              if e[0].isdigit() and '/' not in e and e != '127.0.0.1'
              and ipaddress.ip_address(e) in node_net]
    assert single == [VIP]  # the VIP only; never one entry per node
    assert len(entries) < 15


def test_proxy_files_for_apt_containerd_and_shell(tmp_path, script_env):
    secrets = 'https_proxy=http://u:p%40ss@proxy.lab:3128\n'
    out = render(tmp_path, 'init', '-a', '10.0.0.11', '-H', 'm1',
                 '-C', NODE_CIDR, '-s', '-', stdin=secrets, env=script_env)
    apt = (out / 'apt-proxy.conf').read_text()
    assert apt == 'Acquire::https::Proxy "http://u:p%40ss@proxy.lab:3128";\n'
    dropin = (out / 'containerd-proxy.conf').read_text().splitlines()
    assert dropin[0] == '[Service]'
    # systemd would expand %4 as a specifier; %% keeps the literal %.
    assert ('Environment="HTTPS_PROXY=http://u:p%%40ss@proxy.lab:3128"'
            in dropin)
    assert any(line.startswith('Environment="NO_PROXY=') and NODE_CIDR in line
               for line in dropin)
    assert 'http_proxy' not in (out / 'proxy.env').read_text()
    snippet = (out / 'profile-proxy.sh').read_text()
    assert '/var/lib/k8s-mgmt/proxy.env' in snippet


def test_no_proxy_files_without_a_proxy(tmp_path, script_env):
    out = render(tmp_path, 'init', '-a', '10.0.0.11', '-H', 'm1',
                 env=script_env)
    assert sorted(p.name for p in out.iterdir()) == [
        'kubeadm-init.yaml', 'kubernetes.list', 'modules-k8s.conf',
        'sysctl-k8s.conf']
    assert (out / 'modules-k8s.conf').read_text().split() == [
        'overlay', 'br_netfilter']
    sysctl = (out / 'sysctl-k8s.conf').read_text()
    assert 'net.ipv4.ip_forward = 1' in sysctl
    assert 'net.bridge.bridge-nf-call-iptables = 1' in sysctl
