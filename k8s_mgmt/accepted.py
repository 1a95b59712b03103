"""The values the node scripts accept, defined once.

The validator (:mod:`k8s_mgmt.params.fields`) and the ``kubernetes_version``
option (:mod:`k8s_mgmt.conf`) use these rules, so a request the scripts
would refuse on the VMs is refused before Heat builds them. Each check
returns ``None`` for a good value or a short reason (never the value: proxy
URLs may hold a password).

* Kubernetes versions: ``1.MINOR`` or ``1.MINOR.PATCH`` (an optional
  leading ``v``), ASCII digits without leading zeros, MINOR one of
  :data:`SUPPORTED_MINORS`. That list is the install script's own
  ``SUPPORTED_MINORS`` line, read from the shipped script: the script runs
  alone on a VM and must carry it, so Python reads it rather than repeating
  it.
* Addresses and networks: IPv4 only, ASCII digits. IPv6 is not supported by
  the install scripts.
* Proxy URLs: ``http(s)://[USERINFO@]HOST[:PORT][/]`` with a host name or
  an IPv4 address, PORT 1-65535, USERINFO of RFC 3986 characters
  (anything else percent-encoded); no whitespace, control characters,
  quotes or backslashes anywhere.
* Package repository URLs: ``http(s)://HOST[:PORT][/PATH]``, HOST of
  ``A-Z a-z 0-9 . -``, PORT 1-65535, PATH of ``A-Z a-z 0-9 / . _ ~ : % + @
  = , -`` (pkgs.k8s.io's paths hold colons): nothing a shell or apt's
  source line would read otherwise.
* Paths on a VM (storage and kubespray): absolute, no ``..`` component,
  only ``A-Z a-z 0-9 / . _ - +``, not ``/`` itself.

``tests/functional/scripts/test_accepted_values.py`` runs the install
script over a table of values and checks that it and the validator agree.
"""

import ipaddress
import re

from k8s_mgmt import shipped

IPV6_UNSUPPORTED = 'IPv6 is not supported by the install scripts'

_VERSION = re.compile(r'v?1\.(%s)(?:\.%s)?'
                      % (shipped.VERSION_NUMBER, shipped.VERSION_NUMBER))


def kubernetes_version(text):
    """(normalised version without "v", None) or (None, reason)."""
    match = _VERSION.fullmatch(text)
    if match is None:
        return None, ('not a Kubernetes version (want 1.MINOR or '
                      '1.MINOR.PATCH in ASCII digits, e.g. "1.35")')
    if int(match.group(1)) not in shipped.SUPPORTED_MINORS:
        return None, ('Kubernetes 1.%s is not supported by the install '
                      'script (supported: %s)'
                      % (match.group(1), shipped.supported_range()))
    return text.lstrip('v'), None


# -- addresses -------------------------------------------------------------

def ipv4_address(text):
    """(address, None) or (None, reason); ``text`` is stripped first."""
    return _ip(text.strip(), ipaddress.ip_address, 'an IP address')


def ipv4_network(text):
    """(network, None) for ``ADDRESS/PREFIX`` (host bits allowed here; the
    caller decides about them) or (None, reason)."""
    text = text.strip()
    if '/' not in text:
        return None, 'not a CIDR (no /PREFIX)'
    return _ip(text, ipaddress.ip_interface, 'a CIDR')


def _ip(text, parse, what):
    if not text.isascii():
        return None, 'not %s (ASCII digits only)' % what
    try:
        value = parse(text)
    except ValueError:
        return None, 'not %s' % what
    if value.version != 4:
        return None, IPV6_UNSUPPORTED
    return value, None


# -- proxy URLs ------------------------------------------------------------

_PROXY_FORBIDDEN = re.compile(r'[\x00-\x20\x7f"\'`\\]')
_PROXY_SHAPE = re.compile(r'(https?)://([^/?#]*)/?')
_USERINFO = re.compile(r"(?:[A-Za-z0-9._~!$&()*+,;=:-]|%[0-9A-Fa-f]{2})*")
_LABEL = re.compile(r'[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?')
_DOTTED_DIGITS = re.compile(r'[0-9.]+')
_PORT = re.compile(r'[0-9]{1,5}')


def proxy_url(text):
    """None when ``text`` is a proxy URL the install script takes, else
    the reason. The reason never quotes the URL or a part of it."""
    if _PROXY_FORBIDDEN.search(text):
        return ('holds whitespace, a control character, a quote or a '
                'backslash')
    shape = _PROXY_SHAPE.fullmatch(text)
    if shape is None:
        if not text.startswith(('http://', 'https://')):
            return 'must start with http:// or https://'
        return 'may have no path but "/", no query and no fragment'
    userinfo, at, hostport = shape.group(2).rpartition('@')
    if at and not _USERINFO.fullmatch(userinfo):
        return ('user or password holds "@", "/" or another character '
                'that must be percent-encoded')
    return _host_port(hostport, ' (a placeholder such as "port1" in '
                      'Tacker\'s sample requests must be replaced)')


def _host_port(hostport, port_hint=''):
    """None when ``hostport`` is ``HOST[:PORT]``, else the reason."""
    if hostport.startswith('['):
        return 'host is an IPv6 address: ' + IPV6_UNSUPPORTED
    host, colon, port = hostport.partition(':')
    reason = _host(host)
    if reason:
        return reason
    if colon and not (_PORT.fullmatch(port) and 1 <= int(port) <= 65535):
        return 'port is not a number from 1 to 65535' + port_hint
    return None


def _host(host):
    if not host:
        return 'has no host'
    if _DOTTED_DIGITS.fullmatch(host):
        address, _ = ipv4_address(host)
        return None if address is not None else 'host is no IPv4 address'
    labels = host.split('.')
    if len(host) > 253 or not all(_LABEL.fullmatch(x) for x in labels):
        return 'host is not a host name (ASCII letters, digits, "-", ".")'
    return None


def host_name(text):
    """None when ``text`` is a DNS host name (the scripts'
    ``is_host_name``), else the reason."""
    labels = text.split('.')
    if not text or len(text) > 253 or not all(
            _LABEL.fullmatch(x) for x in labels):
        return 'not a host name (ASCII letters, digits, "-", ".")'
    return None


def is_ipv4_text(text):
    """``text`` is written as an IPv4 address (digits and dots)."""
    return bool(_DOTTED_DIGITS.fullmatch(text))


# -- package repositories --------------------------------------------------

_REPOSITORY_URL = re.compile(
    r'https?://[A-Za-z0-9.-]+(?::([0-9]{1,5}))?(?:/[A-Za-z0-9._~:%+@=,-]*)*')
REPOSITORY_URL_MAX = 2048


def repository_url(text):
    """None when ``text`` is a package repository (or key) URL the install
    script takes, else the reason."""
    if not text.startswith(('http://', 'https://')):
        return 'must start with http:// or https://'
    if len(text) > REPOSITORY_URL_MAX:
        return 'longer than %d characters' % REPOSITORY_URL_MAX
    shape = _REPOSITORY_URL.fullmatch(text)
    if shape is None:
        return ('not http(s)://HOST[:PORT]/PATH with a host of A-Z a-z 0-9 '
                '. - and a path of A-Z a-z 0-9 / . _ ~ : % + @ = , - (no '
                'whitespace, quotes, brackets, $ or non-ASCII)')
    port = shape.group(1)
    if port is not None and not 1 <= int(port) <= 65535:
        return 'port is not a number from 1 to 65535'
    return None


# -- private container registries --------------------------------------------

REGISTRY_SERVER_MAX = 261


def registry_server(text):
    """None when ``text`` is a registry's ``HOST[:PORT]`` (a host name or
    an IPv4 address; no scheme, no path), else the reason. It names a
    directory under containerd's ``certs.d`` and a hosts.toml key."""
    if '://' in text:
        return 'give HOST[:PORT] without a scheme (connection_type says it)'
    if len(text) > REGISTRY_SERVER_MAX:
        return 'longer than %d characters' % REGISTRY_SERVER_MAX
    return _host_port(text)


HOSTS_ENTRY_MAX = 1024


def hosts_entry(text):
    """None when ``text`` is one /etc/hosts line the install script adds:
    an IPv4 address, then one or more host names, separated by blanks;
    else the reason."""
    if '\n' in text or '\r' in text or '#' in text:
        return 'must be one line, without a comment'
    if len(text) > HOSTS_ENTRY_MAX:
        return 'longer than %d characters' % HOSTS_ENTRY_MAX
    words = text.split()
    if len(words) < 2:
        return 'needs an IPv4 address and at least one host name'
    address, reason = ipv4_address(words[0])
    if address is None:
        return 'first word: %s' % (reason or 'not an IPv4 address')
    for word in words[1:]:
        reason = _host(word)
        if reason:
            return reason
    return None


# -- paths on a VM ---------------------------------------------------------

_PATH_CHARS = re.compile(r'/[A-Za-z0-9/._+-]*')
PATH_MAX = 4095


def vm_path(text):
    """None when ``text`` is an absolute path on a VM with only safe
    characters, else the reason."""
    if not text.startswith('/'):
        return 'not an absolute path'
    if '..' in text.split('/'):
        return 'contains ".."'
    if len(text) > PATH_MAX:
        return 'longer than %d characters' % PATH_MAX
    if not _PATH_CHARS.fullmatch(text):
        return ('holds a character outside A-Z a-z 0-9 / . _ - + (no '
                'spaces, shell metacharacters or non-ASCII)')
    if text.strip('/') in ('', '.'):
        return 'is the root directory'
    return None
