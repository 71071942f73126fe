#!/usr/bin/env bash
# scripts/build-pgo.sh: build sluice with profile-guided optimisation (PGO), the build
# to run in production where CPU per request matters.
#
# Three steps, about 15 minutes on 2 cores:
#   1. an instrumented build (target/pgo-gen), which counts every branch and call;
#   2. a training run on 127.0.0.1: that binary proxies HTTP/1.1, HTTP/1.1 over TLS and
#      HTTP/2 (h2load), new TLS handshakes, and the load generator's own HTTP/1.1 paths
#      (`sluice bench`, both load models), in front of two `sluice backend` servers;
#   3. the optimised build (target/pgo/dist/sluice), which lays the code out by
#      those counts: hot paths together and straight, cold ones (errors, the lab) aside.
#
# Why: sluice's HTTP/2 path runs through the h2, http and rustls crates, whose code
# spread over the binary made the instruction cache miss more than nginx's compact C
# (callgrind, 40 connections at a paced rate: 2,367 hot 64-byte code lines on 207
# pages per request against nginx's 1,692 on 158). With the profile it is 1,711 lines
# on 94 pages, and 18% fewer instructions (39.9k -> 32.7k per HTTP/2 request).
#
# Code the training does not reach (WebSocket tunnels, the lab, the admin API) is laid
# out as cold: still correct, possibly a little slower than in a plain build.
#
# Needs: rustup's llvm-tools component (for llvm-profdata matching rustc's LLVM;
# installed here if missing), h2load (nghttp2-client) and openssl.
#
# Both builds use Cargo.toml's `dist` profile (fat LTO, one codegen unit), or PROFILE's.
#
# Usage: [PROFILE=dist] scripts/build-pgo.sh      (the binary: target/pgo/dist/sluice)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
PROFILE=${PROFILE:-dist}
GEN_DIR=$REPO/target/pgo-gen
OUT_DIR=$REPO/target/pgo
DATA=$GEN_DIR/profiles
WORK=$(mktemp -d /tmp/sluice-pgo.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
log() { echo "[build-pgo $(date +%H:%M:%S)] $*" >&2; }

for tool in h2load openssl; do
    command -v "$tool" >/dev/null || { log "needs $tool (apt-get install nghttp2-client openssl)"; exit 1; }
done
SYSROOT=$(rustc --print sysroot)
PROFDATA=$(find "$SYSROOT" -name llvm-profdata -type f 2>/dev/null | head -n1)
if [[ -z $PROFDATA ]]; then
    log "installing rustup's llvm-tools (llvm-profdata)"
    rustup component add llvm-tools-preview
    PROFDATA=$(find "$SYSROOT" -name llvm-profdata -type f | head -n1)
fi

log "1/3: instrumented build into $GEN_DIR"
rm -rf "$DATA"
RUSTFLAGS="-Cprofile-generate=$DATA" CARGO_TARGET_DIR=$GEN_DIR \
    cargo build --profile "$PROFILE" --locked -p sluice
GEN=$GEN_DIR/$PROFILE/sluice

log "2/3: training on 127.0.0.1"
read -r B1 B2 PLAIN TLS <<<"$("$REPO/scripts/free-ports" 4)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
cat >"$WORK/sluice.toml" <<EOF
workers = 2
[[listener]]
bind = "127.0.0.1:$PLAIN"
[[listener]]
bind = "127.0.0.1:$TLS"
tls = { cert = "$WORK/cert.pem", key = "$WORK/key.pem" }
[[route]]
path = "/"
upstream = "app"
[upstream.app]
balance = "round_robin"
servers = ["127.0.0.1:$B1", "127.0.0.1:$B2"]
keepalive = 128
EOF
SLUICE_LOG=warn "$GEN" backend --workers 1 --listen "127.0.0.1:$B1" --name b1 >"$WORK/b1.log" 2>&1 &
PIDS+=($!)
SLUICE_LOG=warn "$GEN" backend --workers 1 --listen "127.0.0.1:$B2" --name b2 >"$WORK/b2.log" 2>&1 &
PIDS+=($!)
SLUICE_LOG=warn "$GEN" serve -c "$WORK/sluice.toml" >"$WORK/serve.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
    curl -sfk -o /dev/null "https://127.0.0.1:$TLS/" && break
    sleep 0.1
done
train() { log "  $*"; "$@" >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; exit 1; }; }
train h2load --h1 -c 40 -t 1 -n 60000 "http://127.0.0.1:$PLAIN/"
train h2load --h1 -c 40 -t 1 -n 60000 "https://127.0.0.1:$TLS/"
train h2load -c 40 -m 1 -t 1 -n 60000 "https://127.0.0.1:$TLS/"
train h2load -c 16 -m 16 -t 1 -n 60000 "https://127.0.0.1:$TLS/"
# New connections, a full handshake each.
train h2load --h1 -c 500 -t 1 -n 500 "https://127.0.0.1:$TLS/"
train "$GEN" bench -q --users 20 -d 3s "http://127.0.0.1:$PLAIN/"
train "$GEN" bench -q --rate 2000 -d 3s "http://127.0.0.1:$PLAIN/"
# Profiles are written when a process exits: a graceful stop, not a kill.
kill -TERM "${PIDS[@]}"
wait "${PIDS[@]}" || true
PIDS=()
"$PROFDATA" merge -o "$GEN_DIR/merged.profdata" "$DATA"

log "3/3: optimised build into $OUT_DIR"
RUSTFLAGS="-Cprofile-use=$GEN_DIR/merged.profdata" CARGO_TARGET_DIR=$OUT_DIR \
    cargo build --profile "$PROFILE" --locked -p sluice
log "done: $OUT_DIR/$PROFILE/sluice"
