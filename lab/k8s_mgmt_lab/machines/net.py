"""The lab network: one Linux bridge on a dedicated subnet, one veth per VM.

The host side of the bridge holds the gateway address (the first host of the
subnet), so the controller reaches every VM's IP directly. Nothing is routed
or NATed beyond the subnet: a VM can only talk to other lab VMs and the host.
"""

import hashlib
import ipaddress
import os

from oslo_log import log as logging

from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import registry as registry_mod
from k8s_mgmt_lab.machines.host import run
# Defined with the lab's settings, which the command line reads without
# importing the lab.
from k8s_mgmt_lab.settings import DEFAULT_BRIDGE
from k8s_mgmt_lab.settings import DEFAULT_SUBNET
from k8s_mgmt_lab.settings import DEFAULT_TAG

LOG = logging.getLogger(__name__)

MAX_IFNAME = 15


def netns_name(tag, short):
    return '%s-%s' % (tag, short)


def host_veth_name(tag, short):
    return '%sh%s' % (tag, short)


def short_name_candidates(vm_id):
    """Yield 8-hex-digit names derived from vm_id, for collision fallback."""
    digest = hashlib.sha256(vm_id.encode()).hexdigest()
    for start in range(0, len(digest) - 8, 8):
        yield digest[start:start + 8]


def mac_for(ip):
    """A locally administered unicast MAC made from an IPv4 address: the
    same address always gets the same MAC (see LabNetwork.attach)."""
    octets = ipaddress.IPv4Address(ip).packed
    return '02:4b:' + ':'.join('%02x' % b for b in octets)


def gateway_of(subnet):
    """The host's address on the lab bridge: the subnet's first host."""
    return str(next(ipaddress.ip_network(subnet).hosts()))


class LabNetwork(object):
    """The lab bridge and subnet; ``up()`` and ``down()`` are idempotent."""

    def __init__(self, state_dir, subnet=DEFAULT_SUBNET, bridge=DEFAULT_BRIDGE,
                 tag=DEFAULT_TAG):
        self.state_dir = os.path.abspath(state_dir)
        self.subnet = ipaddress.ip_network(subnet)
        if self.subnet.version != 4 or self.subnet.num_addresses < 4:
            raise LabError('lab subnet %s must be IPv4 with room for VMs'
                           % subnet)
        self.gateway = gateway_of(self.subnet)
        if len(bridge) > MAX_IFNAME:
            raise LabError('bridge name %r is longer than %d characters'
                           % (bridge, MAX_IFNAME))
        if len(host_veth_name(tag, 'x' * 8)) > MAX_IFNAME:
            raise LabError('lab tag %r is too long for veth names' % tag)
        self.bridge = bridge
        self.tag = tag
        self.registry = registry_mod.Registry(self.state_dir)

    @property
    def prefixlen(self):
        return self.subnet.prefixlen

    def up(self):
        self.registry.set_network({'bridge': self.bridge, 'tag': self.tag,
                                   'subnet': str(self.subnet),
                                   'gateway': self.gateway})
        if not os.path.exists('/sys/class/net/%s' % self.bridge):
            run(['ip', 'link', 'add', self.bridge, 'type', 'bridge'])
        cidr = '%s/%d' % (self.gateway, self.prefixlen)
        addrs = run(['ip', '-o', '-4', 'addr', 'show', 'dev', self.bridge])
        if cidr not in addrs.stdout.split():
            run(['ip', 'addr', 'add', cidr, 'dev', self.bridge])
        run(['ip', 'link', 'set', self.bridge, 'up'])
        LOG.info('lab bridge %s up at %s', self.bridge, cidr)

    def down(self):
        if os.path.exists('/sys/class/net/%s' % self.bridge):
            run(['ip', 'link', 'del', self.bridge])
        # Never recreate a state dir that teardown already removed.
        if os.path.exists(self.registry.path):
            self.registry.set_network(None)

    def check_ip(self, ip):
        addr = ipaddress.ip_address(ip)
        if addr not in self.subnet or str(addr) == self.gateway or \
                addr in (self.subnet.network_address,
                         self.subnet.broadcast_address):
            raise LabError('%s is not a usable VM address in lab subnet %s'
                           % (ip, self.subnet))

    def free_ips(self, used):
        """VM addresses of the subnet not in ``used``, lowest first."""
        taken = set(used) | {self.gateway}
        return [str(a) for a in self.subnet.hosts() if str(a) not in taken]

    def attach(self, short, ip):
        """Create the VM's netns and veth on the bridge; return the netns."""
        self.check_ip(ip)
        netns = netns_name(self.tag, short)
        host_veth = host_veth_name(self.tag, short)
        run(['ip', 'netns', 'add', netns])
        # The peer is created directly inside the netns, so "eth0" never
        # clashes with the host's own eth0. Its MAC comes from its address:
        # a Neutron port keeps its MAC when Heat replaces the server on it,
        # so a healed VM answers at the same MAC and no peer (the Ansible
        # server, another node) is left with a stale ARP entry.
        run(['ip', 'link', 'add', host_veth, 'type', 'veth',
             'peer', 'name', 'eth0', 'address', mac_for(ip),
             'netns', netns])
        run(['ip', '-batch', '-'], input='link set %s master %s\n'
            'link set %s up\n' % (host_veth, self.bridge, host_veth))
        # A healed VM reuses its predecessor's IP with a new MAC: announce it
        # (gratuitous ARP on link up) and drop the host's stale entry, or
        # peers keep sending to the dead MAC until their cache expires.
        run(['ip', 'netns', 'exec', netns, 'sysctl', '-q', '-w',
             'net.ipv4.conf.eth0.arp_notify=1'])
        run(['ip', 'neigh', 'flush', 'to', ip, 'dev', self.bridge],
            check=False)
        run(['ip', '-n', netns, '-batch', '-'], input=(
            'link set lo up\n'
            'addr add %s/%d dev eth0\n'
            'link set eth0 up\n'
            'route add default via %s\n') % (ip, self.prefixlen, self.gateway))
        return netns

    def detach(self, short):
        """Remove the VM's veth and netns; missing ones are not an error."""
        remove_link(host_veth_name(self.tag, short))
        remove_netns(netns_name(self.tag, short))


def unplug(netns):
    """Take a crashed VM off the network: a dead kernel answers nothing.

    The netns outlives the VM's processes (heal needs its disk and the
    cloud its port), but its stack would still answer ARP and reset TCP for
    every address on it, a VRRP VIP included, which no crashed VM does.
    """
    if netns and os.path.exists('/run/netns/%s' % netns):
        run(['ip', '-n', netns, 'link', 'set', 'eth0', 'down'], check=False)


def remove_link(name):
    # Deleting one end of a veth pair removes the peer at once, unlike
    # deleting the netns, which frees its links asynchronously.
    if os.path.exists('/sys/class/net/%s' % name):
        run(['ip', 'link', 'del', name], check=False)


def remove_netns(name):
    if os.path.exists('/run/netns/%s' % name):
        run(['ip', 'netns', 'delete', name], check=False)
