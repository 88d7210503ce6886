"""The kit's one requirement: Hypothesis, named with its install line when it is missing.

Every part of callgate.testing that uses Hypothesis imports this module first, so a
missing Hypothesis reads ``pip install 'callgate[testing]'`` rather than a bare
``ModuleNotFoundError``. The package itself imports without it (its pytest plugin loads
in every session).
"""

from __future__ import annotations

INSTALL = "pip install 'callgate[testing]'"
"""The line that installs callgate with the kit's dependencies."""

try:
    import hypothesis  # noqa: F401
except ModuleNotFoundError as exc:
    if exc.name != "hypothesis":
        raise
    raise ModuleNotFoundError(
        f"callgate.testing needs Hypothesis, which is not installed: {INSTALL}",
        name="hypothesis",
    ) from exc
