"""Run one untrusted command in a throwaway sandbox.

Layers, all from the stock kernel and util-linux (no Docker needed):
- `unshare --net --mount --pid --ipc --uts`: a fresh network namespace holding only a loopback
  (the Jupyter kernel talks to its client over 127.0.0.1; nothing else is reachable), a private
  mount table, and a PID namespace so every process the submission starts dies with it;
- inside, while still root, `prepare()` builds a new root on a tmpfs holding only what a notebook
  needs: the system (read-only), the Python runtime, the kit's code and guides, the reference
  results, and the submission's copy as `<repo>/notebooks`; then it chroots into it. An allowlist,
  not a list of things to hide: solutions, autograders, tests, other submissions, other checkouts
  of the kit, /root, /home and the host's /tmp are simply not there, wherever they live;
- every writable place is a size-limited tmpfs: the submission's copy (made inside, from a
  descriptor on the original, so nothing the notebook writes reaches the host's disk), /tmp and
  /dev/shm; their pages count against the cgroup's memory;
- before anything else the process joins the submission's cgroup (`cgroup.py`: memory, TCP
  buffers, pids and CPU of the whole tree), then drops to the submission's own UID (`identity.py`:
  leased from a reserved range, held by no other submission and no account, so no per-user limit
  is shared; its keyrings cleared), joins a fresh session keyring (never the grader's),
  sets rlimits (address space per
  process, so a big allocation raises MemoryError instead of waking the OOM killer; CPU
  seconds, file size, processes, open files) and execs the command with Python in isolated
  mode (-I: no current directory or user site on sys.path, PYTHON* variables ignored), from a
  working directory the user cannot write;
- the caller wraps it all in `timeout -s KILL`, so a hung submission cannot outlive its budget;
- the checker's sandbox also holds the *oracle*, which runs the student's functions for the checks
  (`Spec.oracle_fd`): forked while still root, after both halves' common modules are imported
  (numpy, pandas, dill: ~1 s of CPU each time a process imports them), into namespaces of its own
  (mount, PID, network, IPC, UTS), where it binds the answer keys' redacted copies over the real
  ones, mounts its own /tmp, /dev/shm and /proc and drops to the submission's UID like the rest;
  the checker then runs in the sandbox's first process (`python -I -m` as its command says).

Why not bubblewrap: it would replace only the mounts below (it sets neither cgroups nor rlimits),
which are a few mount(2) calls already tested here (made directly, not through mount(8): ~90
processes per submission cost ~0.25 s of CPU); nsjail (which does all of it) is not
packaged for Debian 12.

`python -m mptcplab.grading.sandbox SPEC_JSON -- CMD...` is the in-namespace half.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import runpy
import shutil
import signal
import site
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import identity
from ..run.lab import REPO_ROOT

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# <linux/sched.h>, <linux/mount.h>
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
# Imported before the oracle is forked, so the checker and the oracle share them: every module here
# is the same file in both views (none is an answer key; `fork_oracle` checks).
SHARED_MODULES = ("numpy", "pandas", "dill")


@dataclass
class Limits:
    wall_s: int = 600  # whole sandbox, killed with SIGKILL
    cpu_s: int = 600
    memory_mb: int = 3072  # RLIMIT_AS per process; a Jupyter kernel with pandas needs ~1.5 GiB of address space
    file_mb: int = 64  # largest file a submission may write
    disk_mb: int = 512  # each writable tmpfs (the copy, /tmp); counted in memory_mb as well
    tree_memory_mb: int = 4096  # the cgroup: every process of the submission and its tmpfs pages together
    nproc: int = 256
    nofile: int = 1024
    socket_mb: int = 64  # TCP buffers of the whole tree (cgroup v1's kmem.tcp; v2 counts them in tree_memory_mb)


@dataclass
class Spec:
    submission: str | None = None  # host file copied into a tmpfs <repo>/notebooks/<notebook_name> inside
    notebook_name: str = "notebook.ipynb"
    readonly: dict[str, str] = field(default_factory=dict)  # extra read-only binds: inside -> host path
    cwd: str = "/"  # where the command starts (the new root's top is root-owned: not writable)
    cgroup_procs: list[str] = field(default_factory=list)  # cgroup.procs files the sandbox joins first
    uid: int = 65534  # the submission's own (identity.lease()); also its GID
    limits: Limits = field(default_factory=Limits)
    repo: str = str(REPO_ROOT)
    oracle_fd: int | None = None  # a socket: the oracle (module docstring) serves the student's functions on it
    oracle_values: str = ""  # the saved values (inside) whose functions it serves
    oracle_readonly: dict[str, str] = field(default_factory=dict)  # binds only the oracle sees (redacted keys)


SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")  # read-only, as on the host
REPO_PARTS = ("src", "labs", "solutions/results")  # the kit's code, guides and reference results, read-only
VALUES = Path("/var/mlab-values")  # the runner's own tmpfs for saved values (execute.VALUES)
DEVICES = ("null", "zero", "full", "random", "urandom")


def visible(spec: Spec) -> dict[Path, Path]:
    """Everything the sandbox shows, as {path inside: path on the host}; all read-only except the
    submission's copy. The Python runtime and its site-packages are added wherever they live
    (pyenv or uv interpreters are often under /root, a venv often inside the checkout)."""
    repo = Path(spec.repo)
    paths = [Path(p) for p in SYSTEM if os.path.lexists(p)]
    paths += [repo / part for part in REPO_PARTS if (repo / part).is_dir()]
    runtime = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent,
               *(Path(p).resolve() for p in site.getsitepackages())}
    paths += sorted(p for p in runtime if p.is_dir())
    shown: dict[Path, Path] = {}
    for p in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(p.is_relative_to(q) for q in shown):  # already inside a shown tree
            shown[p] = p
    for inside, host in spec.readonly.items():  # bound last: may cover a file of a shown tree
        shown[Path(inside)] = Path(host)
    return shown


def available() -> str | None:
    """None when sandboxing works here, else why not (grading refuses to run unsandboxed)."""
    if os.geteuid() != 0:
        return "grading needs root to create namespaces and drop to an unprivileged user (run with sudo)"
    for tool in ("unshare", "timeout", "setpriv", "ip", "mount"):
        if not shutil.which(tool):
            return f"`{tool}` is missing (apt-get install util-linux iproute2 coreutils)"
    if os.uname().machine not in identity.SYS_KEYCTL:
        return f"clearing a submission's kernel keyrings is not written for {os.uname().machine} (identity.SYS_KEYCTL)"
    from . import cgroup

    return cgroup.available()


def command(spec: Spec, argv: list[str]) -> list[str]:
    """The host-side command line: kill after wall_s, new namespaces, then prepare() inside."""
    # setpriv --pdeathsig: killed with the grader (timeout with the grader's thread, unshare with
    # timeout; the sandbox's PID 1 with unshare, see _die_with_parent), so a killed grader leaves
    # no sandbox running until its time limit.
    return ["setpriv", "--pdeathsig", "KILL", "timeout", "-s", "KILL", str(spec.limits.wall_s),
            "setpriv", "--pdeathsig", "KILL", "unshare", "--net", "--mount", "--pid", "--ipc", "--uts", "--fork", "--kill-child", "--mount-proc",
            sys.executable, "-I", "-m", "mptcplab.grading.sandbox", json.dumps(asdict(spec)), "--", *argv]


def _sh(*argv: str, **kw) -> None:
    subprocess.run(argv, check=True, capture_output=True, **kw)


def prepare(spec: Spec) -> None:
    """Inside the new namespaces, as root: join the cgroup, build the new root, chroot into it, drop privileges."""
    for procs in spec.cgroup_procs:  # first: everything from here on is counted and limited
        with open(procs, "w") as f:
            f.write("0")
    uid = gid = spec.uid
    shown = visible(spec)
    lim = spec.limits
    # Held by file descriptor: the tmpfs for the new root is mounted over /tmp, which may hold
    # the checkout or the submission (CI clones into /tmp).
    fds = {inside: os.open(src, os.O_PATH) for inside, src in shown.items()}
    oracle_fds = {Path(inside): os.open(src, os.O_PATH) for inside, src in spec.oracle_readonly.items()}
    sub_fd = os.open(spec.submission, os.O_RDONLY | os.O_NOFOLLOW) if spec.submission else None
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    root = Path("/tmp")
    _mount("mlab-sandbox", str(root), "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")
    # Private /tmp first: a checkout that lives under /tmp is then bound inside it, not covered.
    for sub, size in (("tmp", lim.disk_mb), ("dev/shm", 64)):
        (root / sub).mkdir(parents=True)
        _mount("mlab-tmp", str(root / sub), "tmpfs", MS_NOSUID | MS_NODEV, f"size={size}m,mode=1777")
    for inside, fd in sorted(fds.items(), key=lambda kv: len(kv[0].parts)):
        target = root / inside.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        host = Path(f"/proc/self/fd/{fd}")
        if str(inside) in SYSTEM and os.path.islink(inside):  # merged /usr: /bin -> usr/bin
            target.symlink_to(os.readlink(inside))
        else:
            if not target.exists():
                target.mkdir() if os.path.isdir(host) else target.touch()
            _mount(str(host), str(target), None, MS_BIND)
            _mount("none", str(target), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    notebooks = root / Path(spec.repo, "notebooks").relative_to("/")
    if sub_fd is not None:  # the only writable copy: a size-limited tmpfs owned by the user
        notebooks.mkdir(parents=True, exist_ok=True)
        _mount("mlab-copy", str(notebooks), "tmpfs", MS_NOSUID | MS_NODEV, f"size={lim.disk_mb}m,mode=0755,uid={uid},gid={gid}")
        copy = notebooks / spec.notebook_name
        with os.fdopen(sub_fd, "rb") as src, open(copy, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chown(copy, uid, gid)
    if sub_fd is not None:  # where the runner saves values: not the student's /tmp, so filling it loses nothing
        values = root / VALUES.relative_to("/")
        values.mkdir(parents=True)
        _mount("mlab-values", str(values), "tmpfs", MS_NOSUID | MS_NODEV, f"size={lim.disk_mb}m,mode=0700,uid={uid},gid={gid}")
    for dev in DEVICES:
        (root / "dev" / dev).touch()
        _mount(f"/dev/{dev}", str(root / "dev" / dev), None, MS_BIND)
    (root / "dev" / "fd").symlink_to("/proc/self/fd")
    staged = _stage(root, oracle_fds)
    for sub, fstype in (("proc", "proc"), ("sys", "sysfs")):
        (root / sub).mkdir()
        _mount(fstype, str(root / sub), fstype, MS_NOSUID | MS_NODEV | MS_NOEXEC | (MS_RDONLY if sub == "sys" else 0))
    _mount("none", str(root), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)  # the top of the new root: nobody writes there
    os.chroot(root)
    _sh("ip", "link", "set", "lo", "up")
    if spec.oracle_fd is not None:
        fork_oracle(spec, staged)
    drop(spec)


STAGE = Path("/.oracle")  # in the new root, root's alone (0700): what the oracle binds over the checker's view


def _stage(root: Path, fds: dict[Path, int]) -> dict[Path, Path]:
    """Bind each of the oracle's own files under STAGE, from descriptors opened before the new root
    hid their hosts (the oracle, in a mount namespace of its own, can bind only from mounts of its
    namespace's copy); {path inside: its staged copy}."""
    if not fds:
        return {}
    stage = root / STAGE.relative_to("/")
    stage.mkdir(mode=0o700)
    staged = {}
    for i, (inside, fd) in enumerate(sorted(fds.items())):
        target = stage / str(i)
        target.mkdir() if os.path.isdir(f"/proc/self/fd/{fd}") else target.touch()
        _mount(f"/proc/self/fd/{fd}", str(target), None, MS_BIND)
        _mount("none", str(target), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
        staged[inside] = STAGE / str(i)
    return staged


def drop(spec: Spec) -> None:
    """Still root, inside the new root: rlimits, then the submission's UID, its own session
    keyring, death with the parent, the working directory and a clean environment."""
    lim = spec.limits
    uid = gid = spec.uid
    mb = 1024 * 1024
    for res, value in ((resource.RLIMIT_AS, lim.memory_mb * mb), (resource.RLIMIT_CPU, lim.cpu_s),
                       (resource.RLIMIT_FSIZE, lim.file_mb * mb), (resource.RLIMIT_NPROC, lim.nproc),
                       (resource.RLIMIT_NOFILE, lim.nofile), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(res, (value, value))
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    identity.new_session_keyring()  # not the grader's: nothing of the submission is linked where others look
    _die_with_parent()
    os.chdir(spec.cwd)
    os.environ.clear()
    os.environ.update({
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg",
        "JUPYTER_RUNTIME_DIR": "/tmp/jupyter-runtime", "IPYTHONDIR": "/tmp/ipython",
        "MPTCPLAB_GRADING": "1", "USER": f"mlab-{uid}", "LOGNAME": f"mlab-{uid}",  # no passwd entry: say who
    })


def _libc_call(name: str, *args) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), f"{name}{args}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _libc_call("mount", source.encode(), target.encode(), fstype.encode() if fstype else None, ctypes.c_ulong(flags),
               data.encode() if data else None)


def fork_oracle(spec: Spec, binds: dict[Path, Path]) -> None:
    """Start the oracle (module docstring) as a child of this process, which goes on as the checker.
    `binds`: path inside -> the staged file or folder the oracle sees there instead (`_stage`).
    The oracle holds only its socket: not this process's stdin (the checker's tests and the grader's
    draws arrive there), nor its stdout or stderr."""
    import importlib

    for name in SHARED_MODULES:
        importlib.import_module(name)
    covered = {str(p) for p in binds}
    exposed = sorted(m.__name__ for m in list(sys.modules.values())
                     if any(str(getattr(m, "__file__", None) or "").startswith(c) for c in covered))
    if exposed:  # the oracle would hold the real code of an answer key
        raise RuntimeError(f"modules the oracle must see redacted are loaded before its fork: {exposed}")
    if os.fork():  # the checker's side
        os.close(spec.oracle_fd)
        return
    try:
        for fd in [int(f) for f in os.listdir("/proc/self/fd")]:  # nothing of the checker's: stdin, its socket
            if fd != spec.oracle_fd:
                with contextlib.suppress(OSError):
                    os.close(fd)
        _libc_call("unshare", CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
        if os.fork():  # PID 1 of the new PID namespace is this process's child
            os._exit(os.waitstatus_to_exitcode(os.waitpid(-1, 0)[1]) & 0xFF)
        _libc_call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        _mount("none", "/", None, MS_REC | MS_PRIVATE)
        for inside, source in sorted(binds.items(), key=lambda kv: len(kv[0].parts)):
            _mount(str(source), str(inside), None, MS_BIND)
            _mount("none", str(inside), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
            _libc_call("umount2", str(source).encode(), MNT_DETACH)
        for where, size in (("/tmp", spec.limits.disk_mb), ("/dev/shm", 64)):  # not the checker's
            _mount("mlab-tmp", where, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size}m,mode=1777")
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # this PID namespace's processes only
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if null > 2:
            os.close(null)
        drop(spec)
        sys.dont_write_bytecode = True
        from .checker import serve

        os._exit(serve(spec.oracle_fd, spec.oracle_values))
    except BaseException:  # noqa: BLE001 - the checker sees the oracle stop, and says so per call
        os._exit(1)


def _die_with_parent() -> None:
    """`unshare --kill-child` asks the kernel to SIGKILL this process (PID 1 of the sandbox, so the
    whole sandbox with it) when unshare dies, but a change of credentials clears that request
    (prctl(2), PR_SET_PDEATHSIG): ask again as the submission's user. Without it a grader killed
    mid-batch left every sandbox running until its wall-clock limit (measured: the plain setuid child
    outlived a SIGKILLed unshare, the re-armed one did not)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")


def main(argv: list[str]) -> None:
    spec_json, sep, *cmd = argv
    if sep != "--" or not cmd:
        raise SystemExit("usage: python -m mptcplab.grading.sandbox SPEC_JSON -- CMD...")
    raw = json.loads(spec_json)
    spec = Spec(**{**raw, "limits": Limits(**raw["limits"])})
    prepare(spec)
    if spec.oracle_fd is not None:  # the checker, in this process: the modules imported for the oracle serve it too
        if cmd[1:4] != ["-I", "-m", "mptcplab.grading.checker"]:
            raise SystemExit(f"an oracle runs beside the checker only, not {cmd[:4]}")
        sys.dont_write_bytecode = True
        sys.argv = [cmd[3], *cmd[4:]]
        runpy.run_module(cmd[3], run_name="__main__", alter_sys=True)
        return
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
