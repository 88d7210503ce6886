"""The ``needs`` marker: a missing system program skips with what to install, or fails in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from programs import REQUIRE, need


def test_a_missing_program_skips_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        need("chromium", "chromedriver")
    assert str(skipped.value) == (
        "needs chromium, chromedriver on PATH: install Chromium (apt-get install chromium); "
        "chromedriver (apt-get install chromium-driver)"
    )


def test_ci_turns_a_missing_program_into_a_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=f"needs dot on PATH.*{REQUIRE} is set"):
        need("dot")


def test_a_program_on_path_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    program = tmp_path / "dot"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv(REQUIRE, "1")
    assert need("dot") == {"dot": str(program)}
