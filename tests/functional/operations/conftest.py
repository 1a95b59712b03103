"""Lets the operation tests of this lane import the unit lane's helper
module (op_helpers, in tests/unit/operations; importlib mode)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'unit', 'operations'))
