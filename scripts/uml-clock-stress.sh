#!/bin/sh
# Boot the kit's UML kernel N times, each running scripts/uml-clock-stress.c (several processes
# reading the clock between short timers) for S seconds under LOAD busy loops on the host, and
# count "time goes backwards" panics. The guest reads the clock and arms timers far more often
# than a lab does (scripts/uml-soak.sh runs the example instead). One line per boot in
# OUT/stress.csv; each boot's console in OUT/run-N.log. A boot takes ~30 s per guest second
# under LOAD=16 on 2 cores (the guest's clock moves 256 ns per read); the limit is 60 s per second.
# Usage: [LOAD=16] scripts/uml-clock-stress.sh [N=10] [S=5] [OUT=results/uml-clock-stress]
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/uml-series.sh
. "$here/uml-series.sh"
N=${1:-10}
S=${2:-5}
OUT=${3:-results/uml-clock-stress}
LOAD=${LOAD:-16}
MPTCPLAB=${MPTCPLAB:-mptcplab}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
gcc -O2 -o "$OUT/uml-clock-stress" "$here/uml-clock-stress.c" || exit 2
busy_loops "$LOAD"
# The kernel's cache key (unpatched or patched) beside each boot.
extra_value() { $MPTCPLAB uml status 2>&1 | grep -o '[^ /]*-[0-9a-f]\{12\}' | head -1; }
# shellcheck disable=SC2086  # MPTCPLAB may be a command with arguments ("python -m mptcplab")
series "$N" "$OUT/stress.csv" kernel -- $MPTCPLAB uml run --timeout $((S * 60 + 300)) -- "$OUT/uml-clock-stress" "$S" 4
