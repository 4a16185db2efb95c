"""What a lab is, to the engine: its parameters, its network, the points of its sweep, how one
point is measured, and its analysis.

Every lab is a package `mptcplab.labs.labN` with the same modules:

- `experiment.py`: parameters -> `topology(params)`, `points(params, sweep)` (the runs), and
  `measure(net, rd, point, params)` (one run); it defines `LAB = Lab(...)`: the five hooks every lab
  has, then only the groups of optional hooks that apply to it (`Running`, `Parameters`, `Judging`,
  `Grading`, `commands`);
- `measure.py`: pure functions from captures and traces to tables;
- `analysis.py`: `compact`, `load`, `report`, `figures`, `export_reference`.

The engine (`mptcplab.run.engine`) owns the loop: it builds the network, runs the setup check once,
applies each point's settings (`Lab.running.configure`), records the network, measures, resumes and shows
progress. A lab never loops over its points or records its network itself.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import pkgutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable, ContextManager

from ..core import paths
from ..core.errors import UsageError
from ..core.paths import REPO_ROOT  # noqa: F401  (notebooks find the reference results from it)


@dataclass
class RunContext:
    """Everything a lab's hooks need about this run; built by the `run` command."""

    lab: "Lab"
    params: dict
    out: Path  # the sweep directory: one sub-directory per run (see mptcplab.run.results)
    quick: bool
    where: str  # the place the kernel under test is (mptcplab.places)
    started: float = 0.0  # time.monotonic() when the sweep started
    shard: object = None  # mptcplab.run.shards.Shard: run only shard K of N of the points


@dataclass(frozen=True)
class Point:
    """One run of a sweep."""

    key: str  # its directory's name in the sweep
    values: dict  # what this run varies: its manifest's `parameters`
    topology: Callable[[dict], object] | None = None  # another network than the lab's (e.g. a shared bottleneck)


def _no_settings(net, point: Point, params: dict) -> None:
    return None


def _no_session(ctx: RunContext) -> ContextManager:
    return contextlib.nullcontext()


# A lab's optional hooks, in groups a lab gives only where they apply (each group's defaults do nothing).

@dataclass(frozen=True)
class Running:
    """Beyond the five hooks every lab has: what the engine does around its runs."""

    configure: Callable[[object, Point, dict], None] = _no_settings  # (net, point, params): a run's own
    #   settings (sysctls, links), applied before the network is recorded into its manifest
    session: Callable[[RunContext], ContextManager] = _no_session  # held around every network (BPF programs loaded)
    path_checks: dict = field(default_factory=dict)  # options of verify.check_paths for the setup check
    extra_check: Callable[[object, object, dict], str] | None = None  # (net, rundir, params): the setup
    #   check's own step (a line for the log)
    clean: Callable[[], list[str]] | None = None  # removes what a killed run left in the kernel (beyond
    #   namespaces and tracefs, which the engine removes); for `mptcplab clean`
    prebuild: Callable[[str], object] | None = None  # (guest kernel release): host-side work before a
    #   guest place boots (compiling BPF objects for that kernel); truthy when something was built
    convert: Callable[[Path], object] | None = None  # (sweep dir): the finished runs' raw records into
    #   their tables (the analysis's first step, repeatable): on the host beside a guest's sweep
    #   (runner.converting), so the analysis after the guest finds little left to convert


@dataclass(frozen=True)
class Parameters:
    """What `experiment.toml` and `--set` may hold beyond the shared vocabulary (see check_params)."""

    check: Callable[[dict], None] | None = None  # raises UsageError on a value the generic checks let through
    renamed: dict[str, str] = field(default_factory=dict)  # old parameter name -> new one (refused, named)
    any_kind: tuple[str, ...] = ()  # parameters that take more than one kind of value (checked by `check`)
    may_skip: tuple[str, ...] = ()  # repetitions that may be 0: that part of the sweep is not run (a
    #   controlled run that measures only transfers)


@dataclass(frozen=True)
class Judging:
    """How a lab's results are judged and shown outside its own report."""

    results_checks: dict[str, Callable[[Path], list]] = field(default_factory=dict)  # a results table's file
    #   name -> its physics judge (-> [physics.Verdict]), for `mptcplab check`
    claims: ModuleType | None = None  # the lab's ledger (labs/labN/claims.py: CLAIMS and tables(results_dir)),
    #   evaluated after every run into claims.json (mptcplab.judge.claims)
    fragments: Callable[[Path], dict[str, str]] | None = None  # reference dir -> {fragment name: markdown}
    #   for the generated blocks of the guides and site (`mptcplab fragments`)


@dataclass(frozen=True)
class Grading:
    """What grading hides from a submission and the unseen inputs it grades on (mptcplab.grading)."""

    answer_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a module of the lab's package
    #   ("models") -> its functions whose result a graded question asks the student to compute: hidden
    #   while a submission is graded (mptcplab.grading.answer_keys)
    answer_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a table of the lab's
    #   reference results ("runs.csv") -> its columns that are answers: a submission sees it without them
    held_out: Callable[[object, object], dict] | None = None  # (its reference tables as analysis.load reads
    #   them, a numpy Generator seeded from the grader's secret) -> inputs no student has seen, answer
    #   columns dropped: the hidden tests call the student's functions on them (mptcplab.grading.reference)
    unseen_answers: Callable[[dict], dict] | None = None  # held_out's inputs -> {key ("q4"): the kit's answer};
    #   run by the grader with the real answer keys, never where student code runs (an answer key itself)


@dataclass
class Lab:
    """A lab as the engine sees it: who it is, the five hooks of its experiment, what it needs of a
    place, and optional groups (`Running`, `Parameters`, `Judging`, `Grading`, `commands`)."""

    # Who it is
    id: str  # "lab1"
    slug: str  # "01-send-buffer": its guide's folder under labs/, its notebooks' names
    title: str
    # The experiment: every lab gives these
    topology: Callable[[dict], object]  # params -> mptcplab.net.topology.Topology (the lab's network)
    points: Callable[[dict, object], list[Point]]  # (params, results.Sweep so far) -> the runs still wanted
    measure: Callable[[object, object, Point, dict], str]  # (net, rundir, point, params): fills the
    #   run's summary; returns one line for the progress log
    finish: Callable[[RunContext], dict]  # after the last run: tables and figures; the lab's summary
    analysis: ModuleType  # labN.analysis: compact, load, report, figures, export_reference
    # What a place's kernel must offer to honour the lab's inputs (mptcplab.core.kernel.PLACE_CAPABILITIES):
    # netem for its paths' delays and loss, and the features it measures; `auto` picks only such places.
    needs: tuple[str, ...] = ("netem",)
    # params -> {capability: the part of the lab that needs it, in words}, for parts a run's parameters
    # may leave out (a paper point with the paper's scheduler). One sweep runs in one kernel, so a run
    # that includes such a part needs it of its place: `needs_for`.
    part_needs: Callable[[dict], dict[str, str]] | None = None
    # Optional groups
    running: Running = field(default_factory=Running)
    parameters: Parameters = field(default_factory=Parameters)
    judging: Judging = field(default_factory=Judging)
    grading: Grading = field(default_factory=Grading)
    # Subcommands of its own: each `register(subparsers)` adds one to the `mptcplab` CLI
    # (commands/lab_commands.py), like a module of mptcplab.commands
    commands: tuple[Callable[[object], None], ...] = ()

    def needs_for(self, params: dict) -> tuple[str, ...]:
        """What a place must offer for a run with these parameters: `needs` and its parts' own."""
        return tuple(sorted(set(self.needs) | set(self.parts_needing(params))))

    def parts_needing(self, params: dict) -> dict[str, str]:
        """{capability: the part of this run that needs it} beyond `needs` (see part_needs)."""
        return self.part_needs(params) if self.part_needs else {}

    @property
    def params_file(self) -> Path:
        """The lab's parameters: `experiment.toml` in its own package (shipped as package data)."""
        return paths.PACKAGE / "labs" / self.id / "experiment.toml"

    def report(self, out: Path) -> str:
        """Sweep dir -> markdown "paper vs this run"."""
        return self.analysis.report(out)

    def figures(self, out: Path) -> list:
        """Sweep dir (or reference copy) -> plotly figures, in the paper's order."""
        return list(self.analysis.figures(out))

    def export(self, out: Path, dest: Path):
        """Sweep dir -> compact reference results in dest (e.g. solutions/results/labN)."""
        return self.analysis.export_reference(out, dest)

    def load_params(self, quick: bool, overrides: dict | None = None) -> dict:
        """Read the lab's `experiment.toml`; `[quick]` overrides top-level keys with --quick;
        then --set overrides. Every value is checked (see check_params) before anything runs."""
        path = self.params_file
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise UsageError(f"{self.id}: parameter file {path} is missing") from None
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{path}: {exc}") from None
        quick_over = raw.pop("quick", {})
        check_keys(self, raw, quick_over, str(path))
        for over, where in ((quick_over, f"{path} [quick]"), (overrides or {}, "--set")):
            check_keys(self, raw, over, where)
        params = _merge(raw, quick_over) if quick else raw
        params = _merge(params, overrides or {})
        check_params(self, params)
        return params


# ---------------------------------------------------------------- parameter checks

# Tables whose keys are names the user chooses (a path, a host, a sysctl), not parameters, and how
# many levels below the table those names go: paths.NAME and cross.NAME (what is inside a path is
# the lab's vocabulary), sysctls.HOST."net.x.y" and run_sysctls.HOST."net.x.y" (names all the way down).
OPEN_TABLES = {"paths": 1, "cross": 1, "sysctls": 2, "run_sysctls": 2}


def _kind(v) -> str:
    if isinstance(v, bool):
        return "true/false"
    if isinstance(v, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def check_keys(lab: Lab, base: dict, over: dict, where: str, prefix: str = "") -> None:
    """Every key of `over`, at any depth, must exist in the parameter file (`base`) with a value of
    the same kind; a new name in an open table (a new path) has the keys its siblings have."""
    for key, value in over.items():
        name = f"{prefix}{key}"
        if name in lab.parameters.renamed:
            raise UsageError(f"{where}: parameter {name!r} is now called {lab.parameters.renamed[name]!r}")
        if key not in base:
            parents = prefix.split(".")[:-1]  # "paths.fast." -> ["paths", "fast"]
            if parents and 1 <= len(parents) <= OPEN_TABLES.get(parents[0], 0):
                siblings = [v for v in base.values() if isinstance(v, dict)]
                if isinstance(value, dict) and siblings and len(parents) == OPEN_TABLES[parents[0]]:
                    # a new path: its keys are those its siblings have
                    check_keys(lab, {k: v for s in siblings for k, v in s.items()}, value, where, f"{name}.")
                continue
            valid = sorted(f"{prefix}{k}" for k in base)
            near = difflib.get_close_matches(name, valid, n=3, cutoff=0.5) or valid[:5]
            raise UsageError(f"{where}: {lab.id} has no parameter {name!r}; nearest valid: "
                             + (", ".join(near) or "(none: this table takes no parameters)"))
        old = base[key]
        if _kind(old) != _kind(value) and name not in lab.parameters.any_kind:
            raise UsageError(f"{where}: {name} = {value!r} should be {_kind(old)}, like {old!r}")
        if isinstance(value, dict):
            check_keys(lab, old, value, where, f"{name}.")


def check_params(lab: Lab, params: dict) -> None:
    """The ranges every lab shares (by the common vocabulary), then the lab's own: its network, its
    points and their own networks are built, which checks every link spec and choice, so a bad value
    fails here, before any place (UML, a VM) is started."""
    def walk(d: dict, prefix: str = ""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from walk(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}", k, v

    for name, key, value in walk(params):
        least = 0 if name in lab.parameters.may_skip else 1
        if key == "repetitions" and not (isinstance(value, int) and value >= least):
            raise UsageError(f"{name} = {value!r}: give a whole number of repetitions >= {least}")
        if key.endswith("_s") and isinstance(value, (int, float)) and not value > 0:
            raise UsageError(f"{name} = {value!r}: give a duration in seconds > 0")
    if lab.parameters.check:
        lab.parameters.check(params)
    lab.topology(params)
    for build in {p.topology for p in lab.points(params, None) if p.topology}:  # networks of the points' own
        build(params)


def link_with_delay(spec: dict, where: str) -> str:
    """A link in the vocabulary every lab shares: `link` (rate, queue, loss...) and its one-way
    `delay`, each optional, as in `paths.<name>` (`where`), e.g. "rate=100mbit,delay=40ms". A delay
    written inside `link` is refused, so one `--set paths.<name>.delay=...` means the same in every lab."""
    link = spec.get("link") or ""
    if "delay=" in link:
        raise UsageError(f"{where}.link = {link!r}: give its delay as {where}.delay")
    return ",".join(part for part in (link, f"delay={spec['delay']}" if spec.get("delay") else "") if part)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def all_labs() -> dict[str, Lab]:
    """Every lab package under mptcplab.labs (its `experiment` module defines LAB). Imported by name,
    so the engine's modules never import a lab (the import contracts in pyproject.toml check that)."""
    labs = importlib.import_module("..labs", __package__)
    found = {}
    for info in pkgutil.iter_modules(labs.__path__):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{labs.__name__}.{info.name}.experiment")
        lab = getattr(module, "LAB", None)
        if isinstance(lab, Lab):
            found[lab.id] = lab
    return dict(sorted(found.items()))


def get_lab(lab_id: str) -> Lab:
    labs = all_labs()
    if lab_id not in labs:
        raise UsageError(f"unknown lab {lab_id!r}; choose one of: {', '.join(labs) or '(none installed)'}")
    return labs[lab_id]
