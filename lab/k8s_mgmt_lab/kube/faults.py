"""Injected faults: a stand-in step fails on one VM the way the real tool
fails there.

``k8s-mgmt lab fault VM STEP`` creates ``FAULT_DIR/STEP`` inside the VM
(through its own root, so the fault lives in the VM's disk and survives
until cleared or the VM is deleted); the stand-ins look for it when they
reach that step. ``--clear`` removes the file.
"""

import os
import sys

FAULT_DIR = '/etc/k8s-mgmt-lab/faults'

# step -> what the fault does, for the CLI's help and the docs.
STEPS = {
    'kubeadm-init': 'kubeadm init fails in its wait-control-plane phase, '
                    'after writing the CA and manifests (leftovers a re-run '
                    'must reset)',
    'kubeadm-join': 'kubeadm join fails in its kubelet-start phase, after '
                    'discovery accepted the token and the CA',
    'kubeadm-upgrade': 'kubeadm upgrade apply|node fails in its static-pod '
                       'phase, after apt upgraded kubeadm (a re-run '
                       'resumes there)',
    'kubelet': 'the kubelet exits at start (systemctl start fails) and a '
               'running kubelet stops: its node turns NotReady',
    'apt': 'the package mirrors are unreachable: apt-get fails (exit 100) '
           'as it does when it cannot fetch an index',
}


def fault_dir():
    return os.environ.get('K8S_MGMT_FAULT_DIR', FAULT_DIR)


def active(step):
    """True when ``step`` is set to fail on this VM."""
    return os.path.exists(os.path.join(fault_dir(), step))


def note(step):
    """One stderr line saying the failure was injected (kept above the real
    tool's last line, which is what an operator reads first)."""
    sys.stderr.write('[k8s-mgmt lab] fault "%s" is set on this VM; clear it '
                     'with "k8s-mgmt lab fault VM %s --clear"\n'
                     % (step, step))
