"""Checks over the driver's own source tree; lets them import their helper
module (importlib mode)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
