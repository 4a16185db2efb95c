"""No name is used that is never defined (pyflakes): a merge that drops an import breaks a lab only
when the code path runs, which for Lab 2's fairness runs was only in the VM, 20 minutes into
CI's quick reproduction (`NameError: name 'shared_path_rates' is not defined`)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYFLAKES = [sys.executable, "-m", "pyflakes"]


def undefined(*paths: Path) -> list[str]:
    out = subprocess.run([*PYFLAKES, *map(str, paths)], capture_output=True, text=True, timeout=300)
    return [line for line in out.stdout.splitlines() if "undefined name" in line]


def test_no_undefined_name_in_the_kit_its_tests_and_benchmarks():
    assert undefined(REPO / "src", REPO / "tests", REPO / "benchmarks") == []


def test_the_check_sees_a_dropped_import(tmp_path):
    (tmp_path / "m.py").write_text("from json import dumps\n\n\ndef f(x):\n    return loads(dumps(x))\n")
    assert undefined(tmp_path) == [f"{tmp_path / 'm.py'}:5:12: undefined name 'loads'"]
