"""Test configuration: Hypothesis profiles (deterministic for CI), and the ``needs`` marker.

A test marked ``needs`` runs system programs; see tests/programs.py.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from programs import need

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, in CI, fail) a test marked ``needs`` whose programs are not on PATH."""
    for marker in item.iter_markers("needs"):
        need(*marker.args)
