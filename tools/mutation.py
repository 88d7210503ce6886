"""Mutation testing of callgate's core with mutmut: full runs per module and a CI sample.

mutmut is imported where mutants are made or read, so the maps can be checked without it.

Each core module is mutated on its own, in a scratch copy of the project under
``build/mutation/<module>/``, against only the test files listed for it in :data:`MODULES`;
within those, mutmut runs for each mutant only the tests that call the mutated function.
Equivalent mutants (no test can tell them apart from the original) are listed with the
reason in ``tools/mutation_equivalents.py`` and left out of the score.

    python tools/mutation.py run [MODULE ...]      full run, score per module
    python tools/mutation.py survivors MODULE      diffs of the last run's survivors
    python tools/mutation.py rerun MODULE          those survivors again, with current tests
    python tools/mutation.py tables [TABLE ...]    the machine tables' transitions
    python tools/mutation.py sample                fixed-seed sample; exit 1 under the floor
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import random
import runpy
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "mutation"
sys.path.insert(0, str(ROOT / "tools"))

from mutation_equivalents import EQUIVALENT  # noqa: E402

FLOOR = 0.90
"""The kill rate every module must reach, equivalent mutants left out."""

SEED = 15
SAMPLE_PER_MODULE = 12
"""Mutants per module in the CI sample: enough to catch a collapse, small enough for CI."""

_MUTMUT = str(Path(sys.executable).parent / "mutmut")

KILLED = {"killed", "timeout", "caught by type check", "segfault"}


@dataclass(frozen=True)
class Module:
    """One module under mutation and the test files that exercise its behaviour."""

    path: str
    tests: tuple[str, ...]


_NATIVE = (
    "tests/buffer/test_buffer.py",
    "tests/cli/test_check.py",
    "tests/cli/test_replay.py",
    "tests/wires/test_contract_corners.py",
    "tests/wires/test_captures.py",
    "tests/driver/test_history.py",
    "tests/gate/test_text_and_findings_limits.py",
    "tests/buffer/test_growth.py",
    "tests/wires/test_native_messages.py",
    "tests/buffer/test_seed_interface.py",
    "tests/wires/test_whole_message.py",
    "tests/buffer/test_pipeline_defects.py",
    "tests/wires/test_openai_chat_fast_reader.py",
    "tests/text/test_cut_off_calls.py",
)

_LEDGER = (
    "tests/ledger/test_ledger.py",
    "tests/ledger/test_ledger_stores.py",
    "tests/ledger/test_ledger_records.py",
    "tests/ledger/test_ledger_redis.py",
)
"""The ledger's behaviour tests, in process: the at-most-once tests start worker processes,
which import the project outside mutmut's copy (their Redis cases fail its first pass)."""

_GATE = (
    *_NATIVE,
    "tests/gate/test_turn_gate_rules.py",
    "tests/gate/test_byte_limit_grants.py",
    "tests/gate/test_fragment_not_text.py",
    "tests/gate/test_text_calls.py",
    "tests/gate/test_late_fragments.py",
    "tests/gate/test_notes_and_disagreements.py",
    "tests/buffer/test_token_limit.py",
    "tests/buffer/test_clean_end.py",
)
"""The gate's behaviour tests: the turn gate and its parts (slots, text calls, release, verdict)."""

_OPENAI = (
    *_NATIVE,
    "tests/wires/test_openai_chat.py",
    "tests/wires/test_openai_chat_choices.py",
    "tests/wires/test_openai_chat_stop.py",
    "tests/wires/test_openai_chat_replay.py",
    "tests/wires/test_openai_chat_own_gate.py",
    "tests/wires/test_openai_chat_entries.py",
    "tests/wires/test_openai_chat_errors.py",
    "tests/wires/test_openai_chat_fast_add.py",
    "tests/wires/test_fast_add_mappings.py",
    "tests/wires/test_stray_chunks.py",
    "tests/buffer/test_token_limit.py",
    "tests/buffer/test_clean_end.py",
    "tests/buffer/test_mcs_shapes.py",
    "tests/buffer/test_turn_failures.py",
)
"""The OpenAI strategy's behaviour tests: the strategy and its choice accumulator, read
by the buffer's every path (the wire's own ``add``, chunks as mappings, stray chunks),
its usage against ``max_tokens``, its clean end, a relay's trailing chunk, SDK helper
events."""

_RESPONSES = ("tests/wires/test_openai_responses.py", "tests/wires/test_openai_responses_events.py")
"""The Responses strategy's behaviour tests: the strategy and its output items."""

_DETECTOR = (
    "tests/text/test_detector.py",
    "tests/text/test_detector_held_payloads.py",
    "tests/text/test_text_strategies.py",
    "tests/text/test_detector_blocks.py",
    "tests/fsm/test_detector_transitions.py",
    "tests/text/test_scan_tables.py",
    "tests/text/test_value_end_release.py",
    "tests/text/test_detector_collect.py",
)
"""The detector's behaviour tests: the detector and its scanning parts."""

_GATEWAY = (
    "tests/proxy/test_proxy_engine.py",
    "tests/proxy/test_proxy_translation.py",
    "tests/proxy/test_gateway_behaviours.py",
    "tests/proxy/test_gateway_forms.py",
    "tests/proxy/test_gateway_reasoning.py",
    "tests/proxy/test_gateway_records.py",
    "tests/proxy/test_proxy_anthropic_wire.py",
    "tests/proxy/test_proxy_responses_wire.py",
    "tests/proxy/test_proxy_repair_ends.py",
    "tests/proxy/test_gateway_edges.py",
    "tests/proxy/test_gateway_corners.py",
    "tests/proxy/test_gateway_stranded.py",
    "tests/proxy/test_gateway_turn_ends.py",
    "tests/proxy/test_gateway_details.py",
    "tests/proxy/test_proxy_forwarded_bytes.py",
    "tests/proxy/test_proxy_play_bytes.py",
    "tests/proxy/test_proxy_plain_text_step.py",
    "tests/proxy/test_proxy_held_calls.py",
    "tests/proxy/test_gateway_response_items.py",
    "tests/proxy/test_proxy_sse.py",
    "tests/proxy/test_gateway_call_items.py",
    "tests/proxy/test_gateway_settle_rules.py",
    "tests/proxy/test_gateway_engine_api.py",
    "tests/proxy/test_gateway_settings.py",
    "tests/proxy/test_wire_translate_bodies.py",
    "tests/proxy/test_wire_conversation_reading.py",
    "tests/proxy/test_wire_responses_events.py",
    "tests/proxy/test_wire_responses_forming.py",
    "tests/proxy/test_wire_conversation_tools.py",
    "tests/proxy/test_proxy_shaped_frames.py",
    "tests/proxy/test_wire_chat_reads.py",
    "tests/proxy/test_gateway_engine_reads.py",
    "tests/proxy/test_wire_chat_whole.py",
    "tests/proxy/test_gateway_engine_requests.py",
    "tests/proxy/test_wire_messages_ends.py",
    "tests/proxy/test_proxy_user_ends.py",
    "tests/proxy/test_proxy_stream_args_messages.py",
    "tests/proxy/test_held_close.py",
    "tests/proxy/test_proxy_stream_args_captures.py",
)
"""The gateway's behaviour tests, in process (the engine driven as a client sees it); the
tests that start a proxy process import the project outside mutmut's copy."""

GATEWAY_SHARE = 2

PART_SHARE = 4
"""Mutants per private part (a ``_name.py`` carved out of a module) in the CI sample: each
part runs its parent's tests, so a third of the parent's share keeps the sample's time near
what it was before the carve while every part is still drawn."""
"""Mutants per gateway module in the CI sample: most of their cost is mutmut's first runs of
their tests (about a minute each), which a smaller share would not shorten."""

MODULES = {
    "strictjson": Module(
        "src/callgate/gate/strictjson.py",
        (
            "tests/gate/test_strict_arguments.py",
            "tests/gate/test_strict_arguments_messages.py",
            "tests/gate/test_depth_scan.py",
        ),
    ),
    "gate": Module("src/callgate/gate/turn.py", _GATE),
    "gate_slots": Module("src/callgate/gate/_slots.py", _GATE),
    "gate_refs": Module("src/callgate/gate/refs.py", (*_GATE, "tests/gate/test_call_refs.py")),
    "gate_text": Module("src/callgate/gate/_textcalls.py", _GATE),
    "gate_release": Module("src/callgate/gate/_release.py", _GATE),
    "gate_verdict": Module("src/callgate/gate/_verdict.py", _GATE),
    "repair": Module(
        "src/callgate/gate/repair.py",
        (
            "tests/gate/test_lossless_repair.py",
            "tests/gate/test_repair_places.py",
            "tests/gate/test_repair_refusals.py",
        ),
    ),
    "requests": Module("src/callgate/proxy/requests.py", ("tests/proxy/test_request_reader.py",)),
    "openai": Module("src/callgate/strategies/openai.py", _OPENAI),
    "openai_choice": Module("src/callgate/strategies/_openai_choice.py", _OPENAI),
    "anthropic": Module(
        "src/callgate/strategies/anthropic.py",
        (
            *_NATIVE,
            "tests/wires/test_anthropic.py",
            "tests/wires/test_stray_chunks.py",
            "tests/wires/test_anthropic_fast_add.py",
            "tests/buffer/test_add_bound_early.py",
        ),
    ),
    "detector": Module("src/callgate/strategies/text/detector.py", _DETECTOR),
    "detector_scan": Module("src/callgate/strategies/text/_scan.py", _DETECTOR),
    "decision": Module(
        "src/callgate/driver/decision.py",
        (
            "tests/driver/test_drivers.py",
            "tests/text/test_stream_start_and_end.py",
            "tests/driver/test_decision_views.py",
            "tests/fsm/test_display_transitions.py",
        ),
    ),
    "responses": Module("src/callgate/strategies/responses.py", _RESPONSES),
    "responses_items": Module("src/callgate/strategies/_responses_items.py", _RESPONSES),
    "ledger": Module("src/callgate/ledger/__init__.py", _LEDGER),
    "ledger_store": Module("src/callgate/ledger/store.py", _LEDGER),
    "ledger_sqlite": Module("src/callgate/ledger/sqlite.py", _LEDGER),
    "ledger_redis": Module("src/callgate/ledger/redis.py", _LEDGER),
    "engine": Module("src/callgate/proxy/engine.py", _GATEWAY),
    "proxy_gate": Module("src/callgate/proxy/gate.py", _GATEWAY),
    "wire_messages": Module("src/callgate/proxy/wires/messages.py", _GATEWAY),
    "wire_forming": Module("src/callgate/proxy/wires/forming.py", _GATEWAY),
    "wire_chat": Module("src/callgate/proxy/wires/chat.py", _GATEWAY),
    "wire_responses": Module("src/callgate/proxy/wires/responses.py", _GATEWAY),
    "wire_translate": Module("src/callgate/proxy/wires/translate.py", _GATEWAY),
}


_GATE_TESTS = (
    "tests/fsm/test_slot_transitions.py",
    "tests/gate/test_turn_gate_rules.py",
    "tests/wires/test_openai_chat.py",
    "tests/wires/test_anthropic.py",
)

TABLES = {
    "slot": Module("src/callgate/fsm/slot.py", _GATE_TESTS),
    "turn": Module("src/callgate/fsm/turn.py", _GATE_TESTS),
    "detector": Module(
        "src/callgate/fsm/detector.py",
        (
            "tests/fsm/test_detector_transitions.py",
            "tests/text/test_detector_blocks.py",
            "tests/text/test_text_strategies.py",
        ),
    ),
    "display": Module(
        "src/callgate/fsm/display.py",
        ("tests/fsm/test_display_transitions.py", "tests/driver/test_drivers.py"),
    ),
    "release": Module("src/callgate/fsm/release.py", ("tests/fsm/test_release_transitions.py",)),
    "vote": Module("src/callgate/fsm/vote.py", ("tests/fsm/test_vote_transitions.py",)),
    "verdict": Module("src/callgate/fsm/verdict.py", ("tests/fsm/test_verdict_transitions.py",)),
}
"""The machine tables (data, which mutmut leaves alone) and the behaviour tests that run them."""


@dataclass(frozen=True)
class TableMutant:
    """One edit of one transition literal: another target, or its finding dropped."""

    table: str
    line: int
    transition: str
    change: str
    source: str

    @property
    def name(self) -> str:
        """How the equivalent list names it: the table, the transition, the edit."""
        return f"{self.table}: {self.transition}: {self.change}"


def table_mutants(name: str) -> list[TableMutant]:
    """Each transition retargeted to the next state of the table, and its output dropped."""
    module = TABLES[name]
    text = (ROOT / module.path).read_text(encoding="utf-8")
    states = [s.name for s in importlib.import_module(f"callgate.fsm.{name}").STATES]
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def span(node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return (
            starts[node.lineno - 1] + node.col_offset,
            starts[node.end_lineno - 1] + node.end_col_offset,
        )

    found = []
    for node in ast.walk(ast.parse(text)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "Transition"
            and len(node.args) >= 3
            and isinstance(node.args[2], ast.Constant)
            and isinstance(node.args[2].value, str)
        ):
            continue
        target: str = node.args[2].value
        origin, event = (
            str(a.value) if isinstance(a, ast.Constant) else ast.unparse(a) for a in node.args[:2]
        )
        transition = f"{origin} --{event}--> {target}"
        other = states[(states.index(target) + 1) % len(states)]
        start, end = span(node.args[2])
        edit = text[:start] + repr(other) + text[end:]
        found.append(
            TableMutant(name, node.lineno, transition, f"target {target} -> {other}", edit)
        )
        for keyword in node.keywords:
            if keyword.arg == "output":
                start, end = span(keyword.value)
                edit = text[:start] + "None" + text[end:]
                found.append(TableMutant(name, node.lineno, transition, "output dropped", edit))
    return sorted(found, key=lambda m: (m.line, m.change))


def table_run(names: list[str]) -> int:
    """Run each table mutant against its table's behaviour tests, one pytest at a time."""
    workdir = BUILD / "tables"
    if workdir.exists():
        shutil.rmtree(workdir)
    shutil.copytree(ROOT / "src", workdir / "src", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "CI": "1", "PYTHONPATH": str(workdir / "src")}
    scores = []
    for name in names:
        module = TABLES[name]
        target = workdir / module.path
        original = target.read_text(encoding="utf-8")
        tests = list(module.tests)
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        baseline = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=False)
        if baseline.returncode != 0:
            print(f"table {name}: its tests fail on the unmutated table", file=sys.stderr)
            print(baseline.stdout.decode(errors="replace")[-2000:], file=sys.stderr)
            return 1
        killed, rejected, equivalent, survived = 0, 0, 0, []
        for mutant in table_mutants(name):
            if mutant.name in EQUIVALENT:
                equivalent += 1
                continue
            target.write_text(mutant.source, encoding="utf-8")
            loads = subprocess.run(
                [sys.executable, "-c", "import callgate"], env=env, capture_output=True, check=False
            )
            if loads.returncode != 0:
                rejected += 1
                continue
            result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=False)
            if result.returncode == 0:
                survived.append(f"{module.path}:{mutant.line}: {mutant.name}")
            else:
                killed += 1
        target.write_text(original, encoding="utf-8")
        scores.append(Score(f"table {name}", killed + rejected, survived, equivalent))
        print(f"table {name}: {rejected} rejected by Table.validate", flush=True)
        for line in survived:
            print(f"survived: {line}", flush=True)
        print(HEADER, *(s.line() for s in scores), sep="\n", flush=True)
    return 0 if all(s.rate >= FLOOR for s in scores) else 1


def mutant_names(module: Module) -> list[str]:
    """Every mutant mutmut makes of the module, in its own order."""
    from mutmut.mutation.file_mutation import mutate_file_contents
    from mutmut.utils.format_utils import get_mutant_name

    path = Path(module.path)
    mutated = mutate_file_contents(str(path), (ROOT / path).read_text(encoding="utf-8"))
    return [get_mutant_name(path, name) for name in mutated.mutant_names]


def mutant_prefix(module: Module) -> str:
    """The dotted prefix of the module's mutant names."""
    from mutmut.utils.format_utils import get_mutant_name

    return get_mutant_name(Path(module.path), "x").removesuffix(".x") + "."


def _toml_list(items: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


_TESTS_COPIED = shutil.ignore_patterns("__pycache__", "node_modules")
"""What a scratch project's tests leave out: caches, and the npm installs (the agent CLIs
weigh hundreds of megabytes; no mutated module's tests run them)."""


def prepare(workdir: Path, paths: list[str], tests: list[str]) -> None:
    """Lay a fresh copy of src, tests and pyproject in workdir, mutating only paths."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    shutil.copytree(ROOT / "src", workdir / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", workdir / "tests", ignore=_TESTS_COPIED)
    configure(workdir, paths, tests)


def configure(workdir: Path, paths: list[str], tests: list[str]) -> None:
    """Write workdir's pyproject: the project's own, with mutmut set to mutate paths under tests."""
    kept = []
    skipping = False
    for line in (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            skipping = line.strip() == "[tool.mutmut]"
        if not skipping:
            kept.append(line)
    kept += [
        "",
        "[tool.mutmut]",
        f"only_mutate = {_toml_list(paths)}",
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]',
        "use_git_change_detection = false",
        # A mutant that makes a property loop runs until (estimate + 1 s) * 3, then counts
        # as killed (a timeout), instead of mutmut's default of 15 times.
        "timeout_multiplier = 3.0",
    ]
    (workdir / "pyproject.toml").write_text("\n".join(kept) + "\n", encoding="utf-8")


class MutmutFailed(RuntimeError):
    """mutmut could not start testing mutants (its clean run or its test listing failed)."""


def mutmut(workdir: Path, names: list[str], quiet: bool, children: int = 1) -> None:
    """Run mutmut in workdir on ``children`` workers (all mutants, or only the named ones).

    Without a Redis server: mutmut runs each test many times, and a server's records
    outlive a run (the Redis store is not under mutation; its tests run in the suite).
    """
    env = {**os.environ, "CI": "1"}
    for name in ("CALLGATE_REDIS_URL", "CALLGATE_REQUIRE_REDIS"):
        env.pop(name, None)
    command = [_MUTMUT, "run", "--max-children", str(children), *names]
    output = subprocess.DEVNULL if quiet else None
    done = subprocess.run(command, cwd=workdir, env=env, check=False, stdout=output)
    if done.returncode != 0:  # mutmut ends 0 once the mutants ran, survivors or not
        raise MutmutFailed(
            f"mutmut stopped before testing the mutants (exit {done.returncode}) in "
            f"{workdir}: the listed tests must pass on the unmutated code (run them there "
            "with CI=1 to see why); no score is given"
        )


def _meta(workdir: Path, module: Module) -> Path:
    return workdir / "mutants" / (module.path + ".meta")


def exit_codes(workdir: Path, module: Module) -> dict[str, int | None]:
    """The exit code of each mutant's test run that mutmut recorded in workdir."""
    data = json.loads(_meta(workdir, module).read_text(encoding="utf-8"))
    codes: dict[str, int | None] = data["exit_code_by_key"]
    return codes


def statuses(workdir: Path, module: Module) -> dict[str, str]:
    """The status of each mutant of the module after a run in workdir."""
    from mutmut.stats import status_by_exit_code

    return {name: status_by_exit_code[code] for name, code in exit_codes(workdir, module).items()}


def keep_verdicts(workdir: Path, module: Module, before: dict[str, int | None]) -> int:
    """Put back the verdicts of ``before`` that mutmut has since reset; return how many.

    mutmut 3.8 resets every mutant's verdict when the test list in its configuration
    changes, so a rerun with a new list would leave the mutants it does not run (those the
    last run killed) as not checked. A rerun keeps those the way it keeps the killing tests.
    """
    meta = _meta(workdir, module)
    data = json.loads(meta.read_text(encoding="utf-8"))
    codes = data["exit_code_by_key"]
    back = {m: c for m, c in before.items() if c is not None and m in codes and codes[m] is None}
    if back:
        codes.update(back)
        meta.write_text(json.dumps(data), encoding="utf-8")
    return len(back)


@dataclass
class Score:
    """Counts of one module's run; equivalent mutants are out of the denominator."""

    module: str
    killed: int
    survived: list[str]
    equivalent: int

    @property
    def rate(self) -> float:
        total = self.killed + len(self.survived)
        return self.killed / total if total else 1.0

    def line(self) -> str:
        total = self.killed + len(self.survived)
        return (
            f"| {self.module} | {total + self.equivalent} | {self.equivalent} | "
            f"{self.killed} | {len(self.survived)} | {self.rate:.1%} |"
        )


def score(name: str, found: dict[str, str], listed: Mapping[str, str] = EQUIVALENT) -> Score:
    killed = [m for m, status in found.items() if status in KILLED and m not in listed]
    equivalent = [m for m in found if m in listed]
    survived = [m for m, s in found.items() if s not in KILLED and m not in listed]
    return Score(name, len(killed), sorted(survived), len(equivalent))


def equivalent_list(standing: Mapping[str, str] = EQUIVALENT) -> dict[str, str]:
    """The equivalent-mutant list as ``tools/mutation_equivalents.py`` is now.

    A run reads it again when it writes its results, so an equivalent listed while mutmut
    ran is left out of them. A file that does not load (an edit half made) leaves the list
    ``standing``, and says so.
    """
    path = ROOT / "tools" / "mutation_equivalents.py"
    try:
        listed: dict[str, str] = runpy.run_path(str(path))["EQUIVALENT"]
    except Exception as error:  # any error of the file's code: the run's results come first
        print(f"{path} does not load ({error!r}): the list as it was is used", file=sys.stderr)
        return dict(standing)
    return dict(listed)


def write_survivors(
    workdir: Path, name: str, found: dict[str, str], listed: Mapping[str, str]
) -> Score:
    """Score the module against the list and write its survivors to workdir/survivors.txt."""
    result = score(name, found, listed)
    (workdir / "survivors.txt").write_text("".join(m + "\n" for m in result.survived))
    return result


HEADER = "| module | mutants | equivalent | killed | survived | score |\n|---|---|---|---|---|---|"


def run(modules: list[str], quiet: bool) -> int:
    """Full run of each module in turn; print and store the table of scores."""
    scores = []
    for name in modules:
        module = MODULES[name]
        workdir = BUILD / name
        listed = equivalent_list()
        prepare(workdir, [module.path], list(module.tests))
        mutmut(workdir, [], quiet)
        found = statuses(workdir, module)
        listed = equivalent_list(listed)  # as it is now, after what may be an hour
        prefix = mutant_prefix(module)
        mine = (m for m in listed if m.startswith(prefix) and "." not in m[len(prefix) :])
        for stale in sorted(m for m in mine if m not in found):
            print(f"equivalent list names a mutant that no longer exists: {stale}")
        scores.append(write_survivors(workdir, name, found, listed))
        print(HEADER, *(s.line() for s in scores), sep="\n", flush=True)
    return 0 if all(s.rate >= FLOOR for s in scores) else 1


def rerun(name: str, quiet: bool) -> int:
    """Run only the last full run's survivors again, against the current tests.

    The scratch project takes the current tests and its configuration from the map as it
    stands, so test files listed since the full run take part.
    """
    module = MODULES[name]
    workdir = BUILD / name
    if not (workdir / "survivors.txt").is_file() or not _meta(workdir, module).is_file():
        print(
            f"no full run of {module.path} in {workdir}: run it first "
            f"(python tools/mutation.py run {name})",
            file=sys.stderr,
        )
        return 2
    shutil.rmtree(workdir / "tests")
    shutil.copytree(ROOT / "tests", workdir / "tests", ignore=_TESTS_COPIED)
    configure(workdir, [module.path], list(module.tests))
    before = exit_codes(workdir, module)
    listed = equivalent_list()
    last = [m for m in (workdir / "survivors.txt").read_text().split() if m not in listed]
    if last:
        mutmut(workdir, last, quiet)
        kept = keep_verdicts(workdir, module, before)
        if kept:
            print(
                f"{name}: kept the last run's verdict of {kept} mutant(s) not run again "
                "(mutmut resets them when the test list changes)"
            )
    result = write_survivors(workdir, name, statuses(workdir, module), equivalent_list(listed))
    print(HEADER, result.line(), sep="\n")
    return 0 if result.rate >= FLOOR else 1


def equivalents() -> int:
    """Print the equivalent-mutant list as a Markdown table, for docs/mutation.md."""
    print("| mutant | why no test can kill it |\n|---|---|")
    for mutant, why in sorted(EQUIVALENT.items()):
        print(f"| `{mutant.removeprefix('callgate.')}` | {why} |")
    return 0


def survivors(name: str) -> int:
    """Print the diff of each survivor of the module's last full run."""
    workdir = BUILD / name
    for mutant in (workdir / "survivors.txt").read_text().split():
        subprocess.run([_MUTMUT, "show", mutant], cwd=workdir, check=False)
    return 0


def sample(seed: int, per_module: int, floor: float, quiet: bool, children: int = 1) -> int:
    """Run a fixed-seed sample of each module's non-equivalent mutants in one mutmut run."""
    rng = random.Random(seed)
    chosen: dict[str, list[str]] = {}
    for name, module in MODULES.items():
        candidates = [m for m in mutant_names(module) if m not in EQUIVALENT]
        share = GATEWAY_SHARE if module.tests == _GATEWAY else per_module
        if Path(module.path).name.startswith("_") and not Path(module.path).name.startswith("__"):
            share = min(share, PART_SHARE)
        chosen[name] = sorted(rng.sample(candidates, min(share, len(candidates))))
    tests = sorted({t for m in MODULES.values() for t in m.tests})
    workdir = BUILD / "sample"
    prepare(workdir, [m.path for m in MODULES.values()], tests)
    mutmut(workdir, [m for names in chosen.values() for m in names], quiet, children)
    scores = []
    for name, module in MODULES.items():
        found = statuses(workdir, module)
        scores.append(score(name, {m: found[m] for m in chosen[name]}))
    print(HEADER, *(s.line() for s in scores), sep="\n")
    killed = sum(s.killed for s in scores)
    survived = [m for s in scores for m in s.survived]
    rate = killed / (killed + len(survived))
    print(f"sample of {killed + len(survived)} mutants (seed {seed}): {rate:.1%} killed")
    for mutant in survived:
        print(f"survived: {mutant}")
    if rate < floor:
        print(f"mutation sample under the floor of {floor:.0%}", file=sys.stderr)
        return 1
    return 0


def missing() -> list[str]:
    """The paths the module and table maps name that do not exist (a moved test, say)."""
    named = {p for m in (*MODULES.values(), *TABLES.values()) for p in (m.path, *m.tests)}
    return sorted(p for p in named if not (ROOT / p).is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-q", "--quiet", action="store_true", help="hide mutmut's progress")
    commands = parser.add_subparsers(dest="command", required=True)
    full = commands.add_parser("run", help="full run, module by module")
    full.add_argument("modules", nargs="*", help=f"some of {', '.join(MODULES)} (default: all)")
    tables = commands.add_parser("tables", help="mutate the machine tables' transitions")
    tables.add_argument("tables", nargs="*", help=f"some of {', '.join(TABLES)} (default: all)")
    commands.add_parser("equivalents", help="the equivalent-mutant list as Markdown")
    again = commands.add_parser("rerun", help="the last run's survivors, with current tests")
    again.add_argument("module", choices=list(MODULES))
    show = commands.add_parser("survivors", help="diffs of a module's survivors")
    show.add_argument("module", choices=list(MODULES))
    ci = commands.add_parser("sample", help="fixed-seed sample with a floor")
    ci.add_argument("--seed", type=int, default=SEED)
    ci.add_argument("--per-module", type=int, default=SAMPLE_PER_MODULE)
    ci.add_argument("--floor", type=float, default=FLOOR)
    ci.add_argument(
        "--children", type=int, default=1, help="mutants tested at once (CI: one per core)"
    )
    args = parser.parse_args(argv)
    gone = missing()
    if gone:
        print(f"the maps name files that do not exist: {', '.join(gone)}", file=sys.stderr)
        return 2
    try:
        return _command(parser, args)
    except MutmutFailed as failed:
        print(failed, file=sys.stderr)
        return 2


def _command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "run":
        unknown = sorted(set(args.modules) - set(MODULES))
        if unknown:
            parser.error(f"unknown module(s): {', '.join(unknown)}")
        return run(args.modules or list(MODULES), args.quiet)
    if args.command == "tables":
        return table_run(args.tables or list(TABLES))
    if args.command == "equivalents":
        return equivalents()
    if args.command == "rerun":
        return rerun(args.module, args.quiet)
    if args.command == "survivors":
        return survivors(args.module)
    if args.command == "sample" and args.children < 1:
        parser.error("--children must be at least 1")
    return sample(args.seed, args.per_module, args.floor, args.quiet, args.children)


if __name__ == "__main__":
    raise SystemExit(main())
