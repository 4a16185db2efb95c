#!/bin/sh
# Benchmark: the README's main job (`sudo make reproduce`) on a fresh clone of this checkout's HEAD,
# with the kit's cache empty (XDG_CACHE_HOME, which every cache of the kit honours: the UML kernel is
# built in the run), stdin closed, every line stamped with the host's UTC time:
#     benchmarks/reproduce_fresh_clone.sh WORKDIR    # as root; about 25-30 min on 2 cores
# Writes WORKDIR/run.log, the clone WORKDIR/clone (its build/reproduce: the report, reproduce.json)
# and WORKDIR/cache. Results: benchmarks/results/reproduce_fresh_clone.md.
set -eu
WORK=$(realpath -m "${1:?usage: $0 WORKDIR}")
HERE=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$WORK/clone" "$WORK/cache"
mkdir -p "$WORK/cache"
git clone -q "$HERE" "$WORK/clone"
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date -u +%H:%M:%S)" "$line"; done; }
{
    echo "START $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git -C "$WORK/clone" rev-parse HEAD)" \
         "XDG_CACHE_HOME=$WORK/cache load $(cut -d' ' -f1-3 /proc/loadavg) cpus $(nproc)"
    { cd "$WORK/clone" && XDG_CACHE_HOME="$WORK/cache" make reproduce < /dev/null 2>&1; echo $? > "$WORK/status"; } \
        | stdbuf -oL tr '\r' '\n'
    echo "END $(date -u +%Y-%m-%dT%H:%M:%SZ) make reproduce exit status $(cat "$WORK/status"), load $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | stamp > "$WORK/run.log"
tail -n 8 "$WORK/run.log"
