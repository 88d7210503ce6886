"""System programs some tests need (Graphviz's dot, Chromium and chromedriver).

A test marked ``@pytest.mark.needs("dot")`` is skipped, with a reason that says what to
install, when the program is not on PATH; nothing is downloaded. With
``CALLGATE_REQUIRE_PROGRAMS`` set (CI sets it) the skip is a failure instead, so a CI run
still runs every test. ``pytest -m needs`` selects exactly these tests.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE = "CALLGATE_REQUIRE_PROGRAMS"
"""The environment variable that turns a missing program into a failure."""

INSTALL = {
    "dot": "Graphviz (apt-get install graphviz, brew install graphviz)",
    "chromium": "Chromium (apt-get install chromium)",
    "chromedriver": "chromedriver (apt-get install chromium-driver)",
}
"""What to install for each program."""


def need(*programs: str) -> dict[str, str]:
    """Each program's path; skip the test (fail it under ``REQUIRE``) if one is missing."""
    found = {name: shutil.which(name) for name in programs}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        what = "; ".join(INSTALL[name] for name in missing)
        message = f"needs {', '.join(missing)} on PATH: install {what}"
        if os.environ.get(REQUIRE):
            pytest.fail(f"{message} ({REQUIRE} is set)", pytrace=False)
        pytest.skip(message)
    return {name: path for name, path in found.items() if path is not None}
