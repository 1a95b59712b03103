"""Secrets that never print, and the one redaction mechanism used everywhere.

A :class:`Secret` wraps a sensitive string (a password, a join token, a
certificate key, a bearer token). ``str()``, ``repr()`` and ``format()`` of a
Secret give ``'***'``; only :meth:`Secret.reveal` returns the value, and it is
called at the last moment (handing a password to paramiko, putting a token on a
remote command's argv).

Every Secret's value is also remembered in a process-wide registry so that
:func:`redact` can scrub it from any text that was built from it: remote
command lines in logs, stderr tails in exceptions, error details.

Secrets made on the VMs (a bootstrap token kubeadm created, a certificate
key) are not known here until the driver parses them; :func:`redact` also
masks anything shaped like them, as a second line of defence behind the
scripts keeping them off stderr:

* a bootstrap token ``[a-z0-9]{6}.[a-z0-9]{16}`` keeps its public token id
  and loses its secret half: ``abcdef.***``;
* a run of exactly 64 hex digits (kubeadm's certificate key) becomes
  ``***``, except right after ``sha256:``: that is a public-key pin such
  as ``--discovery-token-ca-cert-hash sha256:<64 hex>`` or an image digest,
  which is public and which operators need to read.
"""

import re
import threading
import weakref

MASK = '***'

# Values shorter than this are not scrubbed from free text: masking every "a"
# in a log line would make it unreadable and protects nothing.
_MIN_REDACT_LEN = 3

_lock = threading.Lock()
# id -> Secret: values are tracked while alive.
_known = weakref.WeakValueDictionary()

# user:password@ in URLs (proxy settings) is redacted even when the URL was
# never wrapped in a Secret.
_URL_USERINFO = re.compile(r'(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)'
                           r'(?P<user>[^:/@\s]+):(?P<pw>[^@/\s]+)@')


# Shapes of secrets made on the VMs (see the module docstring). The
# lookarounds keep longer words and hex runs (hashes printed without a
# prefix are longer or shorter than 64 digits) out.
_BOOTSTRAP_TOKEN = re.compile(
    r'(?<![A-Za-z0-9])(?P<id>[a-z0-9]{6})\.[a-z0-9]{16}(?![A-Za-z0-9])')
_CERTIFICATE_KEY = re.compile(
    r'(?<![0-9A-Za-z])(?<!sha256:)[0-9a-fA-F]{64}(?![0-9A-Za-z])')


class Secret(object):
    """A string that never shows its value when printed or logged."""

    __slots__ = ('_value', '__weakref__')

    def __init__(self, value):
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError('Secret holds a string, not %s'
                            % type(value).__name__)
        self._value = value
        if len(value) >= _MIN_REDACT_LEN:
            with _lock:
                _known[id(self)] = self

    def reveal(self):
        """Return the secret value. Call only where the value is consumed."""
        return self._value

    def __str__(self):
        return MASK

    def __repr__(self):
        return "Secret('***')"

    def __format__(self, spec):
        return MASK

    def __eq__(self, other):
        if isinstance(other, Secret):
            return self._value == other._value
        return NotImplemented

    def __hash__(self):
        return hash(('Secret', self._value))

    def __bool__(self):
        return bool(self._value)

    def __len__(self):
        return len(self._value)

    def __copy__(self):
        return self  # immutable: copies may share the one object

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        # Refuse pickling: a pickled secret would leave the process in clear.
        raise TypeError('Secret values cannot be pickled')


def reveal(value):
    """Return the plain value of a Secret, or the value itself."""
    return value.reveal() if isinstance(value, Secret) else value


def known_values():
    """The values of every live Secret, longest first."""
    with _lock:
        values = {s.reveal() for s in list(_known.values())}
    return sorted(values, key=len, reverse=True)


def redact(text, extra=()):
    """Return ``text`` with every known secret value replaced by ``***``,
    and anything shaped like a bootstrap token or a certificate key masked.

    ``extra`` adds values (Secrets or strings) that must be scrubbed too, e.g.
    a token that was read from a remote command's output.
    """
    if text is None:
        return text
    if not isinstance(text, str):
        text = str(text)
    values = known_values()
    for item in extra:
        item = reveal(item)
        if item and len(item) >= _MIN_REDACT_LEN:
            values.append(item)
    for value in sorted(set(values), key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(lambda m: '%s%s:%s@' % (m.group('scheme'),
                                                     m.group('user'), MASK),
                             text)
    text = _BOOTSTRAP_TOKEN.sub(lambda m: '%s.%s' % (m.group('id'), MASK),
                                text)
    return _CERTIFICATE_KEY.sub(MASK, text)
