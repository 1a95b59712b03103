"""remote_checks, the checks the driver runs on the Ansible server: called
here directly, and once as the driver sends them (``python3 -c``)."""

import json
import os
import subprocess

import pytest

from k8s_mgmt.ansible import ansible_server
from k8s_mgmt.ansible import remote_checks
from k8s_mgmt.ssh.command import Command
from tests.helpers.private_dirs import private_dir


@pytest.fixture
def private():
    with private_dir() as path:
        yield path


def refusal(call, *args):
    with pytest.raises(remote_checks.Refused) as info:
        call(*args)
    return info.value.args[0]


def shared_dir(parent, name='shared'):
    path = parent / name
    path.mkdir()
    path.chmod(0o1777)
    return path


def test_a_private_path_passes_and_resolves(private):
    (private / 'a').mkdir()
    assert remote_checks.check_dirs(str(private / 'a')) == str(private / 'a')
    # Parts still missing are made by the driver: nothing to check there.
    assert remote_checks.check_dirs(str(private / 'a' / 'b' / 'c')) is None


def test_a_world_writable_directory_on_the_way_is_named(private):
    shared = shared_dir(private)
    found = refusal(remote_checks.check_dirs, str(shared / 'inv' / 'x'))
    assert found == {'kind': 'world-writable', 'path': str(shared),
                     'mode': '1777'}


def test_the_directory_itself_counts(private):
    inv = private / 'inv'
    inv.mkdir()
    inv.chmod(0o777)
    assert refusal(remote_checks.check_dirs, str(inv))['path'] == str(inv)


def test_a_link_into_a_shared_directory_is_followed(private):
    shared = shared_dir(private)
    (shared / 'real').mkdir(mode=0o700)
    (private / 'link').symlink_to(shared / 'real')
    found = refusal(remote_checks.check_dirs, str(private / 'link' / 'inv'))
    assert found['path'] == str(shared)


def test_every_link_of_a_chain_is_checked(private):
    # The final target is private, but the second link lives in a shared
    # directory: whoever can write there can re-point it.
    shared = shared_dir(private)
    (private / 'safe').mkdir()
    (shared / 'hop').symlink_to(private / 'safe')
    (private / 'first').symlink_to('shared/hop')    # relative
    found = refusal(remote_checks.check_dirs, str(private / 'first'))
    assert found['path'] == str(shared)


def test_a_link_loop_and_a_file_on_the_way_are_refused(private):
    (private / 'loop').symlink_to(private / 'loop')
    assert refusal(remote_checks.check_dirs,
                   str(private / 'loop' / 'x'))['kind'] == 'link-loop'
    (private / 'file').write_text('x')
    assert refusal(remote_checks.check_dirs, str(private / 'file' / 'x')) \
        == {'kind': 'not-a-directory', 'path': str(private / 'file')}


def test_key_file_ours_alone_passes_and_a_missing_one_too(private):
    key = private / 'id_ed25519'
    assert remote_checks.check_key(str(key)) is None
    key.write_text('k')
    for mode in (0o600, 0o400):
        key.chmod(mode)
        assert remote_checks.check_key(str(key)) is None


@pytest.mark.parametrize('mode', [0o640, 0o604, 0o660, 0o644, 0o666])
def test_key_file_others_may_read_is_refused(private, mode):
    key = private / 'id_ed25519'
    key.write_text('k')
    key.chmod(mode)
    assert refusal(remote_checks.check_key, str(key)) == {
        'kind': 'mode', 'path': str(key), 'mode': '%04o' % mode}


def test_key_file_of_another_user_is_refused(private):
    if os.geteuid() != 0:
        pytest.skip('needs root to give a file to another user')
    key = private / 'id_ed25519'
    key.write_text('k')
    key.chmod(0o600)
    os.chown(key, 65534, 65534)
    assert refusal(remote_checks.check_key, str(key)) == {
        'kind': 'owner', 'path': str(key), 'uid': 65534, 'user_uid': 0}


def test_a_key_that_is_a_link_or_a_directory_is_refused(private):
    target = private / 'elsewhere'
    target.write_text('k')
    target.chmod(0o600)
    (private / 'link').symlink_to(target)
    assert refusal(remote_checks.check_key, str(private / 'link')) == {
        'kind': 'not-a-file', 'path': str(private / 'link')}
    (private / 'dir').mkdir(mode=0o700)
    assert refusal(remote_checks.check_key, str(private / 'dir'))['kind'] \
        == 'not-a-file'


def test_as_the_driver_sends_it(private):
    shared = shared_dir(private)
    cmd = Command('python3', '-c', ansible_server.remote_checks_source(),
                  'dirs', str(shared / 'inv'))
    done = subprocess.run(['sh', '-c', cmd.render()], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == remote_checks.REFUSED
    assert json.loads(done.stdout)['path'] == str(shared)
    cmd = Command('python3', '-c', ansible_server.remote_checks_source(),
                  'dirs', str(private / 'inv'))
    done = subprocess.run(['sh', '-c', cmd.render()], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, '')
