"""Every exception callgate raises, in one tree under :class:`CallgateError`.

The modules that raise them import them from here (and keep the names where they were
imported from before). Each class also keeps the built-in base it had (``ValueError``,
``RuntimeError``, ``ImportError``, ``KeyError``), so ``except ValueError`` still catches
what it caught; ``except CallgateError`` catches all of them. This module imports nothing
of callgate: it is the lowest layer, so every other layer may raise from it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuditChoice",
    "BudgetExceeded",
    "BufferUsageError",
    "CallgateError",
    "CaptureError",
    "ConfigFileError",
    "DiagramError",
    "ExportFormatError",
    "FixtureError",
    "LedgerUnavailable",
    "PatternError",
    "PolicyError",
    "ProxyUsageError",
    "RecordingError",
    "RequestBodyError",
    "RequestError",
    "SdkUnavailableError",
    "TableError",
    "ToolListError",
    "TransitionError",
    "TurnError",
    "UnknownCodeError",
    "UnrecognizedStreamError",
    "UsageError",
    "VectorError",
]


class CallgateError(Exception):
    """Base class of every exception callgate raises: catch it to catch them all."""


# The machines and their documents.


class TableError(CallgateError, ValueError):
    """A machine definition is inconsistent; raised when the :class:`Table` is built."""

    def __init__(self, machine: str, problem: str) -> None:
        super().__init__(f"machine {machine!r}: {problem}")
        self.machine = machine
        self.problem = problem


class TransitionError(CallgateError, RuntimeError):
    """The caller fed a machine an event that its current state does not accept."""

    def __init__(self, machine: str, state: str, event: str) -> None:
        super().__init__(f"machine {machine!r} cannot handle event {event!r} in state {state!r}")
        self.machine = machine
        self.state = state
        self.event = event


class ExportFormatError(CallgateError, ValueError):
    """A document is not a version-1 callgate table."""


class VectorError(CallgateError, ValueError):
    """A vector document is malformed, or a run does not follow its table."""


class DiagramError(CallgateError, RuntimeError):
    """A diagram cannot be drawn here; the message says what to install."""


# The gate: findings and schemas.


class UnknownCodeError(CallgateError, ValueError, KeyError):
    """Raised by finding() for a code that is not in CODES; catchable as ValueError or KeyError."""

    def __str__(self) -> str:
        """Show the plain message instead of KeyError's quoted repr."""
        return str(self.args[0]) if self.args else ""


class PatternError(CallgateError, ValueError):
    """A schema pattern the linear-time engine cannot compile (so it cannot be enforced)."""


class BudgetExceeded(CallgateError):
    """Validation took more keyword steps than its budget allows."""


# The buffer, the ledger and the loop.


class UnrecognizedStreamError(CallgateError, ValueError):
    """No strategy of the chain recognises the stream's first chunk."""


class BufferUsageError(CallgateError, RuntimeError):
    """The buffer was used out of order (for example a chunk after ``end()``)."""


class LedgerUnavailable(CallgateError, RuntimeError):
    """The ledger's backend could not be read or written: the call is not run (fail closed)."""


class TurnError(CallgateError, RuntimeError):
    """The stream failed mid-turn (an SDK error, a dropped connection).

    The buffer was ended and the drivers answered what the turn allows (calls the stream
    did not finish are refused, not run): :attr:`turn` is the partial turn (a
    :class:`callgate.Turn`), with what was shown, what ran, the findings and a history the
    provider accepts. The stream's own exception is ``__cause__``.
    """

    def __init__(self, turn: Any, cause: Exception) -> None:
        super().__init__(
            f"the stream failed mid-turn ({type(cause).__name__}: {cause}); "
            "the turn so far is in .turn"
        )
        # Typed loosely: Turn lives in the driver layer, far above this one.
        self.turn: Any = turn


# The test kit.


class SdkUnavailableError(CallgateError, ImportError):
    """``form="sdk"`` was asked for a wire whose SDK is not installed."""


# The gateway and the Envoy processor.


class RequestError(CallgateError, ValueError):
    """A request the engine cannot gate (its ``tools`` unreadable, ``n`` above 1): a 400."""


class RequestBodyError(RequestError):
    """A request body the proxy cannot read: answered 400 with this message.

    ``code`` is the wire error's code: ``invalid_json`` (not one strict JSON object) or
    ``invalid_request`` (a field callgate reads has the wrong type).
    """

    def __init__(self, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.code = code
        self.status = 400


class PolicyError(CallgateError, ValueError):
    """A policy setting that cannot be used (the message names it): the request gets a 400."""


# The command line.


class UsageError(CallgateError):
    """A request the command line refuses; the message says what to do instead."""


class ProxyUsageError(CallgateError, ValueError):
    """A flag of ``callgate proxy`` that cannot be used; the message says why."""


class ConfigFileError(CallgateError, ValueError):
    """A ``--config`` file the proxy cannot use; the message names the file and the key."""


class ToolListError(CallgateError, ValueError):
    """A tools list that is no wire's shape: the message says which entry and why."""


class FixtureError(CallgateError, ValueError):
    """The fixture cannot be checked; the message says what to fix."""


class CaptureError(CallgateError, ValueError):
    """A capture cannot be read; the message says where and why."""


class RecordingError(CallgateError, RuntimeError):
    """A recorded instance's steps do not chain (a step starts where the last did not end)."""


class AuditChoice(CallgateError, ValueError):
    """A ``--record`` or ``--turn`` that names no record of the log: the message says why."""
