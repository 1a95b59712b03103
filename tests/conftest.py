"""Suite-wide guard against a leak from importing Tacker in-process.

Tacker's imports pull in eventlet's green ``BaseHTTPServer``/``SocketServer``,
which re-import ``http.server`` and ``socketserver`` with green threading and
leave those green copies bound as attributes of the ``http`` package (the
copies in ``sys.modules`` stay real). Any later test that reaches
``http.server.ThreadingHTTPServer`` through the package then builds a server
with green locks in an unpatched process and hangs. Re-binding the real
modules after each test keeps one test's imports from breaking another.
"""

import http
import os
import sys

import pytest

# Where this machine keeps clones of the CNI projects' repositories, whose
# release manifests the lab serves as its mirror of GitHub's raw host
# (k8s_mgmt_lab.machines.cni_mirror); tests that need them are skipped,
# saying which is missing, where they are not.
os.environ.setdefault('K8S_MGMT_LAB_CNI_CLONES', '/work/.mirror')


@pytest.fixture(autouse=True)
def _real_http_server_module():
    yield
    real = sys.modules.get('http.server')
    if real is not None and getattr(http, 'server', real) is not real:
        http.server = real
