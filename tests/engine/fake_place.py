"""A place for tests: it "runs" the command by recording it and writing what a guest would write
into a staging directory of its own, copied back into the results directories when it returns,
as a place without a shared filesystem must. Registered by the tests that use it:
`monkeypatch.setitem(places.REGISTRY, "fake", "fake_place")`."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

NAME = "fake"
GUEST = True
WORDS = "in the fake place"
RAN = "in the fake test place"
KERNEL = "fake kernel"
CLOCK = ""
RANK = 1
OFFERS = {"netem", "tbf", "minrtt_scheduler"}  # as UML: Lab 1 as shipped runs here
MARKER = "mlab-fake-"  # no process carries it: this place starts none
calls: list[tuple[list[str], list[Path], dict]] = []  # every run(): (argv, results, handed)
prepared: list[str] = []  # the labs prepare() was asked for
readied: list[str] = []  # ready() was asked (reproduce, before any lab runs)
analysed: list = []  # the RunContexts the runner analysed on the host after run() (conftest.fake_place)
compiled: list[Path] = []  # the packages byte-compiled before a guest started (conftest.fake_place)


def available() -> tuple[bool, str]:
    return True, "a test double"


def capabilities() -> set[str]:
    return set(OFFERS)


def cost() -> str:
    return "nothing: a test double"


def describe() -> list[str]:
    return ["a test double: records the command it is asked to run"]


def ready() -> None:
    readied.append(NAME)


def prepare(lab) -> None:
    prepared.append(lab.id)


def run(argv: list[str], results: list[Path], handed: dict) -> int:
    calls.append((list(argv), [Path(r) for r in results], handed))
    with tempfile.TemporaryDirectory() as staging:  # the guest's own filesystem
        (Path(staging) / "lab-summary.json").write_text(json.dumps({"argv": argv}))
        for dest in results:  # what the command wrote comes back to the host
            Path(dest).mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(staging) / "lab-summary.json", Path(dest) / "lab-summary.json")
    return 0


def clean() -> list[str]:
    return []


def platform() -> dict:
    return {"fake": True}


def wall_clock(directory: Path) -> float:
    return time.time()
