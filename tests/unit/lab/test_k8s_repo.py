"""The lab's stand-in for pkgs.k8s.io, without gpg: its paths, its
packages, Packages and Release, and the cache of ``.deb`` files (built with
the real dpkg-deb). Signing and apt-get reading the served repository are
in tests/functional/lab/test_k8s_repo_apt.py."""

import gzip
import hashlib
import os
import shutil
import subprocess

import pytest

from k8s_mgmt import shipped
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import k8s_repo

needs_dpkg_deb = pytest.mark.skipif(not shutil.which('dpkg-deb'),
                                    reason='needs dpkg-deb')


def payload(tool, version):
    return '#!/bin/sh\necho "%s %s"\n' % (tool, version)


def by_name(pkgs):
    return {(pkg.name, pkg.version): pkg for pkg in pkgs}


def fields(stanza):
    """A stanza's fields, continuation lines left out."""
    return dict(line.split(': ', 1) for line in stanza.splitlines()
                if line and not line.startswith(' '))


def test_paths_and_source_line_are_pkgs_k8s_io_s():
    assert k8s_repo.minor_dir('/srv/repo', 35) == \
        '/srv/repo/core:/stable:/v1.35/deb'
    base = k8s_repo.base_url('10.254.3.1', 8088)
    assert base == 'http://10.254.3.1:8088/core:/stable:/'
    assert k8s_repo.source_line(base, 35, '/etc/apt/keyrings/k.gpg') == (
        'deb [signed-by=/etc/apt/keyrings/k.gpg] '
        'http://10.254.3.1:8088/core:/stable:/v1.35/deb/ /')
    assert k8s_repo.base_url('fd00::1', 80) == \
        'http://[fd00::1]:80/core:/stable:/'
    assert k8s_repo.versions(35) == ['1.35.0-1.1', '1.35.1-1.1']
    assert k8s_repo.versions(30, patches=(4,)) == ['1.30.4-1.1']


def test_every_minor_has_the_tools_cri_tools_and_cni():
    seen = []
    pkgs = by_name(k8s_repo.packages(
        35, lambda tool, version: seen.append((tool, version)) or 'x'))
    assert sorted(pkgs) == sorted(
        [(name, version) for name in ('kubeadm', 'kubelet', 'kubectl')
         for version in ('1.35.0-1.1', '1.35.1-1.1')] +
        [('cri-tools', '1.35.0-1.1'), ('kubernetes-cni', '1.7.1-1.1')])
    assert ('kubeadm', '1.35.1') in seen and ('crictl', '1.35.0') in seen
    assert pkgs['kubeadm', '1.35.1-1.1'].depends == 'cri-tools (>= 1.35.0)'
    assert pkgs['kubelet', '1.35.0-1.1'].depends == \
        'kubernetes-cni (>= 1.1.1)'
    assert pkgs['kubectl', '1.35.0-1.1'].depends is None
    assert len(shipped.SUPPORTED_MINORS) >= 1


def test_files_are_under_usr_and_executables_0755():
    files = {}
    for pkg in k8s_repo.packages(35, payload):
        for path, mode, data in pkg.files:
            files[path] = (mode, data)
    for path, (mode, data) in files.items():
        assert path.startswith(('usr/', 'opt/cni/bin/')), path  # merged /usr
        assert mode == (0o644 if path.startswith('usr/lib/') else 0o755)
    assert files['usr/bin/crictl'][1] == payload('crictl', '1.35.0').encode()
    assert {'usr/bin/kubeadm', 'usr/bin/kubelet', 'usr/bin/kubectl',
            'opt/cni/bin/bridge', 'opt/cni/bin/host-local',
            'opt/cni/bin/loopback', 'opt/cni/bin/portmap'} <= set(files)
    dropin = files['usr/lib/systemd/system/kubelet.service.d/'
                   '10-kubeadm.conf'][1].decode()
    assert 'EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n' in dropin
    assert 'EnvironmentFile=-/etc/default/kubelet\n' in dropin
    assert ('ExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS'
            ' $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS'
            '\n') in dropin
    unit = files['usr/lib/systemd/system/kubelet.service'][1].decode()
    for line in ('ExecStart=/usr/bin/kubelet', 'Restart=always',
                 'WantedBy=multi-user.target'):
        assert line + '\n' in unit


def test_a_mapping_payload_and_a_missing_tool():
    texts = {tool: '#!/bin/sh\n' for tool in k8s_repo.TOOLS}
    assert k8s_repo.packages(30, texts)
    del texts['crictl']
    with pytest.raises(LabError, match='no executable for crictl 1.30.0'):
        k8s_repo.packages(30, texts)


def test_control_says_it_is_a_stand_in():
    pkg = by_name(k8s_repo.packages(35, payload))['kubeadm', '1.35.0-1.1']
    text = k8s_repo.control(pkg)
    control = fields(text)
    assert control['Package'] == 'kubeadm'
    assert control['Architecture'] == 'amd64'
    assert 'k8s-mgmt lab' in control['Maintainer']
    assert 'stand-in, not Kubernetes' in control['Description']
    assert text.endswith('\n') and '\n\n' not in text


def test_packages_stanza(tmp_path):
    pkg = by_name(k8s_repo.packages(35, payload))['kubelet', '1.35.1-1.1']
    deb = tmp_path / 'some.deb'
    deb.write_bytes(b'not really a deb')
    stanza = k8s_repo.stanza(pkg, str(deb),
                             'amd64/kubelet_1.35.1-1.1_amd64.deb')
    got = fields(stanza)
    assert got['Package'] == 'kubelet'
    assert got['Version'] == '1.35.1-1.1'
    assert got['Depends'] == 'kubernetes-cni (>= 1.1.1)'
    assert got['Filename'] == 'amd64/kubelet_1.35.1-1.1_amd64.deb'
    assert got['Size'] == '16'
    assert got['SHA256'] == hashlib.sha256(b'not really a deb').hexdigest()
    assert got['MD5sum'] == hashlib.md5(b'not really a deb').hexdigest()
    # Description last, its long lines indented, as dpkg writes stanzas.
    assert stanza.splitlines()[-4].startswith('Description: ')
    assert stanza.endswith('machine.\n')


def test_release_lists_the_indexes_with_size_and_hashes():
    files = {'Packages': b'abc', 'Packages.gz': gzip.compress(b'abc')}
    text = k8s_repo.release(files, 35, 0)
    head = fields(text.split('MD5Sum:')[0])
    assert head['Architectures'] == 'amd64'
    assert head['Date'] == 'Thu, 01 Jan 1970 00:00:00 GMT'
    assert 'v1.35' in head['Label']
    sha = text.split('SHA256:\n')[1].splitlines()
    assert sha[0].split() == [hashlib.sha256(b'abc').hexdigest(), '3',
                              'Packages']
    assert sha[1].split()[1:] == [str(len(files['Packages.gz'])),
                                  'Packages.gz']
    md5 = text.split('MD5Sum:\n')[1].splitlines()[0]
    assert md5.split() == [hashlib.md5(b'abc').hexdigest(), '3', 'Packages']


@needs_dpkg_deb
def test_one_minor_s_layout_and_release(tmp_path):
    directory = k8s_repo.minor_dir(str(tmp_path / 'root'), 35)
    pkgs = k8s_repo.packages(35, payload, patches=(1,))
    k8s_repo.write_unsigned(directory, 35, pkgs, str(tmp_path / 'cache'),
                            1767225600)
    assert sorted(os.listdir(directory)) == [
        'Packages', 'Packages.gz', 'Release', 'amd64']
    assert sorted(os.listdir(os.path.join(directory, 'amd64'))) == [
        'cri-tools_1.35.0-1.1_amd64.deb', 'kubeadm_1.35.1-1.1_amd64.deb',
        'kubectl_1.35.1-1.1_amd64.deb', 'kubelet_1.35.1-1.1_amd64.deb',
        'kubernetes-cni_1.7.1-1.1_amd64.deb']
    with open(os.path.join(directory, 'Packages'), 'rb') as f:
        index = f.read()
    with open(os.path.join(directory, 'Packages.gz'), 'rb') as f:
        assert gzip.decompress(f.read()) == index
    for stanza in index.decode().split('\n\n'):
        got = fields(stanza)
        with open(os.path.join(directory, got['Filename']), 'rb') as f:
            data = f.read()
        assert got['Size'] == str(len(data))
        assert got['SHA256'] == hashlib.sha256(data).hexdigest()
    with open(os.path.join(directory, 'Release')) as f:
        release = f.read()
    assert release == k8s_repo.release(
        {name: open(os.path.join(directory, name), 'rb').read()
         for name in ('Packages', 'Packages.gz')}, 35, 1767225600)
    listing = subprocess.run(
        ['dpkg-deb', '-c', os.path.join(directory, 'amd64',
                                        'kubeadm_1.35.1-1.1_amd64.deb')],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    assert '-rwxr-xr-x root/root' in listing and \
        ' ./usr/bin/kubeadm\n' in listing


@needs_dpkg_deb
def test_the_cache_keeps_debs_until_the_payload_changes(tmp_path):
    cache = str(tmp_path / 'cache')
    os.makedirs(cache)
    [kubectl] = [pkg for pkg in k8s_repo.packages(35, payload, patches=(0,))
                 if pkg.name == 'kubectl']
    first = k8s_repo.cached_deb(kubectl, cache)
    before = os.stat(first)
    assert k8s_repo.cached_deb(kubectl, cache) == first
    after = os.stat(first)
    assert (after.st_ino, after.st_mtime_ns) == \
        (before.st_ino, before.st_mtime_ns)
    changed = [pkg for pkg in k8s_repo.packages(
        35, lambda tool, version: payload(tool, version) + '# new\n',
        patches=(0,)) if pkg.name == 'kubectl'][0]
    second = k8s_repo.cached_deb(changed, cache)
    assert second != first
    assert sorted(os.listdir(cache)) == sorted(
        os.path.basename(path) for path in (first, second))
    mode_only = changed._replace(files=tuple(
        (path, 0o700, data) for path, _, data in changed.files))
    assert k8s_repo.cache_key(mode_only) != k8s_repo.cache_key(changed)


@needs_dpkg_deb
def test_dpkg_deb_failing_is_one_line(tmp_path):
    bad = k8s_repo.Package('Not_A_Name', '1.0-1', None, 'bad',
                           (('usr/bin/x', 0o755, b'#!/bin/sh\n'),))
    with pytest.raises(LabError) as failed:
        k8s_repo.cached_deb(bad, str(tmp_path))
    message = str(failed.value)
    assert message.startswith('dpkg-deb failed (exit 2): ')
    assert '\n' not in message
    assert os.listdir(str(tmp_path)) == []  # no half-made entry


def test_key_and_cache_must_not_be_served(tmp_path):
    root = tmp_path / 'root'
    with pytest.raises(LabError, match='must not be under the served'):
        k8s_repo.build(str(root), str(root / 'gnupg'), str(tmp_path / 'c'),
                       payload, minors=(35,))
    with pytest.raises(LabError, match='package cache'):
        k8s_repo.build(str(root), str(tmp_path / 'g'), str(root / 'c'),
                       payload, minors=(35,))
    assert not root.exists() and not (tmp_path / 'g').exists()
