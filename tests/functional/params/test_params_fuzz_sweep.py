"""The fuzz tests of tests/unit/params/test_params_robustness.py over
every (path, odd value) pair: collected here, they take this folder's
``odd_values_per_path`` (None: all), where the unit lane tries a sample."""

from test_params_robustness import _quiet_logs  # noqa: F401
from test_params_robustness import (  # noqa: F401
    test_odd_package_files,
    test_odd_value_at_every_body_path,
    test_odd_value_at_every_body_path_with_the_package,
    test_odd_value_at_every_path,
    test_odd_value_at_every_path_of_the_ansible_section,
    test_odd_value_at_every_path_of_the_storage_section,
)
