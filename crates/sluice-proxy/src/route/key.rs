//! Evaluating a hash key (`$arg_room`, `$host$uri`, ...) against a request head.
//!
//! The semantics follow nginx's variables so a migrating user's key means the same thing,
//! with one documented difference: `$uri` is the raw path, not percent-decoded or
//! normalised.

use super::router::{Captured, Groups};
use sluice_config::{HeaderEdits, KeyPart, KeyTemplate, RequestIdentity, Variable};

/// The parts of a request a key can read.
pub struct View<'a> {
    /// Host without port, as sent (absolute-form authority, else `Host`).
    pub host: &'a str,
    /// The request target in origin form: path and query.
    pub target: &'a str,
    pub headers: &'a [httparse::Header<'a>],
    pub client_ip: &'a str,
    /// `http` or `https`.
    pub scheme: &'a str,
    /// `[request_id]`, when the config asks for identities: whose header a client's
    /// own identity is read from.
    pub identity: Option<&'a RequestIdentity>,
    /// `$request_id`, found or made the first time something names it.
    pub request_id: std::cell::OnceCell<RequestId<'a>>,
    /// `$traceparent`, likewise.
    pub traceparent: std::cell::OnceCell<Trace>,
    /// The groups of the regular expression of the route that took the request (`$1`,
    /// `$name`), set once it is chosen, when it has one.
    pub captured: std::cell::OnceCell<Captured>,
}

/// Appends the key's value for this request to `out`.
pub fn evaluate(template: &KeyTemplate, view: &View<'_>, out: &mut Vec<u8>) {
    let groups = view.captured.get().map(|c| c as &dyn Groups);
    evaluate_with(template, view, groups, out);
}

/// The same, with the groups of another match than the route's (a rewrite's).
pub fn evaluate_with(
    template: &KeyTemplate,
    view: &View<'_>,
    captured: Option<&dyn Groups>,
    out: &mut Vec<u8>,
) {
    for part in &template.parts {
        match part {
            KeyPart::Literal(text) => out.extend_from_slice(text.as_bytes()),
            KeyPart::Var(Variable::Capture(i)) => {
                out.extend_from_slice(captured.map_or("", |c| c.group(*i)).as_bytes())
            }
            KeyPart::Var(var) => variable(var, view, out),
        }
    }
}

fn variable(var: &Variable, view: &View<'_>, out: &mut Vec<u8>) {
    let (path, query) = super::router::split_query(view.target);
    let query = query.unwrap_or("");
    match var {
        Variable::RequestUri => out.extend_from_slice(view.target.as_bytes()),
        Variable::Uri => out.extend_from_slice(path.as_bytes()),
        Variable::Args => out.extend_from_slice(query.as_bytes()),
        Variable::Arg(name) => out.extend_from_slice(arg(query, name).as_bytes()),
        Variable::Http(name) => {
            if let Some(value) = header(view.headers, name) {
                out.extend_from_slice(value);
            }
        }
        Variable::Cookie(name) => {
            if let Some(value) = cookie(view.headers, name) {
                out.extend_from_slice(value);
            }
        }
        Variable::RemoteAddr => out.extend_from_slice(view.client_ip.as_bytes()),
        Variable::Host => out.extend(view.host.bytes().map(|b| b.to_ascii_lowercase())),
        Variable::Scheme => out.extend_from_slice(view.scheme.as_bytes()),
        Variable::Msec => msec(out),
        Variable::RequestId => out.extend_from_slice(request_id(view)),
        Variable::Traceparent => out.extend_from_slice(traceparent(view)),
        // Read by `evaluate_with`, which knows whose groups.
        Variable::Capture(_) => {}
    }
}

/// A request's identity: made by sluice (as nginx's `$request_id`), or the client's.
#[derive(Clone, Copy, Debug)]
pub enum RequestId<'a> {
    Made([u8; 32]),
    Given(&'a [u8]),
}

impl RequestId<'_> {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            RequestId::Made(hex) => hex,
            RequestId::Given(text) => text,
        }
    }
}

/// The request's identity: the client's own when `[request_id]` keeps well-formed ones
/// and it sent one, else a new one; the same every time it is asked for.
pub fn request_id<'v>(view: &'v View<'_>) -> &'v [u8] {
    let id = view.request_id.get_or_init(|| {
        let given = view
            .identity
            .filter(|i| i.from_client)
            .and_then(|i| header(view.headers, &i.header))
            .filter(|v| well_formed_id(v));
        given.map_or_else(
            || RequestId::Made(hex(fastrand::u128(..))),
            RequestId::Given,
        )
    });
    id.as_bytes()
}

/// A client's identity sluice passes on: 1 to 128 visible ASCII characters, no quote or
/// backslash (it goes into log lines and JSON).
fn well_formed_id(value: &[u8]) -> bool {
    (1..=128).contains(&value.len())
        && value
            .iter()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\'))
}

/// `00-` + trace id + `-` + parent id + `-` + flags.
pub const TRACEPARENT_LEN: usize = 55;

/// A request's trace: its `traceparent`, and whether sluice started it.
#[derive(Debug)]
pub struct Trace {
    header: [u8; TRACEPARENT_LEN],
    started: bool,
}

/// The request's `traceparent`: the client's when valid (W3C Trace Context, version 00,
/// or a later version's first fields sent as 00), else a new trace, sampled, whose trace
/// id is the request's identity when sluice made it.
pub fn traceparent<'v>(view: &'v View<'_>) -> &'v [u8; TRACEPARENT_LEN] {
    &view.traceparent.get_or_init(|| trace(view)).header
}

/// Whether sluice started the request's trace, once something read its `traceparent`:
/// then a client's `tracestate` is not sent on, as it belongs to a trace the server
/// does not get (W3C Trace Context).
pub fn started_trace(view: &View<'_>) -> bool {
    view.traceparent.get().is_some_and(|t| t.started)
}

fn trace(view: &View<'_>) -> Trace {
    let given = header(view.headers, "traceparent").and_then(valid_traceparent);
    Trace {
        started: given.is_none(),
        header: given.unwrap_or_else(|| {
            let trace = match request_id(view) {
                id if id.len() == 32
                    && id.iter().all(u8::is_ascii_hexdigit)
                    && id != [b'0'; 32] =>
                {
                    let mut t = [0u8; 32];
                    t.copy_from_slice(id);
                    t.make_ascii_lowercase();
                    t
                }
                _ => hex(fastrand::u128(1..)),
            };
            let parent = hex(u128::from(fastrand::u64(1..)));
            let mut out = [0u8; TRACEPARENT_LEN];
            out[..3].copy_from_slice(b"00-");
            out[3..35].copy_from_slice(&trace);
            out[35] = b'-';
            out[36..52].copy_from_slice(&parent[16..]);
            out[52..].copy_from_slice(b"-01");
            out
        }),
    }
}

/// `value` as a W3C `traceparent`, when it is one sluice may pass on.
fn valid_traceparent(value: &[u8]) -> Option<[u8; TRACEPARENT_LEN]> {
    let head = value.get(..TRACEPARENT_LEN)?;
    let lower_hex = |s: &[u8]| s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let nonzero = |s: &[u8]| s.iter().any(|b| *b != b'0');
    let (version, trace, parent, flags) = (&head[..2], &head[3..35], &head[36..52], &head[53..]);
    let shape = head[2] == b'-' && head[35] == b'-' && head[52] == b'-';
    let version_ok = lower_hex(version) && version != b"ff";
    // Version 00 is exactly 55 bytes; a later version may add fields after a `-`.
    let length_ok = value.len() == TRACEPARENT_LEN
        || (version != b"00" && value.get(TRACEPARENT_LEN) == Some(&b'-'));
    let ok = shape
        && version_ok
        && length_ok
        && lower_hex(trace)
        && nonzero(trace)
        && lower_hex(parent)
        && nonzero(parent)
        && lower_hex(flags);
    ok.then(|| {
        let mut out = [0u8; TRACEPARENT_LEN];
        out.copy_from_slice(head);
        // A later version's first fields, sent as the version sluice knows (W3C).
        out[..2].copy_from_slice(b"00");
        out
    })
}

/// 128 bits in lower-case hexadecimal.
fn hex(bits: u128) -> [u8; 32] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    std::array::from_fn(|i| HEX[((bits >> (124 - 4 * i)) & 0xf) as usize])
}

/// The first value of header `name` (any case).
fn header<'h>(headers: &[httparse::Header<'h>], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value)
}

/// Now as nginx's `$msec`: seconds since the Unix epoch, a dot, milliseconds.
fn msec(out: &mut Vec<u8>) {
    use std::io::Write;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let _ = write!(out, "{}.{:03}", now.as_secs(), now.subsec_millis());
}

/// Appends `Name: value\r\n` for each header `edits` sets, its value evaluated for this
/// request. A value with a control character (from a request header) is left out.
pub fn render(edits: &HeaderEdits, view: &View<'_>, out: &mut Vec<u8>) {
    out.clear();
    for (name, value) in &edits.set {
        let start = out.len();
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        let value_at = out.len();
        evaluate(value, view, out);
        if out[value_at..]
            .iter()
            .any(|b| b.is_ascii_control() && *b != b'\t')
        {
            out.truncate(start);
            continue;
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// The raw value of the first query parameter named `name` (any case), or "".
fn arg<'q>(query: &'q str, name: &str) -> &'q str {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map_or("", |(_, v)| v)
}

/// The value of cookie `name` (any case) in the `Cookie` headers.
pub fn cookie<'h>(headers: &[httparse::Header<'h>], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("cookie"))
        .flat_map(|h| h.value.split(|b| *b == b';'))
        .find_map(|pair| {
            let pair = pair.trim_ascii();
            let eq = pair.iter().position(|b| *b == b'=')?;
            pair[..eq]
                .trim_ascii()
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| pair[eq + 1..].trim_ascii())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(template: &str, target: &str, headers: &[(&'static str, &'static str)]) -> String {
        let t = sluice_config::parse("t", &format!("[[listener]]\nbind=\"127.0.0.1:1\"\n[[route]]\nupstream=\"a\"\n[upstream.a]\nbalance=\"hash\"\nhash_key=\"{template}\"\nservers=[\"127.0.0.1:2\"]\n")).unwrap();
        let sluice_config::Balance::Hash { key, .. } = &t.upstreams[0].balance else {
            panic!()
        };
        let headers: Vec<httparse::Header> = headers
            .iter()
            .map(|(n, v)| httparse::Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect();
        let view = View {
            host: "Chat.Example.com",
            target,
            headers: &headers,
            client_ip: "10.1.2.3",
            scheme: "http",
            identity: None,
            request_id: Default::default(),
            traceparent: Default::default(),
            captured: Default::default(),
        };
        let mut out = Vec::new();
        evaluate(key, &view, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn variables_read_like_nginx() {
        assert_eq!(eval("$arg_room", "/ws?x=1&Room=42&room=7", &[]), "42");
        assert_eq!(eval("r-$arg_room", "/ws", &[]), "r-");
        assert_eq!(eval("$uri|$args", "/a/b?c=d", &[]), "/a/b|c=d");
        assert_eq!(eval("$request_uri", "/a?b", &[]), "/a?b");
        assert_eq!(eval("$host$uri", "/x", &[]), "chat.example.com/x");
        assert_eq!(eval("$remote_addr", "/", &[]), "10.1.2.3");
        assert_eq!(eval("$http_x_user", "/", &[("X-User", "ann")]), "ann");
        assert_eq!(
            eval("$cookie_sid", "/", &[("Cookie", "a=1; SID=xyz ; c=3")]),
            "xyz"
        );
        assert_eq!(
            eval(
                "$cookie_sid",
                "/",
                &[("Cookie", "a=1"), ("cookie", "sid=2")]
            ),
            "2"
        );
    }

    #[test]
    fn traceparents_are_passed_on_only_when_valid() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(valid_traceparent(ok.as_bytes()).is_some());
        // A later version may carry more after a `-`; its first fields go on, as 00.
        let later = format!("01{}-extra", &ok[2..]);
        assert_eq!(
            valid_traceparent(later.as_bytes()).map(|t| t.to_vec()),
            Some(ok.as_bytes().to_vec())
        );
        for bad in [
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert!(valid_traceparent(bad.as_bytes()).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_clients_identity_is_kept_only_when_well_formed() {
        assert!(well_formed_id(b"gw-7/abc=="));
        assert!(!well_formed_id(b""));
        assert!(!well_formed_id(b"a b"));
        assert!(!well_formed_id(b"\"x\""));
        assert!(!well_formed_id(&[b'a'; 129]));
    }
}
