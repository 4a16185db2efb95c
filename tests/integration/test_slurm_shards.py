"""A sweep on a real (one-node) Slurm cluster: `mptcplab slurm` submits a job array of shards and a
dependent merge; the merged tables are those the lab builds from the same runs in one directory.

The test starts its own cluster: munged, slurmctld and slurmd (Debian's `munge` and `slurm-wlm`,
installed by `scripts/install-deps.sh --dev`) with a generated slurm.conf, private sockets, ports
and state under the test's directory, as root, no systemd. The lab is a quick Lab 3 cut to four
runs (two flow counts, one random loss, one DropTail capacity; 2 s warm-up, 6 s measured), split
into three shards: each job runs in the place `auto` picks here (the kit's UML kernel where the
host has no netem).
"""

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

pytestmark = pytest.mark.integration
KIT = str(Path(sys.executable).with_name("mptcplab"))
SUBSET = ["--set", "flows=[1, 2]", "--set", 'random.loss=["2%"]', "--set", 'droptail.capacity=["4mbit"]',
          "--set", "warmup_s=2", "--set", "steady_s=6"]
SHARDS = 3
DAEMONS = ("munged", "slurmctld", "slurmd")

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


@pytest.fixture
def slurm(tmp_path_factory):
    """A one-node Slurm cluster; yields the environment its commands need (SLURM_CONF)."""
    if os.geteuid() != 0:
        pytest.skip("starts Slurm's daemons: run as root (make test)")
    missing = [b for b in (*DAEMONS, "sbatch", "squeue") if not shutil.which(b)]
    assert not missing, f"{missing} not installed: scripts/install-deps.sh --dev installs slurm-wlm and munge"
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
    try:
        subprocess.run(["munged", "--force", "-S", d / "munge.sock", f"--key-file={key}",
                        f"--log-file={d}/munged.log", f"--pid-file={d}/munged.pid", f"--seed-file={d}/munge.seed"],
                       check=True, timeout=30)
        subprocess.run(["slurmctld", "-f", conf], check=True, timeout=60, env=env)
        subprocess.run(["slurmd", "-f", conf], check=True, timeout=60, env=env)
        deadline = time.monotonic() + 60
        while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                                           env=env).stdout:
            assert time.monotonic() < deadline, "the node never became idle:\n" + (d / "slurmd.log").read_text()
            time.sleep(1)
        yield env
    finally:
        subprocess.run(["scancel", "--full", "--user=root"], env=env, capture_output=True, timeout=30)
        _stop(d)


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


@pytest.mark.timeout(3000)
def test_a_quick_lab3_in_three_shards_on_slurm_merges_into_the_tables_of_one_directory(slurm, tmp_path):
    from mptcplab.lab import RunContext, get_lab
    from mptcplab.runner import conclude

    out = tmp_path / "sweep"
    res = subprocess.run([KIT, "slurm", "lab3", "--array", str(SHARDS), "--quick", *SUBSET, "--out", str(out)],
                         capture_output=True, text=True, env=slurm, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    jobs = res.stdout.split("shards job ")[1].split()[0], res.stdout.split("merge job ")[1].split(";")[0]
    _wait_for(list(jobs), slurm, timeout=2700)
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
