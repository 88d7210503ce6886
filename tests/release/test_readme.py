"""The README's agent loops run as written, against the loopback server, with the real SDKs.

Each ``# agent loop: …`` block of README.md is executed after the README's tools block,
with the SDK clients pointed at the loopback server through their documented
environment variables. The server scripts a call to ``get_weather`` and then a final
answer, and refuses any request that breaks the provider's tool-call rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from callgate.testing.builders import split
from callgate.testing.wires import WireCall
from loopback import (
    LoopbackServer,
    anthropic_sse,
    openai_sse,
    recorded_anthropic,
    recorded_openai,
    serve,
)
from provider_rules import validate_anthropic, validate_openai

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
TOOLS = next(b for b in BLOCKS if "Tool.from_function" in b and "agent loop" not in b)
LOOPS = {
    b.splitlines()[0].removeprefix("# agent loop: "): b
    for b in BLOCKS
    if b.startswith("# agent loop: ")
}
ASKING = "Let me check. "
FINAL = "It is sunny in Paris, 18 °C."
ANSWER = "18 °C and sunny in Paris"


def test_the_readme_has_four_agent_loops() -> None:
    assert sorted(LOOPS) == ["anthropic, async", "anthropic, sync", "openai, async", "openai, sync"]


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_readme_agent_loop_runs_as_written(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = name.split(",", maxsplit=1)[0]
    arguments = split(json.dumps({"city": "Paris"}), (5,))
    with serve() as server:
        script(
            server,
            wire,
            WireCall("call_1" if wire == "openai" else "toolu_1", "get_weather", arguments),
        )
        point_clients_at(server, monkeypatch)
        server.write_sizes = (256,)

        exec(compile(TOOLS + LOOPS[name], f"README.md ({name})", "exec"), {})

        requests = [body["messages"] for _, body in server.requests]
    assert server.refused == [] and len(requests) == 2
    (validate_openai if wire == "openai" else validate_anthropic)(requests[1])
    answer = requests[1][-1]
    assert (answer["content"] if wire == "openai" else answer["content"][0]["content"]) == ANSWER
    printed = capsys.readouterr().out
    assert ASKING in printed and FINAL in printed


def script(server: LoopbackServer, wire: str, call: WireCall) -> None:
    if wire == "openai":
        server.scripts["/v1/chat/completions"] = [
            openai_sse(recorded_openai([call], ASKING)),
            openai_sse(recorded_openai([], FINAL)),
        ]
    else:
        server.scripts["/v1/messages"] = [
            anthropic_sse(recorded_anthropic([call], ASKING)),
            anthropic_sse(recorded_anthropic([], FINAL)),
        ]


def point_clients_at(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{server.port}"
    monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    for proxy in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
