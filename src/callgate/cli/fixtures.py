"""The bundled example fixtures: the conformance streams ``callgate demo --fixtures`` checks.

Each is a JSON file under ``callgate/examples/`` holding a stream, its tools and what it
must give (``expect``); the tests and the docs' tables read them from here too.
"""

from __future__ import annotations

from importlib import resources


def examples() -> list[tuple[str, str]]:
    """The bundled example fixtures as (name, JSON text), sorted by name."""
    folder = resources.files("callgate") / "examples"
    return sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    )
