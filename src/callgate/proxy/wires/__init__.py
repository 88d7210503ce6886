"""One reader and one writer per wire the gateway serves (see :mod:`callgate.proxy.wires.base`).

``chat`` is OpenAI Chat Completions, ``messages`` Anthropic Messages, ``responses`` the
OpenAI Responses API.
"""

from __future__ import annotations

from callgate.proxy.wires.base import Reader, Writer
from callgate.proxy.wires.chat import ChatReader, ChatWriter
from callgate.proxy.wires.messages import MessagesReader, MessagesWriter
from callgate.proxy.wires.responses import ResponsesReader, ResponsesWriter

__all__ = ["READERS", "WIRES", "WRITERS", "Reader", "Writer"]

WIRES = ("chat", "messages", "responses")
"""The wires the gateway serves, by their command-line names."""
READERS: dict[str, type[Reader]] = {
    "chat": ChatReader,
    "messages": MessagesReader,
    "responses": ResponsesReader,
}
WRITERS: dict[str, type[Writer]] = {
    "chat": ChatWriter,
    "messages": MessagesWriter,
    "responses": ResponsesWriter,
}
