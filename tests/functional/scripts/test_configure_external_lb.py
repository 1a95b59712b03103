"""configure_external_lb.sh renders a config that a REAL HAProxy runs with.

The script runs with -o into a temporary root; a real haproxy (Debian's, in
master-worker mode as systemd and the lab run it) serves that file on
loopback, in front of stand-in members on addresses of their own in
127.0.0.0/8 (tests/scripts/lb_backends.py): API servers that answer /readyz
over TLS, NodePort services, kubelet ports. What cannot exist here is the
cluster itself; every byte between client, HAProxy and member is real.
A reload is SIGUSR2 to the haproxy master, which is what ``systemctl
reload haproxy`` sends (Debian's unit, and the lab's systemctl stand-in).
"""

import http.client
import os
import pwd
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time

import pytest

from k8s_mgmt.polling import Poll
from tests.functional.scripts import lb_backends as lb
from tests.functional.scripts.script_helpers import (
    CONFIGURE_EXTERNAL_LB as SCRIPT)
from tests.functional.scripts.script_helpers import run_script

MASTER_IPS = {'m1': '127.77.0.11', 'm2': '127.77.0.12', 'm3': '127.77.0.13'}
WORKER_IPS = {'w1': '127.77.0.21', 'w2': '127.77.0.22', 'w3': '127.77.0.23',
              'w4': '127.77.0.24'}
SETTLE = 20.0  # seconds for HAProxy's checks (1-2 s apart) to settle


def _has_haproxy_user():
    try:
        pwd.getpwnam('haproxy')
    except KeyError:
        return False
    return True


pytestmark = [
    pytest.mark.skipif(shutil.which('haproxy') is None,
                       reason='haproxy is not installed'),
    pytest.mark.skipif(os.geteuid() != 0 or not _has_haproxy_user(),
                       reason='the rendered config runs haproxy as root '
                              'dropping to the haproxy user'),
]


def members(names, ips):
    return ','.join('%s=%s' % (name, ips[name]) for name in names)


class Balancer(object):
    """The script's config in ``root``, and haproxy running it."""

    def __init__(self, root):
        self.root = root
        self.cfg = root / 'etc' / 'haproxy' / 'haproxy.cfg'
        self.api_port = lb.free_port()
        self.nodeports = lb.free_range(2)
        self.apiserver_port = lb.free_port(MASTER_IPS['m1'])
        self.proc = None

    def configure(self, masters, workers):
        result = run_script(SCRIPT, [
            '--api-port', str(self.api_port),
            '--apiserver-port', str(self.apiserver_port),
            '--nodeports', '%d-%d' % self.nodeports,
            '--masters', members(masters, MASTER_IPS),
            '--workers', members(workers, WORKER_IPS),
            '-o', str(self.root)])
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()[-1]

    def start(self):
        log = open(self.root / 'haproxy.log', 'ab')
        self.proc = subprocess.Popen(
            ['haproxy', '-W', '-db', '-f', str(self.cfg)], stdout=log,
            stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        for _ in Poll(10.0, first=0.02, maximum=0.2):
            assert self.proc.poll() is None, self.log()
            try:
                socket.create_connection(('127.0.0.1', self.api_port),
                                         1).close()
                return
            except OSError:
                continue
        raise AssertionError('haproxy does not listen:\n' + self.log())

    def reload(self):
        os.kill(self.proc.pid, signal.SIGUSR2)

    def log(self):
        return (self.root / 'haproxy.log').read_text(errors='replace')

    def stop(self):
        """The master and every worker, old ones too: one process group."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        except ProcessLookupError:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # workers left over
        except ProcessLookupError:
            pass


@pytest.fixture
def stack(tmp_path):
    """Whatever a test starts goes on this list and is stopped after it."""
    started = []
    yield started
    for thing in reversed(started):
        thing.stop()


def api_answer(port):
    """The name of the master one API request through the LB reaches."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection('127.0.0.1', port, timeout=5,
                                       context=context)
    try:
        conn.request('GET', '/whoami')
        return conn.getresponse().read().decode()
    except (OSError, http.client.HTTPException) as exc:
        return 'failed: %s' % exc
    finally:
        conn.close()


def nodeport_greeting(port):
    """``worker:port`` of the NodePort service a new connection reaches."""
    try:
        with socket.create_connection(('127.0.0.1', port), 5) as sock:
            return sock.makefile('rb').readline().decode().strip()
    except OSError as exc:
        return 'failed: %s' % exc


def settle(ask, good, rounds=6):
    """Asks ``rounds`` times in a row until every answer is good; returns
    the last round's answers."""
    answers = []
    for _ in Poll(SETTLE, first=0.2, maximum=1.0):
        answers = [ask() for _ in range(rounds)]
        if all(good(a) for a in answers):
            return answers
    raise AssertionError('never %d good answers in a row: %s'
                         % (rounds, answers))


def test_api_goes_to_the_ready_master_only(tmp_path, stack):
    context = lb.tls_context(tmp_path)
    balancer = Balancer(tmp_path / 'root')
    port = balancer.apiserver_port
    # m2 runs but is not ready (/readyz 503); m3 is down (nothing listens).
    stack.append(lb.APIServer('m1', MASTER_IPS['m1'], port, context))
    stack.append(lb.APIServer('m2', MASTER_IPS['m2'], port, context,
                              ready=False))
    assert balancer.configure(['m1', 'm2', 'm3'], []) == 'haproxy: start'
    stack.append(balancer)
    balancer.start()
    settle(lambda: api_answer(balancer.api_port), lambda a: a == 'm1')
    assert {api_answer(balancer.api_port) for _ in range(10)} == {'m1'}
    # No workers: nothing listens on the NodePorts.
    assert nodeport_greeting(balancer.nodeports[0]).startswith('failed')


def test_nodeports_reach_workers_with_a_kubelet_on_the_same_port(
        tmp_path, stack):
    balancer = Balancer(tmp_path / 'root')
    first, last = balancer.nodeports
    for name in ('w1', 'w2', 'w3'):
        for port in (first, last):
            stack.append(lb.nodeport_service(name, WORKER_IPS[name], port))
    # w3 serves the NodePorts but its kubelet port is closed: not a member.
    stack.append(lb.kubelet(WORKER_IPS['w1']))
    stack.append(lb.kubelet(WORKER_IPS['w2']))
    balancer.configure(['m1'], ['w1', 'w2', 'w3'])
    stack.append(balancer)
    balancer.start()
    for port in (first, last):
        answers = settle(lambda: nodeport_greeting(port),
                         lambda a: a in ('w1:%d' % port, 'w2:%d' % port))
        # Round robin over both live workers.
        assert {a.split(':')[0] for a in answers} == {'w1', 'w2'}


def _hard_stop_seconds(cfg):
    found = re.findall(r'^\s*hard-stop-after (\d+)s$', cfg.read_text(),
                       re.MULTILINE)
    assert len(found) == 1, 'no hard-stop-after in the global section'
    return int(found[0])


def _read_until_cut(stream, seconds):
    """What ``stream`` reads until its connection ends (b'' at EOF, as a
    reset too), or AssertionError after ``seconds``."""
    stream.raw._sock.settimeout(seconds)
    try:
        return stream.readline()
    except ConnectionResetError:
        return b''
    except socket.timeout:
        raise AssertionError('still open after %.0f s' % seconds)


def test_reload_keeps_established_connections_until_hard_stop_after(
        tmp_path, stack):
    """After a reload the old worker carries the connections it had, to a
    member that left too, but only for hard-stop-after: a client pinned
    there (a watch) must not keep a removed member for "timeout client"
    (an hour), it reconnects to the new members."""
    balancer = Balancer(tmp_path / 'root')
    port = balancer.nodeports[0]
    for name in ('w1', 'w4'):
        stack.append(lb.nodeport_service(name, WORKER_IPS[name], port))
        stack.append(lb.kubelet(WORKER_IPS[name]))
    balancer.configure(['m1'], ['w1'])
    hard_stop = _hard_stop_seconds(balancer.cfg)
    stack.append(balancer)
    balancer.start()
    settle(lambda: nodeport_greeting(port), lambda a: a == 'w1:%d' % port,
           rounds=1)
    established = socket.create_connection(('127.0.0.1', port), 5)
    stream = established.makefile('rb')
    try:
        assert stream.readline() == b'w1:%d\n' % port
        # w1 leaves, w4 comes: the file changes, haproxy reloads.
        assert balancer.configure(['m1'], ['w4']) == 'haproxy: reload'
        reloaded = time.monotonic()
        balancer.reload()
        # The connection to w1, made before, still carries data both ways.
        established.sendall(b'still here\n')
        assert stream.readline() == b'still here\n'
        # Then the old worker stops, and the connection with it.
        assert _read_until_cut(stream, hard_stop + 5) == b''
        cut = time.monotonic() - reloaded
        assert hard_stop - 0.5 < cut < hard_stop + 2, cut
        settle(lambda: nodeport_greeting(port),
               lambda a: a == 'w4:%d' % port)
    finally:
        stream.close()
        established.close()
    assert balancer.proc.poll() is None, balancer.log()
