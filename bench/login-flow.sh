#!/usr/bin/env bash
# bench/login-flow.sh: what a logged-in flow costs a generator per request: `sluice bench`
# with a cookie jar, one extraction and a CSV data file, against the same requests
# without them, and against Locust and JMeter running the same flow, on this machine,
# in one run.
#
# The target is nginx imitating a session app (bench/login-flow/nginx.conf.in; one
# worker pinned to CPU 1; nothing validated, so that the generator is what runs out):
# GET /login answers a form with a hidden `_csrf` token and sets `SID`, POST /login
# answers "Welcome" and sets a new `SID`, GET /page answers 1 KiB. Each virtual user,
# round its loop with no pause (a closed loop at saturation), USERS of them for DUR
# seconds: GET /login (the token taken by a regular expression), POST /login
# (username={username}&password={password}&_csrf={csrf}, a form), 8 x GET /page?user=
# {username}: 10 requests an iteration. The tools, each pinned to CPU 0, one thread or
# process where the tool allows:
#   sluice-plain  bench/login-flow/plain.toml: the same requests with no cookie jar
#                 (`cookies = false`), no data file (a literal account), no extraction
#                 (a literal token): what the flow's requests cost by themselves;
#   sluice-login  bench/login-flow/login.toml: `data = "accounts.csv"` (1000 accounts,
#                 user N takes row N), `extract.csrf = { regex = ... }`, the cookie jar on
#                 (the default); `sluice bench --scenario F --threads 1`;
#   locust        bench/login-flow/flow.py: FastHttpUser (Locust's fastest client), the
#                 same CSV, regex and session cookies, headless, one process (Locust runs
#                 one core per process); Locust from PyPI in a virtualenv of this
#                 script's (LOCUST_VENV, default ~/.cache/sluice-bench/locust-venv);
#   jmeter        bench/login-flow/flow.jmx: a Thread Group of USERS threads, CSV Data Set,
#                 HTTP Cookie Manager, Regular Expression Extractor, HttpClient4, non-GUI
#                 with no results file (its summariser only); JMeter 5.6.3's jars from
#                 Maven Central (bench/login-flow/jmeter-pom.xml, `mvn dependency:
#                 copy-dependencies`) laid out as its distribution is (JMETER_HOME, default
#                 ~/.cache/sluice-bench/jmeter-5.6.3: bin/ApacheJMeter.jar, the launcher;
#                 bin/*.properties from the ApacheJMeter_config jar; lib/, lib/ext/); the
#                 JVM flags of JMeter's own launcher with a JMETER_HEAP heap (512m).
#                 HTTPSamplerBase logs at ERROR: JMeter 5.6.x warns "Existing CookieManager
#                 ... superseded" on every iteration of a plan with a Cookie Manager
#                 (apache/jmeter#6235), which would charge it for its own log lines; its
#                 UDP shutdown listener is off (jmeterengine.nongui.port=0).
# For each tool and round: the requests nginx answered (its access log, emptied before
# each run: the one count that is no tool's own; the tool's own count and errors beside
# it), requests per second over DUR, and the CPU per request two ways: the tool's whole
# run (user+sys from /usr/bin/time, start-up included: a JVM's, Python's imports) over
# every request, and its steady state: its utime+stime (/proc) over the requests nginx
# counted (stub_status) in the middle of the load (its first quarter and last tenth
# left out), read every 0.2 s by a sampler on CPU 1. Around each run, the host's stolen
# and busy ticks against ours (as bench/compare.sh reads them): a run is contended when
# other guests stole more than 5% of the CPU or other programs took more than 10%.
# Rounds rotate the tools' order; the summary gives medians, sluice-login / sluice-plain
# (the target: at most 1.15x) and each tool / sluice-login.
#
# Usage: [RUNS=3] [DUR=8] [USERS=64] [TOOLS="sluice-plain sluice-login locust jmeter"]
#        [JMETER_HEAP=512m] [LOCUST_VENV=dir] [JMETER_HOME=dir] [QUIET_WAIT=120]
#        bench/login-flow.sh [--build]
#   --build  rebuild sluice first (cargo build --release; it is built anyway if missing).
#   QUIET_WAIT  before each run, wait at most this many seconds for other programs to
#            take under 10% of the CPU (a build on a shared machine); 0: do not wait.
# Installs what is missing: nginx, java and maven (apt-get), Locust (pip, in its
# virtualenv), JMeter's jars (Maven). Results: bench/runs/<date>-login-flow/ (summary.md,
# results.jsonl; each run's output and the generated configs in raw.tar.xz, packed by
# bench/runs.py). Loopback only; every run is bounded in time.

set -euo pipefail
RUNS=${RUNS:-3}
DUR=${DUR:-8}
USERS=${USERS:-64}
TOOLS=${TOOLS:-sluice-plain sluice-login locust jmeter}
JMETER_VERSION=5.6.3
JMETER_HEAP=${JMETER_HEAP:-512m}
QUIET_WAIT=${QUIET_WAIT:-120}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/sluice-bench
LOCUST_VENV=${LOCUST_VENV:-$CACHE/locust-venv}
JMETER_HOME=${JMETER_HOME:-$CACHE/jmeter-$JMETER_VERSION}
BUILD=0
[[ ${1:-} == --build ]] && BUILD=1
COMMAND_LINE="RUNS=$RUNS DUR=$DUR USERS=$USERS"
[[ $TOOLS == "sluice-plain sluice-login locust jmeter" ]] || COMMAND_LINE+=" TOOLS=\"$TOOLS\""
[[ $JMETER_HEAP == 512m ]] || COMMAND_LINE+=" JMETER_HEAP=$JMETER_HEAP"
COMMAND_LINE+=" bench/login-flow.sh"
(( BUILD == 0 )) || COMMAND_LINE+=" --build"
NAME=login-flow
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FLOW=$REPO/bench/login-flow
# nginx's access log (some 20 MB a run at sluice's rate) goes to memory where there is
# /dev/shm, not to a disk a shared machine may be short of.
LOGS=$(mktemp -d -p /dev/shm 2>/dev/null || echo "$WORK")
trap 'cleanup; rm -rf "$LOGS"' EXIT INT TERM
MISSING=()   # "tool: why" for each tool asked for that could not be set up

# ------------------------------------------------------------------- set-up

install_tools() {
    local apt=()
    need taskset || apt+=(util-linux)
    [[ -x /usr/bin/time ]] || apt+=(time)
    need curl || apt+=(curl)
    if [[ " $TOOLS " == *" jmeter "* ]]; then
        need java || apt+=(default-jre-headless)
        need mvn || apt+=(maven)
    fi
    if [[ " $TOOLS " == *" locust "* ]] && ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        apt+=(python3-venv)
    fi
    if (( ${#apt[@]} )); then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt[@]}"
    fi
    if [[ $BUILD == 1 || ! -x $BIN/sluice ]]; then
        (cd "$REPO" && cargo build --locked --release -p sluice)
    fi
    [[ " $TOOLS " != *" locust "* ]] || setup_locust || drop locust "Locust could not be installed from PyPI (see the log)"
    [[ " $TOOLS " != *" jmeter "* ]] || setup_jmeter || drop jmeter "JMeter's jars could not be had from Maven Central, or did not run (see the log)"
}

drop() {
    log "leaving $1 out: $2"
    MISSING+=("$1: $2")
    TOOLS=$(tr ' ' '\n' <<<"$TOOLS" | grep -vx "$1" | tr '\n' ' ')
}

# Locust from PyPI, in a virtualenv of this script's (never pip into the system's Python).
setup_locust() {
    [[ -x $LOCUST_VENV/bin/locust ]] && return 0
    log "installing Locust into $LOCUST_VENV"
    python3 -m venv "$LOCUST_VENV" && "$LOCUST_VENV/bin/pip" install -q locust
}

# JMeter from Maven Central: its jars and their dependencies, laid out as its binary
# distribution is (bin/ApacheJMeter.jar, the launcher, finds JMETER_HOME as its jar's
# parent's parent and puts lib/*.jar and lib/ext/*.jar on the class path; the properties
# files it reads at start come in the ApacheJMeter_config jar, under bin/).
setup_jmeter() {
    [[ -f $JMETER_HOME/bin/ApacheJMeter.jar && -f $JMETER_HOME/bin/jmeter.properties ]] && return 0
    log "fetching JMeter $JMETER_VERSION's jars from Maven Central into $JMETER_HOME"
    local tmp=$WORK/jmeter-jars home=$JMETER_HOME.partial
    mkdir -p "$tmp"
    sed "s|<jmeter.version>[^<]*</jmeter.version>|<jmeter.version>$JMETER_VERSION</jmeter.version>|" \
        "$FLOW/jmeter-pom.xml" >"$tmp/pom.xml"
    (cd "$tmp" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$tmp/jars") || return 1
    rm -rf "$home"
    mkdir -p "$home/bin" "$home/lib/ext" "$home/lib/junit"
    local jar
    for jar in "$tmp"/jars/*.jar; do
        case ${jar##*/} in
            ApacheJMeter-"$JMETER_VERSION".jar) cp "$jar" "$home/bin/ApacheJMeter.jar" ;;
            ApacheJMeter_*.jar) cp "$jar" "$home/lib/ext/" ;;
            *) cp "$jar" "$home/lib/" ;;
        esac
    done
    python3 - "$home" "$home"/lib/ext/ApacheJMeter_config-*.jar <<'PY' || return 1
import sys, zipfile
home, jar = sys.argv[1:3]
with zipfile.ZipFile(jar) as z:
    names = [n for n in z.namelist() if n.startswith("bin/") and n.count("/") == 1 and not n.endswith("/")]
    z.extractall(home, names)
missing = {"bin/jmeter.properties", "bin/saveservice.properties", "bin/upgrade.properties"} - set(names)
sys.exit(f"ApacheJMeter_config has no {', '.join(sorted(missing))}" if missing else 0)
PY
    rm -rf "$JMETER_HOME"
    mv "$home" "$JMETER_HOME"
    (cd "$WORK" && java -jar "$JMETER_HOME/bin/ApacheJMeter.jar" --version) >"$WORK/jmeter-version.txt" 2>&1 || {
        cat "$WORK/jmeter-version.txt" >&2; return 1; }
}

start_target() {
    read -r PORT STATUS_PORT <<<"$("$REPO/scripts/free-ports" 2 | tr '\n' ' ')"
    URL=http://127.0.0.1:$PORT
    mkdir -p "$WORK/nginx"
    sed -e "s|@WORK@|$WORK|g" -e "s|@LOGS@|$LOGS|g" -e "s|@PORT@|$PORT|g" -e "s|@STATUS_PORT@|$STATUS_PORT|g" \
        "$FLOW/nginx.conf.in" >"$WORK/nginx/nginx.conf"
    taskset -c 1 nginx -c "$WORK/nginx/nginx.conf" -g 'daemon off;' >"$WORK/nginx.log" 2>&1 &
    PIDS+=($!)
    wait_port "$PORT" || { log "nginx did not start"; cat "$WORK/nginx.log" >&2; exit 1; }
    for _ in $(seq 50); do
        NGINX_WORKER=$(pgrep -P "${PIDS[-1]}" | head -n1) && [[ -n $NGINX_WORKER ]] && break
        sleep 0.1
    done
    curl -sf "$URL/login" | grep -q 'name="_csrf" type="hidden" value="' || { log "nginx's /login has no token"; exit 1; }
}

# ------------------------------------------------------------------- one run

# command_for TOOL BASE: the tool's command line (its outputs under BASE).
command_for() {
    local tool=$1 base=$2
    case $tool in
        sluice-plain) echo "$BIN/sluice bench --scenario $FLOW/plain.toml $URL --users $USERS -d ${DUR}s --threads 1 -q --json $base.json" ;;
        sluice-login) echo "$BIN/sluice bench --scenario $FLOW/login.toml $URL --users $USERS -d ${DUR}s --threads 1 -q --json $base.json" ;;
        locust) echo "$LOCUST_VENV/bin/locust -f $FLOW/flow.py --headless -u $USERS -r $USERS -t ${DUR}s --host $URL --only-summary" ;;
        # bin/jmeter's JVM flags (G1, its pause goal and reserve), a smaller heap.
        jmeter) echo "java -Xms$JMETER_HEAP -Xmx$JMETER_HEAP -XX:MaxMetaspaceSize=256m -XX:+UseG1GC -XX:MaxGCPauseMillis=100 -XX:G1ReservePercent=20 -jar $JMETER_HOME/bin/ApacheJMeter.jar -n -t $FLOW/flow.jmx -Jport=$PORT -Jdur=$DUR -Jusers=$USERS -Jdata=$FLOW/accounts.csv -j $base.jmeter.log -Jjmeterengine.nongui.port=0 -Lorg.apache.jmeter.protocol.http.sampler.HTTPSamplerBase=ERROR" ;;
    esac
}

# measure TOOL ROUND: runs it pinned to CPU 0 under /usr/bin/time, the sampler beside it
# on CPU 1; appends its line to results.jsonl.
measure() {
    local tool=$1 round=$2 base=$OUT/raw/r$2-$1 cmd pid sampler
    cmd=$(command_for "$tool" "$base")
    wait_quiet
    log "round $round: $tool"
    echo "# $cmd" >"$base.txt"
    : >"$LOGS/access.log"
    rm -f "$WORK/stop"
    (cd "$WORK" && exec timeout $(( DUR + 90 )) /usr/bin/time -f "cpu %U %S" -o "$base.cpu" taskset -c 0 $cmd >>"$base.txt" 2>&1) &
    pid=$!
    PIDS+=("$pid")   # timeout: a TERM to it reaches its whole process group
    taskset -c 1 python3 "$WORK/sampler.py" "$pid" "$STATUS_PORT" "$NGINX_WORKER" "$WORK/stop" >"$base.samples" &
    sampler=$!
    local rc=0
    wait "$pid" || rc=$?
    echo "$rc" >"$base.rc"
    (( rc == 0 )) || log "$tool exited $rc"
    touch "$WORK/stop"
    wait "$sampler" || true
    sleep 1   # nginx writes its buffered log lines (flush=100ms)
    taskset -c 1 python3 "$WORK/parse.py" "$tool" "$round" "$base" "$LOGS/access.log" "$DUR" >>"$OUT/results.jsonl"
    : >"$LOGS/access.log"
}

# wait_quiet: waits (QUIET_WAIT seconds at most, 120 by default) until other programs
# took under 10% of the machine's CPU over one second, so that a run does not start in
# the middle of someone's build; a run that others disturb all the same is named
# contended in the summary.
wait_quiet() {
    local waited=0 busy
    while (( waited < QUIET_WAIT )); do
        busy=$(python3 -c '
import time
def read():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v), sum(v) - v[3] - v[4]
a = read(); time.sleep(1); b = read()
print(round(100 * (b[1] - a[1]) / max(b[0] - a[0], 1)))')
        (( busy < 10 )) && return 0
        (( waited == 0 )) && log "the machine is busy (${busy}% of its CPU): waiting for it to quiet down"
        waited=$(( waited + 2 ))
        sleep 1
    done
    log "still busy after ${QUIET_WAIT}s: running anyway"
}

write_sampler() {
    cat >"$WORK/sampler.py" <<'PY'
"""sampler.py ROOT STATUS_PORT NGINX_PID STOP: every 0.2 s until STOP exists, one line
`t ticks requests`: seconds since start, the utime+stime ticks of ROOT's live process
tree (the tool), and nginx's requests so far (stub_status, less this sampler's own
polls). First and last, `host {...}`: the machine's /proc/stat ticks, nginx's worker's
and this sampler's own, for the contention reading."""
import json, os, socket, sys, time

root, status_port, nginx, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
HZ = os.sysconf("SC_CLK_TCK")

def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[11]) + int(fields[12])   # ppid, utime+stime

def tree_ticks():
    procs = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                procs[int(p)] = stat(p)
            except (OSError, ValueError, IndexError):
                pass
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            total += procs[pid][1]
            todo.extend(p for p, (ppid, _) in procs.items() if ppid == pid)
    return total

polls = 0
def requests():
    global polls
    polls += 1
    with socket.create_connection(("127.0.0.1", status_port), timeout=2) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    # "server accepts handled requests\n A H R"; each poll is itself a request.
    return int(data.split(b"requests")[1].split()[2]) - polls

def host():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    own = os.times()
    return {"steal": v[7], "all": sum(v), "busy": sum(v) - v[3] - v[4],
            "nginx": stat(nginx)[1], "sampler": round((own.user + own.system) * HZ)}

print("host", json.dumps(host()), flush=True)
start = time.monotonic()
while not os.path.exists(stop):
    print(f"{time.monotonic() - start:.3f} {tree_ticks()} {requests()}", flush=True)
    time.sleep(0.2)
print("host", json.dumps(host()), flush=True)
PY
}

write_parser() {
    cat >"$WORK/parse.py" <<'PY'
"""parse.py TOOL ROUND BASE ACCESS_LOG DUR: one JSON line: nginx's count of the run's
requests (and of those not 200, and of the pages that carried a cookie), the tool's own
count and errors, its CPU over the whole run and in its steady state, and the host."""
import json, os, re, sys

tool, rnd, base, access, dur = sys.argv[1:6]
dur, hz = float(dur), os.sysconf("SC_CLK_TCK")
text = open(base + ".txt").read()
rec = {"tool": tool, "round": int(rnd), "dur_s": dur, "exit": int(open(base + ".rc").read())}
m = re.search(r"cpu ([\d.]+) ([\d.]+)", open(base + ".cpu").read()) if os.path.exists(base + ".cpu") else None
rec["cpu_s"] = float(m.group(1)) + float(m.group(2)) if m else None

# nginx's access log: "status method uri cookie?" (cookie?: 1 if the request had one)
total = not200 = pages = pages_cookie = 0
with open(access, errors="replace") as f:
    for line in f:
        parts = line.split()
        total += 1
        if parts[0] != "200":
            not200 += 1
        if len(parts) > 3 and parts[2] == "/page":
            pages += 1
            pages_cookie += parts[3] == "1"
rec.update(requests=total, not_200=not200, rps=total / dur,
           pages_with_cookie_pct=100 * pages_cookie / pages if pages else None)

# The tool's own count and errors.
own = errors = None
if tool.startswith("sluice"):
    try:
        report = json.load(open(base + ".json"))
        step = report["steps"][0]
        own, errors = step["samples"], step["errors"]
        rec["tool_rps"] = step["throughput_rps"]
        # Kept without its HdrHistograms (base64 that does not compress): the run's
        # archive stays within bench/runs.py's size limit.
        strip = lambda o: ({k: strip(v) for k, v in o.items() if not k.startswith("hdr")} if isinstance(o, dict)
                           else [strip(v) for v in o] if isinstance(o, list) else o)
        with open(base + ".json", "w") as f:
            json.dump(strip(report), f, indent=1)
    except (OSError, ValueError, KeyError, IndexError):
        pass
elif tool == "locust":
    found = re.findall(r"^\s+Aggregated\s+(\d+)\s+(\d+)\(", text, re.M)
    if found:
        own, errors = map(int, found[-1])
elif tool == "jmeter":
    m = re.search(r"^summary =\s+(\d+) in .*?Err:\s+(\d+)", text, re.M)
    if m:
        own, errors = int(m.group(1)), int(m.group(2))
rec.update(tool_requests=own, errors=errors)
rec["cpu_us_per_req"] = rec["cpu_s"] * 1e6 / total if total and rec["cpu_s"] is not None else None

# The sampler: the steady state, and the host around the run.
hosts, samples = [], []
for line in open(base + ".samples"):
    if line.startswith("host "):
        hosts.append(json.loads(line[5:]))
    elif line.strip():
        t, ticks, reqs = line.split()
        samples.append((float(t), int(ticks), int(reqs)))
moving = [i for i in range(1, len(samples)) if samples[i][2] > samples[i - 1][2]]
if moving:
    t0, t1 = samples[moving[0] - 1][0], samples[moving[-1]][0]
    span = t1 - t0
    a = next(s for s in samples if s[0] >= t0 + 0.25 * span)
    b = [s for s in samples if s[0] <= t1 - 0.1 * span][-1]
    if b[0] > a[0] and b[2] > a[2]:
        rec.update(steady_s=b[0] - a[0], steady_rps=(b[2] - a[2]) / (b[0] - a[0]),
                   steady_cpu_us_per_req=(b[1] - a[1]) / hz * 1e6 / (b[2] - a[2]),
                   load_span_s=span)
if len(hosts) == 2 and rec["cpu_s"] is not None:
    d = {k: hosts[1][k] - hosts[0][k] for k in hosts[0]}
    ours = rec["cpu_s"] * hz + d["nginx"] + d["sampler"]
    if d["all"] > 0:
        rec["host"] = {"steal_pct": 100 * d["steal"] / d["all"],
                       "others_pct": 100 * max(d["busy"] - d["steal"] - ours, 0) / d["all"]}
print(json.dumps(rec))
PY
}

# ------------------------------------------------------------------- report

summarise() {
    local commit dirty=""
    commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
    [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no -- crates Cargo.toml Cargo.lock 2>/dev/null) ]] \
        && dirty=" (plus uncommitted changes under crates/ or Cargo.*)"
    {
        echo "# A logged-in flow: CPU per request of sluice, Locust and JMeter"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
        echo "- command: \`$COMMAND_LINE\`"
        echo "- machine: $(nproc) CPUs ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)), kernel $(uname -r), load average at start: $LOAD_AT_START"
        echo "- sluice: $("$BIN/sluice" --version 2>&1 | head -n1), git $commit$dirty; binary built $(date -u -r "$BIN/sluice" '+%Y-%m-%d %H:%M:%S UTC')"
        echo "- nginx: $(nginx -v 2>&1 | head -n1)"
        [[ " $TOOLS " != *" locust "* ]] || echo "- locust: $("$LOCUST_VENV/bin/locust" --version 2>&1 | head -n1 | sed 's/ from .*(/ (/'), FastHttpUser (geventhttpclient $("$LOCUST_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("geventhttpclient"))' 2>/dev/null))"
        [[ " $TOOLS " != *" jmeter "* ]] || echo "- jmeter: $JMETER_VERSION, jars from Maven Central (bench/login-flow/jmeter-pom.xml); $(java -version 2>&1 | head -n1); heap $JMETER_HEAP"
        local m
        for m in "${MISSING[@]}"; do echo "- not measured: $m"; done
        echo
    } >"$OUT/summary.md"
    python3 - "$OUT/results.jsonl" "$RUNS" "$DUR" "$USERS" >>"$OUT/summary.md" <<'PY'
import json, statistics, sys
path, runs, dur, users = sys.argv[1:5]
rows = [json.loads(l) for l in open(path)]
order = ["sluice-plain", "sluice-login", "locust", "jmeter"]
tools = [t for t in order if any(r["tool"] == t for r in rows)]
STEAL, OTHERS = 5, 10
def contended(r):
    h = r.get("host")
    return h is not None and (h["steal_pct"] > STEAL or h["others_pct"] > OTHERS)
def med(tool, key, rows=rows):
    v = [r[key] for r in rows if r["tool"] == tool and r.get(key) is not None]
    return statistics.median(v) if v else None
f = lambda v, fmt: fmt.format(v) if v is not None else "n/a"
ratio = lambda a, b: a / b if a is not None and b else None

print(f"Each tool pinned to CPU 0 (one thread; Locust one process; JMeter one JVM), nginx's one worker on CPU 1; "
      f"{users} users in a closed loop with no pause for {dur} s, each iteration GET /login (the `_csrf` token by a "
      f"regular expression), POST /login (a form: the user's CSV row and the token), 8 x GET /page; medians of {runs} "
      f"round(s), the tools' order rotated each round. Requests: nginx's access log (every tool's requests counted the "
      f"same way); CPU: the tool's user+sys.\n")
print("| tool | req/s | CPU µs/request, whole run | ×sluice-login | CPU µs/request, steady state | ×sluice-login | req/s, steady state | requests (nginx) | the tool's own count | errors (the tool's) | not 200 (nginx) | pages with a cookie |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
lw, ls = med("sluice-login", "cpu_us_per_req"), med("sluice-login", "steady_cpu_us_per_req")
for t in tools:
    w, s = med(t, "cpu_us_per_req"), med(t, "steady_cpu_us_per_req")
    print(f"| {t} | {f(med(t, 'rps'), '{:,.0f}')} | {f(w, '{:.2f}')} | {f(ratio(w, lw), '{:.2f}×')} | {f(s, '{:.2f}')} "
          f"| {f(ratio(s, ls), '{:.2f}×')} | {f(med(t, 'steady_rps'), '{:,.0f}')} | {f(med(t, 'requests'), '{:,.0f}')} "
          f"| {f(med(t, 'tool_requests'), '{:,.0f}')} | {f(med(t, 'errors'), '{:,.0f}')} | {f(med(t, 'not_200'), '{:,.0f}')} "
          f"| {f(med(t, 'pages_with_cookie_pct'), '{:.0f}%')} |")
print("\nwhole run: the tool's CPU from start to exit (/usr/bin/time) over every request nginx answered, start-up "
      "included (the JVM's, Python's imports and Locust's, a few ms for sluice). Steady state: the tool's utime+stime "
      "(/proc) over the requests nginx counted (stub_status), in the middle of the load (its first quarter and last "
      "tenth left out; JIT compiling still counts). The tool's own count: sluice's samples, Locust's Aggregated "
      "requests, JMeter's summariser; they can differ from nginx's by the requests in flight at the end.\n")
pw, ps = med("sluice-plain", "cpu_us_per_req"), med("sluice-plain", "steady_cpu_us_per_req")
if pw and lw:
    per_round = []
    for r in sorted({r["round"] for r in rows}):
        a = [x for x in rows if x["round"] == r and x["tool"] == "sluice-login" and x.get("cpu_us_per_req")]
        b = [x for x in rows if x["round"] == r and x["tool"] == "sluice-plain" and x.get("cpu_us_per_req")]
        if a and b:
            per_round.append(a[0]["cpu_us_per_req"] / b[0]["cpu_us_per_req"])
    verdict = "within" if lw / pw <= 1.15 else "ABOVE"
    print(f"**sluice-login / sluice-plain: {lw / pw:.3f}× whole run, {f(ratio(ls, ps), '{:.3f}×')} steady state** "
          f"(the target: at most 1.15×; {verdict} it on the whole run); per round (whole run): "
          f"{', '.join(f'{x:.2f}×' for x in per_round)}. What the cookie jar, the CSV row and the extraction "
          f"cost beyond the requests themselves: {lw - pw:+.2f} µs a request.\n")
    for t in ("locust", "jmeter"):
        w, s = med(t, "cpu_us_per_req"), med(t, "steady_cpu_us_per_req")
        if w:
            print(f"- {t} / sluice-login: {w / lw:.1f}× whole run, {f(ratio(s, ls), '{:.1f}×')} steady state; "
                  f"its req/s {f(ratio(med(t, 'rps'), med('sluice-login', 'rps')), '{:.3f}×')} sluice-login's on one core.")
    print()

print("CPU µs per request in each round (whole run / steady state), and the host during that run: "
      "(s) = % of the machine's CPU stolen by other guests, (o) = % taken by other programs here.\n")
print("| round | " + " | ".join(tools) + " |")
print("|---:|" + "---:|" * len(tools))
for r in sorted({r["round"] for r in rows}):
    cells = []
    for t in tools:
        x = next((x for x in rows if x["round"] == r and x["tool"] == t), None)
        if x is None:
            cells.append("")
            continue
        h = x.get("host")
        cells.append(f"{f(x.get('cpu_us_per_req'), '{:.2f}')} / {f(x.get('steady_cpu_us_per_req'), '{:.2f}')}"
                     + (f" ({h['steal_pct']:.0f}s {h['others_pct']:.0f}o)" if h else ""))
    print(f"| {r} | " + " | ".join(cells) + " |")
bad = [x for x in rows if contended(x)]
problems = [f"- round {x['round']}, {x['tool']}: contended: {x['host']['steal_pct']:.1f}% of CPU stolen by other "
            f"guests, {x['host']['others_pct']:.1f}% taken by other programs here" for x in bad]
problems += [f"- round {x['round']}, {x['tool']}: {x['errors']} errors (the tool's)" for x in rows if x.get("errors")]
problems += [f"- round {x['round']}, {x['tool']}: exited {x['exit']}" for x in rows if x.get("exit")]
problems += [f"- round {x['round']}, {x['tool']}: {x['not_200']} answers not 200 (nginx)" for x in rows if x.get("not_200")]
if problems:
    print("\nProblems seen (these runs' numbers are suspect):\n")
    print("\n".join(problems))
    clean = [x for x in rows if not contended(x)]
    if bad and clean:
        print("\nThe same, medians of the uncontended runs only (how many of them in brackets):\n")
        print("| tool | CPU µs/request, whole run | CPU µs/request, steady state |")
        print("|---|---:|---:|")
        for t in tools:
            n = sum(1 for x in clean if x["tool"] == t)
            print(f"| {t} | {f(med(t, 'cpu_us_per_req', clean), '{:.2f}')} ({n}) | {f(med(t, 'steady_cpu_us_per_req', clean), '{:.2f}')} ({n}) |")
PY
}

main() {
    LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
    install_tools
    OUT=$(new_run_dir login-flow)
    mkdir -p "$OUT/raw"
    : >"$OUT/results.jsonl"
    start_target
    write_sampler
    write_parser
    cp "$WORK/nginx/nginx.conf" "$OUT/raw/nginx.conf"
    [[ ! -f $WORK/jmeter-version.txt ]] || cp "$WORK/jmeter-version.txt" "$OUT/raw/"
    local tools=($TOOLS) round i
    local k=${#tools[@]}
    for (( round = 1; round <= RUNS; round++ )); do
        for (( i = 0; i < k; i++ )); do
            measure "${tools[(i + round - 1) % k]}" "$round"
        done
    done
    cp "$WORK/nginx/error.log" "$OUT/raw/nginx-error.log" 2>/dev/null || true
    summarise
    cat "$OUT/summary.md"
    python3 "$REPO/bench/runs.py" pack "$OUT" && python3 "$REPO/bench/runs.py" index
}

main "$@"
