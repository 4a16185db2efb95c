"""Does KVM run a Linux guest here? The one boot test, for the VM place and for the Vagrantfile.

/dev/kvm can exist and still not run a guest (nested virtualisation: QEMU aborts on an MSR, as on
the kit's CI host, or the guest hangs right after the kernel decompressor), so "kvm" needs proof:
boot a kernel under KVM with no root disk; reaching its panic for want of a root file system
("not syncing: VFS") within the timeout proves KVM runs a Linux guest. QEMU alone, no virtme-ng
and no guest command, so the Vagrantfile can ask on a host where the kit is not installed.

Standard library only, so it also runs as a script (the Vagrantfile does, with the host's python3):
    python3 kvm_probe.py KERNEL [QEMU] [TIMEOUT_S]    exit 0 and "kvm" when KVM boots it, else 1
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path


def boots_linux(kernel: Path, qemu: str = "qemu-system-x86_64", timeout: float = 60.0) -> tuple[bool, str]:
    """(ok, detail): does `kernel` reach its root-mount panic under KVM within `timeout` seconds?"""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mptcplab-kvm-probe-") as tmp:
        log = Path(tmp) / "serial.log"
        # panic=-1 with -no-reboot: the panic ends QEMU at once, so a working KVM answers in seconds.
        arm = qemu.endswith("aarch64")  # QEMU's arm64 needs a machine; its serial port is a PL011
        argv = [qemu, *(["-machine", "virt"] if arm else []), "-accel", "kvm", "-cpu", "host", "-m", "256",
                "-display", "none", "-nodefaults", "-no-reboot", "-serial", f"file:{log}", "-kernel", str(kernel),
                "-append", f"console={'ttyAMA0' if arm else 'ttyS0'} panic=-1"]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
            said = [ln for ln in proc.stderr.splitlines() if ln.strip()][-2:]
        except subprocess.TimeoutExpired:
            said = [f"no exit within {timeout:.0f} s"]
        except OSError as exc:
            return False, f"QEMU did not start: {exc}"
        console = log.read_bytes() if log.exists() else b""
    took = time.monotonic() - t0
    if b"not syncing: VFS" in console:  # not "VFS:" alone: early init prints "VFS: Disk quotas"
        return True, f"kernel {kernel.name} booted under KVM to its root mount in {took:.0f} s"
    return False, (f"kernel {kernel.name} did not boot under KVM ({took:.0f} s)"
                   + (f"; QEMU said: {' / '.join(said)}" if said else ""))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__.split("\n\n")[-1].strip())
    ok, detail = boots_linux(Path(sys.argv[1]), *sys.argv[2:3], *map(float, sys.argv[3:4]))
    print("kvm" if ok else "kvm-broken", detail, sep=": ", file=sys.stdout if ok else sys.stderr)
    sys.exit(0 if ok else 1)
