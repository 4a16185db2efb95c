"""A User-Mode Linux kernel: a real Linux kernel with MPTCP and netem, run as a user process.

For hosts without netem or virtualisation (lab PCs, containers, CI). `build()` compiles it once
from the distribution's `linux-source-6.*` package with the config fragment in
`vagrant/uml/mptcplab.config` and the patches beside it (`vagrant/uml/*.patch`), and caches it;
`run()` boots it with the host's root filesystem over hostfs, runs one command inside as root,
and returns its exit status.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

from . import guest
from .kernel_build import enable_options, find_source, make_with_progress
from ..core import log, paths, process
from ..core.errors import EnvironmentProblem
from ..core.paths import PREFIX
from ..core.state import TRACKER

_log = log.get("uml build")
CONFIG_FRAGMENT = paths.data("vagrant/uml/mptcplab.config")
# Fixes to the distribution's source that no config option gives (why: vagrant/uml/README.md);
# applied in name order, and part of the cache key like the fragment.
PATCHES = sorted(paths.data("vagrant/uml").glob("*.patch"))


def unsupported_arch() -> str | None:
    """Why this host can have no UML kernel, or None on x86: User-Mode Linux has one host
    architecture, x86 (arch/x86/um), so on any other the place is absent and nothing is built."""
    machine = platform.machine()
    if re.fullmatch(r"x86_64|i[3-6]86", machine):
        return None
    return f"not on this architecture ({machine}): User-Mode Linux runs only on x86 hosts (arch/x86/um)"


def cache_root() -> Path:
    return paths.cache_dir("uml")


def config_options() -> list[str]:
    lines = CONFIG_FRAGMENT.read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


# The timer frequency. UML's own Kconfig fixes HZ at 100 (arch/um/Kconfig: an int with no prompt; it
# never reads kernel/Kconfig.hz, so no CONFIG_HZ_250 exists); the paper's Ubuntu kernel ran at 250
# (issue 37). MPTCPLAB_UML_HZ=250 selects a second build, like MPTCPLAB_UML_CLOCK selects the clock:
# the same source, patches and fragment plus vagrant/uml/hz250/ (a patch that makes HZ settable, a
# fragment that sets it), under a cache key of its own; the HZ 100 build and its key are unchanged.
HZ_VARIANTS = {"100": None, "250": paths.data("vagrant/uml/hz250")}
DEFAULT_HZ = "100"


def selected_hz() -> str:
    hz = os.environ.get("MPTCPLAB_UML_HZ", DEFAULT_HZ)
    if hz not in HZ_VARIANTS:
        raise EnvironmentProblem(f"MPTCPLAB_UML_HZ={hz!r}: choose one of {', '.join(HZ_VARIANTS)}")
    return hz


def variant_patches(hz: str) -> list[Path]:
    folder = HZ_VARIANTS[hz]
    return sorted(folder.glob("*.patch")) if folder else []


def variant_values(hz: str) -> dict[str, str]:
    """The variant fragment's NAME=VALUE lines (set with scripts/config --set-val); none for HZ 100."""
    folder = HZ_VARIANTS[hz]
    if not folder:
        return {}
    lines = (ln.strip() for ln in (folder / "mptcplab.config").read_text().splitlines())
    return dict(ln.split("=", 1) for ln in lines if ln and not ln.startswith("#"))


def kernel_dir() -> Path:
    """Cache directory keyed by source version and the hash of the config fragment and patches (and
    of the HZ variant's files, named in the directory before the hash: provenance.build_of reads the
    hash as the name's last part)."""
    tarball, version = find_source()
    hz = selected_hz()
    variant = sorted(HZ_VARIANTS[hz].iterdir()) if HZ_VARIANTS[hz] else []
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in [CONFIG_FRAGMENT, *PATCHES, *variant])).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", version)
    named = "" if hz == DEFAULT_HZ else f"hz{hz}-"
    return cache_root() / f"{tarball.name.removesuffix('.tar.xz')}-{safe}-{named}{digest}"


def kernel_path() -> Path | None:
    """The cached kernel binary, or None if it has not been built."""
    try:
        path = kernel_dir() / "linux"
    except EnvironmentProblem:
        return None
    return path if path.exists() else None


def not_built() -> str | None:
    """Why the selected kernel cannot boot now, or None: an HZ variant is a control's kernel, built on
    purpose, never as a side effect of a run (the default kernel is built on first use)."""
    hz = selected_hz()
    if hz == DEFAULT_HZ or kernel_path():
        return None
    return (f"MPTCPLAB_UML_HZ={hz}: the HZ {hz} UML kernel is not built; build it with "
            f"`MPTCPLAB_UML_HZ={hz} mptcplab uml build` (a full kernel build)")


def kernel_to_boot() -> Path:
    """The kernel to boot: the cached build, the default one built now, or a refusal."""
    why = not_built()
    if why:
        raise EnvironmentProblem(why)
    return kernel_path() or build()


def config_hz(config: Path) -> int | None:
    """CONFIG_HZ as a kernel config file says it (a build's `config` beside its `linux`)."""
    found = re.search(r"^CONFIG_HZ=(\d+)$", config.read_text(), re.M) if config.exists() else None
    return int(found[1]) if found else None


def _need_tools() -> None:
    missing = [t for t in ("make", "gcc", "flex", "bison", "bc", "patch") if not shutil.which(t)]
    if missing:
        raise EnvironmentProblem(
            f"building the UML kernel needs {', '.join(missing)}: "
            "`apt-get install build-essential flex bison bc patch libelf-dev` (or scripts/install-deps.sh)"
        )


def build(jobs: int | None = None, quiet: bool = False) -> Path:
    """Build (or find in the cache) the UML kernel; returns the path of the `linux` binary."""
    wrong = unsupported_arch()
    if wrong:
        raise EnvironmentProblem(f"no UML kernel here: {wrong}")
    final = kernel_dir()
    if (final / "linux").exists():
        if not quiet:
            _log.info("UML kernel is cached: %s", final / "linux")
        return final / "linux"
    _need_tools()
    tarball, version = find_source()
    jobs = jobs or os.cpu_count() or 2
    work = Path(tempfile.mkdtemp(prefix="build-", dir=_mkdir(cache_root())))
    item = TRACKER.add("dir", path=str(work))
    say = (lambda *_: None) if quiet else _log.info
    try:
        t0 = time.monotonic()
        say(f"extracting {tarball.name} ({version})")
        with tarfile.open(tarball) as tar:
            tar.extractall(work, filter="fully_trusted")
        src = next(p for p in work.iterdir() if p.is_dir())
        hz = selected_hz()
        for patch in [*PATCHES, *variant_patches(hz)]:
            say(f"patching: {patch.name}")
            process.run(["patch", "-p1", "--forward", "--batch", "-d", str(src), "-i", str(patch)])
        make = ["make", "-C", str(src), "ARCH=um"]
        values = variant_values(hz)
        say("configuring: defconfig + vagrant/uml/mptcplab.config" + (f" + HZ {hz} (vagrant/uml/{HZ_VARIANTS[hz].name})" if values else ""))
        process.run(make + ["defconfig"])
        enable_options(src, make, config_options(), "UML kernel",
                       [a for name, value in values.items() for a in ("--set-val", name, value)])
        if config_hz(src / ".config") != int(hz):  # read back: a prompt-less HZ would be 100 again
            raise EnvironmentProblem(f"the UML kernel's config has CONFIG_HZ={config_hz(src / '.config')}, "
                                     f"not the {hz} asked for (MPTCPLAB_UML_HZ)")
        say(f"compiling with {jobs} jobs")
        make_with_progress(make + [f"-j{jobs}", "linux"], quiet, "[uml build] compiling", "UML kernel")
        _mkdir(final.parent)
        staging = Path(tempfile.mkdtemp(prefix="stage-", dir=final.parent))
        shutil.copy2(src / "linux", staging / "linux")
        shutil.copy2(src / ".config", staging / "config")
        (staging / "SOURCE").write_text(f"{tarball}\n{version}\n")
        staging.rename(final)  # atomic: a half-built kernel is never in the cache
        say(f"done in {time.monotonic() - t0:.0f} s: {final / 'linux'}")
        return final / "linux"
    finally:
        shutil.rmtree(work, ignore_errors=True)
        TRACKER.discard(item)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---------------------------------------------------------------- boot and run

# What the guest's init mounts before the kit's command (guest.script adds tracefs, bpffs, the
# environment, the command and its exit status); then the status is synced to the host and UML halts.
INIT_SETUP = """# init for the kit's UML kernel: private /proc, /sys, /dev, /run (so namespaces made here never
# touch the host's /run/netns); then the command, its status to a shared file, halt.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
ip link set lo up
hostname mptcplab-uml
stty cols 120 rows 40 2>/dev/null  # the console reports 0 columns, which hides progress bars
"""


# The guest's clock (see site/setup/uml.md, "Its clock" and "The time-travel panic"):
# "time-travel" (basic: idle skips to the next timer), "time-travel=inf-cpu" (no host timers at
# all; CPU work costs no guest time) or "host" (the host's clock). MPTCPLAB_UML_CLOCK chooses one
# for experiments such as scripts/uml-soak.sh.
CLOCKS = {"time-travel": ["time-travel"], "time-travel=inf-cpu": ["time-travel=inf-cpu"], "host": []}
DEFAULT_CLOCK = "time-travel"


def clock_args() -> list[str]:
    clock = os.environ.get("MPTCPLAB_UML_CLOCK", DEFAULT_CLOCK)
    if clock not in CLOCKS:
        raise EnvironmentProblem(f"MPTCPLAB_UML_CLOCK={clock!r}: choose one of {', '.join(CLOCKS)}")
    return CLOCKS[clock]


def run(command: list[str], mem: str = "2G", timeout: float | None = None,
        env: dict[str, str] | None = None, stream=None) -> int:
    """Boot the UML kernel, run `command` inside as root, return its exit status.

    The command's output goes to `stream` (default: our stdout) as it happens.
    """
    kernel = kernel_to_boot()
    umid = f"{PREFIX}-{uuid.uuid4().hex[:8]}"
    with guest.Boot(Path(tempfile.mkdtemp(prefix=f"{umid}-", dir="/tmp")), f"UML kernel {umid}") as boot:
        init = boot.rundir / "init.sh"
        init.write_text(guest.script("uml", command, boot.status, env, setup=INIT_SETUP, end="sync\nhalt -f",
                                     home="/root"))
        init.chmod(0o755)
        argv = [str(kernel), f"mem={mem}", "root=/dev/root", "rootfstype=hostfs", "rootflags=/", "rw",
                f"init={init}", "con=null", "con0=null,fd:1", "quiet", f"umid={umid}", f"uml_dir={boot.rundir}",
                *clock_args()]
        stream = stream or sys.stdout
        # The kernel and its helper processes die with the kit, even a SIGKILLed one (places.lifetime).
        proc = boot.start(argv, env={**os.environ, "TMPDIR": _memory_dir(boot.rundir)})
        deadline = time.monotonic() + timeout if timeout else None
        tail = guest.Tail()
        try:
            for chunk in guest.chunks(proc, deadline):
                tail.add(chunk)
                stream.write(_quiet(chunk.replace("\r\n", "\n")))
                stream.flush()
        except guest.Panicked as exc:  # a panicked UML kernel does not exit: stop it
            raise EnvironmentProblem(f"the UML kernel panicked ({exc}; its trace is above). {guest.RESUMES}") from None
        proc.wait(timeout=30)
        rc = boot.exit_status()
        if rc is None:
            raise tail.stopped("the UML kernel", proc.returncode)
        return rc


# Lines UML prints on every boot and halt that say nothing about the command.
_NOISE = re.compile(r"^(Failed to initialize ubd device 0.*|Halting\.|reboot: System halted|"
                    r"Warning: tempdir .* is not on tmpfs)\n", re.M)


def _quiet(text: str) -> str:
    return _NOISE.sub("", text)


def _memory_dir(fallback: Path) -> str:
    """UML backs its RAM with a file in TMPDIR; on tmpfs that file never touches the disk."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else str(fallback)
