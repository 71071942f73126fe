#!/usr/bin/env bash
# bench/idle.sh: what idle client connections cost sluice, nginx and HAProxy, in one run.
#
# Each balancer (2 workers) sits in front of one `sluice backend`, with the same limits:
# 5 s for a request head (sluice header_timeout, nginx client_header_timeout, HAProxy
# timeout http-request) and 60 s of keep-alive idleness. `idle_clients`
# (crates/sluice-lab/examples) measures two things per balancer:
#   1. keep-alive: CLIENTS connections each send one GET, read the response, and stay
#      idle; the balancer's resident memory (whole process tree) before and after;
#   2. silent: SILENT connections that send nothing; when the balancer closes them.
# Repeated RUNS times, balancers interleaved; medians, and ratios to nginx.
# BASELINE=/path/to/an/older/sluice adds it as `sluice-base`, for before/after figures
# in the same run. Loopback only; every step has a deadline.
#
# Usage: [RUNS=3] [CLIENTS=5000] [SILENT=2000] [BASELINE=bin] bench/idle.sh
# Results: bench/runs/<date>-idle/ (results.jsonl, configs, summary.md).

set -euo pipefail
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-5000}
SILENT=${SILENT:-2000}
BASELINE=${BASELINE:-}
NAME=idle
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(cd "$REPO" && cargo build --release -p sluice -p sluice-lab --example idle_clients)

BACKEND=127.0.0.1:19601
declare -A PORT=([sluice]=19610 [nginx]=19611 [haproxy]=19612 [sluice-base]=19613)
BALANCERS=(nginx haproxy sluice)
[[ -n $BASELINE ]] && BALANCERS+=(sluice-base)

write_configs() {
    local name
    for name in sluice sluice-base; do
        # The baseline predates keepalive_timeout: its client_idle_timeout played that part.
        local idle="keepalive_timeout = \"60s\""
        [[ $name == sluice-base ]] && idle="client_idle_timeout = \"60s\""
        cat >"$WORK/$name.toml" <<CFG
workers = 2
header_timeout = "5s"
$idle
[[listener]]
bind = "127.0.0.1:${PORT[$name]}"
[[route]]
upstream = "app"
[upstream.app]
servers = ["$BACKEND"]
CFG
    done
    mkdir -p "$WORK/nginx"
    cat >"$WORK/nginx/nginx.conf" <<CFG
worker_processes 2;
worker_rlimit_nofile $NOFILE;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 20000; }
http {
    access_log off;
    client_header_timeout 5s;
    keepalive_timeout 60s;
    keepalive_requests 1000000;
    client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fcgi; uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
    upstream app { server $BACKEND; keepalive 128; }
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location / {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CFG
    local maxconn=$(( (NOFILE - 500) / 2 ))
    cat >"$WORK/haproxy.cfg" <<CFG
global
    nbthread 2
    maxconn $maxconn
defaults
    mode http
    option http-keep-alive
    http-reuse always
    maxconn $maxconn
    timeout connect 5s
    timeout client 60s
    timeout server 30s
    timeout http-request 5s
    timeout http-keep-alive 60s
frontend fe
    bind 127.0.0.1:${PORT[haproxy]}
    default_backend app
backend app
    server b1 $BACKEND
CFG
}

# start NAME: starts the balancer, prints its pid.
start() {
    case $1 in
        sluice) SLUICE_LOG=warn "$BIN/sluice" serve -c "$WORK/sluice.toml" >>"$WORK/sluice.log" 2>&1 & ;;
        sluice-base) SLUICE_LOG=warn "$BASELINE" serve -c "$WORK/sluice-base.toml" >>"$WORK/sluice-base.log" 2>&1 & ;;
        nginx) nginx -c "$WORK/nginx/nginx.conf" -g 'daemon off;' >>"$WORK/nginx.log" 2>&1 & ;;
        haproxy) haproxy -f "$WORK/haproxy.cfg" -db >>"$WORK/haproxy.log" 2>&1 & ;;
    esac
    echo $!
}

# measure LB RUN OUT: both measurements on a freshly started balancer each.
measure() {
    local lb=$1 run=$2 out=$3 pid line
    pid=$(start "$lb")
    wait_port "${PORT[$lb]}" || { log "$lb did not start:"; tail -5 "$WORK/$lb.log" >&2; exit 1; }
    sleep 0.5
    log "run $run: $lb: $CLIENTS idle keep-alive clients"
    line=$(timeout 300 "$BIN/examples/idle_clients" keepalive "127.0.0.1:${PORT[$lb]}" "$CLIENTS" "$pid" 4)
    echo "{\"balancer\":\"$lb\",\"run\":$run,\"test\":\"keepalive\",${line#\{}" | tee -a "$out/results.jsonl"
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sleep 1
    pid=$(start "$lb")
    wait_port "${PORT[$lb]}" || exit 1
    sleep 0.5
    log "run $run: $lb: $SILENT silent connections"
    line=$(timeout 120 "$BIN/examples/idle_clients" silent "127.0.0.1:${PORT[$lb]}" "$SILENT" 4)
    echo "{\"balancer\":\"$lb\",\"run\":$run,\"test\":\"silent\",${line#\{}" | tee -a "$out/results.jsonl"
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    sleep 1
}

main() {
    write_configs
    local out n=2
    out=$REPO/bench/runs/$(date +%Y-%m-%d)-idle
    local base=$out
    while [[ -e $out ]]; do out=$base-$n; n=$((n + 1)); done
    mkdir -p "$out"
    "$BIN/sluice" backend --listen "$BACKEND" --name app --workers 1 2>/dev/null &
    PIDS+=($!)
    wait_port "${BACKEND##*:}"
    : >"$out/results.jsonl"
    for run in $(seq "$RUNS"); do
        for lb in "${BALANCERS[@]}"; do measure "$lb" "$run" "$out"; done
    done
    cp "$WORK"/*.toml "$WORK/nginx/nginx.conf" "$WORK/haproxy.cfg" "$out/"
    summarise "$out" | tee "$out/summary.md"
}

summarise() {
    python3 - "$1" "$RUNS" "$CLIENTS" "$SILENT" "$(git -C "$REPO" rev-parse --short HEAD)" "${BASELINE:+$("$BASELINE" --version 2>&1 | head -1)}" "${BALANCERS[@]}" <<'PY'
import json, statistics, sys
out, runs, clients, silent, commit, base = sys.argv[1:7]
balancers = sys.argv[7:]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
def med(lb, test, key):
    vals = [r[key] for r in rows if r["balancer"] == lb and r["test"] == test and r[key] is not None]
    return statistics.median(vals) if vals else None
print(f"# Idle client connections, medians of {runs} runs (sluice {commit})\n")
cmd = f"RUNS={runs} CLIENTS={clients} SILENT={silent}" + (" BASELINE=..." if base else "") + " bench/idle.sh"
print(f"command: `{cmd}`" + (f"; sluice-base: {base}" if base else "") + "\n")
print(f"| balancer | KiB per idle keep-alive client ({clients}) | ×nginx | RSS after (MiB) | silent ({silent}) closed | first close (s) | median close (s) | last close (s) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
ng = med("nginx", "keepalive", "kib_per_client")
fmt = lambda v, f: f.format(v) if v is not None else "n/a"
for lb in balancers:
    kib = med(lb, "keepalive", "kib_per_client")
    rss = med(lb, "keepalive", "rss_after_kib")
    print(f"| {lb} | {fmt(kib, '{:.2f}')} | {fmt(kib / ng if kib is not None and ng else None, '{:.2f}×')} | {fmt(rss and rss / 1024, '{:.1f}')} "
          f"| {fmt(med(lb, 'silent', 'closed'), '{:.0f}')} | {fmt(med(lb, 'silent', 'close_min_s'), '{:.2f}')} "
          f"| {fmt(med(lb, 'silent', 'close_p50_s'), '{:.2f}')} | {fmt(med(lb, 'silent', 'close_max_s'), '{:.2f}')} |")
PY
}

main "$@"
