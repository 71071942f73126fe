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
            Ok(ExitCode::from(1))
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

fn table(status: &Value, upstreams: &Value) -> String {
    let mut out = format!(
        "sluice {} up {:.0} s, config generation {}, {} workers, reloads: {} applied, {} refused\n\n",
        status["version"].as_str().unwrap_or("?"),
        status["uptime_s"].as_f64().unwrap_or(0.0),
        status["generation"],
        status["workers"],
        status["reloads"]["applied"],
        status["reloads"]["refused"],
    );
    out.push_str("upstream         server                  health    weight  in flight    2xx      4xx      5xx  retries  ejections  last error\n");
    for u in upstreams["upstreams"].as_array().into_iter().flatten() {
        for s in u["servers"].as_array().into_iter().flatten() {
            let last = s["last_errors"]
                .as_array()
                .and_then(|e| e.last())
                .map_or(String::from("-"), |e| {
                    format!("{} {}", e["status"], e["cause"].as_str().unwrap_or(""))
                });
            // JSON values ignore width in formatting: make them strings first.
            let n = |v: &Value| v.to_string();
            out.push_str(&format!(
                "{:<16} {:<23} {:<9} {:>6} {:>10} {:>6} {:>8} {:>8} {:>8} {:>10}  {}\n",
                u["name"].as_str().unwrap_or("?"),
                s["addr"].as_str().unwrap_or("?"),
                s["health"].as_str().unwrap_or("?"),
                n(&s["weight"]),
                n(&s["in_flight"]),
                n(&s["requests"]["2xx"]),
                n(&s["requests"]["4xx"]),
                n(&s["requests"]["5xx"]),
                n(&s["retries"]),
                n(&s["ejections"]),
                last
            ));
        }
    }
    out
}
