"""The release the control plane runs: a constraints file kept in this
package (every package version of the service virtualenvs, frozen from a
resolved install) and the packages each service's virtualenv asks for."""

import hashlib
import importlib.resources
import sys

RELEASE = '2025.2'

# What each service's virtualenv installs; the constraints file fixes
# their versions and their dependencies'.
REQUIREMENTS = {
    'keystone': ['keystone', 'gunicorn', 'pymysql', 'python-memcached'],
    'heat': ['openstack-heat', 'gunicorn', 'pymysql', 'python-memcached'],
    # tacker-server and tacker-conductor; the k8s-mgmt wheel is installed
    # into it later, its dependencies pinned here too.
    'tacker': ['tacker', 'pymysql', 'python-memcached'],
    # barbican-api, Tacker's key manager for Kubernetes VIMs.
    'barbican': ['barbican', 'gunicorn', 'pymysql'],
    # What an operator types: ``openstack stack list``, ``vim list``.
    'client': ['python-openstackclient', 'python-heatclient',
               'python-tackerclient'],
}


def constraints_text(release=RELEASE):
    return importlib.resources.files(__package__).joinpath(
        'constraints', release + '.txt').read_text()


def version(name, release=RELEASE):
    """The pinned version of package ``name``."""
    for line in constraints_text(release).splitlines():
        package, _sep, pinned = line.partition('==')
        if package.strip().lower() == name.lower():
            return pinned.strip()
    raise KeyError('%s is not pinned in %s' % (name, release))


def fingerprint(service, release=RELEASE):
    """A short hash of everything a service's virtualenv is built from:
    a change of any pin, of its requirements or of Python makes another
    virtualenv."""
    digest = hashlib.sha256()
    for part in (constraints_text(release), ' '.join(REQUIREMENTS[service]),
                 '%d.%d' % sys.version_info[:2]):
        digest.update(part.encode() + b'\0')
    return digest.hexdigest()[:12]
