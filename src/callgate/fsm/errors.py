"""CallgateError, the one base of every exception callgate raises (kept here for old imports).

The whole tree lives in :mod:`callgate.errors`; this name stays importable from where it
was first defined.
"""

from __future__ import annotations

from callgate.errors import CallgateError

__all__ = ["CallgateError"]
