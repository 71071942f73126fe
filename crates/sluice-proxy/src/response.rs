//! Reading an upstream's response head and rewriting it for the client.

use crate::head::{declared_framing, put_header, ConnectionTokens, Framing};

const MAX_HEADERS: usize = 128;

/// The largest response head accepted from a server (and the largest trailer section).
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// A parsed response head.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub head_len: usize,
    /// Framing of the body as the upstream sends it.
    pub framing: Framing,
    /// The upstream connection may serve another request after this body.
    pub reusable: bool,
    /// A 1xx interim response: another head follows.
    pub interim: bool,
    /// `101 Switching Protocols`: from here on the connection is a tunnel.
    pub upgraded: bool,
}

/// What the client side of the exchange needs to know to rewrite the head.
#[derive(Clone, Copy, Debug)]
pub struct ClientSide<'a> {
    pub is_head: bool,
    pub http10: bool,
    /// We intend to keep the client connection open after this response.
    pub keep_alive: bool,
    /// The protocol the request asked to switch to (and its route allows).
    pub upgrade: Option<&'a str>,
}

/// How the body must be sent on to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Strip chunk framing (an HTTP/1.0 client).
    pub dechunk: bool,
    /// Close the client connection after the body.
    pub close: bool,
    /// The server answered before taking the whole request body: the rest of it is still
    /// unread on the client connection.
    pub request_body_unread: bool,
}

/// Parses the response head at the start of `buf`; `Ok(None)` means read more. On
/// success the client's head is in `out`.
pub fn parse(
    buf: &[u8],
    client: ClientSide<'_>,
    out: &mut Vec<u8>,
) -> Result<Option<(Response, Delivery)>, &'static str> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    let head_len = match res.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err("too many response headers"),
        Err(_) => return Err("malformed response head"),
    };
    let (Some(status), Some(minor)) = (res.code, res.version) else {
        return Err("malformed status line");
    };
    let conn = ConnectionTokens::read(res.headers);
    let resp = classify(res.headers, &conn, (status, minor), head_len, client)?;
    let dechunk = client.http10 && resp.framing == Framing::Chunked;
    let close = !client.keep_alive || resp.framing == Framing::UntilClose || dechunk;
    let delivery = Delivery {
        dechunk,
        close,
        request_body_unread: false,
    };
    write_head(out, &res, &conn, &resp, delivery, client.http10);
    Ok(Some((resp, delivery)))
}

/// What the head says about the body and the connection. `status` is (code, minor version).
fn classify(
    headers: &[httparse::Header<'_>],
    conn: &ConnectionTokens<'_>,
    status: (u16, u8),
    head_len: usize,
    client: ClientSide<'_>,
) -> Result<Response, &'static str> {
    let (code, minor) = status;
    let upgraded = code == 101;
    if upgraded && !switches_to(headers, client.upgrade) {
        return Err("101 Switching Protocols to a protocol the request did not ask for");
    }
    let interim = (100..200).contains(&code) && !upgraded;
    let framing = if interim || client.is_head || code == 204 || code == 304 {
        Framing::None
    } else {
        declared_framing(headers, Framing::UntilClose).map_err(|e| e.as_str())?
    };
    // A HEAD/204/304 response that announces a body is not reused: if the server sends
    // those bytes anyway, they would be read as the next client's response.
    let announced = declared_framing(headers, Framing::None).unwrap_or(Framing::UntilClose);
    let silent = framing != Framing::None
        || interim
        || matches!(announced, Framing::None | Framing::Length(0));
    let reusable = silent
        && !upgraded
        && framing != Framing::UntilClose
        && !conn.close
        && (minor == 1 || conn.keep_alive);
    Ok(Response {
        status: code,
        head_len,
        framing,
        reusable,
        interim,
        upgraded,
    })
}

/// The head for the client: the status line, end-to-end headers, and our own framing and
/// connection headers.
fn write_head(
    out: &mut Vec<u8>,
    res: &httparse::Response<'_, '_>,
    conn: &ConnectionTokens<'_>,
    resp: &Response,
    delivery: Delivery,
    http10: bool,
) {
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    // Three digits, written without formatting machinery: this runs on every response.
    out.extend_from_slice(&[
        b'0' + (resp.status / 100 % 10) as u8,
        b'0' + (resp.status / 10 % 10) as u8,
        b'0' + (resp.status % 10) as u8,
    ]);
    out.push(b' ');
    out.extend_from_slice(res.reason.unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for h in res.headers.iter().filter(|h| !conn.strips(h.name)) {
        put_header(out, h.name.as_bytes(), h.value);
    }
    if resp.upgraded {
        let protocol = res
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("upgrade"))
            .map_or(&b"websocket"[..], |h| h.value);
        out.extend_from_slice(b"Connection: Upgrade\r\n");
        put_header(out, b"Upgrade", protocol);
    } else if !resp.interim {
        if resp.framing == Framing::Chunked && !delivery.dechunk {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        }
        if delivery.close {
            out.extend_from_slice(b"Connection: close\r\n");
        } else if http10 {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// True when the response's `Upgrade` names the protocol that was asked for.
fn switches_to(headers: &[httparse::Header<'_>], asked: Option<&str>) -> bool {
    let Some(asked) = asked else { return false };
    let given = headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("upgrade"))
        .and_then(|h| std::str::from_utf8(h.value).ok());
    given.is_some_and(|g| g.trim_matches([' ', '\t']).eq_ignore_ascii_case(asked))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: ClientSide<'static> = ClientSide {
        is_head: false,
        http10: false,
        keep_alive: true,
        upgrade: None,
    };

    fn run(raw: &str, client: ClientSide<'_>) -> (Response, Delivery, String) {
        let mut out = Vec::new();
        let (r, d) = parse(raw.as_bytes(), client, &mut out).unwrap().unwrap();
        (r, d, String::from_utf8(out).unwrap())
    }

    #[test]
    fn keeps_end_to_end_headers_and_drops_hop_by_hop() {
        let (r, d, out) = run("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive\r\nX-App: a\r\n\r\nok", CLIENT);
        assert_eq!((r.framing, r.reusable), (Framing::Length(2), true));
        assert!(!d.close);
        assert_eq!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-App: a\r\n\r\n"
        );
    }

    #[test]
    fn close_delimited_bodies_close_both_sides() {
        let (r, d, out) = run("HTTP/1.0 200 OK\r\n\r\n", CLIENT);
        assert_eq!(r.framing, Framing::UntilClose);
        assert!(!r.reusable && d.close);
        assert!(out.ends_with("Connection: close\r\n\r\n"));
    }

    #[test]
    fn chunked_is_dechunked_for_http10_clients() {
        let client = ClientSide {
            is_head: false,
            http10: true,
            keep_alive: true,
            upgrade: None,
        };
        let (r, d, out) = run(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            client,
        );
        assert!(r.reusable && d.dechunk && d.close);
        assert!(!out.contains("chunked"));
    }

    #[test]
    fn head_and_204_have_no_body() {
        let head = ClientSide {
            is_head: true,
            ..CLIENT
        };
        assert_eq!(
            run("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", head)
                .0
                .framing,
            Framing::None
        );
        assert_eq!(
            run("HTTP/1.1 204 No Content\r\n\r\n", CLIENT).0.framing,
            Framing::None
        );
        let (r, _, _) = run("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", head);
        assert!(
            !r.reusable,
            "a HEAD response announcing a body must not be reused"
        );
        assert!(run("HTTP/1.1 204 No Content\r\n\r\n", CLIENT).0.reusable);
        assert!(run("HTTP/1.1 100 Continue\r\n\r\n", CLIENT).0.interim);
    }

    #[test]
    fn switching_protocols_keeps_the_upgrade_headers() {
        let upgrade = ClientSide {
            upgrade: Some("websocket"),
            ..CLIENT
        };
        let raw = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n";
        let (r, _, out) = run(raw, upgrade);
        assert!(r.upgraded && !r.reusable && !r.interim);
        assert!(
            out.contains(
                "Sec-WebSocket-Accept: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
            ),
            "{out}"
        );
        let mut out = Vec::new();
        let h2c = ClientSide {
            upgrade: Some("h2c"),
            ..CLIENT
        };
        assert!(
            parse(raw.as_bytes(), h2c, &mut out).is_err(),
            "101 to another protocol"
        );
        assert!(
            parse(raw.as_bytes(), CLIENT, &mut out).is_err(),
            "101 to a request that did not ask"
        );
    }

    #[test]
    fn malformed_responses_are_errors() {
        let mut out = Vec::new();
        assert!(parse(b"HTTP/1.1 abc\r\n\r\n", CLIENT, &mut out).is_err());
        assert!(parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            CLIENT,
            &mut out
        )
        .is_err());
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Len", CLIENT, &mut out)
            .unwrap()
            .is_none());
    }
}
