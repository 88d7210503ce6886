"""``callgate proxy --config FILE``: every flag from a TOML file, the command line winning.

The file's values become the same :class:`~callgate.proxy.app.ProxyConfig` the flags make;
each flag of ``callgate proxy`` has a key; a bad file is one line and exit 2. A real
``callgate proxy`` process started from a file alone serves and answers ``/healthz``.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from callgate.cli.commands import build_parser, main
from callgate.cli.proxy import proxy_config
from callgate.cli.proxy_file import FLAGS, apply_config
from proxy_cases import proxy_process

FULL = """\
upstream = "http://127.0.0.1:9/v1"
upstream-wire = "messages"
host = "127.0.0.2"
port = 9999
text-formats = ["tool_call_tag", "qwen3_coder_xml"]
on-blocked = "repair 3"
stream-args = true
move_reasoning = true
repair-json = true
normalize = false
audit = "audit-here"
audit-max-bytes = 1000
audit-files = 2
audit-messages = true
timeout = 5
max-request-bytes = 4096
drain = 1.5
demo = false
otlp = "grpc"
span-arguments = true
"""


def parsed(*argv: str) -> object:
    return apply_config(build_parser().parse_args(["proxy", *argv]))


def test_every_flag_has_a_key_and_the_file_sets_it(tmp_path: Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(FULL, encoding="utf-8")
    keys = {line.split(" = ")[0].replace("-", "_") for line in FULL.splitlines()}
    assert keys == set(FLAGS)
    flags = {a.dest for a in build_parser()._subparsers._group_actions[0].choices["proxy"]._actions}  # type: ignore[union-attr]
    assert set(FLAGS) == flags - {"help", "config"}
    assert (parsed("--config", str(path)).otlp, parsed("--config", str(path)).span_arguments) == (  # type: ignore[attr-defined]
        "grpc",
        True,
    )
    path.write_text(FULL.replace('otlp = "grpc"\n', ""), encoding="utf-8")  # spans need otel
    config = proxy_config(parsed("--config", str(path)), "http://127.0.0.1:9/v1")
    assert config.options.text_formats == ("tool_call_tag", "qwen3_coder_xml")
    assert (config.options.on_blocked, config.options.repairs) == ("repair", 3)
    assert config.options.stream_args and config.options.move_reasoning
    assert config.options.repair_json
    assert not config.options.normalize
    assert config.audit_dir == tmp_path / "audit-here"  # beside the file
    assert (config.audit_max_bytes, config.audit_files, config.audit_messages) == (1000, 2, True)
    assert (config.read_timeout, config.max_request_bytes) == (5.0, 4096)
    assert config.upstream_wire == "messages"
    args = parsed("--config", str(path))
    assert (args.host, args.port, args.drain, args.demo) == ("127.0.0.2", 9999, 1.5, False)  # type: ignore[attr-defined]


def test_the_command_line_wins_over_the_file_and_defaults_fill_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(
        'upstream = "http://a:1"\non-blocked = "notice"\nport = 9000\n', encoding="utf-8"
    )
    args = parsed("--config", str(path), "--port", "8787", "--on-blocked", "pass")
    assert (args.upstream, args.port, args.on_blocked) == ("http://a:1", 8787, ["pass"])  # type: ignore[attr-defined]
    assert (args.host, args.timeout, args.stream_args) == ("127.0.0.1", 600.0, False)  # type: ignore[attr-defined]
    plain = parsed("--upstream", "http://b:2")
    assert (plain.port, plain.on_blocked, plain.audit) == (8787, ["repair", "2"], None)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('upstrem = "http://a"\n', "unknown key 'upstrem' (known: upstream, upstream-wire, host"),
        ('port = "8787"\n', "port must be a whole number, not '8787'"),
        ("stream-args = 1\n", "stream-args must be true or false, not 1"),
        ("on-blocked = [true]\n", "on-blocked must be a string or a list of strings"),
        ("upstream = \n", "not TOML"),
        ('upstream = "ftp://a"\n', "--upstream must be an http:// or https:// URL"),
        (
            'upstream = "http://a"\nupstream-wire = "grpc"\n',
            "--upstream-wire must be chat, messages or responses, not 'grpc'",
        ),
    ],
)
def test_a_bad_file_is_one_line_and_exit_2(
    text: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["proxy", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


def test_a_missing_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["proxy", "--config", str(tmp_path / "none.toml")]) == 2
    assert "cannot read it" in capsys.readouterr().err


def test_callgate_proxy_runs_from_a_config_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text('upstream = "http://127.0.0.1:9"\non-blocked = "notice"\n', encoding="utf-8")
    with proxy_process(["--config", str(path)]) as (_, url, first):
        assert first.startswith(f"callgate proxy: {url} -> http://127.0.0.1:9"), first
        assert httpx.get(url + "/healthz").json() == {"status": "ok"}
