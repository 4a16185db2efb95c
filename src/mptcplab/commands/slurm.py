"""`mptcplab slurm LAB --array N [--quick] [--set K=V...] [--out DIR]`: a sweep on a Slurm cluster.

Writes two batch scripts into DIR/slurm/ and submits them with `sbatch`:

- `shards.sbatch`, a job array of N tasks: task K runs `mptcplab run LAB --shard K/N --where auto`
  into DIR/shard-K-of-N, in the place `auto` picks on its node (native where netem works, else the
  kit's UML kernel, which needs no virtualisation, else a VM where QEMU is installed), or in the
  place `--where` names;
- `merge.sbatch`, submitted with `--dependency=afterok:<the array>`: `mptcplab merge` of the N
  shards into DIR/merged, then `mptcplab check DIR/merged`.

`--dry-run` writes the scripts and prints the two sbatch commands without submitting, for sites
that submit by hand or edit the scripts first. The kit must be installed at the same path on every
node (a shared filesystem, as DIR must be), and the jobs need what `mptcplab run` needs on a node.
sbatch is Slurm's own interface; this only fills in the lab's command lines.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ..core.errors import EnvironmentProblem
from ..run.lab import all_labs

SHARDS = """#!/bin/bash
# {lab}: shard K of {n} of the sweep, one array task per shard (written by `mptcplab slurm`).
#SBATCH --job-name=mptcplab-{lab}
#SBATCH --array=1-{n}
#SBATCH --output={slurm}/shard-%a-of-{n}.log
# One experiment per node: two on one machine would measure each other (the kit's experiment
# lock would serialise them anyway, holding the second allocation idle).
#SBATCH --exclusive
{extra}set -euo pipefail
exec {kit} run {lab}{args} --where {where} \\
    --shard "$SLURM_ARRAY_TASK_ID/{n}" --out "{out}/shard-$SLURM_ARRAY_TASK_ID-of-{n}"
"""

MERGE = """#!/bin/bash
# {lab}: the {n} shards merged into one sweep, once every array task succeeded (written by
# `mptcplab slurm`; submitted with --dependency=afterok:<the array's job id>).
#SBATCH --job-name=mptcplab-{lab}-merge
#SBATCH --output={slurm}/merge.log
{extra}set -euo pipefail
{kit} merge {shards} --out "{out}/merged"
exec {kit} check "{out}/merged"
"""


def register(sub) -> None:
    p = sub.add_parser("slurm", help="run a lab's sweep on a Slurm cluster: a job array of shards, then a "
                                     "dependent job that merges them")
    p.add_argument("lab", help=f"which lab: {', '.join(all_labs())}")
    p.add_argument("--array", type=int, required=True, metavar="N", help="how many shards (array tasks)")
    p.add_argument("--quick", action="store_true", help="the short version of the sweep")
    p.add_argument("--where", default="auto", help="the place each shard runs in (default auto: what each node "
                   "offers; name one to keep a mixed partition's shards in one place, which merge requires)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override a parameter, as for `mptcplab run` (every shard gets the same)")
    p.add_argument("--out", type=Path, default=None,
                   help="a directory every node sees (default: results/LAB[-quick]-slurm)")
    p.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="an sbatch option for both jobs, e.g. --sbatch=--partition=net --sbatch=--time=4:00:00")
    p.add_argument("--dry-run", action="store_true", help="write the scripts and print the sbatch commands only")
    p.set_defaults(func=_slurm)


def scripts(lab: str, n: int, quick: bool, overrides: list[str], out: Path, sbatch: list[str],
            kit: str, where: str = "auto") -> tuple[str, str]:
    """The two batch scripts' text; `kit` is the command that runs mptcplab, shell-quoted."""
    slurm = out / "slurm"
    args = (" --quick" if quick else "") + "".join(f" --set {shlex.quote(o)}" for o in overrides)
    extra = "".join(f"#SBATCH {o}\n" for o in sbatch)
    shards = " ".join(f'"{out}/shard-{k}-of-{n}"' for k in range(1, n + 1))
    fill = dict(lab=lab, n=n, slurm=slurm, extra=extra, kit=kit, args=args, out=out, shards=shards,
                where=shlex.quote(where))
    return SHARDS.format(**fill), MERGE.format(**fill)


def _slurm(a) -> int:
    from ..run.lab import get_lab
    from ..run.runner import default_out
    from ..run.shards import Shard, share
    from .run import parse_overrides

    lab = get_lab(a.lab)
    params = lab.load_params(a.quick, parse_overrides(a.overrides))  # bad parameters fail before submitting
    share(lab, params, Shard(1, a.array))  # so does an array larger than the sweep
    out = Path(a.out or default_out(lab.id, a.quick).with_name(default_out(lab.id, a.quick).name + "-slurm"))
    out = out.resolve()
    (out / "slurm").mkdir(parents=True, exist_ok=True)
    beside = Path(sys.executable).with_name("mptcplab")  # this installation's command (its venv's)
    kit = shlex.quote(str(beside)) if beside.exists() else f"{shlex.quote(sys.executable)} -m mptcplab"
    shards_text, merge_text = scripts(lab.id, a.array, a.quick, a.overrides, out, a.sbatch, kit, a.where)
    shards_file, merge_file = out / "slurm" / "shards.sbatch", out / "slurm" / "merge.sbatch"
    shards_file.write_text(shards_text)
    merge_file.write_text(merge_text)
    if a.dry_run:
        print(f"sbatch --parsable {shards_file}")
        print(f"sbatch --dependency=afterok:<its job id> {merge_file}")
        return 0
    if not shutil.which("sbatch"):
        raise EnvironmentProblem("sbatch not found: run this on a Slurm login node (or use --dry-run)")
    array = _submit(["sbatch", "--parsable", str(shards_file)])
    merged = _submit(["sbatch", "--parsable", f"--dependency=afterok:{array}", str(merge_file)])
    print(f"submitted: shards job {array} (array 1-{a.array}), merge job {merged}; results in {out}/merged, "
          f"logs in {out}/slurm/")
    return 0


def _submit(cmd: list[str]) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise EnvironmentProblem(f"{' '.join(cmd)} failed: {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout.strip().split(";")[0]  # --parsable: "jobid[;cluster]"
