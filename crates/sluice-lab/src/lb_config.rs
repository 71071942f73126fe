//! The balancer's config, generated for one configuration of an experiment: sluice's
//! TOML, nginx's nginx.conf or HAProxy's haproxy.cfg, each with the same servers,
//! algorithm, worker count and upstream keep-alive, so the same experiment compares
//! what a user runs today with sluice.
//!
//! Every path the generated configs name is under the run's own directory: nothing reads
//! or writes /etc, and no system nginx or HAProxy is disturbed.

use crate::spec::{Lb, LbKind};
use std::net::SocketAddr;
use std::path::Path;

/// Where the balancer listens and what it balances over.
pub struct Layout<'a> {
    pub listen: SocketAddr,
    /// The balancer's metrics listener (sluice's admin, HAProxy's Prometheus exporter):
    /// the lab's window into it.
    pub admin: SocketAddr,
    pub servers: &'a [SocketAddr],
    pub dir: &'a Path,
}

/// The config file's name and text.
pub fn render(lb: &Lb, at: &Layout) -> (&'static str, String) {
    match lb.run {
        LbKind::Sluice => ("sluice.toml", sluice(lb, at)),
        LbKind::Nginx => ("nginx.conf", nginx(lb, at)),
        LbKind::Haproxy => ("haproxy.cfg", haproxy(lb, at)),
    }
}

fn sluice(lb: &Lb, at: &Layout) -> String {
    let servers: Vec<String> = at.servers.iter().map(|s| format!("\"{s}\"")).collect();
    let key = match &lb.hash_key {
        Some(k) if lb.balance == "hash" => format!("hash_key = \"{k}\"\n"),
        _ => String::new(),
    };
    let mut limit = match lb.max_conns {
        Some(n) => format!("max_conns = {n}\n"),
        None => String::new(),
    };
    if lb.adaptive {
        limit.push_str("limit = \"adaptive\"\n");
    }
    if lb.max_conns.is_some() || lb.adaptive {
        let timeout = crate::spec::text(lb.queue_timeout);
        limit.push_str(&format!("queue_timeout = \"{timeout}\"\n"));
    }
    // keepalive = 0 turns pooling off: a connection per request, as nginx's default.
    format!(
        "workers = {}\n\n[admin]\nbind = \"{}\"\n\n[[listener]]\nbind = \"{}\"\n\n[[route]]\npath = \"/\"\nupstream = \"app\"\n\n[upstream.app]\nbalance = \"{}\"\n{key}servers = [{}]\nkeepalive = {}\n{limit}",
        lb.workers,
        at.admin,
        at.listen,
        lb.balance,
        servers.join(", "),
        if lb.keepalive { 128 } else { 0 }
    )
}

fn nginx(lb: &Lb, at: &Layout) -> String {
    let dir = at.dir.display();
    let method = match (lb.balance.as_str(), &lb.hash_key) {
        ("least_conn", _) => "least_conn;\n        ".to_string(),
        ("random_two", _) => "random two least_conn;\n        ".to_string(),
        ("hash", Some(key)) => format!("hash {key} consistent;\n        "),
        _ => String::new(),
    };
    // nginx's max_conns has no queue: a request finding every server at its limit is
    // answered 502 at once. The zone makes the count the whole process's.
    let (zone, limit) = match lb.max_conns {
        Some(n) => (
            "zone app 1m;\n        ".to_string(),
            format!(" max_conns={n}"),
        ),
        None => (String::new(), String::new()),
    };
    let servers: String = at
        .servers
        .iter()
        .map(|s| format!("server {s}{limit};\n        "))
        .collect();
    let method = format!("{zone}{method}");
    // Without `keepalive` nginx speaks HTTP/1.0 upstream and closes each connection:
    // its default, and the field notes' TIME_WAIT pile-up.
    let (pool, proxy) = if lb.keepalive {
        (
            "keepalive 128;\n        keepalive_requests 1000000;",
            "proxy_http_version 1.1;\n            proxy_set_header Upgrade $http_upgrade;\n            proxy_set_header Connection $connection_upgrade;",
        )
    } else {
        ("", "")
    };
    format!(
        "worker_processes {w};\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\nevents {{ worker_connections 10240; }}\nhttp {{\n    access_log off;\n    client_body_temp_path {dir}/client_body;\n    proxy_temp_path {dir}/proxy;\n    fastcgi_temp_path {dir}/fastcgi;\n    uwsgi_temp_path {dir}/uwsgi;\n    scgi_temp_path {dir}/scgi;\n    keepalive_requests 1000000;\n    map $http_upgrade $connection_upgrade {{ default upgrade; '' ''; }}\n    upstream app {{\n        {method}{servers}{pool}\n    }}\n    server {{\n        listen {listen};\n        location / {{\n            proxy_pass http://app;\n            {proxy}\n        }}\n    }}\n}}\n",
        w = lb.workers,
        listen = at.listen,
    )
}

fn haproxy(lb: &Lb, at: &Layout) -> String {
    let balance = match (lb.balance.as_str(), lb.hash_key.as_deref()) {
        ("least_conn", _) => "leastconn".to_string(),
        ("random_two", _) => "random(2)".to_string(),
        ("hash", Some("$remote_addr")) => "source\n    hash-type consistent".to_string(),
        ("hash", Some(k)) if k.starts_with("$arg_") => {
            format!(
                "url_param {}\n    hash-type consistent",
                &k["$arg_".len()..]
            )
        }
        ("hash", Some(k)) if k.starts_with("$http_") => {
            format!(
                "hdr({})\n    hash-type consistent",
                k["$http_".len()..].replace('_', "-")
            )
        }
        _ => "roundrobin".to_string(),
    };
    let (limit, queue) = match lb.max_conns {
        Some(n) => (
            format!(" maxconn {n}"),
            format!("    timeout queue {}ms\n", lb.queue_timeout.as_millis()),
        ),
        None => (String::new(), String::new()),
    };
    let servers: String = at
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| format!("    server app{} {s}{limit}\n", i + 1))
        .collect();
    let servers = format!("{queue}{servers}");
    // http-server-close: a new server connection per request, the same as keepalive off.
    let reuse = if lb.keepalive {
        "option http-keep-alive\n    http-reuse always"
    } else {
        "option http-server-close"
    };
    format!(
        "global\n    nbthread {}\n    maxconn 4096\n    pidfile {}/haproxy.pid\n\ndefaults\n    mode http\n    {reuse}\n    maxconn 4096\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n    timeout http-keep-alive 30s\n    timeout tunnel 1h\n\nfrontend stats\n    bind {}\n    http-request use-service prometheus-exporter if {{ path /metrics }}\n\nfrontend fe\n    bind {}\n    default_backend app\n\nbackend app\n    balance {balance}\n{servers}",
        lb.workers,
        at.dir.display(),
        at.admin,
        at.listen,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's directory, removed when dropped (a failed test's too).
    struct RemovedOnDrop(std::path::PathBuf);

    impl Drop for RemovedOnDrop {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn each_balancer_gets_the_same_servers_and_keep_alive_choice() {
        let servers: Vec<SocketAddr> = vec!["127.0.0.1:9001".parse().unwrap()];
        let at = Layout {
            listen: "127.0.0.1:8000".parse().unwrap(),
            admin: "127.0.0.1:8001".parse().unwrap(),
            servers: &servers,
            dir: Path::new("/tmp/x"),
        };
        let mut lb = Lb::default();
        let (_, s) = render(&lb, &at);
        assert!(s.contains("servers = [\"127.0.0.1:9001\"]") && s.contains("keepalive = 128"));
        lb.keepalive = false;
        lb.run = LbKind::Nginx;
        let (_, n) = render(&lb, &at);
        assert!(n.contains("server 127.0.0.1:9001;") && !n.contains("keepalive 128"));
        lb.run = LbKind::Haproxy;
        let (_, h) = render(&lb, &at);
        assert!(h.contains("server app1 127.0.0.1:9001") && h.contains("http-server-close"));
    }

    /// Runs `program` with `args`, found on the PATH or in /usr/sbin.
    fn tool(program: &str, args: &[&str]) -> std::process::Output {
        let path = ["/usr/sbin", "/usr/bin"]
            .iter()
            .map(|d| Path::new(d).join(program))
            .find(|p| p.exists())
            .unwrap_or_else(|| program.into());
        std::process::Command::new(path)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program} (scripts/test.sh installs it): {e}"))
    }

    #[test]
    #[ignore = "needs haproxy and nginx"]
    fn a_server_limit_is_written_as_each_balancer_takes_it_and_each_accepts_it() {
        let dir = std::env::temp_dir().join(format!("sluice-lb-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _removed = RemovedOnDrop(dir.clone());
        let servers: Vec<SocketAddr> = vec![
            "127.0.0.1:9001".parse().unwrap(),
            "127.0.0.1:9002".parse().unwrap(),
        ];
        let at = Layout {
            listen: "127.0.0.1:8000".parse().unwrap(),
            admin: "127.0.0.1:8001".parse().unwrap(),
            servers: &servers,
            dir: &dir,
        };
        let mut lb = Lb {
            max_conns: Some(20),
            queue_timeout: std::time::Duration::from_millis(1500),
            ..Lb::default()
        };
        let (_, s) = render(&lb, &at);
        let config = sluice_config::parse("sluice.toml", &s).unwrap();
        let app = &config.upstreams[0];
        assert!(app.servers.iter().all(|s| s.max_conns == Some(20)));
        assert_eq!(app.queue.timeout, std::time::Duration::from_millis(1500));
        let adaptive = Lb {
            adaptive: true,
            max_conns: None,
            ..lb.clone()
        };
        let config = sluice_config::parse("sluice.toml", &render(&adaptive, &at).1).unwrap();
        assert!(config.upstreams[0].adaptive);
        lb.run = LbKind::Haproxy;
        let (_, h) = render(&lb, &at);
        assert!(
            h.contains("server app2 127.0.0.1:9002 maxconn 20")
                && h.contains("timeout queue 1500ms")
        );
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, &h).unwrap();
        let out = tool("haproxy", &["-c", "-f", file.to_str().unwrap()]);
        assert!(out.status.success(), "{h}\n{out:?}");
        lb.run = LbKind::Nginx;
        let (_, n) = render(&lb, &at);
        assert!(n.contains("zone app 1m;") && n.contains("server 127.0.0.1:9002 max_conns=20;"));
        let file = dir.join("nginx.conf");
        std::fs::write(&file, &n).unwrap();
        let args = [
            "-t",
            "-q",
            "-p",
            dir.to_str().unwrap(),
            "-c",
            file.to_str().unwrap(),
        ];
        let out = tool("nginx", &args);
        assert!(out.status.success(), "{n}\n{out:?}");
    }
}
