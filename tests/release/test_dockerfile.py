"""The Dockerfile: its build steps run in a venv, and the image's command serves /healthz.

No container engine is needed: the test reads the Dockerfile, checks what an image needs
(a slim Python base, the ``proxy`` extra, a non-root user, a ``/healthz`` HEALTHCHECK),
copies what its COPY lines name into a scratch context, runs each RUN step there (``pip``
with a fresh venv's pip; the ``useradd`` step is checked, not run), then starts the
ENTRYPOINT from that venv and runs the HEALTHCHECK command against it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile's (INSTRUCTION, arguments), continuation lines joined, comments out."""
    joined: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line.strip())
        pending = ""
    return [(words.split(None, 1)[0].upper(), words.split(None, 1)[1]) for words in joined]


def of(kind: str) -> list[str]:
    return [rest for name, rest in instructions() if name == kind]


def exec_form(text: str) -> list[str]:
    form = json.loads(text)
    assert isinstance(form, list) and all(isinstance(w, str) for w in form), text
    return form


def test_the_image_is_slim_python_with_the_proxy_extra_and_a_non_root_user() -> None:
    (base,) = of("FROM")
    assert base.startswith("python:3.") and base.endswith("-slim"), base
    runs = of("RUN")
    assert any("pip install" in r and ".[proxy]" in r for r in runs), runs
    (user,) = of("USER")
    assert user not in ("root", "0")
    assert any(r.startswith("useradd") and r.split()[-1] == user for r in runs), runs
    assert instructions()[-1][0] in ("CMD", "ENTRYPOINT")
    assert exec_form(of("ENTRYPOINT")[0])[:2] == ["callgate", "proxy"]
    (check,) = of("HEALTHCHECK")
    assert "/healthz" in check and " CMD " in f" {check} "


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_the_build_steps_run_in_a_venv_and_the_healthcheck_passes(tmp_path: Path) -> None:
    context = tmp_path / "app"
    context.mkdir()
    for copy in of("COPY"):
        *sources, target = shlex.split(copy)
        for source in sources:
            origin = ROOT / source
            goal = context / target / origin.name if target.endswith("/") else context / target
            if origin.is_dir():
                shutil.copytree(origin, goal, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                goal.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, goal)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ}
    for line in of("ENV"):
        for pair in shlex.split(line):
            key, _, value = pair.partition("=")
            env[key] = value
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    for run in of("RUN"):
        argv = shlex.split(run)
        if argv[0] == "useradd":
            continue  # checked above: a container's user, not this machine's
        assert argv[0] == "pip", f"a RUN step this test cannot take: {run}"
        done = subprocess.run(
            [str(venv / "bin" / "pip"), *argv[1:]],
            cwd=context,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    port = str(free_port())
    entry = [w.replace("8787", port) for w in exec_form(of("ENTRYPOINT")[0])]
    entry[0] = str(venv / "bin" / entry[0])
    shown = subprocess.run(
        [*entry, *exec_form(of("CMD")[0])], env=env, capture_output=True, text=True, check=False
    )
    assert shown.returncode == 0 and "--upstream" in shown.stdout, shown.stderr
    check = exec_form(of("HEALTHCHECK")[0].split(" CMD ", 1)[1])
    check = [str(venv / "bin" / check[0]), *(w.replace("8787", port) for w in check[1:])]
    server = subprocess.Popen(
        [*entry, "--upstream", "http://127.0.0.1:9"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert subprocess.run(check, env=env, check=False, timeout=30).returncode == 0
    finally:
        server.terminate()
        server.wait(timeout=30)
    refused = subprocess.run(check, env=env, capture_output=True, check=False, timeout=30)
    assert refused.returncode != 0  # nothing serves: the check fails
