"""The architecture (pyproject.toml's [tool.importlinter] contracts) holds, and the contracts can fail:
a copy of the package with a lab imported by the engine, one lab importing another and an import
cycle breaks exactly those contracts."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINT = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, "--config", str(root / "pyproject.toml")], cwd=root, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"})


def test_the_contracts_hold():
    out = lint(REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_a_lab_import_in_the_engine_a_lab_importing_a_lab_and_a_cycle_break_them(tmp_path):
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(REPO / "src" / "mptcplab", tmp_path / "src" / "mptcplab",
                    ignore=shutil.ignore_patterns("__pycache__", "*.c"))
    pkg = tmp_path / "src" / "mptcplab"
    for rel, line in (("run/engine.py", "from ..labs.lab1 import analysis"),  # the engine names a lab
                      ("commands/check.py", "from ..labs.lab2 import cc"),  # a command names a lab (Lab.commands)
                      ("labs/lab1/measure.py", "from ..lab3 import models"),  # a lab uses another lab's code
                      ("core/paths.py", "from ..run import results")):  # the ground reaches up: a cycle too
        f = pkg / rel
        f.write_text(f.read_text() + f"\n{line}  # deliberately wrong\n")
    out = lint(tmp_path)
    assert out.returncode == 1, out.stdout
    report = out.stdout
    for broken in ("Nothing outside the labs imports a lab (lab.all_labs finds them) BROKEN",
                   "Lab packages are independent of each other BROKEN",
                   "No import cycles between sibling modules or packages BROKEN",
                   "Layers: a module imports only from the layers below it BROKEN"):
        assert broken in report, report
    assert "mptcplab.run.engine -> mptcplab.labs.lab1.analysis" in report
    assert "mptcplab.commands.check -> mptcplab.labs.lab2.cc" in report
    assert "mptcplab.labs.lab1.measure -> mptcplab.labs.lab3.models" in report


def test_every_module_of_the_kit_has_its_layer_and_every_engine_module_is_kept_from_the_labs():
    """A module outside the role folders is bound by no layer: a new top-level module or folder names
    its layer (and joins the modules that may not import a lab) in the commit
    that adds it. A module inside a role folder takes its role's layer."""
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    forbidden = next(c for c in contracts if c["type"] == "forbidden")
    in_layers = {m.strip() for layer in layers for m in layer.split("|")}
    pkg = REPO / "src" / "mptcplab"
    kit = {f"mptcplab.{p.stem}" for p in pkg.glob("*.py") if p.stem not in ("__init__", "__main__")}
    kit |= {f"mptcplab.{p.parent.name}" for p in pkg.glob("*/__init__.py")}
    assert sorted(kit - in_layers) == [], "modules in no layer"
    assert len(layers) <= 12, "the layers are the roles, not the modules"
    assert sorted(kit - {"mptcplab.labs"} - set(forbidden["source_modules"])) == [], \
        "kit modules the 'imports no lab' contract does not cover"
