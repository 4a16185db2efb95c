#!/usr/bin/env bash
# Lab 1's controls of the held point (issue 37, Lab 1 items 1 and 2): MPTCP with minrtt+rp beside
# single-path TCP on the fast path, the paper's 1 MiB held by SO_SNDBUF 512K, 10 runs each, one arm
# per switch of the network (src/mptcplab/labs/lab1/experiment.toml [network]; what each does and
# does not model: mptcplab.net.topology.SWITCHES). Each arm is 22 runs (also one of each at tcp_wmem
# 1M, which [paper_point] cannot leave out) in the kit's UML kernel, in three shards run one after
# the other (round-robin, so each holds both MPTCP and TCP runs): ONE UML kernel at a time (the
# host-coupling control has not cleared two), nothing else measuring. About 4 min of runs per shard
# at ~29 s of wall-clock time per 10 s run, plus its setup check.
#
#   scripts/lab1-controls.sh plan ARM     the runs of each shard (mptcplab run --dry-run)
#   scripts/lab1-controls.sh ARM          the three shards (each resumes where it stopped), the merge,
#                                         then the arm kept beside the reference as controlled/held-ARM
#
# Arms: base         the held point as shipped, again (the reference's ran two kernels at once)
#       shaper       a token bucket at the paths' rate on the sender's egress, netem delay only
#       offloads     TSO, GSO and GRO on at the hosts
#       tso2         tcp_min_tso_segs 2 on every host (the kernel's own, the paper kernel's)
#       paper_hosts  the three together
#       rmem         the paper's receiver tcp_rmem, 4096 87380 6291456 (6.12 starts at 131072)
#       hz250        the UML kernel at HZ 250, the paper's Ubuntu kernel's (the kit's runs at UML's 100):
#                    a second build, MPTCPLAB_UML_HZ=250 mptcplab uml build (once, ~7 min of both cores);
#                    refused until it is built. Each manifest names the build and its CONFIG_HZ
#                    (platform.uml_kernel, platform.hz).
# Results go to $LAB1_CONTROLS/ARM (default /work/results-lab1-controls); each run's manifest
# reads its switches back (network.switches, host_qdiscs, offloads, sysctls).
#
# From a clean tree, on the reference's commit and kernel build (issue 37): run the kit pinned as the
# reference was, MPTCPLAB=$(scripts/pinned-kit.sh "$(cat solutions/in-progress/lab1/commit)"
# /work/lab1-reference-kit) scripts/lab1-controls.sh ARM; each arm is still kept in this checkout.
# Keep the arms after the reference's export (scripts/lab1-reference.sh export), which replaces
# solutions/results/lab1 and with it every controlled/ folder but the scaled points it re-keeps.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${LAB1_CONTROLS:-/work/results-lab1-controls}
MPTCPLAB=${MPTCPLAB:-.venv/bin/mptcplab}
HELD=(--where uml --set paper_point.only=true --set 'paper_point.schedulers=["minrtt+rp"]'
      --set paper_point.repetitions=1 --set 'paper_point.detail=[]' --set 'paper_point.tso_settings=[]'
      --set 'paper_point.sndbuf_detail=[]' --set 'paper_point.sndbuf="512K"' --set paper_point.sndbuf_repetitions=10)

arm_args() {  # SW: the arm's own --set arguments; KERNEL: its UML kernel (MPTCPLAB_UML_HZ)
    KERNEL=(MPTCPLAB_UML_HZ=100)
    case "$1" in
        base) SW=() ;;
        shaper) SW=(--set network.sender_shaper=true) ;;
        offloads) SW=(--set network.offloads=true) ;;
        tso2) SW=(--set network.min_tso_segs=2) ;;
        paper_hosts) SW=(--set network.sender_shaper=true --set network.offloads=true --set network.min_tso_segs=2) ;;
        rmem) SW=(--set 'sysctls.rcv."net.ipv4.tcp_rmem"="4096 87380 6291456"') ;;
        hz250) SW=(); KERNEL=(MPTCPLAB_UML_HZ=250) ;;
        *) echo "unknown arm '$1': base shaper offloads tso2 paper_hosts rmem hz250" >&2; exit 2 ;;
    esac
}

case "${1:-}" in
    plan)
        arm_args "${2:?plan ARM}"
        for k in 1 2 3; do env "${KERNEL[@]}" "$MPTCPLAB" run lab1 "${HELD[@]}" "${SW[@]}" --shard "$k/3" --out "$OUT/$2-$k" --dry-run; done ;;
    "")
        sed -n '2,24p' "$0" ;;
    *)
        arm_args "$1"
        if [[ ${KERNEL[0]} != MPTCPLAB_UML_HZ=100 ]]; then  # a kit older than the variant would boot its HZ 100 kernel
            status=$(env "${KERNEL[@]}" "$MPTCPLAB" uml status) || { echo "$status" >&2; exit 2; }
            [[ $status == *-hz${KERNEL[0]#*=}-* ]] || { echo "$MPTCPLAB has no ${KERNEL[0]} kernel: $status" >&2; exit 2; }
        fi
        for k in 1 2 3; do sudo env "${KERNEL[@]}" "$MPTCPLAB" run lab1 "${HELD[@]}" "${SW[@]}" --shard "$k/3" --out "$OUT/$1-$k"; done
        "$MPTCPLAB" merge "$OUT/$1-1" "$OUT/$1-2" "$OUT/$1-3" --out "$OUT/$1"
        # kept beside the reference, where Lab 1's ledger reads it (claims.HELD_ARMS; base: no cause)
        "$MPTCPLAB" notebooks reference lab1 "$OUT/$1" --controlled "held-$1" --dest "$PWD/solutions/results/lab1" ;;
esac
