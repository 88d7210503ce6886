"""The audit log survives a failed rotation: the next record reopens its file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from callgate.proxy.audit import AUDIT_FILE, AuditLog, load_records
from callgate.proxy.engine import Options


class FinishedTurn:
    """A finished turn as the log reads one (its wire, options and account)."""

    wire = "openai"
    options = Options()

    def __init__(self, n: int) -> None:
        self.n = n

    def audit(self) -> dict[str, Any]:
        return {"wire": self.wire, "verdict": "pass", "n": self.n}


def written(log: AuditLog, n: int) -> None:
    log.write(
        FinishedTurn(n), raw=b"data: {}\n\n", request={"model": "m"}, timings={}, how="stream"
    )


def test_after_a_rotation_fails_with_its_directory_removed_the_log_reopens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "audit"
    log = AuditLog(folder, max_bytes=400, files=2)
    written(log, 0)
    shutil.rmtree(folder)  # an operator's cleanup, under the running server
    for n in range(1, 6):
        written(log, n)  # the first that rotates fails: logged, never raised
    assert "could not be written" in caplog.text
    records = load_records((folder / AUDIT_FILE).read_text(encoding="utf-8"))
    assert records and records[-1]["turn"]["n"] == 5
    log.close()


def test_a_rotation_that_works_keeps_every_record(tmp_path: Path) -> None:
    log = AuditLog(tmp_path, max_bytes=400, files=9)
    for n in range(6):
        written(log, n)
    log.close()
    texts = [p.read_text(encoding="utf-8") for p in sorted(tmp_path.iterdir(), reverse=True)]
    assert [r["turn"]["n"] for t in texts for r in load_records(t)] == list(range(6))
