"""Checks of single parameter values.

Each checker takes the :class:`Report` collecting problems, the snake_case
path of the value and the raw JSON value; it returns the normalised value, or
``None`` after recording a problem. No checker raises, whatever the value,
and no message ever contains a secret: secrets are described, not shown.

Every string a request gives goes through :func:`text_problem` (via
:func:`string` or :func:`secret`): a length cap, and no character that
could end a log line, reorder or hide what is shown (Unicode controls,
format characters, line and paragraph separators, lone surrogates).
Values shown in messages are escaped by :func:`show`.
"""

import os
import posixpath
import re
import unicodedata

from k8s_mgmt import accepted
from k8s_mgmt.secrets import Secret

_SHOWN_CHARS = 60
# The longest value of each kind; messages state the limit.
MAX_TEXT = 255          # names, ids, versions, addresses
MAX_PACKAGE_PATH = 1024
MAX_NO_PROXY = 4096
MAX_PASSWORD = 1024
MAX_PROXY_URL = 2048
MAX_PRIVATE_KEY = 16384  # a 16384-bit RSA key in PEM is about 12.5 KB
# Unicode categories no value may hold, and what a message calls them.
_REFUSED = {'Cc': 'a control character', 'Cf': 'a format character',
            'Zl': 'a line separator', 'Zp': 'a paragraph separator',
            'Cs': 'a lone surrogate'}
# Login names as useradd and LDAP/AD accept them; no shell metacharacters,
# no whitespace, no leading '-' (it would read as an option).
_USERNAME = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}')
# Tacker VIM names end up in file names and log lines; keep them plain.
_VIM_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,254}')
_PEM_KEY = re.compile(r'-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----.+'
                      r'-----END ([A-Z0-9]+ )*PRIVATE KEY-----', re.S)
# What the install script's -x list takes (no IPv6 brackets, no quoting).
_NO_PROXY_ENTRY = re.compile(r'[A-Za-z0-9_.:*/-]+')
# A key of a request's object that a path may show as it is.
_PLAIN_KEY = re.compile(r'^[A-Za-z0-9_.-]{1,80}$')


class Report(object):
    """Problems (fatal) and warnings, each a ``(path, message)`` pair."""

    def __init__(self):
        self.problems = []
        self.warnings = []
        self.unknown_keys = []

    def problem(self, path, message):
        self.problems.append((path, message))

    def warn(self, path, message):
        self.warnings.append((path, message))


def describe(value):
    """A JSON value's kind, for messages (never the value itself)."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number'
    if isinstance(value, (str, Secret)):
        return 'a string'
    if isinstance(value, list):
        return 'a list'
    if isinstance(value, dict):
        return 'an object'
    return 'a %s' % type(value).__name__


def show(text):
    """``repr`` of a (non-secret) string, shortened for messages."""
    if len(text) > _SHOWN_CHARS:
        text = text[:_SHOWN_CHARS] + '...'
    return repr(text)


def key_for_path(key):
    """A key of a request's object as a path shows it: as it is when
    plain, else escaped in brackets (``['a\\nb']``), so that no key can
    add or hide a line."""
    if isinstance(key, str) and _PLAIN_KEY.match(key):
        return key
    return '[%s]' % show(str(key))


def text_problem(text, limit, allowed=''):
    """Why ``text`` cannot be a value, or None: longer than ``limit``, or
    holding a character of :data:`_REFUSED` other than those in
    ``allowed``. The reason names the character's code point only."""
    if len(text) > limit:
        return 'longer than %d characters' % limit
    if text.isprintable():
        return None   # the common case: none of the refused categories
    for char in text:
        kind = _REFUSED.get(unicodedata.category(char))
        if kind is not None and char not in allowed:
            return 'holds %s (U+%04X)' % (kind, ord(char))
    return None


def string(report, path, value, what='a string', limit=MAX_TEXT):
    """A non-empty string of at most ``limit`` characters that passes
    :func:`text_problem`."""
    if not isinstance(value, str):
        report.problem(path, 'expected %s, got %s' % (what, describe(value)))
        return None
    if not value.strip():
        report.problem(path, 'empty')
        return None
    reason = text_problem(value, limit)
    if reason is not None:
        report.problem(path, '%s: %s' % (reason, show(value)))
        return None
    return value


def name(report, path, value):
    """A resource name (CP, aspect, volume): no whitespace inside."""
    value = string(report, path, value)
    if value is not None and any(char.isspace() for char in value):
        report.problem(path, 'a resource name has no whitespace: %s'
                       % show(value))
        return None
    return value


def username(report, path, value):
    value = string(report, path, value)
    if value is not None and not _USERNAME.fullmatch(value):
        report.problem(path, 'cannot be a login name (whitespace, shell '
                             'metacharacters or a leading "-"): %s'
                       % show(value))
        return None
    return value


def secret(report, path, value, what='password', limit=MAX_PASSWORD,
           allowed=''):
    """A secret string, returned as a Secret; never shown in a message,
    and refused by the rule of :func:`text_problem` like any other."""
    if isinstance(value, Secret):
        value = value.reveal()
    if not isinstance(value, str):
        report.problem(path, 'expected the %s as a string, got %s'
                       % (what, describe(value)))
        return None
    if not value:
        report.problem(path, 'empty %s' % what)
        return None
    reason = text_problem(value, limit, allowed)
    if reason is not None:
        # The code point would tell a reader part of the secret.
        report.problem(path, 'the %s %s (not shown)'
                       % (what, reason.split(' (U+')[0]))
        return None
    return Secret(value)


def private_key(report, path, value):
    key = secret(report, path, value, what='private key',
                 limit=MAX_PRIVATE_KEY, allowed='\r\n')
    if key is not None and not _PEM_KEY.search(key.reveal()):
        report.problem(path, 'not a PEM private key (want the text from '
                             '"-----BEGIN ... PRIVATE KEY-----" to '
                             '"-----END ... PRIVATE KEY-----")')
        return None
    return key


def cidr(report, path, value):
    """An IPv4 network; host bits are accepted, cleared and warned about."""
    value = string(report, path, value, what='a CIDR string')
    if value is None:
        return None
    interface, reason = accepted.ipv4_network(value)
    if reason is not None:
        report.problem(path, '%s: %s' % (reason, show(value)))
        return None
    network = interface.network
    if interface.ip != network.network_address:
        report.warn(path, 'host bits set in %s; using the network %s'
                    % (show(value), network))
    return str(network)


def ip_address(report, path, value):
    value = string(report, path, value, what='an IP address string')
    if value is None:
        return None
    address, reason = accepted.ipv4_address(value)
    if reason is not None:
        report.problem(path, '%s: %s' % (reason, show(value)))
        return None
    return str(address)


def ip_or_network(report, path, value):
    value = string(report, path, value, what='an IP address or network')
    if value is None:
        return None
    if '/' in value:
        found, reason = accepted.ipv4_network(value)
        found = found.network if found is not None else None
    else:
        found, reason = accepted.ipv4_address(value)
    if reason is not None:
        if reason != accepted.IPV6_UNSUPPORTED:
            reason = 'not an IP address or network'
        report.problem(path, '%s: %s' % (reason, show(value)))
        return None
    return str(found)


def package_path(report, path, value, package_dir=None):
    """A file path relative to the VNF package root, normalised.

    Absolute paths and paths that climb out of the package are refused;
    with ``package_dir`` the file must exist inside it (symlinks resolved).
    """
    value = string(report, path, value, what='a path string',
                   limit=MAX_PACKAGE_PATH)
    if value is None:
        return None
    if value.startswith('/') or '\\' in value:
        report.problem(path, 'absolute or non-POSIX path; give it relative to '
                             'the VNF package root: %s' % show(value))
        return None
    normal = posixpath.normpath(value)
    if normal == '..' or normal.startswith('../') or normal == '.':
        report.problem(path, 'escapes the VNF package: %s' % show(value))
        return None
    if package_dir is not None:
        root = os.path.realpath(package_dir)
        full = os.path.realpath(os.path.join(root, normal))
        if os.path.commonpath([root, full]) != root:
            report.problem(path, 'resolves outside the VNF package (symlink): '
                                 '%s' % show(value))
            return None
        if not os.path.isfile(full):
            report.problem(path, 'no such file in the VNF package %s: %s'
                           % (show(package_dir), show(normal)))
            return None
    return normal


def _by_rule(report, path, value, rule, what, limit):
    """``value`` when it is a string that ``rule`` (one of
    :mod:`k8s_mgmt.accepted`'s: None or the reason) accepts, else None
    after a problem naming the reason and the value."""
    value = string(report, path, value, what=what, limit=limit)
    if value is None:
        return None
    reason = rule(value)
    if reason is not None:
        report.problem(path, '%s: %s' % (reason, show(value)))
        return None
    return value


def vm_path(report, path, value):
    """An absolute path on a VM (see :func:`accepted.vm_path`)."""
    value = _by_rule(report, path, value, accepted.vm_path,
                     'a path string', accepted.PATH_MAX)
    return None if value is None else posixpath.normpath(value)


def proxy_url(report, path, value):
    """An http(s) proxy URL (see :func:`accepted.proxy_url`), held as a
    Secret: it may carry a password, so messages name the rule only. The
    placeholder port of Tacker's sample requests (``host1:port1``) is an
    error: the VMs would fail on it."""
    url = secret(report, path, value, what='proxy URL', limit=MAX_PROXY_URL)
    if url is None:
        return None
    reason = accepted.proxy_url(url.reveal())
    if reason is not None:
        report.problem(path, 'proxy URL ' + reason)
        return None
    return url


def repository_url(report, path, value):
    """An http(s) URL of a package repository or of its signing key (see
    :func:`accepted.repository_url`)."""
    return _by_rule(report, path, value, accepted.repository_url,
                    'a URL string', accepted.REPOSITORY_URL_MAX)


_HELM_VERSION = re.compile(
    r'v?(3\.(?:0|[1-9][0-9]{0,2})\.(?:0|[1-9][0-9]{0,2}))')
_SHA256 = re.compile(r'[0-9a-f]{64}')


def helm_version(report, path, value):
    """A Helm 3 release, ``3.MINOR.PATCH`` (a leading ``v`` allowed and
    dropped)."""
    value = string(report, path, value, what='a version string', limit=20)
    if value is None:
        return None
    found = _HELM_VERSION.fullmatch(value.strip())
    if found is None:
        report.problem(path, 'not a Helm 3 release such as 3.16.2: %s'
                       % show(value))
        return None
    return found.group(1)


def sha256(report, path, value):
    """64 lower-case hex digits."""
    value = string(report, path, value, what='a SHA-256 string', limit=64)
    if value is None:
        return None
    if not _SHA256.fullmatch(value):
        report.problem(path, 'not a SHA-256 (64 lower-case hex digits): %s'
                       % show(value))
        return None
    return value


def registry_server(report, path, value):
    """A registry's ``HOST[:PORT]`` (see :func:`accepted.registry_server`).
    """
    return _by_rule(report, path, value, accepted.registry_server,
                    'a HOST[:PORT] string', accepted.REGISTRY_SERVER_MAX)


def hosts_entry(report, path, value):
    """One /etc/hosts line (see :func:`accepted.hosts_entry`), its blanks
    made single spaces."""
    value = _by_rule(report, path, value, accepted.hosts_entry,
                     'an /etc/hosts line', accepted.HOSTS_ENTRY_MAX)
    return None if value is None else ' '.join(value.split())


# Tacker's sample driver's connection_type codes, and the words.
CONNECTION_TYPES = {0: 'http', 1: 'https', '0': 'http', '1': 'https',
                    'http': 'http', 'https': 'https'}


def connection_type(report, path, value):
    """``http`` or ``https``: Tacker's 0 or 1 (a number or a string), or
    the word."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or \
            value not in CONNECTION_TYPES:
        report.problem(path, 'expected 0 (http) or 1 (https), as Tacker\'s '
                       'sample driver takes it, or "http" or "https"; got %s'
                       % describe(value))
        return None
    return CONNECTION_TYPES[value]


def no_proxy(report, path, value):
    """Comma-separated hosts, domains, addresses or networks."""
    value = string(report, path, value, limit=MAX_NO_PROXY)
    if value is None:
        return None
    entries = [entry.strip() for entry in value.split(',')]
    bad = [entry for entry in entries
           if entry and not _NO_PROXY_ENTRY.fullmatch(entry)]
    if bad:
        report.problem(path, 'entries that are not a host, domain, address or '
                             'network: %s' % ', '.join(show(b) for b in bad))
        return None
    return ','.join(entry for entry in entries if entry)


def kubernetes_version(report, path, value):
    value = string(report, path, value, what='a version string')
    if value is None:
        return None
    version, reason = accepted.kubernetes_version(value.strip())
    if reason is not None:
        report.problem(path, '%s: %s' % (reason, show(value)))
        return None
    return version


def vim_name(report, path, value):
    value = string(report, path, value)
    if value is not None and not _VIM_NAME.fullmatch(value):
        report.problem(path, 'cannot be a VIM name (letters, digits, "_", '
                             '"-", "." only, at most 255): %s' % show(value))
        return None
    return value


def boolean(report, path, value):
    if not isinstance(value, bool):
        report.problem(path, 'expected true or false, got %s'
                       % describe(value))
        return None
    return value
