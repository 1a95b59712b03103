"""The lab etcd's raft timing: the lab's slow-network tuning by default,
kubeadm's (etcd's defaults) when the layer asks for it."""

import json

import pytest

from k8s_mgmt_lab.kube import controlplane
from k8s_mgmt_lab.kube import layer


def _use(monkeypatch, tmp_path, **values):
    path = tmp_path / 'settings.json'
    path.write_text(json.dumps(values))
    monkeypatch.setenv('K8S_MGMT_STANDINS_FILE', str(path))


def test_default_is_the_lab_tuning(monkeypatch, tmp_path):
    _use(monkeypatch, tmp_path)
    assert controlplane.etcd_timing() == (250, 2500)


def test_kubeadm_timing_is_etcds_defaults(monkeypatch, tmp_path):
    _use(monkeypatch, tmp_path, etcd_timing='kubeadm')
    assert controlplane.etcd_timing() == (100, 1000)


def test_unknown_timing_is_named(monkeypatch, tmp_path):
    _use(monkeypatch, tmp_path, etcd_timing='fast')
    with pytest.raises(controlplane.Failure, match="etcd_timing 'fast'"):
        controlplane.etcd_timing()


def test_the_layer_carries_the_setting(tmp_path):
    directory = tmp_path / 'layer'
    layer.write_layer(str(directory), etcd_timing='kubeadm')
    files = list(directory.rglob('*.json'))
    values = [json.loads(f.read_text()) for f in files]
    assert any(v.get('etcd_timing') == 'kubeadm' for v in values), files
