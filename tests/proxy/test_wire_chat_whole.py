"""A stream=false answer as a Chat Completions client gets it, from each upstream wire.

On one wire the upstream's message keeps every field the gate does not rewrite (a
``refusal``, ``annotations``); from a Messages upstream the answer is a whole
``chat.completion`` with the upstream's token counts. Either way it carries the turn's
``callgate`` note.
"""

from __future__ import annotations

from callgate.proxy.engine import Engine, Options
from proxy_cases import chat_response
from test_gateway_behaviours import start
from test_gateway_corners import REQUESTS

USAGE = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


def test_a_whole_chat_answer_keeps_the_messages_other_fields_and_the_note() -> None:
    cited = [{"type": "url_citation", "url_citation": {"url": "https://example.com"}}]
    message = {"role": "assistant", "content": "Mild.", "refusal": None, "annotations": cited}
    engine = Engine(REQUESTS["chat"], Options(), client="chat", upstream="chat")
    answer = engine.whole(chat_response("up-model", message, usage=USAGE))
    assert answer["choices"][0]["message"] == message
    assert answer["usage"] == USAGE
    assert answer["callgate"] == engine.annotation()
    assert answer["callgate"]["status"] == "not_applicable"


def test_a_whole_messages_answer_reaches_a_chat_client_as_a_chat_completion() -> None:
    upstream = {
        **start()["message"],
        "content": [{"type": "text", "text": "Mild in Paris."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    engine = Engine(REQUESTS["chat"], Options(), client="chat", upstream="messages")
    answer = engine.whole(upstream)
    assert answer["object"] == "chat.completion" and answer["model"] == "claude-up"
    assert answer["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Mild in Paris."},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ]
    assert answer["usage"] == USAGE
    assert answer["callgate"] == engine.annotation()
    assert answer["callgate"]["status"] == "not_applicable"
