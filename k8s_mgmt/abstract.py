"""The base class of the driver: Tacker's when Tacker is installed.

Tacker is an optional extra. Without it (the CLI, the lab, unit tests) a local
ABC with the same method names and keyword arguments stands in, so the driver
behaves the same either way.
"""

import abc

try:  # pragma: no cover - depends on the environment
    from tacker.vnfm.mgmt_drivers.vnflcm_abstract_driver import (
        VnflcmMgmtAbstractDriver as BaseDriver)
    TACKER_AVAILABLE = True
except ImportError:
    TACKER_AVAILABLE = False

    class BaseDriver(metaclass=abc.ABCMeta):
        """Same interface as Tacker's ``VnflcmMgmtAbstractDriver``."""

        @abc.abstractmethod
        def get_type(self):
            """Return the driver type Tacker keys drivers by."""

        @abc.abstractmethod
        def get_name(self):
            """Return the driver's symbolic name."""

        @abc.abstractmethod
        def get_description(self):
            """Return a one-line description."""

        @abc.abstractmethod
        def instantiate_start(self, context, vnf_instance,
                              instantiate_vnf_request, grant,
                              grant_request, **kwargs):
            """Before Heat creates the VNF's resources."""

        @abc.abstractmethod
        def instantiate_end(self, context, vnf_instance,
                            instantiate_vnf_request, grant,
                            grant_request, **kwargs):
            """After Heat created the VNF's resources."""

        @abc.abstractmethod
        def terminate_start(self, context, vnf_instance,
                            terminate_vnf_request, grant,
                            grant_request, **kwargs):
            """Before Heat deletes the VNF's resources."""

        @abc.abstractmethod
        def terminate_end(self, context, vnf_instance,
                          terminate_vnf_request, grant,
                          grant_request, **kwargs):
            """After Heat deleted the VNF's resources."""

        @abc.abstractmethod
        def scale_start(self, context, vnf_instance,
                        scale_vnf_request, grant,
                        grant_request, **kwargs):
            """Before a scale (Tacker: SCALE_IN, or a SCALE_OUT rollback)."""

        @abc.abstractmethod
        def scale_end(self, context, vnf_instance,
                      scale_vnf_request, grant,
                      grant_request, **kwargs):
            """After a scale (Tacker: SCALE_OUT)."""

        @abc.abstractmethod
        def heal_start(self, context, vnf_instance,
                       heal_vnf_request, grant,
                       grant_request, **kwargs):
            """Before Heat replaces the healed resources."""

        @abc.abstractmethod
        def heal_end(self, context, vnf_instance,
                     heal_vnf_request, grant,
                     grant_request, **kwargs):
            """After Heat replaced the healed resources."""

        @abc.abstractmethod
        def change_external_connectivity_start(
                self, context, vnf_instance,
                change_ext_conn_request, grant,
                grant_request, **kwargs):
            """Before external connectivity changes."""

        @abc.abstractmethod
        def change_external_connectivity_end(
                self, context, vnf_instance,
                change_ext_conn_request, grant,
                grant_request, **kwargs):
            """After external connectivity changed."""

        @abc.abstractmethod
        def modify_information_start(self, context, vnf_instance,
                                     modify_vnf_request, **kwargs):
            """Before VNF information is modified."""

        @abc.abstractmethod
        def modify_information_end(self, context, vnf_instance,
                                   modify_vnf_request, **kwargs):
            """After VNF information was modified."""
