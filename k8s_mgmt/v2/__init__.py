"""k8s-mgmt under Tacker's v2 VNF LCM API (``/vnflcm/v2``).

Tacker's v2 conductor runs no installed driver: it runs the Python script
the VNFD names as a ``tosca.artifacts.Implementation.Python`` artifact,
``python <package copy>/Definitions/<file>``, with a pickled dict on stdin,
and reads a pickled dict from its stdout (doc/design/tacker-v2-scripts.md
has the facts and their sources). ``script`` is that protocol; the package's
own script is a thin shim that imports it from the conductor's environment,
where k8s-mgmt is installed, so one code base serves both APIs.
"""
