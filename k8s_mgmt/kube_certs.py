"""kubeadm's certificates as data: what ``kubeadm certs check-expiration``
prints, read, and which of them expire soon.

kubeadm prints two tables, the certificates (columns CERTIFICATE,
EXPIRES, RESIDUAL TIME, CERTIFICATE AUTHORITY, EXTERNALLY MANAGED; a row
such as ``apiserver  Nov 27, 2027 10:00 UTC  364d  ca  no``) and their
authorities (CERTIFICATE AUTHORITY, EXPIRES, RESIDUAL TIME, EXTERNALLY
MANAGED; ``ca  Nov 25, 2036 10:00 UTC  9y  no``).

Both are read (lines before the first header, such as kubeadm's
``[check-expiration]`` notes, are skipped). A line of neither shape in a
table is an error naming the line number, never guessed at.
"""

import dataclasses
import datetime
import re
from typing import Optional

# The 30 days an operation warns before (``[k8s_mgmt]
# certificate_warning_days`` is planned to set it).
WARNING_DAYS = 30

_DATE = r'([A-Z][a-z]{2} \d{2}, \d{4} \d{2}:\d{2} UTC)'
_CERT_ROW = re.compile(r'^(\S+)\s+' + _DATE + r'\s+(\S+)\s+(\S+)\s+'
                       r'(yes|no)\s*$')
_CA_ROW = re.compile(r'^(\S+)\s+' + _DATE + r'\s+(\S+)\s+(yes|no)\s*$')
_CERT_HEADER = re.compile(r'^CERTIFICATE\s+EXPIRES\s')
_CA_HEADER = re.compile(r'^CERTIFICATE AUTHORITY\s+EXPIRES\s')


class UnreadableExpiration(ValueError):
    """check-expiration's output is not what kubeadm prints."""


@dataclasses.dataclass(frozen=True)
class Certificate:
    name: str
    expires: datetime.datetime          # aware, UTC
    authority: Optional[str] = None     # None: it is an authority
    external: bool = False              # externally managed: not renewed

    @property
    def is_authority(self):
        return self.authority is None

    def days_left(self, now):
        return (self.expires - now).total_seconds() / 86400.0


def _date(text):
    return datetime.datetime.strptime(text, '%b %d, %Y %H:%M UTC').replace(
        tzinfo=datetime.timezone.utc)


def parse_check_expiration(text):
    """The Certificates of ``kubeadm certs check-expiration``'s output;
    UnreadableExpiration naming the line that is neither header nor row,
    or for an output with no table at all."""
    found, table = [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if _CA_HEADER.match(stripped):
            table = 'authorities'
            continue
        if _CERT_HEADER.match(stripped):
            table = 'certificates'
            continue
        if table is None or not stripped:
            continue
        row = (_CERT_ROW if table == 'certificates' else _CA_ROW).match(
            stripped)
        if row is None:
            raise UnreadableExpiration('line %d is no row of the %s table: '
                                       '%.80r' % (number, table, stripped))
        if table == 'certificates':
            name, expires, authority, external = row.group(1, 2, 4, 5)
        else:
            name, expires, external = row.group(1, 2, 4)
            authority = None
        found.append(Certificate(name, _date(expires), authority,
                                 external == 'yes'))
    if not found:
        raise UnreadableExpiration('no certificate table in the output')
    return tuple(found)


def expiring(certificates, now, days=WARNING_DAYS):
    """The certificates (not externally managed) that expire within
    ``days`` of ``now``, soonest first."""
    soon = [c for c in certificates
            if not c.external and c.days_left(now) < days]
    return sorted(soon, key=lambda c: c.expires)


def warning(node, certificate, now):
    """The line every operation logs for a certificate that expires
    soon (or has expired)."""
    left = certificate.days_left(now)
    when = certificate.expires.strftime('%Y-%m-%d')
    if left < 0:
        return ('certificate %s on %s expired on %s: renew the '
                'certificates' % (certificate.name, node, when))
    return ('certificate %s on %s expires on %s (in %d days): renew the '
            'certificates' % (certificate.name, node, when, int(left)))
