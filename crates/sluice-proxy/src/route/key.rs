//! Evaluating a hash key (`$arg_room`, `$host$uri`, ...) against a request head.
//!
//! The semantics follow nginx's variables so a migrating user's key means the same thing,
//! with one documented difference: `$uri` is the raw path, not percent-decoded or
//! normalised.

use super::router::Captured;
use sluice_config::{HeaderEdits, KeyPart, KeyTemplate, Variable};

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
    /// `$request_id`, made the first time a header names it.
    pub request_id: std::cell::OnceCell<[u8; 32]>,
    /// The groups of the regular expression of the route that took the request (`$1`,
    /// `$name`), set once it is chosen, when it has one.
    pub captured: std::cell::OnceCell<Captured>,
}

/// Appends the key's value for this request to `out`.
pub fn evaluate(template: &KeyTemplate, view: &View<'_>, out: &mut Vec<u8>) {
    evaluate_with(template, view, view.captured.get(), out);
}

/// The same, with the groups of another match than the route's (a rewrite's).
pub fn evaluate_with(
    template: &KeyTemplate,
    view: &View<'_>,
    captured: Option<&Captured>,
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
    let (path, query) = view.target.split_once('?').unwrap_or((view.target, ""));
    match var {
        Variable::RequestUri => out.extend_from_slice(view.target.as_bytes()),
        Variable::Uri => out.extend_from_slice(path.as_bytes()),
        Variable::Args => out.extend_from_slice(query.as_bytes()),
        Variable::Arg(name) => out.extend_from_slice(arg(query, name).as_bytes()),
        Variable::Http(name) => {
            if let Some(h) = view
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
            {
                out.extend_from_slice(h.value);
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
        Variable::RequestId => out.extend_from_slice(view.request_id.get_or_init(request_id)),
        // Read by `evaluate_with`, which knows whose groups.
        Variable::Capture(_) => {}
    }
}

/// A new request identity: 128 random bits in hexadecimal, as nginx's `$request_id`.
fn request_id() -> [u8; 32] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bits = fastrand::u128(..);
    std::array::from_fn(|i| HEX[((bits >> (124 - 4 * i)) & 0xf) as usize])
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
fn cookie<'h>(headers: &[httparse::Header<'h>], name: &str) -> Option<&'h [u8]> {
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
            request_id: Default::default(),
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
}
