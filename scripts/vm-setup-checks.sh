#!/bin/sh
# The VM place's setup check for a lab, N times in a row in one guest (`mptcplab run LAB --where vm
# --check-setup N`): does the place pass its own check dependably, idle and under load? The table
# of every attempt (lowest and median ping RTT per path against its bound, the place's own
# latency floor and spread, single-path TCP) is OUT/setup-checks.csv; the host's load average
# each minute is OUT/load.csv. Usage: scripts/vm-setup-checks.sh [LAB=lab2] [N=10] [OUT=results/vm-setup-checks]
#   LOAD=2 scripts/vm-setup-checks.sh lab2 10 results/vm-setup-checks-load2   # 2 busy loops on the host
set -u
# shellcheck source=scripts/uml-series.sh
. "$(dirname "$0")/uml-series.sh"
LAB=${1:-lab2}
N=${2:-10}
OUT=${3:-results/vm-setup-checks}
MPTCPLAB=${MPTCPLAB:-mptcplab}
mkdir -p "$OUT"
echo "time,load1,load5,hogs" > "$OUT/load.csv"
t0=$(date +%s)
# shellcheck disable=SC2086  # MPTCPLAB may be a command with arguments
{ $MPTCPLAB run "$LAB" --where vm --quick --check-setup "$N" --out "$OUT" 2>&1; echo $? > "$OUT/status"; } \
    > "$OUT/run.log" &
runner=$!
# The load starts once the guest is up (the kit's experiment lock taken), never while waiting
# behind another experiment, which it would disturb.
until grep -q "running in a VM" "$OUT/run.log" || [ -s "$OUT/status" ]; do sleep 2; done
busy_loops "${LOAD:-0}"
( while :; do echo "$(date -u +%H:%M:%S),$(cut -d' ' -f1,2 /proc/loadavg | tr ' ' ,),${LOAD:-0}" >> "$OUT/load.csv"; sleep 60; done ) &
sampler=$!
wait "$runner"
cat "$OUT/run.log"
status=$(cat "$OUT/status")
kill "$sampler" 2>/dev/null
echo "$N setup checks of $LAB in the VM place with ${LOAD:-0} busy loops: $(($(date +%s) - t0)) s, see $OUT/setup-checks.csv"
exit "$status"
