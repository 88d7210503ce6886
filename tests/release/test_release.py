"""What a release carries: the licence, one version, and README numbers the code prints.

The README's numbers are read from the README and compared with what the code counts,
so an added fixture or scenario cannot leave the README behind. The npm package is
packed and replayed by CI (.ci/run); here its manifest is checked against the repository.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import callgate
from callgate.cli.demo import scenarios
from callgate.cli.fixtures import examples
from callgate.fsm import MACHINES
from callgate.testing import WIRES

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
README = (ROOT / "README.md").read_text(encoding="utf-8")
WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
PACKAGE = json.loads((ROOT / "runtimes" / "js" / "package.json").read_text(encoding="utf-8"))


def test_the_licence_is_the_mit_licence_pyproject_declares() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert PROJECT["license"] == "MIT"
    assert text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) \d{4} the callgate authors$", text, re.M), text
    assert "WITHOUT WARRANTY OF ANY KIND" in text
    assert PACKAGE["license"] == "MIT"


def test_the_version_is_pyprojects() -> None:
    assert callgate.__version__ == PROJECT["version"]
    from callgate import __version__

    assert __version__ == PROJECT["version"]
    assert PACKAGE["version"] == PROJECT["version"]  # the npm package is released with it


def test_the_readme_counts_the_bundled_fixtures_and_scenarios_the_demo_plays() -> None:
    fixtures = re.search(r"checks the (\d+) bundled conformance\s+fixtures", README)
    assert fixtures, "the README no longer says how many fixtures the demo checks"
    assert int(fixtures[1]) == len(examples())
    streams = re.search(r"plays (\w+) bundled sample\s+streams", README)
    assert streams, "the README no longer says how many streams the demo plays"
    assert WORDS[streams[1]] == len(scenarios())


def test_the_readme_counts_the_wires_and_the_machines() -> None:
    wires = set(re.findall(r"all (\w+) wires", README))
    machines = set(re.findall(r"(?:all|the) (\w+) machines", README))
    assert wires and machines
    assert {WORDS[word] for word in wires} == {len(WIRES)}  # mistral is the openai wire
    assert {WORDS[word] for word in machines if word in WORDS} == {len(MACHINES)}


def test_the_npm_package_exports_its_types_and_carries_what_it_imports() -> None:
    js = ROOT / "runtimes" / "js"
    assert PACKAGE["name"] == "callgate-machines" and "private" not in PACKAGE
    main = PACKAGE["exports"]["."]
    assert list(main) == ["types", "default"]  # "types" first, as TypeScript requires
    for target in (main["types"], main["default"], *PACKAGE["exports"]["./stepOrThrow"].values()):
        assert (js / target).is_file(), target
        assert target.removeprefix("./") in PACKAGE["files"], target
    imported = re.findall(r"from '\./([^']+)'", (js / "index.mjs").read_text(encoding="utf-8"))
    machines = {Path(name).name.split(".")[0] for name in imported if name.startswith("machines/")}
    assert machines == set(MACHINES)  # every machine, and the folder prepack fills is packed
    assert "machines/" in PACKAGE["files"] and "prepack" in PACKAGE["scripts"]
    assert "xstate" in PACKAGE["peerDependencies"]
