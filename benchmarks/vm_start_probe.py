"""Benchmark probe: where a VM guest's start goes (vng + QEMU, the kernel and virtme-ng's init, the
kit's Python start and imports), and whether the paths' pings read the same side by side.

    .venv/bin/python benchmarks/vm_start_probe.py DIR    # as root, in a lock slot: it boots the VM

One boot with the kit's own command line (places.vm.boot, as a lab's). Writes into DIR: timeline.txt
(the host's clock per line the guest printed), dmesg.txt (the guest kernel's log: virtme-ng-init's
steps and the drivers udev loaded, with kernel timestamps), modules.txt (what was loaded then), importtime-guest.txt (python -X
importtime of the kit's start in the guest), pings.json (vm_pings_probe.py, run in the guest).
Results: benchmarks/results/vm_run_overhead/vmspeed3-probe.md."""

import sys
import time
from pathlib import Path

from mptcplab.core import paths
from mptcplab.places import vm
from stamped import Stamped  # benchmarks/ is the script's folder, first on sys.path

out = Path(sys.argv[1]).resolve()
out.mkdir(parents=True, exist_ok=True)
py = sys.executable
here = Path(__file__).resolve().parent
imports = ("import mptcplab.cli as c; c.build_parser(); from mptcplab.run import lab; [l for l in lab.all_labs()]; "
           "import mptcplab.run.engine, mptcplab.labs.lab2.experiment")
script = f"""
echo "guest uptime at the script's start: $(cut -d' ' -f1 /proc/uptime)"
dmesg > {out}/dmesg.txt
cat /proc/modules > {out}/modules.txt
t=$(cut -d' ' -f1 /proc/uptime); {py} -c pass; echo "a bare python: from $t to $(cut -d' ' -f1 /proc/uptime)"
t=$(cut -d' ' -f1 /proc/uptime); {py} -X importtime -c "{imports}" 2> {out}/importtime-guest.txt
echo "the kit's imports under -X importtime: from $t to $(cut -d' ' -f1 /proc/uptime)"
t=$(cut -d' ' -f1 /proc/uptime); {py} {here}/vm_pings_probe.py {out}/pings.json; echo "the ping probe: from $t to $(cut -d' ' -f1 /proc/uptime)"
"""


t0 = time.time()
with open(out / "timeline.txt", "w") as f:
    f.write(f"boot started {time.strftime('%H:%M:%S', time.gmtime(t0))} UTC\n")
    rc = vm.boot(["sh", "-c", script], writable=[out, paths.cache_dir()], stream=Stamped(f, t0),
                 console=out / "vm-console.log")
    f.write(f"[host +{time.time() - t0:6.1f} s] guest exited, status {rc}\n")
print((out / "timeline.txt").read_text())
