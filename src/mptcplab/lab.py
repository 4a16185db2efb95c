"""What a lab is, to the engine: an id, its folder, its parameter file and a run function.

Lab modules live in `mptcplab.labs` and define `LAB = Lab(...)`. The `run` command loads the
parameters, picks where to run (native or UML), and calls `LAB.run(ctx)` on that machine.
"""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import UsageError

REPO_ROOT = Path(__file__).resolve().parents[2]
LABS_DIR = REPO_ROOT / "labs"


@dataclass
class RunContext:
    """Everything a lab's run function needs; built by the `run` command."""

    lab: "Lab"
    params: dict
    out: Path  # the sweep directory: one sub-directory per run (see mptcplab.results)
    quick: bool
    where: str  # "native" or "uml" (the place the kernel under test is)


@dataclass
class Lab:
    id: str  # "lab1"
    slug: str  # "01-send-buffer": folder under labs/, notebooks/, solutions/
    title: str
    run: Callable[[RunContext], dict]  # returns a short summary (also saved as summary.json)
    needs: tuple[str, ...] = ("netem",)  # capabilities, see mptcplab.doctor.CAPABILITIES
    uml_ok: bool = True  # False when the lab needs something UML lacks (BPF JIT for struct_ops)
    report: Callable[[Path], str] | None = None  # sweep dir -> markdown "paper vs this run"
    export: Callable[[Path, Path], object] | None = None  # (sweep dir, dest): compact reference results
    topology: Callable[[dict], object] | None = None  # params -> mptcplab.topology.Topology

    @property
    def folder(self) -> Path:
        return LABS_DIR / self.slug

    def load_params(self, quick: bool, overrides: dict | None = None) -> dict:
        """Read `labs/<slug>/experiment.toml`; `[quick]` overrides top-level keys with --quick."""
        path = self.folder / "experiment.toml"
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise UsageError(f"{self.id}: parameter file {path} is missing") from None
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: {exc}") from None
        quick_over = raw.pop("quick", {})
        params = _merge(raw, quick_over) if quick else raw
        return _merge(params, overrides or {})


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def all_labs() -> dict[str, Lab]:
    from . import labs

    found = {}
    for info in pkgutil.iter_modules(labs.__path__):
        module = importlib.import_module(f"{labs.__name__}.{info.name}")
        lab = getattr(module, "LAB", None)
        if isinstance(lab, Lab):
            found[lab.id] = lab
    return dict(sorted(found.items()))


def get_lab(lab_id: str) -> Lab:
    labs = all_labs()
    if lab_id not in labs:
        raise UsageError(f"unknown lab {lab_id!r}; choose one of: {', '.join(labs) or '(none installed)'}")
    return labs[lab_id]
