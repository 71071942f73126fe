#!/usr/bin/env python3
"""bench/compare_stats.py: the statistics of bench/compare.sh (stdlib only). Subcommands:
  ticks PID ROOT                    utime+stime (clock ticks) of PID and all its descendants,
                                    then the host reading (see host_reading)
  record NAME ROUND WRK H2 T0 T1 HZ parse one round's logs, print a JSON line
  report RESULTS.jsonl              print the Markdown summary (medians, ratios to nginx)
  ns PID [PID...]                   on-CPU nanoseconds of each PID's process tree, one per line
"""
import json, os, re, statistics, sys

def processes():
    # ppid and utime+stime for every process; the comm field may hold spaces or ')',
    # so split after the last ')'. Fields 14 and 15 (1-based) are utime and stime,
    # i.e. index 11 and 12 after the ')' (which starts at field 3, state).
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while we looked
        # Fields 16 and 17 (cutime, cstime): children that exited and were waited for.
        procs[int(entry)] = (int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14]))
    return procs

def tree(procs, root):
    """root and its descendants that are alive (in procs)."""
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            yield pid
            todo.extend(p for p, (ppid, _, _) in procs.items() if ppid == pid)

def ticks(procs, root, reaped=False):
    """CPU ticks of root and its descendants; with reaped, also of the descendants that
    already exited (a load generator that ran in the window and is gone)."""
    return sum(procs[p][1] + (procs[p][2] if reaped else 0) for p in tree(procs, root))

def host_reading(procs, root):
    """What else ran on the machine: 'steal/all/busy/ours/psi'. steal, all and busy are
    the whole machine's clock ticks (/proc/stat: stolen by other guests of the
    hypervisor, all, all but idle and iowait); ours is the ticks of this script's
    process tree (balancers, backends, load generators); psi is the kernel's total of
    microseconds in which some task waited for a CPU (/proc/pressure/cpu; 0 if absent).
    Busy minus steal minus ours is CPU that other programs on this machine took."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    psi = 0
    try:
        with open("/proc/pressure/cpu") as f:
            psi = int(f.readline().rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        pass
    return f"{v[7]}/{sum(v)}/{sum(v) - v[3] - v[4]}/{ticks(procs, root, reaped=True)}/{psi}"

def parse_host(text):
    """The host line a CPU window wrote: percentages of the window's CPU time stolen by
    other guests and taken by other programs here, and PSI 'some' as a share of wall time."""
    m = re.search(r"^# host \(.*\): (\S+) -> (\S+)$", text, re.M)
    if not m:
        return None
    a, b = ([int(x) for x in g.split("/")] for g in m.groups())
    steal, total, busy, ours, psi = (y - x for x, y in zip(a, b))
    if total <= 0:
        return None
    wall_us = total / os.cpu_count() / os.sysconf("SC_CLK_TCK") * 1e6
    # busy counts stolen ticks too; others are what is left after ours and the stolen.
    return {"steal_pct": 100 * steal / total, "others_pct": 100 * max(busy - steal - ours, 0) / total,
            "psi_some_pct": 100 * psi / wall_us}

UNITS_US = {"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}

def duration_us(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError(f"cannot parse duration {text!r}")
    return float(m.group(1)) * UNITS_US[m.group(2)]

def parse_wrk(text):
    out = {}
    m = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    if not m:
        raise SystemExit("wrk output has no Requests/sec line")
    out["rps"] = float(m.group(1))
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}%\s+(\S+)", text, re.M)
        if not m:
            raise SystemExit(f"wrk output has no {pct}% latency line (was --latency given?)")
        out[f"p{pct}_us"] = duration_us(m.group(1))
    m = re.search(r"^\s+(\d+) requests in", text, re.M)
    out["requests"] = int(m.group(1)) if m else None
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket_errors"] = dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups()))) if m else {}
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    out["non_2xx_3xx"] = int(m.group(1)) if m else 0
    return out

def parse_h2load(text):
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored, (\d+) timeout", text, re.M)
    if not m:
        raise SystemExit("h2load output has no 'requests:' line")
    keys = ("total", "started", "done", "succeeded", "failed", "errored", "timeout")
    out = {"requests": dict(zip(keys, map(int, m.groups())))}
    m = re.search(r"^finished in ([\d.]+)s, ([\d.]+) req/s", text, re.M)
    out["seconds"], out["rps"] = (float(m.group(1)), float(m.group(2))) if m else (None, None)
    m = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.M)
    out["status"] = dict(zip(("2xx", "3xx", "4xx", "5xx"), map(int, m.groups()))) if m else {}
    m = re.search(r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
    out["req_time_mean_us"] = duration_us(m.group(3)) if m else None
    out["host"] = parse_host(text)
    return out

STEAL_PCT, OTHERS_PCT = 5, 10

def contention(run):
    """A problem line if others took enough of the CPU during this fixed-rate run
    to make its CPU figure suspect (a starved process loses cache, and waits)."""
    h = run.get("host")
    if h and (h["steal_pct"] > STEAL_PCT or h["others_pct"] > OTHERS_PCT):
        return (f"contended: {h['steal_pct']:.1f}% of CPU stolen by other guests, "
                f"{h['others_pct']:.1f}% taken by other programs here")
    return None

def problems(rec):
    """Everything about one record that makes its numbers suspect."""
    p, w, h = [], rec["wrk"], rec["h2load"]
    if w["non_2xx_3xx"]:
        p.append(f"wrk: {w['non_2xx_3xx']} non-2xx/3xx responses")
    errs = {k: v for k, v in w["socket_errors"].items() if v}
    if errs:
        p.append("wrk: socket errors " + ", ".join(f"{k} {v}" for k, v in errs.items()))
    r = h["requests"]
    bad = {k: r[k] for k in ("failed", "errored", "timeout") if r[k]}
    if bad:
        p.append("h2load: " + ", ".join(f"{v} {k}" for k, v in bad.items()))
    non2xx = sum(v for k, v in h["status"].items() if k != "2xx")
    if non2xx:
        p.append(f"h2load: {non2xx} non-2xx responses")
    if h["rps"] is not None and h["rps"] < 0.95 * rec["target_rate"]:
        p.append(f"h2load: reached only {h['rps']:.0f} of {rec['target_rate']} req/s")
    if contention(h):
        p.append("h2load: " + contention(h))
    if rec["cpu_ticks"] < 20:
        p.append(f"CPU: only {rec['cpu_ticks']} clock ticks measured; the figure is coarse (raise DUR)")
    return p

def record(name, rnd, wrk_path, h2_path, t0, t1, hz, *tls):
    rec = {"balancer": name, "round": int(rnd),
           "wrk": parse_wrk(open(wrk_path).read()),
           "h2load": parse_h2load(open(h2_path).read())}
    rec["target_rate"] = int(os.environ.get("EFFECTIVE_RATE", "0"))
    rec["cpu_ticks"] = int(t1) - int(t0)
    done = rec["h2load"]["requests"]["done"]
    rec["cpu_us_per_req"] = rec["cpu_ticks"] / int(hz) * 1e6 / done if done else None
    rec["problems"] = problems(rec)
    if tls:
        rec["tls"] = tls_record(rec, *tls, hz=hz)
    for p in rec["problems"]:
        print(f"[compare] WARNING: round {rnd} {name}: {p}", file=sys.stderr)
    print(json.dumps(rec))

def tls_record(rec, hs_path, ka_path, t0, t1, *rest, hz):
    """The HTTPS runs: new connections (wrk, one request each, sessions resumed) and
    keep-alive cost; then, when given (`rest`), HTTP/2 at saturation and at the fixed
    rate, and the full handshakes' cost."""
    t = {"handshake_wrk": parse_wrk(open(hs_path).read()),
         "h2load": parse_h2load(open(ka_path).read()),
         "cpu_ticks": int(t1) - int(t0)}
    done = t["h2load"]["requests"]["done"]
    t["cpu_us_per_req"] = t["cpu_ticks"] / int(hz) * 1e6 / done if done else None
    sub = {"wrk": t["handshake_wrk"], "h2load": t["h2load"],
           "target_rate": rec["target_rate"], "cpu_ticks": t["cpu_ticks"]}
    rec["problems"] += ["TLS " + p for p in problems(sub)]
    h2, full = rest[:4], rest[4:]
    if full:
        t["full_handshakes"] = full_handshakes(rec, *full, hz=hz)
    if h2:
        sat_path, rate_path, t2, t3 = h2
        sat, rate = parse_h2load(open(sat_path).read()), parse_h2load(open(rate_path).read())
        ticks = int(t3) - int(t2)
        done = rate["requests"]["done"]
        t["h2"] = {"saturation": sat, "rate": rate, "cpu_ticks": ticks,
                   "cpu_us_per_req": ticks / int(hz) * 1e6 / done if done else None}
        for name, run in (("saturation", sat), ("rate", rate)):
            r = run["requests"]
            bad = {k: r[k] for k in ("failed", "errored", "timeout") if r[k]}
            if bad or sum(v for k, v in run["status"].items() if k != "2xx"):
                rec["problems"].append(f"HTTP/2 {name}: {bad or 'non-2xx responses'}")
        if contention(rate):
            rec["problems"].append("HTTP/2 rate: " + contention(rate))
    return t

def full_handshakes(rec, log_path, json_path, t0, t1, hz):
    """The full-handshake run: `sluice bench --no-keepalive --tls-resume off` at a fixed
    rate, its requests from its JSON report, the balancer's CPU per request."""
    step = json.load(open(json_path))["steps"][0]
    conns = step.get("connections") or {}
    run = {"requests": step["samples"], "errors": step["errors"], "rps": step["throughput_rps"],
           "mean_ms": step["mean_ms"], "handshakes": conns.get("tls_handshakes"),
           "resumed": conns.get("tls_resumed"), "cpu_ticks": int(t1) - int(t0),
           "host": parse_host(open(log_path).read())}
    run["cpu_us_per_req"] = run["cpu_ticks"] / int(hz) * 1e6 / run["requests"] if run["requests"] else None
    if run["errors"] or run["resumed"]:
        rec["problems"].append(f"full handshakes: {run['errors']} errors, {run['resumed']} resumed")
    if contention(run):
        rec["problems"].append("full handshakes: " + contention(run))
    return run

def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def report(path):
    recs = [json.loads(line) for line in open(path) if line.strip()]
    order = ["sluice", "sluice-pgo", "nginx", "haproxy", "sluice-base"]
    order = [b for b in order if any(r["balancer"] == b for r in recs)]
    rows = {}
    for b in order:
        rs = [r for r in recs if r["balancer"] == b]
        rows[b] = {
            "n": len(rs),
            "rps": median([r["wrk"]["rps"] for r in rs]),
            "p50": median([r["wrk"]["p50_us"] for r in rs]),
            "p99": median([r["wrk"]["p99_us"] for r in rs]),
            "cpu": median([r["cpu_us_per_req"] for r in rs]),
            "h2rps": median([r["h2load"]["rps"] for r in rs]),
            "h2mean": median([r["h2load"]["req_time_mean_us"] for r in rs]),
        }
    base = rows["nginx"]

    def ratio(b, key):
        v, n = rows[b][key], base[key]
        return f"{v / n:.2f}×" if v is not None and n else "n/a"

    def num(v, fmt):
        return fmt.format(v) if v is not None else "n/a"

    print("| balancer | req/s at saturation | ×nginx | p50 (ms) | ×nginx | p99 (ms) | ×nginx "
          "| CPU µs/req at fixed rate | ×nginx | runs with problems |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in order:
        r = rows[b]
        bad = sum(1 for x in recs if x["balancer"] == b and x["problems"])
        print(f"| {b} | {num(r['rps'], '{:,.0f}')} | {ratio(b, 'rps')} "
              f"| {num(r['p50'] and r['p50'] / 1e3, '{:.2f}')} | {ratio(b, 'p50')} "
              f"| {num(r['p99'] and r['p99'] / 1e3, '{:.2f}')} | {ratio(b, 'p99')} "
              f"| {num(r['cpu'], '{:.1f}')} | {ratio(b, 'cpu')} | {bad} of {r['n']} |")
    print()
    print(f"Medians over {max(r['n'] for r in rows.values())} run(s). Higher req/s is better; "
          "lower latency and CPU are better. ×nginx = balancer / nginx.")
    print()
    print("Fixed-rate run details (medians): achieved rate and h2load's mean request time.")
    print()
    print("| balancer | achieved req/s | mean request time (ms) |")
    print("|---|---:|---:|")
    for b in order:
        r = rows[b]
        print(f"| {b} | {num(r['h2rps'], '{:,.0f}')} | {num(r['h2mean'] and r['h2mean'] / 1e3, '{:.2f}')} |")
    print()
    tls_report(recs, order)
    rounds_report(recs, order)
    issues = [(r["round"], r["balancer"], p) for r in recs for p in r["problems"]]
    if issues:
        print("Problems seen (these runs' numbers are suspect):")
        print()
        for rnd, b, p in issues:
            print(f"- round {rnd}, {b}: {p}")
    else:
        print("No errors: every wrk run had 0 socket errors and 0 non-2xx/3xx responses; "
              "every h2load run had 0 failed/errored/timed-out requests.")

def tls_report(recs, order):
    """The HTTPS table, when the runs measured TLS."""
    rows = {}
    for b in order:
        rs = [r["tls"] for r in recs if r["balancer"] == b and "tls" in r]
        if rs:
            rows[b] = {"hs": median([r["handshake_wrk"]["rps"] for r in rs]),
                       "cpu": median([r["cpu_us_per_req"] for r in rs]),
                       "rate": median([r["h2load"]["rps"] for r in rs]), "n": len(rs),
                       "full": median([r["full_handshakes"]["cpu_us_per_req"]
                                       for r in rs if "full_handshakes" in r])}
    if "nginx" not in rows:
        return
    base = rows["nginx"]
    # The full handshakes' rate as the runs achieved it (compare.sh's HS_RATE says the aim).
    full_rate = median([r["tls"]["full_handshakes"]["rps"] for r in recs
                        if "full_handshakes" in r.get("tls", {})])
    per_s = f", {full_rate:,.0f} a second" if full_rate else ""
    print("HTTPS (second listener, ECDSA P-256): new TLS connections per second at saturation "
          "(wrk, one request each, the session resumed: wrk keeps it), CPU per request over "
          "keep-alive TLS at the fixed rate, and CPU per new client with a full handshake (a "
          f"new connection, a full handshake and one request each{per_s}). Higher "
          "connections/s and lower CPU are better.")
    print()
    print("| balancer | new connections/s, resumed | ×nginx | keep-alive TLS CPU µs/req | ×nginx "
          "| achieved req/s | full handshake CPU µs/req | ×nginx |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    ratio = lambda v, n: f"{v / n:.2f}×" if v and n else "n/a"
    for b, r in rows.items():
        full = f"{r['full']:.1f}" if r["full"] is not None else "n/a"
        print(f"| {b} | {r['hs']:,.0f} | {ratio(r['hs'], base['hs'])} | {r['cpu']:.1f} "
              f"| {ratio(r['cpu'], base['cpu'])} | {r['rate']:,.0f} | {full} "
              f"| {ratio(r['full'], base['full'])} |")
    print()
    h2_report(recs, order)

def h2_report(recs, order):
    """The HTTP/2 table, when the runs measured it."""
    rows = {}
    for b in order:
        rs = [r["tls"]["h2"] for r in recs if r["balancer"] == b and "h2" in r.get("tls", {})]
        if rs:
            rows[b] = {"rps": median([r["saturation"]["rps"] for r in rs]),
                       "cpu": median([r["cpu_us_per_req"] for r in rs]),
                       "rate": median([r["rate"]["rps"] for r in rs])}
    if "nginx" not in rows:
        return
    base = rows["nginx"]
    ratio = lambda v, n: f"{v / n:.2f}×" if v and n else "n/a"
    print("HTTP/2 over TLS (ALPN h2, the same listener): requests/s at saturation "
          "(h2load -t2 -c16 -m16) and CPU per request at the fixed rate (h2load -m1).")
    print()
    print("| balancer | HTTP/2 req/s at saturation | ×nginx | HTTP/2 CPU µs/req | ×nginx | achieved req/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for b, r in rows.items():
        print(f"| {b} | {r['rps']:,.0f} | {ratio(r['rps'], base['rps'])} | {r['cpu']:.1f} "
              f"| {ratio(r['cpu'], base['cpu'])} | {r['rate']:,.0f} |")
    print()

def cost_runs(rec):
    """(label, CPU µs/req, h2load run) for each fixed-rate run of one record."""
    runs = [("HTTP/1.1", rec["cpu_us_per_req"], rec["h2load"])]
    t = rec.get("tls")
    if t:
        runs.append(("keep-alive TLS", t["cpu_us_per_req"], t["h2load"]))
        if "h2" in t:
            runs.append(("HTTP/2", t["h2"]["cpu_us_per_req"], t["h2"]["rate"]))
        if "full_handshakes" in t:
            runs.append(("full TLS handshake", t["full_handshakes"]["cpu_us_per_req"], t["full_handshakes"]))
    return runs

def rounds_report(recs, order):
    """Every round's CPU per request, with what else ran on the machine meanwhile, so
    a reader can tell a spread of the balancer's own from a noisy neighbour's."""
    rounds = sorted({r["round"] for r in recs})
    print("CPU µs per request in each round, and the host during that run: "
          "(s) = % of the machine's CPU stolen by other guests, (o) = % taken by "
          f"other programs on this machine. Runs above {STEAL_PCT}% (s) or {OTHERS_PCT}% (o) "
          "are listed under problems.")
    print()
    print("| balancer | run | " + " | ".join(f"round {n}" for n in rounds) + " |")
    print("|---|---|" + "---:|" * len(rounds))
    for b in order:
        by_round = {r["round"]: cost_runs(r) for r in recs if r["balancer"] == b}
        labels = [label for label, _, _ in next(iter(by_round.values()), [])]
        for i, label in enumerate(labels):
            cells = []
            for n in rounds:
                runs = by_round.get(n)
                if not runs or i >= len(runs) or runs[i][1] is None:
                    cells.append("n/a")
                    continue
                h = runs[i][2].get("host")
                host = f" ({h['steal_pct']:.0f}s {h['others_pct']:.0f}o)" if h else ""
                cells.append(f"{runs[i][1]:.1f}{host}")
            print(f"| {b} | {label} | " + " | ".join(cells) + " |")
    print()
    clean_report(recs, order)

def clean_report(recs, order):
    """CPU per request, medians of only the runs nobody else disturbed (no contention
    line): on a shared host a stolen quarter of the CPU can double a figure."""
    clean = {}
    for b in order:
        for r in recs:
            if r["balancer"] == b:
                for label, cpu, run in cost_runs(r):
                    if cpu is not None and not contention(run):
                        clean.setdefault((b, label), []).append(cpu)
    labels = ["HTTP/1.1", "keep-alive TLS", "HTTP/2", "full TLS handshake"]
    labels = [l for l in labels if any(k[1] == l for k in clean)]
    print("CPU µs per request, medians of the uncontended runs only (how many of them in "
          "brackets):")
    print()
    print("| balancer | " + " | ".join(f"{l} | ×nginx" for l in labels) + " |")
    print("|---|" + "---:|---:|" * len(labels))
    for b in order:
        cells = []
        for l in labels:
            xs, base = clean.get((b, l), []), median(clean.get(("nginx", l), []))
            v = median(xs)
            cells.append(f"{v:.1f} ({len(xs)})" if v is not None else "n/a")
            cells.append(f"{v / base:.2f}×" if v is not None and base else "n/a")
        print(f"| {b} | " + " | ".join(cells) + " |")
    print()

def on_cpu_ns(procs, root):
    """Nanoseconds root and its descendants' threads ran (/proc/*/task/*/schedstat's
    first field): finer than clock ticks, for differences of a few percent."""
    total = 0
    for pid in tree(procs, root):
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
        except OSError:
            pass  # exited while we looked
    return total

def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "ticks" and len(argv) == 4:
        procs = processes()
        print(ticks(procs, int(argv[2])), host_reading(procs, int(argv[3])))
    elif cmd == "record" and len(argv) in (9, 13, 17, 21):
        record(*argv[2:])
    elif cmd == "ns" and len(argv) >= 3:
        procs = processes()
        for pid in argv[2:]:
            print(on_cpu_ns(procs, int(pid)))
    elif cmd == "report" and len(argv) == 3:
        report(argv[2])
    else:
        raise SystemExit(__doc__)

if __name__ == "__main__":
    main(sys.argv)
