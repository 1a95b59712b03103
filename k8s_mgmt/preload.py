"""Modules loaded when Tacker loads the driver, not inside an operation.

Tacker's conductor constructs each configured management driver once, when
it starts (stevedore, ``invoke_on_load``). Two of the driver's dependencies
load their heaviest part on first use: ``kubernetes.client`` imports its API
classes lazily (``CoreV1Api`` alone is about 0.4 s of imports), and
``heatclient.client.Client`` imports its v1 client when first called. Left
alone, both would be paid inside the first operation after a conductor
start. The driver's constructor loads them instead.
"""

import importlib

# (module, attributes to touch): the attributes are what a lazy package
# loads on access.
MODULES = (
    ('kubernetes.client', ('ApiClient', 'Configuration', 'CoreV1Api')),
    ('heatclient.v1.client', ()),
)


def load():
    """Import what the operations would otherwise import on first use."""
    for name, attributes in MODULES:
        module = importlib.import_module(name)
        for attribute in attributes:
            getattr(module, attribute)
