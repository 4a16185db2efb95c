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
N=${1:-10}
S=${2:-5}
OUT=${3:-results/uml-clock-stress}
LOAD=${LOAD:-16}
MPTCPLAB=${MPTCPLAB:-mptcplab}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
gcc -O2 -o "$OUT/uml-clock-stress" "$here/uml-clock-stress.c" || exit 2
hogs=""
j=0
while [ "$j" -lt "$LOAD" ]; do
    sh -c 'while :; do :; done' &
    hogs="$hogs $!"
    j=$((j + 1))
done
trap '[ -n "$hogs" ] && kill $hogs 2>/dev/null' EXIT
trap 'exit 130' INT TERM  # stop the loop too, not just the busy loops
echo "run,status,wall_s,load1,panic,clock,hogs,kernel" > "$OUT/stress.csv"
panics=0
i=1
while [ "$i" -le "$N" ]; do
    t0=$(date +%s.%N)
    $MPTCPLAB uml run --timeout $((S * 60 + 300)) -- "$OUT/uml-clock-stress" "$S" 4 > "$OUT/run-$i.log" 2>&1
    status=$?
    t1=$(date +%s.%N)
    panic=0
    grep -q "Kernel panic" "$OUT/run-$i.log" && panic=1 && panics=$((panics + 1))
    load=$(cut -d' ' -f1 /proc/loadavg)
    wall=$(echo "$t1 - $t0" | bc)
    kernel=$($MPTCPLAB uml status 2>&1 | grep -o '[^ /]*-[0-9a-f]\{12\}' | head -1)
    echo "$i,$status,$wall,$load,$panic,${MPTCPLAB_UML_CLOCK:-time-travel},$LOAD,$kernel" >> "$OUT/stress.csv"
    echo "run $i: status $status, ${wall} s, load $load, panic $panic"
    i=$((i + 1))
done
echo "$N boots, $panics kernel panic(s): $OUT/stress.csv"
[ "$panics" -eq 0 ]
