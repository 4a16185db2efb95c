"""`mptcplab clean`: remove everything the kit created (and nothing else)."""

from __future__ import annotations

from .. import places
from ..core import kernel, state
from ..core.errors import UsageError
from ..grading import leftovers
from ..run.lab import all_labs
from ..run.results import LOCK_FILE, experiment_running


def register(sub) -> None:
    p = sub.add_parser("clean", help="remove namespaces, processes, tracing, BPF congestion controls and "
                                     "a killed grader's leftovers the kit created")
    p.add_argument("--force", action="store_true",
                   help="clean even while an experiment holds the lock (it stops that experiment)")
    p.set_defaults(func=_clean)


def _clean(args) -> int:
    kernel.require_root()
    # What the kit made includes a running experiment's namespaces, guests and processes: cleaning
    # under it would stop it mid-run (a sweep resumes, but loses the run in progress).
    if experiment_running() and not args.force:
        raise UsageError(f"an experiment is running on this machine (it holds {LOCK_FILE}): cleaning now "
                         "would stop it. Wait for it to finish, or stop it with Ctrl-C (it removes what it "
                         "made); `mptcplab clean --force` cleans anyway.")
    removed = state.clean(all_owners=True)  # what the state files name, then anything with the kit's prefix
    for place in places.all_places():  # guests the kit booted (UML kernels, VMs) and their directories
        removed += place.clean()
    for lab in all_labs().values():  # what a lab loads into the kernel itself (Lab.running.clean: BPF programs)
        if lab.running.clean:
            removed += lab.running.clean()
    removed += leftovers.clean()  # what a killed `mptcplab grade` left: work directories, cgroups, keyrings
    for line in removed:
        print(f"removed {line}")
    print("nothing left to clean" if not removed else f"cleaned {len(removed)} item(s)")
    return 0
