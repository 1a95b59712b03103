"""First contact with the Ansible server follows ``host_key_policy``.

The Ansible server is not a Heat VM: no console output can vouch for its
host key, so the ``console`` policy cannot work for it as for the nodes.
Its key is pinned under ``<ip>:22``; until it is, the request's
``ansible.host_key_fingerprint`` (``SHA256:...``, read on a trusted path)
takes the console's place:

* pinned: the pin decides, whatever the policy; a fingerprint that differs
  from it is refused, naming both;
* not pinned, ``console``: the key offered must match the fingerprint
  (then it is pinned, ``"verified": "fingerprint"``); without one, refused;
* not pinned, ``tofu``: as ``console`` when a fingerprint is given, else the
  key is pinned on first use with a WARNING;
* not pinned, ``strict``: refused (``k8s-mgmt hostkeys add <ip>:22``).

:func:`check_before_any_vm` applies this in every hook of the kubespray
driver before anything runs (in instantiate_start, before Heat makes a
VM); :func:`open_session` applies it again when connecting.
"""

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import ssh
from k8s_mgmt import state as state_mod
from k8s_mgmt.ansible import ansible_server
from k8s_mgmt.ssh import hostkeys

FIELD = ansible_server.SECTION + '.host_key_fingerprint'


def trusted_path(address):
    """How an operator reads the server's fingerprint safely."""
    return ('on a trusted path: on the server\'s console, "ssh-keygen -lf '
            '/etc/ssh/ssh_host_ed25519_key.pub", or from a network you '
            'trust, "ssh-keyscan -t ed25519 %s | ssh-keygen -lf -"'
            % address)


class FingerprintMismatch(exceptions.SSHError):
    message = ('%(node)s: %(step)s: the Ansible server %(address)s offers '
               'the %(key_type)s host key %(offered)s, not the '
               'host_key_fingerprint given for it (%(expected)s): possible '
               'man-in-the-middle; refusing to connect (nothing was sent to '
               'it). If its key did change, read the new one %(how)s')


class NothingToVerify(exceptions.SSHError):
    message = ('%(node)s: %(step)s: no host key is pinned for the Ansible '
               'server %(pin_id)s in %(pin_file)s and the request gives no '
               'host_key_fingerprint to check the offered key %(offered)s '
               'against; refusing to trust it on first use (host_key_policy '
               '%(policy)s)')


def pin_id(params):
    return hostkeys.pin_id(None, params.ip_address, ansible_server.SSH_PORT)


def store_for(instance_id):
    """The pin store the operations on ``instance_id`` use."""
    return ssh.HostKeyStore(
        state_mod.InstanceState(instance_id).host_key_file())


def problem(params, store, policy):
    """Why the first contact with the Ansible server cannot follow
    ``policy``, or None."""
    key_id = pin_id(params)
    entry = store.get(key_id)
    given = params.host_key_fingerprint
    add = ('"k8s-mgmt hostkeys add %s --key-file <a copy of its '
           '/etc/ssh/ssh_host_ed25519_key.pub> --file %s"'
           % (key_id, store.path))
    if entry is not None:
        pinned = hostkeys.entry_fingerprint(entry)
        if given is None or given == pinned:
            return None
        return ('%s differs from the host key pinned for the Ansible server '
                '%s in %s (%s %s); correct it, or if the server\'s key did '
                'change, read the new one %s and replace the pin: %s with '
                '--replace' % (given, key_id, store.path, entry['key_type'],
                               pinned, trusted_path(params.ip_address), add))
    if policy == hostkeys.POLICY_STRICT:
        return ('host_key_policy is strict, which pins no key by itself, '
                'and no host key is pinned for the Ansible server %s in %s: '
                'pin it first with %s, after checking it %s'
                % (key_id, store.path, add, trusted_path(params.ip_address)))
    if given is not None or policy == hostkeys.POLICY_TOFU:
        return None
    return ('required with host_key_policy %s: the Ansible server %s is not '
            'a Heat VM, so no console output can verify its host key, and '
            'none is pinned for %s in %s. Give its fingerprint here '
            '("SHA256:..."), read %s; or pin its key with %s '
            '(host_key_policy = tofu would trust it on first use instead)'
            % (policy, params.ip_address, key_id, store.path,
               trusted_path(params.ip_address), add))


def check_before_any_vm(params, store, policy=None):
    """Raise ValidationError (one line naming the field) when the first
    contact with the Ansible server cannot follow the policy."""
    found = problem(params, store,
                    policy or conf.CONF.k8s_mgmt.host_key_policy)
    if found is not None:
        raise exceptions.ValidationError([(FIELD, found)])


class FingerprintCheck(object):
    """The first-contact verifier of the Ansible server's session: the
    request's fingerprint in place of a console
    (as :class:`~k8s_mgmt.ssh.console_keys.FirstContactVerifier`)."""

    def __init__(self, expected, address, pin_file, policy):
        self.expected = expected
        self.address = address
        self.pin_file = pin_file
        self.policy = policy

    def checker(self, server_id, node):
        def verify(key):
            offered = hostkeys.fingerprint(key)
            if self.expected is None:
                raise NothingToVerify(
                    node=node, step='connect', offered=offered,
                    pin_id=hostkeys.pin_id(None, self.address,
                                           ansible_server.SSH_PORT),
                    pin_file=self.pin_file, policy=self.policy)
            if offered != self.expected:
                raise FingerprintMismatch(
                    node=node, step='connect', address=self.address,
                    key_type=key.get_name(), offered=offered,
                    expected=self.expected, how=trusted_path(self.address))
            return hostkeys.VERIFIED_FINGERPRINT
        return verify


def session_settings(params, store, policy):
    """``(policy, first_contact)`` for the Ansible server's session."""
    if policy == hostkeys.POLICY_STRICT:
        return policy, None
    if policy == hostkeys.POLICY_TOFU and params.host_key_fingerprint is None:
        return policy, None
    # The session asks a first-contact verifier under console only.
    return hostkeys.POLICY_CONSOLE, FingerprintCheck(
        params.host_key_fingerprint, params.ip_address, store.path, policy)


def open_session(target, params, store, policy=None, **session_kwargs):
    """A connected session to the Ansible server at ``target``, its host
    key checked as the module says."""
    policy, check = session_settings(
        params, store, policy or conf.CONF.k8s_mgmt.host_key_policy)
    session = ssh.SSHSession(target, store=store, policy=policy,
                             first_contact=check, **session_kwargs)
    session.connect()
    return session
