"""EtcdCtl against a REAL etcd on loopback (Debian etcd-server/etcd-client).

The commands EtcdCtl builds are rendered exactly as the SSH layer would send
them and run by a local shell (a session stand-in with the SSH session's
``run`` signature), so quoting, sudo, env and the JSON parsing are real.
"""

import os
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt.kube import etcd
from k8s_mgmt.ssh import target

pytestmark = pytest.mark.skipif(
    not (shutil.which('etcd') and shutil.which('etcdctl') and
         shutil.which('sudo') and os.geteuid() == 0),
    reason='needs etcd-server, etcd-client and sudo as root')


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class LocalSession(object):
    """Runs rendered commands in a local shell, like SSHSession.run."""

    node = 'local'

    def __init__(self):
        self.commands = []

    def run(self, cmd, step='run', timeout=None, check=True, stdin=None):
        text = cmd.render()
        self.commands.append(cmd.display())
        started = time.monotonic()
        proc = subprocess.run(['bash', '-c', text], capture_output=True,
                              text=True, timeout=timeout)
        result = target.Result(proc.returncode, proc.stdout, proc.stderr,
                               time.monotonic() - started)
        if check and not result.ok:
            raise exceptions.RemoteCommandError(
                node=self.node, step=step, status=proc.returncode,
                stderr=proc.stderr[-300:])
        return result


@pytest.fixture
def cluster(tmp_path):
    client, peer = _free_port(), _free_port()
    argv = ['etcd', '--name', 'master-1', '--data-dir', str(tmp_path),
            '--listen-client-urls', 'http://127.0.0.1:%d' % client,
            '--advertise-client-urls', 'http://127.0.0.1:%d' % client,
            '--listen-peer-urls', 'http://127.0.0.1:%d' % peer,
            '--initial-advertise-peer-urls', 'http://127.0.0.1:%d' % peer,
            '--initial-cluster', 'master-1=http://127.0.0.1:%d' % peer]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in polling.Poll(30, first=0.05, maximum=0.5):
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d/health'
                                        % client, timeout=2) as resp:
                if b'true' in resp.read():
                    break
        except OSError:
            pass
        assert proc.poll() is None, 'etcd exited'
    else:
        pytest.fail('etcd not healthy in 30 s')
    try:
        yield client
    finally:
        proc.kill()
        proc.wait()


def test_member_list_health_add_and_remove_through_etcdctl(cluster):
    session = LocalSession()
    ctl = etcd.EtcdCtl(session, 'master-1', local_port=cluster)
    (member,) = ctl.members()
    assert member.name == 'master-1'
    assert member.client_urls == ('http://127.0.0.1:%d' % cluster,)
    # No kubeadm certificates on this host: plain HTTP, etcdctl on PATH.
    assert ctl.base_argv()[1] == 'http'
    assert all(c.startswith('sudo -n -- ') for c in session.commands)

    # A member added but never started: unhealthy, nameless, removable.
    subprocess.run(['etcdctl', '--endpoints=http://127.0.0.1:%d' % cluster,
                    'member', 'add', 'master-2',
                    '--peer-urls=http://127.0.0.2:2380'],
                   check=True, capture_output=True)
    members = ctl.members()
    assert len(members) == 2
    unstarted = [m for m in members if not m.name]
    assert unstarted and unstarted[0].peer_hosts() == {'127.0.0.2'}
    # Two members, one started: quorum (2) is lost, and etcd says so.
    health = ctl.health(members)
    assert health == {'http://127.0.0.1:%d' % cluster: False}
    assert 'no quorum now: 0 of 2' in etcd.removal_problem(
        members, health, unstarted)
    # Without quorum etcd cannot commit the removal: tried again until
    # the deadline, then the error says why.
    started = time.monotonic()
    with pytest.raises(exceptions.RemoteCommandError) as err:
        ctl.remove(unstarted[0], timeout=6)
    assert 'context deadline exceeded' in str(err.value)
    removes = [c for c in session.commands if 'member remove' in c]
    assert len(removes) >= 2
    assert time.monotonic() - started < 30


def test_removing_a_member_that_is_gone_is_done(cluster):
    ctl = etcd.EtcdCtl(LocalSession(), 'master-1', local_port=cluster)
    ctl.remove(etcd.Member(0x1234, 'master-9', (), ()))
    assert [m.name for m in ctl.members()] == ['master-1']


def test_health_reports_a_dead_endpoint_from_json_despite_exit_1(cluster):
    ctl = etcd.EtcdCtl(LocalSession(), 'master-1', local_port=cluster)
    dead = etcd.Member(9, 'master-9', ('http://127.0.0.1:1',),
                       ('http://127.0.0.1:%d' % _free_port(),))
    live = ctl.members()
    health = ctl.health(live + (dead,))
    assert health[live[0].client_urls[0]] is True
    assert health[dead.client_urls[0]] is False
    assert etcd.healthy_members(live + (dead,), health) == live


# What etcdctl 3.4 printed when a loaded lab's etcd did not commit a removal.
TIMED_OUT = (
    '{"level":"warn","ts":"2026-11-23T18:00:00.961Z","caller":"clientv3/'
    'retry_interceptor.go:62","msg":"retrying of unary invoker failed",'
    '"attempt":0,"error":"rpc error: code = Unavailable desc = etcdserver: '
    'request timed out"}\nError: etcdserver: request timed out\n')


class SlowCommitSession(LocalSession):
    """The first ``member remove`` answers as an etcd that did not commit
    it in time; every other command runs for real."""

    def __init__(self):
        super().__init__()
        self.answered = False

    def run(self, cmd, step='run', timeout=None, check=True, stdin=None):
        if 'member remove' in cmd.display() and not self.answered:
            self.answered = True
            self.commands.append(cmd.display())
            return target.Result(1, '', TIMED_OUT, 4.0)
        return super().run(cmd, step, timeout, check, stdin)


def test_a_removal_etcd_did_not_commit_in_time_is_tried_again(cluster):
    session = SlowCommitSession()
    ctl = etcd.EtcdCtl(session, 'master-1', local_port=cluster)
    # The first answer: not committed in time; the real second one:
    # no such member (as when the first was committed after all): done.
    ctl.remove(etcd.Member(0x1234, 'master-9', (), ()), timeout=6)
    removes = [c for c in session.commands if 'member remove' in c]
    assert len(removes) == 2
    assert [m.name for m in ctl.members()] == ['master-1']


class Ports(list):
    procs = ()


@pytest.fixture
def trio(tmp_path):
    """Three real etcd members on loopback; yields their client ports
    (the processes are in ``trio.procs``, in the same order)."""
    ports = [(_free_port(), _free_port()) for _ in range(3)]
    initial = ','.join('m%d=http://127.0.0.1:%d' % (i, peer)
                       for i, (_client, peer) in enumerate(ports))
    procs = []
    try:
        for i, (client, peer) in enumerate(ports):
            procs.append(subprocess.Popen(
                ['etcd', '--name', 'm%d' % i,
                 '--data-dir', str(tmp_path / ('m%d' % i)),
                 '--listen-client-urls', 'http://127.0.0.1:%d' % client,
                 '--advertise-client-urls', 'http://127.0.0.1:%d' % client,
                 '--listen-peer-urls', 'http://127.0.0.1:%d' % peer,
                 '--initial-advertise-peer-urls',
                 'http://127.0.0.1:%d' % peer,
                 '--initial-cluster', initial],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ctl = etcd.EtcdCtl(LocalSession(), 'm0', local_port=ports[0][0])
        for _ in polling.Poll(60, first=0.1, maximum=1.0):
            try:
                members = ctl.members()
            except exceptions.SSHError:
                continue
            if (len(members) == 3 and
                    etcd.leader_of(ctl.statuses(members), members)):
                break
            assert all(p.poll() is None for p in procs), 'etcd exited'
        else:
            pytest.fail('no etcd leader in 60 s')
        clients = Ports(client for client, _peer in ports)
        clients.procs = procs
        yield clients
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _follower_port(trio, leader):
    return next(p for p in trio
                if not leader.client_urls[0].endswith(':%d' % p))


def test_removing_the_leader_hands_leadership_over_first(trio):
    probe = etcd.EtcdCtl(LocalSession(), 'm0', local_port=trio[0])
    members = probe.members()
    leader = etcd.leader_of(probe.statuses(members), members)
    assert leader is not None
    # Through a member that stays, as the driver's helper master is.
    session = LocalSession()
    ctl = etcd.EtcdCtl(session, 'helper',
                       local_port=_follower_port(trio, leader))

    ctl.remove(leader)

    staying = ctl.members()
    assert leader.member_id not in {m.member_id for m in staying}
    assert len(staying) == 2
    # The staying members had a leader of their own when remove returned.
    new_leader = etcd.leader_of(ctl.statuses(staying), staying)
    assert new_leader is not None and new_leader in staying
    moves = [i for i, c in enumerate(session.commands) if 'move-leader' in c]
    removes = [i for i, c in enumerate(session.commands)
               if 'member remove' in c]
    assert moves and removes and moves[0] < removes[0]
    # move-leader is given the leader's endpoint only: it gives up at the
    # first endpoint that does not answer.
    assert leader.client_urls[0] in session.commands[moves[0]]


def test_removing_a_follower_moves_no_leadership(trio):
    session = LocalSession()
    ctl = etcd.EtcdCtl(session, 'm0', local_port=trio[0])
    members = ctl.members()
    leader = etcd.leader_of(ctl.statuses(members), members)
    # A follower other than the member ctl talks to (a removed member
    # stops serving, and the driver's helper is never the one removed).
    follower = next(m for m in members if m != leader and
                    not m.client_urls[0].endswith(':%d' % trio[0]))
    ctl.remove(follower)
    assert not any('move-leader' in c for c in session.commands)
    staying = ctl.members()
    # A leader among the members left (not necessarily the same one: the
    # removed member, still running, may call an election before it learns
    # it was removed).
    assert etcd.leader_of(ctl.statuses(staying), staying) in staying


def test_endpoint_status_parsing_and_agreement():
    text = ('[{"Endpoint":"http://10.0.0.1:2379","Status":{"header":'
            '{"member_id":11},"leader":11}},{"Endpoint":"http://10.0.0.2'
            ':2379","Status":{"header":{"member_id":22},"leader":11}}]')
    statuses = etcd.parse_endpoint_status(text)
    assert statuses == {11: 11, 22: 11}
    a = etcd.Member(11, 'a', (), ('http://10.0.0.1:2379',))
    b = etcd.Member(22, 'b', (), ('http://10.0.0.2:2379',))
    assert etcd.leader_of(statuses, (a, b)) == a
    # The leader is leaving: the member that stays follows no one of its
    # own set yet.
    assert etcd.leader_of(statuses, (b,)) is None
    # Mid-election: no leader, or two opinions.
    assert etcd.leader_of({11: 0, 22: 0}, (a, b)) is None
    assert etcd.leader_of({11: 11, 22: 22}, (a, b)) is None
    assert etcd.parse_endpoint_status('') == {}


def test_health_after_the_leader_dies_is_read_until_the_election_ends(trio):
    ctl = etcd.EtcdCtl(LocalSession(), 'm0', local_port=trio[0])
    members = ctl.members()
    leader = etcd.leader_of(ctl.statuses(members), members)
    index = next(i for i, port in enumerate(trio)
                 if leader.client_urls[0].endswith(':%d' % port))
    trio.procs[index].kill()
    trio.procs[index].wait()
    ctl = etcd.EtcdCtl(LocalSession(), 'survivor',
                       local_port=_follower_port(trio, leader))
    # Until the two left elect a leader, every quorum read fails, the
    # live members' too; the settled read waits that out.
    health = ctl.settled_health(members)
    healthy = etcd.healthy_members(members, health)
    assert len(healthy) == 2 and leader not in healthy
    assert etcd.removal_problem(members, health, [leader]) is None
