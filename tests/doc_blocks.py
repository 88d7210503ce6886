"""The code of a Markdown document: its Python examples, its command lines, its inline commands.

Every block is fenced with its language (```python, ```sh, ```text, ...); a block is
known by its document and its first line, so a test can name each one it runs or leaves
out, and notice a block that appeared or went away. Command lines are read from
```sh, ```bash, ```shell and ```console blocks: a ``$ `` prompt is dropped, a trailing
backslash joins the next line, a ``# comment`` is dropped, and ``a && b`` is two commands.
The prose's inline ``callgate ...`` spans are read too: synopses, flags and examples.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from attrs import frozen

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
"""Every document of the project whose examples are a contract: README.md, docs/*.md."""

COMMAND_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
"""The fence languages whose lines are commands."""

_INLINE = re.compile(r"`(callgate(?: [^`]*)?)`")
_FENCE = re.compile(r"^```(?P<lang>[^\s`]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)


@frozen
class Block:
    """One fenced block: where it is, its language and its text."""

    document: str
    line: int
    """The line of its opening fence, from 1."""
    language: str
    text: str

    @property
    def key(self) -> str:
        """``document: first line``: how a test names the block."""
        first = next((line for line in self.text.splitlines() if line.strip()), "")
        return f"{self.document}: {first.strip()}"


@frozen
class Command:
    """One command line of a command block, as a shell would split it."""

    block: Block
    text: str
    """The command as written, comment and prompt dropped, continuations joined."""
    comment: str
    """The comment that followed it on its line, if any (what the doc says it does)."""

    @property
    def argv(self) -> list[str]:
        """Its words, quotes removed, as the shell gives them to the program."""
        return shlex.split(self.text)

    @property
    def key(self) -> str:
        """``document: command``: how a test names the command."""
        return f"{self.block.document}: {self.text}"


def blocks(document: str) -> list[Block]:
    """Every fenced block of ``document`` (a path under the repository), in order."""
    text = (ROOT / document).read_text(encoding="utf-8")
    return [
        Block(document, text[: m.start()].count("\n") + 1, m.group("lang"), m.group("body"))
        for m in _FENCE.finditer(text)
    ]


def every_block() -> list[Block]:
    """The fenced blocks of every document."""
    return [block for document in DOCUMENTS for block in blocks(document)]


def python_blocks() -> list[Block]:
    """The ```python blocks of every document."""
    return [block for block in every_block() if block.language == "python"]


def commands(block: Block) -> list[Command]:
    """The command lines of a command block (see the module's docstring)."""
    found = []
    lines = iter(block.text.splitlines())
    for raw in lines:
        line = raw.strip().removeprefix("$ ")
        while line.endswith("\\"):
            line = line[:-1].rstrip() + " " + next(lines, "").strip()
        code, comment = _split_comment(line)
        parts = [part.strip() for part in code.split("&&")]
        found += [Command(block, part, comment) for part in parts if part]
    return found


def inline_commands(document: str) -> list[str]:
    """The ``callgate ...`` spans of ``document``'s prose (outside its fenced blocks).

    A span that wraps onto the next line is one span, its whitespace made single spaces.
    """
    prose = _FENCE.sub("", (ROOT / document).read_text(encoding="utf-8"))
    return [" ".join(match.group(1).split()) for match in _INLINE.finditer(prose)]


def every_command() -> list[Command]:
    """The command lines of every document's command blocks."""
    return [c for b in every_block() if b.language in COMMAND_LANGUAGES for c in commands(b)]


def _split_comment(line: str) -> tuple[str, str]:
    """``line`` as (the command, its trailing ``# comment``): a ``#`` outside quotes."""
    quote = None
    for position, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or line[position - 1].isspace()):
            return line[:position].rstrip(), line[position + 1 :].strip()
    return line, ""
