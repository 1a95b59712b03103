"""The lab's stand-in for pkgs.k8s.io read by the real apt-get.

The repository is built with the real gpg and dpkg-deb, served on
loopback, and read by apt-get under a configuration of the test's own
(APT_CONFIG: its own lists, cache, status file and sources, none of the
host's settings), so nothing on the machine changes. The keyring is made
as operators make it: Release.key fetched over HTTP, through
``gpg --dearmor``.
"""

import os
import shutil
import subprocess
import threading
import urllib.error
import urllib.request

import pytest

from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import k8s_repo
from k8s_mgmt_lab.machines import repo_server
from k8s_mgmt_lab.machines import repo_signing

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in
            ('gpg', 'gpgconf', 'dpkg-deb', 'apt-get')),
    reason='needs gpg, dpkg-deb and apt-get')

MINORS = (34, 35)


def payload(tool, version):
    return '#!/bin/sh\necho "%s %s (test stand-in)"\n' % (tool, version)


@pytest.fixture(scope='module')
def kept(tmp_path_factory):
    """The signing key's home and the package cache, shared by the tests
    (the first build makes them)."""
    base = tmp_path_factory.mktemp('k8s-repo-kept')
    return {'gnupg_home': str(base / 'gnupg'), 'cache': str(base / 'cache')}


@pytest.fixture
def served(kept, tmp_path):
    """A repository of MINORS of the test's own, served on 127.0.0.1."""
    root = str(tmp_path / 'root')
    k8s_repo.build(root, kept['gnupg_home'], kept['cache'], payload,
                   minors=MINORS)
    assert repo_signing.agents(kept['gnupg_home']) == []
    server = repo_server.serve(root, '127.0.0.1',
                               log_path=str(tmp_path / 'access.log'))
    server.root = root
    yield server
    server.close()
    assert not [t for t in threading.enumerate()
                if t.name == 'k8s-repo-%d' % server.port]


def keyring(url, minor, path):
    """Release.key through gpg --dearmor, into ``path``."""
    with urllib.request.urlopen('%sv1.%d/deb/Release.key'
                                % (url, minor), timeout=10) as answer:
        armored = answer.read()
    assert armored.startswith(b'-----BEGIN PGP PUBLIC KEY BLOCK-----')
    subprocess.run(['gpg', '--dearmor', '--output', str(path)],
                   input=armored, check=True, env=_gpg_env(path))
    return str(path)


def _gpg_env(path):
    # --dearmor needs no keys; a scratch home keeps gpg off ~/.gnupg.
    home = str(path) + '.gnupg'
    os.makedirs(home, mode=0o700, exist_ok=True)
    return dict(os.environ, GNUPGHOME=home)


def apt(directory, source, *argv):
    """apt-get or apt-cache with nothing of the host's configuration, under
    ``directory`` (a fresh one is a fresh apt: no lists yet)."""
    state = directory / 'state'
    for sub in ('lists/partial', 'cache/archives/partial', 'etc/apt.conf.d',
                'etc/preferences.d', 'log'):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / 'status').write_text('')
    (state / 'sources.list').write_text(source + '\n')
    conf = directory / 'apt.conf'
    conf.write_text(
        'Dir "%(s)s/";\n'
        'Dir::State "%(s)s/";\n'
        'Dir::State::Lists "%(s)s/lists/";\n'
        'Dir::State::status "%(s)s/status";\n'
        'Dir::Cache "%(s)s/cache/";\n'
        'Dir::Etc "%(s)s/etc/";\n'
        'Dir::Etc::sourcelist "%(s)s/sources.list";\n'
        'Dir::Etc::sourceparts "-";\n'
        'Dir::Log "%(s)s/log/";\n'
        'APT::Sandbox::User "root";\n'
        'APT::Architecture "amd64";\n'
        'APT::Get::List-Cleanup "0";\n'
        'Acquire::Languages "none";\n'
        'Acquire::Retries "0";\n'
        'Acquire::http::Proxy "DIRECT";\n'
        'Acquire::http::Timeout "10";\n' % {'s': state})
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
           'APT_CONFIG': str(conf), 'LC_ALL': 'C'}
    return subprocess.run(list(argv), cwd=str(directory),
                          env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60)


def test_apt_get_downloads_a_package_of_the_signed_repository(served,
                                                              tmp_path):
    ring = keyring(served.url, 35, tmp_path / 'kubernetes-apt-keyring.gpg')
    source = k8s_repo.source_line(served.url, 35, ring)
    work = tmp_path / 'apt'
    work.mkdir()
    update = apt(work, source, 'apt-get', 'update')
    assert update.returncode == 0, update.stdout
    assert 'W:' not in update.stdout and 'E:' not in update.stdout, \
        update.stdout
    madison = apt(work, source, 'apt-cache', 'madison', 'kubeadm')
    found = sorted(line.split('|')[1].strip()
                   for line in madison.stdout.splitlines())
    assert found == k8s_repo.versions(35)
    download = apt(work, source, 'apt-get', 'download',
                   'kubeadm=1.35.1-1.1', 'kubernetes-cni', 'cri-tools')
    assert download.returncode == 0, download.stdout
    deb = work / 'kubeadm_1.35.1-1.1_amd64.deb'
    listing = subprocess.run(['dpkg-deb', '-c', str(deb)], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
    assert ' ./usr/bin/kubeadm\n' in listing
    assert '-rwxr-xr-x root/root' in listing
    assert ('./usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf'
            in listing)
    fields = subprocess.run(['dpkg-deb', '-f', str(deb), 'Depends'],
                            check=True, stdout=subprocess.PIPE,
                            text=True).stdout
    assert fields.strip() == 'cri-tools (>= 1.35.0)'
    assert (work / 'kubernetes-cni_1.7.1-1.1_amd64.deb').exists()
    assert (work / 'cri-tools_1.35.0-1.1_amd64.deb').exists()
    # apt asked for the paths pkgs.k8s.io has, ':' and all.
    log = (tmp_path / 'access.log').read_text()
    assert '/core:/stable:/v1.35/deb/InRelease' in log.replace('%3a', ':')


def test_an_index_changed_after_signing_fails_the_update(served, tmp_path):
    ring = keyring(served.url, 35, tmp_path / 'keyring.gpg')
    source = k8s_repo.source_line(served.url, 35, ring)
    directory = k8s_repo.minor_dir(served.root, 35)
    index = os.path.join(directory, 'Packages')
    with open(index, 'rb') as f:
        data = f.read()
    tampered = data.replace(b'Version: 1.35.1-1.1', b'Version: 1.35.2-1.1')
    assert tampered != data
    with open(index, 'wb') as f:
        f.write(tampered)
    # Whichever index apt takes, the compressed one says the same.
    subprocess.run(['gzip', '-9nf', '--keep', index], check=True)
    work = tmp_path / 'apt'
    work.mkdir()
    update = apt(work, source, 'apt-get', 'update')
    assert update.returncode != 0, update.stdout
    assert 'Hash Sum mismatch' in update.stdout or \
        'unexpected size' in update.stdout, update.stdout
    assert apt(work, source, 'apt-get', 'download',
               'kubeadm=1.35.2-1.1').returncode != 0


def test_a_key_of_another_repository_fails_the_update(served, tmp_path):
    other = tmp_path / 'other'
    k8s_repo.build(str(other / 'root'), str(other / 'gnupg'),
                   str(other / 'cache'), payload, minors=(35,))
    with repo_server.serve(str(other / 'root'), '127.0.0.1') as second:
        ring = keyring(second.url, 35, tmp_path / 'other.gpg')
    source = k8s_repo.source_line(served.url, 35, ring)
    work = tmp_path / 'apt'
    work.mkdir()
    update = apt(work, source, 'apt-get', 'update')
    assert update.returncode != 0, update.stdout
    assert 'NO_PUBKEY' in update.stdout, update.stdout
    assert repo_signing.agents(str(other / 'gnupg')) == []


def test_a_second_build_keeps_the_key_and_the_packages(kept, tmp_path):
    root = str(tmp_path / 'root')
    first = k8s_repo.build(root, kept['gnupg_home'], kept['cache'], payload,
                           minors=(35,))
    deb = os.path.join(k8s_repo.minor_dir(root, 35), 'amd64',
                       'kubelet_1.35.0-1.1_amd64.deb')
    with open(deb, 'rb') as f:
        before = f.read()
    key = os.path.join(k8s_repo.minor_dir(root, 35), 'Release.key')
    with open(key) as f:
        armored = f.read()
    assert k8s_repo.build(root, kept['gnupg_home'], kept['cache'], payload,
                          minors=(35,)) == first
    with open(deb, 'rb') as f:
        assert f.read() == before
    with open(key) as f:
        assert f.read() == armored
    assert not os.path.exists(k8s_repo.minor_dir(root, 34))


def test_the_server_answers_get_only_and_is_quiet(served, tmp_path, capfd):
    assert served.url == 'http://127.0.0.1:%d/core:/stable:/' % served.port
    with urllib.request.urlopen(served.url + 'v1.35/deb/Release',
                                timeout=10) as answer:
        assert answer.read().startswith(b'Origin: ')
    request = urllib.request.Request(served.url + 'v1.35/deb/Release',
                                     method='POST', data=b'')
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 501
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(served.url + 'v1.29/deb/InRelease', timeout=10)
    assert missing.value.code == 404
    assert capfd.readouterr().err == ''
    log = (tmp_path / 'access.log').read_text()
    assert '"GET /core:/stable:/v1.29/deb/InRelease HTTP/1.1" 404' in log
    with pytest.raises(LabError):
        repo_server.serve(served.root, '0.0.0.0')
