"""The driver's constructor (called once by Tacker's conductor at start)
loads what the first operation would otherwise import: checked in a fresh
interpreter, by the modules loaded, not by seconds."""

import json
import subprocess
import sys

from k8s_mgmt import preload

LAZY = ('kubernetes.client.api.core_v1_api', 'heatclient.v1.client')

SCRIPT = '''
import json, sys
from k8s_mgmt import driver
before = [m for m in %(lazy)r if m in sys.modules]
driver.KubernetesMgmtDriver()
after = [m for m in %(lazy)r if m in sys.modules]
print(json.dumps([before, after]))
'''


def _loaded():
    proc = subprocess.run([sys.executable, '-c', SCRIPT % {'lazy': LAZY}],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_constructing_the_driver_loads_the_lazy_api_modules():
    before, after = _loaded()
    # Importing the driver's module leaves them to first use...
    assert before == []
    # ...constructing it (Tacker: once, at the conductor's start) loads them.
    assert after == list(LAZY)


def test_load_is_idempotent():
    preload.load()
    preload.load()
    assert all(name in sys.modules for name in LAZY)
