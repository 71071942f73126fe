//! `sluice import`, as a user moving in from nginx runs it: an nginx.conf in, a config
//! `sluice check` accepts and `sluice serve` runs; and server host names resolved.

use super::harness::*;
use std::process::Command;

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.env("SLUICE_LOG", "warn");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_nginx_conf_checks_and_serves() {
    let a = backend("a").await;
    let b = backend("b").await;
    let dir = TempDir::new("import");
    // Docker-compose style: a server by host name, another by address.
    let nginx = format!(
        "worker_processes 2;\nevents {{ worker_connections 1024; }}\nhttp {{\n  upstream app {{\n    least_conn;\n    server localhost:{};\n    server 127.0.0.1:{};\n    keepalive 16;\n  }}\n  server {{\n    listen 127.0.0.1:0;\n    location / {{\n      proxy_pass http://app;\n      proxy_set_header X-From nginx-import;\n    }}\n    location = /ping {{ return 200 \"pong\"; }}\n  }}\n}}\n",
        a.port(),
        b.port()
    );
    let conf = dir.file("nginx.conf", &nginx);
    let out = sluice().arg("import").arg(&conf).output().unwrap();
    let (toml, notes) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "{notes}");
    let file = conf.display().to_string();
    assert!(
        notes.contains(&format!(
            "{file}:2: worker_connections: 1024: sluice has no per-worker connection cap"
        )),
        "{notes}"
    );
    assert!(toml.contains("exact = \"/ping\""), "{toml}");
    let path = dir.file("sluice.toml", &toml);
    let check = sluice().args(["check", "-c"]).arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "{}\n{toml}",
        String::from_utf8_lossy(&check.stderr)
    );
    let toml = crate::support::admin_on_a_free_port(&toml);
    let proxy = SluiceProcess::serve("sluice.toml", &toml, "warn").await;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..6 {
        let reply = get(proxy.addr(), "/").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        seen.insert(reply.header("x-backend").unwrap().to_string());
    }
    assert_eq!(seen.len(), 2, "both servers, the named one too: {seen:?}");
    assert_eq!(get(proxy.addr(), "/ping").await.text(), "pong");
    // `= /ping` is exact: a longer path goes to `/`.
    assert_eq!(get(proxy.addr(), "/pingx").await.status, 200);
    assert_ne!(get(proxy.addr(), "/pingx").await.text(), "pong");
}

#[test]
fn a_server_name_that_does_not_resolve_is_a_check_error_at_its_place() {
    let dir = TempDir::new("resolve");
    let text = "[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"127.0.0.1:9\", \"no-such-host.invalid:8080\"]\n";
    let path = dir.file("names.toml", text);
    let out = sluice().args(["check", "-c"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "{}:6:27: server no-such-host.invalid:8080: cannot resolve no-such-host.invalid",
        path.display()
    );
    assert!(stderr.contains(&want), "{want:?} not in:\n{stderr}");
}
