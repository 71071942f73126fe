#!/usr/bin/env python3
"""bench/hostile.py: what hostile clients cost sluice, before and after a change.

Two of issue 25's cases, against `sluice serve` (2 workers) in front of one
`sluice backend`, everything on 127.0.0.1:
  1. partial h2c prefaces: N connections to a plain listener with `http2 = true` each
     send the first 16 bytes of the HTTP/2 preface and stop (header_timeout 30 s). We
     read sluice's CPU time (/proc/PID/stat) over 3 s, and a bystander's latency: the
     median of 200 GETs, one after another on one keep-alive connection.
  2. silent admin connections: 1,000 connections to the admin listener that send
     nothing; how many are still open 8 s later.
Each binary given is measured RUNS times, binaries interleaved; the summary gives
medians. Every loop is bounded in count and time; only loopback is used.

Usage: [RUNS=3] bench/hostile.py NAME=BINARY [NAME=BINARY ...]
Results: bench/runs/<date>-hostile/ (results.jsonl, summary.md).
"""
import datetime
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PREFACE_PART = b"PRI * HTTP/2.0\r\n"


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_ports(n):
    """N free loopback ports, from scripts/free-ports (shared by the bench scripts)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "free-ports")
    out = subprocess.run([sys.executable, script, str(n)], check=True, capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def wait_port(port, deadline=20):
    until = time.time() + deadline
    while time.time() < until:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on {port} after {deadline} s")


def start(binary, workdir):
    """A backend and a sluice in front of it: (processes, proxy port, admin port)."""
    app, proxy, admin = free_ports(3)
    backend = subprocess.Popen(
        [binary, "backend", "--name", "a", "--listen", f"127.0.0.1:{app}"],
        stderr=subprocess.DEVNULL)
    config = os.path.join(workdir, "sluice.toml")
    with open(config, "w") as f:
        f.write(f"""workers = 2
header_timeout = "30s"
[[listener]]
bind = "127.0.0.1:{proxy}"
http2 = true
[[route]]
upstream = "app"
[upstream.app]
servers = ["127.0.0.1:{app}"]
[admin]
bind = "127.0.0.1:{admin}"
""")
    serve = subprocess.Popen([binary, "serve", "-c", config],
                             stderr=subprocess.DEVNULL, env=dict(os.environ, TMPDIR=workdir))
    for port in (app, proxy, admin):
        wait_port(port)
    return [serve, backend], proxy, admin


def read_response(c):
    """Reads one response with a Content-Length body; its status line."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = c.recv(4096)
        if not chunk:
            sys.exit("the bystander's connection closed")
        got += chunk
    head, body = got.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += c.recv(4096)
    return head.split(b"\r\n")[0]


def bystander_ms(port, n=200):
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        c.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        read_response(c)
        times.append((time.perf_counter() - t) * 1000)
    c.close()
    return statistics.median(times)


def partial_prefaces(pid, port, n):
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(PREFACE_PART)
        conns.append(s)
    time.sleep(0.5)
    before = cpu_seconds(pid)
    time.sleep(3)
    cpu = cpu_seconds(pid) - before
    latency = bystander_ms(port)
    for s in conns:
        s.close()
    return {"cpu_s_in_3s": round(cpu, 3), "bystander_p50_ms": round(latency, 3)}


def silent_admin(port, n=1000, after=8.0):
    conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(n)]
    time.sleep(after)
    still_open = 0
    for s in conns:
        s.setblocking(False)
        try:
            still_open += s.recv(1) != b""
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
        s.close()
    return {"admin_open_after_8s": still_open}


def fresh(binary, workdir, measure):
    """`measure(pid, proxy port, admin port)` on a sluice of its own, killed after."""
    procs, proxy, admin = start(binary, workdir)
    try:
        return measure(procs[0].pid, proxy, admin)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def one_run(name, binary, workdir):
    # Each case on fresh processes: what one case leaves behind (connections closed
    # by this script) must not be measured in the next.
    row = {"binary": name}
    for n in (1000, 6000):
        got = fresh(binary, workdir, lambda pid, proxy, _: partial_prefaces(pid, proxy, n))
        row.update({f"{k}_{n}": v for k, v in got.items()})
    row.update(fresh(binary, workdir, lambda _pid, _proxy, admin: silent_admin(admin)))
    return row


def main():
    binaries = [a.split("=", 1) for a in sys.argv[1:]]
    if not binaries or any(len(b) != 2 for b in binaries):
        sys.exit(__doc__)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    runs = int(os.environ.get("RUNS", "3"))
    day = datetime.date.today().isoformat()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs", f"{day}-hostile")
    os.makedirs(out, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(runs):
            for name, binary in binaries[r % len(binaries):] + binaries[:r % len(binaries)]:
                row = one_run(name, binary, workdir)
                row["round"] = r + 1
                print(json.dumps(row), flush=True)
                rows.append(row)
    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    keys = [k for k in rows[0] if k not in ("binary", "round")]
    lines = [f"# bench/hostile.py, {day}, RUNS={runs}: medians", "",
             "| binary | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name, _ in binaries:
        mine = [r for r in rows if r["binary"] == name]
        meds = [statistics.median(r[k] for r in mine) for k in keys]
        lines.append(f"| {name} | " + " | ".join(f"{m:g}" for m in meds) + " |")
    summary = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary)
    print(summary)


if __name__ == "__main__":
    main()
