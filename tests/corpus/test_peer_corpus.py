"""The peer corpus: model outputs and expected calls from vLLM, SGLang and llama.cpp tests.

Every case runs whole, at 1, 2, 3 and 7 characters per delta and at seeded random
splits, with its format alone and with the default set; each gives exactly the calls and
the display the case records (see tests/corpus/peer_text.py for the sources and for
where callgate deliberately differs from the peer).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from callgate.strategies.text.detector import Detector
from callgate.strategies.text.formats import (
    DEFAULT_FORMATS,
    END_FORMATS,
    FORMATS,
    formats_for_model,
)
from callgate.testing.cuts import at_points, fixed
from corpus.peer_text import CASES, LLAMA_CPP, MILK, MODELS, MODELS_SOURCE, SGLANG, VLLM, Case


def splits(case: Case) -> list[list[str]]:
    text = case.content
    cuts = [[text], *(fixed(text, size) for size in (1, 2, 3, 7))]
    rng = random.Random(case.id)
    for _ in range(3):
        cuts.append(at_points(text, [rng.randrange(len(text) + 1) for _ in range(12)]))
    return cuts


def held_display(case: Case) -> str:
    """What a driver that chose an end format shows: its calls' content is held, never shown."""
    if not case.calls:
        return case.content
    return case.content[: len(case.content) - len(case.content.lstrip())]


def detectors(case: Case) -> list[tuple[Detector, tuple[str, list[Any]]]]:
    """Each configuration the case runs in, and what it gives there."""
    expected = (case.shown, case.calls)
    made: list[tuple[Detector, tuple[str, list[Any]]]]
    if case.format in END_FORMATS:
        made = [
            (Detector([], end_formats=[case.format], schemas=case.schemas), expected),
            (Detector([case.format], schemas=case.schemas), (held_display(case), case.calls)),
        ]
    else:
        made = [(Detector([case.format], schemas=case.schemas), expected)]
        if case.format in DEFAULT_FORMATS and not case.alone:
            made.append((Detector(schemas=case.schemas), expected))
    if case.formats is not None:
        made.append((Detector(case.formats, schemas=case.schemas), expected))
    return made


def run(detector: Detector, pieces: list[str], *, cut: bool = False) -> tuple[str, list[Any]]:
    steps = [detector.feed(p) for p in pieces]
    steps.append(detector.finish(cut=cut))
    calls = [(c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls]
    return "".join(s.shown for s in steps), calls


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_peer_case_gives_its_calls_and_display_for_every_split(case: Case) -> None:
    for detector, expected in detectors(case):
        for pieces in splits(case):
            detector.reset()
            assert run(detector, pieces) == expected, (detector.end_formats, pieces[:3])


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.cut_shows], ids=[c.id for c in CASES if c.cut_shows]
)
def test_a_call_whose_close_was_the_stop_sequence_is_text_when_the_stream_was_cut(
    case: Case,
) -> None:
    for detector, _ in detectors(case):
        for pieces in splits(case):
            detector.reset()
            assert run(detector, pieces) == (case.shown, case.calls)
            detector.reset()
            assert run(detector, pieces, cut=True) == (case.content, []), pieces[:3]


def test_the_corpus_is_large_sourced_and_covers_every_format() -> None:
    assert len(CASES) >= 300
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.source[0] for c in CASES} == {VLLM, SGLANG, LLAMA_CPP, MILK}
    assert all(c.format in FORMATS and c.source[1] and c.source[2] for c in CASES)
    negatives = [c for c in CASES if not c.calls]
    assert len(negatives) >= 60
    per_format = Counter(c.format for c in CASES)
    assert set(per_format) == set(FORMATS) - {"codec"}, set(FORMATS) - set(per_format)


@pytest.mark.parametrize(("model", "guess", "formats", "differs"), MODELS)
def test_the_go_detectors_model_guesses_are_callgates_first_format_or_a_stated_difference(
    model: str, guess: str, formats: tuple[str, ...], differs: str | None
) -> None:
    assert MODELS_SOURCE[0] == MILK
    assert formats_for_model(model) == formats
    if differs is None:
        assert formats[:1] == ((guess,) if guess else ())
    else:
        assert formats[:1] != ((guess,) if guess else ())
