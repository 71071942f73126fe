#!/usr/bin/env bash
# bench/samplers.sh: what the lab's samplers cost the processes they read, in one run.
#
# A JVM (lab/spring-app, 20 Tomcat threads) under wrk on GET /cpu (5 ms of hashing a
# request: every thread on CPU, the case where a thread dump waits longest for a
# safepoint), its throughput
#   - alone: `sluice lab` runs beside it, loading and sampling only a `sluice backend`
#     (the same lab process, the same 1-user load elsewhere on the machine);
#   - lab: the same, with the JVM also given by pid (`--tier app=PID`): its thread dumps
#     through the attach listener, its GC counters' file, and the stop the dumps cost
#     the JVM by its own count (the report's `stopped_pct`);
#   - jcmd: what a user would script instead, `jcmd PID Thread.print` every 200 ms
#     (the lab's fastest pace), beside the same lab run as `alone`.
# A native process (`sluice backend`) under wrk, its throughput alone and with
# `perf record -F 49 -g` on it (the lab's on-CPU profile).
# Repeated RUNS times, interleaved (the JVM's modes in a rotating order); medians, and
# ratios to `alone`. Loopback only; every
# load is bounded in time.
#
# Usage: [RUNS=6] [SECONDS_EACH=8] bench/samplers.sh
# Results: bench/runs/<date>-samplers/ (summary.md, results.jsonl; logs in raw.tar.xz).

set -euo pipefail
RUNS=${RUNS:-6}
SECONDS_EACH=${SECONDS_EACH:-8}
NAME=samplers
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v wrk >/dev/null || apt-get install -y -qq wrk
command -v perf >/dev/null || apt-get install -y -qq linux-perf
(cd "$REPO" && cargo build --locked --release -p sluice)
(cd "$REPO/lab/spring-app" && mvn -q -B -T1 -DskipTests package)

JVM_PORT=19701
OTHER=127.0.0.1:19702
NATIVE=127.0.0.1:19703
OUT=$(new_run_dir samplers)

PORT=$JVM_PORT java -Djava.io.tmpdir="$WORK" -jar "$REPO/lab/spring-app/target/stock-app-0.0.1.jar" \
    --server.tomcat.threads.max=20 >"$WORK/jvm.log" 2>&1 &
JVM=$!
PIDS+=("$JVM")
"$BIN/sluice" backend --listen "$OTHER" >"$WORK/other.log" 2>&1 &
PIDS+=($!)
OTHER_PID=$!
"$BIN/sluice" backend --listen "$NATIVE" >"$WORK/native.log" 2>&1 &
NATIVE_PID=$!
PIDS+=("$NATIVE_PID")
for _ in $(seq 600); do curl -fs "http://127.0.0.1:$JVM_PORT/cpu" >/dev/null && break; sleep 0.1; done
wait_port 19702 && wait_port 19703
# The JVM's code compiled before anything is measured.
wrk -t2 -c16 -d30s "http://127.0.0.1:$JVM_PORT/cpu" >/dev/null

# wrk_rps URL: requests a second over SECONDS_EACH, 16 connections.
wrk_rps() {
    wrk -t2 -c16 -d"${SECONDS_EACH}s" "$1" | awk '/^Requests\/sec/ {print $2}'
}

# lab_beside TIERS...: a `sluice lab` on the other backend, sampling TIERS, for the
# length of a wrk run (its pid in LAB); its report in WORK/lab.json.
lab_beside() {
    local tiers=()
    for t in "$@"; do tiers+=(--tier "$t"); done
    "$BIN/sluice" lab --target "http://$OTHER/" "${tiers[@]}" --users 1 \
        -d "$((SECONDS_EACH + 2))s" --warmup 0s --json "$WORK/lab.json" >>"$WORK/lab.log" 2>&1 &
    LAB=$!
}

jvm_round() {
    local mode=$1 jcmd_loop=
    case $mode in
        lab) lab_beside "other=$OTHER_PID" "app=$JVM" ;;
        *) lab_beside "other=$OTHER_PID" ;;
    esac
    if [[ $mode == jcmd ]]; then
        (end=$((SECONDS + SECONDS_EACH + 1)); while ((SECONDS < end)); do
            jcmd "$JVM" Thread.print >/dev/null 2>&1; sleep 0.2; done) &
        jcmd_loop=$!
    fi
    sleep 1
    local rps stopped=null
    rps=$(wrk_rps "http://127.0.0.1:$JVM_PORT/cpu")
    wait "$LAB"
    [[ -z $jcmd_loop ]] || wait "$jcmd_loop"
    if [[ $mode == lab ]]; then
        stopped=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["configurations"][0]["steps"][-1]["jvm_threads"][0]["stopped_pct"])' "$WORK/lab.json")
    fi
    printf '{"round":%d,"target":"jvm","mode":"%s","rps":%s,"stopped_pct":%s}\n' "$2" "$mode" "$rps" "$stopped"
}

native_round() {
    local mode=$1 perf= rps
    if [[ $mode == perf ]]; then
        perf record -q -F 49 -g -o "$WORK/perf.data" -p "$NATIVE_PID" >/dev/null 2>&1 &
        perf=$!
        sleep 0.5
    fi
    rps=$(wrk_rps "http://$NATIVE/")
    [[ -z $perf ]] || { kill -INT "$perf"; wait "$perf" || true; }
    printf '{"round":%d,"target":"native","mode":"%s","rps":%s,"stopped_pct":null}\n' "$2" "$mode" "$rps"
}

: >"$OUT/results.jsonl"
# The JVM speeds up for minutes as it compiles: each round takes its modes in another
# order, so that no mode always runs on the warmest JVM.
JVM_ORDERS=("alone lab jcmd" "lab jcmd alone" "jcmd alone lab")
for round in $(seq "$RUNS"); do
    for mode in ${JVM_ORDERS[$(((round - 1) % 3))]}; do
        log "round $round: jvm $mode"
        jvm_round "$mode" "$round" | tee -a "$OUT/results.jsonl"
    done
    for mode in alone perf; do
        log "round $round: native $mode"
        native_round "$mode" "$round" | tee -a "$OUT/results.jsonl"
    done
done

python3 - "$OUT/results.jsonl" "$RUNS" "$SECONDS_EACH" >"$OUT/summary.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(target, mode, key="rps"):
    xs = [r[key] for r in rows if r["target"] == target and r["mode"] == mode and r[key] is not None]
    return statistics.median(xs) if xs else None
print(f"# What the lab's samplers cost ({sys.argv[2]} rounds of {sys.argv[3]} s, medians)\n")
print("| process under wrk (16 connections) | sampled by | req/s | vs alone | JVM stopped by dumps |")
print("|---|---|---:|---:|---:|")
for target, modes in (("jvm", ("alone", "lab", "jcmd")), ("native", ("alone", "perf"))):
    base = med(target, "alone")
    for mode in modes:
        rps = med(target, mode)
        stopped = med(target, mode, "stopped_pct")
        who = {"alone": "nothing", "lab": "sluice lab --tier app=PID",
               "jcmd": "jcmd Thread.print every 200 ms", "perf": "perf record -F 49 -g"}[mode]
        what = {"jvm": "Spring Boot GET /cpu (pid)", "native": "sluice backend (pid)"}[target]
        s = f"{stopped:.2f}% of the step" if stopped is not None else ""
        print(f"| {what} | {who} | {rps:.0f} | {rps / base:.3f}x | {s} |")
PY
cat "$OUT/summary.md"
cp "$WORK"/*.log "$OUT/" 2>/dev/null || true
python3 "$REPO/bench/runs.py" pack "$OUT"
log "results in $OUT"
