"""docs/envoy.md shows the bootstrap the tests run, and Envoy accepts it as written."""

from __future__ import annotations

import re
import subprocess

from envoy_front import require_envoy
from proxy_cases import ROOT

require_envoy()

from callgate.extproc.bootstrap import Route, bootstrap, envoy_binary  # noqa: E402


def _doc_yaml() -> list[str]:
    text = (ROOT / "docs" / "envoy.md").read_text(encoding="utf-8")
    return re.findall(r"^```yaml\n(.*?)^```", text, re.M | re.S)


def test_the_docs_bootstrap_is_the_one_the_tests_run() -> None:
    written = bootstrap(
        [Route("callgate", 10000)], ("127.0.0.1", 8000), {"callgate": [("127.0.0.1", 50051)]}
    )
    assert _doc_yaml()[0] == written


def test_envoy_accepts_the_bootstrap_in_both_body_modes() -> None:
    binary = envoy_binary()
    assert binary is not None
    for mode in ("FULL_DUPLEX_STREAMED", "STREAMED"):
        config = bootstrap(
            [Route("callgate", 10000, body_mode=mode), Route("bare", 10001, processor="")],
            ("127.0.0.1", 8000),
            {"callgate": [("127.0.0.1", 50051), ("127.0.0.1", 50052)]},
        )
        done = subprocess.run(
            [binary, "--mode", "validate", "--config-yaml", config, "--disable-hot-restart"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
