//! nginx's access checks through `sluice import`: `allow`, `deny`, `auth_basic`,
//! `auth_basic_user_file` and `satisfy` carried over with nginx's inheritance, and the
//! checks sluice cannot make closing the routes under them (403, a Closed note): never a
//! route nginx guarded written open.

use sluice_import::{Imported, NoteKind};
use std::path::PathBuf;

/// A test's directory, removed when dropped.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `conf` as `nginx.conf` in a directory of its own and imports it; the
/// directory, for paths the result names.
fn import(name: &str, conf: &str) -> (Imported, Dir) {
    let dir = std::env::temp_dir().join(format!("sluice-guards-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    (sluice_import::import(&path).unwrap(), Dir(dir))
}

/// The `[[route]]` block (with its comments, each line ending in a newline) whose path
/// (prefix, exact path or regular expression) is `path`.
fn route(toml: &str, path: &str) -> String {
    let keys = [
        format!("path = \"{path}\"\n"),
        format!("exact = \"{path}\"\n"),
        format!("regex = '{path}'\n"),
    ];
    toml.split("\n\n")
        .map(|block| format!("{}\n", block.trim_end()))
        .find(|block| block.contains("[[route]]\n") && keys.iter().any(|k| block.contains(k)))
        .unwrap_or_else(|| panic!("no route {path} in:\n{toml}"))
}

/// The line `needle` is on in `text` (1-based), for the places comments and notes name.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in text"));
    text[..at].lines().count() + usize::from(text[..at].ends_with('\n'))
}

/// The notes of `kind`, as printed.
fn notes(imported: &Imported, kind: NoteKind) -> Vec<String> {
    let of_kind = imported.notes.iter().filter(|n| n.kind() == kind);
    of_kind.map(|n| n.to_string()).collect()
}

const CLOSED: &str = "return = 403\n";

/// The config as sluice reads it (every import must be one it accepts).
fn parsed(toml: &str) -> sluice_config::Config {
    sluice_config::parse("imported.toml", toml).unwrap_or_else(|e| panic!("{toml}\n{e}"))
}

/// The guard of the route at `path`, as sluice reads it.
fn guard<'c>(config: &'c sluice_config::Config, path: &str) -> &'c sluice_config::Guard {
    let route = config.routes.iter().find(|r| r.path == path);
    &route.unwrap_or_else(|| panic!("no route {path}")).guard
}

/// Whether `guard`'s address rules let `ip` in.
fn admits(guard: &sluice_config::Guard, ip: &str) -> bool {
    guard.admits(ip.parse().unwrap())
}

#[test]
fn a_locations_own_rules_are_written_in_order_with_their_lines() {
    let conf = "http {\n  server {\n    listen 80;\n    location /actuator/ {\n      allow 10.0.0.0/8;\n      allow 2001:db8::/32;\n      allow 127.0.0.1;\n      deny all;\n      proxy_pass http://127.0.0.1:8080;\n    }\n    location / { proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, dir) = import("route-level", conf);
    let toml = &imported.toml;
    let actuator = route(toml, "/actuator/");
    assert!(
        actuator.contains("access = [\"allow 10.0.0.0/8\", \"allow 2001:db8::/32\", \"allow 127.0.0.1\", \"deny all\"]\n"),
        "{actuator}"
    );
    let nginx = dir.0.join("nginx.conf");
    let at = |needle| format!("{}:{}", nginx.display(), line_of(conf, needle));
    assert!(
        actuator.contains(&format!(
            "# access: allow and deny at {}, {}, {}, {}\n",
            at("allow 10."),
            at("allow 2001"),
            at("allow 127"),
            at("deny all")
        )),
        "{actuator}"
    );
    // A location with none of its own, under a server with none: open, as in nginx.
    assert!(!route(toml, "/").contains("access"), "{toml}");
    let config = parsed(toml);
    let g = guard(&config, "/actuator/");
    for ip in ["10.9.8.7", "2001:db8::1", "127.0.0.1"] {
        assert!(admits(g, ip), "{ip}");
    }
    assert!(!admits(g, "192.0.2.1") && !admits(g, "2001:db9::1"));
    assert!(guard(&config, "/").is_open());
    assert!(notes(&imported, NoteKind::Closed).is_empty());
    assert!(
        !imported
            .notes
            .iter()
            .any(|n| n.directive == "allow" || n.directive == "deny"),
        "{:?}",
        imported.notes
    );
}

#[test]
fn a_servers_rules_reach_its_locations_unless_a_location_has_its_own() {
    let conf = "http {\n  server {\n    listen 80;\n    allow 192.168.0.0/16;\n    deny all;\n    location / { proxy_pass http://127.0.0.1:8080; }\n    location /ops/ {\n      allow 10.1.2.3/8;\n      deny all;\n      proxy_pass http://127.0.0.1:8080;\n      location /ops/open/ { allow all; proxy_pass http://127.0.0.1:8080; }\n      location /ops/inner/ { proxy_pass http://127.0.0.1:8080; }\n    }\n  }\n}\n";
    let (imported, _) = import("server-level", conf);
    let toml = &imported.toml;
    let inherited = "access = [\"allow 192.168.0.0/16\", \"deny all\"]\n";
    assert!(route(toml, "/").contains(inherited), "{toml}");
    // The location's own list replaces the server's (nginx's array rule), its network's
    // host bits cleared as nginx clears them.
    let own = "access = [\"allow 10.0.0.0/8\", \"deny all\"]\n";
    assert!(route(toml, "/ops/").contains(own), "{toml}");
    assert!(route(toml, "/ops/inner/").contains(own), "{toml}");
    assert!(
        route(toml, "/ops/open/").contains("access = [\"allow all\"]\n"),
        "{toml}"
    );
    let config = parsed(toml);
    let (server, ops) = (guard(&config, "/"), guard(&config, "/ops/inner/"));
    assert!(admits(server, "192.168.1.1") && !admits(server, "10.0.0.1"));
    assert!(admits(ops, "10.0.0.1") && !admits(ops, "192.168.1.1"));
    assert!(admits(guard(&config, "/ops/open/"), "192.0.2.1"));
    assert!(
        imported
            .notes
            .iter()
            .any(|n| n.directive == "allow" && n.text.contains("carried over as 10.0.0.0/8")),
        "{:?}",
        imported.notes
    );
}

#[test]
fn the_http_levels_checks_reach_every_server() {
    let conf = "http {\n  allow 127.0.0.1;\n  deny all;\n  satisfy any;\n  auth_basic \"all of it\";\n  auth_basic_user_file /etc/nginx/htpasswd;\n  server { listen 80; location / { proxy_pass http://127.0.0.1:9000; } }\n  server { listen 8080; root /tmp; }\n}\n";
    let (imported, _) = import("http-level", conf);
    let toml = &imported.toml;
    let routes: Vec<String> = toml
        .split("\n\n")
        .filter(|b| b.contains("[[route]]"))
        .map(|b| format!("{}\n", b.trim_end()))
        .collect();
    assert_eq!(routes.len(), 2, "{toml}");
    for r in routes {
        assert!(
            r.contains("access = [\"allow 127.0.0.1\", \"deny all\"]\n"),
            "{r}"
        );
        assert!(
            r.contains(
                "auth_basic = { realm = \"all of it\", user_file = \"/etc/nginx/htpasswd\" }\n"
            ),
            "{r}"
        );
        assert!(r.contains("satisfy = \"any\"\n"), "{r}");
        assert!(r.contains("# satisfy any: "), "{r}");
    }
    for r in &parsed(toml).routes {
        let auth = r.guard.auth.as_ref().expect("basic auth");
        assert_eq!(auth.realm, "all of it");
        assert_eq!(r.guard.satisfy, sluice_config::Satisfy::Any);
    }
}

#[test]
fn realm_and_user_file_inherit_apart_and_auth_basic_off_turns_the_check_off() {
    let conf = "http {\n  server {\n    listen 80;\n    auth_basic_user_file /etc/nginx/htpasswd;\n    location / { proxy_pass http://127.0.0.1:8080; }\n    location /admin/ {\n      auth_basic \"ops\";\n      proxy_pass http://127.0.0.1:8080;\n      location /admin/public/ { auth_basic off; proxy_pass http://127.0.0.1:8080; }\n      location /admin/deep/ { proxy_pass http://127.0.0.1:8080; }\n    }\n  }\n}\n";
    let (imported, _) = import("auth-off", conf);
    let toml = &imported.toml;
    let auth = "auth_basic = { realm = \"ops\", user_file = \"/etc/nginx/htpasswd\" }\n";
    assert!(route(toml, "/admin/").contains(auth), "{toml}");
    assert!(route(toml, "/admin/deep/").contains(auth), "{toml}");
    // A user file alone checks nothing in nginx; `off` turns the inherited realm off.
    assert!(!route(toml, "/").contains("auth_basic"), "{toml}");
    assert!(
        !route(toml, "/admin/public/").contains("auth_basic"),
        "{toml}"
    );
    let config = parsed(toml);
    assert!(guard(&config, "/admin/deep/").auth.is_some());
    assert!(guard(&config, "/admin/public/").is_open());
    let admin = route(toml, "/admin/");
    assert!(
        admin.contains(&format!(
            ":{}, its user file ",
            line_of(conf, "auth_basic \"ops\"")
        )),
        "{admin}"
    );
    assert!(
        admin.contains(&format!(":{}\n", line_of(conf, "auth_basic_user_file"))),
        "{admin}"
    );
}

#[test]
fn satisfy_any_is_written_with_the_checks_it_joins() {
    let conf = "http {\n  server {\n    listen 80;\n    location /either/ {\n      satisfy any;\n      allow 127.0.0.1;\n      deny all;\n      auth_basic \"ops\";\n      auth_basic_user_file /etc/htpasswd;\n      proxy_pass http://127.0.0.1:8080;\n    }\n    location /plain/ { satisfy any; proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("either", conf);
    let toml = &imported.toml;
    let either = route(toml, "/either/");
    for key in [
        "access = [\"allow 127.0.0.1\", \"deny all\"]\n",
        "auth_basic = { realm = \"ops\", user_file = \"/etc/htpasswd\" }\n",
        "satisfy = \"any\"\n",
    ] {
        assert!(either.contains(key), "{key}: {either}");
    }
    // With nothing to satisfy, nothing to write.
    assert!(!route(toml, "/plain/").contains("satisfy"), "{toml}");
    let config = parsed(toml);
    assert_eq!(
        guard(&config, "/either/").satisfy,
        sluice_config::Satisfy::Any
    );
}

#[test]
fn a_relative_user_file_is_taken_from_the_main_files_directory() {
    let conf = "http {\n  server {\n    listen 80;\n    auth_basic \"ops\";\n    location /a/ { auth_basic_user_file htpasswd; proxy_pass http://127.0.0.1:8080; }\n    location /b/ { auth_basic_user_file conf.d/../users; proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, dir) = import("relative", conf);
    let toml = &imported.toml;
    let want = format!("user_file = \"{}\" }}\n", dir.0.join("htpasswd").display());
    let a = route(toml, "/a/");
    assert!(a.contains(&want), "{a}");
    assert!(dir.0.join("htpasswd").is_absolute());
    assert!(
        a.contains("(htpasswd, taken from nginx's conf prefix as nginx takes it)"),
        "{a}"
    );
    let b = route(toml, "/b/");
    let want = format!(
        "user_file = \"{}\" }}\n",
        dir.0.join("conf.d/../users").display()
    );
    assert!(b.contains(&want), "{b}");
}

#[test]
fn unix_rules_are_noted_and_still_replace_the_inherited_list() {
    let conf = "http {\n  server {\n    listen 80;\n    deny all;\n    location /sock/ { allow unix:; proxy_pass http://127.0.0.1:8080; }\n    location /mixed/ { allow unix:; allow 10.0.0.1; deny all; proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("unix", conf);
    let toml = &imported.toml;
    // nginx: the location's own list (unix: only) replaces `deny all`; no TCP client
    // matches it, so all are let in.
    assert!(!route(toml, "/sock/").contains("access"), "{toml}");
    assert!(
        route(toml, "/mixed/").contains("access = [\"allow 10.0.0.1\", \"deny all\"]\n"),
        "{toml}"
    );
    let unix: Vec<_> = imported
        .notes
        .iter()
        .filter(|n| n.directive == "allow" && n.text.starts_with("unix:"))
        .collect();
    assert_eq!(unix.len(), 2, "{:?}", imported.notes);
    assert!(unix.iter().all(|n| n.kind() == NoteKind::Done), "{unix:?}");
    let config = parsed(toml);
    assert!(guard(&config, "/sock/").is_open());
    assert!(!admits(guard(&config, "/mixed/"), "10.0.0.2"));
}

#[test]
fn a_return_answers_before_nginx_checks_anyone_so_no_check_is_written() {
    let conf = "http {\n  server {\n    listen 80;\n    deny all;\n    location /ping { return 200 \"pong\"; }\n    location / { proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("return", conf);
    let toml = &imported.toml;
    let ping = route(toml, "/ping");
    assert!(!ping.contains("access"), "{ping}");
    assert!(
        ping.contains("return = { status = 200, body = \"pong\" }"),
        "{ping}"
    );
    assert!(
        ping.contains("# nginx answers this return before it checks anyone: the checks at "),
        "{ping}"
    );
    assert!(
        route(toml, "/").contains("access = [\"deny all\"]"),
        "{toml}"
    );
}

/// The checks sluice cannot make: the route under each answers 403 with a comment
/// naming the nginx line, and each is a Closed note naming the routes.
#[test]
fn each_check_sluice_cannot_make_closes_its_routes() {
    let cases = [
        ("auth_request", "location /x/ { auth_request /auth; proxy_pass http://127.0.0.1:8080; }", "a subrequest decides"),
        ("auth_jwt", "location /x/ { auth_jwt \"api\"; auth_jwt_key_file /k.jwk; proxy_pass http://127.0.0.1:8080; }", "JSON Web Token"),
        ("limit_except", "location /x/ { limit_except GET { deny all; } proxy_pass http://127.0.0.1:8080; }", "some methods only"),
        ("auth_pam", "location /x/ { auth_pam \"pam\"; proxy_pass http://127.0.0.1:8080; }", "another module"),
        ("ssl_verify_client", "ssl_verify_client on; ssl on; location /x/ { proxy_pass http://127.0.0.1:8080; }", "certificate"),
        ("if", "if ($blocked) { return 403; } location /x/ { proxy_pass http://127.0.0.1:8080; }", "$blocked (set by a geo or map block)"),
        ("if", "location /x/ { if ($allowed = 0) { return 444; } proxy_pass http://127.0.0.1:8080; }", "$allowed (set by a geo or map block)"),
        ("if", "location /x/ { if ($remote_addr != 10.0.0.1) { return 401; } proxy_pass http://127.0.0.1:8080; }", "$remote_addr"),
        ("auth_basic_user_file", "location /x/ { auth_basic \"a\"; auth_basic_user_file /etc/$host.htpasswd; proxy_pass http://127.0.0.1:8080; }", "named by a variable"),
        ("deny", "location /x/ { deny example.com; proxy_pass http://127.0.0.1:8080; }", "not an address"),
    ];
    for (i, (directive, server, why)) in cases.into_iter().enumerate() {
        let conf = format!("http {{\n  geo $blocked {{ default 0; 10.9.0.0/16 1; }}\n  map $remote_addr $allowed {{ default 0; 127.0.0.1 1; }}\n  server {{\n    listen 80;\n    {server}\n  }}\n}}\n");
        let (imported, _) = import(&format!("closed-{i}"), &conf);
        let toml = &imported.toml;
        let x = route(toml, "/x/");
        assert!(x.contains(CLOSED), "{directive}: {x}");
        assert!(!x.contains("upstream"), "{directive}: {x}");
        assert!(
            x.contains(&format!(":6 {directive} ")) && x.contains(why),
            "{directive}: {x}"
        );
        let closed = notes(&imported, NoteKind::Closed);
        assert_eq!(closed.len(), 1, "{directive}: {:#?}", imported.notes);
        assert!(
            closed[0].contains(&format!(":6: {directive}: "))
                && closed[0].contains("the route it guards answers 403 (/x/)"),
            "{directive}: {closed:?}"
        );
        // Closed routes name no upstream: nothing else needs the made one.
        assert!(!toml.contains("[upstream."), "{directive}: {toml}");
        parsed(toml);
    }
}

#[test]
fn a_check_at_the_http_level_closes_every_route_below_it_but_where_turned_off() {
    let conf = "http {\n  auth_request /auth;\n  server {\n    listen 80;\n    location / { proxy_pass http://127.0.0.1:8080; }\n    location /api/ { proxy_pass http://127.0.0.1:8080; }\n    location /health { auth_request off; return 200 \"ok\"; }\n    location /public/ { auth_request off; proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("http-closed", conf);
    let toml = &imported.toml;
    for path in ["/", "/api/"] {
        assert!(route(toml, path).contains(CLOSED), "{path}: {toml}");
    }
    assert!(route(toml, "/public/").contains("upstream = "), "{toml}");
    assert!(route(toml, "/health").contains("status = 200"), "{toml}");
    let closed = notes(&imported, NoteKind::Closed);
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert!(
        closed[0].contains(":2: auth_request: /auth: ")
            && closed[0].contains("answer 403 (/, /api/)"),
        "{closed:?}"
    );
    parsed(toml);
}

#[test]
fn an_if_that_checks_nothing_about_the_client_is_not_a_check() {
    let conf = "http {\n  server {\n    listen 80;\n    if ($request_method = OPTIONS) { return 204; }\n    if ($http_user_agent ~ bot) { rewrite ^ /bots; }\n    location / { proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("plain-if", conf);
    stays_open_with_if_notes(&imported, "/", 2);
}

/// `path` still proxies, nothing is closed, and `ifs` `if`s are noted.
fn stays_open_with_if_notes(imported: &Imported, path: &str, ifs: usize) {
    assert!(
        route(&imported.toml, path).contains("upstream = "),
        "{}",
        imported.toml
    );
    assert!(notes(imported, NoteKind::Closed).is_empty());
    let noted = imported.notes.iter().filter(|n| n.directive == "if");
    assert_eq!(noted.count(), ifs, "{:?}", imported.notes);
}

/// As nginx runs them (checked against nginx 1.22): a location's `limit_except` and its
/// `if`s apply to it alone, not to the locations nested in it; and `limit_except`
/// applies even where the location answers with `return` (for the other methods nginx
/// uses the limit_except block's config, which has no `return`).
#[test]
fn checks_kept_to_their_location_do_not_reach_nested_ones() {
    let conf = "http {\n  geo $blocked { default 1; }\n  server {\n    listen 80;\n    location /a/ {\n      limit_except GET { deny all; }\n      return 200 \"a\";\n      location /a/nested/ { proxy_pass http://127.0.0.1:9000; }\n    }\n    location /i/ {\n      if ($blocked) { return 403; }\n      proxy_pass http://127.0.0.1:9000;\n      location /i/nested/ { proxy_pass http://127.0.0.1:9000; }\n    }\n  }\n}\n";
    let (imported, _) = import("own", conf);
    let toml = &imported.toml;
    for closed in ["/a/", "/i/"] {
        assert!(route(toml, closed).contains(CLOSED), "{closed}: {toml}");
    }
    for open in ["/a/nested/", "/i/nested/"] {
        assert!(route(toml, open).contains("upstream = "), "{open}: {toml}");
    }
    assert_eq!(notes(&imported, NoteKind::Closed).len(), 2);
    parsed(toml);
}

/// `auth_delay` (nginx core since 1.17.10) only slows nginx's refusals down: it checks
/// no one, so it closes nothing, and its note says sluice answers at once.
#[test]
fn auth_delay_closes_nothing() {
    let conf = "http {\n  auth_delay 2s;\n  server {\n    listen 80;\n    location /x/ { auth_basic \"ops\"; auth_basic_user_file /etc/htpasswd; auth_delay 1s; proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("auth-delay", conf);
    let toml = &imported.toml;
    let x = route(toml, "/x/");
    assert!(
        x.contains("upstream = ") && x.contains("auth_basic = "),
        "{x}"
    );
    assert!(
        notes(&imported, NoteKind::Closed).is_empty(),
        "{:#?}",
        imported.notes
    );
    let delays: Vec<_> = imported
        .notes
        .iter()
        .filter(|n| n.directive == "auth_delay")
        .collect();
    assert_eq!(delays.len(), 2, "{:#?}", imported.notes);
    for n in delays {
        assert!(
            n.text.contains("not translated: sluice answers at once"),
            "{n}"
        );
        assert_eq!(n.kind(), NoteKind::Lost, "{n}");
    }
    parsed(toml);
}

/// nginx asks for a client certificate on TLS connections only: `ssl_verify_client on`
/// at the http level closes the servers that listen with ssl, not the plain ones.
#[test]
fn ssl_verify_client_closes_only_servers_that_listen_with_ssl() {
    let conf = "http {\n  ssl_verify_client on;\n  ssl_client_certificate /etc/ca.pem;\n  ssl_certificate /etc/cert.pem;\n  ssl_certificate_key /etc/key.pem;\n  server {\n    listen 80;\n    location /plain/ { proxy_pass http://127.0.0.1:8080; }\n    location /php/ { fastcgi_pass 127.0.0.1:9000; }\n  }\n  server {\n    listen 443 ssl;\n    location /tls/ { proxy_pass http://127.0.0.1:8080; }\n  }\n  server {\n    listen 8443;\n    ssl on;\n    location /old/ { proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("verify-client", conf);
    let toml = &imported.toml;
    assert!(route(toml, "/plain/").contains("upstream = "), "{toml}");
    // Nothing nginx checks there: left out, not closed for a certificate.
    assert!(!toml.contains("\"/php/\""), "{toml}");
    assert!(route(toml, "/tls/").contains(CLOSED), "{toml}");
    // `ssl on` (before nginx 1.25.1) makes every listen of its server TLS.
    assert!(route(toml, "/old/").contains(CLOSED), "{toml}");
    let closed = notes(&imported, NoteKind::Closed);
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert!(
        closed[0].contains(":2: ssl_verify_client: on: ")
            && closed[0].contains("answer 403 (/tls/, /old/)"),
        "{closed:?}"
    );
    parsed(toml);
}

/// sluice evaluates no `if`: one whose block refuses (any 4xx, or 444) closes the routes
/// under it, whatever its condition reads; one that redirects or answers 2xx does not.
#[test]
fn an_if_that_refuses_closes_its_routes_whatever_it_reads() {
    let cases = [
        "if ($http_x_api_key != \"s3cret\") { return 401; }",
        "valid_referers none blocked example.com; if ($invalid_referer) { return 403; }",
        "secure_link $arg_md5,$arg_expires; secure_link_md5 \"$secure_link_expires$uri s\"; if ($secure_link = \"\") { return 403; }",
        "set $deny 1; if ($deny) { return 403; }",
        "if ($request_method !~ ^(GET|POST)$) { return 405; }",
        "if ($http_user_agent ~* curl) { return 444; }",
    ];
    for (i, check) in cases.into_iter().enumerate() {
        // At the server level and in the location itself.
        for (j, (server, location)) in [(check, ""), ("", check)].into_iter().enumerate() {
            let conf = format!("http {{\n  server {{\n    listen 80;\n    {server}\n    location /x/ {{\n      {location}\n      proxy_pass http://127.0.0.1:8080;\n    }}\n  }}\n}}\n");
            let (imported, _) = import(&format!("if-{i}-{j}"), &conf);
            let toml = &imported.toml;
            assert!(route(toml, "/x/").contains(CLOSED), "{check}: {toml}");
            let closed = notes(&imported, NoteKind::Closed);
            assert_eq!(closed.len(), 1, "{check}: {:#?}", imported.notes);
            let line = if j == 0 { 4 } else { 6 };
            assert!(
                closed[0].contains(&format!(":{line}: if: "))
                    && closed[0].contains("which sluice does not evaluate")
                    && closed[0].contains("the route it guards answers 403 (/x/)"),
                "{check}: {closed:?}"
            );
            parsed(toml);
        }
    }
    let open = "http {\n  server {\n    listen 80;\n    if ($scheme = http) { return 301 https://$host$request_uri; }\n    location /x/ {\n      if ($http_x_api_key = \"\") { return 302 /login; }\n      if ($request_method = OPTIONS) { return 200; }\n      if ($arg_debug) { return 503; }\n      proxy_pass http://127.0.0.1:8080;\n    }\n  }\n}\n";
    let (imported, _) = import("if-open", open);
    stays_open_with_if_notes(&imported, "/x/", 4);
}

/// `location = /p` and `location /p` become one prefix route in sluice. When their
/// checks differ, the stricter is kept: the checked one over the open one, closed over
/// either; two different checks close the route (sluice cannot keep both). Every check
/// that closed either still has its Closed note.
/// nginx's `= /p` and `/p` of one path are two routes, each with its own checks, as
/// nginx matches them: `/admin` open, `/admin/x` asks for a password.
#[test]
fn an_exact_and_a_prefix_location_of_one_path_keep_their_own_checks() {
    let conf = "http {\n  server {\n    listen 80;\n    location = /admin { proxy_pass http://127.0.0.1:8080; }\n    location /admin { auth_basic \"ops\"; auth_basic_user_file /etc/htpasswd; proxy_pass http://127.0.0.1:8080; }\n    location = /ops { allow 10.0.0.0/8; deny all; proxy_pass http://127.0.0.1:8080; }\n    location /ops { proxy_pass http://127.0.0.1:8080; }\n    location = /sub { proxy_pass http://127.0.0.1:8080; }\n    location /sub { auth_request /auth; proxy_pass http://127.0.0.1:8080; }\n    location = /both { allow 10.0.0.0/8; deny all; proxy_pass http://127.0.0.1:8080; }\n    location /both { auth_basic \"ops\"; auth_basic_user_file /etc/htpasswd; proxy_pass http://127.0.0.1:8080; }\n    location = /same { deny all; proxy_pass http://127.0.0.1:8080; }\n    location /same { deny all; proxy_pass http://127.0.0.1:8080; }\n    location = /ping { return 200 \"pong\"; }\n    location /ping { auth_request /auth; proxy_pass http://127.0.0.1:8080; }\n    location = /gone { auth_request /auth; }\n    location /gone { deny all; }\n  }\n}\n";
    let (imported, _) = import("collapse", conf);
    let toml = &imported.toml;
    let config = parsed(toml);
    let of = |path: &str, exact: bool| {
        let kind = |r: &&sluice_config::Route| {
            (r.matching == sluice_config::Matching::Exact) == exact && r.path == path
        };
        config
            .routes
            .iter()
            .find(kind)
            .unwrap_or_else(|| panic!("{path}: {toml}"))
    };
    for path in ["/admin", "/ops", "/sub", "/both", "/same", "/ping", "/gone"] {
        let n = config.routes.iter().filter(|r| r.path == path).count();
        assert_eq!(n, 2, "{path}: {toml}");
    }
    assert!(of("/admin", true).guard.is_open(), "{toml}");
    assert!(of("/admin", false).guard.auth.is_some(), "{toml}");
    assert!(
        !of("/ops", true).guard.admits("192.0.2.1".parse().unwrap()),
        "{toml}"
    );
    assert!(of("/ops", false).guard.is_open(), "{toml}");
    assert!(of("/both", true).guard.auth.is_none(), "{toml}");
    assert!(of("/both", false).guard.auth.is_some(), "{toml}");
    // A check sluice cannot make closes its own route only.
    let closed = |path, exact| {
        of(path, exact).action
            == sluice_config::Action::Return(sluice_config::Return {
                status: 403,
                location: None,
                body: None,
            })
    };
    assert!(closed("/sub", false) && !closed("/sub", true), "{toml}");
    assert!(closed("/ping", false) && !closed("/ping", true), "{toml}");
    assert!(closed("/gone", true) && closed("/gone", false), "{toml}");
    let closed = notes(&imported, NoteKind::Closed);
    for line in [9, 15, 16] {
        assert!(
            closed
                .iter()
                .any(|n| n.contains(&format!(":{line}: auth_request: "))),
            "{line}: {closed:?}"
        );
    }
    assert_eq!(closed.len(), 3, "{:#?}", imported.notes);
}

/// A location nginx guards that sluice has nothing to answer with (no root in scope;
/// FastCGI, uwsgi or gRPC) is written closed rather than left out, where its paths
/// would fall to a shorter route (`/`, proxied to the application). Where nginx refuses
/// everyone (`deny all`) that is nginx's answer; elsewhere whom nginx let in gets 403 (a
/// note says what was not carried over). No check sluice cannot make: it exits 0.
#[test]
fn a_guarded_location_with_nothing_to_answer_is_written_closed() {
    let conf = "http {\n  server {\n    listen 80;\n    location / { proxy_pass http://127.0.0.1:8080; }\n    location /private/ { deny all; }\n    location /php/ { allow 10.0.0.0/8; deny all; fastcgi_pass 127.0.0.1:9000; }\n    location /rpc/ { auth_basic \"ops\"; auth_basic_user_file /etc/htpasswd; grpc_pass grpc://127.0.0.1:9000; }\n    location /uw/ { root /srv; allow 10.0.0.0/8; deny all; uwsgi_pass 127.0.0.1:9000; }\n    location ~ ^/secret/ { deny all; }\n    location /open/ { fastcgi_pass 127.0.0.1:9000; }\n  }\n}\n";
    let (imported, dir) = import("unserved", conf);
    let toml = &imported.toml;
    let config = parsed(toml);
    for path in ["/private/", "/php/", "/rpc/", "/uw/", "^/secret/"] {
        let r = route(toml, path);
        assert!(r.contains(CLOSED), "{path}: {r}");
        // Not sluice's root: a FastCGI or uwsgi location's files are its scripts.
        assert!(
            !r.contains("root = ") && !r.contains("upstream = "),
            "{path}: {r}"
        );
        assert!(r.contains("# answers 403: "), "{path}: {r}");
    }
    // Unguarded, it is left out as before (nothing nginx checked is opened).
    assert!(!config.routes.iter().any(|r| r.path == "/open/"), "{toml}");
    assert!(
        notes(&imported, NoteKind::Closed).is_empty(),
        "{:#?}",
        imported.notes
    );
    let nginx = dir.0.join("nginx.conf").display().to_string();
    let note = |line: usize| {
        let found = imported
            .notes
            .iter()
            .filter(|n| n.line == line && n.directive == "location" && n.file == nginx)
            .find(|n| n.text.contains("return = 403"));
        found.unwrap_or_else(|| panic!("{line}: {:#?}", imported.notes))
    };
    // `deny all`: nginx's own answer, 403 to everyone.
    for line in [5, 9] {
        let n = note(line);
        assert_eq!(n.kind(), NoteKind::Done, "{n}");
        assert!(n.text.contains("nginx refuses everyone here"), "{n}");
    }
    for (line, what) in [(6, "fastcgi_pass"), (7, "grpc_pass"), (8, "uwsgi_pass")] {
        let n = note(line);
        assert_eq!(n.kind(), NoteKind::Lost, "{n}");
        assert!(
            n.text.contains(what) && n.text.contains("written closed"),
            "{n}"
        );
    }
}

/// Guarded regex locations are routed as nginx routes them (not anchored, in either
/// case, tried before longer prefixes but `^~`), each with its checks: nothing they
/// guarded opens under another route, so no Closed note. A named location, and an
/// unguarded FastCGI one, are left out with a Lost note.
#[test]
fn guarded_regex_locations_are_routed_as_nginx_did_and_open_nothing() {
    let conf = "http {\n  server {\n    listen 80;\n    location / { proxy_pass http://127.0.0.1:8080; }\n    location ~ /\\.git { deny all; }\n    location ~* \\.(env|ini)$ { deny all; }\n    location ~ \\.php$ { fastcgi_pass 127.0.0.1:9000; }\n    location ~* ^/admin { auth_basic \"ops\"; auth_basic_user_file /etc/htpasswd; proxy_pass http://127.0.0.1:8080; }\n    location ~ ^/internal/ { allow 10.0.0.0/8; deny all; proxy_pass http://127.0.0.1:8080; }\n    location /internal/api/ { proxy_pass http://127.0.0.1:8080; }\n    location ~ ^/ops/ { deny all; proxy_pass http://127.0.0.1:8080; }\n    location ^~ /ops/x/ { proxy_pass http://127.0.0.1:8080; }\n    location @named { deny all; proxy_pass http://127.0.0.1:8080; }\n  }\n}\n";
    let (imported, _) = import("unroutable", conf);
    let toml = &imported.toml;
    parsed(toml);
    assert!(route(toml, "/\\.git").contains(CLOSED), "{toml}");
    let env = route(toml, "\\.(env|ini)$");
    assert!(
        env.contains(CLOSED) && env.contains("ignore_case = true"),
        "{env}"
    );
    let admin = route(toml, "^/admin");
    assert!(
        admin.contains("auth_basic = ") && admin.contains("ignore_case = true"),
        "{admin}"
    );
    assert!(route(toml, "^/internal/").contains("access = "), "{toml}");
    assert!(
        route(toml, "/ops/x/").contains("skip_regex = true"),
        "{toml}"
    );
    let closed = notes(&imported, NoteKind::Closed);
    assert!(closed.is_empty(), "{closed:#?}");
    for line in [7, 13] {
        let lost = imported
            .notes
            .iter()
            .any(|n| n.line == line && n.directive == "location" && n.kind() == NoteKind::Lost);
        assert!(lost, "{line}: {:#?}", imported.notes);
    }
}

/// Where every other route of the server checks what the location did (a server-wide
/// `deny`), its paths are no more open under them: no Closed note.
#[test]
fn a_location_guarded_as_the_whole_server_is_opens_nothing() {
    let conf = "http {\n  server {\n    listen 80;\n    allow 10.0.0.0/8;\n    deny all;\n    location / { proxy_pass http://127.0.0.1:8080; }\n    location /closed/ { auth_request /auth; proxy_pass http://127.0.0.1:8080; }\n    location ~ \\.php$ { fastcgi_pass 127.0.0.1:9000; }\n  }\n  server {\n    listen 8080;\n    allow 10.0.0.0/8;\n    deny all;\n    location /app/ { proxy_pass http://127.0.0.1:8080; }\n    location ~ \\.php$ { fastcgi_pass 127.0.0.1:9000; }\n  }\n}\n";
    let (imported, _) = import("covered", conf);
    let closed = notes(&imported, NoteKind::Closed);
    assert_eq!(closed.len(), 1, "{closed:#?}");
    assert!(
        closed.iter().any(|n| n.contains(":7: auth_request: ")),
        "{closed:#?}"
    );
    // The FastCGI regex locations are routed alike and written closed (whom nginx let
    // in gets 403: Lost), their paths never reaching another route.
    for line in [8, 15] {
        let php = imported
            .notes
            .iter()
            .find(|n| n.line == line && n.directive == "location");
        assert_eq!(
            php.map(|n| n.kind()),
            Some(NoteKind::Lost),
            "{line}: {:#?}",
            imported.notes
        );
    }
}

/// A location that refuses everyone with its own answer (`return 403`, `404`, `444`)
/// guards its paths as surely as `deny all` does (`location ~ /\.env { return 404; }`);
/// routed as nginx routes it, it opens nothing: no Closed note.
#[test]
fn a_location_that_refuses_with_return_guards_its_paths_too() {
    let conf = "http {\n  server {\n    listen 80;\n    location / { proxy_pass http://127.0.0.1:8080; }\n    location ~ /\\.env { return 404; }\n    location ~* \\.(bak|sql)$ { return 444; }\n    location ~ \\.txt$ { return 200 \"ok\"; }\n    location ~ ^/(?:data|config)/ { return 403; }\n  }\n  server {\n    listen 8080;\n    location / { return 404; }\n    location ~ \\.sql$ { return 403; }\n  }\n}\n";
    let (imported, _) = import("refuses", conf);
    let toml = &imported.toml;
    parsed(toml);
    assert!(route(toml, "/\\.env").contains("status = 404"), "{toml}");
    assert!(
        route(toml, "\\.(bak|sql)$").contains("status = 403"),
        "{toml}"
    );
    assert!(
        route(toml, "^/(?:data|config)/").contains("status = 403"),
        "{toml}"
    );
    // Routed as nginx routes them: nothing they refused opens elsewhere.
    let closed = notes(&imported, NoteKind::Closed);
    assert!(closed.is_empty(), "{closed:#?}");
}
