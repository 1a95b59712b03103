"""The tacker-conductors of a plane that runs Tacker, each as if on a host
of its own: conductor K is the service ``tacker-conductor`` (K = 1) or
``tacker-conductor-K``, runs as Tacker host ``lab-conductor-K`` (its own
RPC server queues) and keeps our driver's state in a directory of its own.
They share tacker.conf and the state key, as conductor hosts do.

How many a plane runs is recorded in its state dir, so that status, down,
a restart and a driver upgrade handle every one of them.
"""

import json
import os
import textwrap

from k8s_mgmt_lab.openstack import state

MAX_CONDUCTORS = 4
# The file in a plane's state dir that records how many conductors it runs.
COUNT_FILE = 'conductors.json'
FIRST = 'tacker-conductor'
# The per-host queues each conductor's RPC servers consume (v1 and v2),
# with oslo.messaging's ``<topic>.<server>`` names.
TOPICS = ('TACKER_CONDUCTOR', 'TACKER_CONDUCTOR_V2')


def service_name(number):
    return FIRST if number == 1 else '%s-%d' % (FIRST, number)


def service_names(count):
    return tuple(service_name(k) for k in range(1, count + 1))


# Every name a conductor may have: what ``down`` stops whatever the record.
ALL_NAMES = service_names(MAX_CONDUCTORS)


def number_of(name):
    """K of the service ``name``, or None when it is no conductor."""
    if name == FIRST:
        return 1
    prefix, _dash, number = name.rpartition('-')
    if prefix == FIRST and number.isdigit():
        return int(number)
    return None


def host(number):
    """Tacker's ``[DEFAULT] host`` of conductor ``number``."""
    return 'lab-conductor-%d' % number


def queues(number):
    return tuple('%s.%s' % (topic, host(number)) for topic in TOPICS)


def conf_path(layout, number):
    return os.path.join(layout.tacker_etc, 'conductor-%d.conf' % number)


def driver_state_dir(layout, number):
    return os.path.join(layout.tacker_data, 'k8s-mgmt',
                        'conductor-%d' % number)


def package_dir(layout, number):
    """Where conductor ``number`` unpacks VNF packages."""
    return os.path.join(layout.tacker_data, 'conductor-%d' % number,
                        'vnfpackages')


def package_cache_dir(layout, number):
    return os.path.join(layout.tacker_data, 'conductor-%d' % number,
                        'vnf_package_cache')


def conductor_conf(layout, number):
    """conductor-K.conf, read after tacker.conf: what differs between
    conductor hosts."""
    return textwrap.dedent("""\
        [DEFAULT]
        # Each conductor host has its own name: its own RPC server queues.
        host = {host}

        [k8s_mgmt]
        # Each host keeps our driver's state in its own directory.
        state_dir = {state_dir}

        [vnf_package]
        # Each host unpacks every package itself (Tacker fans the upload
        # out to all conductors): in one shared directory their unpacking
        # would race, one removing what the other unpacked.
        vnf_package_csar_path = {packages}

        [v2_nfvo]
        vnf_package_cache_dir = {package_cache}
        """).format(host=host(number),
                    state_dir=driver_state_dir(layout, number),
                    packages=package_dir(layout, number),
                    package_cache=package_cache_dir(layout, number))


def write_confs(layout, count):
    """conductor-1.conf .. conductor-<count>.conf (0600), and each one's
    driver state directory (0700)."""
    for number in range(1, count + 1):
        state.write_private(conf_path(layout, number),
                            conductor_conf(layout, number))
        for path in (driver_state_dir(layout, number),
                     package_dir(layout, number),
                     package_cache_dir(layout, number)):
            os.makedirs(path, mode=0o700, exist_ok=True)


def check_count(count):
    if not 1 <= count <= MAX_CONDUCTORS:
        raise ValueError('a plane runs 1 to %d tacker-conductors, not %r'
                         % (MAX_CONDUCTORS, count))
    return count


def record_count(layout, count):
    state.write_private(os.path.join(layout.root, COUNT_FILE),
                        json.dumps({'conductors': check_count(count)}) + '\n')


def recorded_count(layout):
    """How many conductors the plane was last started with (1 when it
    never recorded any)."""
    try:
        with open(os.path.join(layout.root, COUNT_FILE)) as handle:
            return check_count(int(json.load(handle)['conductors']))
    except (OSError, ValueError, KeyError, TypeError):
        return 1
