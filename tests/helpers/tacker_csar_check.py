"""Tacker's own checks on a built CSAR, in a Python process of its own.

Importing Tacker (its objects, eventlet's green ``BaseHTTPServer``) swaps
green locks into ``threading`` for later users in the same process and hangs
unrelated tests that run threaded servers afterwards (see
tests/functional/tacker/test_tacker_compat.py). So a test never imports
Tacker: it calls :func:`run`, which runs this file as a script with the test
process's interpreter and returns what the script printed.

The script, given a CSAR, a tampered copy of it and (optionally) an unpacked
package directory it may edit, runs:

* ``tacker.common.csar_utils.load_csar_data`` on the CSAR (Tacker checks every
  ``Source``/``Algorithm``/``Hash`` entry of TOSCA.meta and reads the
  flavours and artifacts from the VNFD) and on the tampered copy, which it
  must refuse with ``InvalidCSAR``;
* ``VnfLcmDriver._check_mgmt_driver``, the conductor's comparison of the
  package's driver artifact with the installed driver module (the
  ``k8s_mgmt`` the interpreter imports), on the directory, then again after
  appending a line to the artifact there, which it must refuse. Without a
  directory the CSAR is unpacked into a temporary one for this.

Only the standard library is imported at module level, so importing this
module from a test is harmless.
"""

import json
import os
import subprocess
import sys

MGMT_DRIVER = 'mgmt-drivers-kubernetes'
# The deployment flavour whose VNFD the driver check reads.
DRIVER_CHECK_VNFD = 'Definitions/sample_kubernetes_df_complex.yaml'


def run(zip_path, tampered_zip, pkg_dir=None, timeout=300):
    """Run the checks in a fresh interpreter; return the report (a dict).

    Keys: ``flavours`` and ``artifacts`` (sorted, as Tacker read them from
    the CSAR), ``tampered`` (Tacker's error for the tampered copy, or
    ``'accepted'``), ``chosen`` (the driver ``_check_mgmt_driver`` picked)
    and ``edited`` (``'refused'`` or ``'accepted'`` for the edited artifact).
    Raises AssertionError with the script's output when it fails.
    """
    argv = [sys.executable, os.path.abspath(__file__), str(zip_path),
            str(tampered_zip)]
    if pkg_dir is not None:
        argv.append(str(pkg_dir))
    proc = subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout,
                          cwd=os.path.dirname(os.path.abspath(zip_path)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _check(zip_path, tampered_zip, pkg_dir, scratch):
    import inspect
    import zipfile

    import yaml
    from oslo_config import cfg
    import tacker.conf  # noqa: F401  (registers [vnf_package])
    from tacker.common import csar_utils
    from tacker.common import exceptions
    from tacker.vnflcm import vnflcm_driver

    from k8s_mgmt.driver import KubernetesMgmtDriver

    cfg.CONF.set_override('vnf_package_csar_path',
                          os.path.join(scratch, 'csar'), group='vnf_package')
    _, flavours, artifacts = csar_utils.load_csar_data(None, 'p1', zip_path)
    try:
        csar_utils.load_csar_data(None, 'p2', tampered_zip)
        tampered = 'accepted'
    except exceptions.InvalidCSAR as err:
        tampered = str(err)

    if pkg_dir is None:
        pkg_dir = os.path.join(scratch, 'unpacked')
        with zipfile.ZipFile(zip_path) as archive:
            archive.extractall(pkg_dir)

    class Conductor(object):
        """Just what _check_mgmt_driver reads of VnfLcmDriver."""

    lcm = Conductor()
    lcm._get_file_hash = (
        lambda path: vnflcm_driver.VnfLcmDriver._get_file_hash(lcm, path))
    lcm._mgmt_driver_hash = {MGMT_DRIVER: lcm._get_file_hash(
        inspect.getfile(KubernetesMgmtDriver))}
    with open(os.path.join(pkg_dir, *DRIVER_CHECK_VNFD.split('/'))) as vnfd:
        node = yaml.safe_load(vnfd)['topology_template']['node_templates']
    arts = node['VNF']['artifacts']
    chosen = vnflcm_driver.VnfLcmDriver._check_mgmt_driver(
        lcm, MGMT_DRIVER, arts, pkg_dir)
    with open(os.path.join(pkg_dir, arts[MGMT_DRIVER]['file']),
              'a') as handle:
        handle.write('# edited\n')
    try:
        vnflcm_driver.VnfLcmDriver._check_mgmt_driver(
            lcm, MGMT_DRIVER, arts, pkg_dir)
        edited = 'accepted'
    except exceptions.MgmtDriverHashMatchFailure:
        edited = 'refused'
    return {
        'flavours': sorted(f['flavour_id'] for f in flavours),
        'artifacts': sorted(a['Source'] for a in artifacts),
        'tampered': tampered, 'chosen': chosen, 'edited': edited}


def main(argv):
    import tempfile

    zip_path, tampered_zip = argv[:2]
    pkg_dir = argv[2] if len(argv) > 2 else None
    with tempfile.TemporaryDirectory(prefix='tacker-csar-check-') as scratch:
        # tosca-parser unpacks each CSAR into a mkdtemp() it never removes.
        tempfile.tempdir = scratch
        report = _check(zip_path, tampered_zip, pkg_dir, scratch)
        tempfile.tempdir = None
    print(json.dumps(report))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
