"""The pytest plugin of callgate.testing: the ``callgate_streams`` fixture.

Registered through the ``pytest11`` entry point, so it loads in every pytest session of
an environment where callgate is installed; it imports Hypothesis only when a test asks
for the fixture, so it loads without error where Hypothesis is missing.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def callgate_streams() -> Any:
    """:func:`callgate.testing.wire_streams`, to draw from with Hypothesis's ``data()``.

    Example: ``def test_x(callgate_streams, data): example =
    data.draw(callgate_streams("anthropic", faults=True))``. The fixture fails with the
    install line when Hypothesis is missing.
    """
    try:
        from callgate.testing import streams
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        pytest.fail(f"callgate_streams: {exc}")  # names the install line
    return streams


@pytest.fixture
def callgate_adapter_machine() -> Any:
    """:class:`callgate.testing.AdapterMachine`, the base class to subclass in a test."""
    try:
        from callgate.testing.machine import AdapterMachine
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        pytest.fail(f"callgate_adapter_machine: {exc}")  # names the install line
    return AdapterMachine
