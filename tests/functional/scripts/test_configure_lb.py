"""configure_lb.sh -o ROOT: HAProxy and keepalived configs, change detection,
and the keepalived check script run against real HTTPS servers on loopback.
"""

import os
import re
import stat
import subprocess

import pytest

from k8s_mgmt.engine import scripts
from tests.functional.scripts import lb_backends
from tests.functional.scripts.script_helpers import (
    CONFIGURE_LB, needs, run_script, secret_file)

AUTH = 'Vr7p_x'
MASTERS = 'm1=10.0.0.11,m2=10.0.0.12,10.0.0.13'


def configure(root, *args, backends=MASTERS, stdin='auth_pass=%s\n' % AUTH):
    result = run_script(CONFIGURE_LB, ['-v', '10.0.0.100/24', '-b', backends,
                                       '-i', 'eth0', '-s', '-',
                                       '-o', str(root)] + list(args),
                        stdin=stdin)
    assert AUTH not in result.stdout + result.stderr
    return result


def report(result):
    assert result.returncode == 0, result.stderr
    return dict(line.split(': ', 1) for line in result.stdout.splitlines())


def haproxy_cfg(root):
    return root / 'etc' / 'haproxy' / 'haproxy.cfg'


def servers_of(root):
    return re.findall(r'^\s+server (\S+) (\S+)$',
                      haproxy_cfg(root).read_text(), re.M)


def keepalived_conf(root):
    return root / 'etc' / 'keepalived' / 'keepalived.conf'


@needs('haproxy')
def test_haproxy_config_is_valid_with_one_server_per_master(tmp_path):
    report(configure(tmp_path, '-P', '101'))
    cfg = haproxy_cfg(tmp_path)
    check = subprocess.run(['haproxy', '-c', '-f', str(cfg)],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    text = cfg.read_text()
    assert servers_of(tmp_path) == [('m1', '10.0.0.11:6443'),
                                    ('m2', '10.0.0.12:6443'),
                                    ('master-10-0-0-13', '10.0.0.13:6443')]
    assert re.search(r'^\s+bind \*:16443$', text, re.M)
    assert re.search(r'^\s+mode tcp$', text, re.M)
    assert 'option httpchk GET /readyz' in text
    assert 'check check-ssl verify none' in text


def test_a_dead_master_is_marked_down_and_its_sessions_cut_within_2_s(
        tmp_path):
    # A crashed master never answers, so a client's established session
    # through HAProxy to it would hang until the client's own timeout;
    # HAProxy cuts such sessions once its checks mark the server down.
    report(configure(tmp_path, '-P', '101'))
    line = [x for x in haproxy_cfg(tmp_path).read_text().splitlines()
            if x.strip().startswith('default-server ')]
    assert len(line) == 1
    words = line[0].split()
    opts = dict(zip(words, words[1:]))
    assert opts['on-marked-down'] == 'shutdown-sessions'
    inter = float(opts['inter'].rstrip('s'))
    assert inter * int(opts['fall']) <= 2.0 and int(opts['fall']) >= 2


def test_rerun_unchanged_then_new_backend_reloads(tmp_path):
    first = report(configure(tmp_path, '-P', '101'))
    assert first == {'haproxy': 'start', 'check script': 'installed',
                     'keepalived': 'start'}
    before = haproxy_cfg(tmp_path).stat().st_mtime_ns
    again = report(configure(tmp_path, '-P', '101'))
    assert again == {'haproxy': 'unchanged', 'check script': 'unchanged',
                     'keepalived': 'unchanged'}
    assert haproxy_cfg(tmp_path).stat().st_mtime_ns == before
    grown = report(configure(tmp_path, '-P', '101',
                             backends=MASTERS + ',m4=10.0.0.14'))
    assert grown == {'haproxy': 'reload', 'check script': 'unchanged',
                     'keepalived': 'unchanged'}
    assert 'server m4 10.0.0.14:6443' in haproxy_cfg(tmp_path).read_text()
    # The file is rendered whole from the list: a master left out is gone,
    # and 10.0.0.1 is not mistaken for 10.0.0.11.
    shrunk = report(configure(tmp_path, '-P', '101',
                              backends='m1=10.0.0.1,m2=10.0.0.12'))
    assert shrunk['haproxy'] == 'reload'
    assert servers_of(tmp_path) == [('m1', '10.0.0.1:6443'),
                                    ('m2', '10.0.0.12:6443')]


def test_keepalived_config_vip_priority_auth(tmp_path):
    report(configure(tmp_path, '-P', '102', '-l', '10.0.0.12'))
    path = keepalived_conf(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert re.search(r'^\s+priority 102$', text, re.M)
    assert re.search(r'^\s+virtual_router_id 100$', text, re.M)
    assert re.search(r'^\s+interface eth0$', text, re.M)
    assert re.search(r'^\s+10\.0\.0\.100/24 dev eth0$', text, re.M)
    assert re.search(
        r'authentication \{\s+auth_type PASS\s+auth_pass %s\s+\}' % AUTH,
        text)
    assert 'script "/etc/keepalived/check_apiserver.sh haproxy"' in text
    assert 'script "/etc/keepalived/check_apiserver.sh apiserver"' in text
    assert re.search(
        r'track_script \{\s+check_haproxy\s+check_apiserver\s+\}', text)
    peers = re.search(r'unicast_peer \{([^}]*)\}', text).group(1).split()
    assert peers == ['10.0.0.11', '10.0.0.13']  # every master but itself
    assert 'unicast_src_ip 10.0.0.12' in text


@needs('haproxy')
def test_bootstrap_tracks_haproxy_only_until_run_without_it(tmp_path):
    # -B: the master about to run kubeadm init must win the VIP before its
    # API server exists, so only HAProxy is tracked; the API server check
    # stays defined, and the run without -B is a keepalived reload only.
    report(configure(tmp_path, '-P', '250', '-B'))
    text = keepalived_conf(tmp_path).read_text()
    # Only priority 255 makes keepalived skip the 3-advert wait.
    assert re.search(r'^\s+state MASTER$', text, re.M)
    assert re.search(r'^\s+priority 255$', text, re.M)
    assert not re.search(r'^\s+nopreempt$', text, re.M)
    assert re.search(r'track_script \{\s+check_haproxy\s+#[^\n]*\s+\}',
                     text)
    assert 'script "/etc/keepalived/check_apiserver.sh apiserver"' in text
    after = report(configure(tmp_path, '-P', '250'))
    assert after == {'haproxy': 'unchanged', 'check script': 'unchanged',
                     'keepalived': 'reload'}
    text = keepalived_conf(tmp_path).read_text()
    assert re.search(
        r'track_script \{\s+check_haproxy\s+check_apiserver\s+\}', text)
    assert re.search(r'^\s+state BACKUP\s+nopreempt\s+priority 250$', text,
                     re.M)


def test_priority_change_reloads_keepalived_only(tmp_path):
    report(configure(tmp_path, '-P', '101'))
    changed = report(configure(tmp_path, '-P', '103'))
    assert changed == {'haproxy': 'unchanged', 'check script': 'unchanged',
                       'keepalived': 'reload'}


def test_secret_from_a_0600_file(tmp_path):
    path = secret_file(tmp_path, 'auth_pass=%s\n' % AUTH)
    result = run_script(CONFIGURE_LB, ['-v', '10.0.0.100/24', '-b', MASTERS,
                                       '-i', 'eth0', '-s', str(path),
                                       '-o', str(tmp_path / 'root')])
    assert report(result)['keepalived'] == 'start'
    path.chmod(0o644)
    result = run_script(CONFIGURE_LB, ['-v', '10.0.0.100/24', '-b', MASTERS,
                                       '-i', 'eth0', '-s', str(path),
                                       '-o', str(tmp_path / 'root')])
    assert result.returncode == 2 and 'mode 644' in result.stderr


@pytest.mark.parametrize('args, stdin, message', [
    (['-b', MASTERS, '-s', '-'], 'auth_pass=x', 'missing -v'),
    (['-v', '10.0.0.100', '-b', MASTERS, '-s', '-'], 'auth_pass=x',
     "bad VIP '10.0.0.100'"),
    (['-v', '10.0.0.100/24', '-s', '-'], 'auth_pass=x', 'missing -b'),
    (['-v', '10.0.0.100/24', '-b', '10.0.0.11,10.0.0.999', '-s', '-'],
     'auth_pass=x', "bad backend address '10.0.0.999'"),
    (['-v', '10.0.0.100/24', '-b', 'a=10.0.0.11,a=10.0.0.12', '-s', '-'],
     'auth_pass=x', "backend name 'a' given twice"),
    (['-v', '10.0.0.100/24', '-b', MASTERS, '-P', '255', '-s', '-'],
     'auth_pass=x', "bad priority '255'"),
    (['-v', '10.0.0.100/24', '-b', MASTERS, '-p', '6443', '-s', '-'],
     'auth_pass=x', 'must differ'),
    (['-v', '10.0.0.100/24', '-b', MASTERS], '', 'missing -s'),
    (['-v', '10.0.0.100/24', '-b', MASTERS, '-s', '-'],
     'auth_pass=longer9ch', 'auth_pass must be 1-8 characters'),
    (['-v', '10.0.0.100/24', '-b', MASTERS, '-s', '-'],
     'auth_pass=a"b', 'auth_pass must be 1-8 characters'),
    (['-v', '10.0.0.100/24', '-b', MASTERS, '-s', '-'], 'pass=x',
     "unknown key in secrets input: 'pass'"),
    (['-v', '10.0.0.100/24', '-b', MASTERS, '-s', '-', '-Q'], '',
     'unknown option -Q'),
])
def test_argument_errors(tmp_path, args, stdin, message):
    result = run_script(CONFIGURE_LB, args + ['-o', str(tmp_path / 'r')],
                        stdin=stdin)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert 'longer9ch' not in result.stderr
    assert not (tmp_path / 'r').exists()


def test_interface_detected_from_the_vip(tmp_path):
    # 127.0.0.1 is held by lo on every host: detection finds the holder.
    result = run_script(CONFIGURE_LB, ['-v', '127.0.0.1/8', '-b', MASTERS,
                                       '-s', '-', '-o', str(tmp_path)],
                        stdin='auth_pass=%s\n' % AUTH)
    report(result)
    assert re.search(r'^\s+interface lo$', keepalived_conf(tmp_path)
                     .read_text(), re.M)


# ------------------------------------------- the check script, for real

@pytest.fixture(scope='module')
def tls_context(tmp_path_factory):
    return lb_backends.tls_context(tmp_path_factory.mktemp('tls'))


def _check(script, *mode, wrap=()):
    return subprocess.run(list(wrap) + [str(script)] + list(mode),
                          capture_output=True, text=True, timeout=20,
                          check=False)


@needs('curl')
def test_check_script_apiserver_mode_fails_when_it_is_down(tmp_path,
                                                           tls_context):
    port = lb_backends.free_port('127.0.0.1')
    apiserver = lb_backends.APIServer('apiserver', '127.0.0.1', port,
                                      tls_context)
    try:
        report(configure(tmp_path, '-a', str(port)))
        script = tmp_path / 'etc' / 'keepalived' / 'check_apiserver.sh'
        assert stat.S_IMODE(script.stat().st_mode) == 0o755
        assert _check(script, 'apiserver').returncode == 0
    finally:
        apiserver.stop()
    down = _check(script, 'apiserver')
    assert down.returncode != 0 and 'API server down' in down.stderr
    bad = _check(script, 'haproxyy')
    assert bad.returncode != 0 and "unknown check 'haproxyy'" in bad.stderr


# A private PID namespace (own /proc) and network namespace: pidof there
# sees only the haproxy this test starts, and port 16443 is its own.
NAMESPACE_HAPROXY = r"""
set -u
ip link set lo up
haproxy -W -db -f "$1/etc/haproxy/haproxy.cfg" >/dev/null 2>&1 &
for _ in $(seq 100); do pidof haproxy >/dev/null && break; sleep 0.05; done
"$2" haproxy; echo "running: $?"
"$2"; echo "running, both checks: $?"
kill -KILL $(pidof haproxy)
wait
"$2" haproxy; echo "killed: $?"
"""


@needs('haproxy')
@needs('unshare')
@pytest.mark.skipif(os.geteuid() != 0, reason='namespaces need root')
def test_check_script_haproxy_mode_follows_the_haproxy_process(tmp_path):
    # Real HAProxy with the rendered config; the local API server part of
    # "both checks" has nothing to answer here, so that run must fail too.
    report(configure(tmp_path))
    script = tmp_path / 'etc' / 'keepalived' / 'check_apiserver.sh'
    run = subprocess.run(
        ['unshare', '--pid', '--fork', '--mount-proc', '--net', 'bash', '-c',
         NAMESPACE_HAPROXY, 'ns', str(tmp_path), str(script)],
        capture_output=True, text=True, timeout=60, check=False)
    lines = dict(line.split(': ', 1) for line in run.stdout.splitlines())
    assert lines == {'running': '0', 'running, both checks': '1',
                     'killed': '1'}, run.stdout + run.stderr
    assert 'HAProxy not running' in run.stderr


# ------------------------------------------- failover timing, from the file

def _block(text, head):
    found = re.search(r'^%s \{\n(.*?)^\}' % re.escape(head), text,
                      re.M | re.S)
    assert found, head
    return dict(re.findall(r'^\s+(\w+) (\S+)$', found.group(1), re.M))


def test_haproxy_death_is_covered_within_3_s_for_the_drivers_priorities(
        tmp_path):
    """The arithmetic of doc/source/scripts.rst, on the rendered file: the
    second failed check 1 s apart, then the backup's skew time after the
    priority-0 advert, leave at least 0.5 s of the 3 s for the check's own
    run, the gratuitous ARP and scheduling."""
    count = 3
    priorities = [scripts.vrrp_priority(i) for i in range(count)]
    for priority in priorities:
        report(configure(tmp_path / str(priority), '-P', str(priority)))
        text = keepalived_conf(tmp_path / str(priority)).read_text()
        check = _block(text, 'vrrp_script check_haproxy')
        instance = _block(text, 'vrrp_instance k8s_api_vip')
        # FAULT, not a lower priority: weight 0 on every tracked script.
        for name in ('check_haproxy', 'check_apiserver'):
            assert _block(text, 'vrrp_script ' + name)['weight'] == '0'
        assert re.search(r'^\s+nopreempt$', text, re.M)
        assert instance['state'] == 'BACKUP'
        interval, fall = int(check['interval']), int(check['fall'])
        assert int(check['timeout']) <= interval   # a hung check fails too
        advert = float(instance['advert_int'])
        skew = (256 - int(instance['priority'])) / 256 * advert
        detection = interval * fall
        assert detection + skew <= 2.5, (detection, skew)
        assert fall >= 2   # one slow check alone does not move the VIP


@needs('keepalived')
@needs('unshare')
@pytest.mark.skipif(os.geteuid() != 0, reason='namespaces need root')
@pytest.mark.parametrize('bootstrap', [(), ('-B',)], ids=['full', '-B'])
def test_rendered_keepalived_config_passes_keepalived_t(tmp_path, bootstrap):
    # keepalived -t wants the interface and the check script to exist: a
    # veth in a private network namespace, the script where it was written.
    report(configure(tmp_path, '-P', '149', '-l', '10.0.0.12', *bootstrap))
    script = tmp_path / 'etc' / 'keepalived' / 'check_apiserver.sh'
    conf = keepalived_conf(tmp_path)
    conf.write_text(conf.read_text().replace(
        '/etc/keepalived/check_apiserver.sh', str(script)))
    result_file = tmp_path / 'keepalived-t.txt'
    run = subprocess.run(
        ['unshare', '--net', 'sh', '-c',
         'ip link add eth0 type veth peer name eth1 && ip link set eth0 up '
         '&& keepalived -t"$1" -f "$2"', 'ns', str(result_file), str(conf)],
        capture_output=True, text=True, timeout=30, check=False)
    report_text = result_file.read_text() if result_file.exists() else ''
    assert run.returncode == 0, run.stderr + report_text
