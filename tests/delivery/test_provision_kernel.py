"""provision.sh's kernel step: the kit's box kernel installed beside the distribution's as GRUB's
default, in the box build's chroot (--image) and in a running VM (the Lima door, a plain box).

The package tools are stand-ins on PATH that record what they were asked (this host's own kernel
and GRUB are never touched); the .deb is a real one, made here, that the step reads with dpkg-deb."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROVISION = REPO / "vagrant" / "provision.sh"
RELEASE = "6.12.0-mlabtest"
VERSION = "6.12.0-1+mptcplab1"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="provisioning steps need root")


@pytest.fixture
def host(tmp_path):
    """A host whose dpkg installs into a state file and whose update-grub only says it ran."""
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    pkg = tmp_path / "pkg"
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        f"Package: linux-image-{RELEASE}\nVersion: {VERSION}\nArchitecture: {arch}\n"
        "Maintainer: test <test@example.org>\nDescription: a stand-in for the kit's box kernel\n")
    deb = tmp_path / f"linux-image-{RELEASE}_{VERSION}_{arch}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(pkg), str(deb)], check=True, capture_output=True)
    bin_, log, state = tmp_path / "bin", tmp_path / "calls", tmp_path / "installed"
    bin_.mkdir()
    fakes = {
        "dpkg": f'[ "$1" = -i ] || exec /usr/bin/dpkg "$@"\necho "dpkg $*" >>{log}\n'
                f'dpkg-deb -f "$2" Version >{state}\n',
        "dpkg-query": f'[ -f {state} ] || exit 1\nprintf %s "$(cat {state})"\n',
        "update-grub": f'echo update-grub >>{log}\n',
    }
    for name, body in fakes.items():
        (bin_ / name).write_text("#!/bin/sh\n" + body)
        (bin_ / name).chmod(0o755)
    return {"deb": deb, "arch": arch, "log": log, "etc": tmp_path / "etc",
            "env": {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "MPTCPLAB_ETC": str(tmp_path / "etc"),
                    "MPTCPLAB_OS_ID": "debian", "MPTCPLAB_SRC": str(tmp_path / "checkout")}}


def _provision(host, *args, **env):
    return subprocess.run(["bash", str(PROVISION), *args, "--only", "kernel"], env={**host["env"], **env},
                          capture_output=True, text=True, timeout=120)


def _calls(host) -> list[str]:
    return host["log"].read_text().splitlines() if host["log"].exists() else []


def test_in_the_box_builds_chroot_it_installs_the_kernel_as_grubs_default_by_title(host):
    r = _provision(host, "--image", MPTCPLAB_KERNEL_DEB=str(host["deb"]))
    assert r.returncode == 0, r.stdout + r.stderr
    conf = host["etc"] / "default" / "grub.d" / "mptcplab-kernel.cfg"
    assert conf.read_text() == (f'GRUB_DEFAULT="Advanced options for Debian GNU/Linux>Debian GNU/Linux, '
                                f'with Linux {RELEASE}"\n')
    assert _calls(host) == [f"dpkg -i {host['deb']}"]  # no update-grub: the image stage writes the menu
    again = _provision(host, "--image", MPTCPLAB_KERNEL_DEB=str(host["deb"]))
    assert again.returncode == 0 and "already installed" in again.stdout
    assert _calls(host) == [f"dpkg -i {host['deb']}"]


def test_in_a_running_vm_it_takes_the_checkouts_kernel_and_says_a_restart_boots_it(host):
    kernels = Path(host["env"]["MPTCPLAB_SRC"]) / "build" / "box" / f"kernel-{host['arch']}"
    kernels.mkdir(parents=True)
    empty = _provision(host, "--check")
    assert empty.returncode == 0 and "no kit kernel package in" in empty.stdout  # none there: nothing is missing
    os.link(host["deb"], kernels / host["deb"].name)
    check = _provision(host, "--check")
    assert check.returncode != 0 and f"MISSING: the kit's kernel {RELEASE}" in check.stdout
    assert not host["etc"].exists() and _calls(host) == []  # --check changes nothing
    r = _provision(host)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _calls(host) == [f"dpkg -i {kernels / host['deb'].name}", "update-grub"]
    assert f"the kit's {RELEASE} boots at the VM's next start" in r.stdout and "limactl stop mptcplab" in r.stdout
    again = _provision(host)  # every boot of a Lima VM provisions again: nothing to redo
    assert again.returncode == 0 and "already installed" in again.stdout and len(_calls(host)) == 2


def test_without_a_kit_kernel_package_the_running_kernel_stays(host):
    r = _provision(host)
    assert r.returncode == 0 and "stays (no kit kernel package in" in r.stdout
    assert _calls(host) == [] and not host["etc"].exists()
