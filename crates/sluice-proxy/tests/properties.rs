//! Property tests of sluice's HTTP/1 codec (`sluice_proxy::testing`): chunked bodies built
//! from the RFC 9112 grammar decode to their payload however they are split, corrupted
//! framing is refused, valid request and response heads are accepted and rewritten into
//! heads that parse again, and known smuggling shapes get the status the proxy promises.
//!
//! Runs 256 cases per property (`PROPTEST_CASES=N` for more); a failure prints the
//! minimal input, and `PROPTEST_RNG_SEED` replays a run.

use std::fmt;
use std::net::Ipv6Addr;
use std::ops::Range;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use sluice_proxy::testing::{decode_chunked, parse_request, parse_response, Decoded};

/// Trailer limit for bodies that must decode: far above anything generated.
const MAX_TRAILER: usize = 1 << 20;

fn config(cases: u32) -> ProptestConfig {
    let base = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            base.cases
        } else {
            cases
        },
        // Only this file may change: no regression files next to it.
        failure_persistence: None,
        ..base
    }
}

// ---------------------------------------------------------------------------------------
// Byte classes of RFC 9110 / 9112.

fn bytes_where(pred: fn(u8) -> bool) -> Vec<u8> {
    (0..=255u8).filter(|&b| pred(b)).collect()
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_field_byte(b: u8) -> bool {
    matches!(b, b'\t' | b' '..=0x7e | 0x80..=0xff)
}

fn is_qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff)
}

/// What may follow a backslash in a quoted string.
fn is_quoted_pair(b: u8) -> bool {
    matches!(b, b'\t' | b' '..=0x7e | 0x80..=0xff)
}

/// Control characters other than HTAB and CR, and DEL: no rule of the chunked grammar
/// allows one of these anywhere in the framing (CR is left out because it ends lines).
fn is_forbidden_in_framing(b: u8) -> bool {
    matches!(b, 0x00..=0x08 | 0x0a..=0x0c | 0x0e..=0x1f | 0x7f)
}

/// Bytes that can never stand in a chunk size: neither a hex digit nor one of the bytes
/// that may end the digits (CR, `;`, SP, HTAB).
fn is_not_size_byte(b: u8) -> bool {
    is_forbidden_in_framing(b) || b"gGxXzZ-+.,/:@_\"\\".contains(&b) || b >= 0x80
}

fn some_of(set: Vec<u8>, len: Range<usize>) -> impl Strategy<Value = Vec<u8>> {
    vec(select(set), len)
}

fn token(len: Range<usize>) -> impl Strategy<Value = Vec<u8>> {
    some_of(bytes_where(is_tchar), len)
}

fn token_string(len: Range<usize>) -> impl Strategy<Value = String> {
    token(len).prop_map(|t| String::from_utf8(t).expect("tokens are ASCII"))
}

/// Optional whitespace: `*( SP / HTAB )`.
fn ws(max: usize) -> impl Strategy<Value = Vec<u8>> {
    some_of(b" \t".to_vec(), 0..max + 1)
}

/// Split points of an input of `len` bytes, as the piece lengths `decode_chunked` takes.
fn pieces(len: usize, cuts: &[Index]) -> Vec<usize> {
    let mut points: Vec<usize> = cuts.iter().map(|i| i.index(len + 1)).collect();
    points.sort_unstable();
    let mut last = 0;
    points
        .into_iter()
        .map(|p| {
            let n = p - last;
            last = p;
            n
        })
        .collect()
}

fn cuts() -> impl Strategy<Value = Vec<Index>> {
    vec(any::<Index>(), 0..8)
}

struct Escaped<'a>(&'a [u8]);

impl fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

fn trim_ows(value: &[u8]) -> &[u8] {
    let start = value.iter().position(|b| !b" \t".contains(b));
    let end = value.iter().rposition(|b| !b" \t".contains(b));
    match (start, end) {
        (Some(s), Some(e)) => &value[s..=e],
        _ => &[],
    }
}

fn replace_once(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    match haystack.windows(from.len()).position(|w| w == from) {
        Some(i) => [&haystack[..i], to, &haystack[i + from.len()..]].concat(),
        None => haystack.to_vec(),
    }
}

// ---------------------------------------------------------------------------------------
// Chunked bodies.

/// What a byte of a generated body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    SizeDigit,
    /// The first byte after the size digits: a hex digit there would change the size.
    ExtFirst,
    Ext,
    /// CR or LF ending a size line, chunk data, a trailer line or the trailer section.
    LineEnd,
    Payload,
    /// A byte of a trailer field line's name, colon or value.
    Trailer,
    /// The start of the next message, after the body.
    Next,
}

#[derive(Clone, Default)]
struct Body {
    bytes: Vec<u8>,
    parts: Vec<Part>,
    payload: Vec<u8>,
    /// Bytes of the body itself, without what follows it.
    len: usize,
    /// Bytes after the last-chunk line: trailer lines and the final CRLF.
    trailer_len: usize,
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Escaped(&self.bytes).fmt(f)
    }
}

impl Body {
    fn push(&mut self, part: Part, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.parts.resize(self.parts.len() + bytes.len(), part);
    }

    fn push_ext(&mut self, ext: &[u8]) {
        if let Some((first, rest)) = ext.split_first() {
            self.push(Part::ExtFirst, &[*first]);
            self.push(Part::Ext, rest);
        }
    }

    /// Positions of bytes of the given parts.
    fn positions(&self, parts: &[Part]) -> Vec<usize> {
        (0..self.bytes.len())
            .filter(|&i| parts.contains(&self.parts[i]))
            .collect()
    }
}

#[derive(Clone, Debug)]
struct Chunk {
    payload: Vec<u8>,
    zeros: usize,
    upper: bool,
    ext: Vec<u8>,
}

/// `token / quoted-string`, the quoted string with `\"` and other quoted pairs.
fn ext_value() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        select(bytes_where(is_qdtext)).prop_map(|b| vec![b]),
        select(bytes_where(is_quoted_pair)).prop_map(|b| vec![b'\\', b]),
        Just(b"\\\"".to_vec()),
    ];
    let quoted = vec(piece, 0..8).prop_map(|pieces| {
        let mut out = vec![b'"'];
        pieces.iter().for_each(|p| out.extend_from_slice(p));
        out.push(b'"');
        out
    });
    prop_oneof![token(1..8), quoted]
}

/// `BWS ";" BWS name [ BWS "=" BWS value ]`.
fn ext_item() -> impl Strategy<Value = Vec<u8>> {
    let value = proptest::option::of((ws(2), ws(2), ext_value()));
    (ws(2), ws(2), token(1..8), value).prop_map(|(before, after, name, value)| {
        let mut out = before;
        out.push(b';');
        out.extend(after);
        out.extend(name);
        if let Some((before_eq, after_eq, value)) = value {
            out.extend(before_eq);
            out.push(b'=');
            out.extend(after_eq);
            out.extend(value);
        }
        out
    })
}

fn extension() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => Just(Vec::new()),
        1 => vec(ext_item(), 1..4).prop_map(|items| items.concat()),
    ]
}

fn chunk() -> impl Strategy<Value = Chunk> {
    (
        vec(any::<u8>(), 1..300),
        0..3usize,
        any::<bool>(),
        extension(),
    )
        .prop_map(|(payload, zeros, upper, ext)| Chunk {
            payload,
            zeros,
            upper,
            ext,
        })
}

fn trailer_line() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (token(1..10), some_of(bytes_where(is_field_byte), 0..20))
}

/// A valid chunked body followed by a few bytes of a next message.
fn chunked_body() -> impl Strategy<Value = Body> {
    (
        vec(chunk(), 0..8),
        0..3usize,
        extension(),
        vec(trailer_line(), 0..4),
        vec(any::<u8>(), 0..20),
    )
        .prop_map(|(chunks, last_zeros, last_ext, trailers, next)| {
            let mut body = Body::default();
            for c in &chunks {
                let zeros = "0".repeat(c.zeros);
                let size = if c.upper {
                    format!("{zeros}{:X}", c.payload.len())
                } else {
                    format!("{zeros}{:x}", c.payload.len())
                };
                body.push(Part::SizeDigit, size.as_bytes());
                body.push_ext(&c.ext);
                body.push(Part::LineEnd, b"\r\n");
                body.push(Part::Payload, &c.payload);
                body.payload.extend_from_slice(&c.payload);
                body.push(Part::LineEnd, b"\r\n");
            }
            body.push(Part::SizeDigit, "0".repeat(last_zeros + 1).as_bytes());
            body.push_ext(&last_ext);
            body.push(Part::LineEnd, b"\r\n");
            let trailer_start = body.bytes.len();
            for (name, value) in &trailers {
                body.push(Part::Trailer, name);
                body.push(Part::Trailer, b":");
                body.push(Part::Trailer, value);
                body.push(Part::LineEnd, b"\r\n");
            }
            body.push(Part::LineEnd, b"\r\n");
            body.len = body.bytes.len();
            body.trailer_len = body.len - trailer_start;
            body.push(Part::Next, &next);
            body
        })
}

/// Mostly-invalid inputs that still reach deep into the decoder.
fn chunked_soup() -> impl Strategy<Value = Vec<u8>> {
    let alphabet = b"00019aAfF;= \t\"\\\r\n\r\n:xg-\0\x80".to_vec();
    let mutated =
        (chunked_body(), vec((any::<Index>(), any::<u8>()), 1..4)).prop_map(|(body, edits)| {
            let mut bytes = body.bytes;
            for (at, b) in edits {
                let i = at.index(bytes.len().max(1));
                if let Some(slot) = bytes.get_mut(i) {
                    *slot = b;
                }
            }
            bytes
        });
    let truncated = (chunked_body(), any::<Index>())
        .prop_map(|(body, at)| body.bytes[..at.index(body.bytes.len() + 1)].to_vec());
    prop_oneof![
        vec(any::<u8>(), 0..64),
        vec(select(alphabet), 0..80),
        mutated,
        truncated,
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 1: a body built from the grammar decodes to its payload and ends where it
    /// ends, in one piece, in random pieces and byte by byte; the trailer limit is exact.
    #[test]
    fn chunked_valid_bodies_decode_to_their_payload(body in chunked_body(), cuts in cuts()) {
        let expected = Decoded { payload: body.payload.clone(), used: body.len, done: true };
        prop_assert_eq!(decode_chunked(&body.bytes, &[], MAX_TRAILER), Ok(expected.clone()));
        let pieces = pieces(body.bytes.len(), &cuts);
        prop_assert_eq!(
            decode_chunked(&body.bytes, &pieces, MAX_TRAILER),
            Ok(expected.clone()),
            "pieces {:?}",
            pieces
        );
        let bytewise = vec![1; body.bytes.len()];
        prop_assert_eq!(decode_chunked(&body.bytes, &bytewise, MAX_TRAILER), Ok(expected.clone()));
        prop_assert_eq!(decode_chunked(&body.bytes, &[], body.trailer_len), Ok(expected));
        prop_assert_eq!(
            decode_chunked(&body.bytes, &[], body.trailer_len - 1),
            Err("trailer section too large")
        );
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 2: how the input is split never changes the outcome.
    #[test]
    fn chunked_decoding_does_not_depend_on_how_input_is_split(
        input in chunked_soup(),
        cuts in cuts(),
    ) {
        let whole = decode_chunked(&input, &[], MAX_TRAILER);
        let pieces = pieces(input.len(), &cuts);
        prop_assert_eq!(
            &decode_chunked(&input, &pieces, MAX_TRAILER),
            &whole,
            "pieces {:?}",
            pieces
        );
        let bytewise = vec![1; input.len()];
        prop_assert_eq!(&decode_chunked(&input, &bytewise, MAX_TRAILER), &whole);
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 3: one framing byte replaced by a byte the grammar forbids at that place
    /// makes the body an error. An arbitrary replacement inside an extension (past its
    /// first byte) or a trailer field either fails or leaves the payload as it was.
    #[test]
    fn chunked_single_byte_corruption_is_rejected(
        body in chunked_body(),
        at in any::<Index>(),
        with in any::<Index>(),
        loose_at in any::<Index>(),
        loose_with in any::<u8>(),
        cuts in cuts(),
    ) {
        use Part::*;
        let framing = body.positions(&[SizeDigit, ExtFirst, Ext, LineEnd, Trailer]);
        let i = framing[at.index(framing.len())];
        let set = if body.parts[i] == SizeDigit {
            bytes_where(is_not_size_byte)
        } else {
            bytes_where(is_forbidden_in_framing)
        };
        let mut bad = body.bytes.clone();
        bad[i] = match set[with.index(set.len())] {
            b if b == body.bytes[i] => 0,
            b => b,
        };
        let pieces = pieces(bad.len(), &cuts);
        for split in [&[][..], &pieces[..]] {
            let got = decode_chunked(&bad, split, MAX_TRAILER);
            prop_assert!(
                got.is_err(),
                "{:?} (byte {} of {:?}) decoded: {:?}",
                Escaped(&bad), i, body.parts[i], got
            );
        }

        let loose = body.positions(&[Ext, Trailer]);
        if !loose.is_empty() {
            let i = loose[loose_at.index(loose.len())];
            let mut changed = body.bytes.clone();
            changed[i] = loose_with;
            for split in [&[][..], &pieces[..]] {
                if let Ok(got) = decode_chunked(&changed, split, MAX_TRAILER) {
                    prop_assert_eq!(
                        &got.payload, &body.payload,
                        "{:?} changed the payload", Escaped(&changed)
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Request heads.

const METHODS: &[&str] = &[
    "GET", "POST", "OPTIONS", "HEAD", "PUT", "DELETE", "PATCH", "TRACE",
];

/// Headers with a meaning to the proxy: random extra headers never have these names.
const SPECIAL: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "upgrade",
    "proxy-authenticate",
    "expect",
    "x-forwarded-for",
    "x-real-ip",
    "x-forwarded-proto",
    "x-forwarded-host",
];

const REG_NAME: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+;=";
/// `pchar` without `%` (percent-encodings are generated whole) and, for a segment's first
/// character, without `.`: no segment is then `.` or `..`, plain or encoded.
const PCHAR: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@";
const HEX: &[u8] = b"0123456789abcdefABCDEF";

fn pct_encoded() -> impl Strategy<Value = String> {
    (select(HEX), select(HEX)).prop_map(|(a, b)| format!("%{}{}", a as char, b as char))
}

fn chars_or_pct(chars: &'static [u8], len: Range<usize>) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => select(chars).prop_map(|b| (b as char).to_string()),
        1 => pct_encoded(),
    ];
    vec(piece, len).prop_map(|p| p.concat())
}

/// `uri-host [ ":" port ]`, and the host alone (what routes see).
fn authority() -> impl Strategy<Value = (String, String)> {
    let ipv6 = any::<[u16; 8]>().prop_map(|s| format!("[{}]", Ipv6Addr::from(s)));
    let host = prop_oneof![3 => chars_or_pct(REG_NAME, 1..12), 1 => ipv6];
    (host, proptest::option::of(any::<u16>())).prop_map(|(host, port)| match port {
        Some(port) => (format!("{host}:{port}"), host),
        None => (host.clone(), host),
    })
}

fn origin_path() -> impl Strategy<Value = String> {
    let no_dot: Vec<u8> = PCHAR.iter().copied().filter(|&b| b != b'.').collect();
    let segment = prop_oneof![
        1 => Just(String::new()),
        4 => (select(no_dot), chars_or_pct(PCHAR, 0..8))
            .prop_map(|(first, rest)| format!("{}{rest}", first as char)),
    ];
    let query = proptest::option::of(chars_or_pct(b"abcXYZ019-._~!$&'()*+,;=:@/?", 0..16));
    (vec(segment, 0..5), query).prop_map(|(segments, query)| {
        let mut path = format!("/{}", segments.join("/"));
        if let Some(q) = query {
            path.push('?');
            path.push_str(&q);
        }
        path
    })
}

fn method() -> impl Strategy<Value = String> {
    let other = "[A-Z][A-Z_-]{0,9}".prop_filter("CONNECT is refused", |m| m != "CONNECT");
    prop_oneof![4 => select(METHODS).prop_map(str::to_string), 1 => other]
}

/// `Name:OWS value`, a name with no meaning to the proxy and a value of field bytes.
fn extra_header() -> impl Strategy<Value = Vec<u8>> {
    let name = token_string(1..12).prop_filter("a header the proxy reads", |n| {
        !SPECIAL.iter().any(|s| s.eq_ignore_ascii_case(n))
    });
    let value = some_of(bytes_where(is_field_byte), 0..24);
    (name, ws(2), value).prop_map(|(name, ws, value)| [name.as_bytes(), b":", &ws, &value].concat())
}

/// Hop-by-hop fields: a response's other fields reach the client as they came.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "transfer-encoding",
    "upgrade",
    "proxy-authenticate",
];

/// The field lines among `lines` that the proxy passes on as they came (all but those
/// named in `dropped`), as it writes them: `name: value` with the value trimmed.
fn forwarded(lines: &[Vec<u8>], dropped: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        let colon = line.iter().position(|&b| b == b':').expect("a field line");
        let name = &line[..colon];
        if !dropped
            .iter()
            .any(|s| s.as_bytes().eq_ignore_ascii_case(name))
        {
            out.extend_from_slice(&[name, b": ", trim_ows(&line[colon + 1..]), b"\r\n"].concat());
        }
    }
    out
}

/// The body framing a head declares: its header lines and `AcceptedRequest::framing`.
#[derive(Clone, Debug)]
enum BodyHeader {
    None,
    Length { n: u64, zeros: usize, twice: bool },
    Chunked,
}

fn body_header() -> impl Strategy<Value = BodyHeader> {
    prop_oneof![
        Just(BodyHeader::None),
        (0..1_000_000_000_000_000_000u64, 0..3usize, any::<bool>())
            .prop_map(|(n, zeros, twice)| BodyHeader::Length { n, zeros, twice }),
        Just(BodyHeader::Chunked),
    ]
}

#[derive(Clone)]
struct Head {
    method: String,
    target: String,
    minor: u8,
    /// Header lines without their CRLF; `lines[host_at]` is the Host line.
    lines: Vec<Vec<u8>>,
    host_at: usize,
    host_name: String,
    host_value: String,
    has_te: bool,
    /// The Content-Length value, when the head has one.
    length: Option<u64>,
    /// What `parse_request` must report.
    route_host: String,
    path: String,
    framing: String,
}

impl Head {
    fn request_line(&self, minor: u8) -> Vec<u8> {
        format!("{} {} HTTP/1.{minor}", self.method, self.target).into_bytes()
    }

    fn host_line(&self, value: &str) -> Vec<u8> {
        format!("{}: {value}", self.host_name).into_bytes()
    }

    fn render(request_line: &[u8], lines: &[Vec<u8>]) -> Vec<u8> {
        let mut out = request_line.to_vec();
        out.extend_from_slice(b"\r\n");
        for line in lines {
            out.extend_from_slice(line);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    fn bytes(&self) -> Vec<u8> {
        Head::render(&self.request_line(self.minor), &self.lines)
    }
}

impl fmt::Debug for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Escaped(&self.bytes()).fmt(f)
    }
}

/// A valid request head: method, target (origin, absolute or asterisk form), version,
/// a valid Host somewhere among random headers, and optional framing headers.
fn request_head() -> impl Strategy<Value = Head> {
    let target = (
        method(),
        0..8u8,
        origin_path(),
        select(&["http://", "https://", "HTTP://", "hTTps://"][..]),
        authority(),
    );
    let host = (
        select(&["Host", "host", "HOST"][..]),
        authority(),
        ws(2),
        ws(2),
    );
    let framing = (
        body_header(),
        select(&["Content-Length", "content-length", "CONTENT-LENGTH"][..]),
        select(
            &[
                "Transfer-Encoding: chunked",
                "transfer-encoding:Chunked",
                "TRANSFER-ENCODING: \tCHUNKED \t",
            ][..],
        ),
        ws(1),
    );
    let places = (any::<Index>(), any::<Index>(), any::<Index>());
    (
        target,
        0..2u8,
        host,
        vec(extra_header(), 0..8),
        framing,
        places,
    )
        .prop_map(|(target, minor, host, mut lines, framing, places)| {
            let (method, form, path, scheme, (target_authority, target_host)) = target;
            let (host_name, (host_value, host_host), ows_before, ows_after) = host;
            let (body, cl_name, te_line, cl_ws) = framing;
            let (target, route_host, routed_path) = match form {
                0 if method == "OPTIONS" => ("*".to_string(), host_host, "/".to_string()),
                0 | 1 => (
                    format!("{scheme}{target_authority}{path}"),
                    target_host,
                    path,
                ),
                _ => (path.clone(), host_host, path),
            };
            // HTTP/1.0 cannot carry Transfer-Encoding (that is a rejection, tested below).
            let body = match body {
                BodyHeader::Chunked if minor == 0 => BodyHeader::None,
                other => other,
            };
            let insert = |line: Vec<u8>, at: Index, lines: &mut Vec<Vec<u8>>| {
                let i = at.index(lines.len() + 1);
                lines.insert(i, line);
                i
            };
            let (framing, has_te, length) = match body {
                BodyHeader::None => ("none".to_string(), false, None),
                BodyHeader::Length { n, zeros, twice } => {
                    let digits = n.to_string();
                    let zeros = "0".repeat(zeros.min(18 - digits.len()));
                    let ws = String::from_utf8(cl_ws).expect("whitespace is ASCII");
                    let line = format!("{cl_name}:{ws}{zeros}{digits}{ws}").into_bytes();
                    // A repeat must carry the same digits: sluice refuses `5` next to
                    // `005`, which a parser behind it need not read as one number.
                    if twice {
                        insert(
                            format!("content-length: {zeros}{digits}").into_bytes(),
                            places.1,
                            &mut lines,
                        );
                    }
                    insert(line, places.1, &mut lines);
                    (format!("length:{n}"), false, Some(n))
                }
                BodyHeader::Chunked => {
                    insert(te_line.as_bytes().to_vec(), places.1, &mut lines);
                    ("chunked".to_string(), true, None)
                }
            };
            let ows = |w: &[u8]| String::from_utf8(w.to_vec()).expect("whitespace is ASCII");
            let host_line = format!(
                "{host_name}:{}{host_value}{}",
                ows(&ows_before),
                ows(&ows_after)
            );
            let host_at = insert(host_line.into_bytes(), places.2, &mut lines);
            Head {
                method,
                target,
                minor,
                lines,
                host_at,
                host_name: host_name.to_string(),
                host_value,
                has_te,
                length,
                route_host,
                path: routed_path,
                framing,
            }
        })
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 4: valid heads are accepted with their path, host and framing; the head
    /// sluice writes upstream is accepted again with the same ones; one byte short is
    /// incomplete.
    #[test]
    fn valid_request_heads_are_accepted_and_rewritten_to_a_fixed_point(
        head in request_head(),
        body in vec(any::<u8>(), 0..16),
    ) {
        let bytes = head.bytes();
        let input = [&bytes[..], &body].concat();
        let accepted = match parse_request(&input) {
            Ok(Some(accepted)) => accepted,
            other => return Err(TestCaseError::fail(format!("refused: {other:?}"))),
        };
        prop_assert_eq!(accepted.head_len, bytes.len());
        prop_assert_eq!(&accepted.path, &head.path);
        prop_assert_eq!(&accepted.host, &head.route_host);
        prop_assert_eq!(&accepted.framing, &head.framing);
        prop_assert_eq!(parse_request(&bytes[..bytes.len() - 1]), Ok(None));

        let upstream = &accepted.upstream_head;
        // An absolute-form target goes out as its path; `*` as it is.
        let sent = if head.target == "*" { "*" } else { &head.path };
        let line = format!("{} {sent} HTTP/1.1\r\n", head.method);
        prop_assert!(upstream.starts_with(line.as_bytes()), "upstream head {:?}", Escaped(upstream));
        // Then the client's end-to-end fields, in order, as `name: value` (module docs of
        // request.rs); the proxy's own fields come after them.
        let kept = forwarded(&head.lines, SPECIAL);
        prop_assert!(
            upstream[line.len()..].starts_with(&kept),
            "upstream head {:?} lacks {:?}",
            Escaped(upstream),
            Escaped(&kept)
        );
        let again = match parse_request(upstream) {
            Ok(Some(again)) => again,
            other => return Err(TestCaseError::fail(format!(
                "upstream head {:?} refused: {other:?}",
                Escaped(upstream)
            ))),
        };
        prop_assert_eq!(again.head_len, upstream.len());
        prop_assert_eq!(&again.path, &accepted.path);
        prop_assert_eq!(&again.host, &accepted.host);
        prop_assert_eq!(&again.framing, &accepted.framing);
        // Byte for byte the same head, but for the client address appended once more.
        let xff = b"X-Forwarded-For: 192.0.2.1\r\n";
        let twice = b"X-Forwarded-For: 192.0.2.1, 192.0.2.1\r\n";
        let expected = replace_once(upstream, xff, twice);
        prop_assert!(
            again.upstream_head == expected,
            "{:?} became {:?}",
            Escaped(upstream),
            Escaped(&again.upstream_head)
        );
    }
}

/// A known-bad shape to put into a valid head.
#[derive(Clone, Debug)]
enum Bad {
    SpaceInHost(Index, u8),
    UserinfoInHost(String),
    SecondHost(Index, String),
    SecondTransferEncoding(Index, Index),
    TransferEncodingInHttp10(Index),
    OtherCoding(Index, &'static str),
    InvalidContentLength(Index, &'static str),
    RawByteInTarget(Index, u8),
    Utf8InTarget(Index, char),
    NulInValue(Index, Index),
    SpaceBeforeColon(Index, u8),
    ObsFold(Index, Vec<u8>),
    BareCrInValue(Index, Index),
    LengthAndChunked(Index, Index),
    ConflictingLength(Index, Index),
    Version(&'static str),
    UserinfoInTarget(String),
    DotSegment(&'static str),
}

fn bad_shape() -> impl Strategy<Value = Bad> {
    let sp = select(&b" \t"[..]);
    let userinfo = "[a-z0-9]{1,8}(:[a-z0-9]{0,8})?@";
    let codings = &[
        "gzip",
        "gzip, chunked",
        "chunked, gzip",
        "identity",
        "chunked, chunked",
        "x-chunked",
        "chunked;q=1",
    ][..];
    let lengths = &[
        "-1",
        "+5",
        "1,1",
        "0x10",
        "",
        "1 2",
        "1234567890123456789",
        "5a",
    ][..];
    let versions = &[
        "HTTP/1.2",
        "HTTP/2.0",
        "http/1.1",
        "HTTP/1.1 ",
        "HTTP/1",
        "HTTP/01.1",
        "HTTP/1.10",
    ][..];
    let dots = &[".", "..", "%2e", "%2E.", ".%2e", "%2e%2E"][..];
    let folded = (select(&b" \t"[..]), some_of((0x21..0x7f).collect(), 1..8))
        .prop_map(|(first, rest)| [&[first][..], &rest].concat());
    prop_oneof![
        (any::<Index>(), sp.clone()).prop_map(|(i, b)| Bad::SpaceInHost(i, b)),
        userinfo.prop_map(Bad::UserinfoInHost),
        (any::<Index>(), authority()).prop_map(|(i, (a, _))| Bad::SecondHost(i, a)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Bad::SecondTransferEncoding(i, j)),
        any::<Index>().prop_map(Bad::TransferEncodingInHttp10),
        (any::<Index>(), select(codings)).prop_map(|(i, c)| Bad::OtherCoding(i, c)),
        (any::<Index>(), select(lengths)).prop_map(|(i, v)| Bad::InvalidContentLength(i, v)),
        (any::<Index>(), 0x80..=0xffu8).prop_map(|(i, b)| Bad::RawByteInTarget(i, b)),
        (
            any::<Index>(),
            any::<char>().prop_filter("non-ASCII", |c| !c.is_ascii())
        )
            .prop_map(|(i, c)| Bad::Utf8InTarget(i, c)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Bad::NulInValue(i, j)),
        (any::<Index>(), sp).prop_map(|(i, b)| Bad::SpaceBeforeColon(i, b)),
        (any::<Index>(), folded).prop_map(|(i, l)| Bad::ObsFold(i, l)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Bad::BareCrInValue(i, j)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Bad::LengthAndChunked(i, j)),
        (any::<Index>(), any::<Index>()).prop_map(|(i, j)| Bad::ConflictingLength(i, j)),
        select(versions).prop_map(Bad::Version),
        "[a-z0-9]{1,8}(:[a-z0-9]{0,8})?@".prop_map(Bad::UserinfoInTarget),
        select(dots).prop_map(Bad::DotSegment),
    ]
}

const MALFORMED: (u16, &str) = (400, "malformed request head");
const BAD_HOST: (u16, &str) = (400, "Host is not a host name with an optional port");
const TE_IN_HTTP10: (u16, &str) = (400, "Transfer-Encoding in an HTTP/1.0 request");
const REPEATED_TE: (u16, &str) = (400, "more than one Transfer-Encoding header");

/// The head with `bad` in it, and the rejection it must get.
fn spoil(head: &Head, bad: &Bad) -> (Vec<u8>, (u16, &'static str)) {
    let mut lines = head.lines.clone();
    let mut minor = head.minor;
    let mut target = head.target.clone();
    let place = |at: &Index, lines: &Vec<Vec<u8>>| at.index(lines.len() + 1);
    let colon = |line: &[u8]| line.iter().position(|&b| b == b':').expect("a field line");
    let te_line = b"Transfer-Encoding: chunked".to_vec();
    let expected = match bad {
        Bad::SpaceInHost(at, ws) => {
            let v = &head.host_value;
            let value = match v.len() {
                1 => format!("{v}{}{v}", *ws as char),
                n => {
                    let i = 1 + at.index(n - 1);
                    format!("{}{}{}", &v[..i], *ws as char, &v[i..])
                }
            };
            lines[head.host_at] = head.host_line(&value);
            BAD_HOST
        }
        Bad::UserinfoInHost(user) => {
            lines[head.host_at] = head.host_line(&format!("{user}{}", head.host_value));
            BAD_HOST
        }
        Bad::SecondHost(at, authority) => {
            let i = place(at, &lines);
            lines.insert(i, format!("Host: {authority}").into_bytes());
            (400, "more than one Host header")
        }
        Bad::SecondTransferEncoding(at, at2) => {
            let i = place(at, &lines);
            lines.insert(i, te_line.clone());
            if !head.has_te {
                let i = place(at2, &lines);
                lines.insert(i, b"transfer-encoding: gzip".to_vec());
            }
            if minor == 0 {
                TE_IN_HTTP10
            } else {
                REPEATED_TE
            }
        }
        Bad::TransferEncodingInHttp10(at) => {
            minor = 0;
            let i = place(at, &lines);
            lines.insert(i, te_line);
            TE_IN_HTTP10
        }
        Bad::OtherCoding(at, coding) => {
            let i = place(at, &lines);
            lines.insert(i, format!("Transfer-Encoding: {coding}").into_bytes());
            match (minor, head.has_te, head.length.is_some()) {
                (0, _, _) => TE_IN_HTTP10,
                (_, true, _) => REPEATED_TE,
                (_, _, true) => (400, "both Transfer-Encoding and Content-Length"),
                _ => (501, "Transfer-Encoding other than chunked"),
            }
        }
        Bad::InvalidContentLength(at, value) => {
            let i = place(at, &lines);
            lines.insert(i, format!("Content-Length: {value}").into_bytes());
            (400, "invalid Content-Length")
        }
        Bad::RawByteInTarget(at, byte) => {
            let mut bytes = target.into_bytes();
            bytes.insert(at.index(bytes.len() + 1), *byte);
            let request_line = [
                head.method.as_bytes(),
                b" ",
                &bytes,
                format!(" HTTP/1.{minor}").as_bytes(),
            ]
            .concat();
            return (Head::render(&request_line, &lines), MALFORMED);
        }
        Bad::Utf8InTarget(at, c) => {
            target.insert(at.index(target.len() + 1), *c);
            (
                400,
                "request target has a byte outside visible ASCII, or a #",
            )
        }
        Bad::NulInValue(which, at) => {
            let line = &mut lines[which.index(head.lines.len())];
            let start = colon(line) + 1;
            let i = start + at.index(line.len() - start + 1);
            line.insert(i, 0);
            MALFORMED
        }
        Bad::SpaceBeforeColon(which, ws) => {
            let line = &mut lines[which.index(head.lines.len())];
            let i = colon(line);
            line.insert(i, *ws);
            MALFORMED
        }
        Bad::ObsFold(at, folded) => {
            let i = place(at, &lines);
            lines.insert(i, folded.clone());
            MALFORMED
        }
        Bad::BareCrInValue(which, at) => {
            // The CR is followed by a value byte or by the line's own CR: never by LF.
            let line = &mut lines[which.index(head.lines.len())];
            let start = colon(line) + 1;
            let i = start + at.index(line.len() - start + 1);
            line.insert(i, b'\r');
            MALFORMED
        }
        Bad::LengthAndChunked(at, at2) => {
            if !head.has_te {
                let i = place(at, &lines);
                lines.insert(i, te_line);
            }
            if head.length.is_none() {
                let i = place(at2, &lines);
                lines.insert(i, b"Content-Length: 3".to_vec());
            }
            if minor == 0 {
                TE_IN_HTTP10
            } else {
                (400, "both Transfer-Encoding and Content-Length")
            }
        }
        Bad::ConflictingLength(at, at2) => {
            // `n ^ 1` differs from `n` and has no more digits than it.
            let n = head.length.unwrap_or(5);
            if head.length.is_none() {
                let i = place(at, &lines);
                lines.insert(i, format!("content-length: {n}").into_bytes());
            }
            let i = place(at2, &lines);
            lines.insert(i, format!("Content-Length: {}", n ^ 1).into_bytes());
            (400, "conflicting Content-Length headers")
        }
        Bad::Version(version) => {
            let request_line = format!("{} {target} {version}", head.method).into_bytes();
            return (Head::render(&request_line, &lines), MALFORMED);
        }
        Bad::UserinfoInTarget(user) => {
            let path = if target == "*" { "/" } else { &head.path };
            target = format!("http://{user}{}{path}", head.host_value);
            (400, "bad authority in request target")
        }
        Bad::DotSegment(dots) => {
            // Right before the path: `/{dots}` becomes a segment of its own.
            let start = target.len() - head.path.len();
            target = if target == "*" {
                format!("/{dots}")
            } else {
                format!("{}/{dots}{}", &target[..start], &target[start..])
            };
            (400, "path has . or .. segments")
        }
    };
    let request_line = format!("{} {target} HTTP/1.{minor}", head.method).into_bytes();
    (Head::render(&request_line, &lines), expected)
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 5: a valid head with one known-bad shape in it is refused, with the status
    /// and reason the proxy gives for that shape.
    #[test]
    fn request_heads_with_a_known_bad_shape_are_rejected(
        head in request_head(),
        bad in bad_shape(),
    ) {
        let (bytes, expected) = spoil(&head, &bad);
        prop_assert_eq!(
            parse_request(&bytes),
            Err(expected),
            "{:?} with {:?}: {:?}",
            head, bad, Escaped(&bytes)
        );
    }
}

// ---------------------------------------------------------------------------------------
// Response heads.

#[derive(Clone)]
struct ResponseHead {
    bytes: Vec<u8>,
    status: u16,
    /// The request was HEAD.
    head: bool,
    framing: String,
    reason: Option<Vec<u8>>,
    /// The field lines the client must get as they came.
    kept: Vec<u8>,
}

impl fmt::Debug for ResponseHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} (HEAD: {})", Escaped(&self.bytes), self.head)
    }
}

fn response_head() -> impl Strategy<Value = ResponseHead> {
    let status = (100..600u16).prop_filter("101 needs an upgrade request", |s| *s != 101);
    let reason = proptest::option::of(some_of(bytes_where(is_field_byte), 0..20));
    let framing = (
        body_header(),
        select(&["Content-Length", "content-length"][..]),
        select(&["Transfer-Encoding", "transfer-encoding"][..]),
    );
    (
        (status, 0..2u8, reason, any::<bool>()),
        vec(extra_header(), 0..8),
        framing,
        any::<Index>(),
    )
        .prop_map(|((status, minor, reason, head), mut lines, framing, at)| {
            let (body, cl_name, te_name) = framing;
            let (line, declared) = match body {
                BodyHeader::None => (None, "close".to_string()),
                BodyHeader::Length { n, .. } => {
                    (Some(format!("{cl_name}: {n}")), format!("length:{n}"))
                }
                BodyHeader::Chunked => (Some(format!("{te_name}: chunked")), "chunked".into()),
            };
            if let Some(line) = line {
                lines.insert(at.index(lines.len() + 1), line.into_bytes());
            }
            let no_body = (100..200).contains(&status) || head || status == 204 || status == 304;
            let mut bytes = format!("HTTP/1.{minor} {status}").into_bytes();
            if let Some(reason) = &reason {
                bytes.push(b' ');
                bytes.extend_from_slice(reason);
            }
            let kept = forwarded(&lines, HOP_BY_HOP);
            bytes.extend_from_slice(b"\r\n");
            for line in lines {
                bytes.extend(line);
                bytes.extend_from_slice(b"\r\n");
            }
            bytes.extend_from_slice(b"\r\n");
            ResponseHead {
                bytes,
                status,
                head,
                framing: if no_body { "none".into() } else { declared },
                reason,
                kept,
            }
        })
}

/// The head sluice sends a client: an HTTP/1.1 status line with this status, field lines
/// `name: value`, every line ended by CRLF, no CR or LF anywhere else.
fn check_client_head(head: &[u8], status: u16) -> Result<(), TestCaseError> {
    let shown = Escaped(head);
    let status_line = format!("HTTP/1.1 {status:03} ");
    prop_assert!(head.starts_with(status_line.as_bytes()), "{:?}", shown);
    prop_assert!(head.ends_with(b"\r\n\r\n"), "{:?}", shown);
    let lines: Vec<&[u8]> = head[..head.len() - 4].split(|&b| b == b'\n').collect();
    for (i, &line) in lines.iter().enumerate() {
        // The last line's CRLF went with the final one.
        let line = match line.strip_suffix(b"\r") {
            Some(line) if i + 1 < lines.len() => line,
            _ => line,
        };
        prop_assert!(
            !line.contains(&b'\r') && (i + 1 == lines.len() || lines[i].ends_with(b"\r")),
            "bare CR or LF in {:?}",
            shown
        );
        if i == 0 {
            prop_assert!(line[status_line.len()..].iter().all(|&b| is_field_byte(b)));
            continue;
        }
        let colon = line.iter().position(|&b| b == b':');
        let ok = colon.is_some_and(|c| {
            c > 0
                && line[..c].iter().all(|&b| is_tchar(b))
                && line[c + 1..].iter().all(|&b| is_field_byte(b))
        });
        prop_assert!(ok, "bad field line {:?} in {:?}", Escaped(line), shown);
    }
    Ok(())
}

fn response_soup() -> impl Strategy<Value = Vec<u8>> {
    let versions = &[
        "HTTP/1.1 ",
        "HTTP/1.0 ",
        "HTTP/1.1  ",
        "HTTP/2 ",
        "http/1.1 ",
    ][..];
    let names = &[
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "Upgrade",
        "Keep-Alive",
        "X-A",
    ][..];
    let values = &[
        "chunked",
        "close",
        "0",
        "5",
        "-1",
        "gzip, chunked",
        "upgrade, x-a",
        "",
    ][..];
    let ends = &["\r\n", "\r\n", "\n", "\r", ""][..];
    let junk = some_of(b"aX-:; \t\r\n0\0\x7f\x80".to_vec(), 0..4);
    let line = (
        select(names),
        select(&[":", ": ", " : ", ":\t"][..]),
        select(values),
        junk,
        select(ends),
    )
        .prop_map(|(n, colon, v, junk, end)| {
            [
                n.as_bytes(),
                colon.as_bytes(),
                v.as_bytes(),
                &junk,
                end.as_bytes(),
            ]
            .concat()
        });
    let headish = (
        select(versions),
        some_of(b"0123456789".to_vec(), 2..5),
        select(&["", " ", " OK", "\tx", " caf\u{e9}"][..]),
        select(ends),
        vec(line, 0..6),
        select(ends),
    )
        .prop_map(|(v, code, reason, end, lines, last)| {
            [
                v.as_bytes(),
                &code,
                reason.as_bytes(),
                end.as_bytes(),
                &lines.concat(),
                last.as_bytes(),
            ]
            .concat()
        });
    let mutated =
        (response_head(), vec((any::<Index>(), any::<u8>()), 1..3)).prop_map(|(resp, edits)| {
            let mut bytes = resp.bytes;
            for (at, b) in edits {
                let i = at.index(bytes.len());
                bytes[i] = b;
            }
            bytes
        });
    prop_oneof![vec(any::<u8>(), 0..100), headish, mutated]
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 6: valid responses are accepted with their status and framing, and the
    /// head sent to the client is well formed and parses again to the same.
    #[test]
    fn valid_response_heads_give_well_formed_client_heads(
        resp in response_head(),
        body in vec(any::<u8>(), 0..16),
    ) {
        let input = [&resp.bytes[..], &body].concat();
        let accepted = match parse_response(&input, resp.head) {
            Ok(Some(accepted)) => accepted,
            other => return Err(TestCaseError::fail(format!("refused: {other:?}"))),
        };
        prop_assert_eq!(accepted.status, resp.status);
        prop_assert_eq!(accepted.head_len, resp.bytes.len());
        prop_assert_eq!(&accepted.framing, &resp.framing);
        prop_assert_eq!(parse_response(&resp.bytes[..resp.bytes.len() - 1], resp.head), Ok(None));
        let client = &accepted.client_head;
        check_client_head(client, resp.status)?;
        // The reason phrase goes through (when ASCII: httparse gives up on obs-text), and
        // the end-to-end fields follow the status line, in order.
        let reason = resp.reason.clone().unwrap_or_default();
        if reason.is_ascii() {
            let line = [format!("HTTP/1.1 {} ", resp.status).as_bytes(), &reason, b"\r\n"].concat();
            prop_assert!(client.starts_with(&line), "{:?}", Escaped(client));
            prop_assert!(client[line.len()..].starts_with(&resp.kept), "{:?}", Escaped(client));
        }
        let again = match parse_response(client, resp.head) {
            Ok(Some(again)) => again,
            other => return Err(TestCaseError::fail(format!(
                "client head {:?} refused: {other:?}",
                Escaped(&accepted.client_head)
            ))),
        };
        prop_assert_eq!(again.status, resp.status);
        prop_assert_eq!(again.head_len, client.len());
        prop_assert_eq!(&again.framing, &accepted.framing);
        // A fixed point: the client head, read as a server's, is rewritten to itself.
        prop_assert!(
            &again.client_head == client,
            "{:?} became {:?}",
            Escaped(client),
            Escaped(&again.client_head)
        );
    }

    /// Property 6, continued: any bytes from a server are parsed without a panic, and
    /// whatever is accepted gives a well-formed client head.
    #[test]
    fn arbitrary_response_bytes_never_panic(input in response_soup(), head in any::<bool>()) {
        if let Ok(Some(accepted)) = parse_response(&input, head) {
            prop_assert!(accepted.head_len <= input.len());
            check_client_head(&accepted.client_head, accepted.status)?;
        }
    }
}
