"""The operator's Ansible server: one private directory per cluster.

Each cluster gets ``<transferring_inventory_path>/k8s-mgmt-<instance id>``
(mode 0700) holding its inventory, a known_hosts file written from the
driver's pinned host keys, the cluster's own key pair (made there; the
private key never leaves the server) and our callback plugin. No node
password is ever written there: the driver installs the cluster's public
key on each node over its own SSH (:func:`authorize_key_command`).

The Ansible server has no Nova server id and no console to read a host key
from: :func:`target_for` makes a target without a server id, so its key is
pinned under ``<ip>:22``, and the first contact is verified against the
request's ``host_key_fingerprint`` (:mod:`k8s_mgmt.ansible.server_trust`).

The directory is refused when any directory on its path is writable by
every user (checked on the server, symbolic links followed, before
anything is made there), and so is an existing key file that is not the
connecting user's alone (:mod:`k8s_mgmt.ansible.remote_checks`).
"""

from importlib import resources
import json
import posixpath
import re

from oslo_log import log as logging

from k8s_mgmt import accepted
from k8s_mgmt import exceptions
from k8s_mgmt.ansible import inventory as inventory_mod
from k8s_mgmt.ansible import playbook
from k8s_mgmt.ansible import remote_checks
from k8s_mgmt.params import ansible_checks
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh.command import Command
from k8s_mgmt.ssh.target import SSHTarget

LOG = logging.getLogger(__name__)

NAME = 'ansible-server'
DIR_PREFIX = 'k8s-mgmt-'
PLUGIN_FILE = playbook.CALLBACK_NAME + '.py'
_INSTANCE_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$')
_PUBLIC_KEY = re.compile(r'^ssh-ed25519 [A-Za-z0-9+/]+={0,2}( [^\n]*)?$')
_KNOWN_HOSTS_LINE = re.compile(r'^\S+ [a-z0-9@.-]+ [A-Za-z0-9+/]+={0,2}$')
SSH_PORT = 22
SECTION = 'k8s_cluster_installation_param.ansible'
INVENTORY_FIELD = SECTION + '.transferring_inventory_path'


class NodeNotPinned(exceptions.MgmtDriverError):
    message = ('%(node)s (server %(server_id)s) has no pinned host key in '
               '%(pin_file)s, so Ansible could not check it: connect to the '
               'node over SSH first (its key is pinned then), or pin it with '
               '"k8s-mgmt hostkeys add"')


class UnsafeOnServer(exceptions.MgmtDriverError):
    message = '%(node)s: %(reason)s'


def _refuse_placeholders(params):
    if params.placeholders:
        raise exceptions.ValidationError(
            [(where, 'placeholder (empty or 0.0.0.0): set it to the Ansible '
                     'server\'s real value to run kubespray')
             for where in params.placeholders])


def check_address(params):
    """Refuse an address that cannot be a remote Ansible server (loopback,
    link-local, multicast, broadcast, unspecified), placeholders first."""
    _refuse_placeholders(params)
    reason = ansible_checks.address_problem(params.ip_address)
    if reason is not None:
        raise exceptions.ValidationError([(
            SECTION + '.ip_address', '%s: %r' % (reason, params.ip_address))])


def target_for(ansible_params):
    """The SSH target of the Ansible server (no server id: pinned by
    address)."""
    check_address(ansible_params)
    return SSHTarget(NAME, ansible_params.ip_address,
                     ansible_params.username,
                     password=ansible_params.password,
                     private_key=ansible_params.ssh_private_key,
                     port=SSH_PORT)


def plugin_source():
    """The callback plugin's source, as shipped in this package."""
    return resources.files('k8s_mgmt.kubespray').joinpath(
        playbook.CALLBACK_DIR, PLUGIN_FILE).read_bytes()


class AnsibleServer(object):
    """One cluster's directory on the Ansible server, through ``session``
    (an open SSHSession to :func:`target_for`)."""

    def __init__(self, session, ansible_params, instance_id):
        _refuse_placeholders(ansible_params)
        if not isinstance(instance_id, str) or \
                not _INSTANCE_ID.match(instance_id):
            raise exceptions.ValidationError([(
                'vnf_instance.id', 'not usable in a directory name: %r'
                % (instance_id,))])
        problems = []
        for field in ('transferring_inventory_path', 'kubespray_root_path'):
            value = getattr(ansible_params, field)
            reason = accepted.vm_path(value) if isinstance(value, str) \
                else 'missing'
            if reason:
                problems.append(('ansible.' + field, reason))
        shared = isinstance(ansible_params.transferring_inventory_path, str) \
            and ansible_checks.shared_dir_problem(posixpath.normpath(
                ansible_params.transferring_inventory_path))
        if shared:
            problems.append((INVENTORY_FIELD, shared))
        if problems:
            raise exceptions.ValidationError(problems)
        self.session = session
        self.params = ansible_params
        self.instance_id = instance_id
        self.root = posixpath.normpath(ansible_params.kubespray_root_path)
        self.inventory_dir = self._expected_dir()
        self.inventory_path = posixpath.join(self.inventory_dir,
                                             playbook.INVENTORY_FILE)
        self.known_hosts_path = posixpath.join(self.inventory_dir,
                                               playbook.KNOWN_HOSTS_FILE)
        self.key_path = posixpath.join(self.inventory_dir, playbook.KEY_FILE)

    def _expected_dir(self):
        return posixpath.join(
            posixpath.normpath(self.params.transferring_inventory_path),
            DIR_PREFIX + self.instance_id)

    def _run(self, cmd, step):
        return self.session.run(cmd, step=step)

    def _refuse_unsafe(self, check, path, step):
        """Run a check of :mod:`remote_checks` on the server; its refusal
        is one line naming the field and the path."""
        cmd = Command('python3', '-c', remote_checks_source(), check, path)
        result = self.session.run(cmd, step=step, check=False)
        if result.status == 0:
            return
        try:
            found = json.loads(result.stdout)
        except ValueError:
            found = None
        if result.status != remote_checks.REFUSED or \
                not isinstance(found, dict):
            raise exceptions.RemoteCommandError(
                node=self.session.node, step=step, status=result.status,
                stderr=client.stderr_tail(result.stderr))
        raise UnsafeOnServer(node=self.session.node, reason=explain(found))

    def prepare(self):
        """Check the directories on the way, make the directory (0700) and
        upload the callback plugin."""
        plugins = posixpath.join(self.inventory_dir, playbook.CALLBACK_DIR)
        self._refuse_unsafe('dirs', plugins, 'inventory directory')
        # umask: the parents mkdir -p makes get no permission for others.
        self._run(Command('umask', '077')
                  .and_then(Command('mkdir', '-p', '-m', '700', '--',
                                    self.inventory_dir, plugins))
                  .and_then(Command('chmod', '700', '--', self.inventory_dir,
                                    plugins)), 'inventory directory')
        self.session.put(plugin_source(), posixpath.join(plugins, PLUGIN_FILE),
                         mode=0o600, step='callback plugin')

    def ensure_key_pair(self):
        """Make the cluster's ed25519 key pair on the server unless it
        exists; return its public key line. The private key stays there.
        An existing key file that is not the connecting user's alone is
        refused."""
        self._refuse_unsafe('key', self.key_path, 'cluster key pair')
        make = Command('test', '-f', self.key_path).or_else(Command(
            'ssh-keygen', '-q', '-t', 'ed25519', '-N', '',
            '-C', DIR_PREFIX + self.instance_id, '-f', self.key_path))
        show = Command('ssh-keygen', '-y', '-f', self.key_path)
        out = self._run(make.and_then(show), 'cluster key pair').stdout
        line = out.strip()
        if not _PUBLIC_KEY.match(line):
            raise exceptions.SSHError(
                node=self.session.node, step='cluster key pair',
                reason='ssh-keygen printed no ed25519 public key for %s'
                       % self.key_path)
        return line

    def write_inventory(self, inventory):
        """Upload the inventory (0600, replaced atomically)."""
        self.session.put(inventory_mod.to_yaml(inventory).encode('utf-8'),
                         self.inventory_path, mode=0o600, step='inventory')

    def write_known_hosts(self, lines):
        """Upload the known_hosts file (0600, replaced atomically)."""
        for line in lines:
            if not isinstance(line, str) or \
                    not _KNOWN_HOSTS_LINE.match(line):
                raise ValueError('not a known_hosts line: %r' % (line,))
        text = ''.join(line + '\n' for line in lines)
        self.session.put(text.encode('ascii'), self.known_hosts_path,
                         mode=0o600, step='known_hosts')

    def run(self, call, timeout=None, on_event=None):
        """Run a playbook in kubespray_root_path with this inventory."""
        return playbook.run(self.session, call, root=self.root,
                            inventory_dir=self.inventory_dir,
                            timeout=timeout, log_prefix=self.session.node,
                            on_event=on_event)

    def remove(self):
        """Delete the cluster's directory, key pair included. Refuses any
        path but ``<transferring_inventory_path>/k8s-mgmt-<instance id>``."""
        expected = self._expected_dir()
        path = self.inventory_dir
        if (path != expected or posixpath.normpath(path) != path or
                not posixpath.basename(path).startswith(DIR_PREFIX) or
                accepted.vm_path(path) is not None):
            raise exceptions.MgmtDriverError(
                error_message='refusing to delete %r on the Ansible server: '
                              'only %s is this cluster\'s directory'
                              % (path, expected))
        self._run(Command('rm', '-rf', '--', path), 'remove inventory')
        LOG.info('%(node)s: removed %(path)s (inventory and cluster key '
                 'pair)', {'node': self.session.node, 'path': path})


def remote_checks_source():
    """The source of :mod:`remote_checks`, as sent to the server."""
    return resources.files('k8s_mgmt.ansible').joinpath(
        'remote_checks.py').read_text(encoding='utf-8')


def explain(found):
    """One line for a refusal of :mod:`remote_checks` (a dict)."""
    kind, path = found.get('kind'), found.get('path')
    if kind == 'world-writable':
        return ('%s: %s on the Ansible server is writable by every user '
                '(mode %s): another user could swap the cluster\'s directory '
                'or key pair; choose a path whose every directory only its '
                'owner can write' % (INVENTORY_FIELD, path, found.get('mode')))
    if kind == 'not-a-directory':
        return '%s: %s on the Ansible server is not a directory' % (
            INVENTORY_FIELD, path)
    if kind == 'owner':
        return ('the cluster key %s on the Ansible server belongs to uid %s, '
                'not to the connecting user (uid %s), who may not be the '
                'only one holding it; refusing to use it: remove it (a new '
                'pair is made at the next run) or choose another %s'
                % (path, found.get('uid'), found.get('user_uid'),
                   INVENTORY_FIELD))
    if kind == 'mode':
        return ('the cluster key %s on the Ansible server has mode %s, so '
                'others may have read it; refusing to use it: if nobody '
                'could have, chmod 600 it; else remove it (a new pair is '
                'made at the next run) and the old public key from the '
                'nodes\' authorized_keys' % (path, found.get('mode')))
    if kind == 'link-loop':
        return '%s: too many symbolic links on the way to %s' % (
            INVENTORY_FIELD, path)
    if kind == 'not-a-file':
        return ('the cluster key %s on the Ansible server is not a regular '
                'file; refusing to use it: remove it' % path)
    return '%s: refused by the Ansible server\'s check of %s (%s)' % (
        INVENTORY_FIELD, path, kind)


def known_hosts_lines(nodes, store):
    """known_hosts lines for ``nodes`` from their pinned keys (pins keyed by
    ``node.server_id``). A node without a pin is an error naming it."""
    lines = []
    missing = []
    for node in nodes:
        entry = store.get(node.server_id) if node.server_id else None
        if entry is None:
            missing.append(node)
            continue
        port = getattr(node, 'ssh_port', SSH_PORT)
        host = node.ssh_ip if port == SSH_PORT else '[%s]:%d' % (
            node.ssh_ip, port)
        lines.append('%s %s %s' % (host, entry['key_type'], entry['key']))
    if missing:
        raise NodeNotPinned(node=', '.join(n.name for n in missing),
                            server_id=', '.join(str(n.server_id)
                                                for n in missing),
                            pin_file=store.path)
    return lines


# Run by the node's SSH user: $1 is the public key line.
_AUTHORIZE = '\n'.join([
    'set -eu',
    'umask 077',
    'mkdir -p "$HOME/.ssh"',
    'chmod 700 "$HOME/.ssh"',
    'f="$HOME/.ssh/authorized_keys"',
    'touch "$f"',
    # A last line without its newline would be glued to ours.
    'if [ -s "$f" ] && [ -n "$(tail -c 1 "$f")" ]; then echo >> "$f"; fi',
    'grep -qxF -- "$1" "$f" || printf \'%s\\n\' "$1" >> "$f"',
    'chmod 600 "$f"',
])


def authorize_key_command(public_key_line):
    """The command that adds ``public_key_line`` to the login user's
    authorized_keys once (exact line match); safe to run again."""
    if not isinstance(public_key_line, str) or \
            not _PUBLIC_KEY.match(public_key_line):
        raise ValueError('not an ed25519 public key line')
    return Command('sh', '-c', _AUTHORIZE, 'k8s-mgmt-authorize-key',
                   public_key_line)
