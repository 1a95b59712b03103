"""The storage server's export and mount rules, before any VM: who an
export may name, where a volume may be mounted or a directory exported,
and the per-export squash (:mod:`k8s_mgmt.params.nfs_exports`)."""

import ipaddress
import json
import random
import types

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt.cli import main as cli_main
from k8s_mgmt.engine import scripts
from k8s_mgmt.params import nfs_exports
from k8s_mgmt.topology import model as topology

import params_helpers as h

S = h.ROOT + '.storage_server'
EXPORT = S + '.nfs_server_setup_params[0].'
# A second volume, so that its mount point alone is what a test changes.
VOLUME = S + '.cinder_volume_setup_params[1].'


def storage(allow_wide=None, export_to='10.254.0.0/24',
            export_dir='/volume/nfs/pv1', mount_to=None, **export):
    """The storage sample request with its first export changed, and a
    second volume mounted at ``mount_to`` when given."""
    body = h.sample('storage')
    section = body['additionalParams'][h.ROOT]['storage_server']
    if allow_wide is not None:
        section['allow_wide_export'] = allow_wide
    if mount_to is not None:
        section['cinder_volume_setup_params'].append(
            {'volume_resource_id': 'second_volume', 'mount_to': mount_to})
    first = section['nfs_server_setup_params'][0]
    first.update(export_dir=export_dir, export_to=export_to, **export)
    return body


BAD = [
    # Never, allow_wide_export or not.
    ('export_to', '0.0.0.0/0', 'includes unspecified addresses (0.0.0.0/8)'),
    ('export_to', '0.0.0.0', 'includes unspecified addresses'),
    ('export_to', '0.10.0.0/16', 'includes unspecified addresses'),
    ('export_to', '127.0.0.1', 'includes loopback addresses (127.0.0.0/8)'),
    ('export_to', '127.0.0.0/16', 'includes loopback addresses'),
    ('export_to', '169.254.169.254', 'includes link-local addresses '
                                     '(169.254.0.0/16)'),
    ('export_to', '224.0.0.251', 'includes multicast addresses '
                                 '(224.0.0.0/4)'),
    ('export_to', '239.255.0.0/16', 'includes multicast addresses'),
    ('export_to', '255.255.255.255', 'includes broadcast addresses'),
    ('export_to', '255.255.0.0/16', 'includes broadcast addresses'),
    # Wider than /16 without allow_wide_export.
    ('export_to', '10.0.0.0/8', 'is wider than /16: give the cluster\'s '
                                'node network, or set storage_server.'
                                'allow_wide_export: true'),
    ('export_to', '10.254.0.0/15', 'is wider than /16'),
    ('mount_to', '/etc', "'/etc' is in the system directory /etc"),
    ('mount_to', '/usr/local/data', 'in the system directory /usr'),
    ('mount_to', '/var', 'holds the system directory /var/lib'),
    ('mount_to', '/var/lib/nfs', 'in the system directory /var/lib'),
    ('mount_to', '/lib64', 'in the system directory /lib64'),
    ('mount_to', '/boot/efi', 'in the system directory /boot'),
    ('mount_to', '/root/data', 'in the system directory /root'),
    ('mount_to', '/tmp/volume', 'in the system directory /tmp'),
    ('mount_to', '//run/./x', "'/run/x' is in the system directory /run"),
    ('mount_to', '/srv/ubuntu/.ssh', 'has a .ssh component'),
    ('mount_to', '/proc/self', 'in the system directory /proc'),
    ('mount_to', '/sys', 'in the system directory /sys'),
    ('mount_to', '/dev/disk', 'in the system directory /dev'),
    ('mount_to', '/bin', 'in the system directory /bin'),
    ('mount_to', '/sbin/x', 'in the system directory /sbin'),
    # An export lies on a volume: refused in a system directory even when
    # a volume is mounted above it.
    ('export_dir', '/volume/.ssh/keys', 'has a .ssh component'),

]


def where(field):
    return (VOLUME if field == 'mount_to' else EXPORT) + field


def body_with(field, value):
    return storage(**{field: value})


@pytest.mark.parametrize('field,value,reason', BAD)
def test_each_bad_value_is_one_problem_naming_the_field(field, value,
                                                        reason):
    problems = h.problems_of(params.load_request, body_with(field, value))
    assert h.paths(problems) == [where(field)], problems
    assert reason in problems[0][1]


@pytest.mark.parametrize('field,value,reason', BAD[:3])
def test_validate_exits_2_with_one_line_naming_the_field(
        field, value, reason, tmp_path, capsys):
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(body_with(field, value)))
    assert cli_main.main(['validate', str(path)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(where(field) + ': ')


def test_validate_as_a_process_names_the_field(tmp_path):
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(storage(export_to='0.0.0.0/0')))
    done = h.validate_cli(str(path))
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        EXPORT + 'export_to: 0.0.0.0/0 includes unspecified addresses '
        '(0.0.0.0/8): an export is for the cluster\'s nodes only']


def test_allow_wide_export_allows_wide_networks_only():
    found = params.load_request(storage(allow_wide=True,
                                        export_to='10.0.0.0/8'))
    assert found.storage_server.allow_wide_export is True
    assert found.storage_server.nfs_server_setup_params[0].export_to == \
        '10.0.0.0/8'
    for never in ('0.0.0.0/0', '96.0.0.0/3', '128.0.0.0/1',
                  '169.254.169.254'):
        problems = h.problems_of(params.load_request,
                                 storage(allow_wide=True, export_to=never))
        assert h.paths(problems) == [EXPORT + 'export_to'], never
    problems = h.problems_of(params.load_request,
                             storage(allow_wide='yes'))
    assert problems == [(S + '.allow_wide_export',
                         'expected true or false, got a string')]


def test_the_sample_is_root_squash_and_narrow():
    found = params.load_request(h.sample('storage'))
    server = found.storage_server
    assert server.allow_wide_export is False
    assert [e.no_root_squash for e in server.nfs_server_setup_params] == \
        [False, False, False]
    # Nothing false appears when the parameters are written back.
    written = found.to_dict()['storage_server']
    assert 'allow_wide_export' not in written
    assert all('no_root_squash' not in e
               for e in written['nfs_server_setup_params'])


def test_no_root_squash_is_per_export_and_reaches_the_script():
    body = storage(no_root_squash=True, allow_wide=True,
                   export_to='10.0.0.0/8')
    found = params.load_request(body)
    exports = found.storage_server.nfs_server_setup_params
    assert [e.no_root_squash for e in exports] == [True, False, False]
    assert found.to_dict()['storage_server']['nfs_server_setup_params'][
        0]['no_root_squash'] is True
    node = types.SimpleNamespace(name='storage-1')
    volume = topology.Volume('storage_server_volume', 'vol-1', '/dev/vdb',
                             'srv-1')
    call = scripts.storage_server_call(
        node, found, {'storage_server_volume': volume})
    assert call.argv == (
        'server', '--volume', 'vol-1,/dev/vdb,/volume',
        '--export', '/volume/nfs/pv1,10.0.0.0/8,no_root_squash',
        '--export', '/volume/nfs/pv2,10.254.0.0/24,root_squash',
        '--export', '/volume/nfs/pv3,10.254.0.0/24,root_squash',
        '--allow-wide-export')
    narrow = params.load_request(h.sample('storage'))
    assert '--allow-wide-export' not in scripts.storage_server_call(
        node, narrow, {'storage_server_volume': volume}).argv
    problems = h.problems_of(params.load_request,
                             storage(no_root_squash='true'))
    assert problems == [(EXPORT + 'no_root_squash',
                         'expected true or false, got a string')]


def test_export_dirs_in_system_directories_are_refused():
    body = storage(mount_to='/srv/data', export_dir='/srv/data/x')
    section = body['additionalParams'][h.ROOT]['storage_server']
    section['nfs_server_setup_params'][1]['export_dir'] = '/etc/nfs'
    problems = h.problems_of(params.load_request, body)
    assert problems == [(
        S + '.nfs_server_setup_params[1].export_dir',
        "'/etc/nfs' is in the system directory /etc: no volume is mounted "
        "and no directory exported there")]


def test_paths_are_cleaned_and_ordinary_ones_pass():
    found = params.load_request(storage(mount_to='//srv/./data/',
                                        export_dir='/srv//data/./pv1'))
    server = found.storage_server
    assert server.cinder_volume_setup_params[1].mount_to == '/srv/data'
    assert server.nfs_server_setup_params[0].export_dir == '/srv/data/pv1'
    for path in ('/srv/tmp', '/var/tmp/x', '/usrx', '/srv/u/.sshx',
                 '/mnt/lib', '/var/local', '/mnt/data', '/data/pv1',
                 '/srv/home', '/homes', '/optx', '/var/spool/nfs',
                 '/var/logs', '/snapshots'):
        assert nfs_exports.system_dir(path) is None, path


# Where a volume would hide users' keys, installed software, the logs,
# the crontabs or the snap binaries: refused with what holds them.
HIDING = [('/home', 'is in the system directory /home'),
          ('/home/u/data', 'is in the system directory /home'),
          ('/opt', 'is in the system directory /opt'),
          ('/opt/nfs', 'is in the system directory /opt'),
          ('/var/log', 'is in the system directory /var/log'),
          ('/var/log/nfs', 'is in the system directory /var/log'),
          ('/var/spool/cron/crontabs',
           'is in the system directory /var/spool/cron'),
          ('/var/spool', 'holds the system directory /var/spool/cron'),
          ('/snap/bin', 'is in the system directory /snap'),
          ('/snap', 'is in the system directory /snap')]


@pytest.mark.parametrize('field', ['mount_to', 'export_dir'])
@pytest.mark.parametrize('value,reason', HIDING)
def test_homes_opt_logs_crontabs_and_snaps_are_refused(field, value,
                                                       reason):
    problems = h.problems_of(params.load_request, body_with(field, value))
    assert problems == [(where(field), '%r %s: no volume is mounted and no '
                         'directory exported there' % (value, reason))]


# -- seeded mutation: random networks against an independent statement ----

# The refused ranges as (first, last) integers, written out by hand.
_RANGES = [(0x00000000, 0x00FFFFFF), (0x7F000000, 0x7FFFFFFF),
           (0xA9FE0000, 0xA9FEFFFF), (0xE0000000, 0xEFFFFFFF),
           (0xFFFFFFFF, 0xFFFFFFFF)]
_NEAR = [0x00000000, 0x7F000001, 0xA9FEA9FE, 0xE0000001, 0xFFFFFFFF,
         0x0A000000, 0xAC100000, 0xC0A80000, 0x64400000]


def _expected_refusal(network, allow_wide):
    first = int(network.network_address)
    last = int(network.broadcast_address)
    if any(first <= high and low <= last for low, high in _RANGES):
        return True
    return network.prefixlen < 16 and not allow_wide


def test_random_export_networks_are_one_problem_or_valid():
    chance = random.Random(2703)
    checked = refused = 0
    for _ in range(400):
        base = chance.choice(_NEAR) ^ chance.getrandbits(
            chance.choice((0, 8, 16, 32)))
        prefix = chance.choice((32, 24, 16, 15, 12, 8, 4, 1, 0,
                                chance.randint(0, 32)))
        network = ipaddress.ip_network('%s/%d' % (
            ipaddress.ip_address(base & 0xFFFFFFFF), prefix), strict=False)
        allow_wide = chance.random() < 0.5
        body = storage(allow_wide=allow_wide, export_to=str(network))
        try:
            params.load_request(body)
            problems = []
        except exceptions.ValidationError as err:
            problems = err.problems
        expected = _expected_refusal(network, allow_wide)
        assert bool(problems) == expected, (network, allow_wide, problems)
        if problems:
            assert h.paths(problems) == [EXPORT + 'export_to'], problems
            refused += 1
        checked += 1
    assert checked == 400 and 100 < refused < 350


_PARTS = ['srv', 'data', 'nfs', 'etc', 'usr', 'var', 'lib',
          'lib64', 'library', 'tmp', 'run', '.ssh', '.sshx', 'root', 'home',
          'boot', 'proc', 'sys', 'dev', 'bin', 'sbin', 'mnt', '.', '', 'opt',
          'log', 'snap']


def _expected_system(parts):
    named = [p for p in parts if p not in ('', '.')]
    if not named:
        return True  # the root directory itself
    top = named[0]
    if top.startswith('lib') or '.ssh' in named:
        return True
    if top in ('usr', 'etc', 'bin', 'sbin', 'boot', 'root', 'proc', 'sys',
               'dev', 'run', 'tmp', 'home', 'opt', 'snap'):
        return True
    return top == 'var' and (len(named) == 1 or named[1] in ('lib', 'log'))


def test_random_mount_points_are_one_problem_or_valid():
    chance = random.Random(2704)
    refused = 0
    for _ in range(300):
        parts = [chance.choice(_PARTS) for _ in range(chance.randint(1, 4))]
        mount = '/' + '/'.join(parts)
        body = body_with('mount_to', mount)
        try:
            params.load_request(body)
            problems = []
        except exceptions.ValidationError as err:
            problems = err.problems
        assert bool(problems) == _expected_system(parts), (mount, problems)
        if problems:
            assert h.paths(problems) == [where('mount_to')], problems
            refused += 1
    assert 50 < refused < 280
