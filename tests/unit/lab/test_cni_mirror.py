"""The lab's mirror of the CNI presets' manifests: files read from git
clones at their tags byte for byte, laid out as raw.githubusercontent.com
serves them, checked against their pins before anything is written; a
missing clone, tag or file is named. On tiny repositories made here."""

import hashlib
import os
import subprocess

import pytest

from k8s_mgmt import cni_presets
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import cni_mirror

# CRLF, no newline at the end, bytes that are no UTF-8: a mirror keeps
# them all.
DATA = b'kind: DaemonSet\r\nimage: x:snapshot\r\n\xff\xfe tail'
GIT_ENV = {'GIT_AUTHOR_NAME': 'lab', 'GIT_AUTHOR_EMAIL': 'lab@lab.invalid',
           'GIT_COMMITTER_NAME': 'lab',
           'GIT_COMMITTER_EMAIL': 'lab@lab.invalid',
           'GIT_CONFIG_GLOBAL': os.devnull, 'GIT_CONFIG_NOSYSTEM': '1',
           'PATH': os.environ['PATH']}


def git(*argv, cwd=None):
    subprocess.run(['git'] + list(argv), cwd=cwd, env=GIT_ENV, check=True,
                   capture_output=True)


def manifest(data=DATA, path='acme/widget/v1.2.3/deploy/widget.yml'):
    return cni_presets.Manifest('widget', '1.2.3', path,
                                hashlib.sha256(data).hexdigest())


@pytest.fixture
def source(tmp_path):
    """A clone root holding acme/widget bare at <owner>+<repo>/repo, as
    this machine keeps them, with DATA at tag v1.2.3 (and a newer
    commit on top whose file differs), behind a .gitattributes that
    would convert line endings on checkout."""
    work = tmp_path / 'work'
    work.mkdir()
    git('init', '-q', str(work))
    (work / 'deploy').mkdir()
    (work / 'deploy' / 'widget.yml').write_bytes(DATA)
    (work / '.gitattributes').write_text('* -text\n*.yml eol=lf\n')
    git('add', '-A', cwd=work)
    git('commit', '-q', '-m', 'one', cwd=work)
    git('tag', '-a', '-m', 'release', 'v1.2.3', cwd=work)
    (work / 'deploy' / 'widget.yml').write_bytes(b'changed later\n')
    git('commit', '-q', '-am', 'two', cwd=work)
    root = tmp_path / 'clones'
    git('clone', '-q', '--bare', str(work),
        str(root / 'acme+widget' / 'repo'))
    return root


def test_build_lays_the_tagged_file_out_byte_for_byte(source, tmp_path):
    wanted = manifest()
    target = tmp_path / 'mirror'
    written = cni_mirror.build(str(target), str(source), wanted=[wanted])
    path = target / 'acme' / 'widget' / 'v1.2.3' / 'deploy' / 'widget.yml'
    assert written == {'widget': str(path)}
    assert path.read_bytes() == DATA
    assert oct(path.stat().st_mode & 0o777) == '0o644'
    assert cni_mirror.missing(str(source), wanted=[wanted]) is None
    # Built again over it: the same, nothing left half written.
    cni_mirror.build(str(target), str(source), wanted=[wanted])
    assert sorted(os.listdir(path.parent)) == ['widget.yml']


def test_a_file_not_as_pinned_is_refused_naming_both_checksums(
        source, tmp_path):
    wanted = manifest(data=b'what the pin says\n')
    target = tmp_path / 'mirror'
    with pytest.raises(LabError) as caught:
        cni_mirror.build(str(target), str(source), wanted=[wanted])
    text = str(caught.value)
    assert hashlib.sha256(DATA).hexdigest() in text
    assert wanted.sha256 in text
    assert 'acme+widget at v1.2.3' in text and 'refused' in text
    assert not target.exists()


@pytest.mark.parametrize('path, said', [
    ('acme/gadget/v1.2.3/deploy/widget.yml',
     'no git clone of github.com/acme/gadget under'),
    ('acme/widget/v9.9.9/deploy/widget.yml', 'has no deploy/widget.yml at '
     'v9.9.9'),
    ('acme/widget/v1.2.3/deploy/other.yml', 'has no deploy/other.yml at '
     'v1.2.3'),
])
def test_what_cannot_be_read_is_named(source, tmp_path, path, said):
    wanted = manifest(path=path)
    reason = cni_mirror.missing(str(source), wanted=[wanted])
    assert reason.startswith('the widget manifest')
    assert said in reason, reason
    with pytest.raises(cni_mirror.MissingManifest) as caught:
        cni_mirror.build(str(tmp_path / 'mirror'), str(source),
                         wanted=[wanted])
    assert caught.value.manifest is wanted
    assert str(caught.value) == reason


def test_clones_are_found_bare_or_with_a_work_tree(tmp_path):
    for relative in ('a+b/repo', 'c+d', 'e/f.git'):
        git('init', '-q', '--bare', str(tmp_path / relative))
    git('init', '-q', str(tmp_path / 'g+h'))
    git('init', '-q', str(tmp_path / 'i' / 'j'))
    found = {pair: cni_mirror.git_dir(str(tmp_path), *pair)
             for pair in (('a', 'b'), ('c', 'd'), ('e', 'f'), ('g', 'h'),
                          ('i', 'j'), ('k', 'l'))}
    assert found == {
        ('a', 'b'): str(tmp_path / 'a+b' / 'repo'),
        ('c', 'd'): str(tmp_path / 'c+d'),
        ('e', 'f'): str(tmp_path / 'e' / 'f.git'),
        ('g', 'h'): str(tmp_path / 'g+h' / '.git'),
        ('i', 'j'): str(tmp_path / 'i' / 'j' / '.git'),
        ('k', 'l'): None}


def test_every_pinned_manifest_and_its_layout():
    assert cni_mirror.manifests() == [
        cni_presets.PRESETS['calico'], cni_presets.PRESETS['flannel'],
        cni_presets.MULTUS]
    assert cni_mirror.parts(cni_presets.MULTUS) == (
        'k8snetworkplumbingwg', 'multus-cni', 'v4.3.0',
        'deployments/multus-daemonset.yml')
    for each in cni_mirror.manifests():
        owner, repo, tag, _ = cni_mirror.parts(each)
        assert tag == 'v' + each.version
    assert cni_mirror.url('10.0.0.1', 8088, 'github-raw') == \
        'http://10.0.0.1:8088/github-raw/'
    assert cni_mirror.url('fd00::1', 80, '/a/b/') == 'http://[fd00::1]:80/a/b/'
    # What the driver then fetches: the mirror, then the manifest's path.
    flannel = cni_presets.PRESETS['flannel']
    assert flannel.url(cni_mirror.url('10.0.0.1', 8088, 'github-raw')) == \
        'http://10.0.0.1:8088/github-raw/' + flannel.path
