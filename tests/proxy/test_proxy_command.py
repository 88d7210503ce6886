"""``callgate proxy`` on the command line, and ``--demo`` in front of its sample streams."""

from __future__ import annotations

import json
import signal

import httpx
import openai
import pytest

from callgate.cli import main
from callgate.cli.proxy import ProxyUsageError, parse_on_blocked
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.demo import DEMO_MODELS, demo_request, demo_upstream
from callgate.proxy.serving import ServerThread
from proxy_cases import proxy_process, rebuilt


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--upstream", "ftp://models.example"], "--upstream must be an http:// or https:// URL"),
        (["--upstream", "localhost:11434"], "--upstream must be an http:// or https:// URL"),
        (["--upstream", "http://"], "names no host"),
        ([], "give --upstream URL"),
        (["--upstream", "http://a", "--on-blocked", "repair", "x"], "one whole number"),
        (["--upstream", "http://a", "--on-blocked", "never"], "notice, repair N or pass"),
        (["--upstream", "http://a", "--text-formats", "nope"], "unknown format 'nope'"),
        (
            ["--upstream", "http://a", "--upstream-wire", "grpc"],
            "--upstream-wire must be chat, messages or responses, not 'grpc'",
        ),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["proxy", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and err.startswith("callgate proxy: ")


def test_on_blocked_reads_its_modes() -> None:
    assert parse_on_blocked(["notice"]) == ("notice", 1)
    assert parse_on_blocked(["pass"]) == ("pass", 1)
    assert parse_on_blocked(["repair"]) == ("repair", 1)
    assert parse_on_blocked(["repair", "3"]) == ("repair", 3)
    for bad in (["repair", "0"], ["repair", "1", "2"], ["pass", "2"]):
        with pytest.raises(ProxyUsageError):
            parse_on_blocked(bad)


def _through(url: str, model: str) -> dict[str, object]:
    with openai.OpenAI(base_url=url + "/v1", api_key="demo", max_retries=0) as client:
        return rebuilt(
            [c.model_dump() for c in client.chat.completions.create(**demo_request(model))]
        )


def _straight(url: str, model: str) -> dict[str, object]:
    with httpx.stream("POST", url + "/v1/chat/completions", json=demo_request(model)) as reply:
        lines = [line[6:] for line in reply.iter_lines() if line.startswith("data: {")]
    return rebuilt([json.loads(line) for line in lines])


def test_the_demo_shows_the_difference_at_once() -> None:
    with (
        ServerThread(demo_upstream()) as upstream,
        ServerThread(create_app(ProxyConfig(upstream=upstream.url))) as proxy,
    ):
        got = {m: _through(proxy.url, m) for m in DEMO_MODELS}
        raw = {m: _straight(upstream.url, m) for m in DEMO_MODELS}
    assert "<tool_call>" in str(raw["qwen3-coder"]["content"])
    assert raw["qwen3-coder"]["calls"] == []
    assert got["qwen3-coder"]["calls"] == [("get_weather", {"city": "Oslo", "days": 3})]
    assert "<tool_call>" not in str(got["qwen3-coder"]["content"])
    assert got["qwen3-coder"]["finish_reason"] == "tool_calls"
    assert [name for name, _ in got["parallel-calls"]["calls"]] == [
        "get_weather",
        "get_time",
        "search",
    ]
    assert got["parallel-calls"]["calls"] == raw["parallel-calls"]["calls"]
    assert (
        got["truncated-call"]["calls"] == [] and got["truncated-call"]["finish_reason"] == "length"
    )
    assert raw["truncated-call"]["finish_reason"] == "length"
    assert isinstance(raw["truncated-call"]["calls"][1][1], str)  # straight: a half call


def test_callgate_proxy_demo_runs_serves_and_stops_on_sigterm() -> None:
    with proxy_process(["--demo"], announced_on="stdout") as (process, url, first):
        assert first.startswith("callgate proxy (demo): http://127.0.0.1:"), first
        got = _through(url, "qwen3-coder")
        assert got["calls"] == [("get_weather", {"city": "Oslo", "days": 3})]
        process.send_signal(signal.SIGTERM)
        # uvicorn drains, then ends by the signal it caught (as process managers expect)
        assert process.wait(timeout=30) in (0, -signal.SIGTERM)
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()


def test_ctrl_c_stops_callgate_proxy_quietly() -> None:
    with proxy_process(["--upstream", "http://127.0.0.1:9"]) as (process, url, _):
        assert httpx.get(url + "/healthz").status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130  # uvicorn drained, then re-raised Ctrl-C
        assert process.stderr is not None
        assert process.stderr.read() == ""


def test_ctrl_c_stops_callgate_proxy_even_when_sigint_came_ignored() -> None:
    """Started as a background job or under nohup, SIGINT arrives ignored: Ctrl-C still works."""
    args = ["--upstream", "http://127.0.0.1:9"]
    with proxy_process(args, sigint=signal.SIG_IGN) as (process, url, _):
        assert httpx.get(url + "/healthz").status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        assert process.stderr is not None
        assert process.stderr.read() == ""


def test_workers_configure_the_app_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from callgate.proxy.app import from_env

    monkeypatch.delenv("CALLGATE_UPSTREAM", raising=False)
    with pytest.raises(ValueError, match="CALLGATE_UPSTREAM"):
        from_env()
    monkeypatch.setenv("CALLGATE_UPSTREAM", "http://localhost:8000/v1")
    monkeypatch.setenv("CALLGATE_ON_BLOCKED", "pass")
    monkeypatch.setenv("CALLGATE_TEXT_FORMATS", "tool_call_tag, deepseek")
    monkeypatch.setenv("CALLGATE_STREAM_ARGS", "1")
    app = from_env()
    assert app.config.upstream == "http://localhost:8000/v1"
    assert app.config.options.on_blocked == "pass" and app.config.options.stream_args
    assert app.config.options.text_formats == ("tool_call_tag", "deepseek")
    monkeypatch.setenv("CALLGATE_TEXT_FORMATS", "hermes_json")
    with pytest.raises(ValueError, match="unknown text format 'hermes_json'"):
        from_env()
    monkeypatch.delenv("CALLGATE_TEXT_FORMATS")
    monkeypatch.setenv("CALLGATE_ON_BLOCKED", "repair zero")
    with pytest.raises(ValueError, match="whole number"):
        from_env()
