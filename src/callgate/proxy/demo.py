"""``callgate proxy --demo``: the proxy in front of an upstream that replays sample streams.

The upstream answers by the request's ``model``: ``qwen3-coder`` writes its call into the
content as Qwen3-Coder XML (a server without a tool parser); ``parallel-calls`` sends
three native calls at once; ``truncated-call`` stops mid-arguments with
``finish_reason: "length"``. Straight from the upstream a client gets the markup as text
and a half call; through callgate it gets native calls, or none.
"""

from __future__ import annotations

import copy
import json
import shlex
from importlib.resources import files
from typing import Any

from callgate.proxy.upstream import ReplayUpstream, Script, sse_body, whole_body, whole_response

__all__ = ["DEMO_MODELS", "demo_request", "demo_upstream", "instructions"]


def _scenario(name: str) -> dict[str, Any]:
    folder = files("callgate").joinpath("examples").joinpath("demo")
    text = folder.joinpath(name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _tools(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": name, "parameters": schema}}
        for tools in scenario["drivers"].values()
        for name, schema in tools.items()
    ]


def _truncated(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parallel turn cut in its second call's arguments, ending with ``length``."""
    seen = 0
    for at, chunk in enumerate(chunks):
        delta = chunk["choices"][0]["delta"] if chunk.get("choices") else {}
        for call in delta.get("tool_calls") or []:
            if call.get("index") == 1 and (call.get("function") or {}).get("arguments"):
                seen += 1
                if seen == 2:
                    end = copy.deepcopy(chunk)
                    end["choices"][0] = {"index": 0, "delta": {}, "finish_reason": "length"}
                    return [*chunks[: at + 1], end]
    return chunks


def _streams() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    parallel = _scenario("1_openai_parallel_calls.json")
    qwen = _scenario("3_qwen_xml_in_content.json")
    return {
        "qwen3-coder": (qwen["chunks"], _tools(qwen)),
        "parallel-calls": (parallel["chunks"], _tools(parallel)),
        "truncated-call": (_truncated(parallel["chunks"]), _tools(parallel)),
    }


DEMO_MODELS = ("qwen3-coder", "parallel-calls", "truncated-call")


def demo_request(model: str) -> dict[str, Any]:
    """The request of a demo model: a question and the tools its stream calls."""
    _, tools = _streams()[model]
    question = {"role": "user", "content": "What's the weather in Paris, and the time there?"}
    return {"model": model, "messages": [question], "tools": tools, "stream": True}


def demo_upstream() -> ReplayUpstream:
    """The replaying upstream of the demo (unknown models get the Qwen stream)."""
    streams = _streams()

    def pick(path: str, body: dict[str, Any]) -> Script:
        del path
        model = body.get("model")
        chunks, _ = streams.get(model if isinstance(model, str) else "", streams["qwen3-coder"])
        chunks = [{**c, "model": model} if isinstance(model, str) else c for c in chunks]
        if body.get("stream") is not True:
            return Script(whole_body(whole_response(chunks)), content_type="application/json")
        return Script(sse_body(chunks))

    return ReplayUpstream(pick, models=list(DEMO_MODELS))


def instructions(proxy: str, upstream: str) -> str:
    """What the demo prints: where both servers are, and the commands to compare them."""
    lines = [
        f"callgate proxy (demo): {proxy}/v1, in front of a replaying upstream at {upstream}/v1",
        "",
        "The same request straight to the upstream, then through callgate:",
    ]
    for model in DEMO_MODELS:
        body = shlex.quote(json.dumps(demo_request(model), separators=(",", ":")))
        lines += [
            "",
            f"  # {model}",
            f"  curl -sN {upstream}/v1/chat/completions -H 'content-type: application/json' "
            f"-d {body}",
            f"  curl -sN {proxy}/v1/chat/completions -H 'content-type: application/json' -d {body}",
        ]
    lines += [
        "",
        "Or with the openai client:",
        f"  OpenAI(base_url='{proxy}/v1', api_key='demo').chat.completions.create(...)",
        "",
        "Ctrl-C stops both.",
    ]
    return "\n".join(lines)
