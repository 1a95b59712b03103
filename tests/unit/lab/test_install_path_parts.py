"""The lab's parts of the install script's real install path: the image
hides the host's Kubernetes and container packages, the systemctl
stand-in starts a packaged unit from its unit file, the repository's
package payload, and the lab's requests naming the lab's repository."""

import os
import subprocess

from k8s_mgmt import shipped
from k8s_mgmt_lab import kube
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.kube import layer
from k8s_mgmt_lab.kube import systemctl
from k8s_mgmt_lab.machines import rootfs

STATUS = """Package: bash
Status: install ok installed
Version: 5.2

Package: kubectl
Status: install ok installed
Version: 1:528.0.0-0

Package: zlib1g
Status: install ok installed
Version: 1.2
"""


def test_the_image_hides_the_hosts_kubectl_package(tmp_path):
    host = tmp_path / 'host'
    info = host / 'info'
    info.mkdir(parents=True)
    (host / 'status').write_text(STATUS)
    tool = host / 'bin' / 'kubectl'
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\n')
    (info / 'kubectl.list').write_text('/.\n%s\n%s\n' % (tool.parent, tool))
    (info / 'kubectl.md5sums').write_text('')
    (info / 'bash.list').write_text('/bin/bash\n')
    image = tmp_path / 'image'
    hidden = rootfs.hide_packages(str(image), ('kubectl', 'kubeadm'),
                                  status_path=str(host / 'status'),
                                  info_dir=str(info))
    assert hidden == ['kubectl']
    status = (image / str(host / 'status').lstrip('/')).read_text()
    assert 'Package: kubectl' not in status
    assert 'Package: bash' in status and 'Package: zlib1g' in status
    for path in (tool, info / 'kubectl.list', info / 'kubectl.md5sums'):
        whiteout = os.lstat(str(image) + str(path))
        assert os.major(whiteout.st_rdev) == 0 and \
            (whiteout.st_mode & 0o170000) == 0o020000, path
    # Directories are not whited out, nor another package's files.
    assert os.path.isdir(str(image) + str(tool.parent))
    assert not os.path.lexists(str(image) + str(info / 'bash.list'))
    # Nothing of theirs installed: nothing to hide, the status untouched.
    assert rootfs.hide_packages(str(tmp_path / 'other'), ('runc',),
                                status_path=str(host / 'status'),
                                info_dir=str(info)) == []
    assert not (tmp_path / 'other').exists()


def test_docker_registry_runs_its_whole_exec_start_as_its_user(
        tmp_path, monkeypatch):
    lib = tmp_path / 'lib'
    lib.mkdir()
    (lib / 'docker-registry.service').write_text(
        '[Service]\nUser=docker-registry\nExecStart=/usr/bin/docker-registry'
        ' serve /etc/docker/registry/config.yml\n')
    monkeypatch.setattr(systemctl, 'UNIT_DIRS', (str(lib),))
    assert systemctl.unit_command('docker-registry') == (
        ['/usr/bin/docker-registry', 'serve',
         '/etc/docker/registry/config.yml'], 'docker-registry')
    assert systemctl.service_argv('docker-registry')[1:] == [
        'serve', '/etc/docker/registry/config.yml']
    # A User= the VM lacks fails the start, as systemd's would.
    monkeypatch.setattr(systemctl, 'PID_DIR', str(tmp_path / 'run'))
    assert systemctl.start('docker-registry') == 1


def test_a_packaged_unit_starts_its_exec_start_and_a_missing_one_is_not_found(
        tmp_path, monkeypatch):
    lib = tmp_path / 'lib'
    etc = tmp_path / 'etc'
    (lib / 'kubelet.service.d').mkdir(parents=True)
    (lib / 'kubelet.service').write_text(
        '[Service]\nExecStart=/usr/bin/kubelet\nRestart=always\n')
    (lib / 'kubelet.service.d' / '10-kubeadm.conf').write_text(
        '[Service]\nExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_ARGS\n')
    monkeypatch.setattr(systemctl, 'UNIT_DIRS', (str(etc), str(lib)))
    assert systemctl.exec_start('kubelet') == ['/usr/bin/kubelet']
    assert systemctl.service_argv('kubelet') == ['/usr/bin/kubelet']
    # An admin's unit in /etc wins (kubespray writes one there).
    etc.mkdir()
    (etc / 'kubelet.service').write_text(
        '[Service]\nExecStart=-/usr/local/bin/kubelet\n')
    assert systemctl.unit_files('kubelet')[0] == str(etc /
                                                     'kubelet.service')
    # The package's drop-in still applies, as systemd reads it.
    assert systemctl.exec_start('kubelet') == ['/usr/bin/kubelet']
    (etc / 'kubelet.service.d').mkdir()
    (etc / 'kubelet.service.d' / '10-kubeadm.conf').write_text(
        '[Service]\nExecStart=\nExecStart=/usr/local/bin/kubelet\n')
    assert systemctl.exec_start('kubelet') == ['/usr/local/bin/kubelet']
    assert systemctl.exec_start('containerd') is None
    assert systemctl.main(['start', 'containerd']) == 5


def test_the_package_wrapper_tells_the_stand_in_its_version(tmp_path):
    payload = layer.package_payload()
    wrapper = tmp_path / 'kubeadm'
    wrapper.write_text(payload('kubeadm', '1.33.1'))
    fast = subprocess.run(['sh', str(wrapper), 'version', '-o', 'short'],
                          capture_output=True, text=True, check=True)
    assert fast.stdout == 'v1.33.1\n'
    assert '%s=v1.33.1' % kube.VERSION_ENV in wrapper.read_text()
    assert 'stand-in' in payload('crictl', '1.33.0')
    assert 'v1.33.0' in payload('crictl', '1.33.0')


def test_lab_requests_name_the_labs_repository_but_kubesprays():
    url = manager.repository_url('10.254.215.0/24')
    assert url == 'http://10.254.215.1:%d/core:/stable:/' % (
        manager.REPOSITORY_PORT)
    body = manager.sample_on_subnet(shipped.sample_request('storage'),
                                    '10.254.215.0/24')
    root = body['additionalParams']['k8s_cluster_installation_param']
    assert root['kubernetes_apt_repository'] == {'url': url}
    body = manager.sample_on_subnet(shipped.sample_request('kubespray'),
                                    '10.254.215.0/24')
    root = body['additionalParams']['k8s_cluster_installation_param']
    assert 'kubernetes_apt_repository' not in root
