#!/usr/bin/env bash
# bench/compress.sh: CPU per request of response compression, sluice against nginx, on
# the same 100 KiB JSON response, at gzip level 1, gzip level 6 and brotli quality 4.
#
# One nginx serves the JSON as a static file (no compression of its own): the backend.
# In front of it, in turn, nginx (2 workers, `gzip on` with `gzip_comp_level`, or
# `brotli on` with `brotli_comp_level` from libnginx-mod-http-brotli-filter) and sluice
# (2 workers, `compress = { gzip = LEVEL }` or `{ br = 4 }`), each proxying to it with
# keep-alive. The same client (`wrk -t1 -c16`, with `Accept-Encoding: gzip` or `br`)
# loads each front for DUR seconds; the front's CPU time (utime+stime of its process
# tree, /proc/PID/stat) over the run, divided by the requests wrk completed, is the CPU
# per request. Each answer's compressed size is read with curl. Repeated RUNS times,
# the fronts interleaved, the order turned each round; medians, and ratios to nginx.
# gzip 1 is not the same work on both sides: zlib-rs's level 1 makes ~22% larger
# output than nginx's zlib at level 1 (the sizes column shows it).
#
# Usage: [RUNS=3] [DUR=10] bench/compress.sh
# Results: bench/runs/<date>-compress/ (summary.md, results.jsonl). Installs nginx and
# the brotli module if missing (root).

set -euo pipefail
RUNS=${RUNS:-3}
DUR=${DUR:-10}
NAME=compress
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if [[ ! -e /usr/lib/nginx/modules/ngx_http_brotli_filter_module.so ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnginx-mod-http-brotli-filter
fi
need wrk || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; }
(cd "$REPO" && cargo build --locked --release -p sluice)

BACKEND=19601
declare -A PORT=([sluice]=19610 [nginx]=19611)
CASES=(gzip-1 gzip-6 br-4)
TICK=$(getconf CLK_TCK)

# The body: 100 KiB of JSON rows, as an API answers them.
make_body() {
    mkdir -p "$WORK/www"
    python3 - "$WORK/www/data.json" <<'PY'
import json, sys
rows, size, i = [], 0, 0
while size < 100 * 1024:
    row = {"id": i, "name": f"user {i}", "email": f"user{i}@example.com", "active": i % 3 == 0, "score": (i * 7919) % 1000}
    rows.append(row); size += len(json.dumps(row)) + 2; i += 1
open(sys.argv[1], "w").write(json.dumps(rows, indent=1)[: 100 * 1024 + 512])
PY
    # nginx's workers are not root: they must reach the file.
    chmod 755 "$WORK" "$WORK/www"
    chmod 644 "$WORK/www/data.json"
}

# nginx.conf for `role` (backend, or front with a case): its http block's body.
nginx_conf() {
    local dir=$WORK/nginx-$1 http=$2 modules=${3:-}
    mkdir -p "$dir"
    cat >"$dir/nginx.conf" <<CFG
$modules
worker_processes ${4:-2};
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/body; proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fcgi; uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
    $http
}
CFG
}

write_backend() {
    nginx_conf backend "gzip off; server { listen 127.0.0.1:$BACKEND; root $WORK/www; default_type application/json; types { application/json json; } }" "" 1
}

# The two fronts for case `coding-level`.
write_fronts() {
    local coding=${1%-*} level=${1#*-} nginx_zip sluice_zip modules=""
    if [[ $coding == gzip ]]; then
        nginx_zip="gzip on; gzip_comp_level $level; gzip_types application/json; gzip_min_length 256;"
        sluice_zip="{ gzip = $level, types = [\"application/json\"] }"
    else
        modules="load_module /usr/lib/nginx/modules/ngx_http_brotli_filter_module.so;"
        nginx_zip="brotli on; brotli_comp_level $level; brotli_types application/json; brotli_min_length 256; gzip off;"
        sluice_zip="{ br = $level, types = [\"application/json\"] }"
    fi
    nginx_conf front "$nginx_zip upstream app { server 127.0.0.1:$BACKEND; keepalive 32; } server { listen 127.0.0.1:${PORT[nginx]}; location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }" "$modules"
    cat >"$WORK/sluice.toml" <<CFG
workers = 2
[[listener]]
bind = "127.0.0.1:${PORT[sluice]}"
[[route]]
upstream = "app"
compress = $sluice_zip
[upstream.app]
servers = ["127.0.0.1:$BACKEND"]
CFG
}

# CPU ticks of PID and its children (nginx's workers).
ticks() {
    local total=0 p
    for p in "$1" $(pgrep -P "$1" || true); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}

start_front() {
    case $1 in
        sluice) SLUICE_LOG=warn "$BIN/sluice" serve -c "$WORK/sluice.toml" >>"$WORK/sluice.log" 2>&1 & ;;
        nginx) nginx -c "$WORK/nginx-front/nginx.conf" -g 'daemon off;' >>"$WORK/nginx.log" 2>&1 & ;;
    esac
    echo $!
}

# One measurement: front `lb`, case `case`, round `run`; one JSON line.
measure() {
    local lb=$1 case=$2 run=$3 coding=${2%-*} pid before after requests size
    pid=$(start_front "$lb")
    PIDS+=("$pid")
    wait_port "${PORT[$lb]}" || { log "$lb did not start:"; tail -5 "$WORK/$lb.log" >&2; exit 1; }
    local url=http://127.0.0.1:${PORT[$lb]}/data.json
    # Measured only when the front does compress: 200, the coding named, fewer bytes.
    curl -s -D "$WORK/head" -H "Accept-Encoding: $coding" -o "$WORK/body" "$url"
    size=$(wc -c <"$WORK/body")
    if ! head -1 "$WORK/head" | grep -q ' 200' || ! grep -qi "^content-encoding: $coding" "$WORK/head" || ((size > 60000)); then
        log "$lb did not answer $case compressed:"; cat "$WORK/head" >&2; exit 1
    fi
    wrk -t1 -c16 -d1s -H "Accept-Encoding: $coding" "$url" >/dev/null # warm-up
    before=$(ticks "$pid")
    wrk -t1 -c16 -d"${DUR}s" -H "Accept-Encoding: $coding" "$url" >"$WORK/wrk-$lb-$case-$run.txt"
    after=$(ticks "$pid")
    requests=$(awk '/requests in/ {print $1}' "$WORK/wrk-$lb-$case-$run.txt")
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    python3 -c "import json,sys; t,r=int(sys.argv[4]),int(sys.argv[5]); print(json.dumps({'front':sys.argv[1],'case':sys.argv[2],'run':int(sys.argv[3]),'cpu_us_per_request':round(t/int(sys.argv[7])*1e6/r,1),'requests':r,'bytes':int(sys.argv[6])}))" \
        "$lb" "$case" "$run" "$((after - before))" "$requests" "$size" "$TICK"
}

main() {
    make_body
    write_backend
    nginx -c "$WORK/nginx-backend/nginx.conf" -g 'daemon off;' >>"$WORK/backend.log" 2>&1 &
    PIDS+=($!)
    wait_port "$BACKEND"
    local out order=(sluice nginx)
    out=$(new_run_dir compress)
    : >"$out/results.jsonl"
    for run in $(seq "$RUNS"); do
        for case in "${CASES[@]}"; do
            write_fronts "$case"
            for lb in "${order[@]}"; do
                log "run $run: $case: $lb"
                measure "$lb" "$case" "$run" | tee -a "$out/results.jsonl"
                sleep 0.5
            done
        done
        order=("${order[1]}" "${order[0]}")
    done
    summarise "$out" | tee "$out/summary.md"
}

summarise() {
    python3 - "$1" "$RUNS" "$DUR" "$(git -C "$REPO" rev-parse --short HEAD)" "$(nginx -v 2>&1 | sed 's/.*nginx\///')" <<'PY'
import json, statistics, sys
out, runs, dur, commit, nginx = sys.argv[1:6]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
med = lambda lb, case, k: statistics.median(r[k] for r in rows if r["front"] == lb and r["case"] == case)
print(f"# Compression: CPU per request, 100 KiB JSON, medians of {runs} runs (sluice {commit}, nginx {nginx})\n")
print(f"command: `RUNS={runs} DUR={dur} bench/compress.sh`\n")
print("| case | sluice µs/req | nginx µs/req | sluice ÷ nginx | sluice bytes | nginx bytes |")
print("|---|---:|---:|---:|---:|---:|")
for case in ["gzip-1", "gzip-6", "br-4"]:
    s, n = med("sluice", case, "cpu_us_per_request"), med("nginx", case, "cpu_us_per_request")
    print(f"| {case} | {s:.0f} | {n:.0f} | {s / n:.2f}× | {med('sluice', case, 'bytes'):.0f} | {med('nginx', case, 'bytes'):.0f} |")
PY
}

main "$@"
