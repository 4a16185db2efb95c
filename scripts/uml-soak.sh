#!/bin/sh
# Boot the kit's UML kernel N times in a row with `mptcplab example --where uml` and count kernel
# panics (the time-travel "time goes backwards" panic was intermittent). One line per run in
# OUT/soak.csv: run, exit status, wall seconds, load average, panic (0/1); each run's output in
# OUT/run-N.log. Usage: scripts/uml-soak.sh [N=20] [OUT=results/uml-soak]
#   MPTCPLAB_UML_CLOCK=time-travel=inf-cpu scripts/uml-soak.sh 20   # try another clock
#   LOAD=8 scripts/uml-soak.sh 20     # with 8 busy loops on the host for the whole soak (late
#                                     # host alarms, which the basic time-travel panic needs)
set -u
# shellcheck source=scripts/uml-series.sh
. "$(dirname "$0")/uml-series.sh"
LOAD=${LOAD:-0}
busy_loops "$LOAD"
N=${1:-20}
OUT=${2:-results/uml-soak}
MPTCPLAB=${MPTCPLAB:-mptcplab}
mkdir -p "$OUT"
# shellcheck disable=SC2086  # MPTCPLAB may be a command with arguments ("nice -n -10 mptcplab")
series "$N" "$OUT/soak.csv" "" -- $MPTCPLAB example --where uml --out "$OUT/example"
