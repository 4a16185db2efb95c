"""A virtual machine booting the distribution's stock kernel, via virtme-ng (`vng`).

virtme-ng is the MPTCP maintainers' own way of running a kernel (multipath-tcp/
mptcp-upstream-virtme-docker): it boots /boot/vmlinuz-X under QEMU with the host's filesystem as
the guest's root (read-only; the run directory and the kit's cache are shared read-write with
--rwdir), loads the package's modules from /lib/modules/X, and runs one command. The guest kernel
has what the kit's UML kernel lacks: netem *and* kprobes, a BPF JIT, BTF (struct_ops).

Accelerator: KVM only when a boot test under a timeout succeeds (kvm_probe: on some hosts /dev/kvm
exists but a guest hangs after the decompressor); the verdict is cached. Otherwise QEMU's software
emulation (TCG), which is slower but honest: see site/setup/vm.md for what it measures.

Lifetime: vng runs QEMU in a child of a child; PR_SET_PDEATHSIG does not reach grandchildren,
so the whole tree runs in its own PID namespace (`unshare --pid --kill-child`): when the kit dies
the namespace's first process is SIGKILLed and the kernel kills everything else in it.
"""

from __future__ import annotations

import json
import os
import platform as _platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from . import guest, hand, kvm_probe, lifetime
from ..core import eta, log, paths
from ..core.errors import EnvironmentProblem
from ..core.files import replace_file
from ..core.kernel import PLACE_CAPABILITIES
from ..core.paths import PREFIX
from ..core.state import kill_each

NAME = "vm"
GUEST = True
WORDS = "in the VM (stock kernel)"
RAN = "in a VM booting the distribution's stock kernel"
KERNEL = "stock kernel in a VM"
CLOCK = ("Its runs took {guest:.0f} s on the VM guest's clock, {wall:.0f} s of wall-clock time (each manifest's "
         "<code>clock</code>).")
RANK = 2  # boots in minutes under TCG, and every instruction is emulated: the slowest place
OFFERS = set(PLACE_CAPABILITIES)  # a stock kernel's (capabilities() measures them)
MARKER = f"{PREFIX}-vm-"  # guest name: QEMU's `-name`, the guest's hostname; `clean` finds it
KVM_BOOT_TIMEOUT_S = 90.0  # a KVM guest reaches its root mount in seconds (kvm_probe)
# A lab prints a line per run (the longest, Lab 3's, takes 70 s of guest time), its setup check a
# line per step: a guest that prints nothing for this long has hung (MPTCPLAB_VM_QUIET_LIMIT_S).
QUIET_LIMIT_S = 600.0
CONSOLE_LOG = "vm-console.log"  # in the results directory: every boot's whole console, kernel lines too


def cache_dir() -> Path:
    return paths.cache_dir("vm")


# ---------------------------------------------------------------- what this host has

def _version_key(path: Path) -> list:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", path.name)]


def kernel() -> Path | None:
    """The newest /boot/vmlinuz-* whose modules are installed (/lib/modules/<release>)."""
    found = [k for k in Path("/boot").glob("vmlinuz-*")
             if (Path("/lib/modules") / k.name.removeprefix("vmlinuz-")).is_dir()]
    return max(found, key=_version_key) if found else None


def release(kimg: Path) -> str:
    return kimg.name.removeprefix("vmlinuz-")


def vng() -> str | None:
    """virtme-ng's `vng`, from the kit's venv (pinned in pyproject.toml) or the PATH."""
    here = Path(sys.executable).with_name("vng")
    return str(here) if here.exists() else shutil.which("vng")


def qemu_binary() -> str | None:
    return shutil.which({"x86_64": "qemu-system-x86_64", "aarch64": "qemu-system-aarch64"}
                        .get(_platform.machine(), f"qemu-system-{_platform.machine()}"))


def available() -> tuple[bool, str]:
    missing = []
    if not qemu_binary():
        missing.append("QEMU (apt-get install qemu-system-x86, or qemu-system-arm on arm64)")
    if not vng():
        missing.append("virtme-ng (pip install -e . installs the pinned version)")
    if not shutil.which("busybox"):
        missing.append("busybox (apt-get install busybox-static)")
    kimg = kernel()
    if not kimg:
        missing.append("a stock kernel package (Debian 12: linux-image-6.12.*+deb12-amd64 from bookworm-backports; "
                       "Ubuntu: linux-image-generic)")
    if missing:
        return False, "missing " + "; ".join(missing) + " — scripts/install-deps.sh installs them"
    return True, f"kernel {kimg}"


def resources(accel: str = "kvm") -> tuple[int, str]:
    """vCPUs and memory from the host's size: with KVM every core; under TCG one vCPU, because
    a packet handed between emulated CPUs (wake-ups, IPIs) costs far more than on one: measured
    here, ping over 9 ms netem each way on a veth pair, 30 pings: 2 vCPUs mdev 0.19-0.35 ms and
    medians 0.3 ms apart between consecutive runs, 1 vCPU mdev 0.08-0.10 ms and 0.01 ms apart
    (the RTT check's slack on Lab 2's 20 ms path is 0.5 ms), and it leaves a host core to the kit.
    Memory: a quarter of the RAM between 1 and 4 GiB (the labs need well under 1 GiB)."""
    cpus = (os.cpu_count() or 1) if accel == "kvm" else 1
    total_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return cpus, f"{min(4096, max(1024, total_mib // 4))}M"


# ---------------------------------------------------------------- the command line

# Inside the VM virtme-ng's init has mounted /proc, /sys, /dev and tmpfs on /run and /tmp.
# Killed by a signal (exit 128+N): the kernel's line on it (a segfault's address and library),
# which loglevel 4 keeps off the console. Not for the kit's Python: its fault handler
# (PYTHONFAULTHANDLER) prints the traceback instead, and a handled fault is not logged.
AFTER = """[ "$rc" -gt 128 ] && dmesg | grep -E "segfault|general protection|trap" | tail -n 5"""


TCG_CPU = "-cpu max,avx2=off"

# Drivers for the emulated PC's hardware that udev would load and probe at every boot, and that
# no lab uses: disks, CD-ROM and SCSI (the guest's root is the host's, over 9p), watchdogs, LPC and
# SMBus, PC speaker, mouse and power button, firmware config, accelerated AES, CRC and SHA (the
# kernel's generic code serves any caller), nested KVM and CPU frequency. Under TCG (QEMU's q35
# machine: vng takes `microvm` only with KVM) they cost 8.8 s of udev's settle, 11.6 s with its
# coldplug (benchmarks/results/vm_run_overhead/vmspeed3-probe.md). `modprobe.blacklist` stops only
# loading by alias, as udev loads; an absent name is ignored. Not here: virtio (the console's
# ports, 9p).
UNUSED_DRIVERS = ("ahci", "libahci", "libata", "sr_mod", "cdrom", "sd_mod", "sg", "scsi_mod", "i6300esb",
                  "iTCO_wdt", "iTCO_vendor_support", "lpc_ich", "i2c_i801", "i2c_smbus", "pcspkr", "psmouse",
                  "serio_raw", "evdev", "joydev", "aesni_intel", "cryptd", "crypto_simd", "ghash_clmulni_intel",
                  "kvm_amd", "kvm_intel", "kvm", "powernow_k8", "button", "qemu_fw_cfg", "crct10dif_pclmul",
                  "crc32_pclmul", "crc32c_intel", "sha1_ssse3", "sha256_ssse3", "sha512_ssse3")


# virtme-ng's initramfs mounts the guest's root (the host's /) over 9p without a cache: every
# stat, open and read is a round trip to QEMU, again in every process, and Python's imports are
# thousands of them. The host's / is exported a second time (CACHED_TAG) and mounted with the
# guest's page and dentry cache (cache=loose: read-only, and nothing changes these files while a
# guest runs) over the trees the kit's processes read: Python's, the kit's, the programs' and their
# libraries (cached_trees). Measured in one TCG boot (2026-11-28): `import pandas` 15.7 s uncached
# every time, 11.4 s the first time cached and 6.6 s after; the kit's imports with pandas ~21 s ->
# 9.3 s; the bulk tool's start 2.2 -> 1.0 s; `tc -V` 88 -> 73 ms.
CACHED_TAG = "mlabcached"
CACHED_AT = "/run/mptcplab-host"  # the guest's own tmpfs
CACHED_EXPORT = (f"-fsdev local,id={CACHED_TAG},path=/,security_model=none,readonly=on,multidevs=remap "
                 f"-device virtio-9p-pci,fsdev={CACHED_TAG},mount_tag={CACHED_TAG}")


def cached_trees(writable: list[Path]) -> list[str]:
    """The host directories the guest reads from the cached export: Python's standard library and
    site-packages, the directory holding the kit's package, the programs and their libraries. Not
    one that holds or lies inside a directory the guest writes (`writable`): a bind would hide it
    or leave the host's writes behind a stale cache."""
    import sysconfig

    found = [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    found += [str(paths.PACKAGE.resolve().parent), "/usr/bin", "/usr/sbin",
              f"/usr/lib/{_platform.machine()}-linux-gnu", "/usr/lib64"]
    trees = [Path(t).resolve() for t in found if Path(t).is_dir()]
    rw = [Path(w).resolve() for w in writable]
    return [str(t) for t in _outermost(trees)
            if not any(t.is_relative_to(w) or w.is_relative_to(t) for w in rw)]


def cached_mounts(trees: list[str]) -> str:
    """The guest's shell lines that mount the cached export over `trees` (uncached if it fails:
    slower, not different)."""
    binds = " ".join(shlex.quote(t) for t in trees)
    return (f"mkdir -p {CACHED_AT} && mount -t 9p -o ro,trans=virtio,version=9p2000.L,access=any,msize=512000,"
            f"cache=loose {CACHED_TAG} {CACHED_AT} && for d in {binds}; do mount --bind \"{CACHED_AT}$d\" \"$d\"; "
            f"done || echo \"mptcplab: the host's files are read uncached in the VM (slower)\"")


# Under software emulation the guest's clock counts the instructions it executed (QEMU's icount:
# 1 ns each, a 1 GHz CPU; idle, it jumps to its next timer), not the host's time. On the host's
# clock the guest's own work is emulated many times slower and at the mercy of the host's load,
# and that showed in every network: it added its own 0.7-2.3 ms to each round trip, varying from
# path to path and minute to minute by more than the RTT check's 0.5 ms slack (CI, 2026-11-29:
# Lab 2's 20 ms path 1.79 ms at its start, 2.27 ms at its setup check, refused), and it could not
# fill a 5 Mbit/s path on a busy host. Counting instructions, the same setup check read every ping
# at configured + its own transmission time (20.30 ms lowest and median on the 20 ms path, own
# latency -0.01 ms) and TCP at the link's ceiling (4.78 Mbit/s), 3 checks of 3 on a quiet host and
# again under a load of 3-7: host load now only makes a run take longer. The price is wall-clock
# time: TCG executes ~100 million instructions a second here (a Python loop of 538 million took
# 5.1 s), a tenth of the guest's 1 GHz, so a busy guest second costs ~10 s (Lab 2's run with its
# event recording: 20 s on the guest's clock, 108 s on the host's; a plain run 24 s and 36 s;
# 19-27 and 16-18 s before), and idle ones nothing; a quick Lab 2 took 24 min, 8 before
# (benchmarks/results/vm_clock/, time_ratio.md). A larger shift (a slower guest CPU) saves little:
# at shift=3 the same runs took 101 and 99 s. Where a run's guest time goes, to cut it:
# the guest's own work (samplers that exec a program per sample, the live trace copy).
# (KVM runs on a real CPU: its clock is the host's.)
TCG_CLOCK = "-icount shift=0,sleep=off,align=off"


def vng_argv(kimg: Path, script: Path, name: str, writable: list[Path], accel: str, cpus: int,
             memory: str) -> list[str]:
    """The `vng` command that boots `kimg` and runs `script` (pure: unit-tested)."""
    # --force-9p: the guest's root over 9p on every host. Offered a `virtiofsd`, vng starts it and
    # waits 3.1 s for its pid file, then falls back to 9p when it never comes: the one Debian 12
    # ships (QEMU's own, /usr/lib/qemu/virtiofsd) takes other options than vng gives it. Once for
    # the root and once per --rwdir: 11.2 s before the guest's kernel started, 1.4 s with this
    # (benchmarks/vm_boot_probe.py). 9p also keeps the place the same whatever the host has.
    argv = [vng() or "vng", "--run", str(kimg), "--name", name, "--user", "root",
            "--cpus", str(cpus), "--memory", memory, "--force-9p"]
    qemu = CACHED_EXPORT
    if accel != "kvm":
        # QEMU 7.2's software emulation (Debian 12's) executes AVX2 wrongly: numpy's AVX2 argsort
        # (x86-simd-sort, gathers) returned unsorted indices and once segfaulted, so pandas'
        # sort_values and merge_asof were wrong in the guest. The guest's CPU offers no AVX2.
        argv += ["--disable-kvm"]
        qemu = f"{TCG_CPU} {TCG_CLOCK} {qemu}"
    argv += [f"--qemu-opts={qemu}"]  # "=": the value starts with a dash
    for d in writable:
        argv += ["--rwdir", str(d)]
    # The command's output comes back on vng's stdout, with the kernel's warnings and worse
    # (loglevel 4: soft lockups, RCU stalls, hung tasks, WARN_ON): the terminal drops kernel lines
    # (_quiet), the console log keeps them.
    argv += ["--append", f"quiet loglevel=4 modprobe.blacklist={','.join(UNUSED_DRIVERS)}",
             "--exec", f"sh {shlex.quote(str(script))}"]
    return argv


# ---------------------------------------------------------------- boot and run

def boot(command: list[str], writable: list[Path] = (), env: dict[str, str] | None = None,
         accel: str | None = None, timeout: float | None = None, stream=None, kimg: Path | None = None,
         console: Path | None = None, quiet_limit_s: float | None = None) -> int:
    """Boot the stock kernel, run `command` inside as root, return its exit status.

    `console`: append the whole console (kernel lines included) to this file. `quiet_limit_s`:
    stop the guest as hung when it prints nothing for that long, and say what its kernel said."""
    ok, why = available()
    if not ok:
        raise EnvironmentProblem(f"the VM place is not available: {why}")
    kimg = kimg or kernel()
    accel = accel or accelerator()
    name = f"{MARKER}{uuid.uuid4().hex[:8]}"
    # The run's private directory: the script, its exit status, vng's temporary files. Not under
    # /tmp or /run, which the guest covers with its own tmpfs.
    cache_dir().mkdir(parents=True, exist_ok=True)
    with guest.Boot(cache_dir() / name, f"VM {name}", marker=name.encode()) as boot:
        script = boot.rundir / "run.sh"
        dirs = [boot.rundir, *[Path(d).resolve() for d in writable]]
        script.write_text(guest.script("vm", command, boot.status, env, setup=cached_mounts(cached_trees(dirs)),
                                       after=AFTER))
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
        cpus, memory = resources(accel)
        stream = stream or sys.stdout
        argv = vng_argv(kimg, script, name, _outermost(dirs), accel, cpus, memory)
        proc = boot.start(argv,
                          env={**os.environ, "TMPDIR": str(boot.rundir),  # vng runs `virtme-run` from PATH
                               "PATH": f"{Path(vng() or '/usr/bin/vng').parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
        deadline = time.monotonic() + timeout if timeout else None
        log_file = None
        if console is not None:
            log_file = open(console, "a", encoding="utf-8")
            log_file.write(f"==== {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {name}: kernel "
                           f"{release(kimg)}, {accel_label(accel)}, {cpus} vCPU, {memory}\n")
        tail = guest.Tail()
        try:
            try:
                for chunk in guest.chunks(proc, deadline, quiet_limit_s):
                    text = chunk.replace("\r\n", "\n")
                    tail.add(text)
                    if log_file:
                        log_file.write(text)
                        log_file.flush()
                    stream.write(_quiet(text))
                    stream.flush()
            except guest.Panicked as exc:
                raise EnvironmentProblem(f"the VM's kernel panicked ({exc}). {guest.RESUMES}"
                                         + (f" Whole console: {console}" if console else "")) from None
            except guest.Silent as exc:
                raise EnvironmentProblem(hung_message(str(exc), console)) from None
            except guest.TimedOut:
                raise EnvironmentProblem(f"the command inside the VM did not finish within {timeout:.0f} s") from None
            proc.wait(timeout=60)
            rc = boot.exit_status()
            if rc is None:
                raise tail.stopped("the VM (vng)", proc.returncode, f"\nWhole console: {console}" if console else "")
            if rc > 128:  # the shell's 128 + signal number
                raise EnvironmentProblem(crash_message(rc - 128, console))
            return rc
        finally:
            if log_file:
                log_file.close()


def _outermost(dirs: list[Path]) -> list[Path]:
    """Drop directories inside another one of the list (one --rwdir covers them)."""
    dirs = sorted(set(dirs), key=lambda p: (len(p.parts), str(p)))
    return [d for i, d in enumerate(dirs) if not any(d.is_relative_to(o) for o in dirs[:i])]


_NOISE = re.compile(r"^(\[\s*\d+\.\d+\] .*|.*virtme-ng-init: .*)\n", re.M)


def _quiet(text: str) -> str:
    return _NOISE.sub("", text)


_KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\] (.*)$", re.M)


def _kernel_lines(console: Path | None) -> list[str]:
    """The guest kernel's lines in the console log, from its last boot only."""
    text = console.read_text(errors="replace") if console and console.exists() else ""
    return _KERNEL_LINE.findall(text[text.rfind("==== "):])


def crash_message(signo: int, console: Path | None) -> str:
    """The command in the guest was killed by a signal (a segfault): say so, with the kernel's line
    on it, rather than return a bare exit status."""
    try:
        name = signal.Signals(signo).name
    except ValueError:
        name = f"signal {signo}"
    msg = f"the command inside the VM was killed by {name}. {guest.RESUMES}"
    said = [line for line in _kernel_lines(console) if re.search(r"segfault|general protection|trap", line)]
    if said:
        msg += "\nThe guest kernel said:\n  " + "\n  ".join(said[-3:])
    return msg + (f"\nWhole console (with the Python traceback, PYTHONFAULTHANDLER): {console}" if console else "")


def hung_message(what: str, console: Path | None) -> str:
    """One paragraph for a guest that stopped printing: what happened, the kernel's last lines
    (a soft lockup, RCU stall or hung task says where it stuck), where the whole console is."""
    msg = f"the VM stopped responding ({what}) and was stopped. {guest.RESUMES}"
    if console is None or not console.exists():
        return msg
    said = _kernel_lines(console)[-12:]
    if said:
        msg += "\nThe guest kernel's last lines:\n  " + "\n  ".join(said)
    else:
        msg += "\nThe guest kernel printed no warning (no soft lockup, RCU stall or hung task)."
    return msg + f"\nWhole console: {console}"


def platform() -> dict:
    """The guest's kernel and accelerator, which `run` hands the guest."""
    return {"vm_kernel": os.environ.get("MPTCPLAB_VM_KERNEL"), "vm_accel": os.environ.get("MPTCPLAB_VM_ACCEL"),
            "vm_clock": os.environ.get("MPTCPLAB_VM_CLOCK")}


def wall_clock(directory: Path) -> float:
    """The host's wall clock: under TCG the guest's own counts instructions (guest.host_time)."""
    return guest.host_time(directory)


def run(argv: list[str], results: list, handed: dict) -> int:
    # The results directories are shared read-write with the guest (virtme-ng's 9p --rwdir).
    kimg = kernel()
    acc = accelerator()
    log.get().info("running in a VM: kernel %s (%s), via virtme-ng", release(kimg), accel_label(acc))
    console = Path(results[0]) / CONSOLE_LOG if results else None  # boot() creates the directory
    return boot([sys.executable, "-m", "mptcplab", *argv], writable=[*results, paths.cache_dir()],
                env={"MPTCPLAB_VM_KERNEL": release(kimg), "MPTCPLAB_VM_ACCEL": acc, "MPTCPLAB_VM_CLOCK": guest_clock(acc),
                     "PYTHONUNBUFFERED": "1",
                     "PYTHONFAULTHANDLER": "1", **hand(handed)},  # a crash in the guest leaves its Python traceback
                console=console, quiet_limit_s=float(os.environ.get("MPTCPLAB_VM_QUIET_LIMIT_S", QUIET_LIMIT_S)))


def ready() -> None:
    return None  # its probes (a boot each, cached) ran when a lab was decided here


def prepare(lab) -> None:
    """Before a lab boots the guest: what the lab compiles for the guest's kernel (`Lab.running.prebuild`,
    e.g. BPF objects) is built here on the host, not by a compiler under TCG."""
    if lab.running.prebuild is None:
        return
    t0 = time.monotonic()
    if lab.running.prebuild(release(kernel())):
        log.get(lab.id).info("compiled on the host for the guest's kernel (%.0f s)", time.monotonic() - t0)


# ---------------------------------------------------------------- measured once, cached

def _cached(name: str, key: str, measure) -> dict:
    path = cache_dir() / f"{name}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("key") == key:
            return data
    except (OSError, json.JSONDecodeError):
        pass
    data = {"key": key, **measure(), "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, json.dumps(data, indent=2) + "\n")
    return data


def _qemu_version() -> str:
    q = qemu_binary()
    out = subprocess.run([q, "--version"], capture_output=True, text=True) if q else None
    return out.stdout.splitlines()[0] if out and out.stdout else "no qemu"


def kvm_verdict() -> dict:
    """{"verdict": "kvm" | "kvm-broken" | "no-kvm", "detail": ...}: a boot test, cached per host
    kernel, QEMU and guest kernel."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return {"verdict": "no-kvm", "detail": "no usable /dev/kvm"}
    kimg, qemu = kernel(), qemu_binary()
    if not kimg or not qemu:
        return {"verdict": "no-kvm", "detail": "no stock kernel or QEMU to test KVM with"}
    # "|root-mount": verdicts cached by the earlier test (a virtme-ng boot) are measured again
    key = f"{_platform.release()}|{_qemu_version()}|{kimg}|root-mount"

    def measure() -> dict:
        with eta.step(log.get(), f"testing KVM with a boot under a {KVM_BOOT_TIMEOUT_S:.0f} s timeout (once; cached)",
                      "vm/kvm test"):
            ok, detail = kvm_probe.boots_linux(kimg, qemu, KVM_BOOT_TIMEOUT_S)
        return {"verdict": "kvm" if ok else "kvm-broken", "detail": detail}

    return _cached("kvm", key, measure)


def accelerator() -> str:
    """"kvm" when KVM passed its boot test, else "tcg"."""
    return "kvm" if kvm_verdict()["verdict"] == "kvm" else "tcg"


def accel_label(accel: str) -> str:
    return "KVM" if accel == "kvm" else "QEMU TCG, software emulation, its clock counting instructions"


def guest_clock(accel: str) -> str:
    """What the guest's clock follows (manifests' platform.vm_clock)."""
    return "host" if accel == "kvm" else f"instructions ({TCG_CLOCK})"


# The guest's first line (its kernel is up and runs the command), then what its kernel offers.
STARTED = "MLAB-STARTED"
PROBE = (f"print({STARTED!r}, flush=True); import json; from mptcplab.places import native; "
         "print('MLAB-CAPS ' + json.dumps(sorted(native.capabilities())))")
# What a boot takes, by accelerator: what `cost()` says, and what a first probe is told to expect
# without an earlier time on this host (the kit's few imports in the guest add seconds); an ETA is
# said only from a time measured here (core.eta).
BOOT = {"kvm": "a few seconds", "tcg": "20-40 s on an idle host (about 2 min under a load of 3-5)"}


class _Started:
    """The probe's console, kept; says once that the guest's kernel is up and the probe runs."""

    def __init__(self, say, t0: float):
        self.text, self.say, self.t0, self.up = "", say, t0, False

    def write(self, chunk: str) -> None:
        self.text += chunk
        if not self.up and STARTED in self.text:
            self.up = True
            self.say.info("the VM's kernel is up after %s; probing %s inside it",
                          eta.duration(time.monotonic() - self.t0), ", ".join(PLACE_CAPABILITIES))

    def flush(self) -> None:
        return None


def guest_capabilities() -> set[str]:
    """What the guest kernel offers, measured inside it once per kernel and cached; while it boots,
    a line every 30 s with the time left against the last measurement here (core.eta)."""
    kimg = kernel()
    if not kimg:
        return set()

    def measure() -> dict:
        say, accel = log.get(), accelerator()
        key = f"vm/capabilities/{accel}"
        say.info("measuring what the VM's kernel offers, once per kernel (cached): it boots under %s, then "
                 "probes itself%s", accel_label(accel), "" if eta.last_took(key) is not None else
                 f"; no earlier probe here to time it by: expect a boot of {BOOT[accel]}, then seconds")
        with eta.step(say, f"VM probe of kernel {release(kimg)}", key):
            out = _Started(say, time.monotonic())
            try:
                rc = boot([sys.executable, "-c", PROBE], stream=out, kimg=kimg, accel=accel)
            except EnvironmentProblem as exc:
                raise EnvironmentProblem(f"{exc}:\n{out.text[-1500:]}") from None
        m = re.search(r"MLAB-CAPS (\[.*\])", out.text)
        if rc != 0 or not m:
            raise EnvironmentProblem(f"probing the VM's kernel failed (exit {rc}):\n{out.text[-1500:]}")
        return {"capabilities": json.loads(m.group(1))}

    # Keyed by the capabilities asked too: a measurement older than one of them did not look for it.
    key = f"{kimg} {' '.join(PLACE_CAPABILITIES)}"
    return set(_cached(f"capabilities-{release(kimg)}", key, measure)["capabilities"])


def capabilities() -> set[str]:
    return guest_capabilities()


# What the benchmarks measured of each place (benchmarks/time_ratio.py, from `reproduce`'s records):
# the cost a user is told is the last measurement, with its date, not a figure written here.
TIME_RATIO = "benchmarks/results/time_ratio.json"


def cost() -> str:
    if accelerator() == "kvm":
        return f"a VM under KVM: a boot of {BOOT['kvm']} per lab"
    return (f"a VM under software emulation (QEMU TCG, no usable KVM here): each boot takes {BOOT['tcg']} and "
            "a busy guest second takes about 10 s of the host's" + measured_cost())


def measured_cost() -> str:
    """The newest quick run of a lab in this place under software emulation that the benchmarks
    recorded as reproduced: its wall time against its transfers, when and on what host."""
    try:
        rows = json.loads(paths.data(TIME_RATIO).read_text())
    except (OSError, ValueError):
        return ""
    done = [r for r in rows if r.get("where") == NAME and r.get("quick") and r.get("status") == "ok" and r.get("ratio")
            and r.get("guest_clock") == guest_clock("tcg")]  # not a run on the host's clock: another cost
    if not done:
        return ""
    r = max(done, key=lambda r: r["finished"])
    return (f" (a quick {r['lab']} took {r['seconds'] / 60:.0f} min, {r['ratio']:.1f}x its "
            f"{r['transfer_s']:.0f} s of transfers, on {r['finished'][:10]} on a {r['cpus']}-core host: "
            f"{TIME_RATIO.replace('.json', '.md')})")


def describe() -> list[str]:
    ok, why = available()
    if not ok:
        return [why]
    kimg = kernel()
    v = kvm_verdict()
    accel = {"kvm": "KVM", "kvm-broken": "KVM present but broken (boot test failed), so QEMU TCG",
             "no-kvm": "no KVM, so QEMU TCG"}[v["verdict"]]
    cpus, memory = resources(accelerator())
    return [f"kernel {kimg} (stock package), {cpus} vCPUs, {memory} memory, via virtme-ng",
            f"accelerator: {accel} ({v['detail']})",
            f"capabilities measured inside the guest: {cache_dir() / ('capabilities-' + release(kimg) + '.json')}"]


def clean() -> list[str]:
    """Kill QEMU/virtme-ng processes of guests named mlab-vm-* whose owner is gone."""
    killed = kill_each(lifetime.guest_pids(MARKER.encode()))
    lifetime.wait_gone(killed)
    removed = [f"VM process {pid}" for pid in killed]
    for d in cache_dir().glob(f"{MARKER}*") if cache_dir().exists() else []:
        shutil.rmtree(d, ignore_errors=True)
        removed.append(f"directory {d}")
    return removed
