"""The forms a generated stream takes: plain dicts, the SDKs' typed objects, raw bytes.

The SDKs are never dependencies of callgate: :func:`to_sdk` imports the one it needs
when asked, and says which package to install when it is missing.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from callgate.fsm.errors import CallgateError

FORMS = ("dict", "sdk", "sse")

SDK_PACKAGES = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google-genai",
    "cohere": "cohere",
    "ollama": "ollama",
    "bedrock": "",
}
"""The package whose typed objects ``form="sdk"`` gives per wire (boto3 yields plain dicts)."""


class SdkUnavailableError(CallgateError, ImportError):
    """``form="sdk"`` was asked for a wire whose SDK is not installed."""


@cache
def _validator(wire: str) -> Callable[[dict[str, Any]], Any]:
    """The SDK's own parser of one chunk of ``wire``."""
    try:
        # The openai and anthropic clients build their objects without validating them
        # (construct_type): a chunk the types do not foresee still reaches the caller.
        if wire == "openai":
            from openai._models import construct_type as openai_construct
            from openai.types.chat import ChatCompletionChunk

            return lambda chunk: openai_construct(type_=ChatCompletionChunk, value=chunk)
        if wire == "openai-responses":
            from openai._models import construct_type as openai_construct
            from openai.types.responses import ResponseStreamEvent

            return lambda chunk: openai_construct(type_=ResponseStreamEvent, value=chunk)
        if wire == "anthropic":
            from anthropic._models import construct_type as anthropic_construct
            from anthropic.types import RawMessageStreamEvent

            return lambda chunk: anthropic_construct(type_=RawMessageStreamEvent, value=chunk)
        if wire == "gemini":
            from google.genai import types

            return types.GenerateContentResponse.model_validate
        if wire == "cohere":
            from pydantic import TypeAdapter

            cohere = importlib.import_module("cohere")
            adapter: TypeAdapter[Any] = TypeAdapter(cohere.StreamedChatResponseV2)
            return adapter.validate_python
        if wire == "ollama":
            ollama = importlib.import_module("ollama")
            validate: Callable[[dict[str, Any]], Any] = ollama.ChatResponse.model_validate
            return validate
    except ImportError as exc:
        raise SdkUnavailableError(
            f"form='sdk' for {wire} needs the {SDK_PACKAGES[wire]} package: "
            f"pip install {SDK_PACKAGES[wire]} ({exc})"
        ) from None
    return dict


def to_sdk(wire: str, chunk: dict[str, Any]) -> Any:
    """``chunk`` as the wire's official SDK yields it.

    openai and anthropic objects are built as those clients build them, without
    validation (``construct_type``); google-genai's are validated, as that client does.
    Bedrock stays a dict (boto3 yields dicts). A chunk a validating SDK refuses (an
    injected fault can make one) stays a plain dict: that SDK would fail on it before
    your adapter saw it. Raises :class:`SdkUnavailableError` when the SDK is missing.
    """
    validate = _validator(wire)
    try:
        return validate(chunk)
    except ValueError:
        return chunk


def sdk_available(wire: str) -> bool:
    """Whether the SDK that ``form="sdk"`` needs for ``wire`` is installed."""
    try:
        _validator(wire)
    except SdkUnavailableError:
        return False
    return True


def _json(chunk: dict[str, Any]) -> bytes:
    return json.dumps(chunk, ensure_ascii=False, separators=(",", ":")).encode()


_NAMED_EVENTS = frozenset({"anthropic", "openai-responses"})
_LINES = frozenset({"ollama", "bedrock"})


def raw_stream(wire: str, chunks: Sequence[dict[str, Any]], *, last: bool = True) -> bytes:
    """The bytes a client reads for ``chunks``.

    Server-sent events for the HTTP wires (named events for Anthropic and Responses, CRLF
    for Gemini's ``alt=sse``, OpenAI's ``[DONE]`` at the end); JSON lines for Ollama and
    for Bedrock (what boto3 yields, one event a line: the AWS event-stream framing
    itself is binary and is not generated). ``last``: close the stream (``[DONE]``).
    """
    out = bytearray()
    for chunk in chunks:
        if wire in _LINES:
            out += _json(chunk) + b"\n"
        elif wire in _NAMED_EVENTS:
            out += b"event: " + str(chunk.get("type", "")).encode() + b"\ndata: " + _json(chunk)
            out += b"\n\n"
        elif wire == "gemini":
            out += b"data: " + _json(chunk) + b"\r\n\r\n"
        else:
            out += b"data: " + _json(chunk) + b"\n\n"
    if last and wire == "openai":
        out += b"data: [DONE]\n\n"
    return bytes(out)
