#!/usr/bin/env bash
# Lab 1's reference, re-made from a clean tree in the kit's UML kernel (issue 24, deliverable 5):
# the sweep, the paper's point with each scheduler (held 1 MiB: 10 runs per side), the
# tcp_min_tso_segs control, the detailed runs, the second place's scaled point (UML and the VM),
# then the export to solutions/results/lab1. About 3 h of measurement, in steps of at most
# ~25 min so it can run across sessions; each step resumes where it stopped.
#
#   scripts/lab1-reference.sh plan        every measuring step's runs (mptcplab run --dry-run)
#   scripts/lab1-reference.sh next        the first step not done yet (run it again for the next)
#   scripts/lab1-reference.sh STEP        one step by name; `status` lists them and which are done
#
# Steps: shard-1 .. shard-10  the lab's whole experiment.toml split round-robin (mptcplab.run.shards),
#                             about 40 runs each: ~20 min at ~29 s of wall-clock time per 10 s run
#                             in UML (the last reference's mean, runs-manifest.csv host_wall_s)
#        merge                the shards into one directory (mptcplab merge; seconds)
#        complete             the detailed run at the sweep's most degraded buffer and its controls,
#                             then the analysis (`mptcplab run` on the merged directory; ~10 min)
#        scaled-uml           the paper's point at 1/20 in UML (second_place.py; 8 runs, ~5 min)
#        scaled-vm            the same in the VM place, stock kernel under QEMU TCG (8 runs; not
#                             timed yet: its setup check may refuse a busy host, then run it again)
#        export               solutions/results/lab1 from the merged run, then each scaled run kept
#                             beside it (--controlled); then `mptcplab notebooks assign` (otter
#                             assign runs the solution notebooks' tests against the new tables and
#                             writes the student notebooks), the guide's tables by hand
#
# Results stay outside the checkout, in $LAB1_REF (default /work/results-lab1-reference): never
# delete them; the export copies compact tables only. Needs root (namespaces), the UML kernel
# built from this checkout's vagrant/uml/ (`mptcplab uml build`; its cache key is in each
# manifest's platform.uml_kernel), and nothing else measuring (the kit's lock serialises runs).
#
# Across sessions on fresh machines: `mptcplab merge` refuses shards of different kit commits, so
# the first measuring step pins the commit it ran at (a clean tree) in $STASH/commit, and every
# step runs the kit of that commit from a worktree ($LAB1_WT) with its own copy of the venv. After
# each measuring step its results are packed into $STASH/STEP.tar.xz (in the checkout: commit it;
# ~3 KB per sweep run: manifest and summary only, which is all merge and the analysis read; the
# detailed runs but their pcaps and the raw traces the export drops too, mptcp_events.csv and
# ss.txt), and `next`/`status` unpack what the results directory lacks.
#
#   scripts/lab1-reference.sh stash STEP  pack a done step again (each measuring step packs itself)
#   scripts/lab1-reference.sh pair        the next two shards at once, one UML kernel each (2 cores;
#                                         each shard runs its own setup check under the other's load)
set -euo pipefail

cd "$(dirname "$0")/.."
CHECKOUT=$PWD
REF=${LAB1_REF:-/work/results-lab1-reference}
STASH=${LAB1_STASH:-$CHECKOUT/solutions/in-progress/lab1}
WT=${LAB1_WT:-/work/lab1-reference-kit}
SHARDS=10
# The second place's point: the commands of src/mptcplab/labs/lab1/experiment.toml ([paper_point] scale).
SCALED=(--set paper_point.only=true --set paper_point.scale=20 --set 'paper_point.schedulers=["default"]'
        --set 'paper_point.detail=[]' --set 'paper_point.tso_settings=[]' --set 'paper_point.sndbuf=""'
        --set paper_point.repetitions=4 --set paths.fast.delay=1ms)
STEPS=()
for k in $(seq 1 $SHARDS); do STEPS+=("shard-$k"); done
STEPS+=(merge complete scaled-uml scaled-vm export)

done_mark() { echo "$REF/.done-$1"; }

# The kit at the pinned commit (scripts/pinned-kit.sh: a worktree with its own copy of the venv).
kit() {
    if [[ ! -e $STASH/commit ]]; then
        [[ -z $(git status --porcelain --untracked-files=no) ]] || { echo "lab1 reference: commit first (the runs record the commit they ran at)" >&2; exit 2; }
        mkdir -p "$STASH"; git rev-parse HEAD > "$STASH/commit"
    fi
    scripts/pinned-kit.sh "$(cat "$STASH/commit")" "$WT"
}

# A measuring step's results into the checkout (sweep runs: manifest and summary; detailed runs
# without their raw captures and traces).
stash() {
    local step=$1 dir=$1 files
    case $step in merge|complete) dir=merged ;; esac
    mkdir -p "$STASH"
    mapfile -t files < <(cd "$REF" && { find "$dir" -maxdepth 1 -name '*.json'; find "$dir" -mindepth 2 -maxdepth 2 \
        \( -name manifest.json -o -name summary.json -o \( -path '*detail*' ! -name '*.pcap' ! -name mptcp_events.csv \
        ! -name ss.txt \) \); } | grep -v '\.partial/')
    (cd "$REF" && tar -cJf "$STASH/$step.tar.xz" "${files[@]}" .done-"$step")
    echo "lab1 reference: $step packed into $STASH/$step.tar.xz ($(du -h "$STASH/$step.tar.xz" | cut -f1)); commit it"
}

unstash() {
    local t step
    for t in "$STASH"/*.tar.xz; do
        [[ -e $t ]] || continue
        step=$(basename "$t" .tar.xz)
        [[ -e $(done_mark "$step") ]] && continue
        mkdir -p "$REF"; tar -xJf "$t" -C "$REF"
        echo "lab1 reference: $step unpacked from $t"
    done
}

# The steps packed into the checkout: every one that measures, and the merge the detailed runs join.
stashed() { case $1 in shard-*|merge|complete|scaled-uml|scaled-vm) return 0;; *) return 1;; esac; }

run_step() {
    local step=$1 MPTCPLAB
    MPTCPLAB=$(kit)
    case $step in
    shard-*)
        local k=${step#shard-}
        "$MPTCPLAB" run lab1 --where uml --shard "$k/$SHARDS" --out "$REF/$step" ;;
    merge)
        local dirs=()
        for k in $(seq 1 $SHARDS); do dirs+=("$REF/shard-$k"); done
        "$MPTCPLAB" merge --out "$REF/merged" "${dirs[@]}" ;;
    complete)
        "$MPTCPLAB" run lab1 --where uml --out "$REF/merged" ;;
    scaled-uml)
        "$MPTCPLAB" run lab1 --where uml --out "$REF/scaled-uml" "${SCALED[@]}" ;;
    scaled-vm)
        "$MPTCPLAB" run lab1 --where vm --out "$REF/scaled-vm" "${SCALED[@]}" ;;
    export)
        # The tcp_min_tso_segs 2 control's tcp-slow runs at 128K break physics by design (the kernel's
        # overrun the kit's 64 fixes), each with its cause measured: read every line before committing.
        "$MPTCPLAB" check "$REF/merged" | tee "$REF/check.txt" || echo "check: verdicts outside physics above"
        # into this checkout (the pinned kit's own default would be its worktree's copy)
        "$MPTCPLAB" notebooks reference lab1 "$REF/merged" --dest "$CHECKOUT/solutions/results/lab1"
        "$MPTCPLAB" notebooks reference lab1 "$REF/scaled-uml" --controlled scaled-uml --dest "$CHECKOUT/solutions/results/lab1"
        "$MPTCPLAB" notebooks reference lab1 "$REF/scaled-vm" --controlled scaled-vm --dest "$CHECKOUT/solutions/results/lab1" ;;
    *)
        echo "unknown step: $step (steps: ${STEPS[*]})" >&2; return 2 ;;
    esac
    mkdir -p "$REF"
    date -u +%FT%TZ > "$(done_mark "$step")"
    if stashed "$step"; then stash "$step"; fi
}

plan_step() {
    local step=$1 MPTCPLAB=.venv/bin/mptcplab
    [[ -e $STASH/commit ]] && MPTCPLAB=$(kit)  # planning pins nothing
    case $step in
    shard-*) "$MPTCPLAB" run lab1 --where uml --shard "${step#shard-}/$SHARDS" --out "$REF/$step" --dry-run ;;
    complete) "$MPTCPLAB" run lab1 --where uml --out "$REF/merged" --dry-run ;;
    scaled-uml) "$MPTCPLAB" run lab1 --where uml --out "$REF/scaled-uml" "${SCALED[@]}" --dry-run ;;
    scaled-vm) "$MPTCPLAB" run lab1 --where vm --out "$REF/scaled-vm" "${SCALED[@]}" --dry-run ;;
    *) echo "$step: measures nothing" ;;
    esac
}

unstash
case ${1:-status} in
pair)
    todo=()
    for s in "${STEPS[@]}"; do
        [[ $s == shard-* && ! -e $(done_mark "$s") ]] && todo+=("$s")
    done
    (( ${#todo[@]} )) || { echo "lab1 reference: every shard is done"; exit 0; }
    kit > /dev/null  # the worktree, once, before two steps would make it at the same time
    mkdir -p "$REF"; pids=()
    for s in "${todo[@]:0:2}"; do
        echo "lab1 reference: step $s (results in $REF, log $REF/$s.log)"
        MPTCPLAB_LOCK=/run/mptcplab/lab1-reference-$s.lock "$0" "$s" > "$REF/$s.log" 2>&1 & pids+=($!)
    done
    rc=0; for p in "${pids[@]}"; do wait "$p" || rc=1; done
    exit $rc ;;
stash)
    stash "${2:?which step}" ;;
plan)
    for s in "${STEPS[@]}"; do echo "== $s"; plan_step "$s"; done ;;
status)
    for s in "${STEPS[@]}"; do
        if [[ -e $(done_mark "$s") ]]; then echo "$s: done $(cat "$(done_mark "$s")")"; else echo "$s: to do"; fi
    done ;;
next)
    for s in "${STEPS[@]}"; do
        [[ -e $(done_mark "$s") ]] && continue
        echo "lab1 reference: step $s (results in $REF)"; run_step "$s"; exit
    done
    echo "lab1 reference: every step is done (results in $REF)" ;;
*)
    run_step "$1" ;;
esac
