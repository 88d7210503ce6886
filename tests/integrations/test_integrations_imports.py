"""The integrations stay out of the way: ``import callgate`` loads no framework, nor their package.

Each runs in a fresh interpreter, so what another test imported cannot hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys

FRAMEWORKS = ("litellm", "pydantic_ai", "openai", "httpx", "uvicorn", "starlette")


def loaded(statement: str) -> list[str]:
    """The frameworks of :data:`FRAMEWORKS` loaded by running ``statement`` in a new Python."""
    code = (
        f"{statement}\nimport json, sys\n"
        f"print(json.dumps([m for m in {FRAMEWORKS!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_callgate_loads_no_framework() -> None:
    assert loaded("import callgate") == []


def test_the_integrations_package_and_their_shared_module_load_no_framework() -> None:
    assert loaded("import callgate.integrations, callgate.integrations.common") == []
