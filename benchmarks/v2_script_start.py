"""How long the v2 management script takes before and after its hook:
Tacker's v2 conductor starts a new Python process for every hook
(``python <package>/Definitions/../Scripts/k8s_mgmt_v2.py``), so the
interpreter's start and the script's imports are paid on each one.

Measured through the whole protocol (pickle in, pickle or one line out), as
the conductor runs it (its interpreter, the script's path), on two hooks:

* an LCM hook (heal_start), which imports the driver and its libraries and
  reads the conductor's configuration, here given an instance without a
  VIM connection so that it stops at its first check: a hook's start;
* a hook with nothing to do (change_external_connectivity_start), which
  imports nothing of the driver: the protocol alone.

Target: the LCM hook's start within 1 s.

    .venv/bin/python -m benchmarks.v2_script_start [-n 10]
"""

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

from k8s_mgmt.v2 import shim

TARGET_SECONDS = 1.0
# hook -> the exit status it ends with on the benchmark's input.
HOOKS = {'heal_start': 1, 'change_external_connectivity_start': 0}


def one_run(hook, log_path, conf_path):
    data = pickle.dumps({'operation': hook, 'request': {},
                         'vnf_instance': {'id': 'bench'},
                         'grant_request': None, 'grant_response': None,
                         'tmp_csar_dir': None,
                         'user_script_err_handling_data': {}})
    started = time.monotonic()
    proc = subprocess.run([sys.executable, shim.__file__], input=data,
                          capture_output=True, timeout=60,
                          env=dict(os.environ, K8S_MGMT_V2_LOG=log_path,
                                   K8S_MGMT_CONFIG_FILES=conf_path))
    seconds = time.monotonic() - started
    if proc.returncode != HOOKS[hook]:
        raise RuntimeError('the v2 script ended %d on %s: %s'
                           % (proc.returncode, hook,
                              proc.stderr.decode()[-300:]))
    if hook == 'heal_start' and b'vimConnectionInfo' not in proc.stderr:
        raise RuntimeError('heal_start did not stop at its first check: %s'
                           % proc.stderr.decode()[-300:])
    return seconds


def measure(hook, count):
    with tempfile.TemporaryDirectory() as work:
        log = os.path.join(work, 'v2.log')
        conf = os.path.join(work, 'tacker.conf')
        with open(conf, 'w') as handle:
            handle.write('[k8s_mgmt]\nstate_dir = %s/state\n'
                         'state_key_file = %s/state.key\n' % (work, work))
        return [one_run(hook, log, conf) for _ in range(count)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('-n', '--count', type=int, default=10)
    args = parser.parse_args(argv)
    medians = {}
    for hook in HOOKS:
        times = measure(hook, args.count)
        medians[hook] = statistics.median(times)
        print('v2 script, %s end to end (N=%d): median %.3f s, max %.3f s, '
              'min %.3f s' % (hook, len(times), medians[hook], max(times),
                              min(times)))
    met = medians['heal_start'] <= TARGET_SECONDS
    print('target: v2 script start (an LCM hook) <= %.1f s per hook: %s'
          % (TARGET_SECONDS, 'met' if met else 'NOT met'))
    return 0 if met else 2


if __name__ == '__main__':
    sys.exit(main())
