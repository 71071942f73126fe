#!/usr/bin/env bash
# bench/tunnels.sh: memory per idle WebSocket tunnel, and echo latency with all of them
# open, for sluice, nginx and HAProxy on this machine, in one run.
#
# Each balancer (2 workers) sits in front of one `sluice backend` (a WebSocket echo
# server). `ws_tunnels` (crates/sluice-process/examples) opens TUNNELS WebSockets through it
# from 127.0.0.2-5 (so ephemeral ports do not run out), reads the balancer's resident
# memory (its whole process tree) before and after, then times 2,000 echoes on random
# tunnels while all stay open. Repeated RUNS times, balancers interleaved; medians and
# ratios to nginx. Loopback only; every step has a deadline.
#
# Usage: [RUNS=3] [TUNNELS=9000] bench/tunnels.sh
# TUNNELS defaults to 9,000: each tunnel holds two descriptors in the balancer, and this
# machine's hard limit is 20,000 per process. Results: bench/runs/<date>-tunnels/.

set -euo pipefail
RUNS=${RUNS:-3}
TUNNELS=${TUNNELS:-9000}
NAME=tunnels
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Two builds: with `--example`, cargo builds only the example, not sluice itself.
(cd "$REPO" && cargo build --locked --release -p sluice && cargo build --locked --release -p sluice-process --example ws_tunnels)

BACKEND=127.0.0.1:19501
declare -A PORT=([sluice]=19510 [nginx]=19511 [haproxy]=19512)

write_configs() {
    cat >"$WORK/sluice.toml" <<CFG
workers = 2
[[listener]]
bind = "127.0.0.1:${PORT[sluice]}"
[[route]]
upstream = "ws"
[upstream.ws]
servers = ["$BACKEND"]
CFG
    mkdir -p "$WORK/nginx"
    cat >"$WORK/nginx/nginx.conf" <<CFG
worker_processes 2;
worker_rlimit_nofile $NOFILE;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 20000; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fcgi; uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location / {
            proxy_pass http://$BACKEND;
            proxy_http_version 1.1;
            proxy_set_header Upgrade \$http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_read_timeout 3600s;
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
    maxconn $maxconn
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout tunnel 1h
frontend fe
    bind 127.0.0.1:${PORT[haproxy]}
    default_backend ws
backend ws
    server b1 $BACKEND
CFG
}

main() {
    write_configs
    local out
    out=$(new_run_dir tunnels)
    "$BIN/sluice" backend --listen "$BACKEND" --name echo --workers 1 2>/dev/null &
    PIDS+=($!)
    wait_port "${BACKEND##*:}"
    : >"$out/results.jsonl"
    for run in $(seq "$RUNS"); do
        for lb in nginx haproxy sluice; do
            local pid
            pid=$(start_balancer "$lb")
            PIDS+=("$pid")
            wait_port "${PORT[$lb]}" || { log "$lb did not start:"; tail -5 "$WORK/$lb.log" >&2; exit 1; }
            sleep 0.5
            log "run $run: $lb: $TUNNELS tunnels"
            local line
            line=$(timeout 300 "$BIN/examples/ws_tunnels" "127.0.0.1:${PORT[$lb]}" "$TUNNELS" "$pid" 4)
            echo "{\"balancer\":\"$lb\",\"run\":$run,${line#\{}" | tee -a "$out/results.jsonl"
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            sleep 1
        done
    done
    cp "$WORK/sluice.toml" "$WORK/nginx/nginx.conf" "$WORK/haproxy.cfg" "$out/"
    summarise "$out" | tee "$out/summary.md"
}

summarise() {
    python3 - "$1" "$TUNNELS" "$RUNS" "$(git -C "$REPO" rev-parse --short HEAD)" <<'PY'
import json, statistics, sys
out, tunnels, runs, commit = sys.argv[1:5]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
med = lambda lb, k: statistics.median(r[k] for r in rows if r["balancer"] == lb)
print(f"# Idle WebSocket tunnels: {tunnels} per balancer, medians of {runs} runs (sluice {commit})\n")
print("command: `RUNS=%s TUNNELS=%s bench/tunnels.sh`\n" % (runs, tunnels))
print("| balancer | KiB per idle tunnel | ×nginx | echo p50 (ms) | echo p99 (ms) | ×nginx (p99) |")
print("|---|---:|---:|---:|---:|---:|")
for lb in ["sluice", "nginx", "haproxy"]:
    kib, p50, p99 = med(lb, "kib_per_tunnel"), med(lb, "echo_p50_ms"), med(lb, "echo_p99_ms")
    print(f"| {lb} | {kib:.2f} | {kib / med('nginx', 'kib_per_tunnel'):.2f}× | {p50:.3f} | {p99:.3f} | {p99 / med('nginx', 'echo_p99_ms'):.2f}× |")
PY
}

main "$@"
