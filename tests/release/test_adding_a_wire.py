"""docs/architecture.md's "Adding a wire" and "Adding a text format", followed to the letter.

A copy of the package and its tests gets a toy wire (Ollama's chat lines, each wrapped in
``{"toy": line}``) and a toy text format (a call between ``<<toy>>`` and ``<</toy>>``),
each file written or edited as the document's steps say; then the suite's tests that run
per wire and per format run against the copy. A step the document misses fails here
(a wire-keyed table of some test without the toy), and so does a step this test does
that the document does not name: the files each procedure touches are the files the
section names.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

TOY_STRATEGY = '''"""A toy wire: Ollama's chat lines, each wrapped in ``{"toy": line}``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import evolve

from callgate.gate.turn import TurnGate
from callgate.strategies.base import ExtractedCall, ExtractionStrategy, Shape, ToolResult
from callgate.strategies.ollama import OLLAMA, OllamaStrategy

_OLLAMA = OllamaStrategy()


class ToyStrategy(ExtractionStrategy):
    """Ollama's reader over the unwrapped lines (a wire of its own, not an Ollama kind)."""

    name = "toy"
    leaks_into_text = True
    requires_id = False
    empty_arguments_object = True
    reports_stray_chunks = True

    def recognizes(self, shape: Shape) -> bool:
        """A line wrapped in ``toy``."""
        return isinstance(shape.get("toy"), Mapping)

    def new_accumulator(self, gate: TurnGate) -> Any:
        """Ollama's accumulator."""
        return _OLLAMA.new_accumulator(gate)

    def accumulate(self, acc: Any, chunk: Shape) -> str:
        """Ollama's accumulation of the wrapped line; a line not wrapped is a stray one."""
        inner = chunk.get("toy")
        if isinstance(inner, Mapping):
            return _OLLAMA.accumulate(acc, inner)
        acc.gate.stray(chunk)
        return _OLLAMA.accumulate(acc, chunk)

    def whole_arguments(self, acc: Any, key: int) -> object:
        """Ollama's."""
        return _OLLAMA.whole_arguments(acc, key)

    def is_done(self, chunk: Shape) -> bool:
        """Ollama's done line, wrapped."""
        inner = chunk.get("toy")
        return isinstance(inner, Mapping) and _OLLAMA.is_done(inner)

    def message(self, acc: Any) -> dict[str, Any]:
        """Ollama's message."""
        return _OLLAMA.message(acc)

    def extract(self, message: Shape) -> list[ExtractedCall]:
        """Ollama's calls."""
        return _OLLAMA.extract(message)

    def forming(self, message: Shape) -> Any:
        """Ollama's."""
        return _OLLAMA.forming(message)

    def replay(self, message: Shape) -> list[dict[str, Any]]:
        """Ollama's lines of a message, each wrapped."""
        return [{"toy": line} for line in _OLLAMA.replay(message)]

    def content_text(self, message: Shape) -> str:
        """Ollama's."""
        return _OLLAMA.content_text(message)

    def history(self, message: Shape) -> list[dict[str, Any]]:
        """Ollama's."""
        return _OLLAMA.history(message)

    def answerable(self, *args: Any, **kwargs: Any) -> Any:
        """Ollama's."""
        return _OLLAMA.answerable(*args, **kwargs)

    def result_messages(self, results: Sequence[ToolResult]) -> list[dict[str, Any]]:
        """Ollama's."""
        return _OLLAMA.result_messages(results)


TOY = evolve(OLLAMA, name="toy", strategy=ToyStrategy, recognition=7, sdk=None, systems=())
"""The toy wire: chosen automatically after every real wire."""
'''

TOY_ENCODER = '''"""The toy wire's encoder: Ollama's lines, each wrapped in ``{"toy": line}``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from callgate.strategies.toy import TOY
from callgate.strategies.wire import Wire
from callgate.testing.wires.base import Chunk
from callgate.testing.wires.ollama import OllamaEncoder


@dataclass
class ToyEncoder(OllamaEncoder):
    """Ollama's encoder, each line wrapped."""

    WIRE: ClassVar[Wire] = TOY
    wire: str = TOY.name
    QUIRKS: tuple[str, ...] = TOY.quirks

    def line(self, message: Chunk, done: bool = False, reason: str = "stop") -> Chunk:
        return {"toy": super().line(message, done, reason)}

    def pack(self, chunks: Sequence[Chunk]) -> Chunk:
        return {"toy": super().pack([c["toy"] for c in chunks])}

    def error(self) -> Chunk:
        return {"toy": super().error()}
'''

TOY_WIRE_TEST = '''"""The toy wire reads Ollama's lines wrapped in ``toy``."""

from callgate import LLMStreamBuffer


def test_a_wrapped_call_runs() -> None:
    line = {"model": "m", "message": {"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}, "done": False}
    end = {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True,
           "done_reason": "stop"}
    buffer = LLMStreamBuffer(tool_schemas={"f": {"type": "object"}})
    buffer.add({"toy": line})
    buffer.add({"toy": end})
    buffer.end()
    assert buffer.executable and buffer.turn_state == "executable"
'''


def edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must be there once) by ``new`` in ``path``."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: {old!r} is not there once"
    path.write_text(text.replace(old, new), encoding="utf-8")


def wire_step_1(copy: Path) -> None:
    """The strategy, its record at the end of its module."""
    (copy / "src/callgate/strategies/toy.py").write_text(TOY_STRATEGY, encoding="utf-8")


def wire_step_2(copy: Path) -> None:
    """The record joins ``WIRE_RECORDS``, the class ``__all__``."""
    init = copy / "src/callgate/strategies/__init__.py"
    edit(
        init,
        "from callgate.strategies.wire import",
        "from callgate.strategies.toy import TOY, ToyStrategy\n"
        "from callgate.strategies.wire import",
    )
    edit(init, "COHERE, OLLAMA)", "COHERE, OLLAMA, TOY)")
    edit(init, '    "ToolResult",\n', '    "ToolResult",\n    "ToyStrategy",\n')


def wire_step_4(copy: Path) -> None:
    """The kit's encoder and its class in ``ENCODER_CLASSES``."""
    wires = copy / "src/callgate/testing/wires"
    (wires / "toy.py").write_text(TOY_ENCODER, encoding="utf-8")
    edit(wires / "__init__.py", "    OllamaEncoder,\n)", "    OllamaEncoder,\n    ToyEncoder,\n)")
    edit(
        wires / "__init__.py",
        "from callgate.testing.wires.responses",
        "from callgate.testing.wires.toy import ToyEncoder\nfrom callgate.testing.wires.responses",
    )


def wire_step_5(copy: Path) -> None:
    """A fixture per fault the other wires have (Ollama's, wrapped); the wire's shapes."""
    examples = copy / "src/callgate/examples"
    for source in sorted(examples.glob("ollama_*.json")):
        data = json.loads(source.read_text(encoding="utf-8"))
        data["profile"] = "toy"
        data["chunks"] = [{"toy": c} if isinstance(c, dict) else c for c in data["chunks"]]
        target = examples / source.name.replace("ollama_", "toy_", 1)
        target.write_text(json.dumps(data, indent=1), encoding="utf-8")
    with (copy / "docs/wire-formats.md").open("a", encoding="utf-8") as page:
        page.write("\n## toy\n\nOllama's lines, each wrapped in `toy`.\n")


def wire_step_6(copy: Path) -> None:
    """The SDK check of its specs, the reader's own test, its results' shape."""
    tooldefs = copy / "tests/driver/test_tool_defs.py"
    edit(
        tooldefs,
        '    "mistral": test_cohere',
        '    "toy": test_cohere_ollama_and_mistral_take_the_chat_completions_shape,\n'
        '    "mistral": test_cohere',
    )
    (copy / "tests/wires/test_toy.py").write_text(TOY_WIRE_TEST, encoding="utf-8")
    results = copy / "tests/driver/test_results.py"
    edit(
        results,
        'EXPECTED["mistral"] = EXPECTED["openai"]',
        'EXPECTED["mistral"] = EXPECTED["openai"]\nEXPECTED["toy"] = EXPECTED["ollama"]',
    )
    stray = copy / "tests/wires/test_stray_chunks.py"
    edit(
        stray,
        '    "ollama": "ollama_parallel_calls",\n',
        '    "ollama": "ollama_parallel_calls",\n    "toy": "toy_parallel_calls",\n',
    )


WIRE_STEPS: dict[str, Callable[[Path], None]] = {
    "src/callgate/strategies/<wire>.py": wire_step_1,
    "src/callgate/strategies/__init__.py": wire_step_2,
    "src/callgate/testing/wires/<wire>.py": wire_step_4,
    "src/callgate/examples/<wire>_*.json": wire_step_5,
    "tests/driver/test_tool_defs.py": wire_step_6,
}


def copy_of_the_checkout(target: Path) -> Path:
    """The package, its tests (without the npm installs) and its docs, copied to ``target``."""
    skip = shutil.ignore_patterns("__pycache__", "node_*", ".hypothesis", "*.pyc")
    for part in ("src", "tests", "docs"):
        shutil.copytree(ROOT / part, target / part, ignore=skip)
    shutil.copy2(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


TOY_PARSER = '''

def parse_toy(payload: str, schemas: Schemas | None) -> list[TextCall] | None:
    """The toy format's payload: the Hermes JSON (one call or a list)."""
    return parse_tool_call_json(payload, schemas)
'''


def format_step_1(copy: Path) -> None:
    """The parser, in its family's payload module and its ``*_PARSERS`` table."""
    module = copy / "src/callgate/strategies/text/json_payloads.py"
    edit(
        module,
        "\n\nJSON_PARSERS: dict[str, Parser] = {\n",
        TOY_PARSER + '\n\nJSON_PARSERS: dict[str, Parser] = {\n    "toy_tag": parse_toy,\n',
    )


def format_step_2(copy: Path) -> None:
    """Its ``TextFormat`` in ``FORMATS``."""
    toy = (
        'TextFormat("toy_tag", ("<<toy>>",), "<</toy>>", JSON_PARSERS["toy_tag"], '
        '_starts("{", "[")),'
    )
    edit(
        copy / "src/callgate/strategies/text/formats.py",
        "    )\n}  # fmt: skip",
        f"        {toy}\n    )\n}}  # fmt: skip",
    )


def format_step_3(copy: Path) -> None:
    """A sample as the model writes it."""
    call = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    sample = (
        f'    "toy_tag": [(\'<<toy>>{call}<</toy>>\', [("get_weather", {{"city": "Paris"}})])],\n'
    )
    head = "\nSAMPLES: dict[str, list[tuple[str, list[Call]]]] = {\n"
    edit(copy / "src/callgate/testing/text.py", head, head + sample)


def format_step_4(copy: Path) -> None:
    """Its row in docs/text-formats.md."""
    row = '| `toy_tag` | `<<toy>>` | `<</toy>>` | JSON `{"name", "arguments"}` | none: a toy |\n'
    edit(
        copy / "docs/text-formats.md",
        "| `tool_call_tag` | `<tool_call>`",
        row + "| `tool_call_tag` | `<tool_call>`",
    )


FORMAT_STEPS: dict[str, Callable[[Path], None]] = {
    "strategies/text/json_payloads.py": format_step_1,
    "src/callgate/strategies/text/formats.py": format_step_2,
    "src/callgate/testing/text.py": format_step_3,
    "docs/text-formats.md": format_step_4,
}

WIRE_TESTS = [
    "tests/wires/test_wire_records.py",
    "tests/wires/test_toy.py",
    "tests/wires/test_stray_chunks.py",
    "tests/wires/test_whole_message.py",
    "tests/wires/test_every_wire_stateful.py",
    "tests/driver/test_tool_defs.py",
    "tests/driver/test_results.py",
    "tests/driver/test_history.py",
    "tests/driver/test_quiet_step.py",
    "tests/testing_kit/test_testing_kit.py",
    "tests/cli/test_check.py",
    "tests/cli/test_any_input.py",
    "tests/buffer/test_one_verdict.py",
    "tests/buffer/test_robustness.py",
    "tests/buffer/test_partial_calls.py",
    "tests/buffer/test_token_limit.py",
    "tests/gate/test_text_limit_exact.py",
    "tests/text/test_stream_start_and_end.py",
]
"""The suite's files with tests run per wire: the toy's run, and the tables of the first
files run whole (a wire-keyed table without the toy fails there)."""

FORMAT_TESTS = [
    "tests/text/test_detector_splits.py",
    "tests/text/test_text_strategies.py",
    "tests/text/test_detector.py",
    "tests/text/test_default_formats.py",
    "tests/text/test_detector_held_payloads.py",
    "tests/cli/test_replay_text_formats.py",
]
"""The suite's files with tests run per text format."""

WHOLE = ("test_wire_records", "test_tool_defs", "test_results", "test_text_strategies")
"""Files run whole: their tables keyed by wire or format must hold the toy too."""


def named_in(section: str) -> list[str]:
    """The file paths that a section of docs/architecture.md names (``<wire>`` kept)."""
    text = DOC.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`([\w./<>*-]+\.(?:py|md|json))`", body)


def touched(copy: Path) -> list[str]:
    """The files of ``copy`` that are new or differ from the checkout's, relative paths."""
    changed = []
    for path in sorted(copy.rglob("*")):
        relative = path.relative_to(copy)
        original = ROOT / relative
        fresh = path.is_file() and "__pycache__" not in relative.parts
        if fresh and (not original.is_file() or original.read_bytes() != path.read_bytes()):
            changed.append(relative.as_posix())
    return changed


def is_named(path: str, named: list[str]) -> bool:
    """Whether ``path`` is one the section names (its end, with ``<wire>``/``*`` filled)."""
    return any(
        re.fullmatch(
            r".*" + re.escape(n).replace(re.escape("<wire>"), "toy").replace(r"\*", ".*"), path
        )
        or path.endswith("/" + n)
        for n in named
    )


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout with the toy wire and the toy format added, step by step."""
    copy = copy_of_the_checkout(tmp_path_factory.mktemp("checkout"))
    for step in [*WIRE_STEPS.values(), *FORMAT_STEPS.values()]:
        step(copy)
    return copy


@pytest.mark.parametrize(
    ("section", "steps"), [("Adding a wire", WIRE_STEPS), ("Adding a text format", FORMAT_STEPS)]
)
def test_each_step_edits_only_files_the_section_names(
    tmp_path: Path, section: str, steps: dict[str, Callable[[Path], None]]
) -> None:
    named = named_in(section)
    assert all(key in named for key in steps), (section, sorted(set(steps) - set(named)))
    copy = copy_of_the_checkout(tmp_path)
    for step in steps.values():
        step(copy)
    unnamed = [path for path in touched(copy) if not is_named(path, named)]
    assert unnamed == [], f"{section} does not name {unnamed}"


def test_the_suites_wire_and_format_tests_pass_with_the_toys_added(followed: Path) -> None:
    selection = " or ".join(("toy", *WHOLE))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"]
    command += [*WIRE_TESTS, *FORMAT_TESTS, "-k", selection]
    env = {**os.environ, "PYTHONPATH": str(followed / "src")}
    run = subprocess.run(
        command, cwd=followed, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    assert passed >= 150, summary
