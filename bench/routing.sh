#!/usr/bin/env bash
# bench/routing.sh: what nginx-style routing costs per request (issue 52): a route found
# by a regular expression whose rewrite gives the server's path, against a plain prefix
# route, in sluice and (for reference) in nginx, on this machine, in one run.
#
# Both balancers (2 workers, upstream keep-alive) sit in front of the same two `sluice
# backend` servers on 127.0.0.1, with the same two routes (nginx: locations):
#   prefix   /plain/a/b?tab=posts  path = "/plain/"                 (location /plain/)
#   regex    /re/posts/a/b    regex = '^/re/(\w+)/(.*)$' with a rewrite to
#                             /plain/$2?tab=$1, flag break          (location ~ ... { rewrite ... break; })
# The prefix request is also tried against the regex (nginx's rule: regexes after the
# longest prefix, unless `^~`), which fails at its anchor; the regex request is matched,
# its groups taken and its path rewritten.
# Both cases are served with the same server request (`/plain/a/b?tab=posts`), so the
# difference is routing's alone.
#
# CPU per request, measured in pairs: each balancer runs twice (two instances, same
# config); in a round the two cases load the two instances at once (`h2load --h1 -c
# CLIENTS -t 1 --rps R -D DUR` each, a fixed rate), so both see the same machine (this
# one is shared: what other guests take moves a run by ±15%, and moves both alike); the
# instances swap cases every round. The CPU is each instance's process tree's on-CPU
# nanoseconds (schedstat) before and after, divided by the requests h2load completed.
# The figure is the median of the rounds' regex/prefix ratios. RUNS rounds; loopback
# only; every run is bounded.
#
# Usage:  [RUNS=10] [DUR=5] [RATE=5000] [CLIENTS=40] [SLUICE=BINARY] bench/routing.sh
#   SLUICE  a sluice binary to measure (an older build, to compare) instead of this
#           checkout's release build.
# Results: bench/runs/<date>-routing/ (summary.md, results.jsonl; the raw h2load output
# and the configs in raw.tar.xz, packed by bench/runs.py).

set -euo pipefail
RUNS=${RUNS:-10}
DUR=${DUR:-5}
CLIENTS=${CLIENTS:-40}
RATE=$(( ${RATE:-5000} / CLIENTS * CLIENTS ))
NAME=routing
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
STATS=$REPO/bench/compare_stats.py
need h2load || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client; }
GIVEN=${SLUICE:+SLUICE=$SLUICE }
if [[ -z ${SLUICE:-} ]]; then
    (cd "$REPO" && cargo build --locked --release -p sluice)
    SLUICE=$BIN/sluice
fi

BALANCERS=(sluice nginx)
# case path: both give the server /plain/a/b?tab=posts.
CASES=("prefix /plain/a/b?tab=posts" "regex /re/posts/a/b")
declare -A PORT PID
read -r B1 B2 PORT[sluice1] PORT[sluice2] PORT[nginx1] PORT[nginx2] <<<"$("$REPO/scripts/free-ports" 6 | tr "\n" " ")"

# write_configs: sluice1.toml, sluice2.toml, nginx1/ and nginx2/ in WORK, alike but for
# their ports.
write_configs() {
    local n
    for n in 1 2; do
        {
            printf 'workers = 2\n[[listener]]\nbind = "127.0.0.1:%s"\n' "${PORT[sluice$n]}"
            printf '[[route]]\npath = "/plain/"\nupstream = "app"\n'
            printf "[[route]]\nregex = '^/re/(\\\\w+)/(.*)\$'\nupstream = \"app\"\n"
            printf "rewrite = [{ regex = '^/re/(\\\\w+)/(.*)\$', to = \"/plain/\$2?tab=\$1\", flag = \"break\" }]\n"
            printf '[upstream.app]\nservers = ["127.0.0.1:%s", "127.0.0.1:%s"]\nkeepalive = 128\n' "$B1" "$B2"
        } >"$WORK/sluice$n.toml"
        write_nginx_conf "${PORT[nginx$n]}" "        location /plain/ { proxy_pass http://app; }
        location ~ ^/re/(\\w+)/(.*)\$ { rewrite ^/re/(\\w+)/(.*)\$ /plain/\$2?tab=\$1 break; proxy_pass http://app; }"
        rm -rf "$WORK/nginx$n"
        mv "$WORK/nginx" "$WORK/nginx$n"
        sed -i "s|$WORK/nginx/|$WORK/nginx$n/|g" "$WORK/nginx$n/nginx.conf"
    done
}

# start INSTANCE (sluice1, nginx2...): prints its pid.
start() {
    local b=${1%?} n=${1: -1}
    case $b in
        sluice) SLUICE_LOG=warn "$SLUICE" serve -c "$WORK/sluice$n.toml" >>"$WORK/$1.log" 2>&1 & ;;
        nginx) nginx -c "$WORK/nginx$n/nginx.conf" -g 'daemon off;' >>"$WORK/$1.log" 2>&1 & ;;
    esac
    echo $!
}

# check INSTANCE: both routes answer 200 from a backend.
check() {
    local spec path got
    for spec in "${CASES[@]}"; do
        path=${spec#* }
        got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:${PORT[$1]}$path")
        [[ $got == 200 ]] || { log "$1: $path answered $got, not 200"; exit 1; }
    done
}

# pair BALANCER ROUND: the two cases at once, on the balancer's two instances (which
# take which alternates by round); each case's CPU read around its run.
pair() {
    local b=$1 round=$2 first second spec case path raw h2pids=() before after i=0
    if (( round % 2 )); then first=${b}1 second=${b}2; else first=${b}2 second=${b}1; fi
    local inst=("$first" "$second")
    log "round $round: $b: prefix on $first, regex on $second, ${DUR}s"
    read -r -d '' -a before < <(python3 "$STATS" ns "${PID[$first]}" "${PID[$second]}" && printf '\0')
    for spec in "${CASES[@]}"; do
        read -r case path <<<"$spec"
        raw=$OUT/raw/r$round-$b-$case.txt
        local cmd=(h2load --h1 -c "$CLIENTS" -t 1 --rps $(( RATE / CLIENTS )) -D "$DUR" "http://127.0.0.1:${PORT[${inst[i]}]}$path")
        echo "# ${cmd[*]}" >"$raw"
        timeout --kill-after=5 $(( DUR + 30 )) "${cmd[@]}" >>"$raw" 2>&1 &
        h2pids+=($!)
        i=$((i + 1))
    done
    for i in 0 1; do wait "${h2pids[i]}" || { log "h2load failed: see $OUT/raw"; exit 1; }; done
    read -r -d '' -a after < <(python3 "$STATS" ns "${PID[$first]}" "${PID[$second]}" && printf '\0')
    i=0
    for spec in "${CASES[@]}"; do
        read -r case path <<<"$spec"
        raw=$OUT/raw/r$round-$b-$case.txt
        echo "# ${inst[i]} on-CPU ns (process tree of pid ${PID[${inst[i]}]}): ${before[i]} -> ${after[i]}" >>"$raw"
        summarise record "$b" "$round" "$case" "${inst[i]}" "$raw" "${before[i]}" "${after[i]}" >>"$OUT/results.jsonl"
        i=$((i + 1))
    done
    sleep 1
}

main() {
    OUT=$(new_run_dir routing)
    mkdir -p "$OUT/raw" "$OUT/configs"
    log "results in $OUT"
    local load_avg b n port=("$B1" "$B2") round inst
    load_avg=$(cut -d' ' -f1-3 /proc/loadavg)
    write_configs
    for n in 1 2; do
        SLUICE_LOG=warn "$BIN/sluice" backend --listen "127.0.0.1:${port[n - 1]}" --name "b$n" --workers 1 >>"$WORK/b$n.log" 2>&1 &
        PIDS+=($!)
        wait_port "${port[n - 1]}" || { log "backend b$n did not start"; exit 1; }
    done
    for b in "${BALANCERS[@]}"; do
        for inst in "${b}1" "${b}2"; do
            PID[$inst]=$(start "$inst")
            PIDS+=("${PID[$inst]}")
            wait_port "${PORT[$inst]}" || { log "$inst did not start:"; tail -5 "$WORK/$inst.log" >&2; exit 1; }
            check "$inst"
        done
    done
    log "every instance answers both routes with 200"
    : >"$OUT/results.jsonl"
    for (( round = 1; round <= RUNS; round++ )); do
        for (( n = 0; n < ${#BALANCERS[@]}; n++ )); do
            pair "${BALANCERS[(n + round) % ${#BALANCERS[@]}]}" "$round"
        done
    done
    cp "$WORK/sluice1.toml" "$WORK/nginx1/nginx.conf" "$OUT/configs/"
    sed -i "s|$WORK|WORK|g" "$OUT"/configs/*
    {
        echo "# Routing: a regex route with a rewrite against a prefix route, CPU per request"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
        echo "- command: \`${GIVEN}RUNS=$RUNS DUR=$DUR RATE=$RATE CLIENTS=$CLIENTS bench/routing.sh\`"
        echo "- machine: $(nproc) CPUs, kernel $(uname -r), load average at start: $load_avg"
        echo "- sluice: $("$SLUICE" --version) ($SLUICE), checkout at git $(git -C "$REPO" rev-parse --short HEAD); nginx: $(nginx -v 2>&1)"
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
from compare_stats import median, parse_h2load

def record(b, rnd, case, inst, raw, t0, t1):
    run = parse_h2load(open(raw).read())
    done, ns = run["requests"]["done"], int(t1) - int(t0)
    print(json.dumps({"balancer": b, "round": int(rnd), "case": case, "instance": inst, "cpu_ns": ns,
                      "cpu_us_per_req": ns / 1e3 / done if done else None,
                      "not_200": done - run["status"].get("2xx", 0), "h2load": run}))

def report(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    env, rounds = os.environ, max(r["round"] for r in recs)
    print(f"CPU µs per request (each instance's whole process tree, on-CPU ns), {rounds} rounds; in each, "
          f"both cases at once on two instances of the balancer, each "
          f"`h2load --h1 -c {env['CLIENTS']} -t 1 --rps {int(env['RATE']) // int(env['CLIENTS'])} -D {env['DUR']}` "
          f"({int(env['RATE']):,} req/s); the instances swap cases every round.\n")
    print("| balancer | prefix | regex + rewrite | regex / prefix (median of rounds) | middle half of the rounds | per-round ratios | not 200 |")
    print("|---|---:|---:|---:|---|---|---:|")
    for b in ("sluice", "nginx"):
        cost = {(r["round"], r["case"]): r["cpu_us_per_req"] for r in recs if r["balancer"] == b}
        ratios = [cost[(n, "regex")] / cost[(n, "prefix")] for n in range(1, rounds + 1)
                  if cost.get((n, "prefix")) and cost.get((n, "regex"))]
        p = median([v for (_, c), v in cost.items() if c == "prefix" and v])
        x = median([v for (_, c), v in cost.items() if c == "regex" and v])
        q = sorted(ratios)
        middle = f"{q[len(q) // 4]:.3f} - {q[(3 * len(q) - 1) // 4]:.3f}" if q else "n/a"
        bad = sum(r["not_200"] for r in recs if r["balancer"] == b)
        ratio = f"{median(ratios):.3f}" if ratios else "n/a"
        print(f"| {b} | {p:.2f} | {x:.2f} | {ratio} | {middle} | {', '.join(f'{r:.3f}' for r in ratios)} | {bad} |")

{"record": record, "report": report}[sys.argv[1]](*sys.argv[2:])
PY
}

main "$@"
