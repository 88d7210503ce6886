"""Rebuild tests/captures/ from a checkout of vercel/ai (and ollama-python, ollama): the
real recorded streams of their test fixtures and API reference, one assistant turn each,
with provenance and the expected calls and text.

Expected values come from the most authoritative reader at hand, named per capture in
``expect_source``: openai-python's ``ChatCompletionStreamState`` (Chat Completions and
every OpenAI-compatible server), anthropic-sdk-python's ``accumulate_event`` (Anthropic),
the stream's own ``response.completed`` output (Responses), and otherwise the capture's
own final events read plainly (Bedrock, Gemini, Cohere, Ollama: their SDKs have no stream
accumulator). Text Generation Inference's own integration tests add its streamed tool
calls (see :func:`tgi_entries`). Run: ``python tests/captures/make_corpus.py
VERCEL_AI_GIT_DIR OLLAMA_PYTHON_GIT_DIR OLLAMA_GIT_DIR TGI_GIT_DIR`` (bare git
directories; nothing is fetched).
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAX_BYTES = 150_000
"""Recordings larger than this stay out of the repository (they add nothing new)."""
VERCEL = "vercel/ai"
SKIP = (
    "speech",
    "completion/",
    "interactions",
    "perplexity",
    "moonshot",
    "azure/",
    "open-responses",
)
WIRES = {
    "alibaba": "openai",
    "deepseek": "openai",
    "groq": "openai",
    "mistral": "openai",
    "openai-compatible": "openai",
    "xai": "openai",
    "amazon-bedrock": "bedrock",
    "anthropic": "anthropic",
    "cohere": "cohere",
    "google": "gemini",
}
_RESPONSES = "packages/openai/src/responses/__fixtures__/"
UNREADABLE_BY_US = {
    _RESPONSES + "parallel-tool-call-wrapper.1.chunks.txt": "hand-edited lines, not JSON",
}
DIFFERENCES = {
    "openai-custom-tool.1": (
        "callgate refuses a custom_tool_call: its free-text input cannot be checked against "
        "a schema"
    ),
    "github-copilot-id-rotation.1": (
        "the proxy rotates every id on every event; callgate treats a response id that "
        "changes mid-stream as an identity collision and blocks"
    ),
    "openai-error.1": "the stream carries an error event and response.failed: nothing may run",
    "spliced-message-start": (
        "a second message_start inside an open tool_use block (a spliced recording): the "
        "SDK restarts, callgate blocks the turn"
    ),
}


TRIMMED = {
    "openai-phase.1": "the recording keeps only a few text deltas; the .done events restate all",
    "openai-shell-container.1": (
        "the recording keeps only a few text deltas; the .done events restate all"
    ),
}
"""Recordings whose text deltas were cut down by hand: the streamed text is not compared."""


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def first_turn(wire: str, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first assistant turn of a recording that may hold several (multi-step tests)."""
    ends = {
        "anthropic": lambda c: c.get("type") == "message_stop",
        "openai-responses": lambda c: (
            c.get("type") in ("response.completed", "response.incomplete", "response.failed")
        ),
    }.get(wire)
    if ends is None:
        return chunks
    for n, chunk in enumerate(chunks):
        if ends(chunk):
            return chunks[: n + 1]
    return chunks


def openai_expect(chunks: list[dict[str, Any]]) -> tuple[list[Any], str, str]:
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    message = state.get_final_completion().choices[0].message
    calls = [
        {"name": c.function.name, "arguments": json.loads(c.function.arguments or "{}")}
        for c in message.tool_calls or ()
    ]
    return calls, message.content or "", "openai-python ChatCompletionStreamState"


def anthropic_expect(chunks: list[dict[str, Any]]) -> tuple[list[Any], str, str]:
    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    event_type: Any = TypeAdapter(RawMessageStreamEvent)
    snapshot: Any = None
    extra: dict[str, Any] = (
        {"json_bufs": {}} if "json_bufs" in inspect.signature(accumulate_event).parameters else {}
    )
    for chunk in chunks:
        if chunk.get("type") in ("ping", "error"):
            continue  # the SDK's transport drops pings before its accumulator sees them
        snapshot = accumulate_event(
            event=event_type.validate_python(chunk), current_snapshot=snapshot, **extra
        )
    blocks = snapshot.model_dump()["content"]
    calls = [
        {"name": b["name"], "arguments": b["input"]} for b in blocks if b["type"] == "tool_use"
    ]
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    return calls, text, "anthropic-sdk-python accumulate_event"


def responses_expect(chunks: list[dict[str, Any]]) -> tuple[list[Any], str, str]:
    done = next(c for c in chunks if c.get("type") == "response.completed")
    calls, text = [], ""
    for item in done["response"]["output"]:
        if item["type"] == "function_call":
            calls.append({"name": item["name"], "arguments": json.loads(item["arguments"] or "{}")})
        elif item["type"] == "message":
            text += "".join(
                p.get("text", "") for p in item["content"] if p["type"] == "output_text"
            )
    return calls, text, "the stream's own response.completed output"


def plain_expect(wire: str, chunks: list[dict[str, Any]]) -> tuple[list[Any], str, str]:
    """Calls and text read plainly from the capture's events (no SDK accumulator exists)."""
    calls: list[Any] = []
    text = ""
    if wire == "bedrock":
        names, inputs = {}, {}
        for c in chunks:
            if "contentBlockStart" in c and "toolUse" in c["contentBlockStart"].get("start", {}):
                i = c["contentBlockStart"]["contentBlockIndex"]
                names[i], inputs[i] = c["contentBlockStart"]["start"]["toolUse"]["name"], ""
            elif "contentBlockDelta" in c:
                d, i = c["contentBlockDelta"]["delta"], c["contentBlockDelta"]["contentBlockIndex"]
                if "toolUse" in d:
                    inputs[i] += d["toolUse"]["input"]
                text += d.get("text", "")
        calls = [
            {"name": names[i], "arguments": json.loads(inputs[i] or "{}")} for i in sorted(names)
        ]
    elif wire == "cohere":
        names, args = {}, {}
        for c in chunks:
            if c.get("type") == "tool-call-start":
                f = c["delta"]["message"]["tool_calls"]["function"]
                names[c["index"]], args[c["index"]] = f["name"], f.get("arguments") or ""
            elif c.get("type") == "tool-call-delta":
                args[c["index"]] += c["delta"]["message"]["tool_calls"]["function"]["arguments"]
            elif c.get("type") == "content-delta":
                text += c["delta"]["message"]["content"].get("text", "")
        calls = [
            {"name": names[i], "arguments": json.loads(args[i] or "{}")} for i in sorted(names)
        ]
    elif wire == "gemini":
        for c in chunks:
            for cand in c.get("candidates", []):
                for p in (cand.get("content") or {}).get("parts", []):
                    if "text" in p and not p.get("thought"):
                        text += p["text"]
                    call = p.get("functionCall") or {}
                    if call.get("name"):
                        calls.append({"name": call["name"], "arguments": call.get("args")})
    elif wire == "openai":
        by_key: dict[Any, dict[str, Any]] = {}
        for c in chunks:
            for choice in c.get("choices", []):
                delta = choice.get("delta") or {}
                if isinstance(delta.get("content"), str):
                    text += delta["content"]
                elif isinstance(delta.get("content"), list):
                    text += "".join(p["text"] for p in delta["content"] if p["type"] == "text")
                for n, call in enumerate(delta.get("tool_calls") or ()):
                    key = call.get("index", call.get("id") or n)
                    entry = by_key.setdefault(key, {"name": "", "arguments": ""})
                    entry["name"] = entry["name"] or call["function"].get("name") or ""
                    entry["arguments"] += call["function"].get("arguments") or ""
        calls = [
            {"name": e["name"], "arguments": json.loads(e["arguments"] or "{}")}
            for e in by_key.values()
        ]
    elif wire == "anthropic":
        tools: dict[int, dict[str, Any]] = {}
        for c in chunks:
            if c.get("type") == "content_block_start":
                block = c["content_block"]
                if block["type"] == "tool_use":
                    tools[c["index"]] = {"name": block["name"], "input": block["input"], "json": ""}
                elif block["type"] == "text":
                    text += block.get("text", "")
            elif c.get("type") == "content_block_delta":
                d = c["delta"]
                if d["type"] == "input_json_delta" and c["index"] in tools:
                    tools[c["index"]]["json"] += d["partial_json"]
                elif d["type"] == "text_delta":
                    text += d["text"]
        calls = [
            {"name": t["name"], "arguments": json.loads(t["json"]) if t["json"] else t["input"]}
            for _, t in sorted(tools.items())
        ]
    elif wire == "ollama":
        for c in chunks:
            message = c.get("message") or {}
            text += message.get("content") or ""
            for call in message.get("tool_calls") or ():
                function = call["function"]
                calls.append({"name": function["name"], "arguments": function["arguments"]})
    return calls, text, "the capture's own events, read plainly"


def main(vercel: str, ollama: str, ollama_server: str, tgi: str) -> None:
    commit = git(vercel, "rev-parse", "HEAD").strip()
    entries = []
    paths = git(vercel, "ls-tree", "-r", "--name-only", "HEAD").split()
    for path in sorted(p for p in paths if "__fixtures__/" in p and p.endswith(".chunks.txt")):
        if any(s in path for s in SKIP) or path in UNREADABLE_BY_US:
            continue
        package = path.split("/")[1]
        wire = "openai-responses" if "/responses/" in path else WIRES.get(package)
        if package == "openai" and "/chat/" in path:
            wire = "openai"
        if wire is None:
            continue
        raw = git(vercel, "show", f"HEAD:{path}")
        chunks = first_turn(wire, [json.loads(line) for line in raw.splitlines() if line.strip()])
        if sum(len(json.dumps(c)) for c in chunks) > MAX_BYTES:
            continue
        stem = path.rsplit("/", 1)[1].removesuffix(".chunks.txt")
        name = f"{package}__{stem}"
        test = f"packages/{package}/src/**/*.test.ts (prepareChunksFixtureResponse('{stem}'))"
        try:
            if wire == "openai":
                calls, text, source = openai_expect(chunks)
            elif wire == "anthropic":
                calls, text, source = anthropic_expect(chunks)
            elif wire == "openai-responses" and any(
                c.get("type") == "response.completed" for c in chunks
            ):
                calls, text, source = responses_expect(chunks)
            else:
                calls, text, source = plain_expect(wire, chunks)
        except Exception as exc:  # the SDK itself cannot read this real stream
            calls, text, source = plain_expect(wire, chunks)
            source += f" (the SDK's accumulator raised {type(exc).__name__})"
        status = "pass" if calls else "not_applicable"
        entry: dict[str, Any] = {
            "file": f"{wire}/{name}.jsonl",
            "wire": wire,
            "source": {"repository": VERCEL, "commit": commit, "path": path, "test": test},
            "turn": "first turn of the recording" if len(chunks) < raw.count("\n") else "whole",
            "expect": {"status": status, "calls": calls, "text": text},
            "expect_source": source,
        }
        if stem in DIFFERENCES:
            entry["difference"] = DIFFERENCES[stem]
        if stem in TRIMMED:
            entry["expect"]["text"] = None
            entry["note"] = TRIMMED[stem]
        (HERE / wire).mkdir(exist_ok=True)
        (HERE / entry["file"]).write_text(
            "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks), encoding="utf-8"
        )
        entries.append(entry)
    entries.append(ollama_entry(ollama))
    entries += ollama_doc_entries(ollama_server)
    entries += tgi_entries(tgi)
    (HERE / "manifest.json").write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(entries)} captures")


def ollama_entry(repo: str) -> dict[str, Any]:
    """ollama-python's test_client_chat_stream: three message lines (the test's own data)."""
    commit = git(repo, "rev-parse", "HEAD").strip()
    parts = ["I ", "don't ", "know."]
    chunks = [{"model": "dummy", "message": {"role": "assistant", "content": p}} for p in parts]
    (HERE / "ollama").mkdir(exist_ok=True)
    file = "ollama/ollama-python__test_client_chat_stream.jsonl"
    (HERE / file).write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    return {
        "file": file,
        "wire": "ollama",
        "source": {
            "repository": "ollama/ollama-python",
            "commit": commit,
            "path": "tests/test_client.py",
            "test": "test_client_chat_stream",
        },
        "turn": "whole",
        "profile": "ollama",
        "expect": {"status": "not_applicable", "calls": [], "text": "".join(parts)},
        "expect_source": "the test's own assertions (each part's message content)",
        "note": "the test's lines carry no done flag, so the profile is named, not recognised",
    }


OLLAMA_DOCS = {
    "Chat request (Streaming)": ("api-chat-streaming", "the first and the final line"),
    "Chat request (Streaming with tools)": ("api-chat-streaming-with-tools", None),
    "Chat request (No streaming, with tools)": ("api-chat-no-streaming-with-tools", None),
    "Chat request (With History)": (
        "api-chat-with-history",
        "the first and the final line; the final line carries no message",
    ),
    "Chat request (with tools)": ("api-chat-with-tools", None),
}
"""The /api/chat responses of ollama's API reference (docs/api.md), by section heading:
each section's JSON blocks in order are the turn's lines. A note says when the reference
shows only some lines of the stream; a stream=false response is one done line."""


def doc_blocks(markdown: str, heading: str) -> list[dict[str, Any]]:
    """The JSON code blocks of the ``#### heading`` section, parsed, in order."""
    section = markdown.split(f"#### {heading}\n", 1)[1].split("\n#### ", 1)[0]
    blocks = section.split("```json\n")[1:]
    return [json.loads(block.split("```", 1)[0]) for block in blocks]


def ollama_doc_entries(repo: str) -> list[dict[str, Any]]:
    """ollama's own API reference: its recorded /api/chat responses, with and without tools."""
    commit = git(repo, "rev-parse", "HEAD").strip()
    markdown = git(repo, "show", "HEAD:docs/api.md")
    entries = []
    for heading, (stem, shown) in OLLAMA_DOCS.items():
        chunks = doc_blocks(markdown, heading)
        calls, text, source = plain_expect("ollama", chunks)
        file = f"ollama/ollama__{stem}.jsonl"
        (HERE / file).write_text(
            "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks), encoding="utf-8"
        )
        entry: dict[str, Any] = {
            "file": file,
            "wire": "ollama",
            "source": {
                "repository": "ollama/ollama",
                "commit": commit,
                "path": "docs/api.md",
                "test": f"the API reference's example response: {heading}",
            },
            "turn": "whole" if shown is None else f"the reference shows {shown}",
            "expect": {
                "status": "pass" if calls else "not_applicable",
                "calls": calls,
                "text": text,
            },
            "expect_source": source,
        }
        entries.append(entry)
    return entries


TGI = "huggingface/text-generation-inference"
TGI_SNAPSHOTS = "integration-tests/models/__snapshots__/test_tools_llama/"
TGI_STREAMS = {
    "test_flash_llama_grammar_tools_openai": "openai-python's ChatCompletionChunk",
    "test_flash_llama_grammar_tools_choice_stream": (
        "huggingface_hub's ChatCompletionStreamOutput"
    ),
}
"""TGI's streamed tool-call snapshots (integration-tests/models/test_tools_llama.py), by
test name, with the client whose parsed chunks the snapshot stores."""
TGI_ROUTER = "router/src/server.rs"


def tgi_entries(repo: str) -> list[dict[str, Any]]:
    """TGI's recorded tool-call streams: every chunk as its test client received it, then
    the ``[DONE]`` TGI's router writes after a chat stream's last chunk (its chat
    handler, ``chat_completions``). TGI writes no finish reason on a tool call's chunks:
    the turn ends cleanly without one, which callgate runs with a warning."""
    entries = []
    for test, client in TGI_STREAMS.items():
        path = TGI_SNAPSHOTS + test + ".json"
        commit = git(repo, "log", "-1", "--format=%H", "HEAD", "--", path).strip()
        router = git(repo, "show", f"{commit}:{TGI_ROUTER}")
        if 'data("[DONE]")' not in router:
            raise SystemExit(f"{TGI_ROUTER} at {commit} no longer writes [DONE]")
        chunks = json.loads(git(repo, "show", f"{commit}:{path}"))
        calls, text, source = openai_expect(chunks)
        stem = test.removeprefix("test_flash_llama_grammar_")
        file = f"openai/tgi__{stem}.jsonl"
        lines = [json.dumps(c, ensure_ascii=False) for c in chunks] + ["[DONE]"]
        (HERE / file).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        entries.append(
            {
                "file": file,
                "wire": "openai",
                "source": {
                    "repository": TGI,
                    "commit": commit,
                    "path": path,
                    "test": f"integration-tests/models/test_tools_llama.py::{test}",
                },
                "turn": "whole",
                "expect": {"status": "pass", "calls": calls, "text": text},
                "expect_source": source,
                "note": (
                    f"TGI {chunks[0]['system_fingerprint']} (Llama-3.1-8B-Instruct): the "
                    f"snapshot stores the chunks as {client} parsed them; the final [DONE] "
                    f"is the one {TGI_ROUTER} writes after every chat stream. No chunk "
                    "carries a finish reason: a clean end without one (warning "
                    "no_finish_reason)"
                ),
            }
        )
    return entries


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4])
