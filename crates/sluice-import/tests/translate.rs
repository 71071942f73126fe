//! What `sluice import` makes of the directives the field notes' configs use, on a
//! config written for this test (the corpus test covers real-world ones).

use std::path::PathBuf;

/// A test's directory, removed when dropped (a failed test's too).
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("sluice-import-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }
}

impl std::ops::Deref for Dir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `files` (the first the main one; `DIR` in them is replaced by their
/// directory) and imports them; the directory stays until what this returns is dropped.
fn import(name: &str, files: &[(&str, &str)]) -> (sluice_import::Imported, Dir) {
    let dir = Dir::new(name);
    std::fs::create_dir_all(dir.join("www")).unwrap();
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text.replace("DIR", &dir.display().to_string())).unwrap();
    }
    let main: PathBuf = dir.join(files[0].0);
    (sluice_import::import(&main).unwrap(), dir)
}

const CHAT: &str = r#"
worker_processes auto;
events { worker_connections 1024; }
http {
    server_tokens off;
    set_real_ip_from 10.0.0.0/8;
    limit_req_zone $binary_remote_addr zone=api:10m rate=10r/s;
    include conf.d/*.conf;
    upstream chat {
        hash $arg_room consistent;
        server 10.0.0.1:8080 weight=2 max_fails=3 fail_timeout=30s;
        server 10.0.0.2:8080;
        server 10.0.0.3:8080 backup;
        keepalive 32;
    }
    server {
        listen 80 default_server;
        server_name chat.example.com;
        return 301 https://$host$request_uri;
    }
    server {
        listen 443 ssl http2 proxy_protocol;
        server_name chat.example.com;
        ssl_certificate /etc/letsencrypt/live/chat/fullchain.pem;
        ssl_certificate_key /etc/letsencrypt/live/chat/privkey.pem;
        proxy_set_header Host $host;
        proxy_set_header X-Request-Start $msec;
        proxy_set_header X-User $http_x_user;
        location / {
            proxy_pass http://chat;
            proxy_read_timeout 3600s;
            limit_req zone=api burst=20 nodelay;
        }
        location = /health { return 200 "ok"; }
        location ~ \.php$ { deny all; }
    }
}
"#;

const CONF_D: &str = "server { listen 8080; location /static/ { root DIR/www; add_header Cache-Control \"max-age=60\"; } }\n";

#[test]
fn the_field_notes_directives_carry_over() {
    let (imported, dir) = import(
        "chat",
        &[("nginx.conf", CHAT), ("conf.d/static.conf", CONF_D)],
    );
    let toml = &imported.toml;
    let config =
        sluice_config::parse("imported.toml", toml).unwrap_or_else(|e| panic!("{toml}\n{e}"));
    assert_eq!(config.workers, 0, "{toml}");
    // The upstream: hashing on the room kept as nginx's ketama, weights, backup, pool.
    let chat = config
        .upstreams
        .iter()
        .find(|u| u.name == "chat")
        .expect(toml);
    let names: Vec<&str> = chat.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"]);
    assert_eq!(chat.servers[0].weight, 2);
    assert!(chat.servers[2].backup);
    assert!(toml.contains("hash_key = \"$arg_room\""), "{toml}");
    assert!(
        toml.contains("keepalive = 32") && toml.contains("max_fails = 3"),
        "{toml}"
    );
    assert!(toml.contains("read_timeout = \"3600s\""), "{toml}");
    // Three listeners; port 80 redirects, 443 has the certificate.
    assert_eq!(config.listeners.len(), 3, "{toml}");
    assert!(toml.contains("redirect = \"https\""), "{toml}");
    assert!(
        toml.contains("cert = \"/etc/letsencrypt/live/chat/fullchain.pem\""),
        "{toml}"
    );
    // Behind an L4 balancer: the PROXY protocol, and the proxies whose headers count.
    let https = config
        .listeners
        .iter()
        .find(|l| l.bind.port() == 443)
        .expect(toml);
    assert!(https.proxy_protocol, "{toml}");
    assert_eq!(config.trusted_proxies.len(), 1, "{toml}");
    // The included file's server, its root and header.
    assert!(
        toml.contains(&format!("root = \"{}/www\"", dir.display())),
        "{toml}"
    );
    assert!(
        toml.contains("\"Cache-Control\" = \"max-age=60\""),
        "{toml}"
    );
    // A header sluice sends itself is not written; another is.
    assert!(!toml.contains("\"Host\""), "{toml}");
    assert!(toml.contains("\"X-User\" = \"$http_x_user\""), "{toml}");
    assert!(
        toml.contains("\"X-Request-Start\" = \"$msec\""),
        "$msec carried over: {toml}"
    );
    // The rate limit: its zone, rate, key and burst.
    assert!(
        toml.contains("rate = \"10/s\"") && toml.contains("burst = 20"),
        "{toml}"
    );
    assert!(toml.contains("key = \"$remote_addr\""), "{toml}");
    // What does not carry over is listed with its place.
    let notes: Vec<String> = imported.notes.iter().map(|n| n.to_string()).collect();
    let noted = |what: &str| notes.iter().any(|n| n.contains(what));
    assert!(
        noted("nginx.conf:3: worker_connections: 1024"),
        "{notes:#?}"
    );
    assert!(
        noted("server_tokens: sluice sends no version"),
        "{notes:#?}"
    );
    // Matched as nginx matches them: an exact path and a regular expression, no note.
    assert!(toml.contains("exact = \"/health\""), "{toml}");
    assert!(toml.contains("regex = '\\.php$'"), "{toml}");
    assert!(!noted("= /health"), "{notes:#?}");
    assert!(!noted("X-Request-Start"), "{notes:#?}");
}

#[test]
fn a_file_that_is_not_nginx_syntax_is_an_error_with_its_place() {
    let dir = Dir::new("bad");
    let path = dir.join("nginx.conf");
    std::fs::write(&path, "http {\n  server { listen 80;\n").unwrap();
    let err = sluice_import::import(&path).unwrap_err().to_string();
    assert!(
        err.contains("nginx.conf") && err.contains("not nginx's syntax"),
        "{err}"
    );
}

#[test]
fn names_followed_in_dns_and_odd_spellings_carry_over() {
    let conf = r#"
http {
    resolver 10.0.0.2 [::1]:5353 valid=30s ipv6=off;
    upstream app {
        server app.internal:8080 resolve;
        server chat.service.consul service=http resolve;
        server 10.0.0.9:8080 resolve;
    }
    server {
        listen [:80;
        listen [::1]:8080;
        location =/health { return 204; }
        location ~^/api/ { proxy_pass http://app; }
    }
}
"#;
    let (imported, _dir) = import("dns", &[("nginx.conf", conf)]);
    let toml = &imported.toml;
    let config =
        sluice_config::parse("imported.toml", toml).unwrap_or_else(|e| panic!("{toml}\n{e}"));
    let app = config
        .upstreams
        .iter()
        .find(|u| u.name == "app")
        .expect(toml);
    let followed: Vec<&str> = app.discover.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        followed,
        ["app.internal:8080", "_http._tcp.chat.service.consul"]
    );
    // An address needs no resolving: it stays a fixed server.
    assert_eq!(app.servers.len(), 1, "{toml}");
    let resolvers: Vec<String> = config
        .resolver
        .servers
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(resolvers, ["10.0.0.2:53", "[::1]:5353"], "{toml}");
    assert_eq!(config.resolver.max_ttl.as_secs(), 30, "{toml}");
    // nginx's modifiers glued to the path; a broken listen is reported, not a crash.
    let paths: Vec<&str> = config.routes.iter().map(|r| r.path.as_str()).collect();
    assert!(
        paths.contains(&"/health") && paths.contains(&"^/api/"),
        "{toml}"
    );
    assert_eq!(config.listeners.len(), 1, "{toml}");
}

#[test]
fn seed_003s_consistent_hash_module_becomes_sluices_hash() {
    // `consistent_hash $request_uri` (the third-party module seed 003 compiled in).
    let text = "http { upstream myapp { consistent_hash $request_uri; server 10.0.0.1; server 10.0.0.2; } server { listen 80; location / { proxy_pass http://myapp; } } }";
    let (imported, _dir) = import("consistent-hash", &[("nginx.conf", text)]);
    let toml = &imported.toml;
    assert!(toml.contains("balance = \"hash\""), "{toml}");
    assert!(toml.contains("hash_key = \"$request_uri\""), "{toml}");
    assert!(
        !imported
            .notes
            .iter()
            .any(|n| n.text.contains("no equivalent")),
        "{:?}",
        imported.notes
    );
    // The same on the corpus's copy of seed 003's config: corpus.rs.
}

#[test]
fn what_sluice_does_itself_is_not_a_loss_and_what_changes_is_said() {
    use sluice_import::NoteKind;
    let text = "worker_processes 1;\nevents { worker_connections 1024; }\nhttp {\n  server_tokens off;\n  upstream app { server 10.0.0.1:8080; keepalive 32; }\n  server {\n    listen 80;\n    location / {\n      proxy_pass http://app;\n      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n      proxy_set_header Connection $connection_upgrade;\n      rewrite ^/old /new;\n    }\n  }\n}\n";
    let (imported, _dir) = import("kinds", &[("nginx.conf", text)]);
    let kind = |directive: &str, words: &str| {
        let n = imported
            .notes
            .iter()
            .find(|n| n.directive == directive && n.text.contains(words));
        n.unwrap_or_else(|| panic!("no {directive} note in {:?}", imported.notes))
            .kind()
    };
    assert_eq!(kind("proxy_set_header", "X-Forwarded-For"), NoteKind::Done);
    assert_eq!(
        kind("proxy_set_header", "Connection $connection_upgrade"),
        NoteKind::Done
    );
    assert_eq!(kind("server_tokens", ""), NoteKind::Done);
    // A location's rewrite is carried over, with no note.
    assert!(
        imported.toml.contains("{ regex = '^/old', to = \"/new\" }"),
        "{}",
        imported.toml
    );
    assert!(!imported.notes.iter().any(|n| n.directive == "rewrite"));
    // Changed without a word before: one core, keep-alive per server, no access log.
    assert_eq!(kind("worker_processes", "workers = 1"), NoteKind::Changed);
    assert_eq!(
        kind("keepalive", "per server and worker"),
        NoteKind::Changed
    );
    assert_eq!(
        kind("access_log", "nginx logs every request by default"),
        NoteKind::Changed
    );
    let toml = &imported.toml;
    assert!(toml.contains("# access_log = "), "{toml}");
    // An admin listener, so `sluice status` and reloads work after the migration.
    assert!(
        toml.contains("[admin]\nbind = \"127.0.0.1:9901\""),
        "{toml}"
    );
    sluice_config::parse("imported.toml", toml).unwrap();
}

#[test]
fn a_root_named_by_a_variable_is_left_out_at_every_level_with_a_note() {
    use sluice_import::NoteKind;
    let text = "events {}\nhttp {\n  server {\n    listen 80;\n    root $base;\n    location /a/ { }\n    location /b/ { root $document_root/b; }\n    location /c/ { root DIR/www; }\n    location / { proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _dir) = import("var-root", &[("nginx.conf", text)]);
    let toml = &imported.toml;
    assert!(!toml.contains('$'), "{toml}");
    assert!(toml.contains("path = \"/c/\"\nroot = "), "{toml}");
    let roots: Vec<_> = imported
        .notes
        .iter()
        .filter(|n| n.directive == "root")
        .collect();
    assert_eq!(roots.len(), 2, "{roots:?}");
    assert!(roots.iter().all(|n| n.kind() == NoteKind::Lost));
    sluice_config::parse("imported.toml", toml).unwrap();
}

#[test]
fn a_file_with_no_server_says_the_result_serves_nothing() {
    let (imported, _dir) = import(
        "events-only",
        &[("nginx.conf", "events {\n  worker_connections 1024;\n}\n")],
    );
    let said = imported
        .notes
        .iter()
        .any(|n| n.text.contains("serves nothing") && n.directive == "events");
    assert!(said, "{:?}", imported.notes);
}

#[test]
fn https_servers_by_name_are_verified_for_that_name() {
    // A named server reached over HTTPS (an API behind a public certificate): verified
    // against its IP, as `tls = true` is, every request would fail.
    let text = "http { upstream pay { server pay.example.com:443; } upstream ips { server 10.0.0.1:8443; server 10.0.0.2:8443; } server { listen 80; location / { proxy_pass https://pay; } location /ip/ { proxy_pass https://ips; } location /ext/ { proxy_pass https://cdn.example.org; } } }";
    let (imported, _dir) = import("https-names", &[("nginx.conf", text)]);
    let toml = &imported.toml;
    for expected in [
        "servers = [\"pay.example.com:443\"]\ntls = { server_name = \"pay.example.com\" }",
        "servers = [\"10.0.0.1:8443\", \"10.0.0.2:8443\"]\ntls = true",
        "servers = [\"cdn.example.org:443\"]\ntls = { server_name = \"cdn.example.org\" }",
    ] {
        assert!(toml.contains(expected), "{expected}: {toml}");
    }
}

#[test]
fn gzip_and_brotli_carry_over_as_compress_each_level_replacing_the_one_above() {
    use sluice_import::NoteKind;
    let text = r#"events {}
http {
    gzip on;
    gzip_comp_level 5;
    gzip_min_length 1000;
    gzip_types application/json text/css;
    gzip_vary on;
    gzip_proxied expired no-cache;
    gzip_disable "msie6";
    gzip_buffers 16 8k;
    server {
        listen 80;
        location /api/ { proxy_pass http://127.0.0.1:8080; }
        location /raw/ { gzip off; proxy_pass http://127.0.0.1:8080; }
        location /br/ { brotli on; brotli_comp_level 4; proxy_pass http://127.0.0.1:8080; }
        location /assets/ { root DIR/www; gzip_static on; }
        location /files/ { root DIR/www; }
    }
}
"#;
    let (imported, _dir) = import("gzip", &[("nginx.conf", text)]);
    let toml = &imported.toml;
    let route = |path: &str| {
        let at = toml.find(&format!("path = \"{path}\"")).unwrap();
        let end = toml[at..].find("\n\n").map_or(toml.len(), |e| at + e);
        toml[at..end].to_string()
    };
    let api = "compress = { gzip = 5, types = [\"text/html\", \"application/json\", \"text/css\"], min_length = 1000 }";
    assert!(route("/api/").contains(api), "{toml}");
    assert!(!route("/raw/").contains("compress"), "{toml}");
    assert!(
        route("/br/").contains("compress = { gzip = 5, br = 4,"),
        "{toml}"
    );
    assert!(
        route("/assets/").contains("compress = { precompressed = true }"),
        "{toml}"
    );
    assert!(!route("/files/").contains("compress"), "{toml}");
    let kind = |directive: &str| {
        let n = imported.notes.iter().find(|n| n.directive == directive);
        n.unwrap_or_else(|| panic!("no note on {directive}: {:#?}", imported.notes))
            .kind()
    };
    assert_eq!(kind("gzip_vary"), NoteKind::Done);
    assert_eq!(kind("gzip_buffers"), NoteKind::Done);
    assert_eq!(kind("gzip_proxied"), NoteKind::Changed);
    assert_eq!(kind("gzip_disable"), NoteKind::Lost);
    assert!(!imported.notes.iter().any(|n| n.directive == "gzip_types"));
    sluice_config::parse("imported.toml", toml).unwrap_or_else(|e| panic!("{toml}\n{e}"));
}

#[test]
fn nginxs_sticky_sessions_carry_over_and_read_as_sluices() {
    let text = "http {\n  upstream app {\n    server 10.0.0.1:8080;\n    server 10.0.0.2:8080;\n    sticky cookie srv_id expires=1h path=/ httponly;\n  }\n  upstream api {\n    server 10.0.0.3:8080;\n    server 10.0.0.4:8080;\n    sticky learn create=$upstream_cookie_JSESSIONID lookup=$cookie_JSESSIONID zone=s:1m;\n  }\n  upstream other {\n    server 10.0.0.5:8080;\n    sticky route $route_cookie;\n  }\n  server {\n    listen 80;\n    location / { proxy_pass http://app; }\n    location /api/ { proxy_pass http://api; }\n    location /other/ { proxy_pass http://other; }\n  }\n}\n";
    let (imported, _dir) = import("sticky", &[("nginx.conf", text)]);
    let config = sluice_config::parse("imported.toml", &imported.toml)
        .unwrap_or_else(|e| panic!("{e}\n{}", imported.toml));
    let sticky = |name: &str| {
        config
            .upstreams
            .iter()
            .find(|u| u.name == name)
            .and_then(|u| u.sticky.clone())
    };
    match sticky("app") {
        Some(sluice_config::Sticky::Cookie { name, cookie }) => {
            assert_eq!(name, "srv_id");
            assert!(cookie.http_only && !cookie.secure);
            assert_eq!(cookie.max_age, Some(std::time::Duration::from_secs(3600)));
        }
        other => panic!("{other:?}\n{}", imported.toml),
    }
    match sticky("api") {
        Some(sluice_config::Sticky::Learn { name, timeout, .. }) => {
            assert_eq!((name.as_str(), timeout.as_secs()), ("JSESSIONID", 600));
        }
        other => panic!("{other:?}\n{}", imported.toml),
    }
    assert_eq!(sticky("other"), None);
    let route = imported
        .notes
        .iter()
        .find(|n| n.directive == "sticky" && n.text.contains("route"));
    assert!(route.is_some(), "{:#?}", imported.notes);
}
