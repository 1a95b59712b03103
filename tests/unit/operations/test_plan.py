"""The instantiate plan: the phases instantiate_end runs, walked without
connecting (the dry run). Which script runs where, in which order, with
which arguments and which secrets on stdin."""

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt import shipped
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.engine import run as run_mod
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads

import op_helpers

TOKEN = node_work.PLANNED_JOIN.token
CERT_KEY = node_work.PLANNED_JOIN.certificate_key
VRRP = run_mod.ReadOnlyState.PLACEHOLDER

# The init prints the join data and the VIM's token (-R): no token-secret
# or print-join run.
# The other nodes prepare (containerd, packages) during the init, in the
# background; the joins start on the init's join data line (early_join),
# and its VIM credentials are waited for after them.
INIT = 'Initialise the first master (master-1)'
PREPARE = 'Prepare the other nodes'
WAIT_JOIN = [
    'Wait for the join data from master-1',
    'Wait until the other nodes are ready to join',
    'Read the cluster\'s nodes with the registered VIM']
WAIT_INIT = 'Wait for the end of the init on master-1'
SIMPLE_TITLES = [
    'Read the topology from Heat', 'Connect to every node',
    'Upload the scripts', INIT, PREPARE] + WAIT_JOIN + [
    'Join workers', WAIT_INIT,
    'Wait until every node is Ready', 'Label workers', 'Register the VIM']


def _plan(flavour, masters, workers, vip=None, ready=(), **overrides):
    topo = op_helpers.topology(masters, workers, vip=vip,
                               anti_affinity=(flavour == 'podaffinity'))
    params = op_helpers.sample_params(flavour, **overrides)
    return topo, op_helpers.plan(params, topo, ready=ready, vip_prefix=24)


def _opt(argv, flag):
    return argv[argv.index(flag) + 1]


def _all_calls(phases):
    return [c for p in phases for c in op_helpers.calls(p)]


def test_simple_plan_init_token_join_then_workers_in_parallel():
    topo, phases = _plan('simple', 1, 2)
    assert op_helpers.titles(phases) == SIMPLE_TITLES
    assert not any(p.skip for p in phases)
    connect = op_helpers.phase(phases, 'Connect to every node')
    assert connect.parallel
    assert connect.nodes == ('master-1', 'worker-1', 'worker-2')
    init_phase = op_helpers.phase(phases, INIT)
    assert init_phase.background
    init, = op_helpers.calls(init_phase)
    prepares = op_helpers.calls(op_helpers.phase(phases, PREPARE))
    assert init.node == 'master-1' and init.argv[0] == 'init'
    # Meanwhile the workers get ready to join, with the join's options.
    assert [(c.node, c.argv[:3]) for c in prepares] == [
        ('worker-1', ('prepare', '-e', '10.254.0.11:6443')),
        ('worker-2', ('prepare', '-e', '10.254.0.11:6443'))]
    assert prepares[0].argv[3:] == tuple(init.argv[init.argv.index('-k'):])
    assert _opt(init.argv, '-e') == '10.254.0.11:6443'
    assert _opt(init.argv, '-a') == '10.254.0.11'
    assert _opt(init.argv, '-H') == 'master-1'
    assert _opt(init.argv, '-k') == '1.35'
    assert _opt(init.argv, '-P') == '192.168.0.0/16'
    assert _opt(init.argv, '-S') == '10.199.187.0/24'
    assert _opt(init.argv, '-C') == '10.254.0.0/24'
    assert '-A' not in init.argv
    workers = op_helpers.phase(phases, 'Join workers')
    assert workers.parallel
    calls = op_helpers.calls(workers)
    assert [c.node for c in calls] == ['worker-1', 'worker-2']
    for call in calls:
        assert call.argv[0] == 'join-worker'
        assert _opt(call.argv, '-e') == '10.254.0.11:6443'
        assert _opt(call.argv, '-t') == node_work.PLANNED_JOIN.ca_cert_hash
        assert [k for k, _v in call.stdin_secrets] == ['token']
        # Prepared during the init: the join skips the prepare's checks.
        assert '-p' in call.argv
    # The simple init prepares its own node.
    assert '-p' not in init.argv


def test_simple_plan_uploads_the_library_then_the_install_script():
    _topo, phases = _plan('simple', 1, 1)
    upload = op_helpers.phase(phases, 'Upload the scripts')
    puts = [(w.node, w.text) for w in upload.work if w.kind == 'sftp']
    assert puts == [
        ('master-1', 'put .k8s-mgmt/k8s_mgmt_lib.sh (mode 0700)'),
        ('master-1', 'put .k8s-mgmt/install_k8s_cluster.sh (mode 0700)'),
        ('master-1', 'put .k8s-mgmt/k8s_mgmt_upgrade.sh (mode 0700)'),
        ('worker-1', 'put .k8s-mgmt/k8s_mgmt_lib.sh (mode 0700)'),
        ('worker-1', 'put .k8s-mgmt/install_k8s_cluster.sh (mode 0700)'),
        ('worker-1', 'put .k8s-mgmt/k8s_mgmt_upgrade.sh (mode 0700)')]


def test_complex_plan_lb_everywhere_then_masters_one_at_a_time():
    topo, phases = _plan('complex', 3, 2, vip='10.254.0.100')
    # The workers join in the background while the masters join in turn.
    others = PREPARE + ' and the other masters\' load balancers'
    assert op_helpers.titles(phases) == (
        SIMPLE_TITLES[:3] + [
            'Read the cluster network\'s prefix on master-1',
            'Prepare master-1 meanwhile',
            'Configure the load balancer on master-1',
            'Wait until master-1 is prepared', INIT, others] +
        WAIT_JOIN + ['Join workers', 'Join master master-2',
                     'Join master master-3', 'Wait for the workers to join',
                     WAIT_INIT,
                     'Track the API server in keepalived on master-1']
        + SIMPLE_TITLES[-3:])
    assert [p.title for p in phases if p.background] == [
        'Prepare master-1 meanwhile', INIT, others, 'Join workers',
        'Track the API server in keepalived on master-1']
    assert op_helpers.phase(phases, 'Wait for the workers to join').nodes \
        == ('worker-1', 'worker-2')
    # The first master is prepared while its load balancer is set up (the
    # scripts take turns at apt-get); the init then finds it done.
    first_prepare = op_helpers.calls(
        op_helpers.phase(phases, 'Prepare master-1 meanwhile'))
    assert [(c.node, c.mode) for c in first_prepare] == [
        ('master-1', 'prepare')]
    # Every init and join comes after its node's prepare: -p on each.
    starts = [c for c in _all_calls(phases)
              if c.argv[0] in ('init', 'join-master', 'join-worker')]
    assert sorted(c.node for c in starts) == [
        'master-1', 'master-2', 'master-3', 'worker-1', 'worker-2']
    assert all('-p' in c.argv for c in starts)
    upload = op_helpers.phase(phases, 'Upload the scripts')
    lb_puts = [w.node for w in upload.work
               if w.text.startswith('put .k8s-mgmt/%s' % uploads.CONFIGURE_LB)]
    assert lb_puts == ['master-1', 'master-2', 'master-3']
    # The init needs the VIP: the first master's load balancer comes
    # first; the others' run during the init, after their prepare.
    lb = op_helpers.phase(phases, 'Configure the load balancer on master-1')
    init_phase = op_helpers.phase(phases, INIT)
    others_phase = op_helpers.phase(phases, others)
    during = [c for c in op_helpers.calls(others_phase)
              if c.mode == 'configure-lb']
    calls = op_helpers.calls(lb) + during
    assert [c.node for c in calls] == ['master-1', 'master-2', 'master-3']
    for node in ('master-2', 'master-3'):
        assert [c.mode for c in op_helpers.calls(others_phase)
                if c.node == node] == ['prepare', 'configure-lb']
    priorities = [_opt(c.argv, '-P') for c in calls]
    # Far enough apart that one backup's takeover timer clearly fires first.
    assert priorities == ['250', '240', '230']
    for call, master in zip(calls, topo.masters):
        assert _opt(call.argv, '-v') == '10.254.0.100/24'
        assert _opt(call.argv, '-b') == ('master-1=10.254.0.11,'
                                         'master-2=10.254.0.12,'
                                         'master-3=10.254.0.13')
        assert _opt(call.argv, '-l') == master.nic_ip
        assert call.stdin_secrets == (('auth_pass', VRRP),)
    # Only the master about to be initialised skips the API server check
    # (it wins the VIP during its init), until the joins are done.
    assert ['-B' in c.argv for c in calls] == [True, False, False]
    track, = op_helpers.calls(op_helpers.phase(
        phases, 'Track the API server in keepalived on master-1'))
    assert track.node == 'master-1' and '-B' not in track.argv
    assert track.argv == calls[0].argv[:-1]
    init, = op_helpers.calls(init_phase)
    prepares = [c for c in op_helpers.calls(others_phase)
                if c.mode != 'configure-lb']
    assert '-A' in init.argv and _opt(init.argv, '-e') == '10.254.0.100:16443'
    assert [c.node for c in prepares] == ['master-2', 'master-3', 'worker-1',
                                          'worker-2']
    for name in ('master-2', 'master-3'):
        join = op_helpers.phase(phases, 'Join master %s' % name)
        assert not join.parallel
        call, = op_helpers.calls(join)
        assert call.argv[0] == 'join-master' and call.node == name
        assert [k for k, _v in call.stdin_secrets] == ['token',
                                                       'certificate_key']
    assert '-R' in init.argv


def test_podaffinity_plan_is_the_ha_plan_and_labels_by_compute_host():
    _topo, phases = _plan('podaffinity', 3, 3, vip='10.254.0.100')
    assert phases[5].title.startswith('Configure the load balancer')
    workers = op_helpers.phase(phases, 'Join workers')
    assert len(workers.work) == 3 and workers.parallel
    labels = op_helpers.phase(phases, 'Label workers')
    assert labels.nodes == ('worker-1', 'worker-2', 'worker-3')
    assert [w.text for w in labels.work][0] == (
        'PATCH node worker-1 labels CIS-node=compute-1')


def test_ready_nodes_are_not_joined_again():
    _topo, phases = _plan('complex', 3, 2, vip='10.254.0.100',
                          ready=('master-2', 'worker-1'))
    joins = [(c.argv[0], c.node) for c in _all_calls(phases)
             if c.argv[0].startswith('join')]
    assert sorted(joins) == [('join-master', 'master-3'),
                             ('join-worker', 'worker-2')]
    ready = ('master-1', 'worker-1', 'worker-2')
    _topo, phases = _plan('simple', 1, 2, ready=ready)
    join = op_helpers.phase(phases, 'Join nodes')
    assert join.skip == 'every node is already Ready'
    assert op_helpers.titles(phases) == (
        SIMPLE_TITLES[:8] + ['Join nodes'] + SIMPLE_TITLES[9:])


def test_secrets_never_in_argv_and_only_on_stdin():
    proxy = {'http_proxy': 'http://user:Pr0xyPw@proxy:3128',
             'https_proxy': 'http://user:Pr0xyPw@proxy:3128',
             'k8s_node_cidr': '10.254.0.0/24'}
    _topo, phases = _plan('complex', 3, 2, vip='10.254.0.100', proxy=proxy)
    hidden = [TOKEN.reveal(), CERT_KEY.reveal(), VRRP.reveal(), 'Pr0xyPw']
    for call in _all_calls(phases):
        rendered = call.command().render()
        for value in hidden:
            assert value not in rendered
            assert value not in call.command().display()
        if call.stdin_secrets:
            assert rendered.endswith("-s -")
            stdin = call.stdin()
            assert isinstance(stdin, secrets.Secret) and str(stdin) == '***'
    for phase in phases:
        for item in phase.work:
            for value in hidden:
                assert value not in item.line()
    join = [c for c in _all_calls(phases) if c.argv[0] == 'join-worker'][0]
    lines = join.stdin().reveal().splitlines()
    assert lines[0] == 'token=' + TOKEN.reveal()
    assert 'http_proxy=http://user:Pr0xyPw@proxy:3128' in lines
    init = [c for c in _all_calls(phases) if c.argv[0] == 'init'][0]
    assert [k for k, _v in init.stdin_secrets] == ['http_proxy',
                                                   'https_proxy']


def test_endpoint_uses_floating_ip_and_adds_it_as_san():
    import dataclasses
    topo = op_helpers.topology(3, 1, vip='10.254.0.100')
    topo = dataclasses.replace(topo, vip_fip='172.24.4.50')
    params = op_helpers.sample_params('complex')
    ends = scripts.endpoints(topo, params, topo.masters[0])
    assert ends.api_url == 'https://172.24.4.50:16443'
    assert ends.join == '10.254.0.100:16443'
    init = scripts.init_call(topo.masters[0], params, ends)
    assert _opt(init.argv, '-F') == '172.24.4.50'


def test_ha_without_vip_is_refused():
    topo = op_helpers.topology(3, 1, vip=None)
    with pytest.raises(ValueError):
        scripts.endpoints(topo, op_helpers.sample_params('complex'),
                          topo.masters[0])


def test_vip_prefix_from_interface_else_node_cidr_else_host():
    params = op_helpers.sample_params('complex')
    assert scripts.vip_prefix_from(params, '10.254.0.100', 26) == 26
    assert scripts.vip_prefix_from(params, '10.254.0.100') == 24
    assert scripts.vip_prefix_from(params, '192.0.2.1') == 32


def test_version_pin_is_the_minor(monkeypatch):
    params = op_helpers.sample_params('simple', kubernetes_version='1.34.2')
    topo = op_helpers.topology(1, 0)
    ends = scripts.endpoints(topo, params, topo.masters[0])
    call = scripts.init_call(topo.masters[0], params, ends)
    assert _opt(call.argv, '-k') == '1.34'


def test_cni_manifest_from_configuration():
    from oslo_config import fixture as cfg_fixture
    from k8s_mgmt import conf
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    try:
        fix.config(group='k8s_mgmt', cni_manifest='none')
        params = op_helpers.sample_params('simple')
        topo = op_helpers.topology(1, 0)
        ends = scripts.endpoints(topo, params, topo.masters[0])
        call = scripts.init_call(topo.masters[0], params, ends)
        assert _opt(call.argv, '-c') == 'none'
    finally:
        fix.cleanUp()


def test_package_script_preferred_then_shipped_copy(tmp_path):
    (tmp_path / 'Scripts').mkdir()
    ours = tmp_path / 'Scripts' / 'install_k8s_cluster.sh'
    ours.write_text('#!/bin/bash\n')
    found = uploads.local_script(str(tmp_path),
                                 'Scripts/install_k8s_cluster.sh',
                                 scripts.INSTALL)
    assert found == ('install_k8s_cluster.sh', b'#!/bin/bash\n',
                     str(ours), True)
    found = uploads.local_script(str(tmp_path), 'Scripts/configure_lb.sh',
                                 scripts.CONFIGURE_LB)
    assert not found.from_package
    assert found.origin.endswith('/scripts/configure_lb.sh')
    assert found.data.startswith(b'#!')


@pytest.mark.parametrize('value', [
    'http://p:3128/\ntoken=abcdef.0123456789abcdef',
    'pass\rword', 'pass\tword', 'nul\x00', 'del\x7f'])
def test_stdin_refuses_a_value_that_could_add_a_line(value):
    call = scripts.ScriptCall(node='worker-1', script=scripts.INSTALL,
                              argv=('join',),
                              stdin_secrets=(('http_proxy',
                                              secrets.Secret(value)),))
    with pytest.raises(exceptions.ValidationError) as caught:
        call.stdin()
    text = str(caught.value)
    assert "'http_proxy'" in text and 'worker-1' in text
    assert value.split('\n')[0] not in text and 'token=' not in text


def test_stdin_refuses_a_key_that_is_not_a_plain_name():
    call = scripts.ScriptCall(node='m', script=scripts.INSTALL,
                              argv=('init',),
                              stdin_secrets=(('to ken', 'x'),))
    with pytest.raises(exceptions.ValidationError):
        call.stdin()
    ok = scripts.ScriptCall(node='m', script=scripts.INSTALL, argv=('init',),
                            stdin_secrets=(('token', 'a b=c:/d'),))
    assert ok.stdin().reveal() == 'token=a b=c:/d\n'


def test_vrrp_priorities_are_distinct_and_valid_for_every_master_count():
    top = [scripts.vrrp_priority(i)
           for i in range(scripts.MAX_VRRP_MASTERS)]
    assert len(set(top)) == len(top) and 1 <= min(top) and max(top) <= 254
    skews = [(256 - p) / 256 for p in top]
    assert min(b - a for a, b in zip(skews, skews[1:])) >= 0.035
    with pytest.raises(ValueError):
        scripts.vrrp_priority(scripts.MAX_VRRP_MASTERS)


def _old_scripts(tmp_path):
    """A VNF package whose scripts predate the features line."""
    scripts_dir = tmp_path / uploads.PACKAGE_SCRIPTS_DIR
    scripts_dir.mkdir()
    for name in (uploads.INSTALL, uploads.CONFIGURE_LB):
        text = uploads.local_script(None, None, name).data
        kept = [line for line in text.splitlines(keepends=True)
                if not shipped.script_features(line)]
        (scripts_dir / name).write_bytes(b''.join(kept))
    return str(tmp_path)


def test_a_package_script_without_the_features_gets_the_old_calls(tmp_path):
    # An older install script knows no -R, an older configure_lb.sh no -B:
    # the token and the join data come from their own runs, and every
    # master's keepalived tracks its API server from the start.
    params = op_helpers.sample_params('complex')
    assert uploads.package_path(params, uploads.INSTALL) == '%s/%s' % (
        uploads.PACKAGE_SCRIPTS_DIR, uploads.INSTALL)
    topo = op_helpers.topology(3, 2, vip='10.254.0.100')
    phases = op_helpers.plan(params, topo, vip_prefix=24,
                             package_dir=_old_scripts(tmp_path))
    titles = op_helpers.titles(phases)
    assert 'Create the VIM token' in titles and 'Read join data' in titles
    assert not any(t.startswith('Track the API server') for t in titles)
    calls = _all_calls(phases)
    init, = [c for c in calls if c.argv[0] == 'init']
    assert '-R' not in init.argv
    assert not any('-p' in c.argv for c in calls
                   if c.script == scripts.INSTALL)
    assert not any('-B' in c.argv for c in calls
                   if c.script == scripts.CONFIGURE_LB)
    assert [c.argv[0] for c in calls if c.script == scripts.INSTALL
            and c.argv[0] in ('token-secret', 'print-join')] == [
        'token-secret', 'print-join']
