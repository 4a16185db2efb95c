"""The kit's box kernel: Debian's 6.12 with the paper's scheduler, for the Vagrant box and Lima.

Lab 1's paper point needs the `minrtt` scheduler with RP (vagrant/uml/mptcp-minrtt-scheduler.patch),
which no stock kernel has. UML carries it on x86 hosts; this kernel carries it wherever the kit's
box boots (VirtualBox, KVM/libvirt, QEMU, Apple's hypervisor through Lima), amd64 or arm64, so the
student's default door runs the paper point at full speed.

How: the distribution's `linux-source-6.*` (the same tarball as the UML kernel), the scheduler
patch only, Debian's own *cloud* flavour config of that version for the architecture (made for
virtual machines: its choices of security, cgroups, BPF and HZ 250 are Debian's, not ours), every
option of vagrant/box/kernel.config built in, and every other module left out. One image, no
modules: no initramfs must find the right driver for a hypervisor, and it builds in a fraction of
the time of Debian's 4,000 modules. `make bindeb-pkg` packages it as a linux-image .deb that the
box installs beside Debian's own kernel (which stays in GRUB's menu as the fallback).

    mptcplab box kernel [--arch amd64|arm64]      build or find it; prints the cache directory
"""

from __future__ import annotations

import hashlib
import lzma
import os
import platform
import re
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

from .kernel_build import enable_options, find_source, make_with_progress
from ..core import log, paths, process
from ..core.errors import EnvironmentProblem

_log = log.get("box kernel")
FRAGMENT = paths.data("vagrant/box/kernel.config")
# Only the scheduler: the other patches beside it fix UML itself (vagrant/uml/README.md).
PATCH = paths.data("vagrant/uml/mptcp-minrtt-scheduler.patch")
LOCALVERSION = "-mptcplab"
# kbuild's ARCH, the cross compiler's prefix, and the boot image make builds, per Debian arch.
ARCHES = {"amd64": ("x86", "x86_64-linux-gnu-", "arch/x86/boot/bzImage"),
          "arm64": ("arm64", "aarch64-linux-gnu-", "arch/arm64/boot/Image")}


def host_arch() -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def debian_config(arch: str) -> Path:
    """Debian's cloud flavour config for `arch`, from the `linux-config-6.12` package."""
    path = Path(f"/usr/src/linux-config-6.12/config.{arch}_none_cloud-{arch}.xz")
    if not path.exists():
        how = ("`apt-get install linux-config-6.12`" if arch == host_arch() else
               f"`dpkg --add-architecture {arch} && apt-get update && apt-get download linux-config-6.12:{arch}"
               f" && dpkg -x linux-config-6.12_*_{arch}.deb /`")
        raise EnvironmentProblem(f"Debian's {arch} kernel config is missing ({path}): {how}")
    return path


# Options kconfig offers only on some architectures: in 6.12 VirtualBox's guest driver and shared
# folders depend on X86 (drivers/virt/vboxguest/Kconfig), so the arm64 kernel goes without them, as
# Debian's own arm64 kernel does (kept out here, not in the fragment: its bytes are the cache key).
ONLY_ON = {"VBOXGUEST": ("amd64",), "VBOXSF_FS": ("amd64",)}


def options(arch: str | None = None) -> list[str]:
    """The fragment's options; for `arch`, only those its kconfig offers (ONLY_ON)."""
    lines = FRAGMENT.read_text().splitlines()
    names = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]
    return [o for o in names if arch is None or arch in ONLY_ON.get(o, (arch,))]


def kernel_dir(arch: str) -> Path:
    """Cache directory keyed by the source version, the arch, and the hash of every input."""
    tarball, version = find_source()
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in (FRAGMENT, PATCH, debian_config(arch)))).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", version)
    return paths.cache_dir("box-kernel") / f"{tarball.name.removesuffix('.tar.xz')}-{safe}-{arch}-{digest}"


def _need_tools(arch: str) -> None:
    tools = ["make", "gcc", "flex", "bison", "bc", "patch", "pahole", "dpkg-buildpackage", "rsync"]
    if arch != host_arch():
        tools.append(ARCHES[arch][1] + "gcc")
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        raise EnvironmentProblem(
            f"building the box kernel needs {', '.join(missing)}: `apt-get install build-essential flex bison bc "
            "patch libelf-dev libssl-dev dwarves dpkg-dev debhelper rsync` (arm64 on amd64: gcc-aarch64-linux-gnu)")


def build(arch: str | None = None, jobs: int | None = None, quiet: bool = False) -> Path:
    """Build (or find in the cache) the box kernel for `arch`; returns its cache directory, which
    holds the linux-image .deb, the boot image (`image`, for a direct boot), `config` and `SOURCE`."""
    arch = arch or host_arch()
    if arch not in ARCHES:
        raise EnvironmentProblem(f"no box kernel for {arch}: choose one of {', '.join(ARCHES)}")
    final = kernel_dir(arch)
    if (final / "image").exists():
        if not quiet:
            _log.info("box kernel is cached: %s", final)
        return final
    _need_tools(arch)
    tarball, version = find_source()
    jobs = jobs or os.cpu_count() or 2
    # The build tree is kept until the kernel is cached: a build stopped half way (a session's end,
    # a ^C) goes on from where it stopped next time, since every input is in the cache key.
    work = final.with_name(final.name + ".build")
    say = (lambda *_: None) if quiet else _log.info
    kbuild_arch, cross, image = ARCHES[arch]
    src = work / "linux"
    make = ["make", "-C", str(src), f"ARCH={kbuild_arch}"] + ([f"CROSS_COMPILE={cross}"] if arch != host_arch() else [])
    t0 = time.monotonic()
    resumed = (work / "configured").exists()
    if not resumed:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        say(f"extracting {tarball.name} ({version})")
        with tarfile.open(tarball) as tar:
            tar.extractall(work, filter="fully_trusted")
        next(p for p in work.iterdir() if p.is_dir()).rename(src)
        say(f"patching: {PATCH.name}")
        process.run(["patch", "-p1", "--forward", "--batch", "-d", str(src), "-i", str(PATCH)])
        _configure(src, make, arch, say)
        (work / "configured").touch()
    else:
        say(f"resuming the build stopped in {work}")
    say(f"compiling with {jobs} jobs (no modules)")
    counted = work.parent / f"objects-{arch}"  # the last build's count: the bar's total
    made = make_with_progress(make + [f"-j{jobs}", "all"], quiet, f"[box kernel {arch}] compiling",
                              f"box kernel ({arch})", total=int(counted.read_text()) if counted.exists() else None)
    if not resumed:  # a resumed build counts only what was left
        counted.write_text(f"{made}\n")
    say("packaging: make bindeb-pkg")
    process.run(make + [f"-j{jobs}", "bindeb-pkg", f"KDEB_PKGVERSION={_deb_version(version)}"], timeout=3600)
    debs = [p for p in work.glob("linux-image-*.deb") if "-dbg_" not in p.name]
    if len(debs) != 1:
        raise EnvironmentProblem(f"box kernel: expected one linux-image .deb, found {[p.name for p in debs]}")
    staging = Path(tempfile.mkdtemp(prefix="stage-", dir=final.parent))
    shutil.copy2(debs[0], staging / debs[0].name)
    shutil.copy2(src / image, staging / "image")
    shutil.copy2(src / ".config", staging / "config")
    (staging / "SOURCE").write_text(f"{tarball}\n{version}\n{debian_config(arch)}\n")
    staging.rename(final)  # atomic: a half-built kernel is never in the cache
    shutil.rmtree(work, ignore_errors=True)
    say(f"done in {time.monotonic() - t0:.0f} s: {final}")
    return final


def _configure(src: Path, make: list[str], arch: str, say) -> None:
    """Debian's cloud config, the fragment's options built in, every other module left out."""
    say(f"configuring: Debian's cloud-{arch} config + vagrant/box/kernel.config, no modules")
    with lzma.open(debian_config(arch), "rt") as f:
        config = f.read()
    # Debian signs with its own certificates, which the source package does not ship.
    config = re.sub(r'^CONFIG_SYSTEM_(TRUSTED|REVOCATION)_KEYS=.*$', r'CONFIG_SYSTEM_\1_KEYS=""', config, flags=re.M)
    config = re.sub(r"^(CONFIG_\w+)=m$", r"# \1 is not set", config, flags=re.M)
    (src / ".config").write_text(config)
    enable_options(src, make, options(arch), "box kernel",
                   ["--set-str", "LOCALVERSION", LOCALVERSION, "--disable", "LOCALVERSION_AUTO"])


def _deb_version(source_version: str) -> str:
    """The package's version: the source's, marked as the kit's build (6.12.117-1~deb12u1+mptcplab1)."""
    return re.sub(r"[^A-Za-z0-9.+~-]", "", source_version) + "+mptcplab1"
