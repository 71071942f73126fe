#!/usr/bin/env bash
# bench/loadgen.sh: `sluice bench` against wrk, h2load, oha (and k6, when given) on the same target,
# in one run, on this machine; and against its own closed loop with hyper's HTTP/1
# client in place of its codec (`hyper`: crates/sluice-bench/examples/hyper_loop.rs),
# the measurement behind the choice of client.
#
# The target is nginx answering `return 200 "ok\n"` (one worker, pinned to CPU 1), so
# that the generator, not the server, is what runs out; every generator runs pinned to
# CPU 0 with one thread. For each tool and round:
#   1. saturation: 64 connections for DUR seconds: requests/s, p50, p99 (as the tool
#      reports them), and the tool's CPU time (user+sys) per request;
#   2. light load: 4 connections, so that no generator is saturated: requests/s, p50
#      and p99 (at saturation, latency is mostly queueing inside the generator, and each
#      tool stamps its start and end at a different point of its own loop);
#   3. fixed rate: RATE requests/s for DUR seconds, for the tools that can hold a rate
#      (not wrk): the CPU time per request, the rate achieved, p50 and p99.
# Rounds rotate the tools' order within each mode; the summary gives medians and ratios
# to wrk (CPU and throughput at saturation) or to h2load (CPU at the fixed rate).
#
# What our users serve, against nginx's HTTPS listener (TLS 1.2 and 1.3, a self-signed
# ECDSA P-256 certificate made here; HTTP/2 by ALPN), with the tools that speak it:
#   tls-low       keep-alive HTTPS, LOW_RATE req/s over one connection: a rate at which
#                 no tool batches (h2load's timer and sluice's pace both send one
#                 request at a time), so the tools' latencies should agree;
#   tls-rate      keep-alive HTTPS, TLS_RATE req/s over 64 connections;
#   tls-new       a new connection and a full handshake per request, one connection at
#                 a time (a closed loop): sluice against `openssl s_time -new`, the one
#                 tool here that makes full handshakes (wrk and oha resume sessions);
#   tls-resumed   a new connection per request, the session resumed, NEW_RATE req/s:
#                 sluice against oha (`--disable-keepalive`, which resumes);
#   h2-1, h2-10   HTTP/2, TLS_RATE req/s: 64 connections with 1 stream each, and 8
#                 connections with 10 streams each (h2load's -m, oha's -p).
# Which handshakes resumed is nginx's count, not the tools' ($ssl_session_reused of each
# connection's first request, logged for the TLS listener). The reference of each mode:
# h2load for the keep-alive ones, openssl for tls-new, oha for tls-resumed (h2load
# opens no connection per request). h2load's --rps is no even schedule: each
# client's timer repeats every max(10 ms, 1/rps) and sends what is due, so its 64
# clients send in bursts; `sluice-paced` is sluice with `--pace 10ms`, which sends what is
# due every 10 ms the same way (sluice's default batches every 1 ms).
#
# WIRE=1 also captures each run of the fixed-rate modes with one request in flight per
# connection (rate, tls-low, tls-rate, h2-1) with tcpdump on the loopback and reports the
# latency on the wire (bench/wire_latency.py): the server's and the kernel's time
# without the generator's, the reference a tool's own figure sits above. (Not at
# saturation, where the capture would take the CPU the tools are measured by.)
#
# PIN=0 runs the generators unpinned (the scheduler free to move them, nginx still on
# CPU 1), as they run on a user's machine: their CPU per request then includes what
# migrations and wake-ups on the other core cost.
#
# HOG=N runs N busy loops (unpinned, at the default priority) beside every measurement:
# the machine a user shares with its CI. Each tool then competes for the CPU, its
# wake-ups run late, and its CPU per request and send lag say what that costs it.
#
# BASELINE=/path/to/an/older/sluice adds it as the tool `sluice-base` (sluice's commands
# with that binary), for before/after figures in the same run.
#
# Usage: [RUNS=3] [DUR=8] [RATE=20000] [TLS_RATE=5000] [NEW_RATE=500] [LOW_RATE=100]
#        [MODES="saturation light rate tls-low tls-rate tls-new tls-resumed h2-1 h2-10"]
#        [TOOLS="sluice sluice-paced hyper wrk h2load oha openssl"] [BASELINE=bin]
#        [WIRE=1] bench/loadgen.sh
# Installs what is missing: nginx, wrk, h2load (apt-get), oha (cargo install), tcpdump
# (WIRE=1). k6 is AGPL: this script never installs it; `TOOLS="... k6"` runs a k6 already
# on the PATH. Results: bench/runs/<date>-loadgen/. Loopback only.

set -euo pipefail
RUNS=${RUNS:-3}
DUR=${DUR:-8}
RATE=${RATE:-20000}
TLS_RATE=${TLS_RATE:-5000}
NEW_RATE=${NEW_RATE:-500}
LOW_RATE=${LOW_RATE:-100}
MODES=${MODES:-saturation light rate tls-low tls-rate tls-new tls-resumed h2-1 h2-10}
TOOLS_GIVEN=${TOOLS:-sluice sluice-paced hyper wrk h2load oha openssl}
BASELINE=${BASELINE:-}
WIRE=${WIRE:-0}
export PIN=${PIN:-1}
export HOG=${HOG:-0}
TOOLS="$TOOLS_GIVEN${BASELINE:+ sluice-base}"
CONNS=64
NAME=loadgen
PINNED="taskset -c 0"
[[ $PIN == 1 ]] || PINNED=""
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
BIN=$CARGO_TARGET_DIR/release
WORK=$(mktemp -d)
PIDS=()
export PATH=$PATH:$HOME/.cargo/bin:$HOME/go/bin
log() { printf '[%s %s] %s\n' "$NAME" "$(date +%H:%M:%S)" "$*" >&2; }
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

install_tools() {
    local apt=()
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || apt+=(nginx)
    command -v wrk >/dev/null || apt+=(wrk)
    command -v h2load >/dev/null || apt+=(nghttp2-client)
    command -v taskset >/dev/null || apt+=(util-linux)
    command -v openssl >/dev/null || apt+=(openssl)
    [[ $WIRE != 1 ]] || command -v tcpdump >/dev/null || apt+=(tcpdump)
    if (( ${#apt[@]} )); then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt[@]}"
    fi
    if [[ " $TOOLS " == *" oha "* ]]; then
        command -v oha >/dev/null || cargo install --locked oha
    fi
    # k6 (HTTP/1.1 modes only) is AGPL: never installed here, only run when present.
    if [[ " $TOOLS " == *" k6 "* ]] && ! command -v k6 >/dev/null; then
        log "k6 was asked for but is not on the PATH (this script does not install it)"
        exit 2
    fi
    (cd "$REPO" && cargo build --locked --release -p sluice && cargo build --locked --release -p sluice-bench --example hyper_loop)
}

start_target() {
    read -r PORT TLS_PORT <<<"$("$REPO/scripts/free-ports" 2 | tr "\n" " ")"
    mkdir -p "$WORK/nginx"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=localhost -addext subjectAltName=DNS:localhost \
        -keyout "$WORK/nginx/key.pem" -out "$WORK/nginx/cert.pem" 2>/dev/null
    cat >"$WORK/nginx/nginx.conf" <<CFG
worker_processes 1;
worker_cpu_affinity 10;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 10000000;
    client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fcgi; uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
    server { listen 127.0.0.1:$PORT; location / { return 200 "ok\n"; } }
    # One line per TLS connection (its first request): "r" if its session was resumed.
    map \$connection_requests \$first_request { 1 1; default 0; }
    log_format reused \$ssl_session_reused;
    server {
        listen 127.0.0.1:$TLS_PORT ssl http2;
        ssl_certificate $WORK/nginx/cert.pem; ssl_certificate_key $WORK/nginx/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        access_log $WORK/tls-sessions.log reused if=\$first_request;
        http2_max_requests 10000000;
        location / { return 200 "ok\n"; }
    }
}
CFG
    taskset -c 1 nginx -c "$WORK/nginx/nginx.conf" -g 'daemon off;' >"$WORK/nginx.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
        sleep 0.05
    done
    log "nginx did not start"; exit 1
}

write_k6_scripts() {
    cat >"$WORK/k6-vus.js" <<'JS'
import http from 'k6/http';
export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'p(50)', 'p(99)', 'count'],
  scenarios: { s: { executor: 'constant-vus', vus: Number(__ENV.CONNS), duration: __ENV.DUR + 's' } },
};
export default function () { http.get(__ENV.URL); }
JS
    cat >"$WORK/k6-rate.js" <<'JS'
import http from 'k6/http';
export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['avg', 'p(50)', 'p(99)', 'count'],
  scenarios: { s: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE), timeUnit: '1s',
    duration: __ENV.DUR + 's', preAllocatedVUs: Number(__ENV.CONNS), maxVUs: 1000 } },
};
export default function () { http.get(__ENV.URL); }
JS
}

# command TOOL MODE OUTFILE: prints the command line for a tool (MODE saturation|rate).
command_for() {
    local tool=$1 mode=$2 out=$3 url="http://127.0.0.1:$PORT/"
    case $tool:$mode in
        sluice:saturation) echo "$BIN/sluice bench $url --users $CONNS -d ${DUR}s --threads 1 -q --json $out" ;;
        sluice:light) echo "$BIN/sluice bench $url --users 4 -d ${DUR}s --threads 1 -q --json $out" ;;
        hyper:saturation) echo "$BIN/examples/hyper_loop $url $CONNS $DUR" ;;
        hyper:light) echo "$BIN/examples/hyper_loop $url 4 $DUR" ;;
        wrk:light) echo "wrk -t1 -c4 -d${DUR}s --latency $url" ;;
        h2load:light) echo "h2load --h1 -c 4 -t 1 -D $DUR $url" ;;
        oha:light) echo "oha -c 4 -z ${DUR}s --no-tui --output-format json $url" ;;
        k6:light) echo "k6 run -q --no-color --summary-export $out -e URL=$url -e CONNS=4 -e DUR=$DUR $WORK/k6-vus.js" ;;
        sluice:rate) echo "$BIN/sluice bench $url --rate $RATE -d ${DUR}s --threads 1 --max-in-flight $CONNS -q --json $out" ;;
        wrk:saturation) echo "wrk -t1 -c$CONNS -d${DUR}s --latency $url" ;;
        h2load:saturation) echo "h2load --h1 -c $CONNS -t 1 -D $DUR $url" ;;
        h2load:rate) echo "h2load --h1 -c $CONNS -t 1 -D $DUR --rps $(( RATE / CONNS )) $url" ;;
        oha:saturation) echo "oha -c $CONNS -z ${DUR}s --no-tui --output-format json $url" ;;
        oha:rate) echo "oha -c $CONNS -z ${DUR}s -q $RATE --no-tui --output-format json $url" ;;
        k6:saturation) echo "k6 run -q --no-color --summary-export $out -e URL=$url -e CONNS=$CONNS -e DUR=$DUR $WORK/k6-vus.js" ;;
        k6:rate) echo "k6 run -q --no-color --summary-export $out -e URL=$url -e CONNS=$CONNS -e DUR=$DUR -e RATE=$RATE $WORK/k6-rate.js" ;;
        *) tls_command_for "$@" ;;
    esac
}

# tls_command_for TOOL MODE OUTFILE: the HTTPS and HTTP/2 modes (see the header).
tls_command_for() {
    local tool=$1 mode=$2 out=$3 url="https://localhost:$TLS_PORT/"
    local sluice="$BIN/sluice bench $url --resolve localhost:$TLS_PORT:127.0.0.1 --insecure -d ${DUR}s --threads 1 -q --json $out"
    local h2load="h2load -t 1 -D $DUR https://127.0.0.1:$TLS_PORT/"
    local oha="oha -z ${DUR}s --insecure --no-tui --output-format json"
    if [[ $tool == sluice-base ]]; then
        command_for sluice "$mode" "$out" | sed "s|^$BIN/sluice |$BASELINE |"
        return
    fi
    if [[ $tool == sluice-paced ]]; then
        case $mode in
            tls-rate|h2-1|h2-10) tls_command_for sluice "$mode" "$out" | sed 's/$/ --pace 10ms/' ;;
            *) return 1 ;;
        esac
        return
    fi
    case $tool:$mode in
        sluice:tls-low) echo "$sluice --rate $LOW_RATE --max-in-flight 1" ;;
        h2load:tls-low) echo "$h2load --h1 -c 1 --rps $LOW_RATE" ;;
        oha:tls-low) echo "$oha -c 1 -q $LOW_RATE $url" ;;
        sluice:tls-rate) echo "$sluice --rate $TLS_RATE --max-in-flight $CONNS" ;;
        h2load:tls-rate) echo "$h2load --h1 -c $CONNS --rps $(( TLS_RATE / CONNS ))" ;;
        oha:tls-rate) echo "$oha -c $CONNS -q $TLS_RATE $url" ;;
        sluice:tls-new) echo "$sluice --users 1 --no-keepalive --tls-resume off" ;;
        openssl:tls-new) echo "openssl s_time -connect 127.0.0.1:$TLS_PORT -new -time $DUR -www /" ;;
        sluice:tls-resumed) echo "$sluice --rate $NEW_RATE --max-in-flight $CONNS --no-keepalive --tls-resume on" ;;
        oha:tls-resumed) echo "$oha -c $CONNS -q $NEW_RATE --disable-keepalive $url" ;;
        sluice:h2-1) echo "$sluice --h2 --streams 1 --rate $TLS_RATE --max-in-flight $CONNS" ;;
        h2load:h2-1) echo "$h2load -c $CONNS -m 1 --rps $(( TLS_RATE / CONNS ))" ;;
        oha:h2-1) echo "$oha --http2 -c $CONNS -p 1 -q $TLS_RATE $url" ;;
        sluice:h2-10) echo "$sluice --h2 --streams 10 --rate $TLS_RATE --max-in-flight 80" ;;
        h2load:h2-10) echo "$h2load -c 8 -m 10 --rps $(( TLS_RATE / 8 ))" ;;
        oha:h2-10) echo "$oha --http2 -c 8 -p 10 -q $TLS_RATE $url" ;;
        *) return 1 ;;
    esac
}

# measure TOOL MODE ROUND: runs it pinned to CPU 0 under /usr/bin/time, records a line.
measure() {
    local tool=$1 mode=$2 round=$3 base="$OUT/raw/r$3-$1-$2" cmd
    cmd=$(command_for "$tool" "$mode" "$base.json") || return 0
    log "round $round: $tool $mode"
    echo "# $cmd" >"$base.txt"
    : >"$WORK/tls-sessions.log"
    local port="" capture=""
    if [[ $WIRE == 1 ]] && port=$(wire_port "$mode"); then
        tcpdump -i lo -s 100 -B 32768 -w "$WORK/wire.pcap" "tcp port $port" 2>"$WORK/tcpdump.log" &
        capture=$!
        sleep 0.5
    fi
    local hogs=()
    for _ in $(seq 1 "$HOG"); do
        sh -c 'while :; do :; done' &
        hogs+=($!)
        PIDS+=($!)
    done
    timeout $(( DUR + 60 )) /usr/bin/time -f "cpu %U %S" -o "$base.cpu" $PINNED $cmd >>"$base.txt" 2>&1 || log "$tool $mode exited $?"
    (( ${#hogs[@]} == 0 )) || { kill "${hogs[@]}"; wait "${hogs[@]}" 2>/dev/null || true; }
    if [[ -n $capture ]]; then
        sleep 0.3
        kill -INT "$capture"; wait "$capture" || true
        python3 "$REPO/bench/wire_latency.py" "$WORK/wire.pcap" "$port" >"$base.wire"
        rm -f "$WORK/wire.pcap"
    fi
    python3 "$WORK/parse.py" "$tool" "$mode" "$round" "$base" "$WORK/tls-sessions.log" >>"$OUT/results.jsonl"
    sleep 1
}

# wire_port MODE: the port whose loopback traffic WIRE=1 captures, for the fixed-rate
# modes with one request in flight per connection (the pairing bench/wire_latency.py
# relies on).
wire_port() {
    case $1 in
        rate) echo "$PORT" ;;
        tls-low|tls-rate|h2-1) echo "$TLS_PORT" ;;
        *) return 1 ;;
    esac
}

write_parser() {
    cat >"$WORK/parse.py" <<'PY'
"""parse.py TOOL MODE ROUND BASE SESSIONS: one JSON line of what the tool reported, its
CPU, and (SESSIONS: nginx's log of the TLS connections) how many sessions it resumed."""
import json, re, sys

tool, mode, rnd, base, sessions = sys.argv[1:6]
text = open(base + ".txt").read()
user, sys_ = map(float, re.search(r"cpu ([\d.]+) ([\d.]+)", open(base + ".cpu").read()).groups())
rec = {"tool": tool, "mode": mode, "round": int(rnd), "cpu_s": user + sys_}

def dur_ms(v):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", v)
    return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]

if tool.startswith("sluice"):
    step = json.load(open(base + ".json"))["steps"][0]
    rec.update(requests=step["samples"], rps=step["throughput_rps"], p50_ms=step["p50_ms"], p99_ms=step["p99_ms"], errors=step["errors"], mean_ms=step["mean_ms"])
    # Measured from the actual send, as h2load measures: the figure to set beside its.
    rec.update(uncorrected_mean_ms=step["uncorrected"]["mean_ms"], lag_p50_ms=step["send_lag"]["p50_ms"])
    rec.update(connections=(step.get("connections") or {}).get("opened"))
elif tool == "hyper":
    rec.update(json.loads(text.strip().splitlines()[-1]))
elif tool == "wrk":
    rec.update(rps=float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
               requests=int(re.search(r"(\d+) requests in", text).group(1)),
               p50_ms=dur_ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1)),
               p99_ms=dur_ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1)),
               errors=int(re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text).group(1)) if "Non-2xx" in text else 0)
elif tool == "h2load":
    m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed", text)
    rec.update(requests=int(m.group(3)), errors=int(m.group(4)),
               rps=float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", text).group(1)),
               mean_ms=dur_ms(re.search(r"time for request:\s+\S+\s+\S+\s+(\S+)", text).group(1)),
               p50_ms=None, p99_ms=None)
elif tool == "oha":
    start = text.index("{")
    d = json.loads(text[start:])
    s, p = d["summary"], d["latencyPercentiles"]
    codes = d.get("statusCodeDistribution", {})
    rec.update(rps=s["requestsPerSec"], p50_ms=p["p50"] * 1000, p99_ms=p["p99"] * 1000, mean_ms=s["average"] * 1000,
               requests=sum(codes.values()), errors=sum(v for k, v in codes.items() if not k.startswith("2")))
elif tool == "openssl":
    # s_time's "N connections in T s" counts CPU seconds, not the run's: the rate is over DUR.
    n = int(re.search(r"(\d+) connections in [\d.]+s", text).group(1))
    dur_s = float(re.search(r"-time (\d+)", text).group(1))
    rec.update(requests=n, rps=n / dur_s, errors=0, mean_ms=None, p50_ms=None, p99_ms=None)
elif tool == "k6":
    m = json.load(open(base + ".json"))["metrics"]
    d, reqs = m["http_req_duration"], m["http_reqs"]
    rec.update(requests=int(reqs["count"]), rps=reqs["rate"], p50_ms=d["p(50)"], p99_ms=d["p(99)"],
               errors=int(m.get("http_req_failed", {}).get("passes", 0)))
try:
    rec.update(json.load(open(base + ".wire")))
except FileNotFoundError:
    pass
reused = open(sessions).read().split()
if reused:
    rec.update(handshakes=len(reused), resumed=reused.count("r"))
rec["cpu_us_per_req"] = rec["cpu_s"] * 1e6 / rec["requests"] if rec.get("requests") else None
print(json.dumps(rec))
PY
}

summarise() {
    python3 - "$OUT/results.jsonl" "$RUNS" "$DUR" "$RATE" "$(git -C "$REPO" rev-parse --short HEAD)" "$TLS_RATE" "$NEW_RATE" "$MODES" "$TOOLS_GIVEN" "$LOW_RATE" "$BASELINE" "$WIRE" <<'PY'
import json, os, statistics, sys
path, runs, dur, rate, commit, tls_rate, new_rate, modes, tools_env, low_rate, baseline, wire = sys.argv[1:13]
pinned = os.environ.get("PIN", "1")
rows = [json.loads(l) for l in open(path)]
tools = ["sluice", "hyper", "wrk", "h2load", "oha", "k6"]
def med(tool, mode, key):
    v = [r[key] for r in rows if r["tool"] == tool and r["mode"] == mode and r.get(key) is not None]
    return statistics.median(v) if v else None
f = lambda v, fmt: fmt.format(v) if v is not None else "n/a"
print(f"# Load generators on one core, medians of {runs} rounds (sluice {commit})\n")
# The baseline's path is this machine's: the summary names the build by its version.
base = " BASELINE=<sluice-base>" if baseline else ""
print(f"command: `RUNS={runs} DUR={dur} RATE={rate} TLS_RATE={tls_rate} NEW_RATE={new_rate} LOW_RATE={low_rate} MODES=\"{modes}\" TOOLS=\"{tools_env}\"{base}{' WIRE=1' if wire == '1' else ''}{' PIN=0' if pinned != '1' else ''}{' HOG=' + os.environ['HOG'] if os.environ.get('HOG', '0') != '0' else ''} bench/loadgen.sh`; target: nginx `return 200` on CPU 1; each generator {'on CPU 0' if pinned == '1' else 'unpinned'}, one thread, 64 connections.\n")
if baseline:
    import subprocess
    print(f"sluice-base: {subprocess.run([baseline, '--version'], capture_output=True, text=True).stdout.strip()}\n")
ran = {r["mode"] for r in rows}
# The HTTP/1.1 tables, each when its mode ran.
if "saturation" in ran:
    print("## Saturation (64 connections): the highest rate one core reaches\n")
    print("| tool | req/s | ×wrk | p50 (ms) | p99 (ms) | CPU µs per request | ×wrk | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    w_rps, w_cpu = med("wrk", "saturation", "rps"), med("wrk", "saturation", "cpu_us_per_req")
    for t in tools:
        if med(t, "saturation", "rps") is None:
            continue
        rps, cpu = med(t, "saturation", "rps"), med(t, "saturation", "cpu_us_per_req")
        p50 = med(t, "saturation", "p50_ms")
        p50 = p50 if p50 is not None else med(t, "saturation", "mean_ms")
        note = "" if med(t, "saturation", "p50_ms") is not None else " (mean; h2load has no percentiles)"
        print(f"| {t} | {f(rps, '{:,.0f}')} | {f(rps and w_rps and rps / w_rps, '{:.2f}×')} | {f(p50, '{:.3f}')}{note} | {f(med(t, 'saturation', 'p99_ms'), '{:.3f}')} "
              f"| {f(cpu, '{:.2f}')} | {f(cpu and w_cpu and cpu / w_cpu, '{:.2f}×')} | {f(med(t, 'saturation', 'errors'), '{:.0f}')} |")
if "light" in ran:
    print("\n## Light load (4 connections): the same load for every tool\n")
    print("| tool | req/s | ×wrk | p50 (ms) | ×wrk | p99 (ms) | ×wrk |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    w = {k: med("wrk", "light", k) for k in ("rps", "p50_ms", "p99_ms")}
    for t in tools:
        if med(t, "light", "rps") is None:
            continue
        v = {k: med(t, "light", k) for k in ("rps", "p50_ms", "p99_ms")}
        if v["p50_ms"] is None:
            v["p50_ms"] = med(t, "light", "mean_ms")
        r = lambda k: v[k] and w[k] and v[k] / w[k]
        print(f"| {t} | {f(v['rps'], '{:,.0f}')} | {f(r('rps'), '{:.2f}×')} | {f(v['p50_ms'], '{:.3f}')}{'' if med(t, 'light', 'p50_ms') is not None else ' (mean)'} | {f(r('p50_ms'), '{:.2f}×')} "
              f"| {f(v['p99_ms'], '{:.3f}')} | {f(r('p99_ms'), '{:.2f}×')} |")
# WIRE=1: the latency on the wire beside each tool's own (bench/wire_latency.py).
wired = any(r.get("wire_mean_ms") is not None for r in rows)
wire_head, wire_rule = (" wire mean (ms) | the tool's share (ms) |", "---:|---:|") if wired else ("", "")
def wire_cell(t, mode):
    if not wired:
        return ""
    wire, sent = med(t, mode, "wire_mean_ms"), med(t, mode, "uncorrected_mean_ms") or med(t, mode, "mean_ms")
    return f" {f(wire, '{:.3f}')} | {f(wire and sent and sent - wire, '{:.3f}')} |"
if "rate" in ran:
    print(f"\n## Fixed rate ({rate} req/s): what holding a rate costs\n")
    print(f"| tool | achieved req/s | p50 (ms) | p99 (ms) |{wire_head} CPU µs per request | ×h2load |")
    print(f"|---|---:|---:|---:|{wire_rule}---:|---:|")
    h_cpu = med("h2load", "rate", "cpu_us_per_req")
    for t in tools:
        if t in ("wrk", "hyper"):
            print(f"| {t} | n/a (no fixed rate) | | |{' | |' if wired else ''} | |")
            continue
        cpu = med(t, "rate", "cpu_us_per_req")
        print(f"| {t} | {f(med(t, 'rate', 'rps'), '{:,.0f}')} | {f(med(t, 'rate', 'p50_ms'), '{:.3f}')} | {f(med(t, 'rate', 'p99_ms'), '{:.3f}')} |{wire_cell(t, 'rate')}"
              f" {f(cpu, '{:.2f}')} | {f(cpu and h_cpu and cpu / h_cpu, '{:.2f}×')} |")
tls_modes = [("tls-low", f"keep-alive HTTPS, {low_rate} req/s, one connection", "h2load"),
             ("tls-rate", f"keep-alive HTTPS, {tls_rate} req/s", "h2load"),
             ("tls-new", "new connection + full handshake per request, one at a time", "openssl"),
             ("tls-resumed", f"new connection + resumed session per request, {new_rate} req/s", "oha"),
             ("h2-1", f"HTTP/2, 64 connections x 1 stream, {tls_rate} req/s", "h2load"),
             ("h2-10", f"HTTP/2, 8 connections x 10 streams, {tls_rate} req/s", "h2load")]
if any(r["mode"] == m for r in rows for m, _, _ in tls_modes):
    print("\n## HTTPS and HTTP/2 (nginx's TLS listener)\n")
    print(f"| mode | tool | achieved req/s | mean (ms) | mean from the send (ms) | ×ref |{wire_head} send lag p50 (ms) | p50 (ms) | p99 (ms) | CPU µs per request | ×ref | resumed / new TLS sessions | errors |")
    print(f"|---|---|---:|---:|---:|---:|{wire_rule}---:|---:|---:|---:|---:|---:|---:|")
    for mode, what, ref in tls_modes:
        h = {k: med(ref, mode, k) for k in ("cpu_us_per_req", "mean_ms")}
        ratio = lambda v, ref: f(v and ref and v / ref, '{:.2f}×')
        for t in ("sluice", "sluice-base", "sluice-paced", "h2load", "oha", "openssl"):
            if med(t, mode, "rps") is None:
                continue
            cpu, mean = med(t, mode, "cpu_us_per_req"), med(t, mode, "mean_ms")
            sent = med(t, mode, "uncorrected_mean_ms")
            sent = sent if sent is not None else (mean if t in ("h2load", "oha") else None)
            hs, rs = med(t, mode, "handshakes"), med(t, mode, "resumed")
            resumed = f"{rs:,.0f} / {hs:,.0f}" if hs else ""
            print(f"| {what} | {t} | {f(med(t, mode, 'rps'), '{:,.0f}')} | {f(mean, '{:.3f}')} | {f(sent, '{:.3f}')} | {ratio(sent, h['mean_ms'])} |{wire_cell(t, mode)}"
                  f" {f(med(t, mode, 'lag_p50_ms'), '{:.3f}')} | {f(med(t, mode, 'p50_ms'), '{:.3f}')} | {f(med(t, mode, 'p99_ms'), '{:.3f}')} | {f(cpu, '{:.2f}')} "
                  f"| {ratio(cpu, h['cpu_us_per_req'])} | {resumed} | {f(med(t, mode, 'errors'), '{:.0f}')} |")
    print("\nmean: sluice's from when each request was meant to go (its batch's time; lateness beyond it included; one sent early is timed from its send); send lag: how late sluice's requests went out; mean from the send: from when it went, as h2load and oha measure (h2load and openssl s_time report no percentiles). ×ref: that mean, and the CPU per request, against the mode's reference tool: h2load for keep-alive connections, openssl s_time for full handshakes (one connection at a time; wrk and oha resume sessions), oha for resumed ones. resumed / new TLS sessions: nginx's count ($ssl_session_reused of each connection's first request).")
    if wired:
        print("\nwire mean: from a request's first segment to its answer's on the loopback, in the same run (tcpdump; bench/wire_latency.py): the server's and the kernel's time under that tool's load, without the tool's own. The tool's share: its mean from the send minus the wire's (its timers, wake-ups and queues); two tools' wire means differ when their loads differ in shape (one that sends in bursts queues its own requests at the server).")
PY
}

main() {
    install_tools
    OUT=$REPO/bench/runs/$(date +%Y-%m-%d)-loadgen
    local base=$OUT n=2
    while [[ -e $OUT ]]; do OUT=$base-$n; n=$((n + 1)); done
    mkdir -p "$OUT/raw"
    : >"$OUT/results.jsonl"
    start_target
    write_k6_scripts
    write_parser
    local tools=($TOOLS) round i mode
    local k=${#tools[@]}
    # Mode by mode, the tools one after another in an order rotated each round: two
    # builds compared (BASELINE) run side by side in the same minute, not a whole
    # round of other tools apart.
    for (( round = 1; round <= RUNS; round++ )); do
        for mode in $MODES; do
            for (( i = 0; i < k; i++ )); do
                measure "${tools[(i + round - 1) % k]}" "$mode" "$round"
            done
        done
    done
    summarise | tee "$OUT/summary.md"
    python3 "$REPO/bench/runs.py" pack "$OUT" && python3 "$REPO/bench/runs.py" index
}

main "$@"
