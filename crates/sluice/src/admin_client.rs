//! Talking to a running sluice's admin API from the command line: `sluice reload` (when
//! the config has an `[admin]` listener) and `sluice status`.

use anyhow::{anyhow, Context};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::process::ExitCode;
use std::time::Duration;

/// The address to reach an admin listener bound to `bind` from this machine (an
/// unspecified address is reached on loopback).
fn reachable(bind: SocketAddr) -> SocketAddr {
    match bind.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, bind.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, bind.port()).into(),
        _ => bind,
    }
}

/// One request to the admin API: its status and JSON body.
pub fn call(
    admin: &sluice_config::Admin,
    method: &str,
    path: &str,
) -> anyhow::Result<(u16, Value)> {
    let addr = reachable(admin.bind);
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("no admin listener answers on {addr}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(90)))?;
    let auth = admin
        .token
        .as_ref()
        .map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("{addr} did not answer HTTP"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("{addr} did not answer HTTP"))?;
    let json = serde_json::from_str(body).unwrap_or(Value::Null);
    Ok((status, json))
}

/// `sluice reload` through the admin API: prints what changed, or why the running
/// sluice kept its config (exit 1).
pub fn reload(admin: &sluice_config::Admin) -> anyhow::Result<ExitCode> {
    let (status, answer) = call(admin, "POST", "/api/reload")?;
    match status {
        200 => {
            let changed = answer["changed"].as_str().unwrap_or("done");
            println!("reloaded: {changed}");
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            let why = answer["error"].as_str().unwrap_or("no reason given");
            eprintln!("sluice: the running sluice refused the reload and keeps its config:\n{why}");
            Ok(ExitCode::from(crate::exit::FAILURE))
        }
    }
}

/// `sluice status`: the admin API's view as a terminal table.
pub fn status(admin: &sluice_config::Admin) -> anyhow::Result<ExitCode> {
    let (code, status) = call(admin, "GET", "/api/status")?;
    if code != 200 {
        return Err(anyhow!(
            "the admin API answered {code}: {}",
            status["error"]
        ));
    }
    let (_, upstreams) = call(admin, "GET", "/api/upstreams")?;
    print!("{}", table(&status, &upstreams));
    Ok(ExitCode::SUCCESS)
}

/// One server's row of the status table.
fn server_row(u: &Value, s: &Value) -> Vec<String> {
    let last = s["last_errors"]
        .as_array()
        .and_then(|e| e.last())
        .map_or(String::from("-"), |e| {
            format!("{} {}", e["status"], e["cause"].as_str().unwrap_or(""))
        });
    let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
    vec![
        text(&u["name"]),
        text(&s["addr"]),
        health(s),
        s["weight"].to_string(),
        s["in_flight"].to_string(),
        s["requests"]["2xx"].to_string(),
        s["requests"]["4xx"].to_string(),
        s["requests"]["5xx"].to_string(),
        s["retries"].to_string(),
        s["ejections"].to_string(),
        last,
    ]
}

/// The server's health as the API says it, with what a drain's lease has left
/// (`drained (lease 12s)`): a drain that ends by itself is told from an operator's.
fn health(s: &Value) -> String {
    let health = s["health"].as_str().unwrap_or("?");
    match s["lease_ms"].as_u64() {
        Some(ms) if health == "drained" => format!("drained (lease {}s)", ms.div_ceil(1000)),
        _ => health.to_string(),
    }
}

/// `rows` as aligned columns two spaces apart (`right`: which are right-aligned); the
/// last column is not padded.
fn columns(rows: &[Vec<String>], right: &[bool]) -> String {
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..right.len()).map(width).collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| match (right[c], c + 1 == row.len()) {
                (_, true) => cell.clone(),
                (true, _) => format!("{cell:>w$}", w = widths[c]),
                (false, _) => format!("{cell:<w$}", w = widths[c]),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn table(status: &Value, upstreams: &Value) -> String {
    let mut out = format!(
        "sluice {} up {:.0} s, config generation {}, {}, reloads: {} applied, {} refused\n\n",
        status["version"].as_str().unwrap_or("?"),
        status["uptime_s"].as_f64().unwrap_or(0.0),
        status["generation"],
        crate::plural::counted(status["workers"].as_u64().unwrap_or(0) as usize, "worker"),
        status["reloads"]["applied"],
        status["reloads"]["refused"],
    );
    let header = [
        "upstream",
        "server",
        "health",
        "weight",
        "in flight",
        "2xx",
        "4xx",
        "5xx",
        "retries",
        "ejections",
        "last error",
    ];
    let mut rows = vec![header.map(String::from).to_vec()];
    for u in upstreams["upstreams"].as_array().into_iter().flatten() {
        for s in u["servers"].as_array().into_iter().flatten() {
            rows.push(server_row(u, s));
        }
    }
    // Text on the left, counts on the right, each column as wide as its widest cell.
    let right = [
        false, false, false, true, true, true, true, true, true, true, false,
    ];
    out.push_str(&columns(&rows, &right));
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_status_table_keeps_its_columns_with_long_names_and_large_counts() {
        let status = serde_json::json!({"version": "0.1.0", "uptime_s": 5.0, "generation": 1,
            "workers": 2, "reloads": {"applied": 0, "refused": 0}});
        let server = |addr: &str, ok: u64| {
            serde_json::json!({"addr": addr, "health": "up", "weight": 1, "in_flight": 0,
                "requests": {"2xx": ok, "4xx": 0, "5xx": 0}, "retries": 0, "ejections": 0,
                "last_errors": []})
        };
        let upstreams = serde_json::json!({"upstreams": [
            {"name": "a-very-long-upstream-name-indeed", "servers": [
                server("10.0.0.1:8080", 1234567), server("app-server-with-a-long-name.internal:8080", 3)]},
        ]});
        let text = super::table(&status, &upstreams);
        let lines: Vec<&str> = text.lines().skip(2).collect();
        // Every line's "2xx" cell ends at the header's "2xx".
        let end = lines[0].find("2xx").unwrap() + 3;
        for line in &lines[1..] {
            let cell = &line[..end];
            assert!(cell.ends_with(char::is_numeric), "{text}");
            assert_eq!(line.as_bytes()[end], b' ', "{text}");
        }
        assert!(text.contains("1234567"), "{text}");
    }

    #[test]
    fn a_drain_with_a_lease_says_what_it_has_left() {
        let server = |health: &str, lease: serde_json::Value| serde_json::json!({"health": health, "lease_ms": lease});
        let health = |s| super::health(&s);
        assert_eq!(
            health(server("drained", 11_200.into())),
            "drained (lease 12s)"
        );
        assert_eq!(
            health(server("drained", serde_json::Value::Null)),
            "drained"
        );
        assert_eq!(health(server("down", 3000.into())), "down");
        assert_eq!(health(server("up", serde_json::Value::Null)), "up");
    }
}
