"""The Vagrantfile validates for both providers, and provisioning is shellcheck-clean and works here.

VirtualBox is not packaged for Debian, so when VBoxManage is absent a stand-in answering only
`VBoxManage --version` lets `vagrant validate` run the VirtualBox provider's own config checks
(a typo test below proves the block is really validated). The libvirt block needs the
vagrant-libvirt plugin (Debian: apt-get install vagrant-libvirt), the qemu block the vagrant-qemu
plugin, which is not packaged by Debian: `vagrant plugin install vagrant-qemu` (from rubygems.org)
into the user's Vagrant home, which its validation then uses. vagrant-qemu checks none of its own
settings (its `validate` returns no errors), so there it proves that the block runs, on this host
and as on Apple Silicon.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mptcplab.core import kernel
from mptcplab.places import kvm_probe

REPO = Path(__file__).resolve().parents[2]
PROVISION = REPO / "vagrant" / "provision.sh"
KVM_PROBE = REPO / "src" / "mptcplab" / "places" / "kvm_probe.py"  # the Vagrantfile runs it
vagrant = pytest.mark.skipif(not shutil.which("vagrant"), reason="vagrant not installed (apt-get install vagrant)")


def _plugin(name: str) -> bool:
    out = subprocess.run(["vagrant", "plugin", "list"], capture_output=True, text=True)
    return name in out.stdout


def _libvirt_plugin() -> bool:
    return _plugin("vagrant-libvirt")


def _validate(tmp_path: Path, provider: str, vagrantfile: str | None = None,
              **extra_env: str) -> subprocess.CompletedProcess:
    """`vagrant validate` on a copy of the Vagrantfile (+ provisioning script, KVM probe) in tmp_path."""
    (tmp_path / "vagrant").mkdir(exist_ok=True)
    shutil.copy(PROVISION, tmp_path / "vagrant" / "provision.sh")
    (tmp_path / KVM_PROBE.parent.relative_to(REPO)).mkdir(parents=True, exist_ok=True)
    shutil.copy(KVM_PROBE, tmp_path / KVM_PROBE.relative_to(REPO))
    (tmp_path / "Vagrantfile").write_text(vagrantfile or (REPO / "Vagrantfile").read_text())
    env = {**os.environ, "VAGRANT_DEFAULT_PROVIDER": provider}
    if provider != "qemu":  # vagrant-qemu is a user plugin: it lives in the user's Vagrant home
        env["VAGRANT_HOME"] = str(tmp_path / ".vagrant.d")
    env.pop("VAGRANT_VAGRANTFILE", None)
    for var in [v for v in env if v.startswith("MPTCPLAB_")]:
        env.pop(var)
    env.update(extra_env)
    if provider == "virtualbox" and not shutil.which("VBoxManage"):
        stub = tmp_path / "bin" / "VBoxManage"
        stub.parent.mkdir(exist_ok=True)
        stub.write_text('#!/bin/sh\n[ "$1" = --version ] && echo 7.0.14r161095 && exit 0\nexit 1\n')
        stub.chmod(0o755)
        env["PATH"] = f"{stub.parent}:{env['PATH']}"
    return subprocess.run(["vagrant", "validate"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@vagrant
@pytest.mark.parametrize("provider", ["virtualbox", "libvirt"])
def test_vagrantfile_validates(tmp_path, provider):
    if provider == "libvirt" and not _libvirt_plugin():
        pytest.skip("vagrant-libvirt plugin missing (apt-get install vagrant-libvirt)")
    r = _validate(tmp_path, provider)
    assert r.returncode == 0 and "validated successfully" in r.stdout, r.stdout + r.stderr


@vagrant
@pytest.mark.parametrize("apple_silicon", [False, True])
def test_vagrantfile_validates_for_the_qemu_provider(tmp_path, apple_silicon):
    if not _plugin("vagrant-qemu"):
        pytest.skip("vagrant-qemu plugin missing (vagrant plugin install vagrant-qemu: needs rubygems.org)")
    text = (REPO / "Vagrantfile").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("APPLE_SILICON = "))
    shown = '    puts "QEMU #{qe.machine.inspect} #{qe.cpu.inspect} #{qe.smp} #{qe.memory}"\n'
    text = text.replace("    qe.ssh_auto_correct = true\n", "    qe.ssh_auto_correct = true\n" + shown)
    r = _validate(tmp_path, "qemu", text.replace(line, f"APPLE_SILICON = {str(apple_silicon).lower()}"))
    assert r.returncode == 0 and "validated successfully" in r.stdout, r.stdout + r.stderr
    hvf = '"virt,highmem=on,accel=hvf" "host"' if apple_silicon else ":__UNSET__VALUE__ :__UNSET__VALUE__"
    assert f"QEMU {hvf} 2 4096M" in r.stdout, r.stdout


def _built_box(tmp_path: Path, arch: str, provider: str) -> Path:
    """build.sh's boxes stage on a stand-in disk (qemu-img faked: only the box's metadata and
    Vagrantfile matter to `vagrant validate`)."""
    fake, out = tmp_path / "fakebin", tmp_path / "boxes"
    fake.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    (fake / "qemu-img").write_text('#!/bin/sh\nfor a; do last=$a; done\necho stand-in >"$last"\n')
    (fake / "qemu-img").chmod(0o755)
    (out / f"disk-{arch}.qcow2").write_bytes(b"stand-in")
    r = subprocess.run(["bash", str(REPO / "vagrant" / "box" / "build.sh"), "--arch", arch, "--stage", "boxes",
                        "--out", str(out), "--version", "2026.11.25"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stderr
    return out / f"mptcplab-{arch}-{provider}.box"


@vagrant
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mmdebstrap"), reason="build.sh needs root and mmdebstrap")
@pytest.mark.parametrize("arch,provider", [("arm64", "virtualbox"), ("amd64", "virtualbox"), ("arm64", "libvirt")])
def test_vagrantfile_validates_with_each_box_installed(tmp_path, arch, provider):
    """With the box added, Vagrant loads the box's own Vagrantfile under the project's (the arm64
    VirtualBox box leaves the display to its OVF; the libvirt one asks for UEFI on `virt`)."""
    if provider == "libvirt" and not _libvirt_plugin():
        pytest.skip("vagrant-libvirt plugin missing (apt-get install vagrant-libvirt)")
    box = _built_box(tmp_path / "build", arch, provider)
    home = {**os.environ, "VAGRANT_HOME": str(tmp_path / ".vagrant.d")}
    r = subprocess.run(["vagrant", "box", "add", "--name", "mptcplab/debian-13", "--provider", provider, str(box)],
                       env=home, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    (installed,) = (tmp_path / ".vagrant.d" / "boxes").glob(f"*/*/{provider}/Vagrantfile")
    assert f"({arch})" in installed.read_text().splitlines()[0]
    r = _validate(tmp_path, provider)
    assert r.returncode == 0 and "validated successfully" in r.stdout, r.stdout + r.stderr


@vagrant
@pytest.mark.parametrize("provider,line,typo", [
    ("virtualbox", "vb.default_nic_type = NIC", "vb.default_nic_typo = NIC"),
    ("libvirt", "lv.nic_model_type = NIC", "lv.nic_model_typo = NIC"),
])
def test_validation_covers_the_provider_block(tmp_path, provider, line, typo):
    if provider == "libvirt" and not _libvirt_plugin():
        pytest.skip("vagrant-libvirt plugin missing")
    text = (REPO / "Vagrantfile").read_text()
    assert line in text
    r = _validate(tmp_path, provider, text.replace(line, typo))
    assert r.returncode != 0 and typo.split(".")[1].split()[0] in r.stdout + r.stderr


@vagrant
def test_overrides_from_the_environment(tmp_path):
    r = _validate(tmp_path, "libvirt" if _libvirt_plugin() else "virtualbox")
    assert r.returncode == 0
    text = (REPO / "Vagrantfile").read_text()
    for var in ("MPTCPLAB_BOX", "MPTCPLAB_BOX_VERSION", "MPTCPLAB_BOX_URL", "MPTCPLAB_CPUS", "MPTCPLAB_MEMORY",
                "MPTCPLAB_JUPYTER_PORT"):
        assert f'env("{var}"' in text
    assert "box_architecture" not in text  # Debian's Vagrant 2.3.4 rejects it


RESOLVED = '\nputs "RESOLVED box=#{BOX} version=#{BOX_VERSION} url=#{BOX_URL}"\n'


def _resolved(tmp_path: Path, **env: str) -> str:
    r = _validate(tmp_path, "virtualbox", (REPO / "Vagrantfile").read_text() + RESOLVED, **env)
    assert r.returncode == 0, r.stdout + r.stderr
    return next(line for line in r.stdout.splitlines() if line.startswith("RESOLVED"))


@vagrant
def test_default_box_is_the_kits_own_and_bento_stays_selectable(tmp_path):
    # Nothing from the public registry by default: the kit's box, newest version the course hosts.
    assert _resolved(tmp_path) == "RESOLVED box=mptcplab/debian-13 version= url="
    assert _resolved(tmp_path, MPTCPLAB_BOX="bento") == "RESOLVED box=bento/ubuntu-24.04 version=202510.26.0 url="
    url = "https://boxes.example.edu/mptcplab/metadata.json"
    assert _resolved(tmp_path, MPTCPLAB_BOX_URL=url) == f"RESOLVED box=mptcplab/debian-13 version= url={url}"


@vagrant
def test_a_local_build_is_used_by_itself(tmp_path):
    local = tmp_path / "build" / "box" / "metadata.json"
    local.parent.mkdir(parents=True)
    local.write_text("{}")
    assert _resolved(tmp_path) == f"RESOLVED box=mptcplab/debian-13 version= url={local}"
    # ... but not for another box, which would then be fetched from the kit's catalogue
    assert _resolved(tmp_path, MPTCPLAB_BOX="bento").endswith("url=")


RSYNC = '\nrequire "json"\nputs "RSYNC " + JSON.generate(RSYNC_EXCLUDE)\n'
SYNCED = {"build/box/kernel-amd64/linux-image-6.12.117-mptcplab_6.12.117-1_amd64.deb",
          "build/box/kernel-arm64/linux-image-6.12.117-mptcplab_6.12.117-1_arm64.deb",
          "labs/01-scheduler/README.md", "solutions/results/lab1/runs-manifest.csv"}
LEFT_OUT = {"build/box/mptcplab-amd64-libvirt.box", "build/box/disk-amd64.qcow2", "build/box/metadata.json",
            "build/plain/mptcplab-amd64-libvirt.box", "results/lab1/manifest.json", ".git/HEAD",
            ".venv/bin/python", ".vagrant/machines/default/id"}


@vagrant
@pytest.mark.skipif(not shutil.which("rsync"), reason="rsync not installed")
def test_rsync_carries_the_kit_kernel_package_and_nothing_else_of_build(tmp_path):
    """libvirt's default sharing (and the qemu provider's) is rsync: provisioning's kernel step must
    find build/box/kernel-ARCH/ in the VM, and the boxes and disks beside it must stay out."""
    text = (REPO / "Vagrantfile").read_text()
    assert text.count("rsync__exclude: RSYNC_EXCLUDE") == 2  # libvirt and qemu (their blocks need plugins)
    r = _validate(tmp_path, "virtualbox", text + RSYNC)
    assert r.returncode == 0, r.stdout + r.stderr
    excludes = json.loads(next(ln for ln in r.stdout.splitlines() if ln.startswith("RSYNC ")).removeprefix("RSYNC "))
    checkout, vm = tmp_path / "checkout", tmp_path / "vm"
    for name in SYNCED | LEFT_OUT:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(name)
    # What Vagrant's rsync helper runs: its own .vagrant/ first, then each entry as --exclude, in order.
    rules = [a for e in dict.fromkeys([".vagrant/", *excludes]) for a in ("--exclude", e)]
    subprocess.run(["rsync", "--archive", "--delete", *rules, f"{checkout}/", str(vm)], check=True, timeout=60)
    assert {str(p.relative_to(vm)) for p in vm.rglob("*") if p.is_file()} == SYNCED


@vagrant
def test_libvirt_driver_follows_the_host(tmp_path):
    if not _libvirt_plugin():
        pytest.skip("vagrant-libvirt plugin missing")
    for forced in ("qemu", "kvm"):
        r = _validate(tmp_path, "libvirt", MPTCPLAB_LIBVIRT_DRIVER=forced)
        assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / ".vagrant" / "mptcplab-libvirt-driver").exists()  # an override skips the probe
    r = _validate(tmp_path, "libvirt")
    assert r.returncode == 0, r.stdout + r.stderr
    if os.access("/dev/kvm", os.W_OK):  # decided by the kit's boot test under KVM (kvm_probe), cached
        kernels = sorted(k for k in Path("/boot").glob("vmlinuz-*") if os.access(k, os.R_OK))
        expected = "kvm" if kernels and kvm_probe.boots_linux(kernels[-1], timeout=30)[0] else "qemu"
        assert (tmp_path / ".vagrant" / "mptcplab-libvirt-driver").read_text() == expected
    else:  # no usable /dev/kvm: software emulation, without probing
        assert not (tmp_path / ".vagrant" / "mptcplab-libvirt-driver").exists()


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed")
def test_shellcheck():
    scripts = sorted((REPO / "vagrant").glob("*.sh"))
    assert scripts
    r = subprocess.run(["shellcheck", *map(str, scripts)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


root = pytest.mark.skipif(os.geteuid() != 0, reason="provisioning steps need root")


def _provision(tmp_path, *args):
    env = {**os.environ, "MPTCPLAB_ETC": str(tmp_path / "etc"), "MPTCPLAB_APT_UPDATE": "never",
           "MPTCPLAB_SRC": str(REPO)}  # the kit whose netem probe the modules step runs
    return subprocess.run(["bash", str(PROVISION), *args], env=env, capture_output=True, text=True, timeout=900)


@root
@pytest.mark.skipif(not shutil.which("apt-get"), reason="not a Debian/Ubuntu host")
def test_package_list_resolves_with_apt():
    pkgs = subprocess.run(["bash", str(PROVISION), "--list-packages"], capture_output=True, text=True).stdout.split()
    assert "tshark" in pkgs and "iperf3" in pkgs and "mptcpd" in pkgs and "clang" in pkgs
    sim = subprocess.run(["apt-get", "install", "-s", "--no-install-recommends", *pkgs], capture_output=True, text=True)
    assert sim.returncode == 0, sim.stderr


@root
@pytest.mark.skipif(not shutil.which("apt-get"), reason="not a Debian/Ubuntu host")
def test_package_step_is_idempotent(tmp_path):
    first = _provision(tmp_path, "--only", "packages")
    assert first.returncode == 0, first.stdout + first.stderr
    again = _provision(tmp_path, "--only", "packages")
    listed = _provision(tmp_path, "--list-packages").stdout.split()  # more than one line of them
    assert again.returncode == 0 and f"all {len(listed)} already installed" in again.stdout, again.stdout
    check = _provision(tmp_path, "--check", "--only", "packages")
    assert check.returncode == 0 and "MISSING" not in check.stdout


@root
def test_module_step_persists_and_fails_loudly_without_netem(tmp_path):
    def probes() -> set[str]:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return {line.split()[0] for line in out.splitlines() if line.startswith("mlab-probe-")}

    before = probes()
    r = _provision(tmp_path, "--only", "modules")
    conf = tmp_path / "etc" / "modules-load.d" / "mptcplab.conf"
    assert "sch_netem" in conf.read_text()
    assert probes() <= before  # the kit's probe (mptcplab.core.kernel) removed its namespace
    if kernel.netem_usable():
        assert r.returncode == 0 and "netem qdisc created" in r.stdout
    else:  # e.g. this CI host: no module loading; the step must say so and stop
        assert r.returncode != 0 and "cannot create a netem qdisc" in r.stderr


def test_check_mode_changes_nothing(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    _provision(tmp_path, "--check", "--only", "modules", "sysctls")
    assert not (tmp_path / "etc").exists()


@root
def test_image_mode_writes_configuration_but_touches_no_running_kernel(tmp_path):
    """What the box build runs in its chroot: the files are written, the build host is left alone."""
    before = Path("/proc/sys/net/core/rmem_max").read_text()
    r = _provision(tmp_path, "--image", "--only", "modules", "sysctls")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sch_netem" in (tmp_path / "etc" / "modules-load.d" / "mptcplab.conf").read_text()
    assert "net.mptcp.enabled = 1" in (tmp_path / "etc" / "sysctl.d" / "90-mptcplab.conf").read_text()
    assert "image: sysctls apply at boot" in r.stdout
    assert Path("/proc/sys/net/core/rmem_max").read_text() == before  # no sysctl -p
    assert "netem qdisc created" not in r.stdout and "cannot create a netem qdisc" not in r.stderr  # no netns test
    refused = _provision(tmp_path, "--image", "--check")
    assert refused.returncode != 0 and "--image and --check exclude each other" in refused.stderr
