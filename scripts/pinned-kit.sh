#!/usr/bin/env bash
# The kit at one commit, for measurements whose manifests must name a clean commit while the
# checkout is being edited: a worktree at COMMIT with a copy of this checkout's venv pointed at it
# (the UML/VM guest runs the host's interpreter, so PYTHONPATH would not reach it). Prints the
# worktree's mptcplab. Made once per DIR; refuses a DIR at another commit.
#
#   scripts/pinned-kit.sh COMMIT DIR
set -euo pipefail
cd "$(dirname "$0")/.."
CHECKOUT=$PWD
commit=$(git rev-parse "$1")
WT=$2
if [[ ! -e $WT/.venv/bin/mptcplab ]]; then
    git worktree add --detach "$WT" "$commit" >&2
    cp -a "$CHECKOUT/.venv" "$WT/.venv"
    echo "$WT/src" > "$(echo "$WT"/.venv/lib/python3*/site-packages)/__editable__.mptcplab-0.1.0.pth"
    grep -l "^#!$CHECKOUT/.venv" "$WT"/.venv/bin/* 2>/dev/null | while read -r f; do
        sed -i "1s|^#!$CHECKOUT/.venv|#!$WT/.venv|" "$f"; done
fi
[[ $(git -C "$WT" rev-parse HEAD) == "$commit" ]] || { echo "pinned kit: $WT is not at $commit" >&2; exit 2; }
echo "$WT/.venv/bin/mptcplab"
