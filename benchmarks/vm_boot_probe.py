"""Benchmark probe: what the VM place's start and the host's files cost a guest under TCG, with the
kit's settings or with one of them undone (one boot per call, the kit's command line otherwise).

    .venv/bin/python benchmarks/vm_boot_probe.py DIR [--uncached] [--virtiofs-wait]

--uncached: without the cached second export of the host's / (vm.cached_mounts), as before
2026-11-28; --virtiofs-wait: without `vng --force-9p`. Writes DIR/timeline.txt: the host's time of
each line the guest printed, the guest's uptime when its script started (the host's time minus it:
what came before the guest kernel's clock, vng and QEMU and the firmware), then `import pandas`
twice, twenty `tc -V`, the bulk tool's start twice. Results: benchmarks/results/vm_run_overhead.md
(vmspeed5)."""

import sys
import time
from pathlib import Path

from mptcplab.core import paths
from mptcplab.places import vm
from stamped import Stamped  # benchmarks/ is the script's folder, first on sys.path

out = Path(sys.argv[1]).resolve()
out.mkdir(parents=True, exist_ok=True)
if "--uncached" in sys.argv:
    vm.cached_mounts = lambda trees: ""
if "--virtiofs-wait" in sys.argv:
    argv_of = vm.vng_argv
    vm.vng_argv = lambda *a, **k: [x for x in argv_of(*a, **k) if x != "--force-9p"]
py = sys.executable
script = f"""
up() {{ cut -d' ' -f1 /proc/uptime; }}
echo "script started at guest uptime $(up)"
grep -c " 9p " /proc/mounts | sed 's/^/9p mounts: /'
t=$(up); {py} -c 'import pandas'; echo "import pandas: $t -> $(up)"
t=$(up); {py} -c 'import pandas'; echo "import pandas again: $t -> $(up)"
t=$(up); for i in $(seq 20); do tc -V >/dev/null; done; echo "20 tc -V: $t -> $(up)"
t=$(up); {py} -m mptcplab.measure.bulk --help >/dev/null; echo "bulk tool's start: $t -> $(up)"
t=$(up); {py} -m mptcplab.measure.bulk --help >/dev/null; echo "bulk tool's start again: $t -> $(up)"
"""


t0 = time.time()
with open(out / "timeline.txt", "w") as f:
    f.write(f"boot started {time.strftime('%H:%M:%S', time.gmtime(t0))} UTC, args {sys.argv[2:]}\n")
    rc = vm.boot(["sh", "-c", script], writable=[out, paths.cache_dir()], stream=Stamped(f, t0),
                 console=out / "vm-console.log")
    f.write(f"[host +{time.time() - t0:6.1f} s] guest exited, status {rc}\n")
print((out / "timeline.txt").read_text())
