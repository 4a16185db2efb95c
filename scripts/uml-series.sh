# shellcheck shell=sh
# Sourced by scripts/uml-soak.sh and scripts/uml-clock-stress.sh: what both do around their
# guest command (host load, one timed run per line, panics counted).

# busy_loops N: N busy loops on the host until the calling script exits (late host alarms, which
# the basic time-travel panic needs); Ctrl-C or kill stops the series too.
busy_loops() {
    hogs=""
    j=0
    while [ "$j" -lt "$1" ]; do
        sh -c 'while :; do :; done' &
        hogs="$hogs $!"
        j=$((j + 1))
    done
    trap '[ -n "$hogs" ] && kill $hogs 2>/dev/null' EXIT
    trap 'exit 130' INT TERM  # stop the loop too, not just the busy loops
}

# series N CSV EXTRA_COLUMN -- CMD...: run CMD N times, its output in run-I.log beside CSV, one
# CSV line per run (run,status,wall_s,load1,panic,clock,hogs[,EXTRA_COLUMN]; the extra column's
# value is the output of the function extra_value, if named); returns non-zero on any panic.
series() {
    n=$1 csv=$2 extra=$3
    shift 4
    dir=$(dirname "$csv")
    echo "run,status,wall_s,load1,panic,clock,hogs${extra:+,$extra}" > "$csv"
    panics=0
    i=1
    while [ "$i" -le "$n" ]; do
        t0=$(date +%s.%N)
        "$@" > "$dir/run-$i.log" 2>&1
        status=$?
        t1=$(date +%s.%N)
        panic=0
        grep -q "Kernel panic" "$dir/run-$i.log" && panic=1 && panics=$((panics + 1))
        load=$(cut -d' ' -f1 /proc/loadavg)
        wall=$(echo "$t1 - $t0" | bc)
        echo "$i,$status,$wall,$load,$panic,${MPTCPLAB_UML_CLOCK:-time-travel},${LOAD:-0}${extra:+,$(extra_value)}" >> "$csv"
        echo "run $i: status $status, ${wall} s, load $load, panic $panic"
        i=$((i + 1))
    done
    echo "$n runs, $panics kernel panic(s): $csv"
    [ "$panics" -eq 0 ]
}
