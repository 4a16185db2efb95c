"""Run one untrusted command in a throwaway sandbox.

Layers, all from the stock kernel and util-linux (no Docker needed):
- `unshare --net --mount --pid --ipc --uts`: a fresh network namespace holding only a loopback
  (the Jupyter kernel talks to its client over 127.0.0.1; nothing else is reachable), a private
  mount table, and a PID namespace so every process the submission starts dies with it;
- inside, while still root, `prepare()` hides everything a student must not read (the master
  notebooks, the autograder, other submissions, /root, /home, /tmp) under empty tmpfs mounts, puts
  the reference results back read-only, and mounts the submission's copy as the working directory;
- then it drops to an unprivileged user, sets rlimits (address space, CPU seconds, file size,
  processes, open files) and execs the command;
- the caller wraps it all in `timeout -s KILL`, so a hung submission cannot outlive its budget.

`python -m mptcplab.grading.sandbox SPEC_JSON -- CMD...` is the in-namespace half.
"""

from __future__ import annotations

import json
import os
import pwd
import resource
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..lab import REPO_ROOT


@dataclass
class Limits:
    wall_s: int = 600  # whole sandbox, killed with SIGKILL
    cpu_s: int = 600
    memory_mb: int = 3072  # RLIMIT_AS per process; a Jupyter kernel with pandas needs ~1.5 GiB of address space
    file_mb: int = 64  # largest file a submission may write
    nproc: int = 256
    nofile: int = 1024


@dataclass
class Spec:
    workdir: str  # the submission's private copy; becomes <repo>/notebooks inside
    user: str = "nobody"
    limits: Limits = field(default_factory=Limits)
    hide: list[str] = field(default_factory=list)  # more paths to cover (submission dirs, output dir)
    repo: str = str(REPO_ROOT)


def default_hidden(repo: Path) -> list[Path]:
    """What untrusted code must never see: solutions, autograders, tests, VCS history, homes, temp."""
    return [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/root"), Path("/home"),
            repo / "solutions", repo / "build", repo / "tests", repo / ".git", repo / "results"]


def grader_user(preferred: str | None = None) -> str:
    """The unprivileged account: `mptcplab-grader` when the VM provisioned it, else nobody."""
    for name in (preferred, "mptcplab-grader", "nobody"):
        if name:
            try:
                pwd.getpwnam(name)
                return name
            except KeyError:
                continue
    raise RuntimeError("no unprivileged user to run submissions as (create one: useradd -r mptcplab-grader)")


def available() -> str | None:
    """None when sandboxing works here, else why not (grading refuses to run unsandboxed)."""
    if os.geteuid() != 0:
        return "grading needs root to create namespaces and drop to an unprivileged user (run with sudo)"
    for tool in ("unshare", "timeout", "ip", "mount"):
        if not shutil.which(tool):
            return f"`{tool}` is missing (apt-get install util-linux iproute2 coreutils)"
    return None


def command(spec: Spec, argv: list[str]) -> list[str]:
    """The host-side command line: kill after wall_s, new namespaces, then prepare() inside."""
    return ["timeout", "-s", "KILL", str(spec.limits.wall_s),
            "unshare", "--net", "--mount", "--pid", "--ipc", "--uts", "--fork", "--kill-child", "--mount-proc",
            sys.executable, "-m", "mptcplab.grading.sandbox", json.dumps(asdict(spec)), "--", *argv]


def _sh(*argv: str, **kw) -> None:
    subprocess.run(argv, check=True, capture_output=True, **kw)


def prepare(spec: Spec) -> None:
    """Inside the new namespaces, as root: build the filesystem view, then drop privileges."""
    repo = Path(spec.repo)
    user = pwd.getpwnam(spec.user)
    hidden = sorted({Path(p) for p in [*map(str, default_hidden(repo)), *spec.hide]}, key=lambda p: len(p.parts))
    # Paths that must stay visible are held by file descriptor, because the tmpfs mounts below
    # cover their parents: the submission's copy, the reference results, and the Python runtime
    # itself (pyenv or uv interpreters often live under /root).
    results = repo / "solutions" / "results"
    keep = {repo / "notebooks": spec.workdir}
    if results.is_dir():
        keep[results] = str(results)
    for runtime in {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}:
        if any(runtime.is_relative_to(h) for h in hidden):
            keep[runtime] = str(runtime)
    fds = {target: os.open(src, os.O_PATH | os.O_DIRECTORY) for target, src in keep.items()}
    _sh("mount", "--make-rprivate", "/")
    covered: list[Path] = []
    for path in hidden:
        if not path.is_dir() or any(path.is_relative_to(c) for c in covered):
            continue
        if repo.is_relative_to(path):
            continue  # never cover the kit itself (e.g. a checkout under /home: its siblings stay visible)
        _sh("mount", "-t", "tmpfs", "-o", "size=256m,mode=1777,nosuid,nodev", "mlab-hidden", str(path))
        covered.append(path)
    for target, fd in fds.items():
        target.mkdir(parents=True, exist_ok=True)
        _sh("mount", "--no-canonicalize", "--bind", f"/proc/self/fd/{fd}", str(target), pass_fds=(fd,))
        if target != repo / "notebooks":
            _sh("mount", "-o", "remount,bind,ro", str(target))
        os.close(fd)
    _sh("ip", "link", "set", "lo", "up")
    notebooks = repo / "notebooks"

    lim = spec.limits
    mb = 1024 * 1024
    for res, value in ((resource.RLIMIT_AS, lim.memory_mb * mb), (resource.RLIMIT_CPU, lim.cpu_s),
                       (resource.RLIMIT_FSIZE, lim.file_mb * mb), (resource.RLIMIT_NPROC, lim.nproc),
                       (resource.RLIMIT_NOFILE, lim.nofile), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(res, (value, value))
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    os.chdir(notebooks)
    os.environ.clear()
    os.environ.update({
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg",
        "JUPYTER_RUNTIME_DIR": "/tmp/jupyter-runtime", "IPYTHONDIR": "/tmp/ipython",
        "MPTCPLAB_GRADING": "1",
    })


def main(argv: list[str]) -> None:
    spec_json, sep, *cmd = argv
    if sep != "--" or not cmd:
        raise SystemExit("usage: python -m mptcplab.grading.sandbox SPEC_JSON -- CMD...")
    raw = json.loads(spec_json)
    spec = Spec(**{**raw, "limits": Limits(**raw["limits"])})
    prepare(spec)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
