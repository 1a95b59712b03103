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
    if hostport.startswith('['):
        return 'host is an IPv6 address: ' + IPV6_UNSUPPORTED
    host, colon, port = hostport.partition(':')
    reason = _host(host)
    if reason:
        return reason
    if colon and not (_PORT.fullmatch(port) and 1 <= int(port) <= 65535):
        return ('port is not a number from 1 to 65535 (a placeholder '
                'such as "port1" in Tacker\'s sample requests must be '
                'replaced)')
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
