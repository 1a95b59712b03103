"""Whether eventlet's green threads stand in for this process's own.

Inside ``tacker-conductor`` eventlet has monkey-patched threading, sockets
and ``select``; in the CLI nothing is patched. The parallel helper and the
SSH channel's deadlines ask here which world they run in.
"""

import sys


def eventlet_is_active(module='thread'):
    """True when eventlet has monkey-patched ``module`` (threading by
    default) in this process."""
    if 'eventlet' not in sys.modules:
        return False  # nobody imported it, so nobody patched with it
    from eventlet import patcher
    return patcher.is_monkey_patched(module)
