"""A sweep on a real (one-node) Slurm cluster: `mptcplab slurm` submits a job array of shards and a
dependent merge; the merged tables are those the lab builds from the same runs in one directory.

The test starts its own cluster: munged, slurmctld and slurmd (Debian's `munge` and `slurm-wlm`,
installed by `scripts/install-deps.sh --dev`) with a generated slurm.conf, private sockets, ports
and state under the test's directory, as root, no systemd. The lab is a quick Lab 3 cut to four
runs (two flow counts, one random loss, one DropTail capacity; 2 s warm-up, 6 s measured), split
into three shards: each job runs in the place `auto` picks here (the kit's UML kernel where the
host has no netem).

Its cluster never outlives it: the fixture's finaliser cancels every job, stops the daemons and
kills whatever still runs with the cluster's SLURM_CONF; SIGTERM and SIGHUP unwind the test like
Ctrl-C, so the finaliser runs then too; and a cluster whose test died without it (SIGKILL, a
lost machine) is registered under /run/mptcplab/test-slurm/, where the next run finds and removes
it before it starts its own. Before submitting, the test waits for the kit's experiment lock for
at most LOCK_WAIT_S, well inside its timeout: its jobs take that lock, and a job waiting behind
another experiment would otherwise outlive the test.
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mptcplab.core.state import signals_unwind

KIT = str(Path(sys.executable).with_name("mptcplab"))
SUBSET = ["--set", "flows=[1, 2]", "--set", 'random.loss=["2%"]', "--set", 'droptail.capacity=["4mbit"]',
          "--set", "warmup_s=2", "--set", "steady_s=6"]
SHARDS = 3
DAEMONS = ("munged", "slurmctld", "slurmd")
CLUSTERS = Path("/run/mptcplab/test-slurm")  # one file per live test cluster: "<pytest pid>-<dir name>" -> dir
TIMEOUT_S = 3000  # the test's own
LOCK_WAIT_S = 480  # for another experiment to finish before the jobs are submitted
JOBS_WAIT_S = 2100  # for the jobs; with the lock wait, submission and teardown: inside TIMEOUT_S

SLURM_CONF = """\
ClusterName=mptcplabtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={port}
SlurmdPort={dport}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
ReturnToService=2
MinJobAge=3600
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(d: Path) -> None:
    """The daemons this test started, by the pids they wrote."""
    for name in reversed(DAEMONS):
        pid = d / f"{name}.pid"
        if pid.exists():
            try:
                os.kill(int(pid.read_text()), signal.SIGTERM)
            except (ProcessLookupError, ValueError):
                pass


def _running_with(conf: Path) -> list[int]:
    """Processes whose environment names this cluster's SLURM_CONF: its daemons, its job steps,
    the jobs' commands (sbatch passes the submitter's environment on)."""
    want = f"SLURM_CONF={conf}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if want in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def _kill_cluster(d: Path, grace_s: float = 10.0) -> list[int]:
    """Stop a cluster's daemons, then end every process still running with its SLURM_CONF
    (SIGTERM, then SIGKILL after `grace_s`); the pids that had to be ended."""
    _stop(d)
    pids = _running_with(d / "slurm.conf")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while (left := _running_with(d / "slurm.conf")) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not left:
            break
        pids = left
    return pids


def _owner_alive(pid: int) -> bool:
    with contextlib.suppress(OSError, ValueError):
        return b"pytest" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def _clean_leftovers(registry: Path = CLUSTERS) -> list[Path]:
    """Remove the clusters of earlier runs whose pytest died without its teardown."""
    gone = []
    for entry in sorted(registry.glob("*-*")) if registry.exists() else []:
        if _owner_alive(int(entry.name.split("-", 1)[0])):
            continue  # a live test's own cluster
        d = Path(entry.read_text().strip())
        _kill_cluster(d)
        entry.unlink(missing_ok=True)
        gone.append(d)
    return gone


def _wait_for_lock(seconds: float, lock: Path | None = None) -> None:
    """Wait at most `seconds` for the kit's experiment lock to be free (then release it: the jobs
    take it); fail, saying so, when another experiment holds it longer."""
    from mptcplab.run.results import LOCK_FILE

    lock = lock or LOCK_FILE
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + seconds
    with open(lock, "a+") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pytest.fail(f"another experiment held {lock} for more than {seconds:.0f} s; "
                                "the jobs would wait behind it past the test's timeout")
                time.sleep(min(5.0, max(0.05, deadline - time.monotonic())))


def _teardown(d: Path, env: dict, entry: Path) -> None:
    """Cancel the cluster's jobs and wait for them to end, then stop it and end what is left."""
    with contextlib.suppress(Exception):
        subprocess.run(["scancel", "--full", "--user=root"], env=env, capture_output=True, timeout=30)
        deadline = time.monotonic() + 60
        while subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=env,
                             timeout=30).stdout.strip() and time.monotonic() < deadline:
            time.sleep(2)
    _kill_cluster(d)
    entry.unlink(missing_ok=True)


@pytest.fixture
def slurm(tmp_path_factory, request):
    """A one-node Slurm cluster; yields the environment its commands need (SLURM_CONF)."""
    if os.geteuid() != 0:
        pytest.skip("starts Slurm's daemons: run as root (make test)")
    missing = [b for b in (*DAEMONS, "sbatch", "squeue") if not shutil.which(b)]
    assert not missing, f"{missing} not installed: scripts/install-deps.sh --dev installs slurm-wlm and munge"
    for old in _clean_leftovers():
        print(f"removed the Slurm test cluster an interrupted run left in {old}")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    d.chmod(0o700)  # munged refuses a key or socket others can reach
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname().split(".")[0]
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=host, d=d, port=_free_port(), dport=_free_port(), cpus=os.cpu_count()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    CLUSTERS.mkdir(parents=True, exist_ok=True)
    entry = CLUSTERS / f"{os.getpid()}-{d.name}"
    entry.write_text(f"{d}\n")  # before any daemon starts: a run that dies now still leaves its address
    request.addfinalizer(lambda: _teardown(d, env, entry))
    # SIGTERM and SIGHUP raise KeyboardInterrupt (state.Terminated) while the cluster lives, so pytest
    # unwinds and runs the fixture's finaliser (by default they end the process without it).
    with signals_unwind():
        subprocess.run(["munged", "--force", "-S", d / "munge.sock", f"--key-file={key}",
                        f"--log-file={d}/munged.log", f"--pid-file={d}/munged.pid", f"--seed-file={d}/munge.seed"],
                       check=True, timeout=30, env=env)
        subprocess.run(["slurmctld", "-f", conf], check=True, timeout=60, env=env)
        subprocess.run(["slurmd", "-f", conf], check=True, timeout=60, env=env)
        deadline = time.monotonic() + 60
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                                           env=env).stdout:
            assert time.monotonic() < deadline, "the node never became idle:\n" + (d / "slurmd.log").read_text()
            time.sleep(1)
        yield env


def _wait_for(jobs: list[str], env: dict, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while subprocess.run(["squeue", "-h", "-j", ",".join(jobs)], capture_output=True, text=True, env=env).stdout.strip():
        assert time.monotonic() < deadline, f"jobs {jobs} still queued or running after {timeout:.0f} s"
        time.sleep(5)


def _exit_codes(jobs: list[str], env: dict) -> list[str]:
    """Each job's (each array task's) state and exit code, from slurmctld (MinJobAge keeps them)."""
    out = "".join(subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True,
                                 env=env).stdout for job in jobs)  # one job (all its array tasks) per call
    return sorted(" ".join(f for f in line.split() if f.startswith(("JobState=", "ExitCode="))) for line in out.splitlines())


@pytest.mark.integration
@pytest.mark.timeout(TIMEOUT_S)
def test_a_quick_lab3_in_three_shards_on_slurm_merges_into_the_tables_of_one_directory(slurm, tmp_path):
    from mptcplab.run.lab import RunContext, get_lab
    from mptcplab.run.runner import conclude

    _wait_for_lock(LOCK_WAIT_S)
    out = tmp_path / "sweep"
    res = subprocess.run([KIT, "slurm", "lab3", "--array", str(SHARDS), "--quick", *SUBSET, "--out", str(out)],
                         capture_output=True, text=True, env=slurm, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    jobs = res.stdout.split("shards job ")[1].split()[0], res.stdout.split("merge job ")[1].split(";")[0]
    _wait_for(list(jobs), slurm, timeout=JOBS_WAIT_S)
    logs = "\n".join(f"--- {f.name}\n{f.read_text()[-3000:]}" for f in sorted((out / "slurm").glob("*.log")))
    assert _exit_codes(list(jobs), slurm) == ["JobState=COMPLETED ExitCode=0:0"] * (SHARDS + 1), logs

    merged = out / "merged"
    shards = [out / f"shard-{k}-of-{SHARDS}" for k in range(1, SHARDS + 1)]
    sizes = [len(json.loads((s / "shard.json").read_text())["runs"]) for s in shards]
    assert sizes == [2, 1, 1]  # four runs, round-robin
    assert {json.loads((s / "verify" / "manifest.json").read_text())["platform"]["where"] for s in shards} == \
        {json.loads((merged / "verify" / "manifest.json").read_text())["platform"]["where"]}

    # the same runs copied into one directory, analysed as `mptcplab run` analyses a sweep
    one = tmp_path / "one"
    for s in shards:
        for d in s.iterdir():
            if d.is_dir() and (d.name != "verify" or s == shards[0]):
                shutil.copytree(d, one / d.name)
    lab = get_lab("lab3")
    params = json.loads((shards[0] / "shard.json").read_text())["parameters"]
    conclude(lab, one, lab.finish(RunContext(lab=lab, params=params, out=one, quick=True, where="uml")))
    tables = sorted(p.name for p in one.iterdir() if p.suffix in (".csv", ".md") or p.name == "lab3-manifest.json")
    assert {"runs.csv", "flows.csv", "losses.csv", "paper-vs-this-run.md"} <= set(tables)
    for name in tables:
        assert (merged / name).read_text() == (one / name).read_text(), name
    assert len((merged / "runs.csv").read_text().splitlines()) == 1 + 4

    check = subprocess.run([KIT, "check", str(merged)], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    assert " 0 outside physics" in check.stdout
    assert "mptcplab check" in (out / "slurm" / "merge.log").read_text()  # the merge job checked it too


# ---------------------------------------------------------------- the cleanup, without Slurm

def test_the_budget_leaves_the_teardown_time_inside_the_timeout():
    assert LOCK_WAIT_S + JOBS_WAIT_S + 120 + 300 <= TIMEOUT_S  # submission 120 s, teardown and checks 300 s


def test_a_cluster_whose_test_died_is_removed_by_the_next_run(tmp_path):
    """A job left running (here `sleep`, with the cluster's SLURM_CONF as a job has it) by a test
    that died without its teardown is ended; a live test's cluster is left alone."""
    dead, live = tmp_path / "slurm-dead", tmp_path / "slurm-live"
    for d in (dead, live):
        d.mkdir()
        (d / "slurm.conf").write_text("")
    job = subprocess.Popen(["sleep", "600"], env={**os.environ, "SLURM_CONF": str(dead / "slurm.conf")})
    bystander = subprocess.Popen(["sleep", "600"], env={**os.environ, "SLURM_CONF": str(live / "slurm.conf")})
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid whose process has ended: the dead test's
    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / f"{gone.pid}-{dead.name}").write_text(f"{dead}\n")
    (registry / f"{os.getpid()}-{live.name}").write_text(f"{live}\n")  # this pytest: alive
    try:
        assert _running_with(dead / "slurm.conf") == [job.pid]
        assert _clean_leftovers(registry) == [dead]
        assert job.wait(timeout=15) == -signal.SIGTERM
        assert [e.name for e in registry.iterdir()] == [f"{os.getpid()}-{live.name}"]
        assert bystander.poll() is None
    finally:
        for p in (job, bystander):
            p.kill()
            p.wait()


def test_sigterm_unwinds_like_ctrl_c_so_the_finaliser_runs():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="signal SIGTERM"), signals_unwind():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises first
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_lock_wait_is_bounded(tmp_path):
    lock = tmp_path / "experiment.lock"
    _wait_for_lock(1, lock)  # free: returns at once
    with open(lock, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another experiment
        t0 = time.monotonic()
        with pytest.raises(pytest.fail.Exception, match="held .* for more than 0 s"):
            _wait_for_lock(0.3, lock)
        assert time.monotonic() - t0 < 3
