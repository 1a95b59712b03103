"""Which compute host a new server lands on: a pure function of the
hosts, where the other servers are and the server group's policy, so
the policies are tested as data.

As Nova's filter scheduler: ``affinity`` keeps a group on one host,
``anti-affinity`` on distinct hosts and fails when none is left;
the soft policies only prefer. Without a group, the host with the
fewest servers wins; ties go to the first host in order.
"""

from k8s_mgmt_lab.openstack.iaas import model

POLICIES = ('affinity', 'anti-affinity', 'soft-affinity',
            'soft-anti-affinity')


class NoValidHost(model.IaasError):
    status = 500
    kind = 'NoValidHost'

    def __init__(self, reason):
        super(NoValidHost, self).__init__(
            'No valid host was found. %s' % reason)


def choose_host(hosts, load, policy=None, member_hosts=()):
    """The host for a server.

    ``load``: host -> number of servers on it now; ``member_hosts``: the
    hosts of the group's members already placed (one entry per member).
    """
    if not hosts:
        raise NoValidHost('There are no compute hosts.')
    members = {h: list(member_hosts).count(h) for h in hosts}

    def least_loaded(candidates):
        return min(candidates, key=lambda h: (load.get(h, 0),
                                              hosts.index(h)))

    if policy is not None and policy not in POLICIES:
        raise model.BadRequest('Invalid policy %r: one of %s.'
                               % (policy, ', '.join(POLICIES)))
    if policy is None or not member_hosts:
        return least_loaded(hosts)
    if policy == 'affinity':
        return member_hosts[0]
    if policy == 'anti-affinity':
        free = [h for h in hosts if not members[h]]
        if not free:
            raise NoValidHost(
                'Every one of the %d compute hosts already holds a member '
                'of the anti-affinity group.' % len(hosts))
        return least_loaded(free)
    if policy == 'soft-affinity':
        most = max(members.values())
        return least_loaded([h for h in hosts if members[h] == most])
    fewest = min(members.values())
    return least_loaded([h for h in hosts if members[h] == fewest])
