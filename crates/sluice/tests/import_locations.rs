//! nginx's location matching and rewriting, judged against nginx itself (issue 52): an
//! nginx.conf with exact, prefix, `^~`, regex (`~`, `~*`, with groups and named groups),
//! nested and rewriting locations and `proxy_pass` URI parts runs in a real nginx; its
//! `sluice import` runs in `sluice serve`; a table of requests (raw paths, sent byte for
//! byte) gets the same answer from both: the same location (each names itself in a
//! header the backend echoes), the same path at the backend, the same redirect. But for
//! one difference sluice keeps on purpose: a path with a dot segment is refused.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;
use support::nginx::{import, on_free_ports, serve, start_nginx};
use support::TempDir;

/// A backend answering each request with the `X-Loc` it was sent and its request
/// target: which location sent it, and with what path.
fn echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || answer(conn));
        }
    });
    addr
}

fn answer(mut conn: TcpStream) {
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.split(' ').nth(1).unwrap_or("?");
    let loc = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("X-Loc: ")
                .or_else(|| l.strip_prefix("x-loc: "))
        })
        .unwrap_or("-");
    let body = format!("{loc} {target}");
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes());
}

/// The locations; each names itself to the backend in `X-Loc`.
const LOCATIONS: &str = r#"
    location = /exact { proxy_set_header X-Loc exact; proxy_pass http://app; }
    location /exact { proxy_set_header X-Loc exact-prefix; proxy_pass http://app; }
    location / { proxy_set_header X-Loc root; proxy_pass http://app; }
    location /docs/ { proxy_set_header X-Loc docs; proxy_pass http://app; }
    location ^~ /static/ { proxy_set_header X-Loc static; proxy_pass http://app/assets/; }
    location /static/img/ { proxy_set_header X-Loc static-img; proxy_pass http://app; }
    location ~ \.png$ { proxy_set_header X-Loc png; proxy_pass http://app; }
    location ~* \.jpe?g$ { proxy_set_header X-Loc jpg-ci; proxy_pass http://app; }
    location ~ ^/users/(\d+)/posts/(\d+)$ { proxy_set_header X-Loc user-post; proxy_pass http://app/u$1/p$2; }
    location ~ ^/users/ { proxy_set_header X-Loc users; proxy_pass http://app; }
    location /nest/ {
        proxy_set_header X-Loc nest;
        proxy_pass http://app;
        location ~ \.png$ { proxy_set_header X-Loc nest-png; proxy_pass http://app; }
    }
    location /api/ { proxy_set_header X-Loc api; proxy_pass http://app/v2/; }
    location /strip/ { proxy_set_header X-Loc strip; proxy_pass http://app/; }
    location /old/ { rewrite ^/old/(.*)$ /new/$1 last; }
    location /q/ { rewrite ^/q/(.*)$ /new/$1?x=1 last; }
    location /new/ { proxy_set_header X-Loc new; proxy_pass http://app/fresh/; }
    location /brk/ { proxy_set_header X-Loc brk; rewrite ^/brk/(.*)$ /b/$1 break; proxy_pass http://app/ignored/; }
    location /noflag/ { rewrite ^/noflag/(.*)$ /tmpx/$1; rewrite ^/tmpx/(.*)$ /new/$1; }
    location /moved/ { rewrite ^/moved/(.*)$ /there/$1 permanent; }
    location /tmp/ { rewrite ^/tmp/(.*)$ /there/$1 redirect; }
    location /ext/ { rewrite ^/ext/(.*)$ https://example.com/$1? last; }
    location ~ ^/go/(?<slug>[a-z]+)$ { return 301 https://example.com/s/$slug; }
    location /c/ { proxy_set_header X-Loc c; rewrite ^/c/x(.*)$ /c/$1 last; proxy_pass http://app; }
    location /loop/ { rewrite ^/loop/(.*)$ /loop/$1 last; }
"#;

fn nginx_conf(dir: &Path, port: u16, app: SocketAddr) -> String {
    let d = dir.display();
    format!(
        "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 64; }}\n\
         http {{\n  access_log off;\n  absolute_redirect off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
           upstream app {{ server {app}; }}\n\
           server {{\n    listen 127.0.0.1:{port};\n{LOCATIONS}\n    location /oldfiles/ {{ rewrite ^/oldfiles/(.*)$ /files/$1 last; }}\n    location /files/ {{ root {d}/www; }}\n  }}\n}}\n"
    )
}

/// The requests, raw (sent as they are, `..` and `%` included).
const PATHS: &[&str] = &[
    "/exact",
    "/exact?x=1",
    "/exactly",
    "/x",
    "/docs/a.txt",
    "/docs/a.png",
    "/docs/A.PNG",
    "/docs/A.JPG",
    "/static/a.png",
    "/STATIC/a.png",
    "/static/img/a.png",
    "/static/img/a.txt",
    "/static/",
    "/users/1/posts/2?a=b",
    "/users/%31/posts/2",
    "/users/1",
    "/users/1/pic.png",
    "/nest/a.png",
    "/nest/a.txt",
    "/api/v1/x?q=1",
    "/api?z=1",
    "/api//x//y",
    "/docs//a//b",
    "/api/a%2Fb",
    "/api/a%20b",
    "/strip/a/b",
    "/old/x?y=1",
    "/q/x?y=2",
    "/noflag/z?k=1",
    "/brk/x?y=1",
    "/moved/x?y=1",
    "/tmp/x",
    "/ext/x?y=1",
    "/go/abc",
    "/go/ABC",
    "/c/xxxxxxxxxx",
    "/c/xxxxxxxxxxx",
    "/loop/x",
    "/oldfiles/a.txt",
    "/files/a.txt",
];

/// What a request got: its status, its `Location`, and (200) the echo of which
/// location sent it where.
fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = conn.read_to_string(&mut text);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = head
        .lines()
        .find_map(|l| {
            l.split_once(": ")
                .filter(|(n, _)| n.eq_ignore_ascii_case("location"))
        })
        .map_or("", |(_, v)| v);
    let body = if status == 200 { body } else { "" };
    (status, location.to_string(), body.to_string())
}

#[test]
#[ignore = "needs nginx"]
fn imported_locations_and_rewrites_answer_as_nginx_does() {
    let app = echo();
    let dir = TempDir::new("import-locations");
    // A file a rewrite leads to, under a `root` both serve.
    std::fs::create_dir_all(dir.0.join("www/files")).unwrap();
    std::fs::write(dir.0.join("www/files/a.txt"), "file-a").unwrap();
    let (_nginx, port, conf) = start_nginx(&dir.0, |port| nginx_conf(&dir.0, port, app));
    let out = import(&conf, &[]);
    let toml = String::from_utf8(out.stdout).unwrap();
    let notes = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{notes}\n{toml}");
    // The summary names what did not carry over; every location and rewrite did.
    let summary = notes.lines().last().unwrap_or_default();
    assert!(summary.contains(" not carried over (daemon"), "{summary}");
    assert!(
        !summary.contains("location") && !summary.contains("rewrite"),
        "{summary}"
    );
    let (_sluice, sluice) = serve(&dir, &on_free_ports(&toml, port));
    let nginx: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut differ = Vec::new();
    for path in PATHS {
        let (theirs, ours) = (get(nginx, path), get(sluice, path));
        if theirs != ours {
            differ.push(format!("{path}: nginx {theirs:?}, sluice {ours:?}"));
        }
    }
    assert!(differ.is_empty(), "{}\n{notes}\n{toml}", differ.join("\n"));
    // Where sluice differs on purpose: a dot segment is refused, not resolved (a server
    // resolving it after sluice routed the path would escape the route).
    assert_eq!(get(sluice, "/api/x/../y").0, 400);
    assert_eq!(get(nginx, "/api/x/../y").2, "api /v2/y");
    // Not a comparison of two 404s: every kind of answer came up, from the locations
    // the table is about.
    let seen: Vec<(u16, String, String)> = PATHS.iter().map(|p| get(sluice, p)).collect();
    for (status, want) in [
        (200, "user-post /u1/p2"),
        (200, "nest-png /nest/a.png"),
        (200, "api /v2/v1/x?q=1"),
        (200, "new /fresh/x?x=1&y=2"),
        (200, "brk /b/x?y=1"),
        (200, "file-a"),
        (301, "/api/?z=1"),
        (302, "https://example.com/x"),
        (500, ""),
    ] {
        let hit = seen
            .iter()
            .any(|(s, location, body)| *s == status && (body == want || location == want));
        assert!(hit, "{status} {want} not among {seen:?}");
    }
}
