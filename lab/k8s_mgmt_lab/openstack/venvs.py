"""The services' virtualenvs, built once into the lab's cache: one per
service, named for the hash of its pins (a change of pins makes a new
one), built in a temporary directory beside it and renamed into place,
so that a failed build leaves nothing a later run would take as built.

A virtualenv's console scripts name the directory they were built in,
so the control plane never runs them: it runs ``python`` of the
virtualenv with entry_point_argv (the python symlink and site-packages
move with the directory)."""

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile

from k8s_mgmt_lab.openstack import pins

# The lab's cache: the virtualenvs are built under its ``venvs``.
DEFAULT_CACHE = '/var/cache/k8s-mgmt-lab'
# Runs the console script named by argv[1] from the virtualenv's own
# package metadata, with argv[1:] as its sys.argv.
_RUN_ENTRY_POINT = (
    'import sys\n'
    'from importlib.metadata import entry_points\n'
    'name = sys.argv[1]\n'
    "found = [e for e in entry_points(group='console_scripts')"
    ' if e.name == name]\n'
    'sys.argv = sys.argv[1:]\n'
    'sys.exit(found[0].load()())\n')


class BuildFailed(Exception):
    pass


def venv_path(cache_dir, service):
    return os.path.join(cache_dir, 'venvs', '%s-%s' % (
        service, pins.fingerprint(service)))


def python(venv):
    return os.path.join(venv, 'bin', 'python')


def entry_point_argv(venv, script, *args):
    return [python(venv), '-c', _RUN_ENTRY_POINT, script] + list(args)


@contextlib.contextmanager
def locked(path):
    with open(path, 'a') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def ensure(cache_dir, service, log=None):
    """The path of ``service``'s virtualenv, built first if the cache
    has none for the current pins."""
    target = venv_path(cache_dir, service)
    if os.path.isdir(target):
        return target
    parent = os.path.dirname(target)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    with locked(os.path.join(parent, '.lock')):
        if not os.path.isdir(target):
            _clean_stale(parent)
            _build(target, service, log)
            _prune_superseded(target, service)
    return target


def _build(target, service, log):
    parent = os.path.dirname(target)
    building = tempfile.mkdtemp(prefix='.%s-' % service, dir=parent)
    try:
        constraints = os.path.join(building, 'constraints.txt')
        subprocess.run([sys.executable, '-m', 'venv', building], check=True,
                       stdout=subprocess.DEVNULL)
        with open(constraints, 'w') as handle:
            handle.write(pins.constraints_text())
        out = log if log is not None else subprocess.PIPE
        done = subprocess.run(
            [python(building), '-m', 'pip', 'install', '-q',
             '--disable-pip-version-check', '-c', constraints]
            + pins.REQUIREMENTS[service],
            stdout=out, stderr=subprocess.STDOUT)
        if done.returncode:
            tail = (done.stdout or b'').decode('utf-8', 'replace')
            raise BuildFailed('building the %s virtualenv failed (pip exit '
                              'code %d): %s' % (service, done.returncode,
                                                tail.strip()[-2000:]))
        os.rename(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def _prune_superseded(target, service):
    """Remove ``service``'s virtualenvs of older pins, unless a running
    process still uses one (called under the lock, after a build)."""
    parent = os.path.dirname(target)
    old = [os.path.join(parent, name) for name in os.listdir(parent)
           if name.startswith(service + '-') and
           os.path.join(parent, name) != target]
    in_use = _paths_in_use(old)
    for path in old:
        if path not in in_use:
            shutil.rmtree(path, ignore_errors=True)


def _paths_in_use(paths):
    """Those of ``paths`` that a running process's command line names."""
    used = set()
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                cmdline = handle.read().decode('utf-8', 'replace')
        except OSError:
            continue
        used.update(p for p in paths if p + '/' in cmdline)
    return used


def _clean_stale(parent):
    """Remove what interrupted builds left (called under the lock)."""
    for name in os.listdir(parent):
        if name.startswith('.') and name != '.lock':
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
