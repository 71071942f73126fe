# bench/lib.sh: what tunnels.sh, idle.sh, syscalls.sh, guards.sh and routing.sh share. Sourced, not run.
# Before sourcing, set NAME (the log prefix). Sets REPO, CARGO_TARGET_DIR, BIN, WORK,
# PIDS and NOFILE; defines start_balancer and new_run_dir; installs nginx and HAProxy if missing; stops every pid in PIDS and
# removes WORK on exit.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
BIN=$CARGO_TARGET_DIR/release
WORK=$(mktemp -d)
PIDS=()
log() { printf '[%s %s] %s\n' "$NAME" "$(date +%H:%M:%S)" "$*" >&2; }

cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    sleep 1
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

need() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; }
if ! need nginx || ! need haproxy; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx haproxy
fi

ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)

# wait_port PORT: true once something accepts on 127.0.0.1:PORT (10 s at most).
wait_port() {
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# start_balancer NAME: starts sluice, nginx or HAProxy on its config in WORK (sluice.toml,
# nginx/nginx.conf, haproxy.cfg), its output in WORK/NAME.log; prints its pid.
start_balancer() {
    case $1 in
        sluice) SLUICE_LOG=warn "$BIN/sluice" serve -c "$WORK/sluice.toml" >>"$WORK/sluice.log" 2>&1 & ;;
        nginx) nginx -c "$WORK/nginx/nginx.conf" -g 'daemon off;' >>"$WORK/nginx.log" 2>&1 & ;;
        haproxy) haproxy -f "$WORK/haproxy.cfg" -db >>"$WORK/haproxy.log" 2>&1 & ;;
    esac
    echo $!
}

# write_nginx_conf PORT LOCATIONS: WORK/nginx/nginx.conf for the benches that compare
# routes: 2 workers, upstream `app` of the backends on ports B1 and B2 with keep-alive,
# one server on 127.0.0.1:PORT holding LOCATIONS. As compare.sh's, keep-alive requests
# are unbounded on both sides (nginx closes a connection after 1000 by default, a
# reconnect cost the other would not pay).
write_nginx_conf() {
    mkdir -p "$WORK/nginx"
    cat >"$WORK/nginx/nginx.conf" <<CFG
worker_processes 2; worker_rlimit_nofile $NOFILE;
pid $WORK/nginx/nginx.pid; error_log $WORK/nginx/error.log warn;
events { worker_connections 10240; }
http {
    access_log off; keepalive_requests 1000000;
    client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy; fastcgi_temp_path $WORK/nginx/fcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
    upstream app { server 127.0.0.1:$B1; server 127.0.0.1:$B2; keepalive 128; keepalive_requests 1000000; }
    server {
        listen 127.0.0.1:$1;
        proxy_http_version 1.1; proxy_set_header Connection "";
$2
    }
}
CFG
}

# new_run_dir KIND: makes and prints bench/runs/<date>-KIND, or -KIND-2, -3... if taken.
new_run_dir() {
    local base out n=2
    base=$REPO/bench/runs/$(date +%Y-%m-%d)-$1
    out=$base
    while [[ -e $out ]]; do out=$base-$n; n=$((n + 1)); done
    mkdir -p "$out"
    echo "$out"
}
