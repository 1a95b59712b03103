"""The lab lane runs its modules on two xdist workers at once, so no two
modules may build labs on one subnet, bridge or tag (a lab's cleanup
removes every namespace and link whose name starts with its tag), and
each worker's shared lab (tests/lab/session_lab.py) has its own too."""

import collections
import importlib.util
import os
import re

LAB_TESTS = os.path.join(os.path.dirname(__file__), '..', '..', 'lab')
SUBNET = re.compile(r"10\.254\.(\d+)\.0/24")
BRIDGE = re.compile(r"'(k8slab\w+)'")
TAG = re.compile(r"tag\s*=\s*'(\w+)'|'k8slab\w+',\s*'(\w+)'")


def _session_lab():
    path = os.path.join(LAB_TESTS, 'session_lab.py')
    spec = importlib.util.spec_from_file_location('session_lab_seen', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def owners():
    """{(kind, value): {owner, ...}} over the lab test modules, and one
    owner per worker's shared lab."""
    found = collections.defaultdict(set)
    session = _session_lab()
    for index in range(session.MAX_WORKERS):
        _, subnet, bridge, tag = session.settings(index)
        owner = 'shared lab of worker %d' % index
        found['subnet', SUBNET.search(subnet).group(1)].add(owner)
        found['bridge', bridge].add(owner)
        found['tag', tag].add(owner)
    for name in sorted(os.listdir(LAB_TESTS)):
        if not name.startswith('test_') or not name.endswith('.py'):
            continue
        with open(os.path.join(LAB_TESTS, name)) as handle:
            text = handle.read()
        # The shared lab's own subnet, bridge and tag come from
        # session_lab; a module naming them literally would pin worker 0's.
        for number in SUBNET.findall(text):
            found['subnet', number].add(name)
        for bridge in BRIDGE.findall(text):
            found['bridge', bridge].add(name)
        for pair in TAG.findall(text):
            found['tag', pair[0] or pair[1]].add(name)
    return found


def test_no_two_labs_share_a_subnet_bridge_or_tag():
    shared = {key: sorted(users) for key, users in owners().items()
              if len(users) > 1}
    assert not shared, shared


def test_no_tag_starts_another():
    tags = sorted(value for kind, value in owners() if kind == 'tag')
    clashes = [(a, b) for a in tags for b in tags
               if a != b and b.startswith(a)]
    assert not clashes, clashes


def test_the_scan_finds_the_labs_it_guards():
    found = owners()
    assert ('subnet', '203') in found and ('bridge', 'k8slabt3') in found
    assert ('tag', 'kcr') in found        # the positional form
    assert found['subnet', '200'] == {'shared lab of worker 0'}
