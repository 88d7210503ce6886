"""callgate as a pydantic-ai model: the wrapped model's parts re-emitted only once callgate allows.

:class:`CallgateModel` is a pydantic-ai ``WrapperModel``. Its ``request_stream`` returns
a :class:`GatedStreamedResponse` that plays the wrapped model's events through the
proxy's engine (:class:`callgate.proxy.engine.GatedTurn`) as the OpenAI Chat Completions
deltas they stand for (text as ``content``, each tool-call part at its part index) and
re-emits what comes out: text as callgate's display releases it (markup of a call never
shown), and tool calls only once the turn's terminal evidence is in and the gate accepted
them, including calls the wrapped model leaked into its text in the formats of its model
name. ``request`` does the same on the whole message. Thinking and provider-side parts
are never calls: they pass through as they came.

The turn's terminal evidence is the finish reason the wrapped model recorded from its
provider (``provider_details['finish_reason']``): a stream that ended without one (cut,
or a model that records none) gives none, and its calls are withheld, as in the proxy.
The findings are logged (logger ``callgate.integrations``) and put in the response's
``provider_details['callgate']``. Under ``on_blocked="repair"`` (the default, as in the
proxy) a refused call is sent back to the wrapped model with a corrective retry prompt, up
to ``repairs`` times, and the repaired turn continues the same response.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from attrs import evolve
from pydantic_ai.messages import (
    FinishReason,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartStartEvent,
    RetryPromptPart,
    TextPart,
    TextPartDelta,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
)
from pydantic_ai.models import KnownModelName, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from callgate.integrations.common import ON_BLOCKED, REPAIRS, options, report
from callgate.proxy.engine import GatedTurn, Options, fresh_id
from callgate.strategies import WIRE_RECORDS
from callgate.strategies.text.defaults import default_text_formats

__all__ = ["CallgateModel", "GatedStreamedResponse"]

_WIRES = {system: w.name for w in WIRE_RECORDS.values() for system in w.systems}
"""pydantic-ai's ``system`` names whose leak families callgate reads (the rest: OpenAI's),
as each wire's record lists them (``systems``)."""

_FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_call": "tool_calls",
}
"""pydantic-ai's finish reasons as OpenAI's (``error`` and none: no terminal evidence)."""

_BACK: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_call",
}
"""The gated turn's finish reason as pydantic-ai's."""


def _wire(system: str) -> str:
    return next((wire for prefix, wire in _WIRES.items() if system.startswith(prefix)), "openai")


def _args(args: str | Mapping[str, Any] | None) -> str:
    """Tool-call arguments as the JSON text the OpenAI wire carries."""
    if args is None:
        return ""
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _finish(response: ModelResponse | StreamedResponse) -> str | None:
    """The OpenAI finish reason of the wrapped model's turn, or None without evidence."""
    raw = (response.provider_details or {}).get("finish_reason")
    if not isinstance(raw, str) or not raw or response.finish_reason is None:
        return None
    return _FINISH.get(response.finish_reason)


class _Deltas:
    """The wrapped model's events as OpenAI chunk deltas; thinking and other parts kept aside."""

    def __init__(self) -> None:
        self.kinds: dict[int, str] = {}
        """Per part index of the wrapped response: ``text``, ``call`` or ``other``."""

    def start(self, index: int, part: ModelResponsePart) -> dict[str, Any] | None:
        """The delta of a part's start, or None for a part that is not gated."""
        if isinstance(part, TextPart):
            self.kinds[index] = "text"
            return {"content": part.content}
        if isinstance(part, ToolCallPart):
            self.kinds[index] = "call"
            entry = {
                "index": index,
                "id": part.tool_call_id,
                "type": "function",
                "function": {"name": part.tool_name, "arguments": _args(part.args)},
            }
            return {"tool_calls": [entry]}
        self.kinds[index] = "other"
        return None

    def delta(self, index: int, delta: Any) -> dict[str, Any] | None:
        """The delta of a part's update, or None for a part that is not gated."""
        kind = self.kinds.get(index)
        if kind == "text" and isinstance(delta, TextPartDelta):
            return {"content": delta.content_delta}
        if kind == "call" and isinstance(delta, ToolCallPartDelta):
            function: dict[str, Any] = {"arguments": _args(delta.args_delta)}
            if delta.tool_name_delta:
                function["name"] = delta.tool_name_delta
            entry: dict[str, Any] = {"index": index, "function": function}
            if delta.tool_call_id:
                entry["id"] = delta.tool_call_id
            return {"tool_calls": [entry]}
        return None


def repair_messages(turn: GatedTurn) -> list[ModelMessage]:
    """The refused calls and a corrective retry prompt for each: what a repair sends back.

    The prompt is the model-facing detail (the finding and what to send instead).
    """
    ids = [r.call.id or fresh_id() for r in turn.withheld]
    calls: list[ModelResponsePart] = [
        ToolCallPart(r.call.name, dict(r.call.arguments), i)
        for r, i in zip(turn.withheld, ids, strict=True)
    ]
    prompts: list[Any] = [
        RetryPromptPart(content=r.content, tool_name=r.call.name, tool_call_id=i)
        for r, i in zip(turn.withheld, ids, strict=True)
    ]
    return [ModelResponse(parts=calls), ModelRequest(parts=prompts)]


Reask = Callable[[list[ModelMessage]], AbstractAsyncContextManager[StreamedResponse]]
"""Opens the wrapped model's stream for a repair's messages."""


def _text(text: str) -> list[ModelResponsePart]:
    return [TextPart(text)] if text else []


def _chunk(delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}],
    }


@dataclass
class GatedStreamedResponse(StreamedResponse):
    """The wrapped model's stream with text and tool-call parts re-emitted as callgate allows."""

    inner: StreamedResponse = field(kw_only=True)
    turn: GatedTurn = field(kw_only=True)
    where: str = field(default="CallgateModel", kw_only=True)
    messages: list[ModelMessage] = field(default_factory=list, kw_only=True)
    """The request's messages (a repair extends them)."""
    reask: Reask | None = field(default=None, kw_only=True)
    """Opens the wrapped model's stream again for a repair (None: no repair is asked)."""

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        async for out in self._play(self.inner):
            yield out
        messages = list(self.messages)
        while self.turn.repair is not None:
            if self.reask is None:
                for out in self._chunks(self.turn.give_up()):
                    yield out
                break
            report(self.turn, self.where)
            messages += repair_messages(self.turn)
            self.turn = self.turn.follow_up()
            async with self.reask(messages) as inner:
                async for out in self._play(inner):
                    yield out
        note = report(self.turn, self.where)
        self.provider_details = {**(self.provider_details or {}), "callgate": note}

    def _chunks(self, chunks: list[dict[str, Any]]) -> list[ModelResponseStreamEvent]:
        return [out for chunk in chunks for out in self._emit(chunk)]

    async def _play(self, inner: StreamedResponse) -> AsyncIterator[ModelResponseStreamEvent]:
        """One wrapped stream through the current turn: its events as callgate allows."""
        deltas = _Deltas()
        feed = self.turn.feed
        async for event in inner:
            if isinstance(event, PartStartEvent):
                delta = deltas.start(event.index, event.part)
                if delta is None:
                    yield self._parts_manager.handle_part(
                        vendor_part_id=("inner", event.index), part=event.part
                    )
                    continue
            elif isinstance(event, PartDeltaEvent):
                delta = deltas.delta(event.index, event.delta)
                if delta is None:
                    for passed in self._pass_delta(event):
                        yield passed
                    continue
            else:  # PartEndEvent, FinalResultEvent: this response makes its own
                continue
            for chunk in feed(_chunk(delta)):
                for out in self._emit(chunk):
                    yield out
        for out in self._chunks(self.turn.feed(_chunk({}, _finish(inner))) + self.turn.finish()):
            yield out
        self._usage = inner.usage
        self.provider_response_id = inner.provider_response_id
        self.provider_details = dict(inner.provider_details or {})

    def _pass_delta(self, event: PartDeltaEvent) -> list[ModelResponseStreamEvent]:
        """A thinking delta applied to the passed-through part (other parts keep their start)."""
        delta = event.delta
        if not isinstance(delta, ThinkingPartDelta):
            return []
        return list(
            self._parts_manager.handle_thinking_delta(
                vendor_part_id=("inner", event.index),
                content=delta.content_delta,
                signature=delta.signature_delta,
                provider_name=delta.provider_name,
            )
        )

    def _emit(self, chunk: Mapping[str, Any]) -> list[ModelResponseStreamEvent]:
        """The events of one gated chunk: its text, its calls, its finish reason."""
        events: list[ModelResponseStreamEvent] = []
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                events += self._parts_manager.handle_text_delta(
                    vendor_part_id="content", content=text
                )
            for entry in delta.get("tool_calls") or ():
                function = entry.get("function") or {}
                events.append(
                    self._parts_manager.handle_tool_call_part(
                        vendor_part_id=("call", entry["index"]),
                        tool_name=function.get("name") or "",
                        args=function.get("arguments") or None,
                        tool_call_id=entry.get("id"),
                    )
                )
            reason = choice.get("finish_reason")
            if reason:
                self.finish_reason = _BACK.get(reason, "stop")
        return events

    async def close_stream(self) -> None:
        await self.inner.close_stream()

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def provider_name(self) -> str | None:
        return self.inner.provider_name

    @property
    def provider_url(self) -> str | None:
        return self.inner.provider_url

    @property
    def timestamp(self) -> datetime:
        return self.inner.timestamp


class CallgateModel(WrapperModel):
    """A pydantic-ai model whose text and tool calls pass callgate's display and gate first.

    ``CallgateModel(OpenAIChatModel(...))`` (or a model name pydantic-ai knows). The text
    formats read are those of the wrapped model's name (``text_formats`` replaces them);
    ``on_blocked`` is ``repair`` (the default, as in the proxy: the refused call goes back
    to the wrapped model with a corrective retry prompt, up to ``repairs`` times, 2),
    ``notice`` (the turn ends without the refused call; one short line in the text says
    which and why) or ``pass`` (a schema-invalid call is handed on, annotated: pydantic-ai's
    own argument validation then asks the model again).
    """

    def __init__(
        self,
        wrapped: Model | KnownModelName,
        *,
        on_blocked: str = ON_BLOCKED,
        repairs: int = REPAIRS,
        text_formats: str | Sequence[str] | None = None,
    ) -> None:
        super().__init__(wrapped)
        given = options(on_blocked=on_blocked, repairs=repairs, text_formats=text_formats)
        formats = given.text_formats
        if formats is None:
            formats = default_text_formats(_wire(self.wrapped.system), self.wrapped.model_name)
        self.options: Options = evolve(given, text_formats=formats)
        self.last_turn: GatedTurn | None = None
        """The most recent turn gated (its verdict, findings and calls), for inspection."""

    def turn(self, parameters: ModelRequestParameters) -> GatedTurn:
        """A fresh gated turn for one request: its function and output tools declared."""
        tools = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description or "",
                    "parameters": tool.parameters_json_schema,
                },
            }
            for tool in parameters.tool_defs.values()
        ]
        request: dict[str, Any] = {"model": self.wrapped.model_name, "tools": tools}
        turn = GatedTurn(request, self.options)
        self.last_turn = turn
        return turn

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """The wrapped model's whole response, gated: its parts as one stream's would be.

        A repair asks the wrapped model again; the text of the refused answer comes first.
        """
        turn: GatedTurn = self.turn(model_request_parameters)
        before: list[str] = []
        while True:
            response = await self.wrapped.request(
                messages, model_settings, model_request_parameters
            )
            gated, kept = self._whole(turn, response)
            if turn.repair is None:
                break
            before.append(gated["choices"][0]["message"].get("content") or "")
            report(turn, "CallgateModel")
            messages = [*messages, *repair_messages(turn)]
            turn = turn.follow_up()
            self.last_turn = turn
        return self._response(turn, response, gated, [*kept, *_text("".join(before))])

    @staticmethod
    def _whole(
        turn: GatedTurn, response: ModelResponse
    ) -> tuple[dict[str, Any], list[ModelResponsePart]]:
        """A whole response's text and calls through ``turn``, and its other parts.

        The first is the engine's whole response; the other parts are kept as they came.
        """
        deltas = _Deltas()
        kept: list[ModelResponsePart] = []
        message: dict[str, Any] = {"role": "assistant"}
        content: list[str] = []
        calls: list[dict[str, Any]] = []
        for index, part in enumerate(response.parts):
            delta = deltas.start(index, part)
            if delta is None:
                kept.append(part)
            elif "content" in delta:
                content.append(delta["content"])
            else:
                calls += delta["tool_calls"]
        if content:
            message["content"] = "".join(content)
        if calls:
            message["tool_calls"] = calls
        finish = _finish(response)
        gated = turn.whole(
            {
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            },
            clean=False,  # rebuilt: no finish reason here means the provider's was lost
        )
        return gated, kept

    @staticmethod
    def _response(
        turn: GatedTurn,
        response: ModelResponse,
        gated: dict[str, Any],
        parts: list[ModelResponsePart],
    ) -> ModelResponse:
        """The response to hand on: ``parts``, then the gated text and calls.

        ``parts``: the parts kept as they came, and the text of answers a repair replaced.
        """
        note = report(turn, "CallgateModel")
        out = gated["choices"][0]
        text = out["message"].get("content")
        if text:
            parts.append(TextPart(text))
        for call in out["message"].get("tool_calls") or ():
            parts.append(
                ToolCallPart(
                    call["function"]["name"], call["function"]["arguments"] or None, call["id"]
                )
            )
        reason = out.get("finish_reason")
        return replace(
            response,
            parts=parts,
            finish_reason=_BACK.get(reason, "stop") if isinstance(reason, str) else None,
            provider_details={**(response.provider_details or {}), "callgate": note},
        )

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """The wrapped model's stream, gated (see :class:`GatedStreamedResponse`)."""
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as inner:

            def reask(again: list[ModelMessage]) -> AbstractAsyncContextManager[StreamedResponse]:
                return self.wrapped.request_stream(
                    again, model_settings, model_request_parameters, run_context
                )

            yield GatedStreamedResponse(
                model_request_parameters=model_request_parameters,
                inner=inner,
                turn=self.turn(model_request_parameters),
                messages=messages,
                reask=reask,
            )
