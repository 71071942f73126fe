"""Oracle for tests/differential.rs: what Python's h11 makes of each request.

Input (stdin): one JSON object per line, {"id": N, "data": "<base64 bytes>"}.
Output (stdout): one JSON object per line, in input order:

  {"id": N, "status": "accepted" | "refused" | "incomplete",
   "error": str,              # refused: h11's message (any exception counts)
   "stage": "head" | "body" | "trailer",  # where h11 stopped
   "skipped": n,              # leading empty lines skipped (see below)
   "method", "target", "version": base64,
   "headers": [[raw_name_b64, value_b64], ...],   # h11 strips OWS from values
   "framing": "none" | "length:N" | "chunked",    # h11's own rule: TE beats CL
   "body": base64,            # decoded payload read so far
   "consumed": n,             # input bytes the first request took (when known)
   "normalized": "content-length,chunk-ext-bws"}  # fixes applied (see below)

One fresh h11.Connection(h11.SERVER) per case; all data is given at once, and no
EOF is sent, so a message h11 has not seen the end of is "incomplete". Reading stops
at the first EndOfMessage; the bytes h11 has not processed then (trailing_data) are
what follows the first request, so `consumed` is exact.

Leading empty lines: RFC 9112 section 2.2 says a server SHOULD ignore at least one
empty line (CRLF) before the request-line; sluice (httparse) ignores any number of CRLF
or bare LF. h11 does not ("no request line received"), so they are skipped here
exactly as httparse skips them, and counted in `skipped` (and in `consumed`).

Inputs valid by RFC 9112/9110 that h11 refuses are respelled (same length, same
offsets) and parsed again, and the answer lists the fix in "normalized", so the test
can count it: Content-Length fields with one decimal value spelled differently (`5`
and `005`, see same_decimal_lengths), and whitespace before a chunk extension's `;`
(see chunk_ext_bws). Each applies only on h11's matching error.

Only the standard library and h11.
"""

import base64
import json
import re
import sys

import h11


def b64(data):
    return base64.b64encode(bytes(data)).decode("ascii")


def framing_of(headers):
    # h11._connection._body_framing for a request, from the normalised headers:
    # Transfer-Encoding (only ever exactly "chunked" once validated) beats
    # Content-Length; neither means no body.
    names = [name for name, _ in headers]
    if b"transfer-encoding" in names:
        return "chunked"
    for name, value in headers:
        if name == b"content-length":
            return "length:%d" % int(value)
    return "none"


def run(case_id, data):
    skipped = 0
    while True:
        if data.startswith(b"\r\n"):
            data, skipped = data[2:], skipped + 2
        elif data.startswith(b"\n"):
            data, skipped = data[1:], skipped + 1
        else:
            break
    out = parse(data)
    # Known differences where h11 refuses valid input: respell the part h11 trips on,
    # keeping every offset, and parse again (a few times: one chunk line per pass).
    fixes = set()
    for _ in range(16):
        if out["status"] != "refused":
            break
        fixed, fix = None, None
        if out["stage"] == "head" and out["error"].endswith(CONFLICTING_CL):
            fixed, fix = same_decimal_lengths(data), "content-length"
        elif out["stage"] == "body" and ILLEGAL_CHUNK_HEADER in out["error"]:
            fixed, fix = chunk_ext_bws(data, out["consumed"]), "chunk-ext-bws"
        if fixed is None:
            break
        data = fixed
        fixes.add(fix)
        out = parse(data)
    if fixes:
        out["normalized"] = ",".join(sorted(fixes))
    out["id"] = case_id
    out["skipped"] = skipped
    out["consumed"] += skipped
    return out


CONFLICTING_CL = "conflicting Content-Length headers"
ILLEGAL_CHUNK_HEADER = "illegal chunk header"
HEAD_END = re.compile(rb"\n\r?\n")  # h11's own (_receivebuffer.blank_line_regex)


def same_decimal_lengths(data):
    """The input with each Content-Length value rewritten to one spelling, when they
    all have the same decimal value but not the same bytes (`5` and `005`); else None.

    RFC 9110 section 8.6 lets a recipient take Content-Length fields that all hold
    the same decimal value as one field with that value (sluice does, and forwards one
    `Content-Length: 5`); h11 compares the bytes. Each value is rewritten as the plain
    decimal padded with trailing spaces (optional whitespace h11 strips), never longer
    than the digits it replaces, so every offset in the input stays the same.
    """
    end = HEAD_END.search(data)
    if end is None:
        return None
    head = data[: end.end()]
    lines = head.split(b"\n")
    values = []
    for line in lines[1:]:
        name, colon, value = line.rstrip(b"\r").partition(b":")
        if colon and name.lower() == b"content-length":
            parts = [v.strip(b" \t") for v in value.split(b",")]
            if not all(p.isdigit() for p in parts):
                return None
            values.extend(int(p) for p in parts)
    if len(set(values)) != 1:
        return None
    plain = b"%d" % values[0]
    out = [lines[0]]
    for line in lines[1:]:
        cr = b"\r" if line.endswith(b"\r") else b""
        name, colon, value = line[: len(line) - len(cr)].partition(b":")
        if colon and name.lower() == b"content-length":
            line = name + b":" + plain.ljust(len(value)) + cr
        out.append(line)
    fixed = b"\n".join(out) + data[end.end() :]
    assert len(fixed) == len(data)
    return fixed


CHUNK_LINE_BWS = re.compile(rb"([0-9A-Fa-f]+)([ \t]+);(.*\r\n)", re.S)


def chunk_ext_bws(data, consumed):
    """The input with whitespace between a chunk size and its `;` moved after the `;`,
    when that is why h11 refused the chunk line that ends at `consumed`; else None.

    RFC 9112 section 7.1.1: chunk-ext = *( BWS ";" BWS chunk-ext-name ... ), so
    `5 ;a=b` is valid (sluice accepts it); h11's pattern has no whitespace before the
    `;`. h11 ignores everything after the `;`, so `5; a=b` reads the same to it.
    """
    start = data.rfind(b"\n", 0, consumed - 1) + 1
    line = data[start:consumed]
    m = CHUNK_LINE_BWS.fullmatch(line)
    if m is None:
        return None
    return data[:start] + m.group(1) + b";" + m.group(2) + m.group(3) + data[consumed:]


def parse(data):
    out = {"stage": "head"}
    conn = h11.Connection(h11.SERVER)
    body = bytearray()
    try:
        conn.receive_data(data)
        event = conn.next_event()
        if event is h11.NEED_DATA:
            out["status"] = "incomplete"
            event = None
        elif not isinstance(event, h11.Request):
            raise RuntimeError("first event is %r" % (event,))
    except Exception as exc:  # h11.RemoteProtocolError, or anything else: refused
        out["status"] = "refused"
        out["error"] = "%s: %s" % (type(exc).__name__, exc)
        event = None
    if event is not None:
        read_body(conn, event, out, body)
    out["body"] = b64(body)
    out["consumed"] = len(data) - len(conn.trailing_data[0])
    return out


def read_body(conn, request, out, body):
    """Records the request head h11 read, then reads the body up to EndOfMessage."""
    out["method"] = b64(request.method)
    out["target"] = b64(request.target)
    out["version"] = b64(request.http_version)
    out["headers"] = [[b64(n), b64(v)] for n, v in request.headers.raw_items()]
    out["framing"] = framing_of(list(request.headers))
    out["stage"] = "body"
    reader = None
    try:
        while True:
            reader = conn._reader  # private: read only to label a trailer failure
            event = conn.next_event()
            if event is h11.NEED_DATA:
                out["status"] = "incomplete"
                break
            if isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                out["status"] = "accepted"
                break
            else:
                raise RuntimeError("unexpected event %r" % (event,))
    except Exception as exc:  # h11.RemoteProtocolError, or anything else: refused
        out["status"] = "refused"
        out["error"] = "%s: %s" % (type(exc).__name__, exc)
        # The chunked reader has extracted the trailer lines when their validation
        # fails (private attribute, read only to label the stage).
        if getattr(reader, "_reading_trailer", False):
            out["stage"] = "trailer"


def main():
    write = sys.stdout.write
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        case = json.loads(line)
        result = run(case["id"], base64.b64decode(case["data"]))
        write(json.dumps(result, separators=(",", ":")))
        write("\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
