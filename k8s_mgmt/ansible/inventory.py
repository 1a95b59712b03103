"""kubespray's inventory, built as data and written with PyYAML.

The inventory is a plain dict in kubespray's current shape: the groups
``kube_control_plane``, ``etcd``, ``kube_node`` and ``calico_rr``, and
``k8s_cluster`` declared explicitly (kubespray 2.27+ gathers no facts for it
otherwise). The inventory host name is the Kubernetes node name. Nothing
here edits text: a changed cluster is a new dict, written whole.

It holds no password, private key or token: :func:`build` takes none.
Ansible logs in with the cluster's own key pair on the Ansible server and
checks host keys against a known_hosts file written from our pins.
"""

import ipaddress
import re

import yaml

from k8s_mgmt import exceptions

HEADER = ('# kubespray inventory written by k8s-mgmt. Do not edit: the next '
          'operation\n# on this cluster writes it anew from its own data.\n')

CONTROL_PLANE = 'kube_control_plane'
ETCD = 'etcd'
NODES = 'kube_node'
ROUTE_REFLECTORS = 'calico_rr'
CLUSTER = 'k8s_cluster'

# A Kubernetes node name (RFC 1123 subdomain, as kubelet requires).
_NODE_NAME = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?'
                        r'(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_USER = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')
_SAN = re.compile(r'^[A-Za-z0-9*]([-A-Za-z0-9.*]*[A-Za-z0-9])?$')


def etcd_member_name(node_name):
    """The etcd member name of a master: stable, never positional."""
    return 'etcd-%s' % node_name


def build(masters, workers, *, lb_address, lb_port, users, pod_cidr=None,
          service_cidr=None, extra_sans=()):
    """The inventory dict of a cluster (see the module docstring).

    ``masters``/``workers``: objects with ``.name``, ``.ssh_ip``, ``.nic_ip``
    (and optionally ``.ssh_port``, written as ``ansible_port`` when not
    22); ``users``: {node name: SSH user name}. Bad input raises
    ValidationError naming each bad field.
    """
    problems = []
    hosts = {}
    for group, nodes in (('masters', masters), ('workers', workers)):
        for index, node in enumerate(nodes):
            where = 'inventory.%s[%d]' % (group, index)
            host = _host_vars(node, where, users, problems)
            if host is None:
                continue
            if node.name in hosts:
                problems.append((where + '.name', 'node %s is listed twice'
                                 % node.name))
                continue
            if group == 'masters':
                host['etcd_member_name'] = etcd_member_name(node.name)
            hosts[node.name] = host
    if not masters:
        problems.append(('inventory.masters', 'a cluster needs at least '
                                              'one master'))
    lb = _address('inventory.lb_address', lb_address, problems)
    if isinstance(lb_port, bool) or not isinstance(lb_port, int) or \
            not 0 < lb_port < 65536:
        problems.append(('inventory.lb_port', 'must be a port number '
                                              '1-65535, not %r' % (lb_port,)))
    sans = _sans(lb, extra_sans, problems)
    if problems:
        raise exceptions.ValidationError(problems)
    variables = {
        'loadbalancer_apiserver': {'address': lb, 'port': lb_port},
        'supplementary_addresses_in_ssl_keys': sans,
    }
    if pod_cidr:
        variables['kube_pods_subnet'] = str(pod_cidr)
    if service_cidr:
        variables['kube_service_addresses'] = str(service_cidr)
    master_names = [n.name for n in masters]
    return {'all': {
        'hosts': hosts,
        'vars': variables,
        'children': {
            CONTROL_PLANE: {'hosts': {n: {} for n in master_names}},
            ETCD: {'hosts': {n: {} for n in master_names}},
            NODES: {'hosts': {n.name: {} for n in workers}},
            ROUTE_REFLECTORS: {'hosts': {}},
            CLUSTER: {'children': {CONTROL_PLANE: {}, NODES: {},
                                   ROUTE_REFLECTORS: {}}},
        },
    }}


def _host_vars(node, where, users, problems):
    name = getattr(node, 'name', None)
    if not isinstance(name, str) or not _NODE_NAME.match(name) or \
            len(name) > 253:
        problems.append((where + '.name', 'not a Kubernetes node name '
                         '(lowercase letters, digits, "-" and "."): %r'
                         % (name,)))
        return None
    user = users.get(name) if hasattr(users, 'get') else None
    if not isinstance(user, str) or not _USER.match(user):
        problems.append(('inventory.users.%s' % name,
                         'no usable SSH user name for node %s: %r'
                         % (name, user)))
    ssh_ip = _address(where + '.ssh_ip', getattr(node, 'ssh_ip', None),
                      problems)
    nic_ip = _address(where + '.nic_ip', getattr(node, 'nic_ip', None),
                      problems)
    host = {'ansible_host': ssh_ip, 'ip': nic_ip, 'access_ip': nic_ip,
            'ansible_user': user}
    port = getattr(node, 'ssh_port', 22)
    if port != 22:
        if isinstance(port, bool) or not isinstance(port, int) or \
                not 0 < port < 65536:
            problems.append((where + '.ssh_port', 'not a port: %r'
                             % (port,)))
        host['ansible_port'] = port
    return host


def _address(where, value, problems):
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        problems.append((where, 'not an IP address: %r' % (value,)))
        return None


def _sans(lb, extra_sans, problems):
    """The LB address first, then the extra names/addresses, no repeats."""
    sans = [lb] if lb else []
    for index, san in enumerate(extra_sans):
        if not isinstance(san, str) or not _SAN.match(san):
            problems.append(('inventory.extra_sans[%d]' % index,
                             'not a host name or IP address: %r' % (san,)))
        elif san not in sans:
            sans.append(san)
    return sans


def to_yaml(inventory):
    """The inventory as YAML text, in a stable order, with a header."""
    return HEADER + yaml.safe_dump(inventory, default_flow_style=False,
                                   sort_keys=False, allow_unicode=False)


def host_names(inventory):
    """Every host of ``inventory``, masters first, each once."""
    top = inventory['all']
    children = top.get('children', {})
    names = []
    for group in (CONTROL_PLANE, ETCD, NODES, ROUTE_REFLECTORS):
        for name in (children.get(group) or {}).get('hosts') or {}:
            if name not in names:
                names.append(name)
    names += [n for n in top.get('hosts') or {} if n not in names]
    return names
