"""The one KVM boot test (places/kvm_probe.py), shared by the VM place and the Vagrantfile: what
it counts as a boot, with a stand-in QEMU that writes a chosen console (the real one runs in
tests/delivery/test_vagrant.py's libvirt test and in `mptcplab doctor`)."""

import subprocess
import sys
from pathlib import Path

import pytest

from mptcplab.places import kvm_probe

PROBE = Path(kvm_probe.__file__)


def _qemu(tmp_path: Path, console: str, stderr: str = "", sleep: float = 0) -> str:
    """A stand-in QEMU: writes `console` to the file its -serial file:PATH names."""
    fake = tmp_path / "qemu-system-x86_64"
    fake.write_text(f"""#!{sys.executable}
import sys, time
path = next(a for a in sys.argv if a.startswith("file:"))[5:]
open(path, "w").write({console!r})
sys.stderr.write({stderr!r})
time.sleep({sleep})
""")
    fake.chmod(0o755)
    return str(fake)


def test_the_root_mount_panic_is_a_boot(tmp_path):
    ok, detail = kvm_probe.boots_linux(Path("/boot/vmlinuz-x"), _qemu(
        tmp_path, "VFS: Disk quotas\nKernel panic - not syncing: VFS: Unable to mount root fs\n"))
    assert ok and "vmlinuz-x booted under KVM" in detail


@pytest.mark.parametrize("console,stderr,sleep,said", [
    ("VFS: Disk quotas dquot_6.6.0\n", "", 0, "vmlinuz-x did not boot"),  # early init is not a boot
    ("", "error: failed to set MSR 0x10a\nAssertion failed.\n", 0, "QEMU said: error: failed to set MSR"),
    ("Decompressing Linux... ", "", 5, "no exit within 1 s"),  # hangs after the decompressor
])
def test_an_abort_or_a_hang_is_not(tmp_path, console, stderr, sleep, said):
    ok, detail = kvm_probe.boots_linux(Path("/boot/vmlinuz-x"), _qemu(tmp_path, console, stderr, sleep), timeout=1)
    assert not ok and said in detail, detail


def test_as_a_script_for_the_vagrantfile(tmp_path):
    """The Vagrantfile runs it with the host's python3 and reads the exit status only."""
    good = subprocess.run([sys.executable, str(PROBE), "/boot/vmlinuz-x",
                           _qemu(tmp_path, "Kernel panic - not syncing: VFS: Unable to mount root fs"), "5"],
                          capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout.startswith("kvm: "), good.stderr
    bad = subprocess.run([sys.executable, str(PROBE), "/boot/vmlinuz-x", str(tmp_path / "no-such-qemu")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "QEMU did not start" in bad.stderr
