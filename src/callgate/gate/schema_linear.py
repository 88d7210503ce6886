"""Bounded-time JSON Schema keywords: what the tool schemas run on model-written arguments.

The model writes the arguments, so nothing a schema does with them may take more than
linear time or raise. jsonschema's stock keywords fall short in four places, replaced
here: ``pattern``, ``patternProperties`` and ``additionalProperties`` match with Python's
backtracking ``re`` (exponential on ``^(a+)*$``), so they match with RE2, which is linear
in the text; ``multipleOf`` divides in floating point (an ``OverflowError`` on a huge
integer), so it divides exactly; ``uniqueItems`` compares objects pairwise (quadratic),
so it hashes a canonical form; ``format: regex`` lets ``re.compile`` raise
``OverflowError``, so it reports an invalid value instead. Every keyword also counts
against a step budget per validation (:class:`Budget`), so nesting that multiplies the
work (``allOf`` of ``$ref`` s, many levels deep) ends in a finding, not a hang.
"""

from __future__ import annotations

import contextvars
import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

import re2  # type: ignore[import-untyped]
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend

from callgate.errors import BudgetExceeded, PatternError

Keyword = Callable[[Any, Any, Any, Any], Iterator[ValidationError] | None]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.never_capture = True
_UNICODE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})")
_REPR_LIMIT = 60


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    r"""Compile a schema pattern for RE2, or raise :class:`PatternError` saying why.

    ECMA-262's ``\\uXXXX`` escapes become RE2's ``\\x{XXXX}``; anything RE2 refuses
    (look-around, back-references, repetition counts over 1000) is refused.
    """
    translated = _UNICODE_ESCAPE.sub(r"\1\\x{\2}", pattern)
    try:
        return re2.compile(translated, _OPTIONS)
    except Exception as error:  # re2 raises its own Error, or TypeError/UnicodeError
        detail = error.args[0] if error.args else type(error).__name__
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternError(str(detail)) from None


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text``; text RE2 cannot read never matches."""
    try:
        return compile_pattern(pattern).search(text) is not None
    except (PatternError, UnicodeError):
        return False


def _short(value: Any) -> str:
    """A bounded repr for messages (a huge integer's repr may itself raise)."""
    try:
        text = repr(value)
    except ValueError:
        return f"<{type(value).__name__}>"
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """``pattern`` matched by RE2."""
    if validator.is_type(instance, "string") and not _search(patrn, instance):
        yield ValidationError(f"{_short(instance)} does not match {patrn!r}")


def pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``patternProperties`` matched by RE2."""
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        for key, value in instance.items():
            if _search(patrn, key):
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


def additional_properties(
    validator: Any, extra_schema: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``additionalProperties``, with the names ``patternProperties`` covers matched by RE2."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    ]
    if validator.is_type(extra_schema, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra_schema, path=key)
    elif not extra_schema and extras:
        names = ", ".join(_short(key) for key in sorted(extras)[:10])
        more = f" and {len(extras) - 10} more" if len(extras) > 10 else ""
        verb = "was" if len(extras) == 1 else "were"
        yield ValidationError(
            f"Additional properties are not allowed ({names}{more} {verb} unexpected)"
        )


def _exact(number: int | float) -> Fraction:
    """The number the JSON text wrote, exactly (a float by its shortest decimal repr)."""
    if isinstance(number, float):
        return Fraction(Decimal(repr(number)))
    return Fraction(number)


def multiple_of(
    validator: Any, divisor: int | float, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``multipleOf`` in exact decimal arithmetic: no float overflow, no rounding error."""
    if not validator.is_type(instance, "number"):
        return
    if isinstance(instance, float) and not math.isfinite(instance):
        yield ValidationError(f"{instance!r} is not a finite number")
        return
    if (_exact(instance) / _exact(divisor)).denominator != 1:
        yield ValidationError(f"{_short(instance)} is not a multiple of {divisor}")


def _canonical(value: Any) -> Any:
    """A hashable form equal exactly when JSON Schema calls two values equal."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, Mapping):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(_canonical(item) for item in value))
    return ("other", repr(value))


def unique_items(
    validator: Any, unique: bool, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """``uniqueItems`` in linear time: each item's canonical form goes into a set."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for position, item in enumerate(instance):
        key = _canonical(item)
        if key in seen:
            yield ValidationError(f"the array has non-unique elements (item {position})")
            return
        seen.add(key)


def _is_regex(instance: object) -> bool:
    """``format: regex``: a string Python's ``re`` compiles; one it cannot is invalid."""
    if not isinstance(instance, str):
        return True
    try:
        re.compile(instance)
    except (re.error, OverflowError, RecursionError, ValueError):
        return False
    return True


def format_checker() -> FormatChecker:
    """Draft 2020-12's format checks, with ``regex`` that reports instead of raising."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
    checker.checks("regex")(_is_regex)
    return checker


class Budget:
    """Keyword steps left for one validation; each keyword applied spends one."""

    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self) -> None:
        """Take one step; raise :class:`BudgetExceeded` when none is left."""
        self.left -= 1
        if self.left < 0:
            raise BudgetExceeded


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "callgate_schema_budget", default=None
)


def _counted(keyword: Keyword) -> Keyword:
    """Wrap a keyword so that every application spends one step of the current budget."""

    def apply(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = _BUDGET.get()
        if budget is None:
            return keyword(validator, value, instance, schema)
        budget.spend()
        errors = keyword(validator, value, instance, schema)
        return None if errors is None else _spending(budget, errors)

    return apply


def _spending(budget: Budget, errors: Iterator[ValidationError]) -> Iterator[ValidationError]:
    """Pass errors up one level, one step each (an error climbs every level it fails)."""
    for error in errors:
        budget.spend()
        yield error


def run_within(budget: Budget, work: Callable[[], Any]) -> Any:
    """Run ``work`` with ``budget`` spent by every keyword it applies."""
    token = _BUDGET.set(budget)
    try:
        return work()
    finally:
        _BUDGET.reset(token)


_REPLACED: dict[str, Keyword] = {
    "pattern": pattern,
    "patternProperties": pattern_properties,
    "additionalProperties": additional_properties,
    "multipleOf": multiple_of,
    "uniqueItems": unique_items,
}

BoundedValidator: Any = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={
        name: _counted(_REPLACED.get(name) or keyword)
        for name, keyword in Draft202012Validator.VALIDATORS.items()
        if keyword is not None
    },
    format_checker=format_checker(),
)
"""Draft 2020-12 with the linear keywords above, every keyword counted against a budget."""
