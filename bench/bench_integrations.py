"""What callgate adds per chunk inside LiteLLM and pydantic-ai, side by side in one run.

Run: ``python bench/bench_integrations.py`` (needs ``callgate[litellm,pydantic-ai]``;
``--quick`` uses shorter streams). bench_driver's three OpenAI streams: prose in 1-8
character deltas; the same prose with a call leaked into the text every 2 KB (Hermes
``<tool_call>``, read as the request's model is a Qwen2.5); one native call whose
arguments come in 4-character fragments. Each is
served by an in-process HTTP transport (``httpx.MockTransport``: no socket, so the CPU
time is the framework's and callgate's) and read, in one run, by:

- **litellm**: ``litellm.completion(stream=True)``, every chunk read;
- **litellm + callgate**: the same stream through ``CallgateGuardrail.stream``;
- **hook**: LiteLLM's proxy hook alone over the same LiteLLM chunks, already made: the
  default pass-through (``async for c in response: yield c``) against
  ``CallgateGuardrail.async_post_call_streaming_iterator_hook``: what the guardrail adds
  to each chunk a LiteLLM proxy sends;
- **pydantic-ai**: ``OpenAIChatModel.request_stream``, every event read;
- **pydantic-ai + callgate**: ``CallgateModel`` around it.

Times are the best CPU time of three rounds (each round runs every reader in turn, so the
ratios are taken under the same load), in microseconds per upstream chunk; ``added`` is
the difference, ``x`` the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx
import openai
from bench_driver import SCHEMA, native, prose

FRAMEWORKS = {"litellm": "callgate[litellm]", "pydantic_ai": "callgate[pydantic-ai]"}
"""The frameworks measured, by module, and the extra that installs each."""

try:  # optional: main() names the framework that is missing instead of a traceback
    import litellm
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.tools import ToolDefinition

    from callgate.integrations.litellm import CallgateGuardrail
    from callgate.integrations.pydantic_ai import CallgateModel
except ModuleNotFoundError:
    pass

MODEL = "Qwen/Qwen2.5-7B-Instruct"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}]


def sse(chunks: list[dict[str, Any]]) -> bytes:
    events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return events + b"data: [DONE]\n\n"


def transport(body: bytes) -> httpx.MockTransport:
    headers = {"content-type": "text/event-stream"}
    return httpx.MockTransport(lambda _: httpx.Response(200, content=body, headers=headers))


REQUEST = {
    "model": "openai/" + MODEL,
    "messages": [{"role": "user", "content": "go"}],
    "tools": TOOLS,
}


def litellm_alone(body: bytes) -> None:
    client = openai.OpenAI(api_key="sk-bench", http_client=httpx.Client(transport=transport(body)))
    for _ in litellm.completion(**REQUEST, stream=True, client=client):
        pass


def litellm_gated(body: bytes) -> None:
    client = openai.OpenAI(api_key="sk-bench", http_client=httpx.Client(transport=transport(body)))
    guard = CallgateGuardrail()
    for _ in guard.stream(litellm.completion(**REQUEST, stream=True, client=client), REQUEST):
        pass


async def _items(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def _passthrough(response: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for item in response:
        yield item


def hook_alone(made: list[Any]) -> None:
    async def go() -> None:
        async for _ in _passthrough(_items(made)):
            pass

    asyncio.run(go())


def hook_gated(made: list[Any]) -> None:
    guard = CallgateGuardrail()

    async def go() -> None:
        hook = guard.async_post_call_streaming_iterator_hook(None, _items(made), REQUEST)
        async for _ in hook:
            pass

    asyncio.run(go())


def pydantic_model(body: bytes) -> OpenAIChatModel:
    http = httpx.AsyncClient(transport=transport(body))
    client = openai.AsyncOpenAI(api_key="sk-bench", http_client=http)
    return OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))


@functools.cache
def parameters() -> ModelRequestParameters:
    """The request's one tool, as pydantic-ai takes it (made once, outside the timing)."""
    return ModelRequestParameters(
        function_tools=[ToolDefinition(name="lookup", parameters_json_schema=SCHEMA)]
    )


def pydantic_read(model: Any) -> None:
    request = parameters()

    async def go() -> None:
        messages = [ModelRequest(parts=[UserPromptPart("go")])]
        async with model.request_stream(messages, None, request) as stream:
            async for _ in stream:
                pass

    asyncio.run(go())


def pydantic_alone(body: bytes) -> None:
    pydantic_read(pydantic_model(body))


def pydantic_gated(body: bytes) -> None:
    pydantic_read(CallgateModel(pydantic_model(body)))


def best(runs: list[Callable[[], None]], rounds: int = 3) -> list[float]:
    """The best CPU time of each run over ``rounds`` rounds, each round running all in turn."""
    times = [float("inf")] * len(runs)
    for _ in range(rounds):
        for n, run in enumerate(runs):
            started = time.process_time()
            run()
            times[n] = min(times[n], time.process_time() - started)
    return times


def missing_frameworks() -> list[str]:
    """Each framework this benchmark needs that cannot be imported, with how to install it."""
    missing = []
    for module, extra in FRAMEWORKS.items():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError:
            missing.append(f"{module} (pip install '{extra}')")
    return missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 KB streams instead of 100 KB")
    args = parser.parse_args()
    missing = missing_frameworks()
    if missing:
        print(f"bench_integrations: needs {' and '.join(missing)}: not installed", file=sys.stderr)
        sys.exit(2)
    size = 20_000 if args.quick else 100_000
    streams = {
        "prose": prose(size, calls=False),
        "prose + leaked calls": prose(size, calls=True),
        "native call": native(size),
    }
    litellm_alone(sse(prose(100, calls=True)))  # first-use costs (imports, caches) out of the way
    head = ("stream", "chunks", "reader", "alone", "callgate", "added", "x")
    print("{:<22}{:>8}  {:<12}{:>9}{:>10}{:>9}{:>7}".format(*head))
    for name, chunks in streams.items():
        for reader, alone, gated in measured(chunks):
            print(
                f"{name:<22}{len(chunks):>8}  {reader:<12}{alone:>9.1f}{gated:>10.1f}"
                f"{gated - alone:>9.1f}{gated / alone:>7.2f}"
            )


def measured(chunks: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """Per reader: microseconds per chunk alone and with callgate, best of three rounds."""
    body = sse(chunks)
    http = httpx.Client(transport=transport(body))
    made = list(
        litellm.completion(
            **REQUEST, stream=True, client=openai.OpenAI(api_key="sk-bench", http_client=http)
        )
    )
    pairs = {
        "litellm": (lambda: litellm_alone(body), lambda: litellm_gated(body)),
        "hook": (lambda: hook_alone(made), lambda: hook_gated(made)),
        "pydantic-ai": (lambda: pydantic_alone(body), lambda: pydantic_gated(body)),
    }
    times = best([run for pair in pairs.values() for run in pair])
    return [
        (reader, times[2 * n] * 1e6 / len(chunks), times[2 * n + 1] * 1e6 / len(chunks))
        for n, reader in enumerate(pairs)
    ]


if __name__ == "__main__":
    main()
