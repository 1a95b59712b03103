"""A client of the VIP during a heal: how long it went without an answer.

Shared by the lab's heal tests (``tests/lab/test_heal.py``).
"""

import threading
import time

from k8s_mgmt import exceptions

PROBE_TIMEOUT = 2.0


class VipProbe(object):
    """Lists nodes through the VIP every 0.2 s in a thread.

    ``longest_gap`` is the longest time between two answers (from the
    probe's start for the first): what a client retrying at that pace
    went without. ``timeline`` keeps every attempt's (start, end, error or
    None), in seconds from the probe's start, for the failure message.
    """

    def __init__(self, api):
        self.api = api
        self.stop = threading.Event()
        self.timeline = []
        self.longest_gap = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        started = last_answer = time.monotonic()
        while not self.stop.is_set():
            begun = time.monotonic()
            error = None
            try:
                # A request on a connection the dead VIP holder took down
                # with it would hang for the client's whole timeout: cut at
                # 2 s, as a client that retries does, so the probe sees when
                # the VIP answers again.
                self.api.nodes(deadline=begun + PROBE_TIMEOUT)
            except exceptions.KubernetesAPIError as err:
                error = str(err)
            now = time.monotonic()
            self.timeline.append((begun - started, now - started, error))
            if error is None:
                self.longest_gap = max(self.longest_gap, now - last_answer)
                last_answer = now
            self.stop.wait(0.2)
        self.longest_gap = max(self.longest_gap,
                               time.monotonic() - last_answer)

    @property
    def answers(self):
        return sum(1 for _begun, _ended, error in self.timeline
                   if error is None)

    @property
    def failures(self):
        return [error for _begun, _ended, error in self.timeline if error]

    def failed_attempts(self):
        """The failed attempts, one line each, for an assertion message."""
        return ['%.1f-%.1f s: %s' % (begun, ended, error[-300:])
                for begun, ended, error in self.timeline if error]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stop.set()
        self.thread.join()
        self.api.close()


class Readyz(object):
    """The API's ``/readyz`` at ``url`` without credentials (as HAProxy's
    and kubeadm's own checks ask it), in the shape VipProbe takes:
    ``nodes(deadline)`` raises KubernetesAPIError unless it answers 200."""

    def __init__(self, url):
        import urllib.parse
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname, parsed.port or 443

    def nodes(self, deadline):
        import http.client
        import ssl
        # Probe traffic only, to the lab's own VIP: no identity to check.
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(
            self.host, self.port, context=tls,
            timeout=max(deadline - time.monotonic(), 0.1))
        try:
            conn.request('GET', '/readyz')
            status = conn.getresponse().status
        except (OSError, http.client.HTTPException) as err:
            raise exceptions.KubernetesAPIError(
                endpoint=self.host, what='GET /readyz', reason=str(err))
        finally:
            conn.close()
        if status != 200:
            raise exceptions.KubernetesAPIError(
                endpoint=self.host, what='GET /readyz',
                reason='status %d' % status)

    def close(self):
        pass
