"""``k8s-mgmt package build`` and the links in a source tree: nothing from
outside the tree reaches the CSAR, and no link makes the walk loop."""

import os
import shutil
import subprocess
import sys
import threading

import pytest

from k8s_mgmt import package
from k8s_mgmt import shipped

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
OUTSIDE_TEXT = b'outside the tree: must never be packaged\n'


@pytest.fixture
def source(tmp_path):
    """A copy of the sample source tree, and a file outside it."""
    tree = tmp_path / 'src'
    shutil.copytree(str(shipped.sample_package()), str(tree))
    (tmp_path / 'secret.txt').write_bytes(OUTSIDE_TEXT)
    return tree


def _refused(tree):
    with pytest.raises(package.PackageError) as info:
        package.assemble(str(tree))
    return str(info.value)


def test_a_link_out_of_the_tree_is_refused_naming_link_and_target(source):
    os.symlink('/etc/hostname', str(source / 'Files' / 'hostname'))
    assert _refused(source) == (
        "'Files/hostname' is a symlink to '/etc/hostname', outside the "
        "source tree %r; copy the file in instead" % str(source))


def test_a_relative_link_climbing_out_is_refused(source):
    os.symlink('../../secret.txt', str(source / 'Files' / 'notes.txt'))
    assert "'Files/notes.txt' is a symlink to '../../secret.txt', outside" \
        in _refused(source)


def test_a_link_to_a_file_inside_is_followed(source):
    os.symlink('kubernetes/nfs-pv1.yaml', str(source / 'Files' / 'pv.yaml'))
    files = package.assemble(str(source))
    with open(str(source / 'Files' / 'kubernetes' / 'nfs-pv1.yaml'),
              'rb') as handle:
        assert files['Files/pv.yaml'] == handle.read()


@pytest.mark.parametrize('target', ['kubernetes', '..', '.'])
def test_a_directory_link_is_refused_inside_too(source, target):
    os.symlink(target, str(source / 'Files' / 'more'))
    assert _refused(source) == (
        "'Files/more' is a symlink to the directory %r; directory links "
        "are not followed" % target)


def test_a_directory_link_out_of_the_tree_is_refused(source, tmp_path):
    os.symlink(str(tmp_path), str(source / 'Files' / 'up'))
    assert 'outside the source tree' in _refused(source)


def test_a_link_loop_and_a_dangling_link_are_refused(source):
    os.symlink('loop', str(source / 'Files' / 'loop'))
    assert _refused(source) == ("'Files/loop' is a symlink to 'loop', which "
                                "is no file")
    os.remove(str(source / 'Files' / 'loop'))
    os.symlink('gone.yaml', str(source / 'Files' / 'dangling'))
    assert "'Files/dangling' is a symlink to 'gone.yaml'" in _refused(source)


def test_a_fifo_is_refused_not_read(source):
    # Reading a FIFO would wait for a writer forever.
    fifo = str(source / 'Files' / 'pipe')
    os.mkfifo(fifo)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(_refused(source)),
                              daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():
        with open(fifo, 'wb'):
            pass   # lets the blocked read end
        worker.join()
    assert outcome == ["'Files/pipe' is not a regular file or a directory"]


def test_cli_one_line_exit_1_and_no_zip(source, tmp_path):
    os.symlink(str(tmp_path / 'secret.txt'), str(source / 'Files' / 'x'))
    out = tmp_path / 'pkg.zip'
    done = subprocess.run(
        [sys.executable, '-m', 'k8s_mgmt', 'package', 'build', '--source',
         str(source), '--output', str(out)],
        capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "k8s-mgmt: error: package build failed: 'Files/x' is a symlink to "
        "%r, outside the source tree %r; copy the file in instead"
        % (str(tmp_path / 'secret.txt'), str(source))]
    assert not out.exists()
