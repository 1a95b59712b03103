"""The cluster's stacked etcd, seen from a healthy master over SSH.

``etcdctl`` (API v3) runs on a master with JSON output (``-w json``) and
the cluster's etcd client certificates when etcd serves TLS (a kubeadm
cluster: ``/etc/kubernetes/pki/etcd``). Where the master has no
``etcdctl`` on its PATH (kubeadm runs etcd as a static pod), it runs inside
the etcd container through ``crictl exec``. Nothing here parses text.

Parsing and quorum arithmetic are pure functions, tested from captured JSON.
"""

import dataclasses
import json
import urllib.parse

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt import ssh
from k8s_mgmt.ssh import client as ssh_client

LOG = logging.getLogger(__name__)

PKI = '/etc/kubernetes/pki/etcd'
CA_CERT = PKI + '/ca.crt'
CLIENT_CERT = PKI + '/healthcheck-client.crt'
CLIENT_KEY = PKI + '/healthcheck-client.key'
LOCAL_CLIENT_PORT = 2379
# A dead member must not hold an operation for etcdctl's default 5 s twice.
DIAL_TIMEOUT = '2s'
COMMAND_TIMEOUT = '4s'
RUN_TIMEOUT = 60
# How long a member removal is retried while etcd does not commit it.
REMOVE_TIMEOUT = 30
REMOVE_RETRY_FIRST = 0.2    # the first pause between tries (then doubled)
REMOVE_RETRY_MAX = 1.0
# How long the members that stay may take to agree on a leader afterwards.
LEADER_TIMEOUT = 60
# How long a health read showing no quorum is read again before it is
# believed: a leader's death fails every quorum read until the others have
# elected a new one (an election timeout or more).
SETTLE_TIMEOUT = 20
# etcd's answers to a proposal it did not commit in time: worth another try
# (once committed after all, the next try finds the member gone). "unhealthy
# cluster" is its strict reconfiguration check refusing while a member has
# been connected for less than its health interval (5 s), as just after a
# start or a join.
_NOT_COMMITTED = ('context deadline exceeded',
                  'etcdserver: request timed out',
                  'etcdserver: leader changed', 'etcdserver: no leader',
                  'etcdserver: unhealthy cluster')
_NOT_FOUND = 'member not found'


@dataclasses.dataclass(frozen=True)
class Member:
    member_id: int
    name: str               # '' for a member added but never started
    peer_urls: tuple
    client_urls: tuple

    @property
    def hex_id(self):
        return '%x' % self.member_id

    def peer_hosts(self):
        return {urllib.parse.urlsplit(u).hostname for u in self.peer_urls}


def parse_member_list(text):
    """Members from ``etcdctl member list -w json``."""
    data = json.loads(text)
    return tuple(Member(member_id=int(m['ID']), name=m.get('name') or '',
                        peer_urls=tuple(m.get('peerURLs') or ()),
                        client_urls=tuple(m.get('clientURLs') or ()))
                 for m in data.get('members') or ())


def parse_endpoint_health(text):
    """{client URL: healthy} from ``etcdctl endpoint health -w json``."""
    data = json.loads(text)
    if isinstance(data, dict):  # some versions print one object
        data = [data]
    return {item['endpoint']: bool(item.get('health')) for item in data}


def parse_endpoint_status(text):
    """{member id: id of the leader it follows (0: none)} from
    ``etcdctl endpoint status -w json``; endpoints that did not answer are
    absent (etcdctl leaves them out and exits 1)."""
    data = json.loads(text) if text.strip() else []
    if isinstance(data, dict):
        data = [data]
    return {int(item['Status']['header']['member_id']):
            int(item['Status'].get('leader') or 0) for item in data}


def leader_of(statuses, members):
    """The member every answering one of ``members`` follows, or None when
    they have none or do not agree (an election is under way)."""
    ids = {m.member_id for m in members}
    leaders = {statuses[i] for i in ids if i in statuses}
    if len(leaders) != 1:
        return None
    (leader,) = leaders
    return next((m for m in members if m.member_id == leader), None)


def quorum(size):
    """Members that must agree in a cluster of ``size`` members."""
    return size // 2 + 1


def healthy_members(members, health):
    """Members at least one of whose client URLs answered healthy."""
    return tuple(m for m in members
                 if any(health.get(u) for u in m.client_urls))


def removal_problem(members, health, leaving):
    """Why removing the ``leaving`` members would break etcd, or None.

    Two conditions: the cluster must have quorum now (or no member can be
    removed at all), and the members that stay must still have quorum among
    themselves once the leaving ones are gone.
    """
    leaving_ids = {m.member_id for m in leaving}
    healthy = healthy_members(members, health)
    if len(healthy) < quorum(len(members)):
        return ('etcd has no quorum now: %d of %d members healthy (%s), '
                '%d needed' % (len(healthy), len(members),
                               _names(healthy), quorum(len(members))))
    staying = [m for m in members if m.member_id not in leaving_ids]
    staying_healthy = [m for m in healthy if m.member_id not in leaving_ids]
    if not staying:
        return 'removing %s would leave etcd without members' % _names(
            leaving)
    if len(staying_healthy) < quorum(len(staying)):
        unhealthy = [m for m in staying if m not in staying_healthy]
        return ('removing %s would break etcd quorum: of the %d members '
                'left only %d are healthy (%d needed); unhealthy: %s'
                % (_names(leaving), len(staying), len(staying_healthy),
                   quorum(len(staying)), _names(unhealthy)))
    return None


def _names(members):
    return ', '.join(m.name or ('(unstarted %s)' % m.hex_id)
                     for m in members) or 'none'


def members_of_node(members, name, ip):
    """The members that belong to a node: by member name or peer address."""
    return tuple(m for m in members
                 if (name and m.name == name) or ip in m.peer_hosts())


class EtcdCtl(object):
    """``etcdctl`` on one master through its SSH session."""

    def __init__(self, session, node_name, local_port=LOCAL_CLIENT_PORT):
        self.session = session
        self.node = node_name
        self.local_port = local_port
        self._base = None

    def _probe(self, argv):
        return self.session.run(ssh.Command(*argv).sudo(), step='etcd probe',
                                check=False, timeout=RUN_TIMEOUT).ok

    def base_argv(self):
        """How to call etcdctl here: path or container, TLS or not."""
        if self._base is not None:
            return self._base
        tls = self._probe(['test', '-f', CA_CERT])
        scheme = 'https' if tls else 'http'
        argv = ['etcdctl', '--dial-timeout=' + DIAL_TIMEOUT,
                '--command-timeout=' + COMMAND_TIMEOUT]
        if tls:
            argv += ['--cacert=' + CA_CERT, '--cert=' + CLIENT_CERT,
                     '--key=' + CLIENT_KEY]
        if not self._probe(['sh', '-c', 'command -v etcdctl']):
            argv = ['crictl', 'exec', self._container()] + argv
        self._base = (argv, scheme)
        return self._base

    def _container(self):
        result = self.session.run(
            ssh.Command('crictl', 'ps', '--name', 'etcd', '-q').sudo(),
            step='etcd container', timeout=RUN_TIMEOUT)
        ids = result.stdout.split()
        if not ids:
            raise exceptions.SSHError(
                node=self.node, step='etcd container',
                reason='no etcdctl on the PATH and no running etcd container')
        return ids[0]

    def _run(self, step, args, endpoints=None, check=True):
        argv, scheme = self.base_argv()
        endpoints = endpoints or ['%s://127.0.0.1:%d'
                                  % (scheme, self.local_port)]
        cmd = ssh.Command(*(argv + ['--endpoints=' + ','.join(endpoints)] +
                            list(args))).with_env(ETCDCTL_API='3').sudo()
        return self.session.run(cmd, step=step, check=check,
                                timeout=RUN_TIMEOUT)

    def _json(self, step, result, parse):
        try:
            return parse(result.stdout)
        except (ValueError, KeyError, TypeError):
            raise exceptions.SSHError(
                node=self.node, step=step,
                reason='etcdctl printed no usable JSON (exit %s): %s'
                       % (result.status, result.stderr.strip()[-300:]))

    def members(self):
        step = 'etcd member list'
        return self._json(step, self._run(step, ['-w', 'json', 'member',
                                                 'list']),
                          parse_member_list)

    def _each_endpoint(self, members, what, parse):
        """``etcdctl endpoint <what>`` on every member's client URLs, parsed
        with ``parse``; {} without URLs. Its exit status is 1 when an
        endpoint is unhealthy or does not answer: the JSON says which."""
        urls = [u for m in members for u in m.client_urls]
        if not urls:
            return {}
        step = 'etcd endpoint %s' % what
        result = self._run(step, ['-w', 'json', 'endpoint', what],
                           endpoints=urls, check=False)
        return self._json(step, result, parse)

    def health(self, members):
        """{client URL: healthy} of every member's client URLs."""
        return self._each_endpoint(members, 'health', parse_endpoint_health)

    def settled_health(self, members, timeout=SETTLE_TIMEOUT):
        """:meth:`health`, read again for up to ``timeout`` seconds while
        fewer than a quorum of ``members`` answer healthy; the last read
        when that does not change."""
        poll = polling.Poll(timeout, first=0.5, maximum=3.0)
        for _attempt in poll:
            health = self.health(members)
            healthy = len(healthy_members(members, health))
            if healthy >= quorum(len(members)):
                break
            LOG.info('%s: %d of %d etcd members healthy; reading again in '
                     'case an election is under way', self.node, healthy,
                     len(members))
        return health

    def statuses(self, members):
        """{member id: leader id} of the members whose endpoints answered
        (one that does not answer is left out)."""
        return self._each_endpoint(members, 'status', parse_endpoint_status)

    def hand_over_leadership(self, member, members):
        """When ``member`` leads, make a member that stays lead instead.

        Removing the leader leaves the others leaderless for an election
        timeout or more, and every write and quorum read (the API servers'
        health checks among them) fails meanwhile, which is enough for
        HAProxy to mark every API server down and cut the clients'
        connections. ``etcdctl move-leader`` hands over in one round trip.
        """
        statuses = self.statuses(members)
        if statuses.get(member.member_id) != member.member_id:
            return None  # not the leader, or not answering: nothing to do
        successor = next((m for m in members
                          if m.member_id != member.member_id and
                          m.member_id in statuses), None)
        if successor is None:
            return None
        LOG.info('%s: etcd member %s leads; handing leadership to %s '
                 'before it is removed', self.node, member.name,
                 successor.name or successor.hex_id)
        # move-leader asks each endpoint in turn and stops at the first
        # that does not answer: give it the leader's own.
        result = self._run('etcd move-leader',
                           ['move-leader', successor.hex_id],
                           endpoints=list(member.client_urls), check=False)
        if not result.ok:
            LOG.warning('%s: etcd move-leader to %s failed (exit %s); the '
                        'members elect a new leader after the removal',
                        self.node, successor.hex_id, result.status)
            return None
        return successor

    def wait_for_leader(self, members, timeout=LEADER_TIMEOUT):
        """Wait until ``members`` agree on a leader among themselves."""
        poll = polling.Poll(timeout, first=0.2, maximum=2.0)
        for _attempt in poll:
            leader = leader_of(self.statuses(members), members)
            if leader is not None:
                return leader
        raise exceptions.SSHError(
            node=self.node, step='etcd leader',
            reason='etcd members %s agreed on no leader among themselves '
                   'within %.0f s' % (_names(members), timeout))

    def remove(self, member, timeout=REMOVE_TIMEOUT):
        """Remove ``member``, then wait until the members that stay have a
        leader.

        A leader is first asked to hand over leadership. A proposal etcd
        did not commit in time (``context deadline exceeded``, ``request
        timed out``, a leader change: a slow disk, an election) is tried
        again until ``timeout``; a member already gone is done.
        """
        members = self.members()
        staying = tuple(m for m in members if m.member_id != member.member_id)
        if len(staying) < len(members):
            self.hand_over_leadership(member, members)
        self._remove(member, timeout)
        if staying:
            self.wait_for_leader(staying)

    def _remove(self, member, timeout):
        LOG.info('%s: removing etcd member %s (%s)', self.node,
                 member.name or '(unstarted)', member.hex_id)
        step = 'etcd member remove'
        # Short pauses: "unhealthy cluster" ends the moment the newest
        # member has been connected for etcd's health interval (5 s), and
        # each try is one etcdctl run on a session already open.
        poll = polling.Poll(timeout, first=REMOVE_RETRY_FIRST,
                            maximum=REMOVE_RETRY_MAX)
        for _attempt in poll:
            result = self._run(step, ['member', 'remove', member.hex_id],
                               check=False)
            if result.ok:
                return
            if _NOT_FOUND in result.stderr:
                LOG.info('%s: etcd member %s is already gone', self.node,
                         member.hex_id)
                return
            if not any(text in result.stderr for text in _NOT_COMMITTED):
                break
            LOG.warning('%s: etcd did not commit the removal of member %s '
                        'in time; trying again', self.node, member.hex_id)
        raise exceptions.RemoteCommandError(
            node=self.node, step=step, status=result.status,
            stderr=ssh_client.stderr_tail(result.stderr))
