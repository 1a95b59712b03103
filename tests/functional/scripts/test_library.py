"""The scripts' library: found next to each script wherever it is run
from, a clear failure without it, and uploaded before any script."""

import shutil
import types

import pytest

from k8s_mgmt import shipped
from k8s_mgmt.engine import uploads
from tests.functional.scripts.script_helpers import (
    CONFIGURE_LB, INSTALL, LIBRARY, run_script)


@pytest.mark.parametrize('script', [INSTALL, CONFIGURE_LB],
                         ids=lambda p: p.name)
def test_a_script_without_its_library_fails_and_says_so(script, tmp_path):
    alone = tmp_path / script.name
    shutil.copy(script, alone)
    result = run_script(alone, ['-h'])
    assert result.returncode == 1
    assert result.stdout == ''
    assert result.stderr == '%s: %s/%s is missing (it comes with this ' \
        'script)\n' % (script.name, tmp_path, LIBRARY.name)


@pytest.mark.parametrize('script', [INSTALL, CONFIGURE_LB],
                         ids=lambda p: p.name)
def test_the_library_is_found_next_to_the_script_not_in_the_cwd(
        script, tmp_path):
    # As on a node: both in one directory, run by a relative path from
    # elsewhere.
    node_dir = tmp_path / 'home' / '.k8s-mgmt'
    node_dir.mkdir(parents=True)
    for path in (script, LIBRARY):
        shutil.copy(path, node_dir / path.name)
    cwd = tmp_path / 'home'
    result = run_script('.k8s-mgmt/' + script.name, ['-h'], cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('Usage: %s' % script.name)


def _node(role):
    return types.SimpleNamespace(role=role, name='%s-1' % role)


def _params(**given):
    """Request parameters with none of the options that upload files of
    their own (a repository key, registry CAs, Helm, a CNI manifest) but
    those given."""
    return types.SimpleNamespace(**dict(
        dict(kubernetes_apt_repository=None,
             private_registry_connection_info=(), helm=None,
             helm_installation_script_path=None, cni=None,
             registry=None), **given))


@pytest.mark.parametrize('storage', [False, True])
@pytest.mark.parametrize('is_ha', [False, True])
@pytest.mark.parametrize('role', ['master', 'worker', 'storage'])
def test_every_node_gets_the_library_before_its_scripts(
        role, is_ha, storage):
    params = _params(is_ha=is_ha, script_path=None,
                     storage_server=object() if storage else None,
                     uses_ansible=False, external_lb_param=None)
    names = uploads.names_for(_node(role), params)
    assert names[0] == shipped.SCRIPT_LIBRARY
    assert (uploads.INSTALL in names) == (role != 'storage')
    assert (uploads.CONFIGURE_LB in names) == (is_ha and role == 'master')
    assert (uploads.STORAGE in names) == (storage or role == 'storage')


def test_the_library_comes_from_the_package_when_it_has_one(tmp_path):
    params = _params(
        is_ha=True, script_path='Custom/install.sh', storage_server=None,
        uses_ansible=False, external_lb_param=None)
    (tmp_path / 'Scripts').mkdir()
    (tmp_path / 'Scripts' / LIBRARY.name).write_text('# the package copy\n')
    found = uploads.ScriptSet(str(tmp_path), params).get(LIBRARY.name)
    assert found.from_package and found.data == b'# the package copy\n'
    assert found.remote_path == '.k8s-mgmt/' + LIBRARY.name
    # Without one: ours, and the run says so (shipped_instead).
    other = tmp_path / 'other'
    other.mkdir()
    script_set = uploads.ScriptSet(str(other), params)
    found = script_set.get(LIBRARY.name)
    assert not found.from_package
    assert found.data == LIBRARY.read_bytes()
    assert LIBRARY.name in [s.name for s in
                            script_set.shipped_instead([_node('master')])]


@pytest.mark.parametrize('role,expected', [
    ('master', [shipped.SCRIPT_LIBRARY, uploads.INSTALL]),
    ('worker', []),
    ('lb', [shipped.SCRIPT_LIBRARY, uploads.EXTERNAL_LB])])
def test_kubespray_mode_uploads_only_what_the_driver_runs(role, expected):
    """Kubespray installs the nodes: the LB VM gets its script, a master
    the install script (token-secret), a worker nothing."""
    lb = types.SimpleNamespace(script_path='Scripts/my_lb.sh')
    params = _params(is_ha=False, script_path=None, storage_server=None,
                     uses_ansible=True, external_lb_param=lb)
    assert uploads.names_for(_node(role), params) == expected
    if role == 'lb':
        assert uploads.package_path(params, uploads.EXTERNAL_LB) == \
            'Scripts/my_lb.sh'
