"""The signatures of the lab's Kubernetes apt repository
(:mod:`.k8s_repo`): gpg on a private home holding the repository's key,
made on first use, and the gpg-agent it starts ended with it."""

import logging
import os
import subprocess

from k8s_mgmt import polling
from k8s_mgmt_lab.errors import LabError

LOG = logging.getLogger(__name__)

KEY_UID = ('k8s-mgmt lab Kubernetes apt repository (stand-in for '
           'pkgs.k8s.io) <k8s-mgmt-lab@lab.invalid>')
FINGERPRINT_FILE = 'k8s-mgmt-lab.fingerprint'


class Gpg:
    """gpg on a private home directory holding the repository's key (made
    on first use); ``close()`` ends the gpg-agent it started."""

    def __init__(self, home):
        self.home = os.path.abspath(home)
        os.makedirs(home, mode=0o700, exist_ok=True)
        os.chmod(home, 0o700)
        self._fingerprint = None

    def run(self, *args):
        return run_tool(['gpg', '--batch', '--quiet', '--no-tty',
                         '--homedir', self.home, '--pinentry-mode',
                         'loopback', '--passphrase', ''] + list(args), 'gpg')

    @property
    def fingerprint(self):
        """The signing key's fingerprint, its key made if the home has
        none."""
        if self._fingerprint is None:
            self._fingerprint = self._read_fingerprint() or self._new_key()
        return self._fingerprint

    def _read_fingerprint(self):
        path = os.path.join(self.home, FINGERPRINT_FILE)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read().strip() or None

    def _new_key(self):
        self.run('--quick-gen-key', KEY_UID, 'ed25519', 'sign', 'never')
        listing = self.run('--with-colons', '--list-secret-keys', KEY_UID)
        fingerprint = next(line.split(':')[9]
                           for line in listing.splitlines()
                           if line.startswith('fpr:'))
        path = os.path.join(self.home, FINGERPRINT_FILE)
        with open(path, 'wb') as handle:
            handle.write(fingerprint.encode() + b'\n')
        os.chmod(path, 0o600)
        return fingerprint

    def public_key(self):
        """The key, ASCII-armored (pkgs.k8s.io's Release.key)."""
        return self.run('--export', '--armor', self.fingerprint)

    def sign(self, directory):
        """InRelease and Release.gpg of ``directory``'s Release."""
        release_path = os.path.join(directory, 'Release')
        for option, name in (('--clearsign', 'InRelease'),
                             ('--detach-sign', 'Release.gpg')):
            out = os.path.join(directory, name)
            self.run('--local-user', self.fingerprint, '--digest-algo',
                     'SHA512', '--armor', '--yes', '--output', out, option,
                     release_path)

    def close(self):
        """End the home's gpg-agent and wait until it has exited (gpgconf
        only asks it to)."""
        pids = agents(self.home)
        subprocess.run(['gpgconf', '--homedir', self.home, '--kill', 'all'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in polling.Poll(5, first=0.005, maximum=0.05, jitter=False):
            pids = [pid for pid in pids if _running(pid)]
            if not pids:
                return
        LOG.debug('gpg-agent of %s still running: %s', self.home, pids)


def _running(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ('Z', 'X')


def agents(home):
    """The pids of the gpg-agent processes of GnuPG home ``home``."""
    wanted = b'\0--homedir\0%s\0' % os.path.abspath(home).encode()
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read()
        except OSError:
            continue  # gone meanwhile
        if wanted in argv and b'gpg-agent' in argv.split(b'\0', 1)[0]:
            found.append(int(pid))
    return found


def run_tool(argv, name, env=None):
    """stdout of ``argv`` (gpg, dpkg-deb); LabError naming ``name`` and
    what to install, or its last lines of stderr."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env,
                              stdin=subprocess.DEVNULL)
    except OSError as e:
        raise LabError('%s failed: %s (apt-get install %s)'
                       % (name, e, 'gnupg' if name == 'gpg' else 'dpkg'))
    if proc.returncode != 0:
        last = ' / '.join(proc.stderr.strip().splitlines()[-3:])
        raise LabError('%s failed (exit %d): %s' % (name, proc.returncode,
                                                    last or 'no output'))
    return proc.stdout
