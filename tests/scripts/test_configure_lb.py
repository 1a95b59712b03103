"""configure_lb.sh -o ROOT: HAProxy and keepalived configs, change detection,
and the keepalived check script run against real HTTPS servers on loopback.
"""

import http.server
import re
import ssl
import stat
import subprocess
import threading

import pytest

from tests.scripts.script_helpers import (CONFIGURE_LB, needs, run_script,
                                          secret_file)

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
    assert 'script "/etc/keepalived/check_apiserver.sh"' in text
    assert re.search(r'track_script \{\s+check_apiserver\s+\}', text)
    peers = re.search(r'unicast_peer \{([^}]*)\}', text).group(1).split()
    assert peers == ['10.0.0.11', '10.0.0.13']  # every master but itself
    assert 'unicast_src_ip 10.0.0.12' in text


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

class _Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        code = 200 if self.path == '/readyz' else 404
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b'ok')

    def log_message(self, *args):
        pass


@pytest.fixture(scope='module')
def tls_context(tmp_path_factory):
    folder = tmp_path_factory.mktemp('tls')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048',
                    '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
                    '-keyout', str(folder / 'key.pem'),
                    '-out', str(folder / 'cert.pem')],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / 'cert.pem', folder / 'key.pem')
    return context


class ReadyServer(object):
    """An HTTPS /readyz on a free loopback port, like an API server."""

    def __init__(self, context):
        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Ready)
        self.httpd.socket = context.wrap_socket(self.httpd.socket,
                                                server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@needs('curl')
def test_check_script_fails_when_apiserver_or_haproxy_is_down(tmp_path,
                                                              tls_context):
    apiserver, haproxy = ReadyServer(tls_context), ReadyServer(tls_context)
    try:
        report(configure(tmp_path, '-a', str(apiserver.port),
                         '-p', str(haproxy.port)))
        script = tmp_path / 'etc' / 'keepalived' / 'check_apiserver.sh'
        assert stat.S_IMODE(script.stat().st_mode) == 0o755

        def check():
            return subprocess.run([str(script)], capture_output=True,
                                  text=True, timeout=20, check=False)

        assert check().returncode == 0
        haproxy.stop()
        down = check()
        assert down.returncode != 0 and 'HAProxy' in down.stderr
    finally:
        apiserver.stop()
    result = check()
    assert result.returncode != 0 and 'API server down' in result.stderr
