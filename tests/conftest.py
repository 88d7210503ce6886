"""Test configuration: Hypothesis profiles (deterministic for CI), and the ``needs`` marker.

A test marked ``needs`` runs system programs; see tests/programs.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

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
PROFILE = "ci" if os.environ.get("CI") else "dev"
settings.load_profile(PROFILE)
settings.register_profile(
    "machine",
    settings(settings.get_profile(PROFILE), max_examples=100, stateful_step_count=50),
)
"""The budget of every stateful test of the wires: ``settings.get_profile("machine")``."""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, in CI, fail) a test marked ``needs`` whose programs are not on PATH."""
    for marker in item.iter_markers("needs"):
        need(*marker.args)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium driven by the chromedriver on PATH (never one Selenium downloads).

    Module-scoped: one browser serves a test module. A fresh profile, no network services.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = need("chromium", "chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = paths["chromium"]
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(paths["chromedriver"]), options=options)
    try:
        yield driver
    finally:
        driver.quit()
