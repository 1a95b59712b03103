"""setup_storage.sh and the validator agree on the storage rules: which
export clients are refused (and why), and which mount points and export
directories are (k8s_mgmt.params.nfs_exports). The script is the defence
on the VM; a request the validator passes must not fail there, and what
the script would refuse must not pass validation.

Both are fed the same seeded random values, IPv6 included (the validator
refuses IPv6 by the field's form today, its rule must not depend on that).
"""

import ipaddress
import random
import subprocess

from k8s_mgmt.params import fields
from k8s_mgmt.params import nfs_exports
from tests.functional.scripts.script_helpers import REPO

SCRIPT = REPO / 'k8s_mgmt' / 'scripts' / 'setup_storage.sh'
# Reads "clients VALUE ALLOW_WIDE" and "path VALUE" lines (tab-separated:
# a path may hold a space), answers one line each with the script's own
# functions.
JUDGE = r'''
source "$1"
set +eu
while IFS=$'\t' read -r kind value allow; do
    case $kind in
        clients)
            ALLOW_WIDE_EXPORT=$allow
            if clients_refused "$value"; then
                echo "refused $REPLY"
            else
                echo ok
            fi ;;
        path)
            if ! clean_path "$value"; then
                echo refused
            elif system_dir_of "$REPLY"; then
                echo refused
            else
                echo "ok $REPLY"
            fi ;;
    esac
done
'''


def judged_by_script(lines):
    done = subprocess.run(['bash', '-c', JUDGE, 'judge', str(SCRIPT)],
                          input=''.join(line + '\n' for line in lines),
                          capture_output=True, text=True, timeout=120,
                          check=True)
    answers = done.stdout.splitlines()
    assert len(answers) == len(lines), done.stderr
    return answers


def _script_clients(answer):
    """('includes', NETWORK), ('wide', PREFIX) or None from the script."""
    if answer == 'ok':
        return None
    if ' includes ' in answer:
        return 'includes', answer.rsplit('(', 1)[1].rstrip(')')
    return 'wide', answer.split('/')[1].split()[0]


def _python_clients(value, allow_wide):
    reason = nfs_exports.clients_refusal(value, allow_wide)
    if reason is None:
        return None
    if reason.startswith('includes'):
        return 'includes', reason.rsplit('(', 1)[1].rstrip(')')
    return 'wide', reason.rsplit('/', 1)[1]


def _random_network(chance):
    if chance.random() < 0.5:
        base = chance.choice([0, 0x7F000001, 0xA9FEA9FE, 0xE0000000,
                              0xFFFFFFFF, 0x0AFE0000, 0xC0A80100])
        bits, width = chance.choice((0, 4, 8, 16, 32)), 32
    else:
        base = chance.choice([0, 1, 0xFFFF << 32, 0xFE80 << 112,
                              0xFF02 << 112, 0x20010DB8 << 96,
                              0xFD00 << 112])
        bits, width = chance.choice((0, 8, 16, 64, 128)), 128
    address = (base ^ chance.getrandbits(bits)) & ((1 << width) - 1)
    address = (ipaddress.IPv6Address(address) if width == 128 else
               ipaddress.IPv4Address(address))
    prefix = chance.choice([None, 0, 1, 7, 15, 16, 24, 32, 47, 48, 64,
                            chance.randint(0, width)])
    if prefix is None or prefix > width:
        return str(address)
    return '%s/%d' % (ipaddress.ip_network('%s/%d' % (address, prefix),
                                           strict=False).network_address,
                      prefix)


def test_export_clients_get_the_same_verdict_and_reason():
    chance = random.Random(27)
    cases = [(_random_network(chance), chance.random() < 0.5)
             for _ in range(400)]
    cases += [(c, w) for c in ('0.0.0.0/0', '::/0', '::', '::1',
                               '169.254.169.254', '255.255.255.255',
                               '10.0.0.0/8', '10.0.0.0/16', 'fd00::/48',
                               'fd00::/47', '::ffff:7f00:1')
              for w in (False, True)]
    answers = judged_by_script(['clients\t%s\t%s' % (c, str(w).lower())
                                for c, w in cases])
    refused = 0
    for (clients, wide), answer in zip(cases, answers):
        expected = _python_clients(clients, wide)
        assert _script_clients(answer) == expected, (clients, wide, answer)
        refused += expected is not None
    assert 100 < refused < 350


_PARTS = ['srv', 'data', 'nfs', 'etc', 'usr', 'var', 'lib', 'lib64',
          'libx', 'tmp', 'run', '.ssh', 'ssh', 'root', 'boot', 'proc', 'sys',
          'dev', 'bin', 'sbin', 'mnt', 'home', '.', '', '..', 'a b', 'x$y']


def _python_path(value):
    report = fields.Report()
    clean = nfs_exports.data_path(report, 'path', value)
    return 'refused' if clean is None else 'ok ' + clean


def test_mount_points_and_export_dirs_get_the_same_verdict():
    chance = random.Random(28)
    paths = ['/' + '/'.join(chance.choice(_PARTS)
                            for _ in range(chance.randint(1, 4)))
             for _ in range(500)]
    paths += ['/', '//', '/var', '/var/lib', '/var/lib2', '/library/x',
              '/srv/.ssh', '//etc/x', '/srv/./data/']
    answers = judged_by_script(['path\t' + p for p in paths])
    refused = 0
    for path, answer in zip(paths, answers):
        assert answer == _python_path(path), (path, answer)
        refused += answer == 'refused'
    assert 100 < refused < 480
