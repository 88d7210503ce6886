"""The public surface: ``callgate.__all__``, one exception base, one class per public name.

``__all__`` is pinned to docs/api.md's tables (a name added to one and not the other fails), every
name imports and says what it is; every exception class of callgate is a CallgateError
and keeps the built-in base users catch; no two public classes share a name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import defaultdict
from pathlib import Path

import callgate
from callgate import CallgateError

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [
    "ExtractionStrategy",
    "ExtractionChain",
    "LLMStreamBuffer",
    "BaseDriver",
    "SupportsNativeTools",
    "SupportsStreaming",
    "DriverResponse",
    "DriverMeta",
    "ExtractedCall",
    "ToolResult",
]
"""The names of source document 000, kept."""

KEPT_BASES = {
    "UnrecognizedStreamError": ValueError,
    "BufferUsageError": RuntimeError,
    "UnknownCodeError": KeyError,
    "PatternError": ValueError,
    "TurnError": RuntimeError,
    "FixtureError": ValueError,
    "CaptureError": ValueError,
    "RecordingError": RuntimeError,
    "TransitionError": RuntimeError,
    "ExportFormatError": ValueError,
    "VectorError": ValueError,
    "TableError": ValueError,
    "SdkUnavailableError": ImportError,
    "DiagramError": RuntimeError,
}
"""The built-in base each exception had before CallgateError, still there."""


OPTIONAL_FRAMEWORKS = {"litellm", "pydantic_ai", "grpc", "envoy", "opentelemetry"}
"""The frameworks of the integrations' and the processor's extras (``litellm``,
``pydantic-ai``, ``extproc``, ``otel``): a module that needs one is left out without it."""


def modules() -> list[object]:
    """Every module of the package (the command line's ``__main__`` runs it: left out).

    An integration whose framework is not installed is left out; any other import error
    fails the test.
    """
    names = [m.name for m in pkgutil.walk_packages(callgate.__path__, "callgate.")]
    found = []
    for name in names:
        if name.endswith("__main__"):
            continue
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in OPTIONAL_FRAMEWORKS:
                raise
    return found


def public_classes() -> dict[str, list[type]]:
    """Each public class name of the package and the classes defined under it."""
    found: dict[str, list[type]] = defaultdict(list)
    for module in modules():
        for name, value in vars(module).items():
            ours = inspect.isclass(value) and value.__module__ == module.__name__  # type: ignore[attr-defined]
            if ours and not name.startswith("_"):
                found[name].append(value)
    return found


def test_all_is_the_documented_surface_and_every_name_imports() -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| `(\w+)` \|", text, re.M)
    assert sorted(documented) == sorted(callgate.__all__)
    assert len(callgate.__all__) == len(set(callgate.__all__))
    for name in callgate.__all__:
        value = getattr(callgate, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name} has no docstring"
    assert set(SEEDS) <= set(callgate.__all__)
    done: dict[str, object] = {}
    exec("from callgate import *", done)  # what a star import gives
    assert set(callgate.__all__) <= set(done)


def test_every_exception_of_callgate_is_a_callgate_error_and_keeps_its_base() -> None:
    errors = {
        name: classes
        for name, classes in public_classes().items()
        if issubclass(classes[0], BaseException)
    }
    assert len(errors) >= 16, sorted(errors)
    for name, classes in errors.items():
        for cls in classes:
            assert issubclass(cls, CallgateError), f"{cls.__module__}.{name}"
    for name, base in KEPT_BASES.items():
        assert issubclass(errors[name][0], base), name
    assert "CallgateError" in errors


def test_no_two_public_classes_share_a_name() -> None:
    shared = {
        name: [f"{c.__module__}.{name}" for c in classes]
        for name, classes in public_classes().items()
        if len(classes) > 1
    }
    assert shared == {}
