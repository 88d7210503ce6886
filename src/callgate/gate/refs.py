"""A call's reference: which call of the turn it is, native or read from the turn's text.

The gate makes one for every call it keeps (:class:`NativeRef` for a provider's slot,
:class:`TextRef` for a call of the text) and every client reads the same value: the
driver's decision, the ledger, the partial-arguments view, the reports and the gateway.
Code tells the kinds apart by their type (or :attr:`native`), never by the value's form.

A reference is small, frozen and hashable; references order as the turn's calls are
ordered (native slots by index, then text calls by block and place in the block), and a
native reference never equals a text one. :attr:`slot` is the one place a reference is
written out, as reports, findings and ``ExtractedCall.slot`` carry it: the provider's
index for a native call, ``text-B.N`` for a call of the text. Nothing reads that form back.
"""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen


class _Ordered:
    """The order every reference shares: by :meth:`order`, whatever the kind."""

    __slots__ = ()

    def order(self) -> tuple[int, int, int]:
        """Where the call sits in the turn's order: (kind, then its place)."""
        raise NotImplementedError

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, _Ordered):
            return NotImplemented
        return self.order() < other.order()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, _Ordered):
            return NotImplemented
        return self.order() <= other.order()

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, _Ordered):
            return NotImplemented
        return self.order() > other.order()

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, _Ordered):
            return NotImplemented
        return self.order() >= other.order()


@frozen(order=False)
class NativeRef(_Ordered):
    """A native call: the provider's own slot (index, output index, block index, position)."""

    index: int
    native: ClassVar[bool] = True

    def order(self) -> tuple[int, int, int]:
        """Native calls come first, by their provider's index."""
        return (0, self.index, 0)

    @property
    def slot(self) -> int:
        """The call's ``slot`` in reports and findings: the provider's index."""
        return self.index

    def __str__(self) -> str:
        return str(self.index)


@frozen(order=False)
class TextRef(_Ordered):
    """A call read from the turn's text: its block, and its place in the block."""

    block: int
    n: int
    _slot: str = field(init=False, eq=False, repr=False)
    native: ClassVar[bool] = False

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_slot", f"text-{self.block}.{self.n}")

    def order(self) -> tuple[int, int, int]:
        """Text calls come after the native ones, by block and then by place in it."""
        return (1, self.block, self.n)

    @property
    def slot(self) -> str:
        """The call's ``slot`` in reports and findings: ``text-B.N``."""
        return self._slot

    def __str__(self) -> str:
        return self._slot


CallRef = NativeRef | TextRef
"""A call of the turn, native or read from its text."""


def call_order(ref: CallRef | None) -> tuple[int, int, int]:
    """A sort key over references: the turn's call order, and no reference (None) last."""
    return ref.order() if ref is not None else (2, 0, 0)
