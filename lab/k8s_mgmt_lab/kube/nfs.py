"""NFS server stand-in: the real nfs-ganesha serving what /etc/exports says.

A lab VM's kernel has no NFS server, so where the storage script starts
``nfs-kernel-server`` the systemctl stand-in runs the REAL ``rpcbind`` and
the REAL ``ganesha.nfsd`` (Debian nfs-ganesha, VFS FSAL; unpacked by the
host into ``settings()['nfs_server_root']``) as processes of the VM, with a
ganesha configuration generated from the ``/etc/exports`` the script wrote:
NFS v3 and v4, ``Graceless`` (a restart blocks no client), each export
served at its own path to the clients and with the options it names.

The ``exportfs`` stand-in (module ``exportfs``, run as
``/usr/local/sbin/exportfs``, before ``/usr/sbin`` on PATH and sudo's
secure_path) uses this module: ``-ra`` re-reads /etc/exports and, when the
server runs, RESTARTS ganesha on the new set (a restart is synchronous and,
being graceless, costs clients one reconnect); ``-v`` lists what is
exported as exportfs does. Anything else fails loudly.
"""

import glob
import ipaddress
import json
import os
import re
import shlex

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import kube

PROG = 'exportfs'
EXPORTS = '/etc/exports'
CONFIG = '/etc/ganesha/ganesha.conf'
TABLE = '/run/standin/nfs-exports.json'   # what is exported, as etab
UNIT_FILE = '/lib/systemd/system/nfs-server.service'
RECOVERY_DIR = '/var/lib/nfs/ganesha'
READY_MARK = 'NFS SERVER INITIALIZED'
READY_TIMEOUT = 30.0
# Options ganesha has no use for (it always commits stably, has no
# subtree check): accepted as knfsd accepts them and listed by -v under
# their key. crossmnt, no_acl and fsid= are accepted and not listed.
NO_EFFECT = {'sync': 'sync', 'async': 'sync', 'wdelay': 'wdelay',
             'no_wdelay': 'wdelay', 'hide': 'hide', 'nohide': 'hide',
             'subtree_check': 'subtree', 'no_subtree_check': 'subtree',
             'sec=sys': 'sec'}
# exportfs -v prints each export with these, defaults filled in.
DEFAULTS = {'sync': 'sync', 'wdelay': 'wdelay', 'hide': 'hide',
            'subtree': 'no_subtree_check', 'sec': 'sec=sys', 'access': 'ro',
            'secure': 'secure', 'squash': 'root_squash',
            'all': 'no_all_squash'}


class ExportsError(Exception):
    """/etc/exports says something this stand-in (or knfsd) rejects."""


def unit_installed():
    """True when nfs-kernel-server is installed in this VM (its unit file,
    as systemd sees it)."""
    return os.path.exists(UNIT_FILE)


def parse(text, source=EXPORTS):
    """[{'path', 'clients': [{'client', 'options': {...}}]}] from exports(5)
    text; raises ExportsError naming the line."""
    exports = []
    for number, line in _logical_lines(text):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise ExportsError('%s:%d: %s' % (source, number, exc))
        if not words:
            continue
        path, specs = words[0], words[1:]
        if not path.startswith('/') or '"' in path:
            raise ExportsError('%s:%d: bad export path %r'
                               % (source, number, path))
        if not specs:
            raise ExportsError('%s:%d: %s names no client (the lab does not '
                               'export to the world by default)'
                               % (source, number, path))
        clients = [_client(spec, '%s:%d' % (source, number))
                   for spec in specs]
        exports.append({'path': os.path.normpath(path), 'clients': clients})
    return exports


def _logical_lines(text):
    pending, start = '', 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if line.endswith('\\'):
            pending += line[:-1] + ' '
            continue
        yield start, pending + line
        pending = ''
    if pending:
        yield start, pending


_SPEC = re.compile(r'^([^()\s]+)(?:\(([^()]*)\))?$')


def _client(spec, where):
    match = _SPEC.match(spec)
    if not match:
        raise ExportsError('%s: cannot read client %r (a space before "(" '
                           'exports to the world)' % (where, spec))
    host, words = match.group(1), match.group(2) or ''
    if host.startswith(('@', '-')):
        raise ExportsError('%s: %r is not supported by the lab'
                           % (where, host))
    if '/' in host:
        try:
            host = str(ipaddress.ip_network(host, strict=False))
        except ValueError:
            raise ExportsError('%s: bad network %r' % (where, host))
    options = dict(DEFAULTS)
    for word in filter(None, words.split(',')):
        _option(options, word, where)
    return {'client': host, 'options': options}


def _option(options, word, where):
    if word in ('rw', 'ro'):
        options['access'] = word
    elif word in ('root_squash', 'no_root_squash'):
        options['squash'] = word
    elif word in ('all_squash', 'no_all_squash'):
        options['all'] = word
    elif word in ('secure', 'insecure'):
        options['secure'] = word
    elif re.match(r'^anon[ug]id=\d+$', word):
        options[word.split('=')[0]] = word
    elif word in NO_EFFECT:
        options[NO_EFFECT[word]] = word
    elif not re.match(r'^(crossmnt|no_acl|fsid=\S+)$', word):
        raise ExportsError('%s: unknown keyword "%s"' % (where, word))


def ganesha_config(exports, root):
    """The ganesha.conf serving ``exports`` (from parse())."""
    fsal_dirs = glob.glob(os.path.join(root, 'usr/lib/*/ganesha'))
    blocks = [CONFIG_HEAD % {'plugins': fsal_dirs[0] if fsal_dirs
                             else root + '/usr/lib/ganesha'}]
    for number, export in enumerate(exports, 1):
        blocks.append(EXPORT_BLOCK % {
            'id': number, 'path': export['path'],
            'clients': ''.join(_client_block(c) for c in export['clients'])})
    return ''.join(blocks)


CONFIG_HEAD = """\
# Generated by the k8s-mgmt lab NFS server stand-in from /etc/exports;
# rewritten at every start and "exportfs -ra".
NFS_CORE_PARAM {
    Protocols = 3, 4;
    # No rpc.statd or rquotad in a lab VM.
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Plugins_Dir = "%(plugins)s";
}
NFSv4 {
    Graceless = true;
    # Owner names from /etc/passwd; no idmapd plugin in the VM.
    UseGetpwnam = true;
}
NFS_KRB5 {
    Active_krb5 = false;
}
"""
EXPORT_BLOCK = """\
EXPORT {
    Export_Id = %(id)d;
    Path = "%(path)s";
    Pseudo = "%(path)s";
    Protocols = 3, 4;
    SecType = sys;
    # Only the clients below, as knfsd.
    Access_Type = None;
    FSAL {
        Name = VFS;
    }
%(clients)s}
"""


def _client_block(client):
    options = client['options']
    squash = 'all_squash' if options['all'] == 'all_squash' \
        else options['squash']
    lines = ['Clients = %s;' % client['client'],
             'Access_Type = %s;' % options['access'].upper(),
             'Squash = %s;' % squash,
             'PrivilegedPort = %s;' % str(
                 options['secure'] == 'secure').lower()]
    # knfsd squashes to 65534 (nobody), ganesha by default to 4294967294.
    for key, name in (('anonuid', 'Anonymous_Uid'),
                      ('anongid', 'Anonymous_Gid')):
        value = options.get(key, key + '=65534').split('=')[1]
        lines.append('%s = %s;' % (name, value))
    return '    CLIENT {\n%s    }\n' % ''.join(
        '        %s\n' % line for line in lines)


def prepare():
    """Read /etc/exports, keep the exports whose directory exists and write
    the ganesha configuration and the table. Returns the error lines (as
    exportfs words them) of what was left out. An unreadable file exports
    nothing and raises ExportsError."""
    try:
        with open(EXPORTS) as f:
            text = f.read()
    except FileNotFoundError:
        text = ''
    try:
        parsed = parse(text)
    except ExportsError:
        _write([])
        raise
    return _write(parsed)


def _write(parsed):
    exports, errors = [], []
    for export in parsed:
        if os.path.isdir(export['path']):
            exports.append(export)
        else:
            errors.append('%s: Failed to stat %s: No such file or directory'
                          % (PROG, export['path']))
    kube.write_file(CONFIG, ganesha_config(
        exports, kube.settings()['nfs_server_root']), 0o644)
    _write_table(exports)
    return errors


def _write_table(exports):
    kube.write_file(TABLE, json.dumps(exports, indent=1) + '\n', 0o644)


def server_argv(log_path):
    """ganesha.nfsd in the foreground from the lab's unpacked tree."""
    root = kube.settings()['nfs_server_root']
    libraries = glob.glob(os.path.join(root, 'usr/lib/*-linux-gnu')) + \
        [os.path.join(root, 'usr/lib/ganesha')]
    os.makedirs(RECOVERY_DIR, exist_ok=True)
    return ['/usr/bin/env', 'LD_LIBRARY_PATH=' + ':'.join(libraries),
            os.path.join(root, 'usr/bin/ganesha.nfsd'), '-F',
            '-f', CONFIG, '-L', log_path, '-N', 'NIV_EVENT',
            '-p', '/run/ganesha.pid']


def wait_serving(alive, log_path, offset):
    """Wait until ganesha says it serves (or dies). Returns (ok, errors):
    errors are the exports it could not serve, worded as exportfs would;
    they are dropped from the table."""
    for _ in Poll(READY_TIMEOUT, first=0.05, maximum=0.5):
        text = _log_since(log_path, offset)
        if READY_MARK in text:
            return True, _export_failures(text)
        if not alive():
            return False, []
    return False, []


def _log_since(path, offset):
    try:
        with open(path, errors='replace') as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return ''


_FAILED = re.compile(r'(?:Could not get handle for path|while resolving '
                     r'export path) (\S+)(?:, error (.*))?')


def _export_failures(log_text):
    failed = {}
    for match in _FAILED.finditer(log_text):
        failed.setdefault(match.group(1), (match.group(2) or
                                           'cannot be exported').strip())
    if failed:
        table = kube.read_json(TABLE, [])
        _write_table([e for e in table if e['path'] not in failed])
    return ['%s: %s does not support NFS export (%s)' % (PROG, path, why)
            for path, why in sorted(failed.items())]


def listing():
    """exportfs -v: each export and client with its options."""
    lines = []
    for export in kube.read_json(TABLE, []):
        path = export['path']
        for client in export['clients']:
            o = client['options']
            words = [o['sync'], o['wdelay'], o['hide'], o['subtree'],
                     o['sec'], o['access'], o['secure'], o['squash'],
                     o['all']] + [o[k] for k in ('anonuid', 'anongid')
                                  if k in o]
            gap = '\n\t\t' if len(path) > 14 else '\t'
            lines.append('%s%s%s(%s)' % (path, gap, client['client'],
                                         ','.join(words)))
    return lines
