"""``callgate proxy --config FILE``: every flag of the proxy read from a TOML file.

A key is a flag's name without its dashes (``upstream``, ``on-blocked``; ``on_blocked``
too). A flag given on the command line wins over the file; a flag in neither takes its
default (:data:`FLAGS`). A list may stand for a comma-separated or multi-word flag
(``text-formats = ["tool_call_tag", "qwen3_coder_xml"]``, ``on-blocked = ["repair", 2]``).
A relative ``audit`` folder is read from the file's own folder. An unknown key, a value of
the wrong type or a file that is no TOML is one clear error naming the file and the key.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any

from callgate.errors import ConfigFileError

__all__ = ["FLAGS", "ConfigFileError", "apply_config", "read_config"]


FLAGS: dict[str, tuple[str, Any]] = {
    "upstream": ("str", None),
    "upstream_wire": ("str", None),
    "host": ("str", "127.0.0.1"),
    "port": ("int", 8787),
    "text_formats": ("names", None),
    "on_blocked": ("words", ["repair", "2"]),
    "stream_args": ("bool", False),
    "move_reasoning": ("bool", False),
    "repair_json": ("bool", False),
    "normalize": ("bool", True),
    "audit": ("path", None),
    "audit_max_bytes": ("int", 64 * 1024 * 1024),
    "audit_files": ("int", 8),
    "audit_messages": ("bool", False),
    "timeout": ("float", 600.0),
    "max_request_bytes": ("int", 32 * 1024 * 1024),
    "drain": ("float", 30.0),
    "demo": ("bool", False),
    "otlp": ("str", None),
    "span_arguments": ("bool", False),
}
"""Each flag's destination: the kind of value it takes, and its default."""


def _value(kind: str, value: Any, where: str, folder: Path) -> Any:
    """A file's value as the flag's parsed value (words: as argparse gives them)."""
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind == "str" and isinstance(value, str):
        return value
    if kind == "path" and isinstance(value, str):
        return str(folder / value)
    if kind == "names" and isinstance(value, str):
        return value
    if kind == "names" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if kind == "words" and isinstance(value, str):
        return value.split()
    if (
        kind == "words"
        and isinstance(value, list)
        and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value)
    ):
        return [str(v) for v in value]
    wanted = {
        "bool": "true or false",
        "int": "a whole number",
        "float": "a number",
        "str": "a string",
        "path": "a folder (a string)",
        "words": "a string or a list of strings",
        "names": "a comma-separated string or a list of strings",
    }[kind]
    raise ConfigFileError(f"{where} must be {wanted}, not {value!r}")


def read_config(path: Path) -> dict[str, Any]:
    """The flags a TOML file sets, by destination, as argparse would have parsed them."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"--config {path}: cannot read it ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"--config {path}: not TOML ({exc})") from exc
    values: dict[str, Any] = {}
    for key, value in data.items():
        dest = key.replace("-", "_")
        if dest not in FLAGS:
            known = ", ".join(name.replace("_", "-") for name in FLAGS)
            raise ConfigFileError(f"--config {path}: unknown key {key!r} (known: {known})")
        kind = FLAGS[dest][0]
        values[dest] = _value(kind, value, f"--config {path}: {key}", path.parent)
    return values


def apply_config(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with every flag the command line did not give filled in.

    From ``--config`` (if given), else the flag's default.
    """
    given = read_config(Path(args.config)) if getattr(args, "config", None) else {}
    for dest, (_, default) in FLAGS.items():
        if getattr(args, dest, None) is None:
            setattr(args, dest, given.get(dest, default))
    return args
