//! A route's guards on real sockets: address rules (IPv4, IPv6, the PROXY protocol's
//! address, a trusted proxy's X-Forwarded-For), basic auth from htpasswd files made by
//! the tools users make them with, `satisfy`, reloads, and what a refusal leaves in the
//! metrics and the access log. A refused request never reaches the server: each test
//! asks the backend how many requests it saw.

use super::harness::*;
use std::net::SocketAddr;
use tokio::net::TcpSocket;

/// A client connection from `source` (any address of 127.0.0.0/8, or ::1).
async fn connect_from(source: &str, to: SocketAddr) -> Client {
    let source = SocketAddr::new(source.parse().unwrap(), 0);
    let socket = match source {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    }
    .unwrap();
    socket.bind(source).unwrap();
    Client::from_stream(socket.connect(to).await.unwrap())
}

/// The status of `GET path` from `source`, with `headers` (whole lines).
async fn status_from(source: &str, to: SocketAddr, path: &str, headers: &str) -> u16 {
    let mut c = connect_from(source, to).await;
    c.send(&format!("GET {path} HTTP/1.1\r\nHost: t\r\n{headers}\r\n"))
        .await;
    c.read_reply().await.unwrap().status
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Authorization: Basic {token}\r\n")
}

/// Requests the backend at `server` has seen.
async fn seen(server: SocketAddr) -> u64 {
    backend_stats(server).await.1
}

#[tokio::test]
async fn a_denied_address_gets_403_and_the_server_sees_nothing() {
    let server = backend("a").await;
    let p = proxy(&format!(
        "[[route]]\npath = \"/actuator/\"\nupstream = \"app\"\naccess = [\"deny 127.0.0.3\", \"allow 127.0.0.0/30\", \"deny all\"]\n\
         [[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{server}\"]\n"
    ));
    let before = seen(server).await;
    assert_eq!(
        status_from("127.0.0.2", p.addr, "/actuator/env", "").await,
        200
    );
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/actuator/env", "").await,
        200
    );
    assert_eq!(
        seen(server).await,
        before + 2 + 1,
        "two passed (and one stats GET)"
    );
    let before = seen(server).await;
    // First match wins: .3 is denied before the /30 allows it; .9 falls to deny all.
    for source in ["127.0.0.3", "127.0.0.9"] {
        let mut c = connect_from(source, p.addr).await;
        let reply = c.get("/actuator/heapdump").await;
        assert_eq!(reply.status, 403, "{source}");
        // Refused without a body left unread: the connection is kept.
        assert_eq!(c.get("/other").await.status, 200, "{source}");
    }
    assert_eq!(
        seen(server).await,
        before + 2 + 1,
        "only the two /other got through"
    );
    p.until("2 refused", |s| {
        let route = &s.routes[0];
        route.refused == [2, 0] && route.responses[3] == 2
    })
    .await;
    // The path as the app will read it picks the route: encoded letters, doubled
    // slashes, an encoded slash after a dot segment do not reach the open `/`.
    let before = seen(server).await;
    for path in [
        "/%61ctuator/env",
        "//actuator/env",
        "/actuator%2Fenv",
        "/x/..%2Factuator/env",
    ] {
        let status = status_from("127.0.0.9", p.addr, path, "").await;
        assert!(status == 403 || status == 400, "{path}: {status}");
    }
    assert_eq!(seen(server).await, before + 1, "none reached the server");
}

#[tokio::test]
async fn ipv6_rules_match_ipv6_clients() {
    let server = backend("a").await;
    let p = proxy_with(
        &format!(
            "[[route]]\nupstream = \"app\"\naccess = [\"deny ::1/128\", \"allow all\"]\n[upstream.app]\nservers = [\"{server}\"]\n"
        ),
        "[[listener]]\nbind = \"[::1]:0\"\n",
    );
    assert_eq!(status_from("::1", p.addr, "/", "").await, 403);
    let p = proxy_with(
        &format!(
            "[[route]]\nupstream = \"app\"\naccess = [\"allow ::1\", \"deny all\"]\n[upstream.app]\nservers = [\"{server}\"]\n"
        ),
        "[[listener]]\nbind = \"[::1]:0\"\n",
    );
    assert_eq!(status_from("::1", p.addr, "/", "").await, 200);
}

#[tokio::test]
async fn the_proxy_protocol_s_address_is_the_one_judged() {
    let server = backend("a").await;
    let p = proxy_with(
        &format!(
            "[[route]]\nupstream = \"app\"\naccess = [\"deny 203.0.113.0/24\", \"allow all\"]\n[upstream.app]\nservers = [\"{server}\"]\n"
        ),
        "[[listener]]\nbind = \"127.0.0.1:0\"\nproxy_protocol = true\n",
    );
    for (client, status) in [("203.0.113.7", 403), ("198.51.100.7", 200)] {
        let mut c = Client::connect(p.addr).await;
        c.send(&format!(
            "PROXY TCP4 {client} 127.0.0.1 40000 80\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n"
        ))
        .await;
        assert_eq!(c.read_reply().await.unwrap().status, status, "{client}");
    }
}

#[tokio::test]
async fn a_trusted_proxy_s_forwarded_for_is_believed_and_a_stranger_s_is_not() {
    let server = backend("a").await;
    let p = proxy(&format!(
        "trusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\"]\n\
         [[route]]\nupstream = \"app\"\naccess = [\"allow 198.51.100.0/24\", \"allow 127.0.0.2\", \"deny all\"]\n\
         [upstream.app]\nservers = [\"{server}\"]\n"
    ));
    let xff = |v: &str| format!("X-Forwarded-For: {v}\r\n");
    // Through the trusted balancer at 127.0.0.1: the last address it does not trust.
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/", &xff("198.51.100.7")).await,
        200
    );
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/", &xff("203.0.113.7")).await,
        403
    );
    assert_eq!(
        status_from(
            "127.0.0.1",
            p.addr,
            "/",
            &xff("198.51.100.7, 203.0.113.7, 10.0.0.9")
        )
        .await,
        403,
        "a spoofed address on the left does not count"
    );
    // Without the header, the trusted peer itself is the client.
    assert_eq!(status_from("127.0.0.1", p.addr, "/", "").await, 403);
    // A stranger's header is ignored: 127.0.0.2 is judged as itself, either way.
    assert_eq!(
        status_from("127.0.0.2", p.addr, "/", &xff("203.0.113.7")).await,
        200
    );
    assert_eq!(
        status_from("127.0.0.3", p.addr, "/", &xff("198.51.100.7")).await,
        403
    );
}

/// `htpasswd -nbB USER PASSWORD` (bcrypt) or `openssl passwd -apr1 PASSWORD`, as the
/// line it prints.
fn hashed(tool: &str, user: &str, password: &str) -> String {
    let mut command = std::process::Command::new(crate::support::tool(tool));
    match tool {
        "htpasswd" => command.args(["-nbB", user, password]),
        _ => command.args(["passwd", "-apr1", password]),
    };
    let o = command.output().unwrap();
    assert!(o.status.success(), "{tool}: {o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    let line = text.trim();
    match tool {
        "htpasswd" => line.to_string(),
        _ => format!("{user}:{line}"),
    }
}

fn auth_config(server: SocketAddr, file: &std::path::Path, extra: &str) -> String {
    format!(
        "[[route]]\npath = \"/admin/\"\nupstream = \"app\"\nauth_basic = {{ realm = \"ops \\\"east\\\"\", user_file = {:?} }}\n{extra}\n\
         [[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{server}\"]\n",
        file.display().to_string()
    )
}

#[tokio::test]
#[ignore = "needs htpasswd and openssl"]
async fn basic_auth_with_files_made_by_htpasswd_and_openssl() {
    let bcrypt = hashed("htpasswd", "ann", "s3cret pass");
    let apr1 = hashed("openssl", "bob", "hunter2");
    let dir = TempDir::new("guards");
    let file = dir.file("htpasswd", &format!("# ops\n{bcrypt}\n{apr1}\n"));
    let server = backend("a").await;
    let p = proxy(&auth_config(server, &file, ""));
    let before = seen(server).await;
    let mut c = Client::connect(p.addr).await;
    let reply = c.get("/admin/").await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("www-authenticate"),
        Some("Basic realm=\"ops \\\"east\\\"\"")
    );
    for (user, password, status) in [
        ("ann", "wrong", 401),
        ("nobody", "s3cret pass", 401),
        ("bob", "hunter2 ", 401),
        ("ann", "s3cret pass", 200),
        ("bob", "hunter2", 200),
        // Remembered now: the same answer without a hash computed.
        ("ann", "s3cret pass", 200),
    ] {
        c.send(&format!(
            "GET /admin/x HTTP/1.1\r\nHost: t\r\n{}\r\n",
            basic(user, password)
        ))
        .await;
        let reply = c.read_reply().await.unwrap();
        assert_eq!(reply.status, status, "{user}:{password}");
    }
    c.send("GET /admin/x HTTP/1.1\r\nHost: t\r\nAuthorization: Basic !!notbase64\r\n\r\n")
        .await;
    assert_eq!(c.read_reply().await.unwrap().status, 401);
    // Two Authorization fields: sluice would check one and the app might read the other.
    let two = format!("{}{}", basic("ann", "s3cret pass"), basic("root", "x"));
    c.send(&format!("GET /admin/x HTTP/1.1\r\nHost: t\r\n{two}\r\n"))
        .await;
    assert_eq!(c.read_reply().await.unwrap().status, 401);
    assert_eq!(
        seen(server).await,
        before + 3 + 1,
        "only the right passwords got through"
    );
    // Counted as each is recorded, just after its answer went out.
    p.until("6 refused", |s| s.routes[0].refused == [0, 6])
        .await;
}

#[tokio::test]
async fn an_htpasswd_edit_takes_effect_on_reload_and_a_bad_one_keeps_the_old() {
    let server = backend("a").await;
    let dir = TempDir::new("guards");
    // {SHA} of "password", then of "secret" (`htpasswd -nbs`).
    let file = dir.file("htpasswd", "ann:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n");
    let config = auth_config(server, &file, "");
    let p = proxy(&config);
    let whole =
        format!("shutdown_grace = \"2s\"\n{config}\n[[listener]]\nbind = \"127.0.0.1:0\"\n");
    let with = |password: &str| basic("ann", password);
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/admin/", &with("password")).await,
        200
    );
    std::fs::write(&file, "ann:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n").unwrap();
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/admin/", &with("password")).await,
        200,
        "read with the config, not on every request"
    );
    p.try_reload(&whole).expect("reload");
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/admin/", &with("password")).await,
        401
    );
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/admin/", &with("secret")).await,
        200
    );
    // A plain-text password: the reload is refused with the file's line, the old
    // users stay.
    std::fs::write(
        &file,
        "ann:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\nbob:hunter2\n",
    )
    .unwrap();
    let refused = p.try_reload(&whole).expect_err("refused").to_string();
    assert!(
        refused.contains("htpasswd:2:1") && refused.contains("plain-text"),
        "{refused}"
    );
    assert_eq!(
        status_from("127.0.0.1", p.addr, "/admin/", &with("secret")).await,
        200
    );
}

#[tokio::test]
async fn satisfy_any_lets_an_allowed_address_in_without_a_password() {
    let server = backend("a").await;
    let dir = TempDir::new("guards");
    let file = dir.file("htpasswd", "ann:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n");
    let rules = "access = [\"allow 127.0.0.2\", \"deny all\"]";
    let any = proxy(&auth_config(
        server,
        &file,
        &format!("{rules}\nsatisfy = \"any\""),
    ));
    let all = proxy(&auth_config(server, &file, rules));
    let right = basic("ann", "password");
    // (source, credentials) -> (any, all): nginx's answers for the same rules.
    for (source, credentials, expected) in [
        ("127.0.0.2", "", (200, 401)),
        ("127.0.0.2", right.as_str(), (200, 200)),
        ("127.0.0.3", "", (401, 403)),
        ("127.0.0.3", right.as_str(), (200, 403)),
    ] {
        let got = (
            status_from(source, any.addr, "/admin/", credentials).await,
            status_from(source, all.addr, "/admin/", credentials).await,
        );
        assert_eq!(got, expected, "{source} {credentials:?}");
    }
}

#[tokio::test]
#[ignore = "needs curl"]
async fn http2_clients_get_the_same_refusals() {
    let server = backend("a").await;
    let dir = TempDir::new("guards");
    let file = dir.file("htpasswd", "ann:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n");
    let p = proxy_with(
        &auth_config(
            server,
            &file,
            "access = [\"allow 127.0.0.1\", \"deny all\"]",
        ),
        "[[listener]]\nbind = \"127.0.0.1:0\"\nhttp2 = true\n",
    );
    let url = format!("http://{}/admin/", p.addr);
    let ask = |extra: &[&str]| {
        let mut args = vec![
            "-s",
            "-o",
            "/dev/null",
            "-D",
            "-",
            "--http2-prior-knowledge",
        ];
        args.extend_from_slice(extra);
        args.push(&url);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let (_, head) = curl(&ask(&[])).await;
    assert!(head.starts_with("HTTP/2 401"), "{head}");
    assert!(
        head.contains("www-authenticate: Basic realm=\"ops \\\"east\\\"\""),
        "{head}"
    );
    let (_, head) = curl(&ask(&["-u", "ann:password"])).await;
    assert!(head.starts_with("HTTP/2 200"), "{head}");
    let (_, head) = curl(&ask(&["-u", "ann:password", "--interface", "127.0.0.2"])).await;
    assert!(head.starts_with("HTTP/2 403"), "{head}");
}

#[tokio::test]
async fn the_access_log_names_the_user_and_the_forwarded_client() {
    let server = backend("a").await;
    let dir = TempDir::new("guards");
    let file = dir.file("htpasswd", "ann:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n");
    let log = dir.0.join("access.log");
    let config = format!(
        "access_log = {:?}\ntrusted_proxies = [\"127.0.0.1\"]\n{}",
        log.display().to_string(),
        auth_config(server, &file, "")
    );
    let p = proxy(&config);
    let xff = "X-Forwarded-For: 198.51.100.7\r\n";
    for credentials in [
        basic("ann", "password"),
        basic("ann", "nope"),
        String::new(),
    ] {
        let headers = format!("{xff}{credentials}");
        status_from("127.0.0.1", p.addr, "/admin/", &headers).await;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().count() >= 3 || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    // Each connection may land on another worker, each with its own log buffer: the
    // lines come in any order.
    let mut got: Vec<(&str, &str)> = lines
        .iter()
        .map(|line| {
            assert!(line.starts_with("198.51.100.7 - "), "{line}");
            let user = line["198.51.100.7 - ".len()..].split(' ').next().unwrap();
            let status = line.split("\" ").nth(1).unwrap().split(' ').next().unwrap();
            (user, status)
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [("-", "401"), ("ann", "200"), ("ann", "401")],
        "{text}"
    );
}

/// `sluice check FILE`: its exit code and what it wrote to stdout and stderr.
fn check(file: &std::path::Path) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("check")
        .arg(file)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn check_lists_every_guard_problem_at_once_and_warns_of_open_operator_pages() {
    let dir = TempDir::new("guards-check");
    let users = dir.file(
        "htpasswd",
        "ann:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\nbob:hunter2\n",
    );
    let bad = dir.file(
        "bad.toml",
        &format!(
            "[[listener]]\nbind = \"0.0.0.0:8080\"\n[[route]]\npath = \"/admin/\"\nupstream = \"app\"\n\
             access = [\"allow 10.0.0.0/33\", \"permit all\"]\nsatisfy = \"some\"\n\
             auth_basic = {{ realm = \"ops\", user_file = {:?} }}\n\
             [upstream.app]\nservers = [\"127.0.0.1:9\"]\n",
            users.display().to_string()
        ),
    );
    let (code, text) = check(&bad);
    assert_ne!(code, 0, "{text}");
    for expected in ["bad.toml:6:11", "bad.toml:6:32", "bad.toml:7:11"] {
        assert!(text.contains(expected), "{expected} in:\n{text}");
    }
    // Once the config is valid, the users' file is read: each bad line named.
    let text = std::fs::read_to_string(&bad).unwrap();
    let fixed = text
        .replace(
            "\"allow 10.0.0.0/33\", \"permit all\"",
            "\"allow 10.0.0.0/8\"",
        )
        .replace("\"some\"", "\"any\"");
    let (code, text) = check(&dir.file("users.toml", &fixed));
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("htpasswd:2:1: user \"bob\": a plain-text password"),
        "{text}"
    );
    let open = dir.file(
        "open.toml",
        "[[listener]]\nbind = \"0.0.0.0:8080\"\n[[route]]\npath = \"/actuator/\"\nupstream = \"app\"\n\
         [[route]]\npath = \"/metrics\"\nupstream = \"app\"\naccess = [\"allow 10.0.0.0/8\", \"deny all\"]\n\
         [upstream.app]\nservers = [\"127.0.0.1:9\"]\n",
    );
    let (code, text) = check(&open);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("warning: ")
            && text.contains("open.toml:3:1")
            && text.contains("\"/actuator/\""),
        "{text}"
    );
    assert_eq!(
        text.matches("warning").count(),
        1,
        "the guarded /metrics is fine: {text}"
    );
    // Address rules behind a PROXY header anyone may send judge what the client wrote.
    let spoofable = dir.file(
        "proxy.toml",
        "[[listener]]\nbind = \"127.0.0.1:8080\"\nproxy_protocol = true\n[[route]]\nupstream = \"app\"\n\
         access = [\"allow 10.0.0.0/8\", \"deny all\"]\n[upstream.app]\nservers = [\"127.0.0.1:9\"]\n",
    );
    let (code, text) = check(&spoofable);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("warning: ") && text.contains("proxy_protocol_from"),
        "{text}"
    );
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_rate() {
    let server = backend("a").await;
    let p = proxy(&format!(
        "trusted_proxies = [\"127.0.0.1\"]\n[limit.per_client]\nrate = \"1/m\"\n\
         [[route]]\nupstream = \"app\"\nlimit = \"per_client\"\n[upstream.app]\nservers = [\"{server}\"]\n"
    ));
    let from = |ip: &str| format!("X-Forwarded-For: {ip}\r\n");
    let mut got = Vec::new();
    for ip in ["198.51.100.1", "198.51.100.2", "198.51.100.1"] {
        got.push(status_from("127.0.0.1", p.addr, "/", &from(ip)).await);
    }
    assert_eq!(
        got,
        [200, 200, 429],
        "the balancer's clients are told apart"
    );
}

/// A user's line hashed with bcrypt at `cost` (`htpasswd -nbB -C COST`).
fn bcrypt_at(cost: u32, user: &str, password: &str) -> String {
    let o = std::process::Command::new(crate::support::tool("htpasswd"))
        .args(["-nbB", "-C", &cost.to_string(), user, password])
        .output()
        .unwrap();
    assert!(o.status.success(), "htpasswd: {o:?}");
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// How long `GET path` with `credentials` takes on `c`, and its status.
async fn timed(c: &mut Client, path: &str, credentials: &str) -> (u16, std::time::Duration) {
    let started = std::time::Instant::now();
    c.send(&format!(
        "GET {path} HTTP/1.1\r\nHost: t\r\n{credentials}\r\n"
    ))
    .await;
    let status = c.read_reply().await.unwrap().status;
    (status, started.elapsed())
}

/// bcrypt at cost 11 takes a hundred ms or more: a remembered password answers in a
/// fraction of that, and a route with `cache = "0s"` hashes every time, even when
/// another route with the same file remembers the password. One connection, so one
/// worker: each worker remembers for itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs htpasswd"]
async fn a_verified_password_is_remembered_per_route_cache() {
    let line = bcrypt_at(11, "ann", "pw");
    let server = backend("a").await;
    let dir = TempDir::new("guards");
    let file = dir.file("htpasswd", &format!("{line}\n"));
    let auth = |path: &str, cache: &str| {
        format!(
            "[[route]]\npath = \"{path}\"\nupstream = \"app\"\nauth_basic = {{ realm = \"r\", user_file = {:?}, cache = \"{cache}\" }}\n",
            file.display().to_string()
        )
    };
    let p = proxy(&format!(
        "{}{}[upstream.app]\nservers = [\"{server}\"]\n",
        auth("/kept/", "60s"),
        auth("/each/", "0s")
    ));
    let right = basic("ann", "pw");
    let mut c = Client::connect(p.addr).await;
    let (status, first) = timed(&mut c, "/kept/", &right).await;
    assert_eq!(status, 200);
    let (status, again) = timed(&mut c, "/kept/", &right).await;
    assert_eq!(status, 200);
    let (status, each) = timed(&mut c, "/each/", &right).await;
    assert_eq!(status, 200);
    println!("first {first:?}, remembered {again:?}, cache 0s {each:?}");
    assert!(again * 3 < first, "remembered: {again:?} against {first:?}");
    assert!(
        again * 3 < each,
        "the 0s route hashed: {each:?} against {again:?}"
    );
}
