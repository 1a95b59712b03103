"""What the lab's LCM verbs show while they run, and where failures go.

Progress is the driver's own INFO lines on stderr. A failure is one line on
the terminal (:func:`k8s_mgmt.cli.errors.reported`); its further lines and a
traceback go to the lab's error log in the state dir.
"""

import logging as std_logging
import os
import sys

from k8s_mgmt.cli import errors

ERROR_LOG = 'lab_lcm.log'


def show_progress(quiet):
    """The driver's INFO lines on stderr: what it is doing, node by node."""
    if quiet:
        return
    logger = std_logging.getLogger('k8s_mgmt')
    if not any(getattr(h, '_k8s_mgmt_cli', False) for h in logger.handlers):
        handler = std_logging.StreamHandler(sys.stderr)
        handler.setFormatter(std_logging.Formatter(
            '%(asctime)s %(levelname)s %(message)s', '%H:%M:%S'))
        handler._k8s_mgmt_cli = True
        logger.addHandler(handler)
    logger.setLevel(std_logging.INFO)


def error_log(settings):
    return os.path.join(settings.state_dir, ERROR_LOG)


def reported(what, settings, log_path=None):
    """:func:`k8s_mgmt.cli.errors.reported` with the lab's error log."""
    return errors.reported(what, log_path or error_log(settings))
