#!/usr/bin/env bash
# bench/instructions.sh: instructions the proxy executes per request, counted by
# callgrind, for sluice binaries side by side: a measure that noise on a shared machine
# cannot move, for changes too small for bench/compare.sh's CPU times to settle.
#
# Each binary runs `sluice serve` (one worker) under callgrind in front of one `sluice
# backend`, on a plain listener (HTTP/1.1, loaded by h2load --h1) and on a TLS listener
# (HTTP/2 by ALPN, loaded by h2load); each load is run twice, with N and N/10 requests,
# and the difference of the two totals divided by the difference of the requests is the
# cost of a request, start-up and shutdown cancelled out. Loopback only.
#
# Usage: [N=20000] [PROTOCOLS="http1 http2"] [PATHS="/"] [ROUTES=TOML] bench/instructions.sh BINARY [BINARY...]
#   PATHS   the request paths measured, each on its own (e.g. "/plain/a /re/x/a").
#   ROUTES  the config's routes instead of one `[[route]]` to upstream `app` (which
#           they name), e.g. a regex route with a rewrite beside a prefix route.
# Prints a Markdown table: binary, protocol, path, instructions per request.

set -euo pipefail
NAME=instructions
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N=${N:-20000}
PROTOCOLS=${PROTOCOLS:-http1 http2}
PATHS=${PATHS:-/}
ROUTES=${ROUTES:-'[[route]]
upstream = "app"'}
(( $# > 0 )) || { echo "usage: [N=20000] $0 BINARY [BINARY...]" >&2; exit 2; }
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
command -v h2load >/dev/null || { apt-get update -qq && apt-get install -y -qq nghttp2-client; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=localhost -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
read -r BACKEND PLAIN TLS <<<"$("$REPO/scripts/free-ports" 3 | tr "\n" " ")"
"$BIN/sluice" backend --listen "127.0.0.1:$BACKEND" --workers 1 >"$WORK/backend.log" 2>&1 &
PIDS+=($!)
wait_port "$BACKEND" || { log "the backend did not start"; exit 1; }
cat >"$WORK/sluice.toml" <<CFG
workers = 1
[[listener]]
bind = "127.0.0.1:$PLAIN"
[[listener]]
bind = "127.0.0.1:$TLS"
tls = { cert = "$WORK/cert.pem", key = "$WORK/key.pem" }
$ROUTES
[upstream.app]
servers = ["127.0.0.1:$BACKEND"]
CFG

# slow_port PORT: like wait_port, for a server starting under valgrind (60 s at most).
slow_port() {
    for _ in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# total BINARY PROTOCOL REQUESTS PATH: the instructions of one run under callgrind.
total() {
    local bin=$1 proto=$2 n=$3 path=$4 out="$WORK/callgrind.out" pid
    rm -f "$out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" serve --config "$WORK/sluice.toml" \
        >"$WORK/serve.log" 2>&1 &
    pid=$!
    slow_port "$PLAIN" && slow_port "$TLS" || { log "sluice did not start under valgrind"; cat "$WORK/serve.log" >&2; exit 1; }
    case $proto in
        http1) h2load --h1 -n "$n" -c 4 -t 1 "http://127.0.0.1:$PLAIN$path" >"$WORK/load.log" ;;
        http2) h2load -n "$n" -c 4 -m 1 -t 1 "https://127.0.0.1:$TLS$path" >"$WORK/load.log" ;;
    esac
    grep -q "$n succeeded" "$WORK/load.log" || { log "not every request succeeded"; cat "$WORK/load.log" >&2; exit 1; }
    kill -TERM "$pid"
    wait "$pid" || true
    sed -n 's/^summary: //p' "$out"
}

echo "| binary | protocol | path | instructions per request |"
echo "|---|---|---|---:|"
for bin in "$@"; do
    for proto in $PROTOCOLS; do
        for path in $PATHS; do
            small=$(total "$bin" "$proto" $(( N / 10 )) "$path")
            large=$(total "$bin" "$proto" "$N" "$path")
            per=$(( (large - small) / (N - N / 10) ))
            log "$bin $proto $path: $small -> $large"
            echo "| $("$bin" --version 2>/dev/null | head -1) ($bin) | $proto | $path | $per |"
        done
    done
done
