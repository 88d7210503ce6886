"""CallgateError: the one base of every exception callgate raises.

It lives in the lowest layer (every other layer may import it) and is exported as
``callgate.CallgateError``. Each exception also keeps the built-in base it had
(``ValueError``, ``RuntimeError``, ``ImportError``), so ``except ValueError`` still
catches what it caught; ``except CallgateError`` catches all of them.
"""

from __future__ import annotations


class CallgateError(Exception):
    """Base class of every exception callgate raises: catch it to catch them all."""
