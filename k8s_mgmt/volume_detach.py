"""Detach a kept Cinder volume from a server Heat is about to replace.

A server whose ``block_device_mapping_v2`` names a volume is replaced by
Heat as create-new-then-delete-old: ``OS::Nova::Server`` frees the old
server's ports before it creates the new one, but not its volumes, and
Nova refuses to boot the new server on a volume that is still ``in-use``
(``Invalid volume: volume ... is in-use``, HTTP 400). So before Heat runs,
the driver asks Nova to detach the volume from the old server
(``DELETE /servers/{server}/os-volume_attachments/{volume}``) and reads
the volume from Cinder (``GET /volumes/{volume}``) with backoff until it
is ``available``, against a deadline (``[k8s_mgmt]
volume_detach_timeout``).

Read, decide, act: the volume is read first, so a re-run finds it
``available`` (nothing to do) or ``detaching`` (only the wait) and a
volume that another server holds is refused rather than taken from it.
Every failure is a :class:`VolumeDetachError` naming the node, the step
and the volume id.
"""

import time

from keystoneauth1 import exceptions as ks_exc

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import polling

STEP_READ = 'read the volume from Cinder'
STEP_DETACH = 'detach the volume from the old server'
STEP_WAIT = 'wait until the volume is available'
# Statuses a detach does not come back from by waiting.
FAILED = ('error', 'error_detaching', 'error_deleting', 'deleting',
          'maintenance')
FIRST_DELAY = 1.0
MAX_DELAY = 10.0


class VolumeDetachError(exceptions.MgmtDriverError):
    message = '%(node)s: %(step)s: volume %(volume_id)s: %(reason)s'


def _timeout():
    return conf.CONF.k8s_mgmt.volume_detach_timeout


def _api_timeout():
    return conf.CONF.k8s_mgmt.api_timeout


def _message(response):
    """The error text of an OpenStack answer, shortened; '' if none."""
    try:
        body = response.json()
        detail = next(iter(body.values()))
        text = detail.get('message') if isinstance(detail, dict) else detail
        return ' (%s)' % str(text)[:300]
    except Exception:  # any body at all: the status says enough
        return ''


class _Cloud(object):
    """Nova and Cinder through the VIM's keystoneauth session."""

    def __init__(self, session, region_name=None, interface=None):
        self.session = session
        self.region_name = region_name
        self.interface = interface or 'public'

    def _filter(self, service_type):
        found = {'service_type': service_type, 'interface': self.interface}
        if self.region_name:
            found['region_name'] = self.region_name
        return found

    def volume(self, volume_id):
        """(status, server ids of its attachments); raises
        ClientException (also for an answer other than 200)."""
        url = '/volumes/%s' % volume_id
        response = self.session.get(
            url, endpoint_filter=self._filter('volumev3'), raise_exc=False,
            timeout=_api_timeout())
        if response.status_code != 200:
            raise ks_exc.from_response(response, 'GET', url)
        volume = response.json()['volume']
        holders = tuple(a.get('server_id')
                        for a in volume.get('attachments') or ())
        return volume.get('status'), holders

    def detach(self, server_id, volume_id):
        """The compute API's answer to the detach (a response)."""
        return self.session.delete(
            '/servers/%s/os-volume_attachments/%s' % (server_id, volume_id),
            endpoint_filter=self._filter('compute'), raise_exc=False,
            timeout=_api_timeout())


def _error(node, step, volume_id, reason):
    return VolumeDetachError(node=node, step=step, volume_id=volume_id,
                             reason=reason)


def _describe(err):
    if isinstance(err, ks_exc.EndpointNotFound):
        return 'the service catalog has no endpoint for it (%s)' % err
    return '%s: %s' % (type(err).__name__, err)


def _read(cloud, node, volume_id):
    try:
        return cloud.volume(volume_id)
    except (ks_exc.ClientException, KeyError, TypeError, ValueError) as err:
        raise _error(node, STEP_READ, volume_id, _describe(err))


def _ask_nova(cloud, node, server_id, volume_id):
    try:
        response = cloud.detach(server_id, volume_id)
    except ks_exc.ClientException as err:
        raise _error(node, STEP_DETACH, volume_id, _describe(err))
    # 202: accepted; 404: the server no longer has it (detached meanwhile);
    # the wait decides from what Cinder then says.
    if response.status_code not in (202, 404):
        raise _error(node, STEP_DETACH, volume_id,
                     'the compute API answered DELETE os-volume_attachments '
                     'of server %s with %d%s' % (
                         server_id, response.status_code,
                         _message(response)))


def start_detach(cloud, node, server_id, volume_id):
    """Read the volume; ask Nova to detach it from ``server_id`` when that
    server holds it. Returns what was found: 'available', 'detaching' or
    'detach requested'."""
    status, holders = _read(cloud, node, volume_id)
    others = sorted(h for h in holders if h != server_id)
    if others:
        raise _error(node, STEP_READ, volume_id,
                     'it is attached to server(s) %s, not (only) to the old '
                     'storage server %s: the driver takes it from no other '
                     'server' % (', '.join(others), server_id))
    if status == 'available' and not holders:
        return 'available'
    if status == 'detaching':
        return 'detaching'
    if status != 'in-use':
        raise _error(node, STEP_READ, volume_id,
                     'it is %s; only an in-use volume is detached (a volume '
                     'still attaching or in error needs a look first)'
                     % status)
    _ask_nova(cloud, node, server_id, volume_id)
    return 'detach requested'


def wait_available(cloud, node, volume_id, timeout, clock=time.monotonic,
                   sleep=time.sleep):
    """Read the volume with backoff until it is ``available`` and
    attached nowhere; returns the number of reads."""
    poll = polling.Poll(timeout, first=FIRST_DELAY, maximum=MAX_DELAY,
                        clock=clock, sleep=sleep)
    last = 'not read yet'
    for reads in poll:
        try:
            status, holders = cloud.volume(volume_id)
        except (ks_exc.ClientException, KeyError, TypeError,
                ValueError) as err:
            if getattr(err, 'http_status', None) == 404:
                raise _error(node, STEP_WAIT, volume_id,
                             'Cinder no longer has it (%s)' % err)
            last = 'reading it failed: %s' % _describe(err)
            continue
        if status == 'available' and not holders:
            return reads
        if status in FAILED:
            raise _error(node, STEP_WAIT, volume_id,
                         'it went %s while it was being detached; see the '
                         'Nova and Cinder logs' % status)
        last = status + (' (attached to %s)' % ', '.join(holders)
                         if holders else '')
    raise _error(node, STEP_WAIT, volume_id,
                 'not available within %.0f s (%d reads; last: %s)'
                 % (timeout, poll.attempts, last))


def detach_and_wait(session, region_name, node, server_id, volume_id,
                    timeout=None, interface=None, clock=time.monotonic,
                    sleep=time.sleep):
    """Free ``volume_id`` from ``server_id`` (the node ``node``'s server)
    and wait until Cinder reports it ``available``; a line saying what
    happened."""
    cloud = _Cloud(session, region_name, interface)
    found = start_detach(cloud, node, server_id, volume_id)
    if found == 'available':
        return 'volume %s: already available' % volume_id
    timeout = timeout or _timeout()
    started = clock()
    reads = wait_available(cloud, node, volume_id, timeout, clock=clock,
                           sleep=sleep)
    return ('volume %s: %s from server %s, available after %.0f s '
            '(%d read(s))' % (volume_id, 'was detaching' if
                              found == 'detaching' else 'detached',
                              server_id, clock() - started, reads))
