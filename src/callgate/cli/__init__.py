"""The command line: check, replay, demo, export, diagram; captures and bundled fixtures."""

from callgate.cli.commands import main

__all__ = ["main"]
