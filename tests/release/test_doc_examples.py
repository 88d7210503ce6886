"""Every code example and command of the docs runs as written, and does what the doc says.

Each ```python block of README.md and docs/*.md is executed in a fresh namespace, in a
temporary directory. A block that uses a name its prose gives it (``stream``: "any
supported wire"; ``driver``: the README's) gets that name from ``GIVEN``, a real value,
and its effect is checked. Each ```sh line that runs ``callgate`` runs as a process of
this checkout (``python -m callgate``, which is the entry point's ``main``); where the doc
says what it prints or serves, that is checked. The prose's inline ``callgate ...``
examples run in this process, their placeholders (CAPTURE, MACHINE, DIR, ...) filled in,
and every flag and choice any inline span names must exist. Everything else is in
``NOT_RUN`` or ``INLINE_NOT_RUN`` with the reason (the README's agent loops: run by
test_readme.py); a block or command in neither list fails, and so does a listed one that
is gone from the docs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from callgate import Driver, LLMStreamBuffer, Tool
from callgate.cli.commands import build_parser, main
from callgate.cli.fixtures import examples
from callgate.cli.proxy_file import apply_config
from callgate.strategies.text.detector import Detector
from callgate.testing import TOOLS
from callgate.testing.builders import split
from callgate.testing.wires import WireCall
from doc_blocks import (
    COMMAND_LANGUAGES,
    DOCUMENTS,
    ROOT,
    Block,
    Command,
    every_block,
    every_command,
    inline_commands,
    python_blocks,
)
from loopback import recorded_openai
from proxy_cases import proxy_process, rebuilt
from test_readme import LOOPS

PYTHON = {block.key: block for block in python_blocks()}
COMMANDS = {command.key: command for command in every_command()}
INLINE = sorted({span for document in DOCUMENTS for span in inline_commands(document)})
FEW = settings(
    settings.default,
    max_examples=10,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
"""A doc's own Hypothesis tests, run for a few examples: enough to run every line of them."""

LANGUAGES = {"python", *COMMAND_LANGUAGES, "text", "json", "yaml", "toml", "ts"}
"""Every fence language the docs use: code run here, commands, and what is only shown."""


# -- what the blocks are given, and what they must do --------------------------------------


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"18 °C and sunny in {city}"


def weather_stream() -> list[dict[str, Any]]:
    """An OpenAI turn: some text, then one call to ``get_weather`` for Paris."""
    call = WireCall("call_1", "get_weather", split(json.dumps({"city": "Paris"}), (5,)))
    return recorded_openai([call], "Let me check. ")


def weather_driver() -> Driver:
    """The driver README.md's "Use it" defines."""
    return Driver([Tool.from_function(get_weather)])


class MyAccumulator:
    """A correct accumulator for docs/testing.md's example: its calls once the turn may run."""

    def __init__(self) -> None:
        self.buffer = LLMStreamBuffer(tool_schemas=TOOLS)

    def feed(self, chunk: Any) -> None:
        self.buffer.add(chunk)

    def calls(self) -> list[tuple[Any, ...]]:
        self.buffer.end()
        if not self.buffer.executable:
            return []
        return [(slot.id, slot.name, slot.arguments) for slot in self.buffer.slots]


def my_parser(deltas: list[str]) -> tuple[str, list[tuple[str, Any]]]:
    """A correct parser of the two formats docs/testing.md names: shown text, calls."""
    detector = Detector(["qwen3_coder_xml", "tool_call_tag"])
    steps = [detector.feed(delta) for delta in deltas]
    steps.append(detector.finish())
    calls = [(c.name, c.arguments) for step in steps for b in step.blocks for c in b.calls]
    return "".join(step.shown for step in steps), calls


class MyAdapter:
    """A correct adapter for docs/testing.md's AdapterMachine: calls once the turn may run."""

    def __init__(self) -> None:
        self.buffer = LLMStreamBuffer(tool_schemas=TOOLS)

    def feed(self, chunk: Any) -> None:
        self.buffer.add(chunk)

    def ready_calls(self) -> list[tuple[Any, ...]]:
        if not self.buffer.is_finished or not self.buffer.executable:
            return []
        return [(slot.id, slot.name, slot.arguments) for slot in self.buffer.slots]


def check_tools(ns: dict[str, Any], out: str) -> None:
    (spec,) = ns["driver"].tool_specs("openai")
    assert spec["function"]["name"] == "get_weather"
    assert spec["function"]["description"] == "The current weather in a city."
    assert spec["function"]["parameters"]["required"] == ["city"]


def check_buffer(ns: dict[str, Any], out: str) -> None:
    assert out == "Let me check. "  # the text the user may see, once: the call never shows
    (call,) = ns["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}


def check_partial(ns: dict[str, Any], out: str) -> None:
    assert out == "write_file False {'path': 'a.py', 'content': 'print('}\n"
    assert ns["call"].text() == '{"path": "a.py", "content": "print('


def check_detector(ns: dict[str, Any], out: str) -> None:
    assert out + ns["end"].shown == "Sure. Done."
    assert "<tool_call>" not in out


def check_ledger(ns: dict[str, Any], out: str) -> None:
    from callgate import Ledger, run_turn

    assert ns["turn"].called and Path("calls.db").is_file()
    again = Ledger.sqlite("calls.db", conversation=ns["chat"].id)  # another process, say
    retried = run_turn(weather_stream(), ns["driver"], ns["driver"].new_stream_buffer(ledger=again))
    assert [r.replayed for r in retried.results] == [True]  # not run twice


def check_mcs_loop(ns: dict[str, Any], out: str) -> None:
    assert out.startswith("Let me check. ")
    assistant, answer = ns["history"]
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    assert answer == {"role": "tool", "tool_call_id": "call_1", "content": get_weather("Paris")}


def check_streams(ns: dict[str, Any], out: str) -> None:
    FEW(ns["test_my_accumulator"])()


def check_text_contents(ns: dict[str, Any], out: str) -> None:
    FEW(ns["test_my_parser"])()


def check_adapter_machine(ns: dict[str, Any], out: str) -> None:
    assert ns["TestMyAdapter"] is ns["MyAdapterMachine"].TestCase
    run_state_machine_as_test(ns["MyAdapterMachine"], settings=FEW)


GIVEN: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any], str], None]]] = {
    # block: (the names its prose gives it, what it must do)
    "README.md: from callgate import Driver, Tool": (dict, check_tools),
    "README.md: from callgate import LLMStreamBuffer": (
        lambda: {"stream": weather_stream()},
        check_buffer,
    ),
    "README.md: from callgate.strategies.text.detector import Detector": (
        lambda: {
            "content_deltas": split(
                'Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
                "</tool_call>Done.",
                (3, 1, 4, 1, 5),
            )
        },
        check_detector,
    ),
    "docs/api.md: from callgate import LLMStreamBuffer": (dict, check_partial),
    "docs/ledger.md: from callgate import Driver, Ledger, run_turn": (
        lambda: {
            "chat": SimpleNamespace(id="chat-42"),
            "driver": weather_driver(),
            "stream": weather_stream(),
        },
        check_ledger,
    ),
    "docs/wire-formats.md: from callgate import DriverMeta, SupportsStreaming": (
        lambda: {"driver": weather_driver(), "stream": weather_stream(), "history": []},
        check_mcs_loop,
    ),
    "docs/testing.md: from hypothesis import given": (
        lambda: {"MyAccumulator": MyAccumulator},
        check_streams,
    ),
    "docs/testing.md: from hypothesis import given, strategies as st": (
        lambda: {"my_parser": my_parser},
        check_text_contents,
    ),
    "docs/testing.md: from callgate.testing import AdapterMachine": (
        lambda: {"MyAdapter": MyAdapter},
        check_adapter_machine,
    ),
}


# -- the commands that run, and what they must do ------------------------------------------


def callgate(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``callgate ARGS`` as a process of this checkout."""
    return subprocess.run(
        [sys.executable, "-m", "callgate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


def run_demo(command: Command) -> None:
    result = callgate(*command.argv[1:])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    fixtures = len(examples())
    assert f"checks the {fixtures} bundled conformance fixtures" in readme
    assert "plays six bundled sample streams" in readme
    assert "6 of 6 demo streams behaved as documented" in result.stdout
    assert f"{fixtures} of {fixtures} bundled conformance fixtures gave" in result.stdout


def run_proxy_upstream(command: Command) -> None:
    args = apply_config(build_parser().parse_args(command.argv[1:]))
    assert (args.host, args.port) == ("127.0.0.1", 8787)  # what the comment says it listens on
    # on a free port instead of 8787 (the suite runs beside other servers): nothing listens
    # on the upstream's port here, which the proxy says in a 502, without hanging
    with proxy_process(command.argv[2:]) as (process, url, first):
        assert first.startswith(f"callgate proxy: {url} -> http://localhost:11434"), first
        assert httpx.get(url + "/healthz").json() == {"status": "ok"}
        reply = httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": []})
        assert reply.status_code == 502
        assert reply.json()["error"]["code"] == "upstream_unreachable"
        stop(process)


def run_ext_proc(command: Command) -> None:
    """The processor on a free port instead: it says where it listens and stops on SIGTERM;
    without its extra (grpcio, Envoy's protos) it says which one line to install."""
    import importlib.util
    import socket

    args = build_parser().parse_args(command.argv[1:])
    assert args.listen == "127.0.0.1:50051"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = f"127.0.0.1:{sock.getsockname()[1]}"
    argv = [sys.executable, "-m", "callgate", "ext-proc", "--listen", free]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        if importlib.util.find_spec("grpc") is None:
            assert process.wait(60) == 2
            assert "pip install 'callgate[extproc]'" in process.stderr.read()
            return
        assert process.stdout.readline() == f"callgate ext-proc: listening on {free}\n"
        process.send_signal(signal.SIGINT)  # Ctrl-C: it stops taking streams and exits
        assert process.wait(timeout=30) == 0
        assert process.stderr.read() == ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def run_proxy_demo(command: Command) -> None:
    with proxy_process(command.argv[2:], announced_on="stdout") as (process, url, first):
        assert process.stdout is not None
        printed = [first]
        while not printed[-1].startswith("Ctrl-C"):
            printed.append(process.stdout.readline())
        curls = [shlex.split(line) for line in printed if line.strip().startswith("curl ")]
        got = {}
        for argv in curls:  # each line as a shell gives it to curl: -sN URL -H ... -d BODY
            assert argv[:2] == ["curl", "-sN"]
            assert argv[3:5] == ["-H", "content-type: application/json"]
            body = json.loads(argv[argv.index("-d") + 1])
            through = argv[2].startswith(url)
            with httpx.stream("POST", argv[2], json=body) as reply:
                lines = [line[6:] for line in reply.iter_lines() if line.startswith("data: {")]
            got[body["model"], through] = rebuilt([json.loads(line) for line in lines])
        stop(process)
    # README: a call leaked into the content arrives as a native call, its markup never shown
    assert "<tool_call>" in str(got["qwen3-coder", False]["content"])
    assert got["qwen3-coder", True]["calls"] == [("get_weather", {"city": "Oslo", "days": 3})]
    assert "<tool_call>" not in str(got["qwen3-coder", True]["content"])
    # three parallel native calls arrive once the turn's end confirms them
    assert len(got["parallel-calls", True]["calls"]) == 3
    assert got["parallel-calls", True]["calls"] == got["parallel-calls", False]["calls"]
    # a call cut off by length: no call is delivered
    assert got["truncated-call", False]["calls"] != []
    assert got["truncated-call", True]["calls"] == []
    assert got["truncated-call", True]["finish_reason"] == "length"


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a proxy the way a terminal's Ctrl-C does; it ends without a traceback."""
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130  # 128 + SIGINT, as a shell reports
    assert process.stderr is not None and process.stderr.read() == ""


RUN: dict[str, Callable[[Command], None]] = {
    "README.md: callgate demo": run_demo,
    "README.md: callgate proxy --upstream http://localhost:11434": run_proxy_upstream,
    "docs/proxy.md: callgate proxy --upstream http://localhost:11434": run_proxy_upstream,
    "README.md: callgate proxy --demo": run_proxy_demo,
    "docs/envoy.md: callgate ext-proc --listen 127.0.0.1:50051": run_ext_proc,
}


# -- what is not run here, and why -----------------------------------------------------------

INSTALLS = "installs packages: the environment the tests run in is that install"
NODE = "the runtimes' own suites: need node and npm's registry; .ci/run runs these lines"
NOT_RUN: dict[str, str] = {
    # Python examples
    "docs/integrations.md: import litellm": (
        "needs litellm (callgate[litellm]), not a test dependency; "
        "tests/integrations/ runs the guardrail against a fake upstream"
    ),
    "docs/integrations.md: from pydantic_ai import Agent": (
        "needs pydantic-ai (callgate[pydantic-ai]), not a test dependency; "
        "tests/integrations/ runs the model against a fake upstream"
    ),
    **{
        f"README.md: # agent loop: {name}": (
            "test_readme.py runs it as written, with the real SDK, against the loopback server"
        )
        for name in LOOPS
    },
    # commands
    **{
        key: (
            "runs an npm-installed agent CLI against a model server on 127.0.0.1; "
            "tests/proxy/test_agents_offline.py runs each so, in a fresh home"
        )
        for key in COMMANDS
        if key.startswith(("docs/agents.md: ANTHROPIC_BASE_URL=", "docs/agents.md: codex exec "))
    },
    "README.md: python -m pip install -e '.[test]'": INSTALLS,
    "README.md: python -m pytest": "the whole test suite: this test is part of it",
    "README.md: pip install 'callgate[proxy]'": INSTALLS,
    "docs/proxy.md: pip install 'callgate[proxy]'": INSTALLS,
    "docs/testing.md: pip install 'callgate[testing]'": INSTALLS,
    "docs/envoy.md: pip install 'callgate[extproc]'": INSTALLS,
    "docs/mutation.md: pip install -e '.[dev]'": INSTALLS,
    "docs/proxy.md: python -m venv venv-litellm": "makes a second environment with litellm",
    "docs/proxy.md: venv-litellm/bin/pip install -e '.[proxy]' 'litellm[proxy]'": INSTALLS,
    "docs/embedding.md: npm install callgate-machines xstate": (
        "installs from the npm registry; .ci/run packs the package and replays the vectors"
    ),
    "docs/embedding.md: cd runtimes/js": NODE,
    "docs/embedding.md: cd runtimes/scxml": NODE,
    "docs/embedding.md: npm ci": NODE,
    "docs/embedding.md: node --test": NODE,
    "docs/proxy.md: CALLGATE_UPSTREAM=http://vllm:8000 uvicorn --factory "
    "callgate.proxy.app:from_env --host 0.0.0.0 --port 8787 --workers 4": (
        "a deployment recipe (all interfaces, port 8787, four workers); from_env is tested "
        "by tests/proxy/test_proxy_command.py"
    ),
    "docs/proxy.md: CALLGATE_UPSTREAM=http://vllm:8000 gunicorn -k uvicorn.workers.UvicornWorker "
    "-w 4 -b 0.0.0.0:8787 'callgate.proxy.app:from_env()'": (
        "a deployment recipe; gunicorn is not a dependency"
    ),
    "docs/proxy.md: ANTHROPIC_BASE_URL=http://127.0.0.1:8787 ANTHROPIC_AUTH_TOKEN=local "
    "ANTHROPIC_MODEL=qwen3-coder:30b ANTHROPIC_DEFAULT_HAIKU_MODEL=qwen3-coder:30b claude": (
        "needs Claude Code and a local model server; tests/proxy/test_proxy_anthropic_wire.py "
        "drives the anthropic SDK through the proxy"
    ),
    "docs/integrations.md: LITELLM_MASTER_KEY=sk-my-master-key litellm --config config.yaml "
    "--port 4000": (
        "needs litellm[proxy], not a test dependency; test_litellm_guardrail.py starts "
        "LiteLLM's proxy with the same config lines and a master key"
    ),
    "docs/integrations.md: python bench/bench_integrations.py": (
        "needs litellm and pydantic-ai; test_bench_scripts.py runs its --help and its "
        "message naming the missing framework"
    ),
    "docs/performance.md: python bench/bench_wire.py": "a benchmark of minutes; --help is tested",
    "docs/performance.md: python bench/bench_driver.py": "a benchmark of minutes; --help is tested",
    "docs/performance.md: python bench/bench_growth.py": "a benchmark of minutes; --help is tested",
    "docs/performance.md: python bench/bench_partial.py": "a benchmark; --help is tested",
    **{
        f"docs/mutation.md: python tools/mutation.py {what}": (
            "a mutation run of minutes to an hour; test_mutation_map.py checks its map"
        )
        for what in (
            "run",
            "run gate",
            "survivors gate",
            "rerun gate",
            "tables [slot turn ...]",
            "sample",
        )
    },
}


# -- the lists are the docs' blocks, no more and no fewer ------------------------------------


def test_every_block_names_its_language() -> None:
    untagged = [f"{b.document}:{b.line}" for b in every_block() if b.language not in LANGUAGES]
    assert untagged == []


def test_every_python_block_is_run_or_listed_with_a_reason() -> None:
    blocks = [block.key for block in python_blocks()]
    assert len(blocks) == len(set(blocks)), "two blocks open with the same line"
    assert set(PYTHON) - set(GIVEN) - set(NOT_RUN) == set(), "a new block: run it here, or list it"
    assert set(GIVEN) - set(PYTHON) == set(), "a block run here is gone from the docs"
    assert set(GIVEN).isdisjoint(NOT_RUN)


def test_every_command_is_run_or_listed_with_a_reason() -> None:
    assert set(COMMANDS) - set(RUN) - set(NOT_RUN) == set(), "a new command: run it, or list it"
    assert set(RUN) - set(COMMANDS) == set(), "a command run here is gone from the docs"
    assert set(NOT_RUN) - set(COMMANDS) - set(PYTHON) == set(), "a listed example is gone"
    assert set(RUN).isdisjoint(NOT_RUN)
    every_callgate = {key for key, c in COMMANDS.items() if c.argv[0] == "callgate"}
    assert every_callgate <= set(RUN), "every callgate command of the docs runs here"


def test_the_readme_loops_listed_are_those_test_readme_runs() -> None:
    loops = {key for key in PYTHON if key.startswith("README.md: # agent loop: ")}
    assert loops == {f"README.md: # agent loop: {name}" for name in LOOPS} and len(loops) == 4
    assert {PYTHON[key].text for key in loops} == set(LOOPS.values())


@pytest.mark.parametrize("key", sorted(PYTHON))
def test_every_python_block_compiles(key: str) -> None:
    block = PYTHON[key]
    compile(block.text, f"{block.document}:{block.line}", "exec")


# -- the examples and commands themselves ----------------------------------------------------


@pytest.mark.parametrize("key", sorted(GIVEN))
def test_a_python_example_runs_and_does_what_its_doc_says(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    block: Block = PYTHON[key]
    given, check = GIVEN[key]
    namespace = {"__name__": "__doc_example__", **given()}
    monkeypatch.chdir(tmp_path)  # as a reader who pasted the example into a new directory
    exec(compile(block.text, f"{block.document}:{block.line}", "exec"), namespace)
    out = capsys.readouterr().out
    check(namespace, out)


@pytest.mark.parametrize("text", sorted({COMMANDS[key].text for key in RUN}))
def test_a_command_runs_and_does_what_its_doc_says(text: str) -> None:
    # a command two documents show alike runs once; each document's comment is checked below
    (run,) = {RUN[key] for key in RUN if COMMANDS[key].text == text}
    run(next(COMMANDS[key] for key in RUN if COMMANDS[key].text == text))


def test_the_commands_comments_say_what_runs_here() -> None:
    # the comments the docs put beside a callgate command are the ones checked above
    said = {key: COMMANDS[key].comment for key in RUN}
    assert said == {
        "README.md: callgate demo": "",
        "README.md: callgate proxy --upstream http://localhost:11434": (
            "then use http://127.0.0.1:8787/v1"
        ),
        "docs/proxy.md: callgate proxy --upstream http://localhost:11434": (
            "listens on 127.0.0.1:8787"
        ),
        "README.md: callgate proxy --demo": "in front of bundled sample streams",
        "docs/envoy.md: callgate ext-proc --listen 127.0.0.1:50051": "",
    }
    assert re.search(r"--demo` prints `curl` lines", (ROOT / "README.md").read_text())


# -- the commands the prose names inline -------------------------------------------------------

FIXTURE = "openai_single_call.json"
"""The bundled fixture an inline command's CAPTURE or FIXTURE stands for (it passes)."""


def placeholders(tmp_path: Path) -> dict[str, str]:
    """What each placeholder word of an inline command stands for here."""
    (tmp_path / FIXTURE).write_text(dict(examples())[FIXTURE], encoding="utf-8")
    return {
        "CAPTURE": str(tmp_path / FIXTURE),
        "FIXTURE": str(tmp_path / FIXTURE),
        "MACHINE": "slot",
        "DIR": str(tmp_path / "out"),
        "FILE": str(tmp_path / "page.html"),
        "page.html": str(tmp_path / "page.html"),
    }


def page_written(out: str, tmp_path: Path) -> None:
    assert "<!DOCTYPE html>" in (tmp_path / "page.html").read_text(encoding="utf-8")[:100]


def vectors_written(out: str, tmp_path: Path) -> None:
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "slot.vectors.json" in written and len(out.splitlines()) == len(written)


def shows_the_call(out: str, tmp_path: Path) -> None:
    assert "slot 0: get_weather (id call_w1)" in out and out.rstrip().endswith("PASS: executable")


def export_parses(kind: str) -> Callable[[str, Path], None]:
    def check(out: str, tmp_path: Path) -> None:
        if kind == "scxml":
            import xml.etree.ElementTree as ET

            assert ET.fromstring(out).tag.endswith("scxml")
        else:
            assert isinstance(json.loads(out), dict)

    return check


def lists_every_fixture(out: str, tmp_path: Path) -> None:
    listed = [line for line in out.splitlines() if line.startswith("ok ")]
    assert len(listed) == len(examples()) and "!! " not in out


def traced(out: str, tmp_path: Path) -> None:
    assert out.startswith("digraph") and "slot 0 (blue)" in out


def says_its_version(out: str, tmp_path: Path) -> None:
    from importlib.metadata import version

    assert out == f"callgate {version('callgate')}\n"


INLINE_RUN: dict[str, tuple[int, Callable[[str, Path], None]]] = {
    # span: (its exit code, what it must print or write)
    "callgate --version": (0, says_its_version),
    "callgate demo --fixtures": (0, lists_every_fixture),
    "callgate diagram MACHINE --trace CAPTURE": (0, traced),
    "callgate export --vectors DIR": (0, vectors_written),
    "callgate export MACHINE --format json": (0, export_parses("json")),
    "callgate export MACHINE --format xstate": (0, export_parses("xstate")),
    "callgate export MACHINE --format scxml": (0, export_parses("scxml")),
    "callgate replay CAPTURE --html FILE": (0, page_written),
    "callgate replay CAPTURE --html page.html": (0, page_written),
    "callgate replay CAPTURE --text-formats all": (0, shows_the_call),
    "callgate replay CAPTURE --text-formats kimi_k2,harmony": (0, shows_the_call),
}

SYNOPSIS = "a synopsis: test_every_flag_the_docs_name_exists checks its flags and choices"
MENTION = "names the command or a flag of it, no example: its flags are checked"
INLINE_NOT_RUN: dict[str, str] = {
    "callgate": "the package's name",
    "callgate check": MENTION,
    "callgate demo": "run as README.md's command block",
    "callgate proxy": MENTION,
    "callgate ext-proc": MENTION,
    "callgate replay": MENTION,
    "callgate check --strict-finish": MENTION,
    "callgate replay --strict-finish": MENTION,
    "callgate check --max-tokens N": MENTION,
    "callgate replay --max-tokens N": MENTION,
    "callgate check FIXTURE [--report json|text]": SYNOPSIS,
    "callgate replay CAPTURE [--tools TOOLS.json] [--text-formats a,b|all] "
    "[--policy turn|call|parseable] [--json]": SYNOPSIS,
    "callgate diagram MACHINE [--format dot|svg|png] [-o FILE] [--trace CAPTURE [--tools …] "
    "[--policy …] [--text-formats …]]": SYNOPSIS,
    "callgate export MACHINE --format json|xstate|scxml": SYNOPSIS,
    "callgate proxy --upstream URL [--host 127.0.0.1] [--port 8787] [--text-formats a,b] "
    "[--on-blocked notice|repair N|pass] [--stream-args] [--audit DIR]": SYNOPSIS,
    "callgate proxy --demo": "run as README.md's command block",
    "callgate demo --fixtures | head": "a pipe the reader closes: test_cli.py's closed-pipe test",
    "callgate export --vectors docs/machines/vectors": (
        "rewrites the committed vectors; tests/fsm/test_diagrams.py checks they are current"
    ),
    "callgate replay DIR/callgate-audit.jsonl": (
        "needs a proxy's audit log: tests/proxy/test_proxy_audit_log.py replays one"
    ),
}


def test_every_inline_command_is_run_or_listed_with_a_reason() -> None:
    assert set(INLINE) - set(INLINE_RUN) - set(INLINE_NOT_RUN) == set(), "run it, or list it"
    assert (set(INLINE_RUN) | set(INLINE_NOT_RUN)) - set(INLINE) == set(), "gone from the docs"
    assert set(INLINE_RUN).isdisjoint(INLINE_NOT_RUN)


@pytest.mark.parametrize("span", sorted(INLINE_RUN))
def test_an_inline_command_runs_and_does_what_its_doc_says(
    span: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = placeholders(tmp_path)
    argv = [given.get(word, word) for word in shlex.split(span)[1:]]
    code, check = INLINE_RUN[span]
    assert exit_code(argv) == code
    out, err = capsys.readouterr()
    if code == 0 and "--html" not in argv:
        assert err == ""
    check(out, tmp_path)
    if argv[0] == "replay":  # one verdict: check says the same of the same file
        assert main(["check", given["CAPTURE"]]) == code


def exit_code(argv: list[str]) -> int:
    """``callgate ARGV``'s exit code, in this process (argparse exits for ``--version``)."""
    try:
        return main(argv)
    except SystemExit as done:
        return int(done.code or 0)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, by name; "" for the top level."""
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **sub.choices}


@pytest.mark.parametrize("span", INLINE)
def test_every_flag_the_docs_name_exists(span: str) -> None:
    words = [word.strip("[]…") for word in span.split()[1:]]
    parsers = subcommands()
    parser = parsers[words[0]] if words and words[0] in parsers else parsers[""]
    actions = parser._option_string_actions
    for position, word in enumerate(words):
        if not word.startswith("-"):
            continue
        assert word in actions, f"{span}: {parser.prog} has no {word}"
        choices = actions[word].choices
        shown = words[position + 1] if position + 1 < len(words) else ""
        if choices is not None and "|" in shown:
            assert set(shown.split("|")) == set(choices), f"{span}: {word} takes {choices}"
