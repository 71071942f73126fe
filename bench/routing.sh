#!/usr/bin/env bash
# bench/routing.sh: what nginx-style routing costs per request (issue 52): a route found
# by a regular expression whose rewrite gives the server's path, against a plain prefix
# route, in sluice and (for reference) in nginx, on this machine, in one run.
#
# Both balancers (2 workers, upstream keep-alive) sit in front of the same two `sluice
# backend` servers on 127.0.0.1, with the same two routes (nginx: locations):
#   prefix   /plain/a/b       path = "/plain/"                      (location /plain/)
#   regex    /re/posts/a/b    regex = '^/re/(\w+)/(.*)$' with a rewrite to
#                             /plain/$2?tab=$1, flag break          (location ~ ... { rewrite ... break; })
# The prefix request is also tried against the regex (nginx's rule: regexes after the
# longest prefix, unless `^~`), which fails at its anchor; the regex request is matched,
# its groups taken and its path rewritten.
# CPU per request as bench/compare.sh reads it: `h2load --h1 -c CLIENTS -t 1 --rps R -D DUR`
# at a fixed rate, the balancer's utime+stime (its whole process tree) before and after,
# divided by the requests h2load completed; the host's stolen and busy ticks around it
# (compare_stats.py). RUNS rounds; in each, every balancer and route in turn, the order
# rotated per round; medians. Loopback only; every run is bounded.
#
# Usage:  [RUNS=5] [DUR=5] [RATE=5000] [CLIENTS=40] bench/routing.sh
# Results: bench/runs/<date>-routing/ (summary.md, results.jsonl; the raw h2load output
# and the configs in raw.tar.xz, packed by bench/runs.py).

set -euo pipefail
RUNS=${RUNS:-5}
DUR=${DUR:-5}
CLIENTS=${CLIENTS:-40}
RATE=$(( ${RATE:-5000} / CLIENTS * CLIENTS ))
NAME=routing
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
STATS=$REPO/bench/compare_stats.py
need h2load || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client; }
(cd "$REPO" && cargo build --locked --release -p sluice)

BALANCERS=(sluice nginx)
# case path
CASES=("prefix /plain/a/b" "regex /re/posts/a/b")
declare -A PORT PID
read -r B1 B2 PORT[sluice] PORT[nginx] <<<"$("$REPO/scripts/free-ports" 4)"

write_configs() {
    {
        printf 'workers = 2\n[[listener]]\nbind = "127.0.0.1:%s"\n' "${PORT[sluice]}"
        printf '[[route]]\npath = "/plain/"\nupstream = "app"\n'
        printf "[[route]]\nregex = '^/re/(\\\\w+)/(.*)\$'\nupstream = \"app\"\n"
        printf "rewrite = [{ regex = '^/re/(\\\\w+)/(.*)\$', to = \"/plain/\$2?tab=\$1\", flag = \"break\" }]\n"
        printf '[upstream.app]\nservers = ["127.0.0.1:%s", "127.0.0.1:%s"]\nkeepalive = 128\n' "$B1" "$B2"
    } >"$WORK/sluice.toml"
    write_nginx_conf "${PORT[nginx]}" "        location /plain/ { proxy_pass http://app; }
        location ~ ^/re/(\\w+)/(.*)\$ { rewrite ^/re/(\\w+)/(.*)\$ /plain/\$2?tab=\$1 break; proxy_pass http://app; }"
}

# check BALANCER: both routes answer 200 from a backend.
check() {
    local b=$1 spec path got
    for spec in "${CASES[@]}"; do
        path=${spec#* }
        got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:${PORT[$b]}$path")
        [[ $got == 200 ]] || { log "$b: $path answered $got, not 200"; exit 1; }
    done
    log "$b: both routes answer 200"
}

# measure BALANCER ROUND CASE PATH: one fixed-rate run with the balancer's CPU read around it.
measure() {
    local b=$1 round=$2 case=$3 path=$4 raw before after
    raw=$OUT/raw/r$round-$b-$case.txt
    log "round $round: $b: $case for ${DUR}s"
    local cmd=(h2load --h1 -c "$CLIENTS" -t 1 --rps $(( RATE / CLIENTS )) -D "$DUR" "http://127.0.0.1:${PORT[$b]}$path")
    echo "# ${cmd[*]}" >"$raw"
    before=$(python3 "$STATS" ticks "${PID[$b]}" $$)
    timeout --kill-after=5 $(( DUR + 30 )) "${cmd[@]}" >>"$raw" 2>&1 || { log "h2load failed: see $raw"; exit 1; }
    after=$(python3 "$STATS" ticks "${PID[$b]}" $$)
    echo "# balancer CPU (utime+stime, process tree of pid ${PID[$b]}): ${before%% *} -> ${after%% *} ticks" >>"$raw"
    echo "# host (steal/all/busy/ours ticks, PSI cpu some us): ${before#* } -> ${after#* }" >>"$raw"
    summarise record "$b" "$round" "$case" "$raw" "${before%% *}" "${after%% *}" >>"$OUT/results.jsonl"
    sleep 1
}

main() {
    OUT=$(new_run_dir routing)
    mkdir -p "$OUT/raw" "$OUT/configs"
    log "results in $OUT"
    local load_avg b n port=("$B1" "$B2") spec round i
    load_avg=$(cut -d' ' -f1-3 /proc/loadavg)
    write_configs
    for n in 1 2; do
        SLUICE_LOG=warn "$BIN/sluice" backend --listen "127.0.0.1:${port[n - 1]}" --name "b$n" --workers 1 >>"$WORK/b$n.log" 2>&1 &
        PIDS+=($!)
        wait_port "${port[n - 1]}" || { log "backend b$n did not start"; exit 1; }
    done
    for b in "${BALANCERS[@]}"; do
        start_balancer "$b" >"$WORK/$b.pid"
        PID[$b]=$(<"$WORK/$b.pid")
        PIDS+=("${PID[$b]}")
        wait_port "${PORT[$b]}" || { log "$b did not start:"; tail -5 "$WORK/$b.log" >&2; exit 1; }
        check "$b"
    done
    : >"$OUT/results.jsonl"
    local runs=()
    for b in "${BALANCERS[@]}"; do for spec in "${CASES[@]}"; do runs+=("$b $spec"); done; done
    for (( round = 1; round <= RUNS; round++ )); do
        for (( i = 0; i < ${#runs[@]}; i++ )); do
            read -r b name path <<<"${runs[(i + round - 1) % ${#runs[@]}]}"
            measure "$b" "$round" "$name" "$path"
        done
    done
    cp "$WORK/sluice.toml" "$WORK/nginx/nginx.conf" "$OUT/configs/"
    sed -i "s|$WORK|WORK|g" "$OUT"/configs/*
    {
        echo "# Routing: a regex route with a rewrite against a prefix route, CPU per request"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
        echo "- command: \`RUNS=$RUNS DUR=$DUR RATE=$RATE CLIENTS=$CLIENTS bench/routing.sh\`"
        echo "- machine: $(nproc) CPUs, kernel $(uname -r), load average at start: $load_avg"
        echo "- sluice: $("$BIN/sluice" --version), git $(git -C "$REPO" rev-parse --short HEAD); nginx: $(nginx -v 2>&1)"
        echo
        summarise report "$OUT/results.jsonl"
    } >"$OUT/summary.md"
    cat "$OUT/summary.md"
    python3 "$REPO/bench/runs.py" pack "$OUT" && python3 "$REPO/bench/runs.py" index
}

# summarise record ... | report RESULTS: one run's JSON line, or the Markdown report.
summarise() {
    BENCH=$REPO/bench RATE=$RATE DUR=$DUR CLIENTS=$CLIENTS python3 - "$@" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["BENCH"])
from compare_stats import contention, median, parse_h2load

def record(b, rnd, case, raw, t0, t1):
    run = parse_h2load(open(raw).read())
    hz, done, ticks = os.sysconf("SC_CLK_TCK"), run["requests"]["done"], int(t1) - int(t0)
    print(json.dumps({"balancer": b, "round": int(rnd), "case": case, "cpu_ticks": ticks,
                      "cpu_us_per_req": ticks / hz * 1e6 / done if done else None,
                      "not_200": done - run["status"].get("2xx", 0), "h2load": run}))

def report(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    env, rounds = os.environ, max(r["round"] for r in recs)
    print(f"CPU µs per request (the balancer's whole process tree), medians of {rounds} rounds; every run "
          f"`h2load --h1 -c {env['CLIENTS']} -t 1 --rps {int(env['RATE']) // int(env['CLIENTS'])} -D {env['DUR']}` "
          f"({int(env['RATE']):,} req/s).\n")
    print("| balancer | prefix | regex + rewrite | regex / prefix | per-round ratios | not 200 | contended runs |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for b in ("sluice", "nginx"):
        runs = lambda case: sorted((r for r in recs if r["balancer"] == b and r["case"] == case), key=lambda r: r["round"])
        p, x = median([r["cpu_us_per_req"] for r in runs("prefix")]), median([r["cpu_us_per_req"] for r in runs("regex")])
        per = [f"{rx['cpu_us_per_req'] / rp['cpu_us_per_req']:.3f}" for rp, rx in zip(runs("prefix"), runs("regex"))
               if rp["cpu_us_per_req"] and rx["cpu_us_per_req"]]
        bad = sum(r["not_200"] for r in runs("prefix") + runs("regex"))
        busy = sum(1 for r in runs("prefix") + runs("regex") if contention(r["h2load"]))
        ratio = f"{x / p:.3f}" if p and x else "n/a"
        print(f"| {b} | {p:.2f} | {x:.2f} | {ratio} | {', '.join(per)} | {bad} | {busy} |")
    print("\nA run is contended when other guests stole more than 5% of the CPU or other programs "
          "took more than 10% (compare_stats.py).")

{"record": record, "report": report}[sys.argv[1]](*sys.argv[2:])
PY
}

main "$@"
