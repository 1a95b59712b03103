"""Microversions as Nova and Cinder read them: ``OpenStack-API-Version:
<service> X`` (or Nova's older ``X-OpenStack-Nova-API-Version: X``),
the minimum when none is asked, the maximum for ``latest``, a 406 for one
outside the range; and the headers that echo it back."""

import re

from k8s_mgmt_lab.openstack.iaas import model


def as_tuple(text):
    major, minor = text.split('.')
    return int(major), int(minor)


def requested(headers, service, minimum, maximum, legacy_header=None):
    """The version asked for, as text."""
    text = None
    for value in headers.get_all('OpenStack-API-Version') or ():
        name, _, number = value.strip().partition(' ')
        if name.lower() == service:
            text = number.strip()
    if text is None and legacy_header:
        text = headers.get(legacy_header)
    if not text:
        return minimum
    if text == 'latest':
        return maximum
    if not re.match(r'^\d+\.\d+$', text) or not (
            as_tuple(minimum) <= as_tuple(text) <= as_tuple(maximum)):
        error = model.IaasError(
            'Version %s is not supported by the API. Minimum is %s and '
            'maximum is %s.' % (text, minimum, maximum))
        error.status = 406
        raise error
    return text


def echo(headers, service, version, legacy_header=None):
    """Add the headers that say which version answered."""
    headers['OpenStack-API-Version'] = '%s %s' % (service, version)
    vary = ['OpenStack-API-Version']
    if legacy_header:
        headers[legacy_header] = version
        vary.append(legacy_header)
    headers['Vary'] = ', '.join(vary)
