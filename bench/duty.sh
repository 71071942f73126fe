#!/usr/bin/env bash
# bench/duty.sh: how closely the lab's user-space CPU budget (SIGSTOP/SIGCONT duty cycle,
# crates/sluice-process/src/cpu_duty.rs) holds a share, against a cgroup quota on this
# machine: busy loops held to 0.25, 0.5 and 1 CPU (crates/sluice-process/examples/
# duty_precision.rs). Run as root for the cgroup column. Only local busy loops; no network.
#
# Usage: [SECS=10] bench/duty.sh    Results: bench/runs/<date>-duty/summary.md
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
SECS=${SECS:-10}
(cd "$REPO" && cargo build --locked --release -p sluice-process --example duty_precision)
OUT=$REPO/bench/runs/$(date +%F)-duty
n=2; while [ -e "$OUT" ]; do OUT=$REPO/bench/runs/$(date +%F)-duty-$n; n=$((n + 1)); done
mkdir -p "$OUT"
{
    echo "# The lab's duty cycle against a cgroup quota ($(nproc) cores, $SECS s each)"
    echo
    echo "command: \`SECS=$SECS bench/duty.sh\` (as $(id -un)); each row's CPU is the busy"
    echo "loops' whole tree from /proc, over $SECS s after a second to settle."
    echo
    SECS=$SECS "$CARGO_TARGET_DIR/release/examples/duty_precision"
} >"$OUT/summary.md"
cat "$OUT/summary.md"
