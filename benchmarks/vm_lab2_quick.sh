#!/bin/sh
# Benchmark: a whole quick Lab 2 in the VM place as a fresh clone's `make reproduce` runs it: the
# kit's cache empty but for the VM place's doctor measurements (kvm.json, capabilities-*.json),
# CI=true, no stdin, every line stamped with the host's UTC time. Writes OUT/run.log and
# OUT/reproduce/ (reproduce.json, the sweep), which benchmarks/vm_lab_phases.py tabulates:
#     benchmarks/vm_lab2_quick.sh OUT    # as root, from the checkout; about 9-10 min
# Results: benchmarks/results/vm_run_overhead.md, benchmarks/results/time_ratio.md.
set -eu
OUT=$(realpath -m "${1:?usage: $0 OUT}")
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/cache/mptcplab/vm"
cp "${XDG_CACHE_HOME:-$HOME/.cache}"/mptcplab/vm/kvm.json "${XDG_CACHE_HOME:-$HOME/.cache}"/mptcplab/vm/capabilities-*.json \
    "$OUT/cache/mptcplab/vm/" 2>/dev/null || true
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date -u +%H:%M:%S)" "$line"; done; }
{
    echo "commit $(git -C "$HERE" rev-parse HEAD) dirty=$(git -C "$HERE" status --porcelain | grep -c . || true)" \
         "load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "cache before: $(cd "$OUT/cache" && find . -type f | sort | tr '\n' ' ')"
    { CI=true XDG_CACHE_HOME="$OUT/cache" "$HERE/.venv/bin/mptcplab" reproduce --quick --labs lab2 --where vm \
        --out "$OUT/reproduce" < /dev/null 2>&1; echo $? > "$OUT/status"; } | stdbuf -oL tr '\r' '\n'
    echo "reproduce's exit status $(cat "$OUT/status"), load $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | stamp > "$OUT/run.log"
tail -n 5 "$OUT/run.log"
