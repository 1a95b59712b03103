"""The k8s-mgmt driver in Tacker's virtualenv, installed as the README
says: a wheel built from the checkout, installed with its dependencies
(pinned by the constraints file) into the virtualenv tacker-conductor
runs from.

The virtualenv is shared by every control plane that uses the cache, so
what it holds is recorded in it (the digest of the sources the wheel was
built from and of the wheel's content): the wheel is rebuilt only when
those sources change, and reinstalled only when its content does."""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import zipfile

import k8s_mgmt
from k8s_mgmt_lab.openstack import pins
from k8s_mgmt_lab.openstack import venvs

# What a wheel of the checkout is built from: the package and the files
# its metadata is read from.
SOURCE_FILES = ('setup.cfg', 'pyproject.toml', 'README.md')
PACKAGE = 'k8s_mgmt'
RECORD = 'k8s-mgmt-driver.json'


class InstallFailed(venvs.BuildFailed):
    """The driver's wheel could not be built or installed."""


def checkout():
    """The source tree the running k8s_mgmt package was imported from."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(
        k8s_mgmt.__file__)))
    if not os.path.exists(os.path.join(root, 'setup.cfg')):
        raise InstallFailed('k8s_mgmt in %s is not a checkout (no '
                            'setup.cfg): no wheel can be built from it'
                            % root)
    return root


def _source_paths(source):
    """Every file the wheel is built from, relative to ``source``,
    sorted; compiled files left out."""
    found = [name for name in SOURCE_FILES
             if os.path.exists(os.path.join(source, name))]
    for top, dirs, files in os.walk(os.path.join(source, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        found.extend(os.path.relpath(os.path.join(top, name), source)
                     for name in files if not name.endswith('.pyc'))
    return sorted(found)


def source_digest(source):
    digest = hashlib.sha256()
    for name in _source_paths(source):
        with open(os.path.join(source, name), 'rb') as handle:
            digest.update(name.encode() + b'\0' + handle.read() + b'\0')
    return digest.hexdigest()


def wheel_digest(path):
    """A digest of the wheel's entries, names and bytes: the same for
    two builds of the same sources, whatever their timestamps."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(path) as wheel:
        for name in sorted(wheel.namelist()):
            digest.update(name.encode() + b'\0' + wheel.read(name) + b'\0')
    return digest.hexdigest()


def recorded(venv):
    """What the virtualenv holds: {'source': ..., 'wheel': ...} or {}."""
    try:
        with open(os.path.join(venv, RECORD)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def ensure_installed(venv, source=None, log=None):
    """The digest of the driver wheel installed in ``venv``, built from
    ``source`` (the checkout by default) and installed first when the
    virtualenv holds none or another content."""
    source = source or checkout()
    with venvs.locked(os.path.join(venv, '.k8s-mgmt-driver.lock')):
        held = recorded(venv)
        sources = source_digest(source)
        if held.get('source') == sources:
            return held['wheel']
        with tempfile.TemporaryDirectory(prefix='k8s-mgmt-wheel-') as work:
            wheel = _build_wheel(venv, source, work, log)
            content = wheel_digest(wheel)
            if held.get('wheel') != content:
                _install(venv, wheel, work, log)
        with open(os.path.join(venv, RECORD + '.tmp'), 'w') as handle:
            json.dump({'source': sources, 'wheel': content}, handle)
        os.replace(os.path.join(venv, RECORD + '.tmp'),
                   os.path.join(venv, RECORD))
        return content


def _build_wheel(venv, source, work, log):
    """Build from a copy of the sources: setuptools leaves a build/
    directory where it builds, and a stale one there would put deleted
    modules into the next wheel."""
    copy = os.path.join(work, 'source')
    for name in _source_paths(source):
        os.makedirs(os.path.dirname(os.path.join(copy, name)),
                    exist_ok=True)
        shutil.copy(os.path.join(source, name), os.path.join(copy, name))
    _pip(venv, log, 'wheel', '--no-deps', '-w', os.path.join(work, 'dist'),
         copy)
    built = os.listdir(os.path.join(work, 'dist'))
    if len(built) != 1:
        raise InstallFailed('pip wheel made %r, not one wheel' % built)
    return os.path.join(work, 'dist', built[0])


def _install(venv, wheel, work, log):
    """Its dependencies as the constraints pin them, then the wheel
    itself over whatever k8s-mgmt 0.1.0 was there."""
    constraints = os.path.join(work, 'constraints.txt')
    with open(constraints, 'w') as handle:
        handle.write(pins.constraints_text())
    _pip(venv, log, 'install', '-c', constraints, wheel)
    _pip(venv, log, 'install', '--no-deps', '--force-reinstall', wheel)


def _pip(venv, log, *args):
    out = log if log is not None else subprocess.PIPE
    done = subprocess.run(
        [venvs.python(venv), '-m', 'pip', '-q', '--disable-pip-version-check']
        + list(args), stdout=out, stderr=subprocess.STDOUT)
    if done.returncode:
        tail = (done.stdout or b'').decode('utf-8', 'replace')
        raise InstallFailed('pip %s failed with exit code %d: %s' % (
            args[0], done.returncode, tail.strip()[-2000:]))
