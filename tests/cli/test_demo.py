"""``callgate demo``: the bundled scenarios play as documented, and a mismatch is loud."""

from __future__ import annotations

import attrs
import pytest

from callgate.cli import commands as cli
from callgate.cli import demo
from callgate.cli.commands import main
from callgate.cli.demo import Played, play, scenarios

SCENARIOS = {s.name: s for s in scenarios()}


def played(name: str) -> Played:
    return play(SCENARIOS[name])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_behaves_as_its_expect_block_says(name: str) -> None:
    result = played(name)
    assert result.outcome == dict(SCENARIOS[name].expect)
    assert result.as_documented


def test_the_scenarios_cover_what_the_demo_promises() -> None:
    profiles = {s.profile for s in SCENARIOS.values()}
    assert {"openai", "anthropic", "bedrock"} <= profiles
    assert {s.policy for s in SCENARIOS.values()} == {"turn", "call"}
    assert any(len(s.drivers) >= 3 for s in SCENARIOS.values()), "fan-out over drivers"


def test_parallel_native_calls_all_run_at_the_turn_end_and_not_before() -> None:
    result = played("1_openai_parallel_calls")
    rounds_with_runs = [i for i, rd in enumerate(result.rounds) if rd.ran]
    finish = len(SCENARIOS["1_openai_parallel_calls"].chunks) - 1
    assert rounds_with_runs == [finish]
    assert [driver for driver, _ in result.rounds[finish].ran] == ["weather", "clock", "web"]


def test_a_leaked_call_is_held_never_shown_and_runs_once() -> None:
    result = played("2_anthropic_leaked_call")
    assert not any("<" in rd.shown or "{" in rd.shown for rd in result.rounds)
    assert max(rd.held for rd in result.rounds) > 20
    assert result.rounds[-1].held == 0
    assert result.ran == ["get_weather"]


def test_schema_typed_raw_values_reach_the_tool() -> None:
    result = played("3_qwen_xml_in_content")
    [(_, ran)] = [r for rd in result.rounds for r in rd.ran]
    assert ran.call.arguments == {"city": "Oslo", "days": 3}
    assert ran.content.startswith("3-day forecast for Oslo")


def test_a_call_nobody_owns_is_released_whole_before_its_close() -> None:
    result = played("4_call_nobody_owns")
    released = next(i for i, rd in enumerate(result.rounds) if "<tool_call>" in rd.shown)
    closing = next(i for i, rd in enumerate(result.rounds) if "ol_call>" in rd.added)
    assert released < closing
    assert result.ran == [] and result.rounds[-1].held == 0
    assert all("failed" not in move for rd in result.rounds for move in rd.moves)


def test_the_adversarial_stream_is_refused_with_a_corrective_result() -> None:
    result = played("5_adversarial_restart")
    [(driver, answer)] = [r for rd in result.rounds for r in rd.ran]
    assert driver == "weather" and answer.refused and answer.is_error
    assert "identity_collision" in answer.content
    assert any(f.startswith("identity_collision") for f in result.findings)


def test_under_the_call_policy_the_first_call_runs_before_the_second_opens() -> None:
    result = played("6_bedrock_call_policy")
    ran = {r.call.name: i for i, rd in enumerate(result.rounds) for _, r in rd.ran}
    opened = next(i for i, rd in enumerate(result.rounds) if "search opens" in rd.added)
    assert ran["get_weather"] < opened < ran["search"]


def test_the_command_prints_the_timeline_and_exits_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for scenario in SCENARIOS.values():
        assert scenario.title in out
    assert f"{len(SCENARIOS)} of {len(SCENARIOS)} demo streams behaved as documented" in out
    assert "↳ weather ran get_weather" in out and "↳ weather refused get_weather" in out
    assert "NOT as documented" not in out


def test_a_scenario_that_misbehaves_fails_the_demo_and_says_how(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = scenarios()
    wrong = attrs.evolve(real[0], expect={**real[0].expect, "ran": []})
    monkeypatch.setattr(demo, "scenarios", lambda: [wrong, *real[1:]])
    assert cli.main(["demo"]) == 1
    out = capsys.readouterr().out
    assert "NOT as documented" in out
    assert f"{len(real) - 1} of {len(real)} demo streams behaved as documented" in out
