"""wire_latency.py PCAP SERVER_PORT: the latency on the wire, as the loopback saw it.

For each connection to SERVER_PORT, the time from the client's last segment carrying data
to the server's next segment carrying data: one request and its answer when a connection
has one request in flight at a time (HTTP/1.1 keep-alive, HTTP/2 with one stream). The
last segment, not the first since the previous answer: a client's frame that no answer
follows (an HTTP/2 WINDOW_UPDATE or PING) would otherwise stretch the next request's
pair by the connection's idle time. The capture stamps a segment when its sender's kernel sends it, so the
figure holds the server's time and the kernel's, and none of the load generator's own:
what a tool reports above it is the tool's share (its timers, its wake-ups, its queues).
Each connection's first three exchanges (the TLS handshake's) are left out.

Prints one JSON object: wire_mean_ms, wire_p50_ms, wire_pairs.
"""

import json
import statistics
import subprocess
import sys

HANDSHAKE_EXCHANGES = 3


def segments(pcap):
    """(time, source, destination) of each TCP segment with data, in capture order."""
    text = subprocess.run(["tcpdump", "-r", pcap, "-nn", "-tt", "-q"],
                          capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        f = line.split()
        # "1764311234.123456 IP 127.0.0.1.54321 > 127.0.0.1.8443: tcp 87"
        if len(f) >= 7 and f[1] == "IP" and f[5] == "tcp" and f[6] != "0":
            yield float(f[0]), f[2], f[4].rstrip(":")


def latencies(pcap, port):
    suffix = "." + port
    sent, exchanges, out = {}, {}, []
    for t, src, dst in segments(pcap):
        if dst.endswith(suffix):
            sent[src] = t
        elif src.endswith(suffix) and dst in sent:
            exchanges[dst] = exchanges.get(dst, 0) + 1
            began = sent.pop(dst)
            if exchanges[dst] > HANDSHAKE_EXCHANGES:
                out.append((t - began) * 1000)
    return sorted(out)


def main():
    lat = latencies(sys.argv[1], sys.argv[2])
    print(json.dumps({
        "wire_mean_ms": statistics.mean(lat) if lat else None,
        "wire_p50_ms": lat[len(lat) // 2] if lat else None,
        "wire_pairs": len(lat),
    }))


if __name__ == "__main__":
    main()
