#!/bin/sh
# Boot the kit's UML kernel N times in a row with `mptcplab example --where uml` and count kernel
# panics (the time-travel "time goes backwards" panic was intermittent). One line per run in
# OUT/soak.csv: run, exit status, wall seconds, load average, panic (0/1); each run's output in
# OUT/run-N.log. Usage: scripts/uml-soak.sh [N=20] [OUT=results/uml-soak]
#   MPTCPLAB_UML_CLOCK=time-travel=inf-cpu scripts/uml-soak.sh 20   # try another clock
#   LOAD=8 scripts/uml-soak.sh 20     # with 8 busy loops on the host for the whole soak (late
#                                     # host alarms, which the basic time-travel panic needs)
set -u
LOAD=${LOAD:-0}
hogs=""
j=0
while [ "$j" -lt "$LOAD" ]; do
    sh -c 'while :; do :; done' &
    hogs="$hogs $!"
    j=$((j + 1))
done
trap '[ -n "$hogs" ] && kill $hogs 2>/dev/null' EXIT
trap 'exit 130' INT TERM  # stop the loop too, not just the busy loops
N=${1:-20}
OUT=${2:-results/uml-soak}
MPTCPLAB=${MPTCPLAB:-mptcplab}
mkdir -p "$OUT"
echo "run,status,wall_s,load1,panic,clock,hogs" > "$OUT/soak.csv"
panics=0
i=1
while [ "$i" -le "$N" ]; do
    t0=$(date +%s.%N)
    $MPTCPLAB example --where uml --out "$OUT/example" > "$OUT/run-$i.log" 2>&1
    status=$?
    t1=$(date +%s.%N)
    panic=0
    grep -q "Kernel panic" "$OUT/run-$i.log" && panic=1 && panics=$((panics + 1))
    load=$(cut -d' ' -f1 /proc/loadavg)
    wall=$(echo "$t1 - $t0" | bc)
    echo "$i,$status,$wall,$load,$panic,${MPTCPLAB_UML_CLOCK:-time-travel},$LOAD" >> "$OUT/soak.csv"
    echo "run $i: status $status, ${wall} s, load $load, panic $panic"
    i=$((i + 1))
done
echo "$N runs, $panics kernel panic(s): $OUT/soak.csv"
[ "$panics" -eq 0 ]
