"""What the node scripts print, read back: one JSON object on stdout,
checked field by field (:class:`JoinData` from ``print-join``,
:class:`VimCredentials` from ``token-secret``, :class:`InitReport` from
``init -R``, :class:`RegistryReport` from ``setup_registry.sh
--print-ca``); a problem names the node, the step and the field, never a
value.
"""

import dataclasses
import hashlib
import json
import re
import typing

from k8s_mgmt import exceptions
from k8s_mgmt import secrets

_BOOTSTRAP_TOKEN = re.compile(r'[a-z0-9]{6}\.[a-z0-9]{16}')
_CA_CERT_HASH = re.compile(r'sha256:[0-9a-f]{64}')
_CERTIFICATE_KEY = re.compile(r'[0-9a-f]{64}')
_PEM_CERT = '-----BEGIN CERTIFICATE-----'


def output_error(node, step, reason):
    """The driver's error for script output it cannot use; ``reason`` names
    what is wrong, never a value (the output holds secrets)."""
    return exceptions.SSHError(node=node, step=step,
                               reason='unexpected script output: %s'
                                      % reason)


def json_object(node, step, stdout):
    """The JSON object a script printed on stdout."""
    try:
        data = json.loads(stdout)
    except ValueError:
        raise output_error(node, step, 'no JSON (%d characters on stdout)'
                           % len(stdout)) from None
    if not isinstance(data, dict):
        raise output_error(node, step, 'JSON %s instead of an object'
                           % type(data).__name__)
    return data


def _field(data, key, shape, what, problems, required=True):
    """data[key] if it is a string of ``shape``; else a problem noted."""
    value = data.get(key)
    if value is None:
        if required:
            problems.append('%r is missing' % key)
        return None
    if not isinstance(value, str) or not shape(value):
        problems.append('%r is not %s' % (key, what))
        return None
    return value


def _raise_problems(node, step, problems, within=''):
    if problems:
        raise output_error(node, step, '%s%s' % (
            'in %r: ' % within if within else '', '; '.join(problems)))


@dataclasses.dataclass(frozen=True)
class JoinData:
    """What ``print-join`` printed: the secrets a join needs."""

    token: secrets.Secret
    ca_cert_hash: str
    certificate_key: typing.Optional[secrets.Secret] = None

    @classmethod
    def from_output(cls, node, step, stdout, need_key=False):
        """Parse print-join's stdout straight into Secrets; anything missing
        or misshapen is the driver's error naming node, step and field."""
        return cls.from_data(node, step, json_object(node, step, stdout),
                             need_key)

    @classmethod
    def from_data(cls, node, step, data, need_key=False, within=''):
        problems = []
        token = _field(data, 'token', _BOOTSTRAP_TOKEN.fullmatch,
                       'a bootstrap token', problems)
        ca_hash = _field(data, 'ca_cert_hash', _CA_CERT_HASH.fullmatch,
                         'sha256:<64 hex digits>', problems)
        key = _field(data, 'certificate_key', _CERTIFICATE_KEY.fullmatch,
                     '64 hex digits', problems, required=need_key)
        _raise_problems(node, step, problems, within)
        return cls(token=secrets.Secret(token), ca_cert_hash=ca_hash,
                   certificate_key=secrets.Secret(key) if key else None)


@dataclasses.dataclass(frozen=True)
class VimCredentials:
    """What ``token-secret`` printed: the VIM's bearer token and CA."""

    token: secrets.Secret
    ca_cert: str

    @classmethod
    def from_output(cls, node, step, stdout):
        return cls.from_data(node, step, json_object(node, step, stdout))

    @classmethod
    def from_data(cls, node, step, data, within=''):
        problems = []
        token = _field(data, 'token',
                       lambda v: v and not re.search(r'[\s\x00-\x1f]', v),
                       'a bearer token', problems)
        ca_cert = _field(data, 'ca_cert', lambda v: _PEM_CERT in v,
                         'a PEM certificate', problems)
        _raise_problems(node, step, problems, within)
        return cls(token=secrets.Secret(token), ca_cert=ca_cert)


@dataclasses.dataclass(frozen=True)
class InitReport:
    """What ``init -R`` printed: print-join's and token-secret's objects
    as ``{"join": ..., "vim": ...}``, read from the run that made the
    cluster instead of two more runs."""

    join: JoinData
    credentials: VimCredentials

    @classmethod
    def from_output(cls, node, step, stdout, need_key=False):
        data = json_object(node, step, stdout)
        parts = {}
        for key in ('join', 'vim'):
            parts[key] = data.get(key)
            if not isinstance(parts[key], dict):
                raise output_error(node, step, '%r is not a JSON object'
                                   % key)
        return cls(JoinData.from_data(node, step, parts['join'], need_key,
                                      within='join'),
                   VimCredentials.from_data(node, step, parts['vim'],
                                            within='vim'))


_REGISTRY_SUMMARY = re.compile(
    r'registry: (https://\S+) (.+) \((certificate \w+)\), images in (\S+)')
_PEM_BLOCK = re.compile(r'-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+'
                        r'-----END CERTIFICATE-----\n?')


@dataclasses.dataclass(frozen=True)
class RegistryReport:
    """What ``setup_registry.sh --print-ca`` printed: its summary line and
    the PEM certificate clients must trust (public)."""

    url: str                  # https://IP:PORT
    service: str              # started, restarted, already active, ...
    certificate: str          # certificate made, kept or installed
    data_dir: str
    ca_pem: str

    @property
    def ca_sha256(self):
        return hashlib.sha256(self.ca_pem.encode()).hexdigest()

    @property
    def server(self):
        """HOST:PORT, as a cluster's private_registry_connection_info
        names it."""
        return self.url[len('https://'):]

    @classmethod
    def from_output(cls, node, stdout):
        step = 'read the registry\'s summary'
        summary = None
        for line in stdout.splitlines():
            found = _REGISTRY_SUMMARY.fullmatch(line.strip())
            if found:
                summary = found
        if summary is None:
            raise output_error(node, step, 'no "registry: https://..." '
                               'summary line')
        pems = _PEM_BLOCK.findall(stdout[stdout.find(summary.group(0)):])
        if len(pems) < 1:
            raise output_error(node, step, 'no PEM certificate after the '
                               'summary (--print-ca)')
        pem = ''.join(pems)
        return cls(url=summary.group(1), service=summary.group(2),
                   certificate=summary.group(3), data_dir=summary.group(4),
                   ca_pem=pem if pem.endswith('\n') else pem + '\n')

    def to_dict(self):
        return {'url': self.url, 'server': self.server,
                'certificate': self.certificate, 'ca_sha256': self.ca_sha256,
                'ca_pem': self.ca_pem}
