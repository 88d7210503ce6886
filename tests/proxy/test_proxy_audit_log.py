"""The proxy's audit log (one record per turn, replayed exactly) and its drain on SIGTERM."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest

from callgate.cli import main
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.audit import (
    AUDIT_FILE,
    TOOL_SET,
    load_records,
    reproduce,
    same_turn,
    tool_set_hash,
)
from callgate.proxy.engine import Options
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import FlakyModel, ReplayUpstream, Script, sse_body
from proxy_cases import WEATHER, capture_cases, openai_tools, proxy_process, qwen_case, text_turn


def _turns(directory: Path, some: int | None = None, **config: object) -> list[dict[str, object]]:
    """Play the OpenAI captures (``some``: the first few), the Qwen leak and a repaired
    turn through an audited proxy; the records it wrote."""
    cases = [*capture_cases()[:some], qwen_case()]
    scripts = {c.id: Script(sse_body(c.chunks), write_sizes=(5, 3)) for c in cases}
    flaky = FlakyModel(1.0)

    def pick(path: str, body: dict[str, object]) -> Script:
        case = body.get("metadata", {}).get("case")  # type: ignore[union-attr]
        return scripts[case] if case in scripts else flaky.pick(path, body)

    with (
        ServerThread(ReplayUpstream(pick)) as up,
        ServerThread(
            create_app(ProxyConfig(upstream=up.url, audit_dir=directory, **config))
        ) as proxy,  # type: ignore[arg-type]
        openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-secret-key", max_retries=0) as client,
    ):
        for case in cases:
            list(client.chat.completions.create(stream=True, **case.create_kwargs))
        client.chat.completions.create(
            model="flaky",
            messages=[{"role": "user", "content": "weather?"}],
            tools=openai_tools(WEATHER),  # type: ignore[arg-type]
            metadata={"conversation": "a"},
        )
    return [dict(r) for r in load_records((directory / AUDIT_FILE).read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, object]]]:
    directory = tmp_path_factory.mktemp("audit")
    return directory, _turns(directory)


def test_every_turn_is_recorded_and_replays_exactly(
    audited: tuple[Path, list[dict[str, object]]],
) -> None:
    tmp_path, records = audited
    assert len(records) == len(capture_cases()) + 1 + 3  # the flaky turn, repaired twice
    for record in records:
        again = reproduce(record)
        assert same_turn(record["turn"], again["turn"]), record["turn"]  # type: ignore[arg-type]
        assert "messages" not in record["request"]  # type: ignore[operator]
    text = (tmp_path / AUDIT_FILE).read_text(encoding="utf-8")
    assert "sk-secret-key" not in text
    qwen = next(r for r in records if r["request"]["model"] == "Qwen/Qwen2.5-7B-Instruct")  # type: ignore[index]
    assert qwen["turn"]["calls"][0]["source"] == "tool_call_tag"  # type: ignore[index]
    assert qwen["turn"]["formats"] == ["tool_call_tag"]  # type: ignore[index]
    assert qwen["timings"]["total_s"] > 0  # type: ignore[index]
    attempts = [r["turn"]["attempt"] for r in records if r["request"]["model"] == "flaky"]  # type: ignore[index]
    assert attempts == [0, 1, 2]


def test_callgate_replay_reads_an_audit_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _turns(tmp_path)
    log = tmp_path / AUDIT_FILE
    assert main(["replay", str(log)]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("audit records reproduced exactly")
    assert "DIFFERS" not in out
    assert main(["replay", str(log), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(row["same"] for row in rows)
    lines = log.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[-1])
    record["turn"]["status"] = "pass" if record["turn"]["status"] != "pass" else "fail"
    log.write_text("\n".join([*lines[:-1], json.dumps(record)]) + "\n", encoding="utf-8")
    assert main(["replay", str(log)]) == 1  # a record the stream does not give is named
    assert "DIFFERS" in capsys.readouterr().out


def test_messages_are_stored_only_when_asked(tmp_path: Path) -> None:
    records = _turns(tmp_path, 4, audit_messages=True)
    assert all(r["request"]["messages"] for r in records)  # type: ignore[index]


def test_the_log_rotates_within_its_size_bound(tmp_path: Path) -> None:
    _turns(tmp_path, 8, audit_max_bytes=20_000, audit_files=2)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [AUDIT_FILE, f"{AUDIT_FILE}.1", f"{AUDIT_FILE}.2"]
    sizes = [(tmp_path / f).stat().st_size for f in files]
    biggest = max(unit for f in files for unit in _units(tmp_path / f))
    assert all(size <= max(20_000, biggest) for size in sizes)
    for f in files:  # each file defines the tool sets its turns name
        records = load_records((tmp_path / f).read_text(encoding="utf-8"))
        assert all(TOOL_SET not in r["request"] for r in records)  # type: ignore[operator]


def _units(path: Path) -> list[int]:
    """The sizes of what one turn writes at once: its line, after its tool set's if new."""
    lines = path.read_bytes().splitlines()
    units, pending = [], 0
    for line in lines:
        if TOOL_SET.encode() in line and b'"turn"' not in line:
            pending = len(line) + 1
            continue
        units.append(pending + len(line) + 1)
        pending = 0
    return units


def test_each_distinct_tool_set_is_stored_once_and_put_back_on_reading(
    audited: tuple[Path, list[dict[str, object]]],
) -> None:
    directory, records = audited
    lines = [
        json.loads(x) for x in (directory / AUDIT_FILE).read_text(encoding="utf-8").splitlines()
    ]
    defined = [x for x in lines if "turn" not in x]
    turns = [x for x in lines if "turn" in x]
    assert all("tools" not in t["request"] for t in turns)
    distinct = {tool_set_hash(r["request"]["tools"]) for r in records if "tools" in r["request"]}  # type: ignore[operator, index]
    assert sorted(d[TOOL_SET] for d in defined) == sorted(distinct)
    flaky = [r for r in records if r["request"]["model"] == "flaky"]  # type: ignore[index]
    assert len(flaky) == 3 and all(r["request"]["tools"] == openai_tools(WEATHER) for r in flaky)  # type: ignore[index]


def test_a_log_written_with_tools_in_every_turn_still_replays(
    audited: tuple[Path, list[dict[str, object]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, records = audited
    old = tmp_path / "old.jsonl"  # the older layout: every turn carries its tools inline
    old.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    loaded = load_records(old.read_text(encoding="utf-8"))
    assert loaded == records
    assert all(same_turn(r["turn"], reproduce(r)["turn"]) for r in loaded)
    assert main(["replay", str(old)]) == 0
    assert f"{len(records)} of {len(records)} audit records reproduced" in capsys.readouterr().out


def test_sigterm_drains_an_open_stream_then_stops() -> None:
    chunks = text_turn([f"word{n} " for n in range(40)])
    upstream = ReplayUpstream(lambda path, body: Script(sse_body(chunks), delay=0.05))
    with (
        ServerThread(upstream) as up,
        proxy_process(["--upstream", up.url]) as (process, url, _),
    ):
        received: list[str] = []

        def read() -> None:
            with httpx.stream(
                "POST",
                url + "/v1/chat/completions",
                json={"model": "m", "stream": True},
                timeout=60,
            ) as reply:
                received.extend(reply.iter_lines())

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.5)  # the stream is open, a few words in
        process.send_signal(signal.SIGTERM)
        reader.join(timeout=60)
        assert process.wait(timeout=60) in (0, -signal.SIGTERM)
        data = [line for line in received if line.startswith("data: ")]
        assert data[-1] == "data: [DONE]"  # the open stream ran to its end
        text = "".join(
            json.loads(d[6:])["choices"][0]["delta"].get("content") or ""
            for d in data[:-1]
            if json.loads(d[6:])["choices"]
        )
        assert text == "".join(f"word{n} " for n in range(40))
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/readyz")


def test_readyz_answers_503_while_draining() -> None:
    proxy = create_app(ProxyConfig(upstream="http://127.0.0.1:9", options=Options()))
    with ServerThread(proxy) as server:
        assert httpx.get(server.url + "/readyz").status_code == 200
        proxy.draining = True
        assert httpx.get(server.url + "/readyz").status_code == 503
        assert httpx.get(server.url + "/healthz").status_code == 200
