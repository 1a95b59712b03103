"""The lab's OpenStack registered as Tacker's default VIM, the way an
operator registers one: ``openstack vim register --config-file F
--is-default NAME`` with the lab's openrc (python-openstackclient with
python-tackerclient, from the lab's cache).

The config file holds the VIM's password: it is written 0600 into the
lab's state dir and removed once Tacker has it (Tacker keeps it encrypted
with its fernet key).
"""

import json
import os

import yaml

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import lab_region
from k8s_mgmt_lab.openstack import state as plane_state

CONFIG_NAME = 'vim_config.yaml'


def vim_name(record):
    return 'lab-vim-%s' % record['openstack']['project']


def config_text(credentials):
    """The ``--config-file`` of ``openstack vim register`` for the lab's
    Keystone credentials (python-tackerclient's vim_config.yaml keys)."""
    return yaml.safe_dump({
        'auth_url': credentials['auth_url'],
        'username': credentials['username'],
        'password': credentials['password'],
        'project_name': credentials['project_name'],
        'project_domain_name': credentials['project_domain_name'],
        'user_domain_name': credentials['user_domain_name'],
        'cert_verify': 'False'}, default_flow_style=False)


def register(state_dir, record):
    """Register the lab's OpenStack as the default VIM; its id."""
    path = os.path.join(state_dir, CONFIG_NAME)
    plane_state.write_private(path, config_text(record['heat']))
    try:
        proc = lab_region.client_run(
            record, ['vim', 'register', '--config-file', path,
                     '--is-default', '--description',
                     'the k8s-mgmt lab\'s OpenStack', '-f', 'json',
                     vim_name(record)],
            capture_output=True, text=True)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        words = ' '.join(proc.stderr.split())[-400:]
        raise LabError('openstack vim register failed (exit status %d): %s'
                       % (proc.returncode, words or 'no message'))
    try:
        return json.loads(proc.stdout)['id']
    except (ValueError, KeyError):
        raise LabError('openstack vim register printed no VIM id')


def register_default(settings):
    """``lab up``'s last step on a lab that runs Tacker: the VIM
    registered and named in the record's ``tacker``."""
    record = manager.read_record(settings)
    record['tacker'] = {'vim_name': vim_name(record),
                        'vim_id': register(settings.state_dir, record)}
    manager.write_record(settings.lab_file, record)
    return record
