"""A copy of callgate without msgspec, as far as its JSON readers go, for one test at a time."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import pytest

from callgate.gate import fastcodec


@contextmanager
def without_msgspec(*dependents: ModuleType) -> Iterator[None]:
    """The library's loader reloaded with msgspec hidden, then ``dependents`` reloaded on it.

    msgspec is hidden from the loader alone and is back before the dependents load: one
    that imported msgspec itself would still find it, so the test shows what follows the
    loader's one answer. Everything is reloaded as it was on the way out.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "msgspec", None)
        importlib.reload(fastcodec)
    try:
        for module in dependents:
            importlib.reload(module)
        yield
    finally:
        importlib.reload(fastcodec)
        for module in dependents:
            importlib.reload(module)
