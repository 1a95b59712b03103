"""``k8s-mgmt lab plan``: the plan printed before an operation is what the
operation then runs, title for title, in order (skips included)."""

import json
import re

import pytest

from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-plan'
SUBNET = '10.254.248.0/24'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabpl', tag='lpl', timeout=900)
RUN_LINE = re.compile(r'\] ==> (.*)$')


@pytest.fixture(scope='module')
def plan_lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'complex', '--workers', '1',
                 '--max-workers', '3', '--subnet', SUBNET)
        yield


def _plan(*args):
    phases = json.loads(k8s_mgmt('plan', *args, '--json').stdout)
    return [p['title'] + (': skipped (%s)' % p['skipped']
                          if 'skipped' in p else '') for p in phases]


def _run_lines(proc):
    """The ``==>`` lines the driver logged while the verb ran."""
    return [m.group(1) for m in map(RUN_LINE.search,
                                    proc.stderr.splitlines()) if m]


def test_instantiate_runs_the_plan_line_for_line(plan_lab):
    planned = _plan('instantiate')
    assert planned[:2] == ['Read the topology from Heat',
                           'Connect to every node']
    assert 'Join workers' in planned and 'Register the VIM' in planned
    ran = _run_lines(k8s_mgmt('instantiate'))
    assert ran == planned
    # On the running cluster the plan reads the nodes' state: a re-run
    # joins nobody, and it runs exactly that.
    again = _plan('instantiate')
    assert 'Join nodes: skipped (every node is already Ready)' in again
    assert 'Read join data' not in again
    assert _run_lines(k8s_mgmt('instantiate')) == again


def test_scale_out_runs_the_plan_line_for_line(plan_lab):
    planned = _plan('scale-out', '--new-workers', '1')
    assert 'Join the new workers' in planned
    ran = _run_lines(k8s_mgmt('scale', '--type', 'SCALE_OUT'))
    assert ran == planned
