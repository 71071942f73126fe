#!/usr/bin/env bash
# bench/compare.sh: compare sluice with nginx and HAProxy on this machine, in one run.
#
# All three balancers sit in front of the same two `sluice backend` servers on
# 127.0.0.1, and we measure each of them:
#   1. saturation: `wrk -t2 -c64 -d${DUR}s --latency` gives requests/s and p50/p99 latency;
#   2. cost: `h2load --h1` at a fixed rate of about ${RATE} req/s. We read the
#      balancer's CPU time (utime+stime of its whole process tree, /proc/PID/stat)
#      before and after, and divide by the number of requests h2load completed,
#      which gives microseconds of CPU per proxied request.
#   3. HTTPS (unless HTTPS=0), on a second listener of each balancer with the same
#      ECDSA P-256 certificate: new TLS connections per second at saturation
#      (`wrk -H 'Connection: close'`: every request a new connection, its session
#      resumed, as wrk resumes: `SSL_clear` keeps the session for the next connect),
#      and CPU per request over keep-alive TLS at the fixed rate (`h2load --h1` to
#      https://), read as in 2.; then HTTP/2 over the same listener (ALPN h2):
#      requests/s at saturation (`h2load -c16 -m16`, 16 streams at once on each of 16
#      connections) and CPU per request at the fixed rate; then the CPU per new client
#      with a full handshake, at HS_RATE (500) new connections a second (`sluice bench
#      --no-keepalive --tls-resume off`, the same client for every balancer).
# We repeat this RUNS times. Within each round we take the balancers in turn, and
# rotate the order from one round to the next, so that noise on this shared machine
# (and any position effect) is spread over all three instead of landing on one.
# The report shows the median over the rounds, and each figure as a ratio to nginx.
# Around every CPU reading we also read what else the machine did (/proc/stat's steal
# and busy ticks against our own process tree's, and /proc/pressure/cpu): the report
# lists each round's CPU per request beside the share other guests and other programs
# took, and names a run contended when other guests stole more than 5% of the CPU or
# other programs took more than 10%; PSI's share is kept in results.jsonl.
#
# Usage:  [RUNS=3] [DUR=5] [RATE=5000] [H2_CLIENTS=40] [BASELINE=bin] [PGO=1] [ACCESS_LOG=1] [HTTPS=0] bench/compare.sh [--build]
#   --build   rebuild target/release/sluice first (it is built anyway if missing).
#   ACCESS_LOG=1  every balancer writes an access log (sluice's combined format;
#             nginx's combined, buffered as sluice's is: buffer=32k flush=1s; HAProxy's
#             httplog to stdout); `sluice-base`, when given, writes none, so the same
#             binary as BASELINE measures what the log costs.
#   BASELINE  another sluice binary (an older build, or one built with `--features ring`)
#             measured as `sluice-base` in the same rounds, for before/after figures of
#             a change; it must know `tls` listeners unless HTTPS=0.
#   BASELINE_LABEL  what the report calls the baseline (default: the commit it was built from).
#   SLUICE    the sluice binary to measure (default: target/release/sluice; --build builds that one).
#   PGO=1     also measure the profile-guided build (scripts/build-pgo.sh, built first
#             if missing; with --build, rebuilt) as `sluice-pgo`, in the same rounds.
#   HTTPS=0   skip the HTTPS measurements (3.).
#
# The results go to bench/runs/<date>-compare/ (summary.md, results.jsonl, and in
# raw.tar.xz the raw output of every wrk and h2load run, the generated configs and
# server logs; bench/runs.py packs them and updates bench/runs/README.md).
# The Markdown table is also printed on stdout. Needs root only if it has to
# apt-get install the tools.

set -euo pipefail

# ---------------------------------------------------------------- settings

RUNS=${RUNS:-3}            # rounds; each round measures every balancer once
DUR=${DUR:-5}              # seconds per wrk run and per h2load run
RATE=${RATE:-5000}         # total request rate (req/s) for the CPU measurement
H2_CLIENTS=${H2_CLIENTS:-40}
WRK_THREADS=2
WRK_CONNS=64
WORKERS=2                  # worker processes/threads of every balancer
BALANCERS=(sluice nginx haproxy)
BASELINE=${BASELINE:-}
ACCESS_LOG=${ACCESS_LOG:-}
HTTPS=${HTTPS:-1}
PGO=${PGO:-}
[[ -n $BASELINE ]] && BALANCERS+=(sluice-base)
[[ -n $PGO ]] && BALANCERS+=(sluice-pgo)

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Parsing, CPU accounting, medians and the report: one analysis script.
HELPER=$REPO/bench/compare_stats.py
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
SLUICE_BIN=${SLUICE:-$CARGO_TARGET_DIR/release/sluice}
PGO_BIN=$REPO/target/pgo/dist/sluice
# The baseline is named by the commit it says it was built from, not by a path of this
# machine (the summary is committed; the path means nothing elsewhere).
BASELINE_NAME=""
[[ -n $BASELINE ]] && BASELINE_NAME=${BASELINE_LABEL:-"<sluice at $("$BASELINE" --version 2>/dev/null | sed -n 's/.*commit \([0-9a-f]*\).*/\1/p')>"}
COMMAND_LINE="RUNS=$RUNS DUR=$DUR RATE=$RATE H2_CLIENTS=$H2_CLIENTS HTTPS=$HTTPS${BASELINE:+ BASELINE=$BASELINE_NAME}${PGO:+ PGO=$PGO}${ACCESS_LOG:+ ACCESS_LOG=$ACCESS_LOG} bench/compare.sh${*:+ $*}"

BUILD=0
for arg in "$@"; do
    case $arg in
        --build) BUILD=1 ;;
        -h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "compare.sh: unknown argument '$arg' (try --help)" >&2; exit 64 ;;
    esac
done

# h2load's --rps is per client and whole numbers only (156.25 acts like 156), so the
# rate we really ask for is clients * floor(RATE / clients); we report that figure.
RPS_PER_CLIENT=$(( RATE / H2_CLIENTS ))
(( RPS_PER_CLIENT >= 1 )) || { echo "compare.sh: RATE must be >= H2_CLIENTS" >&2; exit 64; }
EFFECTIVE_RATE=$(( RPS_PER_CLIENT * H2_CLIENTS ))
# New TLS connections a second, each a full handshake, in the full-handshake cost run.
HS_RATE=500

log() { printf '[compare %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- process bookkeeping

# Every process we start goes into PIDS, and cleanup() stops them all however the
# script ends (success, error under set -e, Ctrl-C, SIGTERM). Load generators run
# in the background and are waited for, so that a signal reaches our trap at once
# instead of after wrk/h2load finish; LOAD_PID lets the trap stop them as well.
PIDS=()
LOAD_PID=
WORK=

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    [[ -n $LOAD_PID ]] && kill -TERM "$LOAD_PID" 2>/dev/null || true
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    # Give them a few seconds to drain (sluice and nginx shut down gracefully), then force it.
    local deadline=$(( SECONDS + 5 ))
    for pid in "${PIDS[@]}"; do
        while kill -0 "$pid" 2>/dev/null && (( SECONDS < deadline )); do sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [[ -n $WORK && -d $WORK ]] && rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME LOGFILE CMD... : run CMD in the background, remember its pid in PID_OF[NAME].
# The command is exec'd directly (no wrapper), so $! is the server itself and its
# /proc/PID/stat is the one we want for CPU accounting.
declare -A PID_OF PORT_OF TLS_PORT_OF
start() {
    local name=$1 logfile=$2; shift 2
    "$@" >"$logfile" 2>&1 &
    PIDS+=("$!")
    PID_OF[$name]=$!
}

# wait_ready NAME PORT [SCHEME]: poll with curl until the server answers, or fail after 20 s.
wait_ready() {
    local name=$1 port=$2 scheme=${3:-http} deadline=$(( SECONDS + 20 ))
    until curl -s -k -o /dev/null --max-time 1 "$scheme://127.0.0.1:$port/"; do
        kill -0 "${PID_OF[$name]}" 2>/dev/null || die "$name exited during start-up; see $OUT/servers/$name.log:
$(tail -n 20 "$OUT/servers/$name.log")"
        (( SECONDS < deadline )) || die "$name did not accept connections on 127.0.0.1:$port within 20 s"
        sleep 0.1
    done
}

# bounded SECONDS CMD...: run a load generator with a hard time limit on top of its
# own -d/-D, so that a wedged run cannot hang the script.
bounded() {
    local limit=$1; shift
    timeout --kill-after=5 "$limit" "$@" &
    LOAD_PID=$!
    local rc=0
    wait "$LOAD_PID" || rc=$?
    LOAD_PID=
    return "$rc"
}

# ---------------------------------------------------------------- prerequisites

ensure_tools() {
    local missing=()
    command -v nginx   >/dev/null || missing+=(nginx)
    command -v haproxy >/dev/null || missing+=(haproxy)
    command -v wrk     >/dev/null || missing+=(wrk)
    command -v h2load  >/dev/null || missing+=(nghttp2-client)
    command -v curl    >/dev/null || missing+=(curl)
    command -v python3 >/dev/null || missing+=(python3)
    command -v openssl >/dev/null || missing+=(openssl)
    command -v ss      >/dev/null || missing+=(iproute2)
    command -v timeout >/dev/null || missing+=(coreutils)
    if (( ${#missing[@]} )); then
        (( EUID == 0 )) || die "missing ${missing[*]}; run as root so the script can apt-get install them"
        log "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q "${missing[@]}"
    fi
    # On Debian, installing nginx/haproxy may start their system services (nginx on
    # port 80). We never touch those: our instances use their own configs, ports and pid files.
}

ensure_sluice() {
    if (( BUILD )) || [[ ! -x $SLUICE_BIN ]]; then
        log "building sluice (release) into $CARGO_TARGET_DIR"
        (cd "$REPO" && cargo build --locked --release -p sluice)
    fi
    [[ -x $SLUICE_BIN ]] || die "no binary at $SLUICE_BIN after the build"
    if [[ -n $PGO ]] && { (( BUILD )) || [[ ! -x $PGO_BIN ]]; }; then
        log "building sluice with profile-guided optimisation (scripts/build-pgo.sh)"
        "$REPO/scripts/build-pgo.sh"
    fi
    [[ -z $PGO || -x $PGO_BIN ]] || die "no binary at $PGO_BIN after scripts/build-pgo.sh"
    # A binary older than the last commit that changed code probably does not contain
    # it; say so loudly. (cargo leaves the binary untouched when only docs changed.)
    local built committed
    built=$(stat -c %Y "$SLUICE_BIN")
    committed=$(git -C "$REPO" log -1 --format=%ct -- crates Cargo.toml Cargo.lock 2>/dev/null || echo 0)
    if (( built < committed )) || ! git -C "$REPO" diff --quiet HEAD -- crates Cargo.toml Cargo.lock 2>/dev/null; then
        STALE=" (OLDER than the code at $(git -C "$REPO" rev-parse --short HEAD), or the code has uncommitted changes; rerun with --build)"
        log "WARNING: $SLUICE_BIN is older than the last commit; rerun with --build to measure the current code"
    fi
    # The same check for the profile-guided binary, which is kept between runs.
    if [[ -n $PGO ]] && (( $(stat -c %Y "$PGO_BIN") < committed )); then
        PGO_STALE=" (OLDER than the code at $(git -C "$REPO" rev-parse --short HEAD); rerun with --build)"
        log "WARNING: $PGO_BIN is older than the last commit; rerun with --build to measure the current code"
    fi
}
STALE=
PGO_STALE=

# free_ports N: N distinct free TCP ports on 127.0.0.1 (scripts/free-ports); ss
# double-checks that nothing listens there.
free_ports() {
    local ports
    ports=$("$REPO/scripts/free-ports" "$1")
    local p
    for p in $ports; do
        [[ -z $(ss -Hltn "sport = :$p") ]] || die "port $p already has a listener"
    done
    echo "$ports"
}

# ---------------------------------------------------------------- configs
# Generated at run time into $WORK (and copied to the results directory), so that
# the ports can be chosen freshly and nothing touches /etc.

# The TLS listener of a sluice config (NAME: sluice, sluice-pgo or sluice-base).
tls_listener_of() {
    [[ $HTTPS == 1 ]] || return 0
    printf '[[listener]]\nbind = "127.0.0.1:%s"\ntls = { cert = "%s", key = "%s" }\n' \
        "${TLS_PORT_OF[$1]}" "$WORK/cert.pem" "$WORK/key.pem"
}

# One self-signed ECDSA P-256 certificate for all three balancers (what Let's Encrypt
# issues by default for ECDSA keys); HAProxy wants certificate and key in one file.
write_certificate() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
        -subj /CN=localhost -addext subjectAltName=DNS:localhost \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null || die "openssl could not make a certificate"
    cat "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/combined.pem"
}

write_sluice_config() {
    local name=${1:-sluice} log=""
    if [[ -n $ACCESS_LOG && ( $name == sluice || $name == sluice-pgo ) ]]; then
        log="access_log = \"$WORK/$name-access.log\""
    fi
    cat >"$WORK/$name.toml" <<EOF
workers = $WORKERS
$log

[[listener]]
bind = "127.0.0.1:${PORT_OF[$name]}"
$(tls_listener_of "$name")

[[route]]
path = "/"
upstream = "app"

[upstream.app]
balance = "round_robin"
servers = ["127.0.0.1:$B1_PORT", "127.0.0.1:$B2_PORT"]
keepalive = 128
EOF
}

# nginx: its own prefix, pid file, error log and temp paths under $WORK, so it never
# reads /etc/nginx or collides with a system nginx. keepalive_requests is raised on
# both sides because nginx (since 1.19.10) closes a keep-alive connection after 1000
# requests by default; sluice and HAProxy do not, and reconnect costs would
# otherwise count against nginx only.
write_nginx_config() {
    mkdir -p "$WORK/nginx/logs"
    cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes $WORKERS;
worker_rlimit_nofile $NOFILE;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;

events {
    worker_connections 10240;
}

http {
    $(if [[ -n $ACCESS_LOG ]]; then echo "access_log $WORK/nginx/logs/access.log combined buffer=32k flush=1s;"; else echo "access_log off;"; fi)
    client_body_temp_path $WORK/nginx/client_body;
    proxy_temp_path       $WORK/nginx/proxy;
    fastcgi_temp_path     $WORK/nginx/fastcgi;
    uwsgi_temp_path       $WORK/nginx/uwsgi;
    scgi_temp_path        $WORK/nginx/scgi;
    keepalive_requests 1000000;

    upstream app {
        server 127.0.0.1:$B1_PORT;
        server 127.0.0.1:$B2_PORT;
        keepalive 128;
        keepalive_requests 1000000;
    }

    server {
        listen 127.0.0.1:${PORT_OF[nginx]};
$( [[ $HTTPS == 1 ]] && cat <<TLS
        listen 127.0.0.1:${TLS_PORT_OF[nginx]} ssl http2;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
TLS
)
        location / {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF
}

# HAProxy: no `log` lines, so no logging. `http-reuse always` keeps and shares idle
# server connections, the closest match to the other two's upstream keep-alive pools.
write_haproxy_config() {
    cat >"$WORK/haproxy.cfg" <<EOF
global
    nbthread $WORKERS
    maxconn $MAXCONN
    pidfile $WORK/haproxy.pid
$( [[ -n $ACCESS_LOG ]] && echo "    log stdout format raw local0" )

defaults
    mode http
$( [[ -n $ACCESS_LOG ]] && printf '    log global\n    option httplog\n' )
    option http-keep-alive
    http-reuse always
    maxconn $MAXCONN
    timeout connect 5s
    timeout client  30s
    timeout server  30s
    timeout http-keep-alive 30s

frontend fe
    bind 127.0.0.1:${PORT_OF[haproxy]}
$( [[ $HTTPS == 1 ]] && echo "    bind 127.0.0.1:${TLS_PORT_OF[haproxy]} ssl crt $WORK/combined.pem alpn h2,http/1.1" )
    default_backend app

backend app
    balance roundrobin
    server b1 127.0.0.1:$B1_PORT
    server b2 127.0.0.1:$B2_PORT
EOF
}

# ---------------------------------------------------------------- servers

start_all() {
    read -r B1_PORT B2_PORT PORT_OF[sluice] PORT_OF[nginx] PORT_OF[haproxy] PORT_OF[sluice-base] \
        TLS_PORT_OF[sluice] TLS_PORT_OF[nginx] TLS_PORT_OF[haproxy] BASE_TLS_PORT \
        PORT_OF[sluice-pgo] PGO_TLS_PORT <<<"$(free_ports 12)"
    [[ -n $BASELINE ]] && TLS_PORT_OF[sluice-base]=$BASE_TLS_PORT
    [[ -n $PGO ]] && TLS_PORT_OF[sluice-pgo]=$PGO_TLS_PORT
    [[ $HTTPS == 1 ]] || TLS_PORT_OF=()
    mkdir -p "$OUT/servers" "$OUT/configs"

    # One worker thread per backend keeps them cheap; they are shared by all three
    # balancers, so whatever limit they impose applies to all three equally.
    SLUICE_LOG=warn start b1 "$OUT/servers/b1.log" "$SLUICE_BIN" backend --listen "127.0.0.1:$B1_PORT" --name b1 --workers 1
    SLUICE_LOG=warn start b2 "$OUT/servers/b2.log" "$SLUICE_BIN" backend --listen "127.0.0.1:$B2_PORT" --name b2 --workers 1
    wait_ready b1 "$B1_PORT"
    wait_ready b2 "$B2_PORT"

    [[ $HTTPS == 1 ]] && write_certificate
    write_sluice_config
    write_nginx_config
    write_haproxy_config
    cp "$WORK/sluice.toml" "$WORK/nginx/nginx.conf" "$WORK/haproxy.cfg" "$OUT/configs/"

    SLUICE_LOG=warn start sluice "$OUT/servers/sluice.log" "$SLUICE_BIN" serve -c "$WORK/sluice.toml"
    if [[ -n $BASELINE ]]; then
        write_sluice_config sluice-base
        SLUICE_LOG=warn start sluice-base "$OUT/servers/sluice-base.log" "$BASELINE" serve -c "$WORK/sluice-base.toml"
    fi
    if [[ -n $PGO ]]; then
        write_sluice_config sluice-pgo
        SLUICE_LOG=warn start sluice-pgo "$OUT/servers/sluice-pgo.log" "$PGO_BIN" serve -c "$WORK/sluice-pgo.toml"
    fi
    # -e: the log nginx uses before it has read the config (default is /var/log/nginx).
    start nginx "$OUT/servers/nginx.log" nginx -p "$WORK/nginx/" -e "$WORK/nginx/logs/error.log" \
        -c "$WORK/nginx/nginx.conf" -g 'daemon off;'
    start haproxy "$OUT/servers/haproxy.log" haproxy -f "$WORK/haproxy.cfg" -db

    local b
    for b in "${BALANCERS[@]}"; do wait_ready "$b" "${PORT_OF[$b]}"; done
    if [[ $HTTPS == 1 ]]; then
        for b in "${!TLS_PORT_OF[@]}"; do wait_ready "$b" "${TLS_PORT_OF[$b]}" https; done
    fi
    log "backends on :$B1_PORT :$B2_PORT; sluice :${PORT_OF[sluice]} nginx :${PORT_OF[nginx]} haproxy :${PORT_OF[haproxy]}"
}

# verify NAME: prove the balancer really proxies to our backends before measuring it.
# Every response must be 200 with body b1/b2 and a matching X-Backend header; over
# six requests we expect to see both backends (a warning only: round robin across
# several workers does not promise strict alternation).
verify() {
    local name=$1 port=${PORT_OF[$1]} seen="" i head body
    for i in 1 2 3 4 5 6; do
        head=$(curl -s --max-time 2 -D - -o "$WORK/body" "http://127.0.0.1:$port/") || die "$name: curl failed"
        body=$(cat "$WORK/body")
        [[ $head =~ ^HTTP/1\.1\ 200 ]] || die "$name: expected 200, got: ${head%%$'\r'*}"
        [[ $body == b1 || $body == b2 ]] || die "$name: response body '$body' is not from a backend"
        grep -qi "^x-backend: $body" <<<"$head" || die "$name: X-Backend header missing or does not match body '$body'"
        [[ $seen == *$body* ]] || seen+="$body "
    done
    [[ $seen == *b1* && $seen == *b2* ]] || log "WARNING: $name sent all 6 check requests to ${seen% }"
    log "$name verified: responses from ${seen% }"
}

# verify_tls NAME: its TLS listener answers from a backend; log what was negotiated.
verify_tls() {
    local name=$1 port=${TLS_PORT_OF[$1]} out
    out=$(curl -sv -k --max-time 2 "https://127.0.0.1:$port/" 2>&1) || die "$name: curl over TLS failed"
    grep -qE '^(b1|b2)$' <<<"$out" || die "$name: the TLS listener's response is not from a backend"
    log "$name TLS verified: $(grep -o 'SSL connection using .*' <<<"$out" | head -n1)"
}

# ---------------------------------------------------------------- measurements

CLK_TCK=$(getconf CLK_TCK)

# cost_run NAME LOG WHAT CMD...: runs CMD (bounded, its output appended to LOG) with the
# balancer's CPU ticks and the host's reading taken around it, both written into LOG;
# sets TICKS to the ticks before and after.
cost_run() {
    local name=$1 log_file=$2 what=$3 before after host_before host_after
    shift 3
    read -r before host_before <<<"$(python3 "$HELPER" ticks "${PID_OF[$name]}" $$)"
    bounded $(( DUR + 30 )) "$@" >>"$log_file" 2>&1 || die "$name: $what failed (exit $?); see $log_file"
    read -r after host_after <<<"$(python3 "$HELPER" ticks "${PID_OF[$name]}" $$)"
    echo "# balancer CPU (utime+stime, process tree of pid ${PID_OF[$name]}): $before -> $after ticks at $CLK_TCK/s" >>"$log_file"
    echo "# host (steal/all/busy/ours ticks, PSI cpu some us): $host_before -> $host_after" >>"$log_file"
    TICKS=("$before" "$after")
}

# measure NAME ROUND: one saturation run and one fixed-rate run; append a JSON line
# with the parsed results to results.jsonl.
measure() {
    local name=$1 round=$2 port=${PORT_OF[$1]} url
    url="http://127.0.0.1:${PORT_OF[$1]}/"
    local wrk_log="$OUT/raw/r$round-$name-wrk.txt" h2_log="$OUT/raw/r$round-$name-h2load.txt"

    log "round $round: $name: wrk ${DUR}s"
    local wrk_cmd=(wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${DUR}s" --latency "$url")
    echo "# $name, round $round: ${wrk_cmd[*]}" >"$wrk_log"
    bounded $(( DUR + 30 )) "${wrk_cmd[@]}" >>"$wrk_log" 2>&1 || die "$name: wrk failed (exit $?); see $wrk_log"

    # Let the sockets and the CPU settle after saturation before the cost run.
    sleep 1
    log "round $round: $name: h2load ${EFFECTIVE_RATE} req/s for ${DUR}s"
    local h2_cmd=(h2load --h1 -c "$H2_CLIENTS" -t 1 --rps "$RPS_PER_CLIENT" -D "$DUR" "$url")
    echo "# $name, round $round: ${h2_cmd[*]}" >"$h2_log"
    cost_run "$name" "$h2_log" h2load "${h2_cmd[@]}"
    local before=${TICKS[0]} after=${TICKS[1]}

    kill -0 "${PID_OF[$name]}" 2>/dev/null || die "$name died during the measurement; see $OUT/servers/$name.log"
    local tls=()
    [[ -n ${TLS_PORT_OF[$name]:-} ]] && { sleep 1; measure_tls "$name" "$round"; tls=("${TLS_RESULT[@]}"); }
    python3 "$HELPER" record "$name" "$round" "$wrk_log" "$h2_log" "$before" "$after" "$CLK_TCK" "${tls[@]}" \
        >>"$OUT/results.jsonl"
    sleep 1
}

# measure_tls NAME ROUND: new connections per second (wrk, a new connection per request,
# its session resumed), then CPU per request over keep-alive TLS at the fixed rate
# (h2load). Sets TLS_RESULT to the two logs and the CPU ticks before and after; HTTP/2
# and the full handshakes add theirs.
measure_tls() {
    local name=$1 round=$2 url="https://127.0.0.1:${TLS_PORT_OF[$1]}/"
    local hs_log="$OUT/raw/r$round-$name-tls-wrk.txt" ka_log="$OUT/raw/r$round-$name-tls-h2load.txt"
    log "round $round: $name: TLS handshakes, wrk ${DUR}s"
    local wrk_cmd=(wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${DUR}s" --latency -H "Connection: close" "$url")
    echo "# $name, round $round: ${wrk_cmd[*]}" >"$hs_log"
    bounded $(( DUR + 30 )) "${wrk_cmd[@]}" >>"$hs_log" 2>&1 || die "$name: wrk over TLS failed; see $hs_log"
    sleep 1
    log "round $round: $name: keep-alive TLS, h2load ${EFFECTIVE_RATE} req/s for ${DUR}s"
    local h2_cmd=(h2load --h1 -c "$H2_CLIENTS" -t 1 --rps "$RPS_PER_CLIENT" -D "$DUR" "$url")
    echo "# $name, round $round: ${h2_cmd[*]}" >"$ka_log"
    cost_run "$name" "$ka_log" "h2load over TLS" "${h2_cmd[@]}"
    kill -0 "${PID_OF[$name]}" 2>/dev/null || die "$name died during the TLS measurement; see $OUT/servers/$name.log"
    TLS_RESULT=("$hs_log" "$ka_log" "${TICKS[@]}")
    sleep 1
    measure_h2 "$name" "$round" "$url"
    sleep 1
    measure_full_handshakes "$name" "$round" "$url"
}

# measure_full_handshakes NAME ROUND URL: the CPU a new client costs the balancer, a full
# handshake and one request per connection at HS_RATE new connections a second. No tool
# of the field makes full handshakes under load (wrk and oha resume their sessions), so
# the client is `sluice bench --tls-resume off`, the same for every balancer. Appends the
# log, the client's JSON report and the ticks to TLS_RESULT.
measure_full_handshakes() {
    local name=$1 round=$2 url=$3
    local log_file="$OUT/raw/r$round-$name-tls-full.txt" json="$WORK/r$round-$name-tls-full.json"
    log "round $round: $name: full TLS handshakes, $HS_RATE new connections/s for ${DUR}s"
    local cmd=("$SLUICE_BIN" bench "$url" --insecure --rate "$HS_RATE" -d "${DUR}s" --threads 1
        --max-in-flight 64 --no-keepalive --tls-resume off -q --json "$json")
    echo "# $name, round $round: ${cmd[*]}" >"$log_file"
    cost_run "$name" "$log_file" "full handshakes" "${cmd[@]}"
    kill -0 "${PID_OF[$name]}" 2>/dev/null || die "$name died during the full handshakes; see $OUT/servers/$name.log"
    TLS_RESULT+=("$log_file" "$json" "${TICKS[@]}")
}

# measure_h2 NAME ROUND URL: HTTP/2 (ALPN h2) at saturation, then at the fixed rate with
# the balancer's CPU read around it; appends the two logs and the ticks to TLS_RESULT.
measure_h2() {
    local name=$1 round=$2 url=$3
    local sat_log="$OUT/raw/r$round-$name-h2-sat.txt" cost_log="$OUT/raw/r$round-$name-h2-rate.txt"
    log "round $round: $name: HTTP/2 at saturation, h2load ${DUR}s"
    local sat_cmd=(h2load -t 2 -c 16 -m 16 -D "$DUR" "$url")
    echo "# $name, round $round: ${sat_cmd[*]}" >"$sat_log"
    bounded $(( DUR + 30 )) "${sat_cmd[@]}" >>"$sat_log" 2>&1 || die "$name: h2load (HTTP/2) failed; see $sat_log"
    grep -q "Application protocol: h2" "$sat_log" || die "$name: h2load did not get HTTP/2; see $sat_log"
    sleep 1
    log "round $round: $name: HTTP/2, h2load ${EFFECTIVE_RATE} req/s for ${DUR}s"
    local cost_cmd=(h2load -c "$H2_CLIENTS" -m 1 -t 1 --rps "$RPS_PER_CLIENT" -D "$DUR" "$url")
    echo "# $name, round $round: ${cost_cmd[*]}" >"$cost_log"
    cost_run "$name" "$cost_log" "h2load (HTTP/2, rate)" "${cost_cmd[@]}"
    TLS_RESULT+=("$sat_log" "$cost_log" "${TICKS[@]}")
}

# ---------------------------------------------------------------- report

machine_info() {
    local commit dirty=""
    commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
    [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no -- crates Cargo.toml Cargo.lock 2>/dev/null) ]] \
        && dirty=" (plus uncommitted changes under crates/ or Cargo.*)"
    echo "# sluice vs nginx vs HAProxy"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- command: \`$COMMAND_LINE\`"
    echo "- machine: $(nproc) CPUs ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)), kernel $(uname -r), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    # HEAD may have moved since the binary was built (others commit too), so say when it was built.
    echo "- sluice: $("$SLUICE_BIN" --version 2>&1 | head -n1), git $commit$dirty; binary built $(date -u -r "$SLUICE_BIN" '+%Y-%m-%d %H:%M:%S UTC')$STALE"
    [[ -n $PGO ]] && echo "- sluice-pgo: ${PGO_BIN#"$REPO"/} (scripts/build-pgo.sh; binary built $(date -u -r "$PGO_BIN" '+%Y-%m-%d %H:%M:%S UTC'))$PGO_STALE"
    [[ -n $BASELINE ]] && echo "- sluice-base: $BASELINE_NAME ($("$BASELINE" --version 2>&1 | head -n1), binary built $(date -u -r "$BASELINE" '+%Y-%m-%d %H:%M:%S UTC'))"
    echo "- nginx: $(nginx -v 2>&1 | head -n1)"
    echo "- haproxy: $(haproxy -v 2>&1 | head -n1)"
    echo "- wrk: $(wrk -v 2>&1 | head -n1 || true)"
    echo "- h2load: $(h2load --version 2>&1 | head -n1)"
    echo
    echo "Setup: two \`sluice backend --workers 1\` servers on 127.0.0.1 behind each balancer; every"
    echo "balancer runs $WORKERS workers with upstream keep-alive. Per balancer and round:"
    echo
    echo "- saturation: \`wrk -t$WRK_THREADS -c$WRK_CONNS -d${DUR}s --latency http://127.0.0.1:PORT/\`"
    echo "- cost: \`h2load --h1 -c $H2_CLIENTS -t 1 --rps $RPS_PER_CLIENT -D $DUR http://127.0.0.1:PORT/\`"
    echo "  ($H2_CLIENTS × $RPS_PER_CLIENT = $EFFECTIVE_RATE req/s); CPU = utime+stime of the balancer's process tree"
    echo "  (/proc/PID/stat, $CLK_TCK ticks/s) across the run, divided by the requests h2load completed."
    if [[ $HTTPS == 1 ]]; then
        echo "- HTTPS, on a second listener (one self-signed ECDSA P-256 certificate for all):"
        echo "  new connections/s = \`wrk -t$WRK_THREADS -c$WRK_CONNS -d${DUR}s --latency -H 'Connection: close' https://127.0.0.1:PORT/\`"
        echo "  (one request per connection, the TLS session resumed: wrk keeps it); keep-alive TLS cost = the h2load run above against https://."
        echo "- full handshakes: CPU per request of \`sluice bench https://127.0.0.1:PORT/ --insecure --rate $HS_RATE -d ${DUR}s --threads 1 --max-in-flight 64 --no-keepalive --tls-resume off\`"
        echo "  (a new connection, a full handshake and one request each), read as above."
        echo "- HTTP/2 on the same listener: saturation = \`h2load -t 2 -c 16 -m 16 -D $DUR https://127.0.0.1:PORT/\`;"
        echo "  cost = \`h2load -c $H2_CLIENTS -m 1 -t 1 --rps $RPS_PER_CLIENT -D $DUR https://127.0.0.1:PORT/\` with the CPU read as above."
        echo "- openssl: $(openssl version 2>&1 | head -n1)"
    fi
    echo
    echo "$RUNS round(s); balancer order rotated per round. Load generators, balancers and backends"
    echo "share the same $(nproc) CPUs, so absolute numbers are machine-specific; compare ratios."
    echo
}


# ---------------------------------------------------------------- main

main() {
    ensure_tools
    ensure_sluice

    # Results directory: bench/runs/<date>-compare; a second run on the same day gets
    # -2, -3, ... rather than overwriting the first.
    OUT=$REPO/bench/runs/$(date +%Y-%m-%d)-compare
    local n=2 base=$OUT
    while [[ -e $OUT ]]; do OUT=$base-$n; n=$((n + 1)); done
    mkdir -p "$OUT/raw"

    WORK=$(mktemp -d /tmp/sluice-compare.XXXXXX)
    # nginx workers drop root privileges (to nobody); let them traverse the temp dir.
    chmod 755 "$WORK"
    export EFFECTIVE_RATE

    # Servers and balancers hold many sockets; raise the soft limit if we can. HAProxy
    # refuses to start if maxconn needs more descriptors than it may open (about two per
    # connection), so we size maxconn and nginx's limit to what we really got; either
    # way it is far above the 64 connections we use.
    ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    NOFILE=$(ulimit -n)
    [[ $NOFILE == unlimited ]] && NOFILE=65536
    MAXCONN=$(( (NOFILE - 1000) / 2 ))
    (( MAXCONN > 20000 )) && MAXCONN=20000
    (( MAXCONN >= 1000 )) || die "open file limit $NOFILE is too low for the balancers; raise ulimit -n"

    log "results in $OUT"
    machine_info >"$OUT/summary.md"
    start_all
    local b
    for b in "${BALANCERS[@]}"; do verify "$b"; done
    for b in "${!TLS_PORT_OF[@]}"; do verify_tls "$b"; done

    # One short unrecorded warm-up per balancer: fills upstream keep-alive pools and
    # faults in code and memory, so round 1 is not penalised for going first.
    for b in "${BALANCERS[@]}"; do
        bounded 30 wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d1s "http://127.0.0.1:${PORT_OF[$b]}/" \
            >"$OUT/raw/warmup-$b-wrk.txt" 2>&1 || die "$b: warm-up wrk failed"
    done

    local round i k=${#BALANCERS[@]}
    for (( round = 1; round <= RUNS; round++ )); do
        # Rotate the order each round: round 1 sluice,nginx,haproxy; round 2 nginx,haproxy,sluice; ...
        for (( i = 0; i < k; i++ )); do
            measure "${BALANCERS[(i + round - 1) % k]}" "$round"
        done
    done

    {
        echo "## Results"
        echo
        python3 "$HELPER" report "$OUT/results.jsonl"
        echo
        echo "Raw output of every run (\`raw/\`), generated configs (\`configs/\`) and server logs (\`servers/\`): in \`raw.tar.xz\`;"
        echo "parsed numbers per run: \`results.jsonl\`."
    } >"$WORK/results.md"
    if [[ -n $ACCESS_LOG ]]; then
        # Proof that each balancer did log: lines written over the whole run.
        {
            echo
            echo "Access log lines written over the whole run (ACCESS_LOG=1):"
            echo "- sluice: $(wc -l <"$WORK/sluice-access.log" 2>/dev/null || echo 0)"
            echo "- nginx: $(wc -l <"$WORK/nginx/logs/access.log" 2>/dev/null || echo 0)"
            echo "- haproxy: $(grep -c ' HTTP/1.1"' "$OUT/servers/haproxy.log" 2>/dev/null || echo 0)"
        } >>"$WORK/results.md"
        # HAProxy logged to its stdout, the server log kept with the results: keep only
        # what else it said (the access lines run to a hundred megabytes).
        grep -v ' HTTP/1.1"' "$OUT/servers/haproxy.log" >"$WORK/haproxy-other.log" || true
        mv "$WORK/haproxy-other.log" "$OUT/servers/haproxy.log"
    fi
    cat "$WORK/results.md" >>"$OUT/summary.md"

    # Anything the balancers or backends complained about is worth a look.
    for b in b1 b2 "${BALANCERS[@]}"; do
        [[ -s $OUT/servers/$b.log ]] && log "note: $b wrote to its log: $OUT/servers/$b.log"
    done
    [[ -s $WORK/nginx/logs/error.log ]] && cp "$WORK/nginx/logs/error.log" "$OUT/servers/nginx-error.log" \
        && log "note: nginx error log is not empty: $OUT/servers/nginx-error.log"

    cat "$WORK/results.md"
    # Raw outputs, configs and server logs into one raw.tar.xz; the index updated.
    python3 "$REPO/bench/runs.py" pack "$OUT" && python3 "$REPO/bench/runs.py" index
    log "summary: $OUT/summary.md"
}

main
