"""The proxy on the OpenAI Responses wire: the engine, and the openai SDK over loopback.

Every recorded Responses stream of tests/captures, whole and one character per text
delta, gives the client what callgate's buffer and driver give (replay); a call leaked
into a local model's text on ``/v1/responses`` becomes a ``function_call`` item, read by
the openai SDK's ``responses.stream(...).get_final_response()``; native calls wait for
``response.completed`` and the gate; a cut turn delivers no call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from callgate.cli.replay import replay
from callgate.proxy.app import ProxyConfig, create_app
from callgate.proxy.engine import GatedResponses, Options
from callgate.proxy.notices import call_notice
from callgate.proxy.serving import ServerThread
from callgate.proxy.upstream import ReplayUpstream, Script, sse_body
from callgate.strategies.responses import ResponsesStrategy
from proxy_cases import NOT_RUN, QWEN, WEATHER, responses_request, wire_captures
from proxy_cases import responses_by_char as by_char

NOTICE = Options(on_blocked="notice")
CAPTURES = wire_captures("openai-responses")


def play(request: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """The events through the engine; the Response its ending event carries."""
    turn = GatedResponses(request, NOTICE)
    out: list[dict[str, Any]] = []
    for event in events:
        out += turn.feed(event)
    out += turn.finish()
    kinds = [e["type"] for e in out]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] in ("response.completed", "response.incomplete", "response.failed")
    assert [e["sequence_number"] for e in out] == list(range(len(out)))
    added = [e["output_index"] for e in out if e["type"] == "response.output_item.added"]
    assert added == list(range(len(added)))
    return turn.assemble(None, out)


def summary(response: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    text = "".join(
        part.get("text", "")
        for item in response["output"]
        if item["type"] == "message"
        for part in item["content"]
    )
    calls = [
        (i["name"], json.loads(i["arguments"]))
        for i in response["output"]
        if i["type"] == "function_call"
    ]
    return text, calls


def expected(request: dict[str, Any], events: list[dict[str, Any]]) -> tuple[str, list[Any], str]:
    schemas = {t["name"]: t["parameters"] for t in request.get("tools", [])}
    result = replay(events, schemas)
    calls = (
        [(c["name"], c["arguments"]) for c in result["calls"]] if result["status"] == "pass" else []
    )
    return result["display"], calls, result["status"]


@pytest.mark.parametrize(("name", "events"), CAPTURES, ids=[c[0] for c in CAPTURES])
def test_a_recorded_responses_stream_gives_what_the_buffer_and_driver_give(
    name: str, events: list[dict[str, Any]]
) -> None:
    request = responses_request(events, stream=True)
    for played in (events, by_char(events)):
        response = play(request, played)
        text, calls = summary(response)
        display, want, status = expected(request, played)
        assert calls == want, name
        assert text == display or (status == "fail" and NOT_RUN.search(text) is not None), name
        assert response["callgate"]["status"] in (status, "fail"), name


QWEN_RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1700000000,
    "status": "completed",
    "model": "qwen3-30b-a3b",
    "output": [
        {
            "id": "msg_up",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": QWEN, "annotations": []}],
        }
    ],
    "usage": {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14},
}
QWEN_REQUEST = {
    "model": "qwen3-30b-a3b",
    "input": "weather?",
    "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER["get_weather"]}],
    "stream": True,
}


def call_item(arguments: str) -> dict[str, Any]:
    """A whole function_call output item of get_weather."""
    return {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": arguments,
    }


def qwen_events() -> list[dict[str, Any]]:
    return by_char(ResponsesStrategy().replay(QWEN_RESPONSE))


def test_a_call_leaked_into_responses_text_becomes_a_function_call_item() -> None:
    response = play(QWEN_REQUEST, qwen_events())
    assert summary(response) == ("Let me check.", [("get_weather", {"city": "Paris"})])
    call = response["output"][1]
    assert call["call_id"].startswith("call_") and call["id"].startswith("fc_")
    assert response["status"] == "completed"
    assert response["usage"] == QWEN_RESPONSE["usage"]


def test_a_native_call_waits_for_completed_and_a_cut_turn_delivers_none() -> None:
    item = call_item('{"city": "Paris"}')
    whole = {**QWEN_RESPONSE, "output": [item]}
    events = ResponsesStrategy().replay(whole)
    turn = GatedResponses(QWEN_REQUEST, NOTICE)
    before = [e for event in events[:-1] for e in turn.feed(event)]
    assert not any(e["type"].startswith("response.function_call") for e in before)
    assert summary(play(QWEN_REQUEST, events))[1] == [("get_weather", {"city": "Paris"})]
    assert play(QWEN_REQUEST, events)["output"][0]["id"] == "fc_1"
    cut = [
        *events[:-1],
        {
            "type": "response.incomplete",
            "response": {
                **whole,
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
            },
        },
    ]
    response = play(QWEN_REQUEST, cut)
    assert summary(response)[1] == [] and response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    stopped = play(QWEN_REQUEST, events[:-1])
    assert summary(stopped)[1] == []


def test_an_invalid_call_is_withheld_with_a_notice() -> None:
    item = call_item('{"town": "Paris"}')
    response = play(QWEN_REQUEST, ResponsesStrategy().replay({**QWEN_RESPONSE, "output": [item]}))
    text, calls = summary(response)
    assert calls == [] and text.endswith("\n\n" + call_notice(["get_weather"], "arguments"))
    assert response["callgate"]["withheld"] == ["get_weather"]


def test_a_repair_asks_again_with_the_output_items_and_their_results() -> None:
    item = call_item('{"town": "Paris"}')
    turn = GatedResponses(QWEN_REQUEST, Options(on_blocked="repair", repairs=1))
    for event in ResponsesStrategy().replay({**QWEN_RESPONSE, "output": [item]}):
        turn.feed(event)
    turn.finish()
    assert turn.repair is not None
    given = turn.repair["input"]
    assert given[0] == {"role": "user", "content": "weather?"}
    assert given[1]["type"] == "function_call" and given[1]["call_id"] == "call_1"
    assert given[2]["type"] == "function_call_output" and "schema_invalid" in given[2]["output"]


# -- over loopback, with the openai SDK -------------------------------------------------


class Scripts:
    def __init__(self) -> None:
        self.next = Script(b"")
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.app = ReplayUpstream(self.pick)
        self.url = ""
        """The upstream's own address (for the SDK without callgate)."""

    def pick(self, path: str, body: dict[str, Any]) -> Script:
        self.seen.append((path, body))
        return self.next


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Scripts, str]]:
    scripts = Scripts()
    with (
        ServerThread(scripts.app) as up,
        ServerThread(create_app(ProxyConfig(upstream=up.url, options=NOTICE))) as proxy,
    ):
        scripts.url = up.url
        yield scripts, proxy.url


def sdk_stream(url: str, request: dict[str, Any]) -> Any:
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-loopback", max_retries=0)
    kwargs = {k: v for k, v in request.items() if k != "stream"}
    with client.responses.stream(**kwargs) as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def test_the_sdk_stream_helper_reads_the_leaked_call_as_a_function_call(
    servers: tuple[Scripts, str],
) -> None:
    scripts, url = servers
    scripts.next = Script(sse_body(qwen_events(), done=False, named=True), write_sizes=(7, 3))
    final = sdk_stream(url, QWEN_REQUEST)
    assert [i.type for i in final.output] == ["message", "function_call"]
    assert final.output_text == "Let me check."
    assert final.output[1].name == "get_weather"
    assert json.loads(final.output[1].arguments) == {"city": "Paris"}
    assert scripts.seen[-1][0] == "/v1/responses"


@pytest.mark.parametrize(("name", "events"), CAPTURES, ids=[c[0] for c in CAPTURES])
def test_every_recorded_responses_stream_reaches_the_sdk_as_callgate_gives_it(
    servers: tuple[Scripts, str], name: str, events: list[dict[str, Any]]
) -> None:
    scripts, url = servers
    request = responses_request(events, stream=True)
    scripts.next = Script(sse_body(events, done=False, named=True))
    display, want, _ = expected(request, events)
    try:
        final = sdk_stream(url, request)
    except (RuntimeError, openai.APIError) as refused:
        # only where the SDK refuses the upstream's own stream the same way (an error
        # event, no response.completed), never for what callgate wrote
        with pytest.raises(type(refused)):
            sdk_stream(scripts.url, request)
        assert play(request, events)["status"] != "completed" or want == []
        return

    calls = [(i.name, json.loads(i.arguments)) for i in final.output if i.type == "function_call"]
    assert calls == want, name
    assert final.output_text.startswith(display), name


def test_a_whole_response_over_loopback_and_the_metrics(servers: tuple[Scripts, str]) -> None:
    scripts, url = servers
    scripts.next = Script(json.dumps(QWEN_RESPONSE).encode(), content_type="application/json")
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    kwargs = {k: v for k, v in QWEN_REQUEST.items() if k != "stream"}
    response = client.responses.create(**kwargs)
    assert [i.type for i in response.output] == ["message", "function_call"]
    assert response.output_text == "Let me check."
    metrics = httpx.get(url + "/metrics").text
    assert 'wire="openai-responses"' in metrics


def test_a_hosted_tool_beside_the_functions_is_the_servers_and_not_gated() -> None:
    request = {**QWEN_REQUEST, "tools": [{"type": "web_search"}, *QWEN_REQUEST["tools"]]}
    response = play(request, qwen_events())
    assert summary(response) == ("Let me check.", [("get_weather", {"city": "Paris"})])


def test_a_responses_turns_audit_record_replays_exactly(tmp_path: Any) -> None:
    from callgate.proxy.audit import AUDIT_FILE, load_records, reproduce, same_turn

    scripts = Scripts()
    scripts.next = Script(sse_body(qwen_events(), done=False, named=True), write_sizes=(7, 3))
    with ServerThread(scripts.app) as up:
        config = ProxyConfig(upstream=up.url, options=NOTICE, audit_dir=tmp_path)
        with ServerThread(create_app(config)) as proxy:
            sdk_stream(proxy.url, QWEN_REQUEST)
    (record,) = load_records((tmp_path / AUDIT_FILE).read_text(encoding="utf-8"))
    assert record["turn"]["wire"] == "openai-responses"
    assert [c["name"] for c in record["turn"]["calls"]] == ["get_weather"]
    again = reproduce(record)
    assert same_turn(record["turn"], again["turn"])
    assert again["output"][-1]["type"] == "response.completed"
