"""Fixtures of the lab suite: real namespaces, real sshd, nothing left behind.

The whole suite is skipped, with the reason, when not run as root or when a
binary the lab needs is missing. The session starts by removing leftovers of
an earlier interrupted run and ends by tearing the test lab down and
asserting that no namespace, process, mount, link or state dir remains.
"""

import itertools
import os
import shutil
import sys
import uuid

import pytest

# --import-mode=importlib leaves sys.path alone: helpers beside the tests
# (lab_cli) are found from here.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import session_lab  # noqa: E402

# Not the defaults, so tests never touch a lab an operator has running;
# one per xdist worker.
TEST_STATE_DIR = session_lab.STATE_DIR
TEST_SUBNET = session_lab.SUBNET
TEST_BRIDGE = session_lab.BRIDGE
TEST_TAG = session_lab.TAG
TEST_PASSWORD = 'ubuntu'

REQUIRED_BINARIES = ['ip', 'unshare', 'nsenter', 'mount', 'umount', 'chroot',
                     'mknod', 'ssh-keygen', 'openssl', '/usr/sbin/sshd',
                     'sudo', '/usr/bin/python3']


def lab_unavailable_reason():
    if os.geteuid() != 0:
        return 'lab tests need root (network namespaces, mounts)'
    missing = [b for b in REQUIRED_BINARIES if not shutil.which(b)]
    if missing:
        return 'lab tests need missing binaries: %s' % ' '.join(missing)
    if not os.path.exists('/usr/lib/openssh/sftp-server'):
        return 'lab tests need Debian openssh-server'
    try:
        import paramiko  # noqa: F401
    except ImportError:
        return 'lab tests need paramiko'
    return None


# The modules that take longest (worker-seconds on real Keystone and Heat:
# each Tacker module 600-1000 s, kubespray 330-790, heal 150-710), run
# first: under ``--dist loadfile --no-loadscope-reorder`` (tox -e lab,
# .ci/run) the workers take modules in this order, and a long module
# started last would run alone at the end of the lane.
LONGEST_FIRST = ('test_through_tacker.py', 'test_through_tacker_v2.py',
                 'test_kubespray.py', 'test_heal.py',
                 'test_through_tacker_readme.py',
                 'test_through_tacker_kubespray.py',
                 'test_through_tacker_simple.py',
                 'test_through_tacker_storage.py',
                 'test_through_tacker_v2_kubespray.py',
                 'test_through_tacker_podaffinity.py',
                 'test_conductor_lost.py', 'test_storage.py',
                 'test_through_tacker_v2_storage.py',
                 'test_through_tacker_v2_podaffinity.py',
                 'test_scale.py', 'test_instantiate.py',
                 'test_through_tacker_v2_simple.py')


def _module_rank(item):
    name = os.path.basename(str(item.fspath))
    return (LONGEST_FIRST.index(name) if name in LONGEST_FIRST
            else len(LONGEST_FIRST))


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    reason = lab_unavailable_reason()
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            item.add_marker(pytest.mark.lab)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
    # The lab's tests are reordered among the places they hold (the other
    # lanes' tests stay where they are); a stable sort keeps each module's
    # tests in their order.
    slots = [i for i, item in enumerate(items)
             if str(item.fspath).startswith(here + os.sep)]
    ordered = sorted((items[i] for i in slots), key=_module_rank)
    for slot, item in zip(slots, ordered):
        items[slot] = item


def assert_nothing_left(state_dir, tag, bridge):
    from k8s_mgmt_lab.machines import cleanup
    left = cleanup.find_leftovers(state_dir, tag, bridge)
    assert not any(left.values()), 'lab leftovers: %s' % left
    # The same, seen the way an operator would look.
    netns = cleanup.run(['ip', 'netns', 'list']).stdout.split()
    assert not [n for n in netns if n.startswith(tag + '-')]
    links = cleanup.run(['ip', '-o', 'link']).stdout
    assert (' %sh' % tag) not in links and (' %s:' % bridge) not in links
    with open('/proc/mounts') as f:
        targets = [line.split()[1] for line in f]
    # Other labs' state dirs may share this one's name as a prefix.
    assert not [t for t in targets
                if t == state_dir or t.startswith(state_dir + '/')]
    # Launchers carry the state dir on their command line.
    ps = cleanup.run(['ps', '-eo', 'stat=,args=']).stdout
    assert state_dir + '/' not in ps, ps


@pytest.fixture(scope='session')
def lab_config():
    """Settings of the test lab (not the operator defaults)."""
    return {'state_dir': TEST_STATE_DIR, 'subnet': TEST_SUBNET,
            'bridge': TEST_BRIDGE, 'tag': TEST_TAG, 'password': TEST_PASSWORD}


@pytest.fixture(scope='session')
def assert_lab_clean():
    """assert_lab_clean(state_dir, tag, bridge): nothing of that lab left."""
    return assert_nothing_left


@pytest.fixture(scope='session', autouse=True)
def one_module_per_worker(request):
    """Under pytest-xdist every lab test fails before building anything
    unless each module goes whole to one worker (``--dist loadfile``): a
    module's lab has fixed settings, and two workers running its tests
    would build it twice on one subnet, bridge and state dir."""
    worker_input = getattr(request.config, 'workerinput', None)
    argv = (os.environ.get('PYTEST_ADDOPTS', '').split()
            + list((worker_input or {}).get('mainargv', ())))
    if worker_input and _dist_mode(argv) != 'loadfile':
        pytest.fail('the lab suite runs under pytest-xdist only with '
                    '--dist loadfile (tox -e lab)', pytrace=False)


def _dist_mode(argv):
    """The ``--dist`` mode of the controller's command line, after
    PYTEST_ADDOPTS (a worker's own option says "no"); xdist's default is
    "load"."""
    mode = 'load'
    for index, arg in enumerate(argv):
        if arg == '--dist' and index + 1 < len(argv):
            mode = argv[index + 1]
        elif arg.startswith('--dist='):
            mode = arg.split('=', 1)[1]
    return mode


@pytest.fixture(scope='session', autouse=True)
def shared_control_plane(tmp_path_factory):
    """One real control plane (MariaDB, RabbitMQ, Keystone, Heat, and
    Barbican and Tacker once a lab needs them) per worker for every lab
    the session builds, in-process or through ``k8s-mgmt lab up``: its
    directory goes to the environment, the first lab up starts it, and it
    stops when the session ends; nothing of it keeps running. A lab on a
    shared plane (``K8S_MGMT_LAB_CONTROL_PLANE``) gets a region and
    project of its own in it; a lab with a plane of its own
    (``--own-control-plane``, ``K8S_MGMT_LAB_WARM_PLANE``) borrows its
    RegionOne and Tacker while it is up, with a project of its own, and
    starts a plane of its own only when another lab holds them."""
    from k8s_mgmt_lab.openstack import control_plane
    from k8s_mgmt_lab.openstack import lab_region
    root = str(tmp_path_factory.mktemp('control-plane'))
    names = (lab_region.SHARED_PLANE_ENV, lab_region.WARM_PLANE_ENV)
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(dict.fromkeys(names, root))
    try:
        yield root
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
        control_plane.ControlPlane(root).down()


@pytest.fixture(scope='session', autouse=True)
def lab_leak_check():
    """After the whole lab suite: the test lab is gone without a trace."""
    yield
    from k8s_mgmt_lab.machines import cleanup
    cleanup.teardown(TEST_STATE_DIR, tag=TEST_TAG, bridge=TEST_BRIDGE)
    assert_nothing_left(TEST_STATE_DIR, TEST_TAG, TEST_BRIDGE)


@pytest.fixture(scope='session')
def lab_network():
    from k8s_mgmt_lab.machines import cleanup
    from k8s_mgmt_lab.machines import net
    cleanup.teardown(TEST_STATE_DIR, tag=TEST_TAG, bridge=TEST_BRIDGE)
    network = net.LabNetwork(TEST_STATE_DIR, subnet=TEST_SUBNET,
                             bridge=TEST_BRIDGE, tag=TEST_TAG)
    network.up()
    yield network
    cleanup.teardown(TEST_STATE_DIR, tag=TEST_TAG, bridge=TEST_BRIDGE)
    assert_nothing_left(TEST_STATE_DIR, TEST_TAG, TEST_BRIDGE)


@pytest.fixture(scope='session')
def vm_manager(lab_network):
    from k8s_mgmt_lab.machines import vm
    return vm.VMManager(lab_network, TEST_STATE_DIR, password=TEST_PASSWORD)


_hostnames = itertools.count(1)


@pytest.fixture
def make_vms(vm_manager, lab_network):
    """make_vms(n) boots n VMs in parallel; they are destroyed after the test
    whatever its outcome."""
    created = []

    def make(count=1):
        used = [v.ip for v in vm_manager.list()]
        ips = lab_network.free_ips(used)[:count]
        specs = [(str(uuid.uuid4()), 'labvm-%d' % next(_hostnames), ip)
                 for ip in ips]
        created.extend(s[0] for s in specs)
        return vm_manager.create_many(specs)

    yield make
    for vm_id in created:
        if vm_id in vm_manager.registry.read()['vms']:
            vm_manager.destroy(vm_id)


@pytest.fixture
def make_lab(assert_lab_clean):
    """make_lab(settings): a Lab cleared of an interrupted run's leftovers;
    taken down after the test, whatever its outcome, and checked clean."""
    from k8s_mgmt_lab import manager
    made = []

    def make(settings):
        the_lab = manager.Lab(settings)
        the_lab.down()
        made.append(the_lab)
        return the_lab

    yield make
    for the_lab in made:
        the_lab.down()
        settings = the_lab.settings
        assert_lab_clean(settings.state_dir, settings.tag, settings.bridge)
