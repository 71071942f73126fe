//! Sticky sessions of a real `sluice serve`: a cookie of sluice's own naming the server,
//! and the application's session cookie learned from its responses. A session stays on
//! its server, across a reload too, and moves (once, then stays) when that server is
//! drained through the admin API.

use super::harness::*;
use std::net::SocketAddr;

async fn sluice(servers: &[SocketAddr], sticky: &str) -> (SluiceProcess, SocketAddr) {
    let admin = crate::support::free_addr();
    let list: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    let config = format!(
        "[admin]\nbind = \"{admin}\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{}]\nsticky = {sticky}\n",
        list.join(", ")
    );
    let child = SluiceProcess::serve("sluice.toml", &config, "warn").await;
    (child, admin)
}

async fn post(admin: SocketAddr, path: &str) -> u16 {
    let mut c = Client::connect(admin).await;
    c.send(&format!(
        "POST {path} HTTP/1.1\r\nHost: admin\r\nContent-Length: 0\r\n\r\n"
    ))
    .await;
    c.read_reply().await.unwrap().status
}

/// `n` requests with `cookie`: the backends that answered, and the `Set-Cookie`s got.
async fn through(
    proxy: SocketAddr,
    path: &str,
    cookie: &str,
    n: usize,
) -> (Vec<String>, Vec<String>) {
    let (mut by, mut set) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let mut c = Client::connect(proxy).await;
        let cookie_line = if cookie.is_empty() {
            String::new()
        } else {
            format!("Cookie: {cookie}\r\n")
        };
        c.send(&format!(
            "GET {path} HTTP/1.1\r\nHost: t\r\n{cookie_line}\r\n"
        ))
        .await;
        let reply = c.read_reply().await.unwrap();
        by.push(reply.header("x-backend").unwrap_or("-").to_string());
        set.extend(reply.header("set-cookie").map(str::to_string));
    }
    by.dedup();
    (by, set)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_keeps_a_session_on_its_server_across_a_reload_and_moves_it_when_drained() {
    let (a, b) = (backend("a").await, backend("b").await);
    let (child, admin) = sluice(
        &[a, b],
        "{ cookie = \"srv\", max_age = \"1h\", samesite = \"lax\" }",
    )
    .await;
    let proxy = child.addr();
    // The first answer binds the client; round robin alone would alternate.
    let (_, set) = through(proxy, "/", "", 1).await;
    let cookie = set[0].split(';').next().unwrap().to_string();
    assert!(
        set[0].contains("; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax"),
        "{set:?}"
    );
    let (by, again) = through(proxy, "/", &cookie, 20).await;
    assert_eq!(by.len(), 1, "one server for the session: {by:?}");
    assert!(
        again.is_empty(),
        "bound already, no cookie set again: {again:?}"
    );
    let home = by[0].clone();
    // A reload (as `sluice reload` does) keeps it where it is.
    assert_eq!(post(admin, "/api/reload").await, 200);
    assert_eq!(through(proxy, "/", &cookie, 10).await.0, vec![home.clone()]);
    // Drained: the session moves to the other server, is told so, and stays there.
    let home_addr = if home == "a" { a } else { b };
    assert_eq!(
        post(
            admin,
            &format!("/api/upstreams/app/servers/{home_addr}/drain")
        )
        .await,
        200
    );
    let (moved, told) = through(proxy, "/", &cookie, 1).await;
    assert_ne!(moved, vec![home.clone()]);
    let new_cookie = told[0].split(';').next().unwrap().to_string();
    assert_ne!(new_cookie, cookie);
    assert_eq!(through(proxy, "/", &new_cookie, 10).await.0, moved);
}

/// A backend that starts a session (`Set-Cookie: SID=NAME-N`) on `/login` and names
/// itself in `X-Backend`, over keep-alive connections.
async fn session_backend(name: &'static str) -> SocketAddr {
    use std::sync::atomic::{AtomicU32, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    static SESSIONS: AtomicU32 = AtomicU32::new(0);
    raw_backend(move |mut stream| async move {
        loop {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte).await {
                    Ok(1) => head.push(byte[0]),
                    _ => return,
                }
            }
            let set = if head.starts_with(b"GET /login") {
                let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
                format!("Set-Cookie: SID={name}-{n}; Path=/; HttpOnly\r\n")
            } else {
                String::new()
            };
            let reply =
                format!("HTTP/1.1 200 OK\r\nX-Backend: {name}\r\n{set}Content-Length: 0\r\n\r\n");
            if stream.write_all(reply.as_bytes()).await.is_err() {
                return;
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learned_session_stays_on_the_server_that_began_it_across_a_reload() {
    let (a, b) = (session_backend("a").await, session_backend("b").await);
    let (child, admin) = sluice(&[a, b], "{ learn = \"SID\", timeout = \"10m\" }").await;
    let proxy = child.addr();
    let mut sessions = Vec::new();
    for _ in 0..4 {
        let (by, set) = through(proxy, "/login", "", 1).await;
        let sid = set[0].split(';').next().unwrap().to_string();
        assert!(
            sid.starts_with(&format!("SID={}-", by[0])),
            "{sid} from {by:?}"
        );
        sessions.push((sid, by[0].clone()));
    }
    // Round robin began them on both servers; each stays on its own.
    assert!(sessions.iter().any(|(_, s)| s == "a") && sessions.iter().any(|(_, s)| s == "b"));
    for (sid, home) in &sessions {
        assert_eq!(
            &through(proxy, "/orders", sid, 6).await.0,
            &vec![home.clone()],
            "{sid}"
        );
    }
    assert_eq!(post(admin, "/api/reload").await, 200);
    for (sid, home) in &sessions {
        assert_eq!(
            &through(proxy, "/orders", sid, 3).await.0,
            &vec![home.clone()],
            "{sid}"
        );
    }
    // The admin API says how the upstream sticks, and how many sessions it knows.
    let reply = get(admin, "/api/upstreams").await;
    let all: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    let sticky = &all["upstreams"][0]["sticky"];
    assert_eq!(
        (sticky["mode"].as_str(), sticky["cookie"].as_str()),
        (Some("learn"), Some("SID"))
    );
    assert_eq!(sticky["sessions"], 4, "{sticky}");
    // An unknown session is balanced.
    let (by, _) = through(proxy, "/orders", "SID=never-made", 4).await;
    assert!(by.len() > 1, "{by:?}");
}
