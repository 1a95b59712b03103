"""One control plane (MariaDB, RabbitMQ, Keystone, Heat) for every lab
of a benchmark run, started once and stopped at the end, unless the
environment names one already."""

import contextlib
import os
import shutil
import tempfile


@contextlib.contextmanager
def shared_control_plane():
    """One control plane for every lab of the run: a plane each would set
    up MariaDB, RabbitMQ, Keystone and Heat again for every lab."""
    from k8s_mgmt_lab.openstack import control_plane
    from k8s_mgmt_lab.openstack import lab_region
    if lab_region.shared_plane_default():
        yield
        return
    root = tempfile.mkdtemp(prefix='k8s-mgmt-bench-plane-')
    os.environ[lab_region.SHARED_PLANE_ENV] = root
    try:
        yield
    finally:
        del os.environ[lab_region.SHARED_PLANE_ENV]
        try:
            control_plane.ControlPlane(root).down()
        finally:
            shutil.rmtree(root, ignore_errors=True)
