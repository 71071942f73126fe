#!/usr/bin/env bash
# bench/syscalls.sh: what each balancer asks of the kernel per proxied request, and how
# its CPU time splits between its own code (user) and the kernel's (system).
#
# Each balancer (2 workers, upstream keep-alive) in front of two `sluice backend`s, at a
# fixed rate: `h2load --h1 -c 40 -t 1 --rps $((RATE / 40)) -D DUR`. Over the run,
# `perf stat` counts the balancer's system calls by kind (tracepoints) and its context
# switches; /proc/PID/stat gives its user and system CPU time. Per request, medians of
# RUNS rounds, balancers interleaved. Loopback only; every run has a deadline.
#
# Usage: [RUNS=3] [RATE=5000] [DUR=5] bench/syscalls.sh
# Results: bench/runs/<date>-syscalls/ (summary.md, results.jsonl).

set -euo pipefail
RUNS=${RUNS:-3}
RATE=${RATE:-5000}
DUR=${DUR:-5}
NAME=syscalls
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v perf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf; }
command -v h2load >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client; }
(cd "$REPO" && cargo build --locked --release -p sluice)

BACKENDS=(127.0.0.1:19951 127.0.0.1:19952)
declare -A PORT=([sluice]=19960 [nginx]=19961 [haproxy]=19962)
CALLS=(epoll_wait epoll_pwait epoll_ctl recvfrom sendto read write readv writev recvmsg sendmsg getsockopt setsockopt accept4 close)
EVENTS=$(printf 'syscalls:sys_enter_%s,' "${CALLS[@]}")context-switches

write_configs() {
    cat >"$WORK/sluice.toml" <<CFG
workers = 2
[[listener]]
bind = "127.0.0.1:${PORT[sluice]}"
[[route]]
upstream = "app"
[upstream.app]
servers = ["${BACKENDS[0]}", "${BACKENDS[1]}"]
CFG
    mkdir -p "$WORK/nginx"
    cat >"$WORK/nginx/nginx.conf" <<CFG
worker_processes 2;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fcgi; uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
    upstream app { server ${BACKENDS[0]}; server ${BACKENDS[1]}; keepalive 128; }
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
CFG
    cat >"$WORK/haproxy.cfg" <<CFG
global
    nbthread 2
defaults
    mode http
    option http-keep-alive
    http-reuse always
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:${PORT[haproxy]}
    default_backend app
backend app
    server b1 ${BACKENDS[0]}
    server b2 ${BACKENDS[1]}
CFG
}

# ticks PIDS: user and system CPU ticks of the processes (all their threads).
ticks() {
    local u=0 s=0 pid f
    for pid in ${1//,/ }; do
        read -r -a f <"/proc/$pid/stat"
        u=$((u + f[13])) s=$((s + f[14]))
    done
    echo "$u $s"
}

# measure LB RUN OUT: one fixed-rate run with the counters around it; one JSON line.
measure() {
    local lb=$1 run=$2 out=$3 pid pids u0 s0 u1 s1 done_
    pid=$(start_balancer "$lb")
    wait_port "${PORT[$lb]}" || { log "$lb did not start"; tail -5 "$WORK/$lb.log" >&2; exit 1; }
    sleep 0.5
    pids=$(echo "$pid" $(pgrep -P "$pid") | tr ' ' ',')
    read -r u0 s0 < <(ticks "$pids")
    timeout $((DUR + 30)) perf stat -x, -e "$EVENTS" -p "$pids" -o "$WORK/perf.csv" -- sleep $((DUR + 1)) &
    local perf=$!
    sleep 0.3
    done_=$(timeout $((DUR + 30)) h2load --h1 -c 40 -t 1 --rps $((RATE / 40)) -D "$DUR" \
        "http://127.0.0.1:${PORT[$lb]}/" | awk '/^requests:/ {print $8}')
    wait "$perf"
    read -r u1 s1 < <(ticks "$pids")
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    python3 - "$lb" "$run" "$done_" "$((u1 - u0))" "$((s1 - s0))" "$WORK/perf.csv" <<'PY' | tee -a "$out/results.jsonl"
import json, sys
lb, run, n, user, system, csv = sys.argv[1:]
counts = {}
for line in open(csv):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].isdigit():
        counts[f[2].removeprefix("syscalls:sys_enter_")] = int(f[0])
print(json.dumps({"balancer": lb, "run": int(run), "requests": int(n),
                  "user_ticks": int(user), "system_ticks": int(system), "counts": counts}))
PY
    sleep 1
}

summarise() {
    python3 - "$1" "$RUNS" "$RATE" "$DUR" "$(git -C "$REPO" rev-parse --short HEAD)" <<'PY'
import json, statistics, sys
out, runs, rate, dur, commit = sys.argv[1:]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
lbs = list(dict.fromkeys(r["balancer"] for r in rows))
def med(lb, f):
    return statistics.median(f(r) for r in rows if r["balancer"] == lb)
print(f"# System calls and CPU per proxied request, medians of {runs} runs (sluice {commit})\n")
print(f"command: `RUNS={runs} RATE={rate} DUR={dur} bench/syscalls.sh`; load: "
      f"`h2load --h1 -c 40 -t 1 --rps {int(rate) // 40} -D {dur}`; 2 workers each, two backends\n")
calls = sorted({k for r in rows for k, v in r["counts"].items() if v and k != "context-switches"})
print("| balancer | user µs | system µs | " + " | ".join(calls) + " | context switches |")
print("|---|" + "---:|" * (len(calls) + 3))
for lb in lbs:
    per = lambda k: med(lb, lambda r: r["counts"].get(k, 0) / r["requests"])
    user = med(lb, lambda r: r["user_ticks"] * 1e4 / r["requests"])
    system = med(lb, lambda r: r["system_ticks"] * 1e4 / r["requests"])
    cells = [f"{user:.1f}", f"{system:.1f}"] + [f"{per(k):.2f}" for k in calls] + [f"{per('context-switches'):.2f}"]
    print(f"| {lb} | " + " | ".join(cells) + " |")
print("\nPer request; CPU from /proc/PID/stat (10 ms ticks, the balancer's processes), calls "
      "and context switches from `perf stat` over the run (tracepoints `syscalls:sys_enter_*`).")
PY
}

main() {
    write_configs
    local out
    out=$(new_run_dir syscalls)
    for b in "${BACKENDS[@]}"; do
        "$BIN/sluice" backend --listen "$b" --name "app-${b##*:}" --workers 1 2>/dev/null &
        PIDS+=($!)
        wait_port "${b##*:}"
    done
    : >"$out/results.jsonl"
    for run in $(seq "$RUNS"); do
        for lb in sluice nginx haproxy; do
            log "run $run: $lb"
            measure "$lb" "$run" "$out"
        done
    done
    summarise "$out" | tee "$out/summary.md"
    python3 "$REPO/bench/runs.py" index
}

main "$@"
