"""Worker processes for the ledger's crash tests: they play conversations, and may die.

``python tests/ledger_child.py SPEC`` (SPEC: JSON) plays, phase after phase, each
conversation of a phase in a worker process of its own (forked at once), on a SQLite or
Redis ledger, from the history saved in its file (a fresh one: one user message) to the
model's final text, saving the history after every turn. The "model"
is deterministic: the first turn calls get_weather (OpenAI with a call id, or Gemini
without), the next answers in text. The tool appends its city to the effects file.
A conversation's ``kill`` names the point at which its worker sends itself SIGKILL:
``before_start``, ``after_start`` (of the start record), ``in_tool`` (after its effect),
``before_result``, ``after_result`` (of the answer's record). ``pause``: seconds between
phases; ``go``: a file the workers wait for (a race); ``hold``: seconds the tool takes
after its effect.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from callgate import Driver, Ledger, Tool, run_turn
from callgate.ledger import LedgerStore, Record
from callgate.testing.builders import openai_chunks
from callgate.testing.wires import Chunk, WireCall, encoder
from ledger_turns import CITY, one_call


def die() -> None:
    """Die as a crash does: SIGKILL, no handler, no cleanup."""
    os.kill(os.getpid(), signal.SIGKILL)


class Killing:
    """A store that kills its process at one point around its writes."""

    def __init__(self, store: LedgerStore, point: str | None) -> None:
        self.store = store
        self.point = point

    def start(self, conversation: str, key: str, record: Record) -> Record | None:
        if self.point == "before_start":
            die()
        known = self.store.start(conversation, key, record)
        if self.point == "after_start":
            die()
        return known

    def finish(self, conversation: str, key: str, record: Record) -> None:
        if self.point == "before_result":
            die()
        self.store.finish(conversation, key, record)
        if self.point == "after_result":
            die()

    def forget(self, conversation: str, key: str, owner: str) -> None:
        self.store.forget(conversation, key, owner)

    async def astart(self, conversation: str, key: str, record: Record) -> Record | None:
        return self.start(conversation, key, record)

    async def afinish(self, conversation: str, key: str, record: Record) -> None:
        self.finish(conversation, key, record)


def store_of(spec: dict[str, Any]) -> LedgerStore:
    if spec["backend"] == "sqlite":
        from callgate.ledger.sqlite import SQLiteStore

        return SQLiteStore(spec["where"])
    from callgate.ledger.redis import RedisStore

    return RedisStore.from_url(spec["where"], prefix=spec.get("prefix", "crash:"))


def model(wire: str, messages: list[Any]) -> list[Chunk]:
    """The next turn's stream: a call first, then the final text."""
    calling = len(messages) == 1
    if wire == "openai":
        if calling:
            return one_call("call_oslo", {"city": "Oslo"}, "chatcmpl-turn1")
        return openai_chunks([], [], text=["It is 18 C in Oslo."])
    enc = encoder("gemini")
    if calling:
        call = WireCall(None, "get_weather", arguments={"city": "Oslo"})
        return [*enc.open(call), *enc.finish([call])]
    return [p.chunk for p in enc.prelude(["It is 18 C in Oslo."])] + enc.finish([])


def converse(spec: dict[str, Any], conversation: dict[str, Any]) -> None:
    """Play one conversation to its final text (the worker may die on the way)."""
    go = spec.get("go")
    while go is not None and not Path(go).exists():
        time.sleep(0.002)
    kill = conversation.get("kill")
    store = Killing(store_of(spec), kill)
    ledger = Ledger(store, conversation=conversation["id"], expiry=spec["expiry"])
    effects = Path(conversation["effects"])

    def weather(city: str) -> str:
        with effects.open("a") as out:
            out.write(city + "\n")
            out.flush()
            os.fsync(out.fileno())
        if kill == "in_tool":
            die()
        time.sleep(spec.get("hold", 0))
        return f"18 C in {city}"

    driver = Driver([Tool("get_weather", CITY, weather)])
    history = Path(conversation["history"])
    messages = json.loads(history.read_text()) if history.exists() else [{"role": "user"}]
    while True:
        buffer = driver.new_stream_buffer(ledger=ledger)
        turn = run_turn(model(conversation["wire"], messages), driver, buffer)
        messages += turn.history
        saving = history.with_suffix(".tmp")
        saving.write_text(json.dumps(messages))
        saving.replace(history)
        if not turn.called:
            return


def play(spec: dict[str, Any], conversation: dict[str, Any]) -> int:
    """Fork a worker process that plays ``conversation``; its pid."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            converse(spec, conversation)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    return pid


def status(pid: int) -> int:
    """A worker's exit: its code, or minus the signal that killed it."""
    _, raw = os.waitpid(pid, 0)
    return -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)


def main() -> None:
    """Play each phase's conversations in worker processes forked at once, phase by phase.

    The workers are forked from this process, which imported callgate and holds no
    ledger: each is a new process with nothing of the others. Prints every phase's exits.
    """
    spec = json.loads(sys.argv[1])
    store_of(spec)  # imports the backend's modules once, before the workers are forked
    exits = []
    for n, phase in enumerate(spec["phases"]):
        if n:
            time.sleep(spec.get("pause", 0))
        go = spec.get("go")
        pids = [play(spec, conversation) for conversation in phase]
        if go is not None:
            time.sleep(0.05)
            Path(go).touch()
        exits.append([status(pid) for pid in pids])
    print(json.dumps(exits))


if __name__ == "__main__":
    main()
