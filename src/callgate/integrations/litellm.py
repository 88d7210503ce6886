"""callgate as a LiteLLM guardrail: what LiteLLM hands its client is gated as the proxy gates it.

:class:`CallgateGuardrail` is a LiteLLM ``CustomGuardrail``. In LiteLLM's proxy it is
named in ``config.yaml`` (``guardrails:``, ``mode: post_call``) and rewrites every
response on its way to the client: streamed through
``async_post_call_streaming_iterator_hook``, whole through
``async_post_call_success_hook`` (both defined on this class itself, since LiteLLM only
runs the hooks a guardrail's own class defines). Each turn is played through the proxy's
engine (:class:`callgate.proxy.engine.GatedTurn`) made from the request (its ``tools``,
``model``, ``tool_choice``): markup of a call is held back, a call leaked into the text
becomes a native ``tool_calls`` entry, calls reach the client only once the gate accepts
them, a refused call is handled by ``on_blocked`` (``notice``, ``repair``, ``pass``), and the
findings are logged (logger ``callgate.integrations``) and carried in the final chunk's
``callgate`` field.

LiteLLM's SDK has no hook that may rewrite a stream (its stream wrapper hands each chunk
to the caller as it is made), so an SDK user wraps the stream instead:
:meth:`CallgateGuardrail.stream` and :meth:`CallgateGuardrail.astream` for
``litellm.completion(..., stream=True)`` and ``litellm.acompletion``,
:meth:`CallgateGuardrail.gate_response` for a whole response.

It fails closed: a chunk that cannot be read ends the turn with no call; an error inside
the guardrail is raised to LiteLLM (whose client then gets an error, never a call).
"""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any

import litellm
from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.guardrails import GuardrailEventHooks
from litellm.types.utils import Delta, ModelResponse, ModelResponseStream, StreamingChoices

from callgate.integrations.common import (
    LOG,
    ON_BLOCKED,
    REPAIRS,
    as_dict,
    options,
    report,
)
from callgate.integrations.released import unchanged
from callgate.proxy.engine import GatedTurn
from callgate.proxy.fastjson import strict_loads

__all__ = ["CallgateGuardrail"]

_REQUEST_KEYS = ("model", "tools", "tool_choice", "messages", "n")
"""What the engine reads of a request (``messages`` only for a repair's history)."""


def provider_finish_was_null(data: Mapping[str, Any]) -> bool:
    """Whether the provider's own whole response had ``finish_reason: null``.

    LiteLLM rewrites a null finish reason before any hook sees the response; the one copy
    that survives is the provider's response text its logging object keeps
    (``data["litellm_logging_obj"].model_call_details["original_response"]``, set by the
    OpenAI-compatible handlers before they convert the response). False when that copy
    is absent or unreadable.
    """
    details = getattr(data.get("litellm_logging_obj"), "model_call_details", None)
    original = details.get("original_response") if isinstance(details, dict) else None
    if isinstance(original, (str, bytes)):
        try:
            original = strict_loads(original)
        except ValueError:
            return False
    choices = original.get("choices") if isinstance(original, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    return isinstance(first, dict) and "finish_reason" in first and first["finish_reason"] is None


def _request(data: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a LiteLLM request body the engine reads."""
    return {k: data[k] for k in _REQUEST_KEYS if data.get(k) is not None}


Reask = Callable[[Mapping[str, Any]], Awaitable[AsyncIterable[Any]]]
"""Sends a repair's request upstream and gives the answer's stream."""


def _again(request: Mapping[str, Any], repair: Mapping[str, Any]) -> dict[str, Any]:
    """``litellm.completion``'s keywords for a repair: the request, its messages extended."""
    return {**request, "messages": repair["messages"], "stream": True}


def _as_chunk(response: Mapping[str, Any]) -> dict[str, Any]:
    """A whole response's message as one chunk (to assemble it again with more chunks)."""
    message = dict(response["choices"][0]["message"])
    calls = message.get("tool_calls") or []
    message["tool_calls"] = [{**c, "index": n} for n, c in enumerate(calls)]
    return {"choices": [{"index": 0, "delta": message, "finish_reason": None}]}


_PLAIN = (str, int, float, bool)
"""Values a plain chunk's fields hold (a model's own JSON dump is then the value itself)."""


def _plain_fields(model: Any, into: dict[str, Any], nested: str) -> Any:
    """Copy ``model``'s set fields into ``into`` when each is plain; its ``nested`` field back.

    False when some other field holds anything but a plain value.
    """
    inner: Any = None
    extra = model.__pydantic_extra__
    for fields in (model.__dict__, extra) if extra else (model.__dict__,):
        for key, value in fields.items():
            if key == nested:
                inner = value
            elif value is None:
                continue
            elif type(value) in _PLAIN:
                into[key] = value
            else:
                return False
    return inner


def lean_chunk(chunk: ModelResponseStream) -> dict[str, Any] | None:
    """A plain text chunk as ``model_dump(exclude_none=True)`` gives it, read off its fields.

    Plain: one choice, and no field but plain values (text, numbers, the role, ids); its
    choice's null finish reason is kept as ``None``. Any other chunk (calls, usage, several
    choices, a nested object) is None: dump it. Dumping a LiteLLM chunk costs more than
    gating it.
    """
    out: dict[str, Any] = {}
    choices = _plain_fields(chunk, out, "choices")
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not StreamingChoices:
        return None
    choice: dict[str, Any] = {"finish_reason": None}
    delta = _plain_fields(choices[0], choice, "delta")
    if type(delta) is not Delta:
        return None
    written: dict[str, Any] = {}
    if _plain_fields(delta, written, "") is False:
        return None
    choice["delta"] = written
    out["choices"] = [choice]
    return out


class CallgateGuardrail(CustomGuardrail):
    """A LiteLLM guardrail that gates tool calls with callgate's machines (``mode: post_call``).

    ``on_blocked`` is ``repair`` (the default, as in the proxy: ask the upstream again, up
    to ``repairs`` times (2), with the call and a corrective tool result, and stream the
    repaired turn; a whole response ends as ``notice``), ``notice`` (end the turn without
    the refused call: one short line in the text says which call and why, the detail is in
    the ``callgate`` field) or ``pass`` (forward a schema-invalid call, annotated).
    ``text_formats`` (a list, or a comma-separated string) replaces the formats read from
    the request's model. Every other keyword is
    LiteLLM's (``guardrail_name``, ``event_hook``, ``default_on``, ...).
    """

    def __init__(
        self,
        *,
        on_blocked: str = ON_BLOCKED,
        repairs: int = REPAIRS,
        text_formats: str | Sequence[str] | None = None,
        move_reasoning: bool = False,
        **kwargs: Any,
    ) -> None:
        self.options = options(
            on_blocked=on_blocked,
            repairs=repairs,
            text_formats=text_formats,
            move_reasoning=move_reasoning,
        )
        kwargs.setdefault("supported_event_hooks", [GuardrailEventHooks.post_call])
        super().__init__(**kwargs)
        self.last_turn: GatedTurn | None = None
        """The most recent turn gated (its verdict, findings and calls), for inspection."""

    def turn(self, request: Mapping[str, Any]) -> GatedTurn:
        """A fresh gated turn for one request body (its tools, model and tool_choice)."""
        turn = GatedTurn(_request(request), self.options)
        self.last_turn = turn
        return turn

    def _name(self) -> str:
        return f"guardrail {self.guardrail_name or type(self).__name__}"

    # -- streams ------------------------------------------------------------------------

    def stream(
        self, chunks: Iterable[Any], request: Mapping[str, Any]
    ) -> Iterator[ModelResponseStream]:
        """The gated stream of ``chunks`` (LiteLLM's ``ModelResponseStream`` or plain dicts).

        ``request`` is the body the stream answers (``litellm.completion``'s keywords);
        under ``on_blocked: repair`` it is sent again, with the refused call and a
        corrective tool result added to its messages, through ``litellm.completion``.
        """
        turn = self.turn(request)
        for chunk in chunks:
            yield from self._fed(turn, chunk)
        yield from self._out(turn.finish())
        while turn.repair is not None:
            try:
                again = litellm.completion(**_again(request, turn.repair))
            except Exception:  # the re-ask failed: end as notice does
                LOG.exception("%s: the repair request failed", self._name())
                yield from self._out(turn.give_up())
                break
            turn = self._follow(turn)
            for chunk in again:
                yield from self._fed(turn, chunk)
            yield from self._out(turn.finish())
        report(turn, self._name())

    async def astream(
        self,
        chunks: AsyncIterable[Any],
        request: Mapping[str, Any],
        reask: Reask | None = None,
    ) -> AsyncGenerator[ModelResponseStream, None]:
        """:meth:`stream` for an async stream (``litellm.acompletion``, the proxy's).

        ``reask`` sends a repair's request (by default ``litellm.acompletion`` with
        ``request``'s other keywords; in the proxy, the proxy's router).
        """
        turn = self.turn(request)
        async for chunk in chunks:
            for out in self._fed(turn, chunk):
                yield out
        for out in self._out(turn.finish()):
            yield out
        while turn.repair is not None:
            try:
                if reask is not None:
                    again = await reask(turn.repair)
                else:
                    again = await litellm.acompletion(**_again(request, turn.repair))
            except Exception:  # the re-ask failed: end as notice does
                LOG.exception("%s: the repair request failed", self._name())
                for out in self._out(turn.give_up()):
                    yield out
                break
            turn = self._follow(turn)
            async for chunk in again:
                for out in self._fed(turn, chunk):
                    yield out
            for out in self._out(turn.finish()):
                yield out
        report(turn, self._name())

    def _follow(self, turn: GatedTurn) -> GatedTurn:
        report(turn, self._name())
        follow = turn.follow_up()
        self.last_turn = follow
        return follow

    def _fed(self, turn: GatedTurn, chunk: Any) -> list[ModelResponseStream]:
        """What ``turn`` releases of one chunk, LiteLLM's own object where it came out as is.

        See :mod:`~callgate.integrations.released`; any other chunk is built anew. A plain
        text chunk is read off its fields (:func:`lean_chunk`) and the engine says whether
        it goes on as it came.
        """
        if type(chunk) is ModelResponseStream:
            lean = lean_chunk(chunk)
            if lean is not None:
                released = turn.feed_unchanged(lean)
                return [chunk] if released is None else list(self._out(released))
        dumped = as_dict(chunk)
        released = turn.feed(dumped)
        if not released:
            return []
        if (
            len(released) == 1
            and type(chunk) is ModelResponseStream
            and unchanged(released[0], dumped)
        ):
            return [chunk]
        return list(self._out(released))

    @staticmethod
    def _out(chunks: list[dict[str, Any]]) -> Iterator[ModelResponseStream]:
        for chunk in chunks:
            note = chunk.pop("callgate", None)
            made = ModelResponseStream(**chunk)
            if note is not None:
                made.callgate = note  # type: ignore[attr-defined]
            yield made

    # -- whole responses ----------------------------------------------------------------

    def gate_response(
        self, response: ModelResponse, request: Mapping[str, Any], *, provider_null: bool = False
    ) -> ModelResponse:
        """A whole (``stream=False``) response through the same gate: the one to hand on.

        ``provider_null``: the provider's own response had a null finish reason, which
        LiteLLM rewrote (``stop``, or ``tool_calls`` beside calls); it is gated as the
        provider sent it, as the gateway gates it (a clean end, a warning).
        """
        turn = self.turn(request)
        given = as_dict(response)
        if provider_null and given.get("choices"):
            given["choices"][0]["finish_reason"] = None
        gated = turn.whole(given)
        if turn.repair is not None:  # a guardrail cannot re-ask the upstream: a notice
            gated = turn.assemble(gated, [_as_chunk(gated), *turn.give_up()])
        report(turn, self._name())
        note = gated.pop("callgate", None)
        made = ModelResponse(**gated)
        if note is not None:
            made.callgate = note  # type: ignore[attr-defined]
        return made

    # -- LiteLLM's proxy hooks (defined here: LiteLLM runs only a leaf class's own) -------

    @staticmethod
    async def _router_reask(repair: Mapping[str, Any]) -> Any:
        """A repair's request sent through the proxy's router (no guardrail runs on it)."""
        from litellm.proxy.proxy_server import llm_router

        if llm_router is None:
            raise RuntimeError("the proxy has no router to send a repair through")
        return await llm_router.acompletion(**{**repair, "stream": True})

    def async_post_call_streaming_iterator_hook(
        self,
        user_api_key_dict: Any,
        response: Any,
        request_data: dict[str, Any],
    ) -> AsyncGenerator[ModelResponseStream, None]:
        """The proxy's stream to its client, gated (LiteLLM calls it with ``mode: post_call``).

        :meth:`astream`'s own generator, handed to LiteLLM as it is: no layer per chunk.
        """
        return self.astream(response, request_data, self._router_reask)

    async def async_post_call_success_hook(
        self,
        data: dict[str, Any],
        user_api_key_dict: Any,
        response: Any,
    ) -> Any:
        """A whole chat response, gated; any other response (embeddings, ...) is left alone."""
        if not isinstance(response, ModelResponse):
            return None
        return self.gate_response(response, data, provider_null=provider_finish_was_null(data))
