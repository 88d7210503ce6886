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
from callgate.strategies.text.formats import DEFAULT_FORMATS, END_FORMATS, FORMATS
from callgate.testing.cuts import at_points, fixed
from corpus.peer_text import CASES, LLAMA_CPP, SGLANG, VLLM, Case


def splits(case: Case) -> list[list[str]]:
    text = case.content
    cuts = [[text], *(fixed(text, size) for size in (1, 2, 3, 7))]
    rng = random.Random(case.id)
    for _ in range(3):
        cuts.append(at_points(text, [rng.randrange(len(text) + 1) for _ in range(12)]))
    return cuts


def detectors(case: Case) -> list[Detector]:
    if case.format in END_FORMATS:
        return [Detector([], end_formats=[case.format], schemas=case.schemas)]
    made = [Detector([case.format], schemas=case.schemas)]
    if case.format in DEFAULT_FORMATS and not case.alone:
        made.append(Detector(schemas=case.schemas))
    return made


def run(detector: Detector, pieces: list[str]) -> tuple[str, list[Any]]:
    steps = [detector.feed(p) for p in pieces]
    steps.append(detector.finish())
    calls = [(c.name, c.arguments) for s in steps for b in s.blocks for c in b.calls]
    return "".join(s.shown for s in steps), calls


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_peer_case_gives_its_calls_and_display_for_every_split(case: Case) -> None:
    expected = (case.shown, case.calls)
    for detector in detectors(case):
        for pieces in splits(case):
            detector.reset()
            assert run(detector, pieces) == expected, (detector.end_formats, pieces[:3])


def test_the_corpus_is_large_sourced_and_covers_every_format() -> None:
    assert len(CASES) >= 300
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.source[0] for c in CASES} == {VLLM, SGLANG, LLAMA_CPP}
    assert all(c.format in FORMATS and c.source[1] and c.source[2] for c in CASES)
    negatives = [c for c in CASES if not c.calls]
    assert len(negatives) >= 60
    per_format = Counter(c.format for c in CASES)
    assert set(per_format) == set(FORMATS) - {"codec"}, set(FORMATS) - set(per_format)
