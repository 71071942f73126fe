#!/usr/bin/env bash
# bench/guards.sh: what a route's guards (issue 47) cost per request, sluice against
# nginx on this machine, in one run.
#
# Both balancers (2 workers, upstream keep-alive) sit in front of the same two `sluice
# backend` servers on 127.0.0.1, with one route (nginx: one location) per guard:
#   plain           /plain/    no guard: the baseline
#   allow100        /allow/    99 `allow` networks, IPv4 and IPv6 mixed, none holding the
#                              client, then `allow 127.0.0.1`, then `deny all`: the client
#                              (127.0.0.1) matches only the 100th rule; nginx the same lines
#   bcrypt          /bcrypt/   basic auth, one user, bcrypt at `htpasswd -B`'s default cost
#                              (5): sluice with its default cache (60s), nginx as it is (it
#                              hashes every request)
#   bcrypt-nocache  /nocache/  the same with sluice's `cache = "0s"`, a hash per request as
#                              nginx (the same user file: what a route remembers is its
#                              own); nginx has no cache to turn off, so its bcrypt figure
#                              is reported here
# Every request sends the user's right `Authorization: Basic` header (to every route, so
# that the routes differ by their guard only). CPU per request as bench/compare.sh reads
# it: `h2load --h1 -c CLIENTS -t 1 --rps R -D DUR` at a fixed rate, the balancer's
# utime+stime (its whole process tree, /proc/PID/stat) before and after, divided by the
# requests h2load completed; around it the host's stolen and busy ticks against ours
# (compare_stats.py), a run contended above 5% stolen or 10% taken by other programs.
# Two rates: RATE (5000 req/s) for plain and allow100, BCRYPT_RATE (200 req/s) for the
# bcrypt rows, which nginx's 2 workers must hash one by one; plain is measured at both,
# the baseline of each. sluice's cache hits are measured at RATE too (sluice only: nginx
# cannot hash 5000 a second on 2 cores). A run lasts DUR seconds at RATE and BCRYPT_DUR
# (3 x DUR) at BCRYPT_RATE, so that a cheap request's CPU still spans some 10 ms clock
# ticks. RUNS rounds, case by case, both balancers in turn, their order alternated per
# round; medians. Loopback only; every run is bounded.
#
# Usage:  [RUNS=3] [DUR=5] [BCRYPT_DUR=3*DUR] [RATE=5000] [BCRYPT_RATE=200] [CLIENTS=40] bench/guards.sh
#   The rates are rounded down to a multiple of CLIENTS (h2load's --rps is per client).
#   sluice is built (cargo build --release) first; apt-get installs nginx, h2load and
#   htpasswd if missing.
# Results: bench/runs/<date>-guards/ (summary.md, results.jsonl; the raw h2load output,
# the generated configs and the server logs in raw.tar.xz, packed by bench/runs.py).

set -euo pipefail
RUNS=${RUNS:-3}
DUR=${DUR:-5}
BCRYPT_DUR=${BCRYPT_DUR:-$(( 3 * DUR ))}
CLIENTS=${CLIENTS:-40}
RATE=$(( ${RATE:-5000} / CLIENTS * CLIENTS ))
BCRYPT_RATE=$(( ${BCRYPT_RATE:-200} / CLIENTS * CLIENTS ))
(( BCRYPT_RATE >= CLIENTS )) || { echo "guards.sh: BCRYPT_RATE must be >= CLIENTS ($CLIENTS)" >&2; exit 64; }
NAME=guards
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
STATS=$REPO/bench/compare_stats.py
for tool in h2load:nghttp2-client htpasswd:apache2-utils curl:curl; do
    need "${tool%%:*}" || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${tool#*:}"; }
done
(cd "$REPO" && cargo build --locked --release -p sluice)

USER_NAME=bench
PASSWORD=guards-bench-password
TOKEN=$(printf '%s:%s' "$USER_NAME" "$PASSWORD" | base64 -w0)
BALANCERS=(sluice nginx)
# case path rate who: `who` is `both`, or `sluice` for what only sluice runs.
CASES=(
    "plain /plain/ $RATE both"
    "allow100 /allow/ $RATE both"
    "bcrypt /bcrypt/ $RATE sluice"
    "plain /plain/ $BCRYPT_RATE both"
    "bcrypt /bcrypt/ $BCRYPT_RATE both"
    "bcrypt-nocache /nocache/ $BCRYPT_RATE sluice"
)
declare -A PORT PID
read -r B1 B2 PORT[sluice] PORT[nginx] <<<"$("$REPO/scripts/free-ports" 4)"

# The 99 rules before the client's: IPv4 and IPv6 networks in turn, none holding 127.0.0.1
# (nor 127.0.0.2, which the check before the runs expects refused).
other_networks() {
    local i
    for (( i = 1; i <= 99; i++ )); do
        case $(( i % 4 )) in
            1) echo "10.$i.0.0/16" ;;
            3) echo "192.168.$i.0/24" ;;
            2) printf '2001:db8:%x::/48\n' "$i" ;;
            0) printf 'fd00::%x/128\n' "$i" ;;
        esac
    done
}

write_configs() {
    local rules toml_rules nginx_rules
    rules=$(other_networks; echo 127.0.0.1)
    toml_rules=$(sed 's/.*/"allow &",/' <<<"$rules" | tr '\n' ' ')
    nginx_rules=$(sed 's/.*/allow &;/' <<<"$rules" | tr '\n' ' ')
    htpasswd -nbB "$USER_NAME" "$PASSWORD" | grep . >"$WORK/htpasswd"
    # nginx's workers run as nobody: they read the user file on every request.
    chmod 755 "$WORK" && chmod 644 "$WORK"/htpasswd*
    local route='[[route]]\npath = "%s"\nupstream = "app"\n%s\n'
    {
        printf 'workers = 2\n[[listener]]\nbind = "127.0.0.1:%s"\n' "${PORT[sluice]}"
        printf "$route" /plain/ ""
        printf "$route" /allow/ "access = [$toml_rules \"deny all\"]"
        printf "$route" /bcrypt/ "auth_basic = { realm = \"bench\", user_file = \"$WORK/htpasswd\" }"
        printf "$route" /nocache/ "auth_basic = { realm = \"bench\", user_file = \"$WORK/htpasswd\", cache = \"0s\" }"
        printf '[upstream.app]\nbalance = "round_robin"\nservers = ["127.0.0.1:%s", "127.0.0.1:%s"]\nkeepalive = 128\n' "$B1" "$B2"
    } >"$WORK/sluice.toml"
    local auth='auth_basic "bench"; auth_basic_user_file'
    write_nginx_conf "${PORT[nginx]}" "        location /plain/ { proxy_pass http://app; }
        location /allow/ { $nginx_rules deny all; proxy_pass http://app; }
        location /bcrypt/ { $auth $WORK/htpasswd; proxy_pass http://app; }
        location /nocache/ { $auth $WORK/htpasswd; proxy_pass http://app; }"
}

# expect STATUS BALANCER PATH [CURL ARGS...]: the balancer answers PATH with STATUS.
expect() {
    local want=$1 b=$2 path=$3 got
    shift 3
    got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "http://127.0.0.1:${PORT[$b]}$path")
    [[ $got == "$want" ]] || { log "$b: $path ${*:-} answered $got, not $want"; exit 1; }
}

# check BALANCER: every route proxies, and every guard refuses what it should.
check() {
    local b=$1 right=(-u "$USER_NAME:$PASSWORD") path
    expect 200 "$b" /plain/
    expect 200 "$b" /allow/
    expect 403 "$b" /allow/ --interface 127.0.0.2
    for path in /bcrypt/ /nocache/; do
        expect 401 "$b" "$path"
        expect 401 "$b" "$path" -u "$USER_NAME:wrong"
        expect 200 "$b" "$path" "${right[@]}"
    done
    curl -s --max-time 5 "${right[@]}" "http://127.0.0.1:${PORT[$b]}/bcrypt/" | grep -qx 'b[12]' \
        || { log "$b: /bcrypt/ did not answer from a backend"; exit 1; }
    log "$b: routes and guards answer as expected"
}

# load RATE SECONDS BALANCER PATH LOG: h2load at RATE against the route, bounded; its
# output to LOG.
load() {
    local cmd=(h2load --h1 -c "$CLIENTS" -t 1 --rps $(( $1 / CLIENTS )) -D "$2"
        -H "Authorization: Basic $TOKEN" "http://127.0.0.1:${PORT[$3]}$4")
    echo "# ${cmd[*]}" >>"$5"
    timeout --kill-after=5 $(( $2 + 30 )) "${cmd[@]}" >>"$5" 2>&1 || { log "h2load failed (exit $?): see $5"; exit 1; }
}

# measure BALANCER ROUND CASE PATH RATE: one fixed-rate run with the balancer's CPU and
# the host's ticks read around it, in the form compare_stats.py parses; one JSON line.
measure() {
    local b=$1 round=$2 case=$3 path=$4 rate=$5 raw before after secs=$DUR
    (( rate == RATE )) || secs=$BCRYPT_DUR
    raw=$OUT/raw/r$round-$b-$case-$rate.txt
    log "round $round: $b: $case at $rate req/s for ${secs}s"
    : >"$raw"
    before=$(python3 "$STATS" ticks "${PID[$b]}" $$)
    load "$rate" "$secs" "$b" "$path" "$raw"
    after=$(python3 "$STATS" ticks "${PID[$b]}" $$)
    kill -0 "${PID[$b]}" 2>/dev/null || { log "$b died; see its log in $OUT/servers"; exit 1; }
    echo "# balancer CPU (utime+stime, process tree of pid ${PID[$b]}): ${before%% *} -> ${after%% *} ticks" >>"$raw"
    echo "# host (steal/all/busy/ours ticks, PSI cpu some us): ${before#* } -> ${after#* }" >>"$raw"
    summarise record "$b" "$round" "$case" "$rate" "$raw" "${before%% *}" "${after%% *}" >>"$OUT/results.jsonl"
    sleep 1
}

main() {
    OUT=$(new_run_dir guards)
    mkdir -p "$OUT/raw" "$OUT/configs" "$OUT/servers"
    log "results in $OUT"
    local commit load_avg
    commit=$(git -C "$REPO" rev-parse --short HEAD)
    load_avg=$(cut -d' ' -f1-3 /proc/loadavg)
    write_configs
    local n port=("$B1" "$B2")
    for n in 1 2; do
        SLUICE_LOG=warn "$BIN/sluice" backend --listen "127.0.0.1:${port[n - 1]}" --name "b$n" --workers 1 >>"$WORK/b$n.log" 2>&1 &
        PIDS+=($!)
        wait_port "${port[n - 1]}" || { log "backend b$n did not start"; exit 1; }
    done
    local b
    for b in "${BALANCERS[@]}"; do
        # Not in $( ): the balancer stays our child, so the host reading counts it as ours.
        start_balancer "$b" >"$WORK/$b.pid"
        PID[$b]=$(<"$WORK/$b.pid")
        PIDS+=("${PID[$b]}")
        wait_port "${PORT[$b]}" || { log "$b did not start:"; tail -5 "$WORK/$b.log" >&2; exit 1; }
        check "$b"
    done
    # One unrecorded second per balancer and route: pools filled, code faulted in, the
    # cache of the bcrypt route filled.
    local spec name path rate who
    for b in "${BALANCERS[@]}"; do
        for path in /plain/ /allow/ /bcrypt/ /nocache/; do
            load "$BCRYPT_RATE" 1 "$b" "$path" "$OUT/raw/warmup-$b.txt"
        done
    done
    : >"$OUT/results.jsonl"
    local round i
    for (( round = 1; round <= RUNS; round++ )); do
        for spec in "${CASES[@]}"; do
            read -r name path rate who <<<"$spec"
            for (( i = 0; i < ${#BALANCERS[@]}; i++ )); do
                b=${BALANCERS[(i + round - 1) % ${#BALANCERS[@]}]}
                if [[ $who == both || $who == "$b" ]]; then measure "$b" "$round" "$name" "$path" "$rate"; fi
            done
        done
    done
    cp "$WORK/sluice.toml" "$WORK/nginx/nginx.conf" "$WORK"/htpasswd* "$OUT/configs/"
    cp "$WORK"/*.log "$OUT/servers/" 2>/dev/null || true
    if [[ -s $WORK/nginx/error.log ]]; then cp "$WORK/nginx/error.log" "$OUT/servers/nginx-error.log"; fi
    sed -i "s|$WORK|WORK|g" "$OUT"/configs/*
    {
        echo "# Route guards: CPU per request, sluice vs nginx"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
        echo "- command: \`RUNS=$RUNS DUR=$DUR BCRYPT_DUR=$BCRYPT_DUR RATE=$RATE BCRYPT_RATE=$BCRYPT_RATE CLIENTS=$CLIENTS bench/guards.sh\`"
        echo "- machine: $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n1)), kernel $(uname -r), load average at start: $load_avg"
        echo "- sluice: $("$BIN/sluice" --version), git $commit; binary built $(date -u -r "$BIN/sluice" '+%Y-%m-%d %H:%M:%S UTC')"
        echo "- nginx: $(nginx -v 2>&1); h2load: $(h2load --version | head -n1); the user's hash: \`$(cut -d: -f2 "$WORK/htpasswd" | cut -c1-7)...\` (\`htpasswd -nbB\`)"
        echo
        summarise report "$OUT/results.jsonl"
    } >"$OUT/summary.md"
    cat "$OUT/summary.md"
    python3 "$REPO/bench/runs.py" pack "$OUT" && python3 "$REPO/bench/runs.py" index
    log "summary: $OUT/summary.md"
}

# summarise record ... | report RESULTS: one run's JSON line, or the Markdown report.
summarise() {
    BENCH=$REPO/bench DUR=$DUR BCRYPT_DUR=$BCRYPT_DUR RATE=$RATE BCRYPT_RATE=$BCRYPT_RATE CLIENTS=$CLIENTS python3 - "$@" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["BENCH"])
from compare_stats import contention, median, parse_h2load

def record(b, rnd, case, rate, raw, t0, t1):
    run = parse_h2load(open(raw).read())
    hz, done, ticks = os.sysconf("SC_CLK_TCK"), run["requests"]["done"], int(t1) - int(t0)
    ok = run["status"].get("2xx", 0)
    print(json.dumps({"balancer": b, "round": int(rnd), "case": case, "rate": int(rate),
                      "cpu_ticks": ticks, "cpu_us_per_req": ticks / hz * 1e6 / done if done else None,
                      "not_200": done - ok, "h2load": run}))

def problems(r):
    h, out = r["h2load"], []
    bad = {k: v for k, v in h["requests"].items() if k in ("failed", "errored", "timeout") and v}
    if r["not_200"] or bad:
        out.append(f"{r['not_200']} requests not answered 200 {bad or ''}".rstrip())
    if h["rps"] is None or h["rps"] < 0.95 * r["rate"]:
        out.append(f"reached only {h['rps']} of {r['rate']} req/s")
    if contention(h):
        out.append(contention(h))
    return out

def report(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    keys = list(dict.fromkeys((r["case"], r["rate"]) for r in recs))
    rounds, env = max(r["round"] for r in recs), os.environ
    print(f"CPU µs per request (the balancer's whole process tree), medians of {rounds} round(s); "
          f"every run `h2load --h1 -c {env['CLIENTS']} -t 1 --rps RATE/{env['CLIENTS']} -D SECONDS` with the "
          f"user's `Authorization` header, SECONDS {env['DUR']} at {int(env['RATE']):,} req/s and "
          f"{env['BCRYPT_DUR']} at the bcrypt rows' rate. \"over plain\": µs a request costs beyond "
          "the plain route at the same rate.")
    print()
    cpu = table(recs, keys, lambda r: True)
    print("nginx's bcrypt-nocache figure is its bcrypt row's at the same rate: nginx has no cache to "
          "turn off, so it is measured once.\n")
    low = int(env["BCRYPT_RATE"])
    hashed, plain = cpu("sluice", ("bcrypt-nocache", low)), cpu("sluice", ("plain", low))
    if hashed is not None and plain is not None and hashed < 10 * plain:
        print("**sluice's bcrypt-nocache costs less than 10 times its plain route: it cannot "
              "have hashed every request, so its figure is not a bcrypt's.**\n")
    if any(contention(r["h2load"]) for r in recs):
        print("The same, medians of the uncontended runs only (how many of them in brackets):\n")
        table(recs, keys, lambda r: not contention(r["h2load"]))
    rounds_table(recs, keys, rounds)

def table(recs, keys, keep):
    """The table of medians over the runs `keep` keeps; returns its cpu(balancer, key)."""
    runs = lambda b, k: [r for r in recs if r["balancer"] == b and (r["case"], r["rate"]) == k and keep(r)]
    def cpu(b, k):
        if b == "nginx" and k[0] == "bcrypt-nocache":
            k = ("bcrypt", k[1])
        return median([r["cpu_us_per_req"] for r in runs(b, k)])
    everything = all(keep(r) for r in recs)
    fmt = lambda v, f="{:.1f}": f.format(v) if v is not None else "n/a"
    measured = lambda b, k: any(r["balancer"] == b and (r["case"], r["rate"]) == k for r in recs)
    count = lambda b, k: "" if everything or not measured(b, k) else f" ({len(runs(b, k))})"
    print("| row | guard | rate (req/s) | sluice | nginx | sluice/nginx | sluice over plain | nginx over plain | not 200 (sluice, nginx) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    guard = {"plain": "none", "allow100": "100 rules, the 100th matches", "bcrypt": "bcrypt, sluice's cache 60s",
             "bcrypt-nocache": "bcrypt, sluice's cache 0s"}
    for k in keys:
        case, rate = k
        s, n = cpu("sluice", k), cpu("nginx", k)
        name = case + (" (sluice only: cache hits)" if not measured("nginx", k) and case == "bcrypt" else "")
        over = lambda b, v: (f"{v - cpu(b, ('plain', rate)):+.1f}" if case != "plain" and v is not None
                             and cpu(b, ("plain", rate)) is not None else "")
        bad = lambda b: str(sum(r["not_200"] for r in runs(b, k))) if runs(b, k) else "-"
        ratio = s / n if s and n else None
        print(f"| {name} | {guard[case]} | {rate:,} | {fmt(s)}{count('sluice', k)} | {fmt(n)}{count('nginx', k)} "
              f"| {fmt(ratio, '{:.2f}' if ratio and ratio >= 0.1 else '{:.3f}')} "
              f"| {over('sluice', s)} | {over('nginx', n)} | {bad('sluice')}, {bad('nginx')} |")
    print()
    return cpu

def rounds_table(recs, keys, rounds):
    print("CPU µs per request in each round, and the host during that run: (s) = % of the machine's CPU "
          "stolen by other guests, (o) = % taken by other programs on this machine; [t] = clock ticks "
          "measured (10 ms each: below 20, the figure is coarse).")
    print()
    print("| row | rate | balancer | " + " | ".join(f"round {n}" for n in range(1, rounds + 1)) + " |")
    print("|---|---:|---|" + "---:|" * rounds)
    for case, rate in keys:
        for b in ("sluice", "nginx"):
            by = {r["round"]: r for r in recs if r["balancer"] == b and (r["case"], r["rate"]) == (case, rate)}
            if not by:
                continue
            cells = []
            for n in range(1, rounds + 1):
                r = by.get(n)
                h = r and r["h2load"]["host"]
                cells.append("n/a" if not r or r["cpu_us_per_req"] is None else
                             f"{r['cpu_us_per_req']:.1f} [{r['cpu_ticks']}t]"
                             + (f" ({h['steal_pct']:.0f}s {h['others_pct']:.0f}o)" if h else ""))
            print(f"| {case} | {rate:,} | {b} | " + " | ".join(cells) + " |")
    print()
    issues = [(r["round"], r["balancer"], r["case"], r["rate"], p) for r in recs for p in problems(r)]
    if issues:
        print("Problems seen (these runs' numbers are suspect):\n")
        for rnd, b, case, rate, p in issues:
            print(f"- round {rnd}, {b}, {case} at {rate} req/s: {p}")
    else:
        print("No problems: every request was answered 200, every run reached its rate, and no run was "
              "contended (above 5% of the CPU stolen or 10% taken by other programs).")

{"record": record, "report": report}[sys.argv[1]](*sys.argv[2:])
PY
}

main "$@"
