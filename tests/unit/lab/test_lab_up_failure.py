"""What ``lab up`` says when it fails: the lab's own refusal in its words;
anything else (a fault of the lab) by its type, with the log that holds
its traceback, never a bare "lab up failed: 0"."""

from k8s_mgmt_lab import daemon
from k8s_mgmt_lab.errors import LabError

LOG = '/var/lib/k8s-mgmt-lab.daemon.log'


def test_a_refusal_of_the_lab_is_said_as_it_is():
    err = LabError('request: extVirtualLinks must name exactly one network')
    assert daemon.failure(err, LOG) == str(err)


def test_a_fault_names_its_type_and_the_log():
    assert daemon.failure(KeyError(0), LOG) == (
        'KeyError: 0 (a fault of the lab itself; its traceback is in %s)'
        % LOG)
    assert daemon.failure(RuntimeError(), LOG) == (
        'RuntimeError (a fault of the lab itself; its traceback is in %s)'
        % LOG)
