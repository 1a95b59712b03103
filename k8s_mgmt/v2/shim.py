"""k8s-mgmt's management script for Tacker's v2 API.

A v2 VNF package ships this file (``Scripts/k8s_mgmt_v2.py``) and its VNFD
names it for every hook. Tacker's v2 conductor runs it with its own Python,
where k8s-mgmt is installed (as for the v1 driver); it holds no logic: the
hooks are :mod:`k8s_mgmt.v2.hooks`, the protocol :mod:`k8s_mgmt.v2.script`.
"""

import sys


def run():
    try:
        from k8s_mgmt.v2 import hooks
        from k8s_mgmt.v2 import script
    except ImportError as err:
        sys.stderr.write('k8s-mgmt is not installed in tacker-conductor\'s '
                         'Python environment (%s): install it there, as '
                         'for the v1 driver\n' % err)
        sys.stderr.flush()
        return 1
    script.exit_with(script.main(hooks.table()))


if __name__ == '__main__':
    sys.exit(run())
