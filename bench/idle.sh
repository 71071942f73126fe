#!/usr/bin/env bash
# bench/idle.sh: what idle client connections cost sluice, nginx and HAProxy, in one run.
#
# Each balancer (2 workers) sits in front of one `sluice backend`, with the same limits:
# 5 s for a request head (sluice header_timeout, nginx client_header_timeout, HAProxy
# timeout http-request) and 60 s of keep-alive idleness, and a TLS listener offering
# HTTP/2 with the same certificate. `idle_clients` (crates/sluice-process/examples) measures,
# each on a freshly started balancer:
#   1. keep-alive: CLIENTS connections each send one GET, read the response, and stay
#      idle; the balancer's resident memory (whole process tree) before and after;
#   2. burst: the same CLIENTS connections with all their requests in flight at once,
#      then idle: what the balancer still holds once the burst's buffers were freed;
#   3. h2: H2_CLIENTS HTTP/2 connections over TLS, one request each, then idle;
#   4. https: HTTPS_CLIENTS HTTP/1.1 keep-alive connections over TLS (ALPN http/1.1),
#      one request each, one after another, then idle;
#   5. silent: SILENT connections that send nothing; when the balancer closes them.
# Before measuring 1-4, idle_clients warms the balancer up with 20 connections of the
# same kind, closes them and waits 5 s, so that the figure is what each client adds,
# not the code and first allocations the first requests bring in once. The resident
# memory is reported whole and, apart, its anonymous part (without file pages).
# Client sources are spread over 127.0.0.2 .. 127.0.0.(1 + SOURCES), so 100,000 clients
# (CLIENTS=100000 SOURCES=8) do not run out of ephemeral ports.
# Repeated RUNS times, balancers interleaved; medians, and ratios to nginx.
# BASELINE=/path/to/an/older/sluice adds it as `sluice-base`, for before/after figures
# in the same run. Loopback only; every step has a deadline.
#
# ONLY and TESTS narrow a run to some balancers and measurements (a sluice-only burst at
# several sizes, say); the default is all of both.
#
# Usage: [RUNS=3] [CLIENTS=5000] [H2_CLIENTS=1000] [HTTPS_CLIENTS=1000] [SILENT=2000] [SOURCES=4] [BASELINE=bin]
#        [ONLY="nginx haproxy sluice"] [TESTS="keepalive burst h2 https silent"] bench/idle.sh
# Results: bench/runs/<date>-idle/ (summary.md, results.jsonl; the configs in raw.tar.xz).

set -euo pipefail
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-5000}
H2_CLIENTS=${H2_CLIENTS:-1000}
HTTPS_CLIENTS=${HTTPS_CLIENTS:-1000}
SILENT=${SILENT:-2000}
SOURCES=${SOURCES:-4}
BASELINE=${BASELINE:-}
TESTS=${TESTS:-keepalive burst h2 https silent}
for test in $TESTS; do
    case $test in keepalive | burst | h2 | https | silent) ;; *) echo "unknown test $test (keepalive, burst, h2, https, silent)" >&2; exit 2 ;; esac
done
NAME=idle
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Two builds: with `--example`, cargo builds only the example, not sluice itself.
(cd "$REPO" && cargo build --locked --release -p sluice && cargo build --locked --release -p sluice-process --example idle_clients)

BACKEND=127.0.0.1:19601
declare -A PORT=([sluice]=19610 [nginx]=19611 [haproxy]=19612 [sluice-base]=19613)
declare -A TLS_PORT=([sluice]=19620 [nginx]=19621 [haproxy]=19622 [sluice-base]=19623)
NAME_TLS=idle.test
read -ra BALANCERS <<<"${ONLY:-nginx haproxy sluice}"
[[ -n $BASELINE ]] && BALANCERS+=(sluice-base)

# A test CA and a certificate for NAME_TLS signed by it (the h2 clients trust the CA).
make_certificates() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
        -subj /CN=idle-test-ca -keyout "$WORK/ca.key" -out "$WORK/ca.pem" 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -subj "/CN=$NAME_TLS" -keyout "$WORK/key.pem" -out "$WORK/cert.csr" 2>/dev/null
    printf 'subjectAltName=DNS:%s\nbasicConstraints=critical,CA:FALSE\n' "$NAME_TLS" >"$WORK/ext.cnf"
    openssl x509 -req -in "$WORK/cert.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" \
        -CAcreateserial -days 7 -extfile "$WORK/ext.cnf" -out "$WORK/cert.pem" 2>/dev/null
    cat "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/haproxy.pem"
}

write_configs() {
    local name
    make_certificates
    for name in sluice sluice-base; do
        local idle="keepalive_timeout = \"60s\""
        cat >"$WORK/$name.toml" <<CFG
workers = 2
header_timeout = "5s"
$idle
[[listener]]
bind = "127.0.0.1:${PORT[$name]}"
[[listener]]
bind = "127.0.0.1:${TLS_PORT[$name]}"
tls = { cert = "$WORK/cert.pem", key = "$WORK/key.pem" }
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
        listen 127.0.0.1:${TLS_PORT[nginx]} ssl http2;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
        location / {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CFG
    # HAProxy sizes its descriptors for a server connection per client (2 x maxconn) and
    # refuses to start above the open-file limit; idle clients hold none (http-reuse), so
    # beyond half the limit it runs on the limit itself (`no strict-limits`), as the others.
    local maxconn=$(( (NOFILE - 500) / 2 )) limits=""
    if (( CLIENTS > maxconn )); then maxconn=$(( NOFILE - 500 )) limits="no strict-limits"; fi
    cat >"$WORK/haproxy.cfg" <<CFG
global
    nbthread 2
    maxconn $maxconn
    $limits
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
    bind 127.0.0.1:${TLS_PORT[haproxy]} ssl crt $WORK/haproxy.pem alpn h2,http/1.1
    default_backend app
backend app
    server b1 $BACKEND
CFG
}

# start NAME: starts the balancer (sluice-base here, the others as lib.sh does), prints its pid.
start() {
    case $1 in
        sluice-base) SLUICE_LOG=warn "$BASELINE" serve -c "$WORK/sluice-base.toml" >>"$WORK/sluice-base.log" 2>&1 & echo $! ;;
        *) start_balancer "$1" ;;
    esac
}

# fresh LB: starts the balancer, waits for it, prints its pid.
fresh() {
    local pid
    pid=$(start "$1")
    wait_port "${PORT[$1]}" || { log "$1 did not start:"; tail -5 "$WORK/$1.log" >&2; exit 1; }
    sleep 0.5
    echo "$pid"
}

# stop PID
stop() {
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    sleep 1
}

# record LB RUN TEST OUT LINE: one JSON line of results.
record() {
    echo "{\"balancer\":\"$1\",\"run\":$2,\"test\":\"$3\",${5#\{}" | tee -a "$4/results.jsonl"
}

# measure LB RUN OUT: every measurement of TESTS, each on a freshly started balancer.
measure() {
    local lb=$1 run=$2 out=$3 pid test line n
    for test in $TESTS; do
        pid=$(fresh "$lb")
        log "run $run: $lb: $test"
        case $test in
            keepalive | burst) line=$(timeout 600 "$BIN/examples/idle_clients" "$test" "127.0.0.1:${PORT[$lb]}" "$CLIENTS" "$pid" "$SOURCES") ;;
            h2 | https)
                n=$H2_CLIENTS
                [[ $test == https ]] && n=$HTTPS_CLIENTS
                line=$(timeout 600 "$BIN/examples/idle_clients" "$test" "127.0.0.1:${TLS_PORT[$lb]}" "$n" "$pid" "$WORK/ca.pem" "$NAME_TLS" "$SOURCES") ;;
            silent) line=$(timeout 120 "$BIN/examples/idle_clients" silent "127.0.0.1:${PORT[$lb]}" "$SILENT" "$SOURCES") ;;
        esac || line="{\"error\":\"idle_clients exited with $?, see the log\"}"
        record "$lb" "$run" "$test" "$out" "$line"
        stop "$pid"
    done
}

main() {
    write_configs
    local out
    out=$(new_run_dir idle)
    "$BIN/sluice" backend --listen "$BACKEND" --name app --workers 1 2>/dev/null &
    PIDS+=($!)
    wait_port "${BACKEND##*:}"
    : >"$out/results.jsonl"
    for run in $(seq "$RUNS"); do
        for lb in "${BALANCERS[@]}"; do measure "$lb" "$run" "$out"; done
    done
    mkdir -p "$out/configs"
    cp "$WORK"/*.toml "$WORK/nginx/nginx.conf" "$WORK/haproxy.cfg" "$out/configs/"
    sed -i "s|$WORK|WORK|g" "$out"/configs/*
    summarise "$out" | tee "$out/summary.md"
    python3 "$REPO/bench/runs.py" pack "$out" && python3 "$REPO/bench/runs.py" index
}

summarise() {
    python3 - "$1" "$RUNS" "$CLIENTS" "$SILENT" "$H2_CLIENTS" "$HTTPS_CLIENTS" "$SOURCES" "$(git -C "$REPO" rev-parse --short HEAD)" "${BASELINE:+$("$BASELINE" --version 2>&1 | head -1)}" "${BALANCERS[@]}" <<'PY'
import json, os, statistics, sys
out, runs, clients, silent, h2, https, sources, commit, base = sys.argv[1:10]
balancers = sys.argv[10:]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
def med(lb, test, key):
    vals = [r[key] for r in rows if r["balancer"] == lb and r["test"] == test and r.get(key) is not None]
    return statistics.median(vals) if vals else None
print(f"# Idle client connections, medians of {runs} runs (sluice {commit})\n")
narrow = "".join(f' {k}="{os.environ[k]}"' for k in ("ONLY", "TESTS") if os.environ.get(k))
cmd = f"RUNS={runs} CLIENTS={clients} H2_CLIENTS={h2} HTTPS_CLIENTS={https} SILENT={silent} SOURCES={sources}" + (" BASELINE=..." if base else "") + narrow + " bench/idle.sh"
print(f"command: `{cmd}`" + (f"; sluice-base: {base}" if base else "") + "\n")
fmt = lambda v, f: f.format(v) if v is not None else "n/a"
ratio = lambda v, n: fmt(v / n if v is not None and n else None, "{:.2f}×")
tests = ("keepalive", "burst", "h2", "https")
def table(key):
    print(f"| balancer | HTTP/1.1 keep-alive ({clients}) | ×nginx | after a burst ({clients}) | ×nginx | HTTP/2 over TLS ({h2}) | ×nginx | HTTP/1.1 over TLS ({https}) | ×nginx |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ng = {t: med("nginx", t, key) for t in tests}
    for lb in balancers:
        cells = []
        for t in tests:
            v = med(lb, t, key)
            cells += [fmt(v, "{:.2f}"), ratio(v, ng[t])]
        print(f"| {lb} | " + " | ".join(cells) + " |")
print("KiB of resident memory per idle connection (the balancer's whole process tree, after minus before, divided by the connections; after a warm-up):\n")
table("kib_per_client")
print("\nOf which anonymous memory (the resident set without file pages), KiB per idle connection:\n")
table("anon_kib_per_client")
failed = [f"{r['balancer']} {r['test']} (run {r['run']})" for r in rows if "error" in r]
if failed:
    print(f"\nFailed measurements, left out of the medians: {', '.join(failed)}.")
print(f"\nSilent connections ({silent}, sending nothing): when each balancer closed them.\n")
print("| balancer | closed | first close (s) | median close (s) | last close (s) |")
print("|---|---:|---:|---:|---:|")
for lb in balancers:
    print(f"| {lb} | {fmt(med(lb, 'silent', 'closed'), '{:.0f}')} | {fmt(med(lb, 'silent', 'close_min_s'), '{:.2f}')} "
          f"| {fmt(med(lb, 'silent', 'close_p50_s'), '{:.2f}')} | {fmt(med(lb, 'silent', 'close_max_s'), '{:.2f}')} |")
PY
}

main "$@"
