//! HTTP/1.1 as bytes, with no I/O: parsing heads (`request`, `response`), checking a
//! request (`check`, `authority`, `head`), writing heads (`encode`) and sluice's own
//! replies (`reply`), and chunked bodies (`chunked`).
//!
//! This module must never touch a socket, a clock or the config: the stages that do call
//! it with bytes and get bytes or a verdict back, which is what lets the fuzzers and the
//! differential tests drive it alone.

pub mod authority;
pub mod check;
pub mod chunked;
pub mod encode;
pub mod head;
pub mod reply;
pub mod request;
pub mod response;

#[cfg(test)]
mod tests {
    //! The stages together, as a connection runs them: parse, check, route, encode.

    use super::check::{check, Request};
    use super::encode::{self, Delivery};
    use super::head::Framing;
    use super::request::{self, Rejection, MAX_HEADERS};
    use super::response::{self, Asked, Response};
    use crate::client::Client;

    type Run = Result<Option<(Request, String, String)>, Rejection>;

    /// A request head through every stage; the "route" is `host|path`, and only
    /// `websocket` upgrades are allowed.
    fn run_bytes(raw: &[u8]) -> Run {
        let client = Client::new(
            "10.0.0.9:40000".parse().unwrap(),
            "127.0.0.1:80".parse().unwrap(),
            "http",
        );
        let mut headers = request::header_slots();
        let Some(head) = request::parse(raw, &mut headers)? else {
            return Ok(None);
        };
        let mut checked = check(&head)?;
        let routed = format!("{}|{}", checked.routing_host(), checked.routing_path());
        let upgrade = checked.offered_upgrade.filter(|p| *p == "websocket");
        checked.request.upgrade = upgrade.map(str::to_string);
        let mut out = Vec::new();
        let lines = encode::request_head(
            &mut out,
            head.headers,
            (&checked, checked.path),
            &client,
            upgrade,
            None,
        );
        request::forwarded_lines_fit(lines)?;
        Ok(Some((
            checked.request,
            routed,
            String::from_utf8(out).unwrap(),
        )))
    }

    fn run(raw: &str) -> Run {
        run_bytes(raw.as_bytes())
    }

    #[derive(Clone, Copy)]
    struct ClientSide<'a> {
        is_head: bool,
        http10: bool,
        keep_alive: bool,
        upgrade: Option<&'a str>,
    }

    const CLIENT: ClientSide<'static> = ClientSide {
        is_head: false,
        http10: false,
        keep_alive: true,
        upgrade: None,
    };

    /// A response head through every stage, for a client like `client`.
    fn respond(
        raw: &[u8],
        client: ClientSide<'_>,
        out: &mut Vec<u8>,
    ) -> Result<Option<(Response, Delivery)>, &'static str> {
        let mut headers = response::header_slots();
        let Some(head) = response::parse(raw, &mut headers)? else {
            return Ok(None);
        };
        let asked = Asked {
            is_head: client.is_head,
            upgrade: client.upgrade,
        };
        let resp = response::classify(&head, asked)?;
        let delivery = Delivery::of(&resp, client.http10, client.keep_alive);
        encode::response_head(
            out,
            &head,
            &resp,
            (delivery, client.http10),
            None,
            Default::default(),
        );
        Ok(Some((resp, delivery)))
    }

    fn run_response(raw: &str, client: ClientSide<'_>) -> (Response, Delivery, String) {
        let mut out = Vec::new();
        let (r, d) = respond(raw.as_bytes(), client, &mut out).unwrap().unwrap();
        (r, d, String::from_utf8(out).unwrap())
    }

    #[test]
    fn rewrites_headers() {
        let raw = "GET /a?b=1 HTTP/1.1\r\nHost: Example.com:8080\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Forwarded-For: 1.2.3.4\r\nX-Real-IP: spoofed\r\nAccept: */*\r\n\r\n";
        let (req, routed, out) = run(raw).unwrap().unwrap();
        assert_eq!(routed, "Example.com|/a?b=1");
        assert_eq!(req.head_len, raw.len());
        assert!(req.keep_alive && !req.http10 && req.idempotent);
        assert_eq!(
            out,
            "GET /a?b=1 HTTP/1.1\r\nAccept: */*\r\nHost: Example.com:8080\r\nX-Forwarded-For: 1.2.3.4, 10.0.0.9\r\nX-Real-IP: 10.0.0.9\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: Example.com:8080\r\n\r\n"
        );
    }

    #[test]
    fn websocket_handshakes_keep_their_upgrade_headers() {
        let raw = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n";
        let (req, _, out) = run(raw).unwrap().unwrap();
        assert_eq!(req.upgrade.as_deref(), Some("websocket"));
        assert!(
            out.contains("Connection: Upgrade\r\nUpgrade: websocket\r\n")
                && out.contains("Sec-WebSocket-Key: k"),
            "{out}"
        );
        let refused = "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
        let (req, _, out) = run(refused).unwrap().unwrap();
        assert!(req.upgrade.is_none() && !out.contains("pgrade"), "{out}");
        let smuggle =
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket, h2c\r\n\r\n";
        let (_, _, out) = run(smuggle).unwrap().unwrap();
        assert!(
            out.contains("Upgrade: websocket\r\n") && !out.contains("h2c"),
            "{out}"
        );
    }

    #[test]
    fn every_forwarded_for_line_is_kept() {
        let raw = "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2, 3.3.3.3\r\n\r\n";
        let (_, _, out) = run(raw).unwrap().unwrap();
        assert!(
            out.contains("X-Forwarded-For: 1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.9\r\n"),
            "{out}"
        );
        let (_, routed, out) = run("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(routed, "a|/");
        assert!(out.starts_with("OPTIONS * HTTP/1.1\r\n"));
    }

    #[test]
    fn absolute_form_is_routed_by_its_host_and_sent_as_a_path() {
        let (_, routed, out) = run("GET http://evil.test:81/x HTTP/1.1\r\nHost: other\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(routed, "evil.test|/x");
        assert!(out.starts_with("GET /x HTTP/1.1\r\n"), "{out}");
        assert!(
            out.contains("Host: evil.test:81\r\n") && !out.contains("other"),
            "{out}"
        );
    }

    #[test]
    fn http10_keep_alive_needs_asking() {
        let (req, _, _) = run("GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!req.keep_alive && req.http10);
        let (req, _, _) = run("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(req.keep_alive);
    }

    #[test]
    fn rejections() {
        let status = |raw: &str| run(raw).unwrap_err().status;
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
        assert_eq!(status("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 405);
        assert_eq!(status("GET a HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n"),
            400
        );
        assert_eq!(status("G\0T / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: \r\n\r\n"), 400);
        assert_eq!(status("GET /a/../b HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET /a/%2E%2e/b HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET /a/. HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            501
        );
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: 1\r\n"))
            .collect();
        assert_eq!(
            status(&format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n")),
            431
        );
    }

    #[test]
    fn hosts_and_targets_are_strict() {
        let status = |raw: &str| run(raw).unwrap_err().status;
        for host in ["a b", "user@host", "a, b", "a:", "a:99999", "[::1"] {
            let raw = format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
            assert_eq!(status(&raw), 400, "Host: {host}");
        }
        assert_eq!(status("GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET * HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        let raw = b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n";
        let parsed = run_bytes(raw);
        assert_eq!(
            parsed.map(|_| ()).unwrap_err().status,
            400,
            "raw UTF-8 target"
        );
        let (_, routed, _) = run("GET / HTTP/1.1\r\nHost:  [::1]:8080 \r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(routed, "[::1]|/");
    }

    #[test]
    fn framing_headers_are_strict() {
        let status = |raw: &str| run(raw).unwrap_err().status;
        assert_eq!(
            status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        // Only SP and HTAB are whitespace: a no-break space makes it another coding.
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\u{a0}\r\n\r\n"),
            501
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \u{a0}5\r\n\r\n"),
            400
        );
    }

    #[test]
    fn http10_without_host_gets_one_per_attempt() {
        let (req, routed, out) = run("GET /x HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(req.needs_host);
        assert_eq!(routed, "|/x");
        assert!(
            !out.contains("Host:") && !out.contains("X-Forwarded-Host"),
            "{out}"
        );
        let (req, _, _) = run("GET /x HTTP/1.0\r\nHost: a\r\n\r\n").unwrap().unwrap();
        assert!(!req.needs_host);
    }

    #[test]
    fn what_sluice_forwards_stays_within_its_own_line_limit() {
        let lines = |n: usize| -> String { (0..n).map(|i| format!("X-{i}: 1\r\n")).collect() };
        // 100 client lines, Host among them: with the four forwarding headers, 104.
        let raw = format!("GET / HTTP/1.1\r\nHost: a\r\n{}\r\n", lines(99));
        assert_eq!(run(&raw).unwrap_err().status, 431);
        let raw = format!("GET / HTTP/1.1\r\nHost: a\r\n{}\r\n", lines(95));
        let (_, _, out) = run(&raw).unwrap().unwrap();
        let forwarded = out.matches("\r\n").count() - 2;
        assert_eq!(forwarded, 100, "{out}");
        let mut again = request::header_slots();
        assert!(request::parse(out.as_bytes(), &mut again).is_ok());
    }

    #[test]
    fn partial_heads_ask_for_more() {
        assert!(run("GET / HTTP/1.1\r\nHost: a\r\n").unwrap().is_none());
    }

    #[test]
    fn ports_are_stripped_from_hosts() {
        use super::check::host_without_port;
        assert_eq!(host_without_port("a.com:80"), "a.com");
        assert_eq!(host_without_port("a.com"), "a.com");
        assert_eq!(host_without_port("[::1]:80"), "[::1]");
    }

    #[test]
    fn keeps_end_to_end_headers_and_drops_hop_by_hop() {
        let (r, d, out) = run_response("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive\r\nX-App: a\r\n\r\nok", CLIENT);
        assert_eq!((r.framing, r.reusable), (Framing::Length(2), true));
        assert!(!d.close);
        assert_eq!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-App: a\r\n\r\n"
        );
    }

    #[test]
    fn close_delimited_bodies_close_both_sides() {
        let (r, d, out) = run_response("HTTP/1.0 200 OK\r\n\r\n", CLIENT);
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
        let (r, d, out) = run_response(
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
            run_response("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", head)
                .0
                .framing,
            Framing::None
        );
        assert_eq!(
            run_response("HTTP/1.1 204 No Content\r\n\r\n", CLIENT)
                .0
                .framing,
            Framing::None
        );
        let (r, _, _) = run_response("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", head);
        assert!(
            !r.reusable,
            "a HEAD response announcing a body must not be reused"
        );
        assert!(
            run_response("HTTP/1.1 204 No Content\r\n\r\n", CLIENT)
                .0
                .reusable
        );
        assert!(
            run_response("HTTP/1.1 100 Continue\r\n\r\n", CLIENT)
                .0
                .interim
        );
    }

    #[test]
    fn switching_protocols_keeps_the_upgrade_headers() {
        let upgrade = ClientSide {
            upgrade: Some("websocket"),
            ..CLIENT
        };
        let raw = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n";
        let (r, _, out) = run_response(raw, upgrade);
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
            respond(raw.as_bytes(), h2c, &mut out).is_err(),
            "101 to another protocol"
        );
        assert!(
            respond(raw.as_bytes(), CLIENT, &mut out).is_err(),
            "101 to a request that did not ask"
        );
    }

    #[test]
    fn malformed_responses_are_errors() {
        let mut out = Vec::new();
        assert!(respond(b"HTTP/1.1 abc\r\n\r\n", CLIENT, &mut out).is_err());
        assert!(respond(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            CLIENT,
            &mut out
        )
        .is_err());
        assert!(respond(b"HTTP/1.1 200 OK\r\nContent-Len", CLIENT, &mut out)
            .unwrap()
            .is_none());
    }
}
