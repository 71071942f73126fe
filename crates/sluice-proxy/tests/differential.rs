//! Differential test of sluice's request parsing against Python's `h11`, a strict,
//! independent HTTP/1.1 parser (`tests/differential/h11_oracle.py`).
//!
//! A load balancer must be at least as strict as the parsers behind it: every request
//! sluice accepts (head and body complete), h11 must accept too, and read the same way:
//! method, target, `Host`, HTTP version, the end-to-end header fields sluice passes on,
//! body framing, the decoded body, and where the request ends in the input (a different
//! end is request smuggling). Requests only h11 accepts are fine (sluice is stricter):
//! they are counted and a few are printed.
//!
//! Cases come from a seed corpus of normal requests and request-smuggling vectors, then
//! seeded random mutations of them; the oracle runs once per test over all cases.
//!
//! - `SLUICE_DIFF_CASES=N`: number of cases (default 20,000).
//! - `SLUICE_DIFF_SECS=S`: wall-clock limit (default 600 s). At the limit, generation
//!   stops or the oracle is stopped, and the cases answered so far are compared.
//! - `SLUICE_DIFF_SEED=N`: another mutation seed.
//! - `SLUICE_PYTHON=path`: the interpreter (default `python3`), which needs `h11`
//!   (scripts/test.sh installs it into the venv `target/test-venv` and sets this to its
//!   `bin/python`). Without it the test fails; it never skips.
//!
//! Known, accepted differences (each also noted where it is handled):
//! 1. Empty lines before the request-line: RFC 9112 section 2.2 says a server SHOULD
//!    ignore at least one; sluice (httparse) ignores any number of CRLF or LF, h11 none.
//!    The oracle skips them as httparse does and counts them in the consumed bytes.
//! 2. Absolute-form targets: RFC 9112 section 3.2.2 has the recipient ignore `Host` and
//!    use the target's authority, and sluice forwards that authority as `Host` and the
//!    path as the target. So sluice's `Host` is compared with the authority in the
//!    target h11 read, and its target with that target's path.
//! 3. Content-Length fields holding one decimal value spelled differently (`5` and
//!    `005`): RFC 9110 section 8.6 lets a recipient take them as one field with that
//!    value; sluice does (and forwards a single `Content-Length: 5`), h11 compares bytes
//!    ("conflicting Content-Length headers"). The oracle then respells the values (same
//!    offsets) and marks its answer; everything else is compared as usual.
//! 4. Content-Length or Transfer-Encoding as trailer fields: h11 validates trailer fields
//!    as if they were header fields and refuses a bad or conflicting Content-Length, a
//!    coding other than chunked, or two Transfer-Encoding lines there. RFC 9110 section
//!    6.5 gives trailer fields no say in framing (they are not merged into the header
//!    section; 6.5.1 names framing fields as ones that cannot work as trailers), and
//!    sluice checks the trailer syntax and drops it. h11 has read the whole body and the
//!    trailer section by then, so body, framing and where the request ends are still
//!    compared.
//! 5. Whitespace before a chunk extension's `;` (`5 ;a=b`): RFC 9112 section 7.1.1 has
//!    `chunk-ext = *( BWS ";" BWS chunk-ext-name ... )`, so it is valid and sluice
//!    accepts it; h11's chunk-line pattern allows none ("illegal chunk header"). The
//!    oracle then moves the whitespace after the `;` (h11 ignores what follows it) and
//!    marks its answer; everything else is compared as usual.
//!
//! Differences 3 and 5 apply only on h11's matching error and to input of exactly that
//! shape (the oracle checks). Cases accepted under any known difference are counted in
//! the summary.

use sluice_proxy::testing::{decode_chunked, parse_request};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

const DEFAULT_CASES: usize = 20_000;
const DEFAULT_SECS: u64 = 600;
const DEFAULT_SEED: u64 = 0x51_u64 << 56 | 0x00c0_ffee_d1ff;
const MAX_TRAILER: usize = 16384;
const ORACLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/differential/h11_oracle.py"
);
const INSTALL: &str = "scripts/test.sh installs h11 into target/test-venv: run the test with \
                       SLUICE_PYTHON=target/test-venv/bin/python (or point SLUICE_PYTHON at \
                       any Python 3 that has h11)";

// ---------------------------------------------------------------------------------------
// Seed corpus

/// Normal requests and the smuggling classics (PortSwigger's HTTP desync research,
/// RFC 9112 sections 2.2, 3, 5, 6 and 7.1).
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let s: &[(&str, &[u8])] = &[
        ("get", b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"),
        (
            "get-query-headers",
            b"GET /a/b?c=d&e=f HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: t/1\r\nAccept: */*\r\nCookie: a=1; b=2\r\n\r\n",
        ),
        (
            "post-cl",
            b"POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        ),
        (
            "post-chunked",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        ),
        (
            "chunk-extensions",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=val;q=\"a b\"\r\nhello\r\n0;last\r\n\r\n",
        ),
        (
            "chunk-trailer",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Checksum: 1234\r\n\r\n",
        ),
        ("http10", b"GET /old HTTP/1.0\r\n\r\n"),
        (
            "http10-cl",
            b"POST / HTTP/1.0\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
        ),
        ("options-asterisk", b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
        (
            "absolute-form",
            b"GET http://example.com/x?y HTTP/1.1\r\nHost: example.com\r\n\r\n",
        ),
        (
            "absolute-host-mismatch",
            b"GET http://evil.test:81/x HTTP/1.1\r\nHost: other\r\n\r\n",
        ),
        ("absolute-no-host", b"GET http://a/ HTTP/1.1\r\n\r\n"),
        (
            "cl-te",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nSMUGGLED",
        ),
        (
            "te-cl",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n",
        ),
        (
            "te-te",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n",
        ),
        (
            "te-space-colon",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        ),
        (
            "te-xchunked",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        ),
        (
            "te-tab",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
        ),
        (
            "te-vtab",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\x0b\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        ),
        (
            "te-nbsp",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\xa0chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        ),
        (
            "te-list",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "te-upper",
            b"POST / HTTP/1.1\r\nHost: a\r\nTRANSFER-ENCODING: CHUNKED\r\n\r\n2\r\nab\r\n0\r\n\r\n",
        ),
        (
            "te-bare-lf-header",
            b"POST / HTTP/1.1\r\nHost: a\r\nX: y\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "te-obs-fold",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        ),
        (
            "cl-duplicate-differ",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        ),
        (
            "cl-duplicate-same",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
        ),
        (
            "cl-leading-zero-dup",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 005\r\n\r\nhello",
        ),
        (
            "cl-sign",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello",
        ),
        (
            "cl-inner-space",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 0\r\n\r\n0123456789",
        ),
        (
            "cl-list",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello",
        ),
        (
            "chunk-size-junk",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 junk\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk-size-0x",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk-size-long",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000000001\r\nx\r\n0\r\n\r\n",
        ),
        (
            "chunk-ext-bws",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 ;a=b\r\nhello\r\n0\t; c = \"d\"\r\n\r\n",
        ),
        (
            "chunk-ext-open-quote",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk-ext-stray-quote",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\"c\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "chunk-ext-lf-in-quote",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"\n\"\r\nhello\r\n0\r\n\r\n",
        ),
        (
            "trailer-obs-fold",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\r\n c\r\n\r\n",
        ),
        (
            "trailer-nul",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\0c\r\n\r\n",
        ),
        (
            "trailer-framing-fields",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        ),
        ("bare-lf", b"GET / HTTP/1.1\nHost: a\n\n"),
        (
            "bare-lf-chunked",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n",
        ),
        ("host-space", b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
        ("host-userinfo", b"GET / HTTP/1.1\r\nHost: user@a\r\n\r\n"),
        ("host-list", b"GET / HTTP/1.1\r\nHost: a, b\r\n\r\n"),
        (
            "host-duplicate",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ),
        (
            "host-ipv6-ows",
            b"GET / HTTP/1.1\r\nHost: \t[::1]:8080 \r\n\r\n",
        ),
        ("asterisk-get", b"GET * HTTP/1.1\r\nHost: a\r\n\r\n"),
        (
            "http10-te",
            b"POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "nul-in-value",
            b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\0c\r\n\r\n",
        ),
        (
            "high-bytes",
            b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\nX-A: \xff\x85\xa0z\r\n\r\n",
        ),
        ("leading-crlf", b"\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
        (
            "websocket",
            b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n",
        ),
        (
            "expect-continue",
            b"PUT /f HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
        ),
        (
            "connection-hides-cl",
            b"POST / HTTP/1.1\r\nHost: a\r\nConnection: Content-Length\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\n\r\n",
        ),
        (
            "pipelined",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nxGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
        ),
        (
            "pipelined-chunked",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
        ),
        ("name-space", b"GET / HTTP/1.1\r\nHost : a\r\n\r\n"),
        ("double-space", b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("version-2", b"GET / HTTP/2.0\r\nHost: a\r\n\r\n"),
        ("lowercase-method", b"get / HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("dot-segment", b"GET /a/../b HTTP/1.1\r\nHost: a\r\n\r\n"),
        ("fragment", b"GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n"),
    ];
    s.iter().map(|(n, b)| (*n, b.to_vec())).collect()
}

// ---------------------------------------------------------------------------------------
// Deterministic mutations

/// splitmix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes inserted by mutations: line ends, whitespace HTTP knows and does not know
/// (VT, FF, NEL, NBSP), NUL, DEL, separators and quoting.
const SPECIAL: &[&[u8]] = &[
    b"\r", b"\n", b"\r\n", b" ", b"\t", b"\0", b"\x85", b"\xa0", b":", b";", b"\"", b",", b"\x0b",
    b"\x0c", b"\x7f", b"\xff", b"\\", b"0", b"a", b"=",
];

/// Byte ranges of the lines of `data`, each with its `\n` (one empty line if none).
fn lines(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in data.iter().enumerate() {
        if *b == b'\n' {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < data.len() || out.is_empty() {
        out.push((start, data.len()));
    }
    out
}

fn mutate(rng: &mut Rng, seeds: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].1.clone();
    for _ in 0..1 + rng.below(3) {
        let len = data.len();
        match rng.below(9) {
            0 if len > 0 => {
                let at = rng.below(len);
                if rng.below(2) == 0 {
                    data[at] ^= 1 << rng.below(8);
                } else {
                    data[at] = rng.next() as u8;
                }
            }
            1 | 2 => {
                let at = rng.below(len + 1);
                let ins = SPECIAL[rng.below(SPECIAL.len())];
                data.splice(at..at, ins.iter().copied());
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(3)).min(len);
                data.drain(at..end);
            }
            4 => {
                let ls = lines(&data);
                let (s, e) = ls[rng.below(ls.len())];
                let line = data[s..e].to_vec();
                let at = ls[rng.below(ls.len())].0;
                data.splice(at..at, line);
            }
            5 => {
                let ls = lines(&data);
                let (s, e) = ls[rng.below(ls.len())];
                data.drain(s..e);
            }
            6 => {
                let ls = lines(&data);
                let (s, e) = ls[rng.below(ls.len())];
                let (s, e) = match rng.below(3) {
                    // The field name only, the whole line, or a random part of it.
                    0 => (
                        s,
                        data[s..e]
                            .iter()
                            .position(|b| *b == b':')
                            .map_or(e, |c| s + c),
                    ),
                    1 => (s, e),
                    _ => {
                        let a = s + rng.below(e - s);
                        (a, a + rng.below(e - a + 1))
                    }
                };
                let how = rng.below(3);
                for b in &mut data[s..e] {
                    *b = match how {
                        0 => b.to_ascii_uppercase(),
                        1 => b.to_ascii_lowercase(),
                        _ if b.is_ascii_alphabetic() => *b ^ 0x20,
                        _ => *b,
                    };
                }
            }
            7 => {
                // A line of another seed (mostly header lines) spliced in at a line start.
                let other = &seeds[rng.below(seeds.len())].1;
                let ol = lines(other);
                let (s, e) = ol[rng.below(ol.len())];
                let line = other[s..e].to_vec();
                let ls = lines(&data);
                let at = ls[rng.below(ls.len())].0;
                data.splice(at..at, line);
            }
            _ if len > 0 => {
                // Truncation or appended bytes: where the request ends matters.
                if rng.below(2) == 0 {
                    data.truncate(len - 1 - rng.below(len.min(8)));
                } else {
                    data.extend_from_slice(b"GET /x HTTP/1.1\r\nHost: b\r\n\r\n");
                }
            }
            _ => {}
        }
    }
    data
}

// ---------------------------------------------------------------------------------------
// sluice's view

#[derive(Debug)]
enum Sluice {
    Refused(String),
    /// Head or body not complete in the input: the case is skipped.
    Incomplete,
    Accepted(SluiceView),
}

#[derive(Debug)]
struct SluiceView {
    method: Vec<u8>,
    /// The target forwarded upstream.
    target: Vec<u8>,
    /// What routes see: host without port, and the path.
    route_host: String,
    route_path: String,
    /// The value of the `Host` line forwarded upstream (None: HTTP/1.0 without Host).
    host: Option<Vec<u8>>,
    /// The request line's HTTP version ("1.0" or "1.1").
    version: Vec<u8>,
    /// End-to-end fields forwarded as they came, in order.
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    framing: String,
    body: Vec<u8>,
    consumed: usize,
}

fn run_sluice(input: &[u8]) -> Sluice {
    let req = match parse_request(input) {
        Err((status, reason)) => return Sluice::Refused(format!("{status} {reason}")),
        Ok(None) => return Sluice::Incomplete,
        Ok(Some(req)) => req,
    };
    let rest = &input[req.head_len..];
    let (body, used) = match req.framing.as_str() {
        "none" => (Vec::new(), 0),
        "chunked" => match decode_chunked(rest, &[], MAX_TRAILER) {
            Err(e) => return Sluice::Refused(format!("chunked body: {e}")),
            Ok(d) if !d.done => return Sluice::Incomplete,
            Ok(d) => (d.payload, d.used),
        },
        other => {
            let n: u64 = other
                .strip_prefix("length:")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected request framing {other:?}"));
            if (rest.len() as u64) < n {
                return Sluice::Incomplete;
            }
            (rest[..n as usize].to_vec(), n as usize)
        }
    };
    let head = &req.upstream_head;
    let mut head_lines = head
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = head_lines.next().unwrap_or_default();
    let first = request_line.iter().position(|b| *b == b' ').unwrap_or(0);
    let last = request_line.iter().rposition(|b| *b == b' ').unwrap_or(0);
    let mut headers = Vec::new();
    let mut host = None;
    let mut ours = false;
    for line in head_lines {
        // The client's fields come first; sluice's own begin with Host (if any) or
        // X-Forwarded-For, names it always drops from the client.
        if line.starts_with(b"Host: ") || line.starts_with(b"X-Forwarded-For: ") {
            ours = true;
        }
        if let Some(v) = line.strip_prefix(b"Host: ") {
            host = Some(v.to_vec());
        }
        if !ours && !line.is_empty() {
            let colon = line.iter().position(|b| *b == b':').unwrap_or(line.len());
            let value = line.get(colon + 1..).unwrap_or_default();
            headers.push((line[..colon].to_vec(), trim_ows(value).to_vec()));
        }
    }
    Sluice::Accepted(SluiceView {
        method: request_line[..first].to_vec(),
        target: request_line[(first + 1).min(last)..last].to_vec(),
        route_host: req.host,
        route_path: req.path,
        host,
        version: version_of(input),
        headers,
        framing: req.framing,
        body,
        consumed: req.head_len + used,
    })
}

/// The HTTP version at the end of the request line, after the empty lines httparse
/// skips (only called on heads sluice accepted, whose request line ends `HTTP/1.x`).
fn version_of(input: &[u8]) -> Vec<u8> {
    let mut rest = input;
    while let Some(r) = rest
        .strip_prefix(b"\r\n")
        .or_else(|| rest.strip_prefix(b"\n"))
    {
        rest = r;
    }
    let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line[line.len().saturating_sub(3)..].to_vec()
}

fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = v.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(s), Some(e)) => &v[s..=e],
        _ => &[],
    }
}

// ---------------------------------------------------------------------------------------
// h11's view

#[derive(Debug, Default)]
struct H11 {
    status: String,
    error: String,
    stage: String,
    method: Vec<u8>,
    target: Vec<u8>,
    version: Vec<u8>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    framing: String,
    body: Vec<u8>,
    consumed: usize,
    /// The fixes the oracle applied (known differences 3 and 5), comma-separated.
    normalized: String,
    /// Bytes of empty lines before the request line (known difference 1).
    skipped: usize,
}

/// h11's messages for trailer fields it validates as header fields (known difference 4).
const TRAILER_FIELD_ERRORS: &[&str] = &[
    "bad Content-Length",
    "conflicting Content-Length headers",
    "Only Transfer-Encoding: chunked is supported",
    "multiple Transfer-Encoding headers",
];

impl H11 {
    /// Whether h11 accepted the request: plainly, or but for documented known
    /// differences (then named).
    fn accepted(&self) -> (bool, Vec<&'static str>) {
        let mut why: Vec<&'static str> = self
            .normalized
            .split(',')
            .filter(|fix| !fix.is_empty())
            .map(|fix| match fix {
                "content-length" => {
                    "3: Content-Length values with one decimal value (RFC 9110 8.6)"
                }
                "chunk-ext-bws" => "5: whitespace before a chunk extension's ';' (RFC 9112 7.1.1)",
                other => panic!("the oracle applied an unknown fix {other:?}"),
            })
            .collect();
        if self.status == "accepted" {
            return (true, why);
        }
        if self.status == "refused"
            && self.stage == "trailer"
            && TRAILER_FIELD_ERRORS.iter().any(|e| self.error.ends_with(e))
        {
            why.push("4: framing fields in the trailer (RFC 9110 6.5)");
            return (true, why);
        }
        (false, Vec::new())
    }

    fn from_json(v: &serde_json::Value) -> H11 {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let b = |k: &str| b64_decode(v[k].as_str().unwrap_or_default());
        let headers = v["headers"]
            .as_array()
            .map(|hs| {
                hs.iter()
                    .map(|h| {
                        (
                            b64_decode(h[0].as_str().unwrap_or_default()),
                            b64_decode(h[1].as_str().unwrap_or_default()),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        H11 {
            status: s("status"),
            error: s("error"),
            stage: s("stage"),
            method: b("method"),
            target: b("target"),
            version: b("version"),
            headers,
            framing: s("framing"),
            body: b("body"),
            consumed: v["consumed"].as_u64().unwrap_or(0) as usize,
            normalized: s("normalized"),
            skipped: v["skipped"].as_u64().unwrap_or(0) as usize,
        }
    }

    fn host(&self) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(b"host"))
            .map(|(_, v)| v.as_slice())
    }
}

/// Checks the interpreter has h11; fails the test with how to install it otherwise.
fn python() -> String {
    let python = std::env::var("SLUICE_PYTHON").unwrap_or_else(|_| "python3".into());
    match Command::new(&python).args(["-c", "import h11"]).output() {
        Err(e) => panic!(
            "differential test needs Python 3 with h11, but `{python}` cannot run ({e}): \
             install Python 3, then {INSTALL}"
        ),
        Ok(out) if !out.status.success() => panic!(
            "differential test needs h11, but `{python} -c 'import h11'` failed:\n{}\n{INSTALL}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Ok(_) => python,
    }
}

/// Runs the oracle once over all cases. Returns each case's answer (None: not answered
/// before the deadline) and whether the deadline stopped it.
fn run_oracle(cases: Arc<Vec<Vec<u8>>>, deadline: Instant) -> (Vec<Option<H11>>, bool) {
    let python = python();
    let mut child = Command::new(&python)
        .arg(ORACLE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{python} {ORACLE}`: {e}"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let child = Arc::new(Mutex::new(child));

    let to_write = Arc::clone(&cases);
    let writer = std::thread::spawn(move || {
        let mut buf = Vec::with_capacity(1 << 16);
        for (id, case) in to_write.iter().enumerate() {
            buf.extend_from_slice(format!("{{\"id\":{id},\"data\":\"").as_bytes());
            b64_encode(case, &mut buf);
            buf.extend_from_slice(b"\"}\n");
            if buf.len() > 1 << 15 {
                if stdin.write_all(&buf).is_err() {
                    return; // the oracle stopped (deadline or crash): reported below
                }
                buf.clear();
            }
        }
        let _ = stdin.write_all(&buf);
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watched = Arc::clone(&child);
    let watchdog = std::thread::spawn(move || {
        let wait = deadline.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(wait) == Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = watched.lock().unwrap().kill();
            return true;
        }
        false
    });

    let mut answers: Vec<Option<H11>> = (0..cases.len()).map(|_| None).collect();
    let mut bad_lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(v) => {
                let id = v["id"].as_u64().unwrap_or(u64::MAX) as usize;
                if id < answers.len() {
                    answers[id] = Some(H11::from_json(&v));
                } else {
                    bad_lines.push(line);
                }
            }
            Err(_) => bad_lines.push(line),
        }
    }
    let _ = done_tx.send(());
    let killed = watchdog.join().unwrap();
    writer.join().unwrap();
    let status = child.lock().unwrap().wait().expect("wait for the oracle");
    let errors = err_reader.join().unwrap();
    assert!(
        bad_lines.is_empty(),
        "oracle wrote lines that are not answers: {:?}",
        &bad_lines[..bad_lines.len().min(3)]
    );
    if !killed {
        assert!(
            status.success() && answers.iter().all(Option::is_some),
            "the h11 oracle failed ({status}); stderr:\n{errors}"
        );
    }
    (answers, killed)
}

// ---------------------------------------------------------------------------------------
// Comparison

/// `http://authority/path` (scheme in any case) -> (authority, path). Anything else
/// (origin form, `*`) -> None.
fn split_absolute(target: &[u8]) -> Option<(&[u8], &[u8])> {
    let lower = target.to_ascii_lowercase();
    let skip = if lower.starts_with(b"http://") {
        7
    } else if lower.starts_with(b"https://") {
        8
    } else {
        return None;
    };
    let rest = &target[skip..];
    let end = rest
        .iter()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    Some((&rest[..end], &rest[end..]))
}

fn without_port(host: &[u8]) -> &[u8] {
    if host.starts_with(b"[") {
        return host
            .iter()
            .position(|b| *b == b']')
            .map_or(host, |i| &host[..=i]);
    }
    host.iter()
        .rposition(|b| *b == b':')
        .map_or(host, |i| &host[..i])
}

/// The ways sluice's and h11's readings of one accepted request differ (empty: none).
fn compare(s: &SluiceView, h: &H11) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut check = |what: &str, ok: bool| {
        if !ok {
            diffs.push(what.to_string());
        }
    };
    check("method", s.method == h.method);
    check("version", s.version == h.version);
    // Known difference 2 (RFC 9112 section 3.2.2): for an absolute-form target, the
    // authority in it is the host, whatever Host says.
    let (want_target, want_host): (&[u8], Option<&[u8]>) = match split_absolute(&h.target) {
        Some((authority, path)) => (path, Some(authority)),
        None => (&h.target, h.host()),
    };
    check("forwarded target", s.target == want_target);
    let route_path: &[u8] = if want_target == b"*" {
        b"/"
    } else {
        want_target
    };
    check("routing path", s.route_path.as_bytes() == route_path);
    check("forwarded Host", s.host.as_deref() == want_host);
    check(
        "routing host",
        s.route_host.as_bytes() == without_port(want_host.unwrap_or_default()),
    );
    // Every field sluice passes on as it came must be one h11 read, in the same order.
    let mut theirs = h.headers.iter();
    let all_found = s
        .headers
        .iter()
        .all(|(n, v)| theirs.any(|(hn, hv)| hn == n && hv == v));
    check("forwarded header fields", all_found);
    check("framing", s.framing == h.framing);
    check("body", s.body == h.body);
    check("request end (consumed bytes)", s.consumed == h.consumed);
    diffs
}

// ---------------------------------------------------------------------------------------
// Reporting helpers

fn esc(b: &[u8]) -> String {
    format!("b\"{}\"", b.escape_ascii())
}

fn show_sluice(s: &SluiceView) -> String {
    let headers: Vec<String> = s
        .headers
        .iter()
        .map(|(n, v)| format!("{}: {}", n.escape_ascii(), v.escape_ascii()))
        .collect();
    format!(
        "method={} target={} route={}|{} host={} version={} framing={} body={} consumed={} headers={headers:?}",
        esc(&s.method),
        esc(&s.target),
        s.route_host,
        s.route_path,
        s.host.as_deref().map_or("-".into(), esc),
        esc(&s.version),
        s.framing,
        esc(&s.body),
        s.consumed,
    )
}

fn show_h11(h: &H11) -> String {
    let headers: Vec<String> = h
        .headers
        .iter()
        .map(|(n, v)| format!("{}: {}", n.escape_ascii(), v.escape_ascii()))
        .collect();
    format!(
        "status={} error={:?} stage={} method={} target={} version={} framing={} body={} consumed={} headers={headers:?}",
        h.status,
        h.error,
        h.stage,
        esc(&h.method),
        esc(&h.target),
        esc(&h.version),
        h.framing,
        esc(&h.body),
        h.consumed,
    )
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_encode(data: &[u8], out: &mut Vec<u8>) {
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                B64[(n >> (18 - 6 * i) & 63) as usize]
            } else {
                b'='
            });
        }
    }
}

fn b64_decode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = B64
            .iter()
            .position(|x| *x == c)
            .expect("base64 from the oracle") as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

// ---------------------------------------------------------------------------------------

#[test]
#[ignore = "needs python3 with h11"]
fn sluice_accepts_nothing_h11_refuses_and_reads_it_the_same() {
    let started = Instant::now();
    let wanted = env_num("SLUICE_DIFF_CASES", DEFAULT_CASES as u64) as usize;
    let limit = Duration::from_secs(env_num("SLUICE_DIFF_SECS", DEFAULT_SECS));
    let deadline = started + limit;
    let mut rng = Rng(env_num("SLUICE_DIFF_SEED", DEFAULT_SEED));
    python(); // fail early, with install instructions, if h11 is missing

    // Generation may take half the time; the oracle gets the rest.
    let generation_deadline = started + limit / 2;
    let seeds = seeds();
    let mut cases: Vec<Vec<u8>> = Vec::with_capacity(wanted);
    let mut verdicts = Vec::with_capacity(wanted);
    while cases.len() < wanted {
        if cases.len().is_multiple_of(1024) && Instant::now() >= generation_deadline {
            println!(
                "differential: wall-clock limit during generation at {} cases",
                cases.len()
            );
            break;
        }
        let case = match seeds.get(cases.len()) {
            Some((_, seed)) => seed.clone(),
            None => mutate(&mut rng, &seeds),
        };
        verdicts.push(run_sluice(&case));
        cases.push(case);
    }
    let cases = Arc::new(cases);
    let (answers, killed) = run_oracle(Arc::clone(&cases), deadline);

    let (mut answered, mut sluice_ok, mut h11_ok, mut both, mut skipped) = (0, 0, 0, 0, 0);
    let mut skipped_h11_ok = 0;
    let mut h11_only: BTreeMap<String, (usize, usize)> = BTreeMap::new(); // reason -> (count, first case)
    let mut failures: Vec<(usize, Vec<String>)> = Vec::new();
    let mut exceptions: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, (verdict, answer)) in verdicts.iter().zip(&answers).enumerate() {
        let Some(h) = answer else { continue };
        answered += 1;
        let (h11_accepts, known) = h.accepted();
        if h11_accepts {
            h11_ok += 1;
        }
        match verdict {
            Sluice::Incomplete => {
                skipped += 1;
                if h11_accepts {
                    skipped_h11_ok += 1;
                }
            }
            Sluice::Refused(reason) => {
                if h11_accepts {
                    let e = h11_only.entry(reason.clone()).or_insert((0, id));
                    e.0 += 1;
                }
            }
            Sluice::Accepted(s) => {
                sluice_ok += 1;
                if !h11_accepts {
                    failures.push((id, vec![format!("h11 {}: {}", h.status, h.error)]));
                    continue;
                }
                both += 1;
                for why in known {
                    *exceptions.entry(why).or_default() += 1;
                }
                if h.skipped > 0 {
                    *exceptions
                        .entry("1: empty lines before the request line (RFC 9112 2.2)")
                        .or_default() += 1;
                }
                let diffs = compare(s, h);
                if !diffs.is_empty() {
                    failures.push((id, diffs));
                }
            }
        }
    }
    let sluice_only = failures
        .iter()
        .filter(|(id, _)| answers[*id].as_ref().is_some_and(|h| !h.accepted().0))
        .count();
    let h11_only_count: usize = h11_only.values().map(|(n, _)| n).sum();

    println!(
        "differential: cases {answered}/{} (seeds {}), sluice accepted {sluice_ok}, h11 accepted {h11_ok}, \
         both {both}, sluice-only {sluice_only}, read differently {}, h11-only (sluice stricter) {h11_only_count}, \
         skipped as incomplete for sluice {skipped} (h11 complete in {skipped_h11_ok}), {:.1} s{}",
        cases.len(),
        seeds.len(),
        failures.len() - sluice_only,
        started.elapsed().as_secs_f64(),
        if killed { ", oracle stopped at the wall-clock limit" } else { "" },
    );
    for (why, n) in &exceptions {
        println!("  accepted by both under known difference {why}: {n}");
    }
    let mut examples: Vec<_> = h11_only.iter().map(|(r, (n, id))| (*n, r, *id)).collect();
    examples.sort_by_key(|e| std::cmp::Reverse(e.0));
    for (n, reason, id) in examples.iter().take(5) {
        println!("  h11-only x{n}, sluice: {reason}: {}", esc(&cases[*id]));
    }

    if failures.is_empty() {
        return;
    }
    let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (id, diffs) in &failures {
        let e = kinds.entry(diffs.join(", ")).or_insert((0, *id));
        e.0 += 1;
    }
    println!("DISAGREEMENTS by kind (count, first case):");
    for (kind, (n, id)) in &kinds {
        println!("  {n:>6}  {kind}  [case {id}]");
    }
    // One example of each kind, then more of the others, 20 at most beyond the kinds.
    let mut shown: Vec<usize> = kinds.values().map(|(_, id)| *id).collect();
    let more: Vec<usize> = failures
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| !shown.contains(id))
        .take(20_usize.saturating_sub(shown.len()))
        .collect();
    shown.extend(more);
    for id in &shown {
        let (_, diffs) = failures.iter().find(|(i, _)| i == id).unwrap();
        let Sluice::Accepted(s) = &verdicts[*id] else {
            unreachable!()
        };
        println!(
            "\ncase {id}: {}\n  differs in: {}\n  sluice: {}\n  h11:    {}",
            esc(&cases[*id]),
            diffs.join(", "),
            show_sluice(s),
            show_h11(answers[*id].as_ref().unwrap()),
        );
    }
    panic!(
        "{} case(s) sluice accepted that h11 refused or read differently (see above)",
        failures.len()
    );
}

/// The comparison itself must see differences, or the test above proves nothing.
#[test]
fn comparison_sees_differences() {
    let input = b"POST http://a:8/p HTTP/1.1\r\nHost: b\r\nX: 1\r\nContent-Length: 2\r\n\r\nokNEXT";
    let Sluice::Accepted(s) = run_sluice(input) else {
        panic!("sluice refused the sample")
    };
    let h11 = || H11 {
        status: "accepted".into(),
        method: b"POST".to_vec(),
        target: b"http://a:8/p".to_vec(),
        version: b"1.1".to_vec(),
        headers: vec![
            (b"Host".to_vec(), b"b".to_vec()),
            (b"X".to_vec(), b"1".to_vec()),
            (b"Content-Length".to_vec(), b"2".to_vec()),
        ],
        framing: "length:2".into(),
        body: b"ok".to_vec(),
        consumed: input.len() - 4,
        ..H11::default()
    };
    assert_eq!(compare(&s, &h11()), Vec::<String>::new());
    let mut h = h11();
    h.consumed += 1;
    h.body.push(b'N');
    h.target = b"http://a:9/p".to_vec();
    h.headers[1].1 = b"2".to_vec();
    assert_eq!(
        compare(&s, &h),
        [
            "forwarded Host",
            "forwarded header fields",
            "body",
            "request end (consumed bytes)"
        ]
    );
    for n in 0..input.len() {
        let mut enc = Vec::new();
        b64_encode(&input[..n], &mut enc);
        assert_eq!(b64_decode(std::str::from_utf8(&enc).unwrap()), &input[..n]);
    }
}
