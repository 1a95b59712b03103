"""``k8s-mgmt plan``: the real operations' phases printed from request
bodies and a topology file, nothing connected, nothing written."""

import json
import os
import sys

import pytest

from k8s_mgmt.cli import main as cli

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                'operations'))
import op_helpers  # noqa: E402


def _with_password(password):
    body = op_helpers.sample_body('complex')
    install = body['additionalParams']['k8s_cluster_installation_param']
    for group in ('master_node', 'worker_node'):
        install[group]['password'] = password
    return body


@pytest.fixture
def files(tmp_path):
    topo = op_helpers.topology(3, 2, vip='10.254.0.100')
    paths = {}
    for name, data in (('topology', topo.to_dict()),
                       ('complex', _with_password('S3cretPw')),
                       ('heal', {'vnfcInstanceId': ['vnfc-master-2']}),
                       ('scale', {'type': 'SCALE_OUT',
                                  'aspectId': 'worker_instance'})):
        paths[name] = tmp_path / (name + '.json')
        paths[name].write_text(json.dumps(data))
    return {k: str(v) for k, v in paths.items()}


def _plan(capsys, *argv):
    status = cli.main(['plan'] + list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_instantiate_plan_as_json(files, capsys, tmp_path):
    status, out, _err = _plan(capsys, 'instantiate', files['complex'],
                              '--topology', files['topology'], '--json')
    assert status == 0
    walked = json.loads(out)
    assert [p['title'] for p in walked][:10] == [
        'Read the topology from Heat', 'Connect to every node',
        'Upload the scripts', 'Read the cluster network\'s prefix on '
        'master-1', 'Prepare master-1 meanwhile',
        'Configure the load balancer on master-1',
        'Wait until master-1 is prepared',
        'Initialise the first master (master-1)',
        'Prepare the other nodes and the other masters\' load balancers',
        'Wait for the join data from master-1']
    lb = walked[5]
    assert lb['nodes'] == ['master-1']
    assert lb['commands'][0]['stdin'] == ['auth_pass']
    others = [c for c in walked[8]['commands']
              if c.get('stdin') == ['auth_pass']]
    assert [c['node'] for c in others] == ['master-2', 'master-3']
    joins = [p for p in walked if p['title'] == 'Join workers'][0]
    assert [c['node'] for c in joins['commands']] == ['worker-1',
                                                      'worker-2']
    # The nodes' password from the request never shows.
    assert 'S3cretPw' not in out
    assert '"stdin": [\n     "token"' in out


def test_heal_plan_from_the_request_body(files, capsys):
    status, out, _err = _plan(capsys, 'heal-start', files['heal'],
                              '--instantiate-request', files['complex'],
                              '--topology', files['topology'])
    assert status == 0
    assert '7. Hand the VIP over from master-2' in out
    assert ('master-1 [ssh] bash .k8s-mgmt/configure_lb.sh -v '
            '10.254.0.100/24 -b master-1=10.254.0.11,master-3=10.254.0.13'
            in out)


def test_scale_out_plan_shows_the_workers_heat_would_add(files, capsys):
    status, out, _err = _plan(capsys, 'scale-out', files['scale'],
                              '--instantiate-request', files['complex'],
                              '--topology', files['topology'],
                              '--new-workers', '2')
    assert status == 0
    assert '10. Join the new workers  [parallel on 2 nodes]' in out
    assert 'nodes: new-worker-1, new-worker-2' in out


@pytest.mark.parametrize('argv, message', [
    (['scale-out'], 'needs --instantiate-request'),
    (['instantiate'], 'needs its request body'),
    (['instantiate', '/nonexistent.json'], 'cannot read request'),
])
def test_bad_invocations_are_one_line_errors(files, capsys, argv, message):
    status, _out, err = _plan(capsys, *(argv + ['--topology',
                                                files['topology']]))
    assert status == 1
    assert message in err and 'Traceback' not in err


def test_invalid_parameters_are_refused_naming_the_field(files, capsys,
                                                         tmp_path):
    body = op_helpers.sample_body('complex')
    install = body['additionalParams']['k8s_cluster_installation_param']
    install['master_node']['ssh_cp_name'] = ''
    bad = tmp_path / 'bad.json'
    bad.write_text(json.dumps(body))
    status, _out, err = _plan(capsys, 'instantiate', str(bad),
                              '--topology', files['topology'])
    assert status == 1
    assert 'ssh_cp_name' in err


def test_the_upgrade_plan_names_the_target_and_walks_every_node(
        files, capsys):
    status, out, err = _plan(capsys, 'upgrade', '--to', '1.36',
                             '--max-unavailable', '2',
                             '--instantiate-request', files['complex'],
                             '--topology', files['topology'])
    assert status == 0, err
    assert '. Check every node for the upgrade to 1.36  [parallel on 5 ' \
        'nodes]' in out
    assert 'Upgrade worker-1, worker-2 (kubeadm upgrade node)' in out
    assert 'S3cretPw' not in out
    status, out, err = _plan(capsys, 'upgrade', '--instantiate-request',
                             files['complex'], '--topology',
                             files['topology'])
    assert status != 0 and 'an upgrade needs its target (--to)' in err


def test_the_certificates_plans_read_or_renew_every_master(files, capsys):
    status, out, err = _plan(capsys, 'certs-check', '--instantiate-request',
                             files['complex'], '--topology',
                             files['topology'])
    assert status == 0, err
    assert '. Read the certificates on every master' in out
    assert 'Renew' not in out
    status, out, err = _plan(capsys, 'certs-renew', '--instantiate-request',
                             files['complex'], '--topology',
                             files['topology'], '--json')
    assert status == 0, err
    titles = [p['title'] for p in json.loads(out)]
    assert [t.split()[4] for t in titles if t.startswith('Renew')] == [
        'master-2', 'master-3', 'master-1']
    assert titles[-1] == 'Record the certificates\' expiry'
