"""Regenerate the machine diagrams, exports and conformance vectors under docs/.

Run ``python docs/make_diagrams.py`` after changing a table or the behaviour of a stream;
``--check`` writes nothing and exits 1 listing the stale files (DOT, the JSON, XState and
SCXML exports, the vectors; not SVG: its bytes vary with Graphviz). The vectors alone are
``callgate export --vectors docs/machines/vectors``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from callgate.cli.conformance import vector_files
from callgate.diagrams import render, to_dot
from callgate.fsm import MACHINES
from callgate.fsm.export import EXPORTS, SUFFIXES

DOCS = Path(__file__).resolve().parent
"""The docs/ directory; every path written is under it."""


def checked_files(docs: Path = DOCS) -> dict[Path, str]:
    """Map each DOT, export and vector file the tables produce now to its exact text."""
    files: dict[Path, str] = {}
    for name, table in sorted(MACHINES.items()):
        files[docs / "diagrams" / f"{name}.dot"] = to_dot(table)
        for kind, export in EXPORTS.items():
            files[docs / "machines" / f"{name}{SUFFIXES[kind]}"] = export(table)
    for file_name, text in vector_files().items():
        files[docs / "machines" / "vectors" / file_name] = text
    return files


def stale_files(docs: Path = DOCS) -> list[Path]:
    """Return the checked files that are missing or differ from what the tables produce."""
    return [
        path
        for path, text in checked_files(docs).items()
        if not path.is_file() or path.read_bytes() != text.encode()
    ]


def write_all(docs: Path = DOCS) -> list[Path]:
    """Write every DOT, SVG, export and vector file; return the paths written."""
    written = []
    for path, text in checked_files(docs).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
        written.append(path)
    for name, table in sorted(MACHINES.items()):
        svg = docs / "diagrams" / f"{name}.svg"
        svg.write_bytes(render(table, "svg"))
        written.append(svg)
    return written


def main(argv: list[str] | None = None) -> int:
    """Write the files, or with ``--check`` report the stale ones; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a DOT, export or vector file is stale",
    )
    args = parser.parse_args(argv)
    root = DOCS.parent
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(root)}", file=sys.stderr)
        if stale:
            print("regenerate with: python docs/make_diagrams.py", file=sys.stderr)
            return 1
        return 0
    for path in write_all():
        print(f"wrote {path.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
