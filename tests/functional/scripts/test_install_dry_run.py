"""install_k8s_cluster.sh -n: the plan of a run, without changing anything.

A dry run reads the node (here: this host, read-only, plus a fake
/etc/kubernetes and state directory) and prints each command and file it
would write, with secrets masked. These tests check the decisions that make
re-runs safe: kept packages, skipped or resumed kubeadm steps.
"""

import pytest

from tests.functional.scripts.script_helpers import (
    CA_HASH, CERT_KEY, INSTALL, TOKEN, run_script)

SECRETS = 'token=%s\ncertificate_key=%s\n' % (TOKEN, CERT_KEY)


@pytest.fixture
def node(tmp_path, script_env):
    dirs = {name: tmp_path / name for name in ('k8s', 'state', 'run')}
    for path in dirs.values():
        path.mkdir()
    env = dict(script_env, K8S_MGMT_KUBERNETES_DIR=str(dirs['k8s']),
               K8S_MGMT_STATE_DIR=str(dirs['state']),
               K8S_MGMT_RUN_DIR=str(dirs['run']))
    return dict(dirs, env=env)


def snapshot(node):
    return {name: sorted(p.name for p in node[name].iterdir())
            for name in ('k8s', 'state', 'run')}


def dry_run(node, mode, *args, stdin=''):
    before = snapshot(node)
    result = run_script(INSTALL, [mode, '-n'] + list(args), stdin=stdin,
                        env=node['env'])
    assert result.returncode == 0, result.stderr
    for secret in (TOKEN, CERT_KEY):
        assert secret not in result.stdout + result.stderr
    # Nothing was written, not even the temporary join config.
    assert snapshot(node) == before
    return result


def commands(result):
    return [line[2:] for line in result.stdout.splitlines()
            if line.startswith('+ ')]


def test_join_master_plan_masks_secrets_and_keeps_packages(node):
    result = dry_run(node, 'join-master', '-a', '10.0.0.12',
                     '-e', '10.0.0.100:16443', '-t', CA_HASH, '-s', '-',
                     stdin=SECRETS)
    planned = commands(result)
    join = '%s/k8s-mgmt-join.yaml' % node['run']
    assert 'kubeadm join --config %s' % join in planned
    assert '    token: "***"' in result.stdout
    assert '  certificateKey: "***"' in result.stdout
    # The stand-ins report v1.35.2: kept, so no Kubernetes packages from apt.
    assert 'already installed; kept' in result.stderr
    assert not [c for c in planned if 'apt-get' in c and 'kube' in c]
    assert not any(c.startswith('kubeadm init') for c in planned)


def test_joined_node_is_skipped(node):
    (node['state'] / 'join.done').touch()
    result = dry_run(node, 'join-worker', '-e', '10.0.0.100:16443',
                     '-t', CA_HASH, '-s', '-', stdin=SECRETS)
    assert 'already joined; skipped' in result.stderr
    assert not [c for c in commands(result) if c.startswith('kubeadm')]


def test_worker_with_kubelet_conf_is_not_joined_again(node):
    (node['k8s'] / 'kubelet.conf').touch()
    result = dry_run(node, 'join-worker', '-e', '10.0.0.100:16443',
                     '-t', CA_HASH, '-s', '-', stdin=SECRETS)
    assert 'worker already joined' in result.stderr
    assert not [c for c in commands(result) if c.startswith('kubeadm join')]


def test_first_init_plan_uploads_certs(node):
    result = dry_run(node, 'init', '-a', '10.0.0.11', '-e',
                     '10.0.0.100:16443', '-A', '-c', 'none')
    config = '%s/k8s-mgmt/kubeadm-init.yaml' % node['k8s']
    assert ('kubeadm init --config %s --skip-token-print --upload-certs '
            '--skip-certificate-key-print' % config) in (
        commands(result))
    assert 'kind: InitConfiguration' in result.stdout


def test_init_report_plans_the_join_data_and_the_vim_token(node):
    # -R: what print-join and token-secret would do, in the init's own run.
    result = dry_run(node, 'init', '-a', '10.0.0.11', '-e',
                     '10.0.0.100:16443', '-A', '-R', '-c', 'none')
    planned = commands(result)
    init = planned.index(next(c for c in planned
                              if c.startswith('kubeadm init --config')))
    token = planned.index('kubeadm token create --ttl 2h')
    certs = planned.index(next(c for c in planned if c.startswith(
        'kubeadm init phase upload-certs --upload-certs')))
    vim = planned.index(next(c for c in planned if c.startswith(
        'kubectl --kubeconfig') and c.endswith('apply -f -')))
    assert init < token < certs < vim
    assert 'kind: ServiceAccount' in result.stdout


def test_interrupted_init_is_resumed_not_repeated(node):
    # admin.conf exists and the API answers (the stand-in kubectl succeeds),
    # but init never finished: the phases after the control plane re-run.
    (node['k8s'] / 'admin.conf').write_text('kind: Config\n')
    result = dry_run(node, 'init', '-a', '10.0.0.11', '-c', 'none')
    planned = commands(result)
    config = '%s/k8s-mgmt/kubeadm-init.yaml' % node['k8s']
    assert 'continuing an interrupted kubeadm init' in result.stderr
    for phase in ('upload-config all', 'mark-control-plane',
                  'bootstrap-token', 'kubelet-finalize all', 'addon all'):
        # The phase that makes a token is told not to print it.
        skip = ' --skip-token-print' if phase == 'bootstrap-token' else ''
        assert 'kubeadm init phase %s --config %s%s' % (
            phase, config, skip) in planned
    assert not [c for c in planned if c.startswith('kubeadm init --config')]
    assert not [c for c in planned if c.startswith('kubeadm reset')]


def test_finished_init_is_skipped_and_cni_applied_once(node):
    (node['k8s'] / 'admin.conf').write_text('kind: Config\n')
    (node['state'] / 'init.done').touch()
    (node['state'] / 'cni.applied').write_text('/opt/cni.yaml\n')
    result = dry_run(node, 'init', '-a', '10.0.0.11', '-c', '/opt/cni.yaml')
    assert 'kubeadm init already done; skipped' in result.stderr
    assert 'CNI manifest already applied; skipped' in result.stderr
    planned = commands(result)
    assert not [c for c in planned if c.startswith(('kubeadm', 'kubectl'))]


def test_prepared_join_skips_the_prepare_checks_but_joins(node):
    args = ['-e', '10.0.0.100:16443', '-t', CA_HASH, '-s', '-']
    full = dry_run(node, 'join-worker', *args, stdin=SECRETS)
    prepared = dry_run(node, 'join-worker', '-p', *args, stdin=SECRETS)
    join = 'kubeadm join --config %s/k8s-mgmt-join.yaml' % node['run']
    assert join in commands(full) and join in commands(prepared)
    # Without -p the join re-checks what prepare does (containerd,
    # packages); with it, none of that runs: the join is all there is.
    assert '==> containerd' in full.stderr
    assert 'already installed; kept' in full.stderr
    assert '==> containerd' not in prepared.stderr
    assert 'already installed; kept' not in prepared.stderr
    assert "prepare run; its checks skipped" in prepared.stderr
    assert [c for c in commands(prepared) if 'systemctl' in c] == []


@pytest.mark.parametrize('mode', ['print-join', 'prepare', 'token-secret'])
def test_prepared_is_refused_outside_init_and_joins(node, mode):
    result = run_script(INSTALL, [mode, '-n', '-p'], env=node['env'])
    assert result.returncode == 2
    assert '-p is for init and the joins only' in result.stderr
