//! Config errors: every problem at once, each with its line, column and a hint.

use sluice_config::{parse, Balance, HostMatch};
use std::time::Duration;

const GOOD: &str = r#"
workers = 2

[[listener]]
bind = "127.0.0.1:8080"

[[route]]
host = "*.example.com"
path = "/api/"
upstream = "app"

[[route]]
upstream = "app"

[upstream.app]
balance = "least_conn"
servers = ["127.0.0.1:9101", { addr = "127.0.0.1:9102", weight = 2 }]
keepalive = 64
connect_timeout = "500ms"
"#;

#[test]
fn a_good_config_parses_with_defaults_filled_in() {
    let c = parse("good.toml", GOOD).unwrap();
    assert_eq!(c.workers, 2);
    assert_eq!(c.routes.len(), 2);
    assert_eq!(
        c.routes[0].host,
        Some(HostMatch::Suffix(".example.com".into()))
    );
    assert_eq!(c.routes[1].path, "/");
    let app = &c.upstreams[0];
    assert_eq!(app.balance, Balance::LeastConn);
    assert_eq!(app.servers[1].weight, 2);
    assert_eq!(app.keepalive, 64);
    assert_eq!(app.connect_timeout, Duration::from_millis(500));
    assert_eq!(app.read_timeout, Duration::from_secs(60));
}

fn errors(text: &str) -> Vec<String> {
    parse("bad.toml", text)
        .unwrap_err()
        .0
        .iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn every_problem_is_reported_at_once_with_position_and_hint() {
    let text = r#"
[[listener]]
bind = "127.0.0.1:8080"

[[listener]]
bind = "127.0.0.1:8080"

[[route]]
path = "/"
upstream = "missing"

[upstream.app]
balance = "fastest"
servers = ["local host:80"]
keepalve = 3

[upstream.empty]
servers = []
"#;
    let got = errors(text);
    let expected = [
        "bad.toml:6:8: duplicate bind 127.0.0.1:8080 (each [[listener]] needs its own address)",
        "bad.toml:10:12: route names upstream \"missing\", which is not defined (defined upstreams: app, empty)",
        "bad.toml:13:11: unknown balance \"fastest\" (use round_robin, least_conn, random_two, peak_ewma or hash)",
        "bad.toml:14:12: `server` = \"local host:80\" is not an address with a port (write it as \"127.0.0.1:8080\", \"[::1]:8080\" or a host name with a port, \"app1:8080\")",
        "bad.toml:15:1: unknown key `keepalve` in [upstream.app] (did you mean `keepalive`?)",
        "bad.toml:18:11: upstream `empty` has an empty server list (add at least one server address)",
    ];
    assert_eq!(got, expected);
}

#[test]
fn syntax_errors_point_at_the_text() {
    let got = errors("[[listener]]\nbind = \"127.0.0.1:80\nworkers = 1\n");
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("bad.toml:2:"), "{}", got[0]);
    assert!(got[0].contains("invalid TOML"), "{}", got[0]);
    // A bare word where a string goes: one line, and the quoted form as the hint.
    let got = errors("[[route]]\nupstream = app\n");
    assert_eq!(got.len(), 1);
    assert!(!got[0].contains('\n'), "{}", got[0]);
    assert!(
        got[0].starts_with("bad.toml:2:12: invalid TOML")
            && got[0].ends_with("(a string needs quotes: upstream = \"app\")"),
        "{}",
        got[0]
    );
}

#[test]
fn a_servers_key_at_its_upstreams_level_says_where_it_belongs() {
    let got = errors("[upstream.app]\nservers = [\"127.0.0.1:9\"]\nweight = 2\n");
    let weight = got
        .iter()
        .find(|e| e.contains("unknown key `weight`"))
        .unwrap();
    assert!(
        weight.contains("(it belongs to a server: servers = [{ addr = "),
        "{weight}"
    );
    assert!(!weight.contains("takes: hash_key"), "{weight}");
}

#[test]
fn wrong_types_and_missing_sections() {
    let got = errors("workers = \"two\"\nheader_timeout = 5\n");
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:1:11: `workers` must be an integer")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:2:18: `header_timeout` is not a duration")),
        "{got:?}"
    );
    assert!(got.iter().any(|e| e.contains("no listener")), "{got:?}");
    assert!(got.iter().any(|e| e.contains("no route")), "{got:?}");
}

#[test]
fn bad_routes_and_servers() {
    let text = r#"
[[listener]]
bind = "127.0.0.1:7"
[[route]]
host = "http://x.com"
path = "api"
upstream = "a"
[upstream.a]
servers = ["127.0.0.1:1", { addr = "127.0.0.1:2", weight = 0 }, "127.0.0.1:1", { adr = "x" }]
"#;
    let got = errors(text);
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:5:8: host \"http://x.com\" is not a host name")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:6:8: path \"api\" does not start with /")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.contains("`weight` must be at least 1")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.contains("server 127.0.0.1:1 is listed twice")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.contains("unknown key `adr` in a server (did you mean `addr`?)")),
        "{got:?}"
    );
}

#[test]
fn hashing_keys_are_checked() {
    let text = r#"
[[listener]]
bind = "127.0.0.1:1"
[[route]]
upstream = "chat"
[upstream.chat]
balance = "hash"
hash_key = "room-$arg_room"
hash_method = "maglev"
hash_bound = 1.25
servers = ["127.0.0.1:2"]
[upstream.api]
balance = "peak_ewma"
ewma_decay = "5s"
servers = ["127.0.0.1:3"]
"#;
    let c = parse("good.toml", text).unwrap();
    match &c.upstreams[0].balance {
        sluice_config::Balance::Hash { method, bound, key } => {
            assert_eq!(*method, sluice_config::HashMethod::Maglev);
            assert_eq!(*bound, Some(1.25));
            assert_eq!(key.parts.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.upstreams[1].balance,
        sluice_config::Balance::PeakEwma {
            decay: Duration::from_secs(5)
        }
    );

    let bad = r#"
[[listener]]
bind = "127.0.0.1:1"
[[route]]
upstream = "a"
[upstream.a]
balance = "hash"
hash_key = "room-$arg_room$nope"
hash_method = "jump"
hash_bound = 0.9
servers = ["127.0.0.1:2"]
[upstream.b]
balance = "hash"
servers = ["127.0.0.1:3"]
[upstream.c]
hash_key = "$host"
servers = ["127.0.0.1:4"]
"#;
    let got = errors(bad);
    let expected = [
        "bad.toml:8:27: hash_key: unknown variable `$nope`",
        "bad.toml:9:15: unknown hash_method \"jump\"",
        "bad.toml:10:14: hash_bound = 0.9 must be above 1",
        "bad.toml:13:1: balance = \"hash\" needs a `hash_key`",
        "bad.toml:16:1: `hash_key` applies only with balance = \"hash\"",
    ];
    for (got, want) in got.iter().zip(expected) {
        assert!(
            got.starts_with(want),
            "{got}\n  does not start with\n{want}"
        );
    }
    assert_eq!(got.len(), expected.len(), "{got:#?}");
}

#[test]
fn settings_that_would_fail_at_run_time_are_refused() {
    let text = r#"
header_timeout = "3000000000000000h"
[[listener]]
bind = "0.0.0.0:8080"
[[route]]
path = "nope"
upstream = "missing"
[upstream.a]
read_timeout = "0s"
servers = ["127.0.0.1:8080", "0.0.0.0:9000", "127.0.0.1:0"]
"#;
    let got = errors(text);
    let expected = [
        "bad.toml:2:18: `header_timeout` is longer than a day",
        "bad.toml:6:8: path \"nope\" does not start with /",
        "bad.toml:7:12: route names upstream \"missing\"",
        "bad.toml:9:16: `read_timeout` must be above zero",
        "bad.toml:10:12: server 127.0.0.1:8080 is one of sluice's own listeners",
        "bad.toml:10:30: server 0.0.0.0:9000 is not an address to connect to",
        "bad.toml:10:46: server 127.0.0.1:0 is not an address to connect to",
    ];
    for (got, want) in got.iter().zip(expected) {
        assert!(
            got.starts_with(want),
            "{got}\n  does not start with\n{want}"
        );
    }
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    let empty = errors("route = []\nlistener = []\n");
    assert!(
        empty
            .iter()
            .any(|e| e.starts_with("bad.toml:1:9: no route")),
        "{empty:?}"
    );
}

#[test]
fn failure_handling_keys() {
    let text = r#"
pid_file = "/tmp/sluice-test.pid"
[[listener]]
bind = "127.0.0.1:1"
[[route]]
upstream = "app"
[upstream.app]
servers = ["127.0.0.1:2", { addr = "127.0.0.1:3" }, { addr = "127.0.0.1:4", backup = true }]
max_fails = 5
fail_window = "20s"
eject_for = "3s"
fail_status = [500, 503]
retries = 2
retry_non_idempotent = true
retry_budget = 0.1
slow_start = "15s"
[upstream.app.health]
path = "/healthz"
interval = "500ms"
expect = "2xx"
rise = 1
fall = 2
"#;
    let c = parse("good.toml", text).unwrap();
    let app = &c.upstreams[0];
    assert_eq!(
        app.servers.len(),
        3,
        "a server without weight is kept, with weight 1"
    );
    assert_eq!((app.servers[1].weight, app.servers[2].backup), (1, true));
    assert_eq!(app.failure.max_fails, 5);
    assert_eq!(app.failure.eject_for, Duration::from_secs(3));
    assert_eq!(app.failure.fail_status, vec![500, 503]);
    assert_eq!(
        (
            app.retry.retries,
            app.retry.non_idempotent,
            app.retry.budget
        ),
        (2, true, 0.1)
    );
    assert_eq!(app.slow_start, Duration::from_secs(15));
    let health = app.health.as_ref().unwrap();
    assert_eq!(
        (
            health.path.as_str(),
            health.interval,
            health.expect,
            health.rise,
            health.fall
        ),
        ("/healthz", Duration::from_millis(500), (200, 299), 1, 2)
    );
    assert_eq!(
        c.pid_file.as_deref(),
        Some(std::path::Path::new("/tmp/sluice-test.pid"))
    );

    let bad = r#"
[[listener]]
bind = "127.0.0.1:1"
[[route]]
upstream = "app"
[upstream.app]
servers = [{ addr = "127.0.0.1:2", backup = "yes" }]
fail_status = [404]
retry_budget = 3
[upstream.app.health]
path = "health"
expect = "9xx"
"#;
    let got = errors(bad);
    let expected = [
        "bad.toml:7:45: `backup` must be true or false",
        "bad.toml:8:15: `fail_status` must be a list of 5xx statuses",
        "bad.toml:9:16: retry_budget = 3 is not a fraction",
        "bad.toml:11:8: health path \"health\" does not start with /",
        "bad.toml:12:10: `expect` is not a status or status range",
    ];
    for (got, want) in got.iter().zip(expected) {
        assert!(
            got.starts_with(want),
            "{got}\n  does not start with\n{want}"
        );
    }
    assert_eq!(got.len(), expected.len(), "{got:#?}");
}

#[test]
fn the_admin_listener_is_loopback_unless_it_has_a_token() {
    let with = |admin: &str| format!("{GOOD}\n[admin]\n{admin}\n");
    let c = parse("a.toml", &with("")).unwrap();
    let admin = c.admin.expect("[admin] given");
    assert_eq!(admin.bind, "127.0.0.1:9901".parse().unwrap());
    assert_eq!(admin.token, None);
    assert_eq!(parse("a.toml", GOOD).unwrap().admin, None);
    let token = "0123456789abcdef0123";
    let open = parse(
        "a.toml",
        &with(&format!("bind = \"0.0.0.0:9901\"\ntoken = \"{token}\"")),
    )
    .unwrap();
    assert_eq!(open.admin.unwrap().token.as_deref(), Some(token));
    let bind_line = GOOD.matches('\n').count() + 3;
    let refused = errors(&with("bind = \"0.0.0.0:9901\""));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with(&format!("bad.toml:{}:8: the admin listener on 0.0.0.0:9901 is reachable from the network and has no `token`", bind_line)),
        "{refused:?}"
    );
    let short = errors(&with("bind = \"[::]:9901\"\ntoken = \"short\""));
    assert!(
        short
            .iter()
            .any(|e| e.contains("`token` must be at least 16")),
        "{short:?}"
    );
    let shared = errors(&with("bind = \"127.0.0.1:8080\""));
    assert!(shared[0].contains("is also a [[listener]]"), "{shared:?}");
    let unknown = errors(&with("bnid = \"127.0.0.1:9901\""));
    assert!(
        unknown[0].contains("unknown key `bnid` in [admin]"),
        "{unknown:?}"
    );
}

#[test]
fn the_admin_listener_limits_have_defaults_and_are_checked() {
    use std::time::Duration;
    let with = |admin: &str| format!("{GOOD}\n[admin]\n{admin}\n");
    let admin = parse("a.toml", &with("")).unwrap().admin.unwrap();
    assert_eq!(
        (admin.max_conns, admin.header_timeout),
        (64, Duration::from_secs(5))
    );
    let set = with("max_conns = 8\nheader_timeout = \"2s\"");
    let admin = parse("a.toml", &set).unwrap().admin.unwrap();
    assert_eq!(
        (admin.max_conns, admin.header_timeout),
        (8, Duration::from_secs(2))
    );
    // Every problem at once, each where it is.
    let line = GOOD.matches('\n').count() + 3;
    let bad = errors(&with("max_conns = 0\nheader_timeout = \"0s\""));
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad[0].starts_with(&format!(
            "bad.toml:{line}:13: `max_conns` must be at least 1"
        )),
        "{bad:?}"
    );
    assert!(
        bad[1].contains("`header_timeout` must be above zero"),
        "{bad:?}"
    );
    // Port 0 (any free port) never collides with a listener's port 0.
    let any = format!(
        "{}\n[admin]\nbind = \"127.0.0.1:0\"\n",
        GOOD.replace("127.0.0.1:8080", "127.0.0.1:0")
    );
    assert!(parse("a.toml", &any).is_ok(), "{:?}", errors(&any));
}

#[test]
fn access_log_keys() {
    use sluice_config::{LogFormat, LogTarget};
    let c = parse(
        "a.toml",
        &format!(
            "access_log = \"/var/log/sluice/access.log\"\naccess_log_format = \"json\"\n{GOOD}"
        ),
    )
    .unwrap();
    let log = c.access_log.unwrap();
    assert_eq!(
        log.target,
        LogTarget::File("/var/log/sluice/access.log".into())
    );
    assert_eq!(log.format, LogFormat::Json);
    let c = parse("a.toml", &format!("access_log = \"stdout\"\n{GOOD}")).unwrap();
    assert_eq!(c.access_log.unwrap().format, LogFormat::Combined);
    assert_eq!(parse("a.toml", GOOD).unwrap().access_log, None);
    let e = errors(&format!(
        "access_log = \"stdout\"\naccess_log_format = \"apache\"\n{GOOD}"
    ));
    assert!(
        e[0].starts_with("bad.toml:2:21: `access_log_format` = \"apache\" is not a log format"),
        "{e:?}"
    );
    let e = errors(&format!("access_log_format = \"json\"\n{GOOD}"));
    assert!(
        e[0].contains("`access_log_format` without `access_log`"),
        "{e:?}"
    );
}

#[test]
fn tls_names_certificate_files_beside_the_config() {
    let text = r#"
[[listener]]
bind = "0.0.0.0:443"
tls = { cert = "fullchain.pem", key = "/etc/ssl/privkey.pem", certificates = [{ cert = "api.pem", key = "api.key" }] }
[[route]]
upstream = "app"
[upstream.app]
servers = ["127.0.0.1:9101"]
"#;
    let c = parse("/etc/sluice/sluice.toml", text).unwrap();
    let tls = c.listeners[0].tls.as_ref().unwrap();
    let files: Vec<(&str, &str)> = tls
        .certificates
        .iter()
        .map(|f| (f.cert.to_str().unwrap(), f.key.to_str().unwrap()))
        .collect();
    assert_eq!(
        files,
        [
            ("/etc/sluice/fullchain.pem", "/etc/ssl/privkey.pem"),
            ("/etc/sluice/api.pem", "/etc/sluice/api.key")
        ]
    );
    assert_eq!(
        (tls.certificates[0].at.line, tls.certificates[1].at.line),
        (4, 4)
    );
    assert_eq!(parse("s.toml", GOOD).unwrap().listeners[0].tls, None);
}

#[test]
fn tls_keys_are_checked() {
    let text = r#"
[[listener]]
bind = "0.0.0.0:443"
tls = { cert = "a.pem" }
[[listener]]
bind = "0.0.0.0:444"
tls = { cert = "a.pem", key = "a.key", certificates = [{ cert = "b.pem", kye = "b.key" }], ciphers = "x" }
[[listener]]
bind = "0.0.0.0:445"
tls = "yes"
[[listener]]
bind = "0.0.0.0:446"
tls = {}
[[listener]]
bind = "0.0.0.0:447"
tls = { cert = "a.pem", key = "a.key" }
certificates = [{ cert = "b.pem", key = "b.key" }]
max_concurrent_streams = 64
[[route]]
upstream = "app"
[upstream.app]
servers = ["127.0.0.1:9101"]
"#;
    assert_eq!(
        errors(text),
        [
            "bad.toml:4:7: a certificate without `key` (give both cert = \"fullchain.pem\" and key = \"privkey.pem\")",
            "bad.toml:7:56: a certificate without `key` (give both cert = \"fullchain.pem\" and key = \"privkey.pem\")",
            "bad.toml:7:74: unknown key `kye` in a `certificates` entry (did you mean `key`?)",
            "bad.toml:7:92: unknown key `ciphers` in `tls` (`tls` takes: cert, key, certificates, acme)",
            "bad.toml:10:7: `tls` must be a table (write tls = { cert = \"fullchain.pem\", key = \"privkey.pem\" })",
            "bad.toml:13:7: `tls` names no certificate (add cert = \"fullchain.pem\" and key = \"privkey.pem\", or acme = true)",
            // Keys of `tls` or of [http2] written on the listener: where they belong.
            "bad.toml:17:1: unknown key `certificates` in [[listener]] (it belongs inside `tls`: tls = { cert = \"fullchain.pem\", key = \"privkey.pem\", certificates = [{ cert = \"other.pem\", key = \"other.key\" }] })",
            "bad.toml:18:1: unknown key `max_concurrent_streams` in [[listener]] (HTTP/2 limits are set for all listeners in the top-level [http2] table)",
        ]
    );
}

#[test]
fn answering_routes_and_header_edits_are_checked() {
    let text = r#"
[[route]]
path = "/a/"
return = { status = 301 }
[[route]]
path = "/b/"
return = { status = 200, location = "/x", body = "y" }
[[route]]
path = "/c/"
redirect = "http"
[[route]]
path = "/d/"
root = "/nonexistent/sluice/www"
[[route]]
path = "/e/"
upstream = "app"
return = 204
[[route]]
path = "/f/"
upstream = "app"
request_headers = { set = { "Content-Length" = "1", "X Bad" = "v", "X-Ok" = "$nope" }, remove = ["Transfer-Encoding"] }
response_headers = { add = {} }
[[route]]
path = "/g/"
return = 102
[[listener]]
bind = "127.0.0.1:8080"
[upstream.app]
servers = ["127.0.0.1:9101"]
"#;
    let got = errors(text);
    let expected = [
        "bad.toml:4:10: a redirect needs a `location`",
        "bad.toml:7:10: `return` takes `location` or `body`, not both",
        "bad.toml:10:12: `redirect` = \"http\" is not a redirect sluice knows",
        "bad.toml:13:8: root \"/nonexistent/sluice/www\" is not a directory",
        "bad.toml:17:1: a route takes one of upstream, return, redirect, root, not both `upstream` and `return`",
        "bad.toml:21:29: `Content-Length` is managed by sluice",
        "bad.toml:21:53: \"X Bad\" is not a header name",
        "bad.toml:21:77: unknown variable `$nope`",
        "bad.toml:21:98: `Transfer-Encoding` is managed by sluice",
        "bad.toml:22:22: unknown key `add` in `response_headers`",
        "bad.toml:25:10: status 102 cannot be returned",
    ];
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for (g, e) in got.iter().zip(expected) {
        assert!(g.starts_with(e), "{g}\n  expected to start with\n{e}");
    }
}

#[test]
fn answering_routes_parse() {
    use sluice_config::{Action, KeyPart, Variable};
    let text = r#"
[[listener]]
bind = "127.0.0.1:8080"
[[route]]
redirect = "https"
[[route]]
path = "/health"
return = { status = 200, body = "ok" }
[[route]]
path = "/api/"
upstream = "app"
response_headers = { set = { "Strict-Transport-Security" = "max-age=63072000" }, remove = ["Server"] }
[upstream.app]
servers = ["127.0.0.1:9101"]
"#;
    let c = parse("good.toml", text).unwrap();
    let Action::Return(r) = &c.routes[0].action else {
        panic!("{:?}", c.routes[0].action)
    };
    assert_eq!(r.status, 301);
    let parts = &r.location.as_ref().unwrap().parts;
    assert_eq!(parts[0], KeyPart::Literal("https://".into()));
    assert_eq!(
        parts[1..],
        [
            KeyPart::Var(Variable::Host),
            KeyPart::Var(Variable::RequestUri)
        ]
    );
    assert_eq!(c.routes[1].upstream(), None);
    assert_eq!(c.routes[2].upstream(), Some(0));
    assert!(c.routes[2].response_headers.drops("server"));
    assert!(c.routes[2]
        .response_headers
        .drops("STRICT-TRANSPORT-SECURITY"));
    assert!(!c.routes[2].response_headers.drops("x-other"));
}

#[test]
fn acme_settings_are_read_and_checked() {
    let text = r#"
[[listener]]
bind = "127.0.0.1:443"
tls = { acme = true }
[acme]
domains = ["Shop.Example", "www.shop.example"]
contact = ["mailto:ops@shop.example"]
[[route]]
upstream = "app"
[upstream.app]
servers = ["127.0.0.1:9101"]
"#;
    let c = parse("/etc/sluice/sluice.toml", text).unwrap();
    let acme = c.acme.as_ref().unwrap();
    assert_eq!(acme.domains, ["shop.example", "www.shop.example"]);
    assert_eq!(
        acme.directory,
        "https://acme-v02.api.letsencrypt.org/directory"
    );
    assert_eq!(acme.storage.to_str(), Some("/etc/sluice/acme"));
    assert_eq!(acme.renew_days, 30);
    let first = &c.listeners[0].tls.as_ref().unwrap().certificates[0];
    assert!(first.acme);
    assert_eq!(first.cert.to_str(), Some("/etc/sluice/acme/fullchain.pem"));
    let bad = r#"
[[listener]]
bind = "127.0.0.1:443"
tls = { acme = true }
[[listener]]
bind = "127.0.0.1:444"
tls = { acme = true }
[[route]]
upstream = "app"
[upstream.app]
servers = ["127.0.0.1:9101"]
"#;
    assert_eq!(
        errors(bad),
        [
            "bad.toml:4:16: `acme = true` but there is no [acme] section (add [acme] with domains = [\"example.com\"] (and contact = [\"mailto:...\"]))",
            "bad.toml:7:16: `acme = true` but there is no [acme] section (add [acme] with domains = [\"example.com\"] (and contact = [\"mailto:...\"]))",
        ]
    );
    let bad = "[[listener]]\nbind = \"127.0.0.1:1\"\n[acme]\ndomains = [\"*.shop.example\"]\ndirectory = \"http://x\"\n[[route]]\nreturn = 204\n";
    let got = errors(bad);
    assert!(
        got[0].starts_with("bad.toml:4:12: not a host name an ACME CA can issue for over HTTP-01"),
        "{got:?}"
    );
    assert!(
        got[1].starts_with("bad.toml:5:13: the ACME `directory` must be an https:// URL"),
        "{got:?}"
    );
}

#[test]
fn upstream_tls_is_read_and_checked() {
    let text = r#"
[[listener]]
bind = "127.0.0.1:8080"
[[route]]
upstream = "a"
[upstream.a]
servers = ["127.0.0.1:9101"]
tls = true
[upstream.b]
servers = ["127.0.0.1:9102"]
tls = { server_name = "API.internal", ca = "ca.pem" }
[upstream.c]
servers = ["127.0.0.1:9103"]
tls = false
"#;
    let c = parse("/etc/sluice/sluice.toml", text).unwrap();
    let a = c.upstreams[0].tls.as_ref().unwrap();
    assert_eq!((a.server_name.as_deref(), a.ca.as_deref()), (None, None));
    let b = c.upstreams[1].tls.as_ref().unwrap();
    assert_eq!(b.server_name.as_deref(), Some("api.internal"));
    assert_eq!(
        b.ca.as_deref().and_then(|p| p.to_str()),
        Some("/etc/sluice/ca.pem")
    );
    assert_eq!(c.upstreams[2].tls, None);
    let bad = text.replace("tls = false", "tls = { sni = \"x\" }");
    assert_eq!(
        errors(&bad),
        ["bad.toml:14:9: unknown key `sni` in an upstream's `tls` (an upstream's `tls` takes: server_name, ca)"]
    );
}

#[test]
fn max_conns_is_per_server_or_for_the_upstream_and_the_queue_has_defaults() {
    let text = r#"
[[listener]]
bind = "127.0.0.1:8080"
[[route]]
upstream = "a"
[upstream.a]
max_conns = 20
servers = ["127.0.0.1:1", { addr = "127.0.0.1:2", max_conns = 5 }]
[upstream.b]
servers = ["127.0.0.1:3"]
queue_timeout = "250ms"
max_queue = 7
"#;
    let c = parse("q.toml", text).unwrap();
    let (a, b) = (&c.upstreams[0], &c.upstreams[1]);
    assert_eq!(a.servers[0].max_conns, Some(20));
    assert_eq!(a.servers[1].max_conns, Some(5));
    assert_eq!(a.queue.timeout, Duration::from_secs(5));
    assert_eq!(a.queue.max, 10_000);
    assert_eq!(b.servers[0].max_conns, None);
    assert_eq!(b.queue.timeout, Duration::from_millis(250));
    assert_eq!(b.queue.max, 7);
}

#[test]
fn a_max_conns_of_zero_or_a_zero_queue_timeout_is_refused_where_written() {
    let text = r#"[[listener]]
bind = "127.0.0.1:8080"
[[route]]
upstream = "a"
[upstream.a]
servers = [{ addr = "127.0.0.1:2", max_conns = 0 }]
queue_timeout = "0s"
"#;
    let got = errors(text);
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:6:48: `max_conns` must be at least 1")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:7:17: `queue_timeout` must be above zero")),
        "{got:?}"
    );
}

#[test]
fn rate_limits_are_named_by_routes_and_checked() {
    let text = r#"[[listener]]
bind = "127.0.0.1:8080"
[limit.api]
rate = "10/h"
[limit.ok]
rate = "30/m"
burst = 5
[[route]]
upstream = "a"
limit = ["ok", "nope"]
[upstream.a]
servers = ["127.0.0.1:2"]
[limit.keyed]
rate = "1/s"
key = "$http_x_api_key$nope"
"#;
    let got = errors(text);
    // The key's own name, not another key's (it once said `hash_key:`).
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:15:23: key: unknown variable `$nope`")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:4:8: rate \"10/h\" is not a rate")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.starts_with("bad.toml:10:16: `limit` names no [limit.NAME]")),
        "{got:?}"
    );
    let good = text
        .replace("10/h", "10/s")
        .replace(", \"nope\"", "")
        .replace("$nope", "");
    let c = parse("good.toml", &good).unwrap();
    assert_eq!(c.limits.len(), 3);
    assert_eq!((c.limits[1].per_second, c.limits[1].burst), (0.5, 5));
    assert_eq!(c.routes[0].limits, [1]);
}

#[test]
fn a_route_naming_an_undefined_upstream_has_its_other_problems_listed_too() {
    let text = "[[listener]]\nbind = \"127.0.0.1:8080\"\n[[route]]\nupstream = \"missing\"\ntunnel_idle_timeout = \"forever\"\nlimit = [\"nolimit\"]\n[upstream.app]\nservers = [\"127.0.0.1:9000\"]\n";
    let errors = errors(text);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(
        errors[0].contains("upstream \"missing\", which is not defined"),
        "{errors:#?}"
    );
    assert!(
        errors[1].contains("`tunnel_idle_timeout` is not a duration"),
        "{errors:#?}"
    );
    assert!(
        errors[2].contains("`limit` names no [limit.NAME]"),
        "{errors:#?}"
    );
}

#[test]
fn bad_matching_and_rewrites_are_each_reported_at_their_place() {
    let text = r#"
[[listener]]
bind = "127.0.0.1:8080"

[[route]]
regex = '^/(unclosed'
upstream = "app"

[[route]]
path = "/a/"
exact = "/a"
upstream = "app"

[[route]]
exact = "/b"
skip_regex = true
upstream = "app"

[[route]]
regex = '\.png$'
under = "/nowhere/"
upstream = "app"

[[route]]
path = "/c/"
upstream = "app"
rewrite = [{ regex = '^/c/(.*)$', to = "/d/$nope", flag = "later" }]

[[route]]
regex = '^/go/(?<slug>[a-z]+)$'
return = { status = 301, location = "https://example.com/$slug" }

[[route]]
path = "/e/"
return = 404
upstream_path = "/f/"

[upstream.app]
servers = ["127.0.0.1:9101"]
"#;
    let errs = errors(text);
    let has = |place: &str, words: &str| {
        errs.iter()
            .any(|e| e.contains(&format!("bad.toml:{place}")) && e.contains(words))
    };
    assert!(has("6:9", "not a regular expression"), "{errs:#?}");
    assert!(has("11:1", "not both `path` and `exact`"), "{errs:#?}");
    assert!(has("16:1", "`skip_regex` goes with `path`"), "{errs:#?}");
    assert!(
        has("19:1", "`under = \"/nowhere/\"` names no route"),
        "{errs:#?}"
    );
    assert!(has("27:40", "unknown variable `$nope`"), "{errs:#?}");
    assert!(has("27:59", "unknown rewrite flag \"later\""), "{errs:#?}");
    assert!(
        has("36:17", "`upstream_path` is for a route with `upstream`"),
        "{errs:#?}"
    );
    // A named group is a variable of its route's templates.
    assert_eq!(errs.len(), 7, "{errs:#?}");
}

#[test]
fn compress_is_read_with_its_defaults_and_its_mistakes_are_named_where_written() {
    let text = r#"[[listener]]
bind = "127.0.0.1:8080"
[[route]]
path = "/a/"
upstream = "a"
compress = { gzip = 12, types = ["text/html; charset=utf-8"] }
[[route]]
path = "/c/"
upstream = "a"
compress = { precompressed = true }
[[route]]
path = "/b/"
upstream = "a"
compress = { gzip = false }
[[route]]
upstream = "a"
compress = "yes"
[[route]]
path = "/d/"
root = "."
compress = true
[upstream.a]
servers = ["127.0.0.1:2"]
"#;
    let got = errors(text);
    assert_eq!(got.len(), 6, "{got:?}");
    for expected in [
        "bad.toml:6:21: `gzip` must be a level from 1 to 9",
        "bad.toml:6:34: \"text/html; charset=utf-8\" is not a media type",
        "bad.toml:10:30: `precompressed` is for a `root` route's files",
        "bad.toml:14:12: `compress` turns every coding off",
        "bad.toml:17:12: `compress` must be true, false or a table",
        "bad.toml:21:12: a `root` route's files are not compressed on the fly",
    ] {
        assert!(
            got.iter().any(|e| e.starts_with(expected)),
            "{expected}\n{got:?}"
        );
    }
    let good = r#"[[listener]]
bind = "127.0.0.1:8080"
[[route]]
path = "/a/"
upstream = "a"
compress = { gzip = 6, types = ["Text/HTML", "application/*+json"], min_length = 20 }
[[route]]
upstream = "a"
compress = true
[upstream.a]
servers = ["127.0.0.1:2"]
"#;
    let c = parse("good.toml", good).unwrap();
    let a = c.routes[0].compress.as_ref().unwrap();
    assert_eq!(
        (a.gzip, a.br, a.zstd, a.min_length),
        (Some(6), None, None, 20)
    );
    assert_eq!(a.types, ["text/html", "application/*+json"]);
    let all = c.routes[1].compress.as_ref().unwrap();
    assert_eq!((all.gzip, all.br, all.zstd), (Some(2), Some(4), Some(3)));
    assert!(all.compresses("application/json") && !all.compresses("image/png"));
}
