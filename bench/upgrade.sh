#!/usr/bin/env bash
# bench/upgrade.sh: binary upgrades under load (issue 52's proof: "a binary upgrade during
# a `sluice bench` run: 0 failed requests").
#
# sluice (WORKERS workers, an [admin] listener) in front of one `sluice backend`;
# `sluice bench` loads it for DURATION seconds with USERS users, in MODE: keepalive,
# close (a connection per request) or h2 (h2c, 4 streams a connection). Every EVERY
# seconds `sluice upgrade` replaces the running sluice with a new process of the same
# binary, which takes over its listening sockets while the old one drains and exits.
# Prints each upgrade, then one line: requests, failed (with their kinds), upgrades,
# upgrades that failed. Exit 1 when a request or an upgrade failed. Loopback only; the
# run ends by itself.
#
# SLUICE=path/to/sluice runs that binary; else a release build (built if missing, or
# with BUILD=1).
#
# Usage: [DURATION=30] [EVERY=5] [USERS=50] [WORKERS=2] [MODE=keepalive|close|h2]
#        [SLUICE=bin] [BUILD=1] bench/upgrade.sh

set -euo pipefail
DURATION=${DURATION:-30}
EVERY=${EVERY:-5}
USERS=${USERS:-50}
WORKERS=${WORKERS:-2}
MODE=${MODE:-keepalive}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
SLUICE=${SLUICE:-$CARGO_TARGET_DIR/release/sluice}
if [[ ${BUILD:-0} == 1 || ! -x $SLUICE ]]; then
    cargo build --release --locked -p sluice --manifest-path "$REPO/Cargo.toml"
fi
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    # The last sluice is a child of the one it replaced: its pid is in the pid file.
    [[ -f $WORK/sluice.pid ]] && PIDS+=("$(cat "$WORK/sluice.pid")")
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
log() { printf '[upgrade %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# wait_line FILE TEXT: the first line of FILE with TEXT, once it is there (10 s at most).
wait_line() {
    for _ in $(seq 200); do
        grep -m1 -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    log "no '$2' in $1:"; cat "$1" >&2; return 1
}

SLUICE_LOG=info "$SLUICE" backend --listen 127.0.0.1:0 --workers 1 --name app >"$WORK/backend.log" 2>&1 &
PIDS+=($!)
backend=$(wait_line "$WORK/backend.log" "backend serving" | grep -o 'listen=[0-9.:]*' | cut -d= -f2)
http2=""
[[ $MODE == h2 ]] && http2="http2 = true"
cat >"$WORK/sluice.toml" <<EOF
workers = $WORKERS
pid_file = "$WORK/sluice.pid"
[[listener]]
bind = "127.0.0.1:0"
$http2
[[route]]
upstream = "app"
[upstream.app]
servers = ["$backend"]
[admin]
bind = "127.0.0.1:0"
EOF
SLUICE_LOG=warn,sluice_proxy::runtime::server=info NO_COLOR=1 \
    "$SLUICE" serve -c "$WORK/sluice.toml" >"$WORK/sluice.log" 2>&1 &
PIDS+=($!)
addr=$(wait_line "$WORK/sluice.log" "sluice is serving" | grep -o 'listeners=\[[0-9.:]*' | cut -d[ -f2)
case $MODE in
    keepalive) flags=() ;;
    close) flags=(--no-keepalive) ;;
    h2) flags=(--h2 --streams 4) ;;
    *) log "MODE=$MODE: keepalive, close or h2"; exit 2 ;;
esac
log "sluice on $addr ($WORKERS workers), $USERS users, $MODE, ${DURATION}s, an upgrade every ${EVERY}s"
"$SLUICE" bench "http://$addr/" --users "$USERS" -d "${DURATION}s" -q "${flags[@]}" \
    --json "$WORK/bench.json" >"$WORK/bench.out" 2>&1 &
bench=$!
upgrades=0
failed_upgrades=0
for ((at = EVERY; at < DURATION; at += EVERY)); do
    sleep "$EVERY"
    if "$SLUICE" upgrade -c "$WORK/sluice.toml" >"$WORK/upgrade.out" 2>&1; then
        upgrades=$((upgrades + 1))
        log "$(cat "$WORK/upgrade.out")"
    else
        failed_upgrades=$((failed_upgrades + 1))
        log "upgrade failed: $(cat "$WORK/upgrade.out")"
    fi
done
wait "$bench" || { log "sluice bench failed:"; cat "$WORK/bench.out" >&2; }
python3 - "$WORK/bench.json" "$upgrades" "$failed_upgrades" "$MODE" <<'EOF'
import json, sys
step = json.load(open(sys.argv[1]))["steps"][0]
kinds = ", ".join(f"{n} {k}" for k, n in step["error_kinds"].items()) or "none"
print(f"upgrade.sh {sys.argv[4]}: requests {step['samples']}, failed {step['errors']} ({kinds}), "
      f"upgrades {sys.argv[2]}, upgrades failed {sys.argv[3]}")
sys.exit(1 if step["errors"] or int(sys.argv[3]) else 0)
EOF
