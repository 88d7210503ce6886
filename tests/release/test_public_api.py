"""The public surface: three public modules, one exception tree, one class per public name.

Each public module's ``__all__`` is pinned to its tables in docs/api.md (a name added to one
and not the other fails), every name imports and says what it is, and no two public modules
give one name to different objects (trio's export test). Every exception class of callgate
is defined in ``callgate.errors``, is a CallgateError and keeps the built-in base users catch;
no two public classes share a name.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import callgate
import callgate.errors
from callgate import CallgateError

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_MODULES = ("callgate", "callgate.errors", "callgate.testing")
"""The modules users import from; every other module is a part behind them."""
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


def documented() -> dict[str, list[str]]:
    """The names of docs/api.md's tables by module: a section titled with `callgate.X` is
    that module's; the others are ``callgate``'s, with the errors marked as its names too."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    found: dict[str, list[str]] = defaultdict(list)
    module = "callgate"
    for line in text.splitlines():
        heading = re.match(r"^## .*`(callgate\.\w+)`$", line)
        if heading:
            module = heading.group(1)
        row = re.match(r"^\| `(\w+)` \|.*?(\| yes \|)?$", line)
        if row:
            found[module].append(row.group(1))
            if row.group(2):
                found["callgate"].append(row.group(1))
    return found


def test_each_public_module_exports_what_its_table_documents() -> None:
    tables = documented()
    assert set(tables) == set(PUBLIC_MODULES)
    for name in PUBLIC_MODULES:
        exported = importlib.import_module(name).__all__
        assert sorted(tables[name]) == sorted(exported), name
        assert len(exported) == len(set(exported)), name


def test_every_public_name_imports_and_says_what_it_is() -> None:
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{module_name}.{name} has no docstring"
    assert set(SEEDS) <= set(callgate.__all__)
    done: dict[str, object] = {}
    exec("from callgate import *", done)  # what a star import gives
    assert set(callgate.__all__) <= set(done)


def test_no_two_public_modules_give_one_name_to_different_objects() -> None:
    owners: dict[str, dict[int, str]] = defaultdict(dict)
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            owners[name].setdefault(id(getattr(module, name)), module_name)
    clashes = {name: sorted(by.values()) for name, by in owners.items() if len(by) > 1}
    assert clashes == {}


def test_the_generated_tables_are_in_step_with_the_docstrings() -> None:
    make = load_doc_script("make_api")
    assert (ROOT / "docs" / "api.md").read_text(encoding="utf-8") == make.render(), (
        "docs/api.md is stale: run python docs/make_api.py"
    )


def load_doc_script(name: str) -> ModuleType:
    """A script of docs/ loaded as a module (it is not on the import path)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_exception_class_is_defined_in_the_errors_module() -> None:
    """One tree in one module; a private signal caught where it is raised is no export."""
    scattered = []
    for module in modules():
        for name, value in vars(module).items():
            ours = inspect.isclass(value) and value.__module__ == module.__name__  # type: ignore[attr-defined]
            if not ours or not issubclass(value, BaseException):
                continue
            if name.startswith("_"):
                assert name not in getattr(module, "__all__", ()), name
            elif module is not callgate.errors:
                scattered.append(f"{module.__name__}.{name}")  # type: ignore[attr-defined]
    assert scattered == []
    tree = [getattr(callgate.errors, name) for name in callgate.errors.__all__]
    assert all(issubclass(cls, CallgateError) for cls in tree)
    assert len(tree) >= 25


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
