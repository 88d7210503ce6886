"""A call's arguments while they form: an incremental reader of JSON text that arrives in pieces.

Theory of operation: :class:`PartialJSON` keeps its stack of open containers and its place
in the grammar, and reads each new piece once (inside a string, one regular-expression
search per piece finds the next quote, backslash or forbidden character). The value it
builds is always a *prefix* of the value the whole text will parse to (:func:`is_prefix`):
a string cut at its current end, containers holding only what has started, no key whose
name is still open, no number and no ``true``/``false``/``null`` until its token is whole.
Where the text stops being strict JSON (a stray ``}``, a control character or a lone
surrogate in a string, a bad escape, a duplicate key, a non-finite number, text after
the object) the reader stops growing there and marks itself :attr:`~PartialJSON.broken`;
it never raises on any text.

Values are built in place: containers grow by appending only, so a :data:`Shot` of the
value (the length of each open container and of the open string) costs O(depth) and is
turned into plain data only when read (:func:`value_at`). The open string is kept as
pieces and joined when read or when it closes, so the work per piece does not grow with
what came before.
"""

from __future__ import annotations

import math
import re
from json import decoder as _decoder
from typing import Any

from callgate.gate.strictjson import MAX_INT_DIGITS

_STRING_STOP = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')
"""Inside a string: its end, an escape, or a character strict JSON refuses there."""
STRING_STOP = _STRING_STOP.search
"""Where in a piece an open string's plain run stops (None: the whole piece is plain)."""
_RUN = '[^"\\\\\x00-\x1f\ud800-\udfff]*+(?:\\\\["\\\\/bfnrt][^"\\\\\x00-\x1f\ud800-\udfff]*+)*+'
"""Plain characters and whole two-character escapes (possessive: nothing to try again)."""
PLAIN_RUN = re.compile(_RUN).fullmatch
"""Whether a piece :data:`STRING_STOP` stops in is still more of an open string: its only
stops are whole two-character escapes (None: it is not)."""
PLAIN_SPLIT = re.compile(_RUN + "(\\\\)?").fullmatch
"""The same, or such a run then a backslash whose escape is in the next piece (the match's
``lastindex`` is then 1)."""
REJOINED = re.compile('["\\\\/bfnrt]' + _RUN + "(\\\\)?").fullmatch
"""A piece after one that ended in a backslash: the escape's character, then as
:data:`PLAIN_SPLIT`."""
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}
_WS = frozenset(" \t\n\r")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE = frozenset('"\\/bfnrt')
"""The characters of a two-character escape after its backslash."""

# Where the reader is in the grammar.
_START = 0  # before the top-level object
_VALUE = 1  # a value must come (after ':' or ',' in an array)
_FIRST_KEY = 2  # after '{': a key or '}'
_KEY = 3  # after ',' in an object: a key
_COLON = 4  # after a key
_AFTER = 5  # after a value: ',' or the container's close
_FIRST_ITEM = 6  # after '[': a value or ']'
_STRING = 7  # inside a string (a key or a value)
_TOKEN = 8  # inside a number or a literal word
_DONE = 9  # the top-level object closed: only whitespace may follow


def _read_number(token: str) -> tuple[bool, Any]:
    """A whole number token as strict JSON reads it: (True, value), or (False, None)."""
    match = _NUMBER.fullmatch(token)
    if match is None:
        return False, None
    if match.group(1) is None and match.group(2) is None:
        if len(token) - token.startswith("-") > MAX_INT_DIGITS:
            return False, None
        return True, int(token)
    value = float(token)
    return (True, value) if math.isfinite(value) else (False, None)


Spine = tuple[tuple[dict[str, Any] | list[Any], int], ...]
"""Each open container of a value, outermost first, with its length at one moment."""
OpenString = tuple[list[str], int, str | None] | None
"""The open string value then: its pieces, its length, and the key it sits under (None in
an array); None when no string value is open."""
Shot = tuple[Spine, OpenString]
"""A value as it stood at one moment: O(depth) to take; :func:`value_at` makes it data."""
NO_VALUE: Shot = ((), None)
"""The shot of a value that has not started: it reads as ``{}``."""


def value_at(shot: Shot) -> Any:
    """The value a shot stands for, as plain data (fresh containers along its spine)."""
    spine, string = shot
    return _build(spine, string, 0) if spine else {}


def _build(spine: Spine, string: OpenString, level: int) -> Any:
    container, length = spine[level]
    deeper = level + 1 < len(spine)
    if isinstance(container, dict):
        built: Any = (
            dict(container) if len(container) == length else dict(list(container.items())[:length])
        )
        if deeper:
            built[next(reversed(built))] = _build(spine, string, level + 1)
        elif string is not None:
            built[string[2]] = _joined(string)
        return built
    built = container[:length]
    if deeper:
        built[-1] = _build(spine, string, level + 1)
    elif string is not None:
        built.append(_joined(string))
    return built


class Pieces(list[str]):
    """An open string's JSON text in pieces, and what of it was decoded by the last read.

    Each read decodes only the text since the last one (the pieces end at whole escapes
    only, so any length a shot took is a place to cut).
    """

    __slots__ = ("read", "text")

    def __init__(self) -> None:
        super().__init__()
        self.read = 0
        """How much of the JSON text :attr:`text` stands for."""
        self.text = ""


def _joined(string: tuple[list[str], int, str | None]) -> str:
    """The open string's text up to its length then (its pieces are folded once read)."""
    pieces, length, _ = string
    if len(pieces) > 1:
        pieces[:] = ["".join(pieces)]
    whole = pieces[0] if pieces else ""
    if not isinstance(pieces, Pieces) or length < pieces.read:
        return decoded(whole if len(whole) == length else whole[:length])
    text = pieces.text + decoded(whole[pieces.read : length])
    pieces.read, pieces.text = length, text
    return text


def decoded(raw: str) -> str:
    """A string's JSON text between its quotes, whole escapes only, as the string it stands for."""
    if "\\" not in raw:
        return raw
    text: str = _decoder.scanstring(raw + '"', 0, True)[0]  # type: ignore[attr-defined]
    return text


class StillForming(dict[str, Any]):
    """Arguments a wire gives as an object while they still stream, as built so far.

    A strategy hands them to the partial reader in this type so the record says they are
    not whole yet (the object itself always reads as complete JSON).
    """


class TextLog:
    """Append-only text read back from any offset: a call's argument text so far.

    Reading on from where the last read stopped (what a writer of argument deltas does)
    costs O(new text); reading from an earlier offset walks back to it once.
    """

    __slots__ = ("_at", "_index", "length", "pieces")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        """The text in pieces, in order (append with :meth:`append`)."""
        self.length = 0
        self._index = 0
        self._at = 0
        """Where the last read ended: a piece's index and the offset that piece starts at."""

    def append(self, text: str) -> None:
        """Add text at the end."""
        if text:
            self.length += len(text)
            self.pieces.append(text)

    def since(self, start: int, end: int | None = None) -> str:
        """The text from ``start`` to ``end`` (default: all of it so far)."""
        length = self.length
        stop = length if end is None or end > length else end
        pieces = self.pieces
        if stop == length and pieces and start == length - len(pieces[-1]):
            return pieces[-1]  # the last piece, as a writer reading on asks for it
        start = max(start, 0)
        if start >= stop:
            return ""
        index, at = self._index, self._at
        if start < at:
            index = at = 0
        while at + len(pieces[index]) <= start:
            at += len(pieces[index])
            index += 1
        self._index, self._at = index, at
        if index == len(pieces) - 1 or at + len(pieces[index]) >= stop:
            return pieces[index][start - at : stop - at]
        out: list[str] = []
        while at < stop:
            piece = pieces[index]
            out.append(piece[max(start - at, 0) : stop - at])
            at += len(piece)
            index += 1
        return "".join(out)


class PartialJSON:
    """Reads a JSON object's text piece by piece; its value so far is always a prefix.

    ``feed`` never raises: where the text stops being strict JSON the reader stops there
    (:attr:`broken`). :attr:`valid` counts the characters read before that point.
    """

    __slots__ = (
        "_escape", "_high", "_key", "_mode", "_pieces", "_spine", "_token", "_word", "broken",
        "complete", "max_depth", "plain", "root", "stack", "string_size", "trailing", "valid",
    )  # fmt: skip

    def __init__(self, *, max_depth: int = 128, trailing: bool = True) -> None:
        self.max_depth = max_depth
        self.trailing = trailing
        """Whether text after the object is read (whitespace only); False: reading stops
        at the object's end, and :attr:`valid` counts no further (the object sits inside
        other text)."""
        self.root: dict[str, Any] | None = None
        self.stack: list[dict[str, Any] | list[Any]] = []
        self._key: list[str | None] = []
        """Per open container: the key whose value comes next (None in an array)."""
        self._mode = _START
        self._pieces: list[str] = []
        self.string_size = 0
        """How many characters the open string holds so far."""
        self._word = False
        """Whether the open string is a key (not shown) rather than a value."""
        self._spine: Spine = ()
        """The spine while a string value is open (no container grows meanwhile)."""
        self._escape: str | None = None
        self._high: str | None = None
        """A high surrogate's escape, waiting for its low half."""
        self._token = ""
        self.valid = 0
        self.broken = False
        """The text stopped being strict JSON; nothing more is read."""
        self.complete = False
        """The top-level object closed (and nothing but whitespace followed)."""
        self.plain: tuple[Spine, list[str], str | None] | None = None
        """While a string value is open with no escape pending: its spine, pieces and key.

        A piece in which :data:`STRING_STOP` finds nothing (or that :data:`PLAIN_RUN`
        accepts) is read by :meth:`plain_piece` alone (the pieces are the string's JSON
        text, decoded when read).
        """

    # -- reading ------------------------------------------------------------------------

    def take(self, text: str) -> int:
        """Read the next piece; how many of its characters were read before any break."""
        if self.plain is not None and (STRING_STOP(text) is None or PLAIN_RUN(text)):
            return self.plain_piece(text)
        before = self.valid
        self.feed(text)
        return self.valid - before

    def plain_piece(self, text: str) -> int:
        """Read a piece with no quote, backslash or forbidden character, a string value open."""
        size = len(text)
        self._pieces.append(text)
        self.string_size += size
        self.valid += size
        return size

    def string_shot(self) -> Shot:
        """:meth:`shot` while :attr:`plain` is set: the open string at its size now."""
        spine, pieces, key = self.plain  # type: ignore[misc]
        return spine, (pieces, self.string_size, key)

    def feed(self, text: str) -> None:
        """Read the next piece of the text."""
        at, end = 0, len(text)
        while at < end and not self.broken:
            mode = self._mode
            if mode == _DONE and not self.trailing:
                return
            if mode == _STRING:
                at = self._string(text, at)
            elif mode == _TOKEN:
                at = self._in_token(text, at)
            else:
                char = text[at]
                if char in _WS:
                    at += 1
                    self.valid += 1
                    continue
                at = self._structure(mode, char, at)

    def _fail(self) -> int:
        """Stop reading: the text is no longer strict JSON (the value stays as it was)."""
        self.plain = None
        self.broken = True
        self.complete = False
        return 1 << 62

    def _structure(self, mode: int, char: str, at: int) -> int:
        """One significant character outside strings and tokens."""
        if mode == _START:
            if char != "{":
                return self._fail()
            self.root = {}
            self._open(self.root, None)
        elif mode == _DONE:
            return self._fail()
        elif mode in (_FIRST_KEY, _KEY):
            if char == '"':
                self._begin_string(key=True)
            elif char == "}" and mode == _FIRST_KEY:
                self._close(dict)
            else:
                return self._fail()
        elif mode == _COLON:
            if char != ":":
                return self._fail()
            self._mode = _VALUE
        elif mode == _AFTER:
            top = self.stack[-1]
            if char == ",":
                self._mode = _KEY if isinstance(top, dict) else _VALUE
            elif char == ("}" if isinstance(top, dict) else "]"):
                self._close(type(top))
            else:
                return self._fail()
        elif mode == _FIRST_ITEM and char == "]":
            self._close(list)
        elif not self._value(char):
            return self._fail()
        self.valid += 1
        return at + 1

    def _value(self, char: str) -> bool:
        """A value starts with ``char``; False when no value can."""
        if char == '"':
            self._begin_string(key=False)
        elif char in "{[":
            if len(self.stack) >= self.max_depth:
                return False
            child: dict[str, Any] | list[Any] = {} if char == "{" else []
            self._put(child)
            self._open(child, None)
        elif char in _NUMBER_CHARS or char in "tfn":
            self._token = char
            self._mode = _TOKEN
        else:
            return False
        return True

    def _open(self, container: dict[str, Any] | list[Any], key: str | None) -> None:
        self.stack.append(container)
        self._key.append(key)
        self._mode = _FIRST_KEY if isinstance(container, dict) else _FIRST_ITEM

    def _close(self, kind: type) -> None:
        self.stack.pop()
        self._key.pop()
        if self.stack:
            self._mode = _AFTER
        else:
            self._mode = _DONE
            self.complete = True

    def _put(self, value: Any) -> None:
        """Place a value that started (a container) or is whole (anything else)."""
        top = self.stack[-1]
        if isinstance(top, dict):
            key = self._key[-1]
            assert key is not None
            top[key] = value
        else:
            top.append(value)

    # -- strings ------------------------------------------------------------------------

    def _begin_string(self, *, key: bool) -> None:
        self._mode = _STRING
        self._word = key
        if not key:
            self._spine = self._spine_now()
        self._pieces = Pieces()
        self.string_size = 0
        self._escape = None
        self._high = None
        self.plain = None if key else (self._spine, self._pieces, self._key[-1])

    def _string(self, text: str, at: int) -> int:
        if self._escape is not None:
            return self._escaped(text, at)
        end = len(text)
        while True:
            match = _STRING_STOP.search(text, at)
            stop = end if match is None else match.start()
            if stop > at:
                if self._high is not None:
                    return self._fail()
                self._chars(text[at:stop])
                self.valid += stop - at
            if match is None:
                return stop
            char = text[stop]
            if char == "\\":
                if text[stop + 1 : stop + 2] in _SIMPLE and self._high is None:  # whole: go on
                    self._chars(text[stop : stop + 2])
                    self.valid += 2
                    at = stop + 2
                    continue
                self._escape = ""
                self.plain = None
                self.valid += 1
                return stop + 1
            if char != '"' or self._high is not None:
                return self._fail()  # a control character or a surrogate code point, or a lone high
            self.valid += 1
            self._end_string()
            return stop + 1

    def _chars(self, chars: str) -> None:
        self._pieces.append(chars)
        self.string_size += len(chars)

    def _escaped(self, text: str, at: int) -> int:
        """Read the escape after a backslash, a character at a time until it is whole."""
        escape = self._escape
        assert escape is not None
        while at < len(text):
            char = text[at]
            if not escape:
                if char == "u":
                    escape = "u"
                elif char in _SIMPLE and self._high is None:
                    self._escape = None
                    self._chars("\\" + char)
                    self._replain()
                    self.valid += 1
                    return at + 1
                else:
                    return self._fail()
            elif char in _HEX:
                escape += char
                if len(escape) == 5:
                    self.valid += 1
                    self._escape = None
                    if not self._unicode(int(escape[1:], 16), "\\" + escape):
                        return self._fail()
                    if self._high is None:
                        self._replain()
                    return at + 1
            else:
                return self._fail()
            self.valid += 1
            at += 1
        self._escape = escape
        return at

    def _replain(self) -> None:
        """An escape is whole: a string value's plain run goes on."""
        if not self._word:
            self.plain = (self._spine, self._pieces, self._key[-1])

    def _unicode(self, code: int, raw: str) -> bool:
        r"""A ``\uXXXX`` escape (``raw``); a surrogate half waits for its pair. False: refused."""
        high = self._high
        if 0xD800 <= code <= 0xDBFF:
            if high is not None:
                return False
            self._high = raw
            return True
        if 0xDC00 <= code <= 0xDFFF:
            if high is None:
                return False
            self._high = None
            self._chars(high + raw)
            return True
        if high is not None:
            return False
        self._chars(raw)
        return True

    def _end_string(self) -> None:
        self.plain = None
        pieces = self._pieces
        text = decoded(pieces[0] if len(pieces) == 1 else "".join(pieces))
        self._pieces = []
        if self._word:
            top = self.stack[-1]
            if text in top:
                self._fail()  # a duplicate key: strict JSON refuses the object
                return
            self._key[-1] = text
            self._mode = _COLON
        else:
            self._put(text)
            self._mode = _AFTER

    # -- numbers and words ----------------------------------------------------------------

    def _in_token(self, text: str, at: int) -> int:
        token = self._token
        word = token[0] in "tfn"
        end = len(text)
        start = at
        while at < end:
            char = text[at]
            if word:
                if not ("a" <= char <= "z"):
                    break
            elif char not in _NUMBER_CHARS:
                break
            at += 1
        token += text[start:at]
        self._token = token
        if word:
            known = next((w for w in _WORDS if w.startswith(token)), None)
            if known is None or (at < end and token != known):
                return self._fail()
            self.valid += at - start
            if token == known:
                self._put(_WORDS[known])
                self._mode = _AFTER
            return at
        if at == end:
            self.valid += at - start
            return at  # the number may go on in the next piece
        ok, value = _read_number(token)
        if not ok:
            return self._fail()
        self.valid += at - start
        self._put(value)
        self._mode = _AFTER
        return at

    # -- what readers take --------------------------------------------------------------

    def shot(self) -> Shot:
        """The value now (see :data:`Shot`): O(depth)."""
        if self._mode == _STRING and not self._word:
            return self._spine, (self._pieces, self.string_size, self._key[-1])
        if not self.stack:
            root = self.root
            return (((root, len(root)),), None) if root is not None else NO_VALUE
        return self._spine_now(), None

    def _spine_now(self) -> Spine:
        stack = self.stack
        top = stack[0]
        return ((top, len(top)),) if len(stack) == 1 else tuple([(c, len(c)) for c in stack])


def is_prefix(partial: Any, final: Any) -> bool:
    """Whether ``partial`` is a prefix of ``final`` as :class:`PartialJSON` builds them.

    Strings: ``final`` starts with ``partial``. Objects: ``partial``'s keys are the first
    keys of ``final`` in the same order, every value but the last equal, the last a
    prefix. Arrays likewise by position. Numbers, booleans and null: equal, of the same
    type (``1`` is no prefix of ``True``).
    """
    if isinstance(final, dict):
        if not isinstance(partial, dict) or len(partial) > len(final):
            return False
        keys, final_keys = list(partial), list(final)[: len(partial)]
        if keys != final_keys:
            return False
        return all(
            (_same(partial[k], final[k]) if n < len(keys) - 1 else is_prefix(partial[k], final[k]))
            for n, k in enumerate(keys)
        )
    if isinstance(final, list):
        if not isinstance(partial, list) or len(partial) > len(final):
            return False
        return all(
            _same(p, f) if n < len(partial) - 1 else is_prefix(p, f)
            for n, (p, f) in enumerate(zip(partial, final, strict=False))
        )
    if isinstance(final, str):
        return isinstance(partial, str) and final.startswith(partial)
    return _same(partial, final)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: equal, and of the same JSON type all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
