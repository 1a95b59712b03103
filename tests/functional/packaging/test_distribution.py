"""The sdist and the wheel carry the node scripts and the sample package.

``k8s-mgmt package build`` and ``package request`` read
``k8s_mgmt/scripts`` and ``k8s_mgmt/samples`` through importlib.resources,
so an installation from a wheel works only if the distributions carry every
one of those files. One module-scoped fixture does the slow part once:

* ``python -m build`` (the sdist, then the wheel from it, as a release is
  made) and ``python -m build --wheel`` (straight from the tree, as
  ``pip install .`` does), on a copy of the checkout in which compiled files
  were planted under the samples, none of which may ship;
* a fresh virtualenv with the wheel and its dependencies installed by pip;
* ``k8s-mgmt package build`` and ``package request`` run from that
  virtualenv in a directory outside the checkout.

The tests compare what came out with the checkout, and have Tacker's own CSAR
loader check the CSAR the installed wheel built (in a process of its own:
tests/helpers/tacker_csar_check.py).

The lab is a distribution of its own (``lab/``, ``k8s-mgmt-lab``): the
driver's sdist and wheels must hold none of it. Its wheel is built too, and
installed (without dependencies: they are the driver's, already there) into
the same virtualenv after the driver's CLI was run alone, so the tests see
``k8s-mgmt`` without and then with the lab's verbs.

Build isolation is kept (``python -m build`` installs the newest setuptools
and wheel from PyPI into a throwaway environment per step): that is the
setuptools a release and ``pip install`` use and the one whose warnings about
package data matter, while the project's venv holds an older setuptools and
no ``wheel``, so ``--no-isolation`` would test another build. Measured on a
warm pip cache on a shared 2-core machine: the three isolated builds take
10-15 s, the virtualenv and the install 18-30 s (mostly pip resolving the
80-odd dependencies against PyPI), the whole module 40-62 s; the fixture
prints its timings at the end of the module.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

import pytest

from k8s_mgmt import package
from tests.helpers import tacker_csar_check

if importlib.util.find_spec('build') is None:
    pytest.skip('the "build" package is not installed (it is in the test '
                'extra: pip install -e ".[tacker,test]")',
                allow_module_level=True)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SHIPPED_DIRS = ('k8s_mgmt/scripts', 'k8s_mgmt/samples',
                'k8s_mgmt/kubespray/callback_plugins')
FLAVOURS = ('simple', 'complex', 'podaffinity', 'storage', 'kubespray',
            'registry')
SCRIPTS = ('Scripts/install_k8s_cluster.sh', 'Scripts/configure_lb.sh',
           'Scripts/k8s_mgmt_lib.sh', 'Scripts/setup_storage.sh')
COMPILED = ('.pyc', '.pyo')
LAB_DIR = 'lab'                 # the lab's distribution in the checkout
LAB_PACKAGE = 'k8s_mgmt_lab'
LAB_VERBS = ('lab', 'demo')
# Not copied from the top of the checkout: VCS, virtualenvs, build output.
NOT_COPIED = {'.git', '.venv', '.tox', '.pytest_cache', 'build', 'dist'}
# Compiled files that a checkout which has run the tests may hold (the
# UserData module is imported by tests), planted in the copy that is built.
PLANTED = (
    'k8s_mgmt/samples/vnf_package/UserData/__pycache__/'
    'k8s_cluster_user_data.%s.pyc' % sys.implementation.cache_tag,
    'k8s_mgmt/samples/vnf_package/UserData/k8s_cluster_user_data.pyc',
    'k8s_mgmt/samples/__pycache__/stray.pyc',
    'k8s_mgmt/samples/requests/__pycache__/stray.pyc',
    'k8s_mgmt/scripts/__pycache__/stray.pyc',
    'k8s_mgmt/kubespray/callback_plugins/__pycache__/'
    'k8s_mgmt_events.%s.pyc' % sys.implementation.cache_tag,
)
# What setuptools prints for data files in directories it takes for
# packages missing from `packages` (_IncludePackageDataAbuse).
PACKAGE_DATA_WARNINGS = ('is absent from the `packages` configuration',
                         'Package would be ignored')


def shipped_files(root):
    """'/'-separated paths of the files under SHIPPED_DIRS of ``root``,
    compiled files and __pycache__ left out: what must ship."""
    found = set()
    for top in SHIPPED_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d != '__pycache__']
            for name in filenames:
                if not name.endswith(COMPILED):
                    path = os.path.relpath(os.path.join(dirpath, name), root)
                    found.add(path.replace(os.sep, '/'))
    return found


def in_shipped_dirs(names):
    return {n for n in names if n.startswith(tuple(
        d + '/' for d in SHIPPED_DIRS))}


def wheel_members(path):
    with zipfile.ZipFile(path) as archive:
        return in_shipped_dirs(i.filename for i in archive.infolist()
                               if not i.is_dir())


def sdist_members(path):
    with tarfile.open(path) as archive:
        # Every member sits under "k8s_mgmt-<version>/".
        return in_shipped_dirs(m.name.split('/', 1)[1]
                               for m in archive.getmembers()
                               if m.isfile() and '/' in m.name)


def all_members(path):
    """'/'-separated names of the files in a wheel or an sdist (the
    sdist's top directory "<name>-<version>/" left out)."""
    if path.endswith('.whl'):
        with zipfile.ZipFile(path) as archive:
            return {i.filename for i in archive.infolist() if not i.is_dir()}
    with tarfile.open(path) as archive:
        return {m.name.split('/', 1)[1] for m in archive.getmembers()
                if m.isfile() and '/' in m.name}


# Data of the lab package: the stand-in kubespray tree it copies to the
# Ansible server VM (every file ships, not only .py) and the pins of the
# real control plane's virtualenvs.
LAB_DATA_DIRS = (LAB_PACKAGE + '/kube/kubespray_standin/',
                 LAB_PACKAGE + '/openstack/constraints/')


def lab_modules(root):
    """The lab's .py files in the checkout, and every file of its data
    tree, as its wheel names them."""
    top = os.path.join(root, LAB_DIR)
    found = set()
    for dirpath, dirnames, filenames in os.walk(
            os.path.join(top, LAB_PACKAGE)):
        dirnames[:] = [d for d in dirnames if d != '__pycache__']
        for name in filenames:
            path = os.path.relpath(os.path.join(dirpath, name),
                                   top).replace(os.sep, '/')
            if name.endswith('.py') or (path.startswith(LAB_DATA_DIRS) and
                                        not name.endswith('.pyc')):
                found.add(path)
    return found


def _ignore_at_top(directory, names):
    ignored = {n for n in names if n.endswith('.egg-info')}
    if os.path.samefile(directory, REPO):
        ignored |= NOT_COPIED & set(names)
    return ignored


def _run(argv, what, timeout, **kwargs):
    proc = subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout, **kwargs)
    assert proc.returncode == 0, '%s failed (%d):\n%s\n%s' % (
        what, proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


def _clean_env():
    """The environment for the fresh virtualenv: nothing that would let it
    import this checkout or another installation."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'PYTHONHOME',
                        'VIRTUAL_ENV')}
    env['PYTHONNOUSERSITE'] = '1'
    return env


def _only(directory, pattern):
    found = sorted(p for p in os.listdir(directory) if p.endswith(pattern))
    assert len(found) == 1, (directory, os.listdir(directory))
    return os.path.join(directory, found[0])


@pytest.fixture(scope='module')
def dist(request, tmp_path_factory):
    """Build, install into a fresh virtualenv, run the installed CLI."""
    started = time.monotonic()
    timings = {}
    tmp = tmp_path_factory.mktemp('distribution')
    result = {'tmp': tmp, 'timings': timings}

    # The checkout is copied so that building leaves nothing in it
    # (setuptools writes k8s_mgmt.egg-info and build/ next to setup.cfg).
    result['expected'] = shipped_files(REPO)
    tree = str(tmp / 'tree')
    shutil.copytree(REPO, tree, symlinks=True, ignore=_ignore_at_top)
    for planted in PLANTED:
        path = os.path.join(tree, *planted.split('/'))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as handle:
            handle.write(b'compiled, must not ship')

    # Run from outside the tree, so that no directory of it (build/ among
    # them) can shadow a module.
    step = time.monotonic()
    release = _run([sys.executable, '-m', 'build', '--outdir',
                    str(tmp / 'release'), tree], 'python -m build', 600,
                   cwd=str(tmp))
    direct = _run([sys.executable, '-m', 'build', '--wheel', '--outdir',
                   str(tmp / 'direct'), tree], 'python -m build --wheel',
                  600, cwd=str(tmp))
    timings['build'] = time.monotonic() - step
    result['build_log'] = '\n'.join(p.stdout + p.stderr
                                    for p in (release, direct))
    result['sdist'] = _only(str(tmp / 'release'), '.tar.gz')
    result['wheel'] = _only(str(tmp / 'release'), '.whl')
    result['direct_wheel'] = _only(str(tmp / 'direct'), '.whl')
    step = time.monotonic()
    _run([sys.executable, '-m', 'build', '--wheel', '--outdir',
          str(tmp / 'lab'), os.path.join(tree, LAB_DIR)],
         'python -m build --wheel lab', 600, cwd=str(tmp))
    timings['lab build'] = time.monotonic() - step
    result['lab_wheel'] = _only(str(tmp / 'lab'), '.whl')

    # A fresh virtualenv without pip of its own: this venv's pip installs
    # into it (--python), which saves the few seconds ensurepip takes.
    # Dependencies come from PyPI through pip's default cache; --no-compile
    # halves the install time and nothing here needs the .pyc files.
    step = time.monotonic()
    venv = tmp / 'venv'
    env = _clean_env()
    _run([sys.executable, '-m', 'venv', '--without-pip', str(venv)],
         'python -m venv', 120, env=env)
    python = str(venv / 'bin' / 'python')
    _run([sys.executable, '-m', 'pip', '--python', python, 'install',
          '--no-compile', '--no-input', result['wheel']],
         'pip install of the wheel', 900, env=env, cwd=str(tmp))
    timings['venv+install'] = time.monotonic() - step

    outside = tmp / 'outside'
    outside.mkdir()
    where = _run([python, '-c', 'import k8s_mgmt.shipped as s; '
                  'print(s.__file__); print(s.sample_package())'],
                 'import from the venv', 120, env=env, cwd=str(outside))
    result['imported_from'] = where.stdout.split()
    result['plugin'] = _run(
        [python, '-c', 'import sys; from k8s_mgmt.ansible import '
         'ansible_server as a; sys.stdout.write(a.plugin_source().decode())'],
        'the callback plugin from the venv', 120, env=env,
        cwd=str(outside)).stdout
    cli = str(venv / 'bin' / 'k8s-mgmt')
    result['build'] = _run([cli, 'package', 'build', '--output', 'p.zip'],
                           'k8s-mgmt package build', 300, env=env,
                           cwd=str(outside))
    result['csar'] = outside / 'p.zip'
    result['request'] = _run([cli, 'package', 'request', 'complex'],
                             'k8s-mgmt package request', 300, env=env,
                             cwd=str(outside))
    result['help_alone'] = _run([cli, '--help'], 'k8s-mgmt --help', 120,
                                env=env, cwd=str(outside)).stdout
    _run([sys.executable, '-m', 'pip', '--python', python, 'install',
          '--no-compile', '--no-input', '--no-deps', result['lab_wheel']],
         'pip install of the lab wheel', 300, env=env, cwd=str(tmp))
    result['help_with_lab'] = _run([cli, '--help'], 'k8s-mgmt --help', 120,
                                   env=env, cwd=str(outside)).stdout
    result['lab_help'] = subprocess.run(
        [cli, 'lab', '--help'], capture_output=True, text=True, timeout=120,
        env=env, cwd=str(outside))
    result['venv'] = str(venv)
    yield result

    # The virtualenv is a few hundred MB; the distributions stay for a look.
    shutil.rmtree(str(venv), ignore_errors=True)
    shutil.rmtree(tree, ignore_errors=True)
    timings['module'] = time.monotonic() - started
    # Shown whatever the capture mode (-s not needed), as --setup-show is.
    line = 'test_distribution timings: ' + ', '.join(
        '%s %.1f s' % item for item in timings.items())
    plugins = request.config.pluginmanager
    reporter = plugins.getplugin('terminalreporter')
    capture = plugins.getplugin('capturemanager')
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line('\n' + line)
    else:
        print(line, file=sys.stderr)


def test_the_checkout_has_what_the_distributions_must_carry(dist):
    # Guards the comparisons below against an empty or misplaced walk.
    assert {'k8s_mgmt/scripts/install_k8s_cluster.sh',
            'k8s_mgmt/scripts/configure_lb.sh',
            'k8s_mgmt/scripts/k8s_mgmt_lib.sh',
            'k8s_mgmt/samples/requests/complex.json',
            'k8s_mgmt/samples/vnf_package/TOSCA-Metadata/TOSCA.meta',
            'k8s_mgmt/samples/vnf_package/UserData/__init__.py',
            'k8s_mgmt/kubespray/callback_plugins/k8s_mgmt_events.py',
            } <= dist['expected']


@pytest.mark.parametrize('kind', ['sdist', 'wheel', 'direct_wheel'])
def test_distribution_carries_every_shipped_file_and_nothing_compiled(
        dist, kind):
    read = sdist_members if kind == 'sdist' else wheel_members
    members = read(dist[kind])
    compiled = sorted(m for m in members
                      if m.endswith(COMPILED) or '/__pycache__/' in m)
    assert not compiled, '%s ships compiled files: %s' % (kind, compiled)
    assert sorted(dist['expected'] - members) == [], 'missing from ' + kind
    assert sorted(members - dist['expected']) == [], 'extra in ' + kind


def test_build_prints_no_warning_about_package_data(dist):
    log = dist['build_log']
    assert 'Successfully built' in log
    warned = [line.strip() for line in log.splitlines()
              if any(w in line for w in PACKAGE_DATA_WARNINGS)]
    assert warned == []


def test_the_fresh_venv_runs_the_installed_wheel_not_the_checkout(dist):
    module, sample = dist['imported_from']
    for path in (module, sample):
        assert path.startswith(dist['venv'] + os.sep), path
        assert not path.startswith(REPO + os.sep), path


def test_installed_wheel_uploads_the_checkouts_callback_plugin(dist):
    path = os.path.join(REPO, 'k8s_mgmt', 'kubespray', 'callback_plugins',
                        'k8s_mgmt_events.py')
    with open(path, encoding='utf-8') as handle:
        assert dist['plugin'] == handle.read()


def test_installed_wheel_builds_the_checkouts_csar_byte_for_byte(
        dist, tmp_path):
    assert 'p.zip: ' in dist['build'].stdout, dist['build'].stdout
    mine = tmp_path / 'checkout.zip'
    package.build(output=str(mine))
    assert dist['csar'].read_bytes() == mine.read_bytes()


def test_installed_wheel_prints_the_checkouts_sample_request(dist):
    path = os.path.join(REPO, 'k8s_mgmt', 'samples', 'requests',
                        'complex.json')
    with open(path) as handle:
        expected = json.load(handle)
    assert json.loads(dist['request'].stdout) == expected


def test_tacker_accepts_the_csar_of_the_installed_wheel(dist, tmp_path):
    if importlib.util.find_spec('tacker') is None:
        pytest.skip('tacker is not installed (pip install -e ".[tacker]")')
    with zipfile.ZipFile(dist['csar']) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    files[SCRIPTS[0]] += b'\n# tampered\n'
    tampered = tmp_path / 'tampered.zip'
    tampered.write_bytes(package.zip_bytes(files))
    report = tacker_csar_check.run(dist['csar'], tampered)
    assert report['flavours'] == sorted(FLAVOURS)
    # Tacker lists what TOSCA.meta names, after checking each hash.
    assert report['artifacts'] == sorted(set(files) - {package.TOSCA_META})
    assert {package.DRIVER_ARTIFACT} | set(SCRIPTS) <= set(
        report['artifacts'])
    assert SCRIPTS[0] in report['tampered']
    assert report['chosen'] == tacker_csar_check.MGMT_DRIVER
    assert report['edited'] == 'refused'


@pytest.mark.parametrize('kind', ['sdist', 'wheel', 'direct_wheel'])
def test_the_drivers_distributions_hold_nothing_of_the_lab(dist, kind):
    members = all_members(dist[kind])
    assert 'k8s_mgmt/driver.py' in members
    lab = sorted(m for m in members
                 if m.startswith((LAB_PACKAGE + '/', LAB_DIR + '/')))
    assert lab == [], '%s holds lab files: %s' % (kind, lab[:5])


def test_the_lab_wheel_holds_the_lab_and_nothing_of_the_driver(dist):
    members = all_members(dist['lab_wheel'])
    code = {m for m in members if not m.startswith(
        LAB_PACKAGE.replace('_', '-') + '-') and '.dist-info/' not in m}
    expected = lab_modules(REPO)
    assert {'k8s_mgmt_lab/cli/lab.py', 'k8s_mgmt_lab/kube/kubeadm.py',
            'k8s_mgmt_lab/machines/vm.py'} <= expected
    assert sorted(code ^ expected) == []


def test_the_lab_wheel_needs_the_driver_and_adds_its_verbs(dist):
    with zipfile.ZipFile(dist['lab_wheel']) as archive:
        names = archive.namelist()
        meta = archive.read(next(n for n in names
                                 if n.endswith('.dist-info/METADATA')))
        points = archive.read(next(
            n for n in names if n.endswith('.dist-info/entry_points.txt')))
    requires = [line.split(':', 1)[1].strip() for line in
                meta.decode().splitlines()
                if line.startswith('Requires-Dist:')]
    assert 'k8s-mgmt[tacker]' in requires, requires
    assert points.decode().split() == [
        '[k8s_mgmt.cli]', 'demo', '=', 'k8s_mgmt_lab.cli.demo',
        'lab', '=', 'k8s_mgmt_lab.cli.lab']


def _verbs(help_text):
    """The verbs "k8s-mgmt --help" lists (the lines under COMMAND)."""
    lines = help_text.split('COMMAND\n', 2)[-1].split('\n\n')[0]
    return [line.split()[0] for line in lines.splitlines() if line.strip()]


def test_the_lab_verbs_come_with_the_lab_distribution_only(dist):
    alone = _verbs(dist['help_alone'])
    assert 'package' in alone and not set(LAB_VERBS) & set(alone), alone
    assert _verbs(dist['help_with_lab']) == alone + sorted(LAB_VERBS)
    lab_help = dist['lab_help']
    assert lab_help.returncode == 0, lab_help.stderr
    assert 'instantiate' in lab_help.stdout
