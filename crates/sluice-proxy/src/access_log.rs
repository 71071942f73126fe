//! The access log: one line per finished request, in nginx's `combined` format (which
//! log analysers read) followed by `key=value` fields, or as JSON.
//!
//! Each worker formats lines into a buffer of its own and writes it out whole, when it
//! passes 32 KiB and at least once a second, so there is never a write per request.
//! The file is opened with `O_APPEND`, so the workers' writes never interleave within a
//! buffer, and reopened on SIGUSR1 (logrotate moves the file, then signals).
//!
//! Formatting takes no lock and allocates nothing once the buffers have grown.

use sluice_config::{AccessLog as Config, LogFormat, LogTarget};
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A worker writes its buffer out beyond this.
pub const FLUSH_AT: usize = 32 * 1024;

/// Where lines go; shared by the workers, locked once per buffer written.
pub struct AccessLog {
    pub config: Config,
    sink: Mutex<Sink>,
}

enum Sink {
    Stdout,
    File(File),
}

impl AccessLog {
    /// Opens the log (an error names the file).
    pub fn open(config: &Config) -> io::Result<AccessLog> {
        Ok(AccessLog {
            sink: Mutex::new(open_sink(&config.target)?),
            config: config.clone(),
        })
    }

    /// Opens the file again (after logrotate moved it); the old stays on error.
    pub fn reopen(&self) -> io::Result<()> {
        let sink = open_sink(&self.config.target)?;
        *self.sink.lock().unwrap_or_else(|p| p.into_inner()) = sink;
        Ok(())
    }

    /// Writes `lines` (whole lines) and empties it.
    pub fn write(&self, lines: &mut Vec<u8>) {
        if lines.is_empty() {
            return;
        }
        let mut sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        let written = match &mut *sink {
            Sink::Stdout => io::stdout().lock().write_all(lines),
            Sink::File(f) => f.write_all(lines),
        };
        if let Err(e) = written {
            tracing::warn!(cause = %e, "access log write failed; its lines are lost");
        }
        lines.clear();
    }
}

fn open_sink(target: &LogTarget) -> io::Result<Sink> {
    match target {
        LogTarget::Stdout => Ok(Sink::Stdout),
        LogTarget::File(path) => OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(Sink::File)
            .map_err(|e| io::Error::new(e.kind(), format!("access log {}: {e}", path.display()))),
    }
}

/// A request's identity, as `[request_id]` names it: in its access log line and its
/// error lines.
#[derive(Debug)]
pub struct Identity {
    pub request_id: Box<str>,
    /// The trace id of its `traceparent`, when `[request_id]` passes them on.
    pub trace_id: Option<[u8; 32]>,
}

impl Identity {
    pub fn trace_id(&self) -> &str {
        self.trace_id
            .as_ref()
            .and_then(|t| std::str::from_utf8(t).ok())
            .unwrap_or("-")
    }
}

/// One finished request, as the log writes it.
pub struct Entry<'a> {
    pub client: Option<SocketAddr>,
    pub at: SystemTime,
    /// `METHOD TARGET VERSION`, as the client sent it (`-` when unreadable).
    pub request: &'a str,
    pub referer: &'a str,
    pub user_agent: &'a str,
    /// The basic-auth user, where the route asked for one (`$remote_user`).
    pub user: Option<&'a str>,
    pub status: u16,
    pub bytes_sent: u64,
    pub request_time: Duration,
    pub upstream: Option<SocketAddr>,
    pub upstream_time: Option<Duration>,
    pub tries: usize,
    pub route: Option<&'a str>,
    /// Time the request waited for a server below its `max_conns`, if it waited.
    pub queue_time: Option<Duration>,
    /// Its identity, when `[request_id]` asks for one: `request_id=` and `trace_id=`.
    pub identity: Option<&'a Identity>,
}

impl Entry<'_> {
    /// Appends the line (with its newline) to `out`.
    pub fn write(&self, format: LogFormat, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = match format {
            LogFormat::Combined => self.combined(out),
            LogFormat::Json => self.json(out),
        };
    }

    // Written piece by piece rather than with `write!`: the formatting machinery cost
    // more than the rest of the line (measured with bench/compare.sh ACCESS_LOG=1).
    fn combined(&self, out: &mut Vec<u8>) -> io::Result<()> {
        push_ip(out, self.client.map(|c| c.ip()));
        out.extend_from_slice(b" - ");
        escaped(out, self.user.unwrap_or("-"));
        out.extend_from_slice(b" [");
        with_time(self.at, |t| out.extend_from_slice(t.clf.as_bytes()));
        out.extend_from_slice(b"] \"");
        escaped(out, self.request);
        out.extend_from_slice(b"\" ");
        push_num(out, u64::from(self.status));
        out.push(b' ');
        push_num(out, self.bytes_sent);
        out.extend_from_slice(b" \"");
        escaped(out, self.referer);
        out.extend_from_slice(b"\" \"");
        escaped(out, self.user_agent);
        out.extend_from_slice(b"\" upstream=");
        match self.upstream {
            Some(a) => {
                push_ip(out, Some(a.ip()));
                out.push(b':');
                push_num(out, u64::from(a.port()));
            }
            None => out.push(b'-'),
        }
        out.extend_from_slice(b" upstream_time=");
        match self.upstream_time {
            Some(d) => push_seconds(out, d),
            None => out.push(b'-'),
        }
        out.extend_from_slice(b" request_time=");
        push_seconds(out, self.request_time);
        out.extend_from_slice(b" tries=");
        push_num(out, self.tries as u64);
        out.extend_from_slice(b" route=");
        escaped(out, self.route.unwrap_or("-"));
        out.extend_from_slice(b" queue_time=");
        match self.queue_time {
            Some(d) => push_seconds(out, d),
            None => out.push(b'-'),
        }
        if let Some(id) = self.identity {
            out.extend_from_slice(b" request_id=");
            escaped(out, &id.request_id);
            out.extend_from_slice(b" trace_id=");
            out.extend_from_slice(id.trace_id().as_bytes());
        }
        out.push(b'\n');
        Ok(())
    }

    fn json(&self, out: &mut Vec<u8>) -> io::Result<()> {
        out.extend_from_slice(b"{\"time\":\"");
        with_time(self.at, |t| out.extend_from_slice(t.iso.as_bytes()));
        write!(
            out,
            "\",\"client\":\"{}\",\"request\":\"",
            Shown(self.client.map(|c| c.ip()))
        )?;
        json_escaped(out, self.request);
        write!(
            out,
            "\",\"status\":{},\"bytes_sent\":{},\"referer\":\"",
            self.status, self.bytes_sent
        )?;
        json_escaped(out, self.referer);
        out.extend_from_slice(b"\",\"user_agent\":\"");
        json_escaped(out, self.user_agent);
        out.extend_from_slice(b"\",\"user\":\"");
        json_escaped(out, self.user.unwrap_or("-"));
        write!(
            out,
            "\",\"request_time\":{:.3},\"upstream\":\"{}\",\"upstream_time\":{},\"tries\":{},\"route\":\"",
            self.request_time.as_secs_f64(),
            Shown(self.upstream),
            JsonSeconds(self.upstream_time),
            self.tries,
        )?;
        json_escaped(out, self.route.unwrap_or("-"));
        write!(out, "\",\"queue_time\":{}", JsonSeconds(self.queue_time))?;
        if let Some(id) = self.identity {
            out.extend_from_slice(b",\"request_id\":\"");
            json_escaped(out, &id.request_id);
            write!(out, "\",\"trace_id\":\"{}\"", id.trace_id())?;
        }
        out.extend_from_slice(b"}\n");
        Ok(())
    }
}

fn push_num(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Seconds with millisecond resolution, as nginx writes times: `0.003`.
fn push_seconds(out: &mut Vec<u8>, d: Duration) {
    let ms = d.as_millis() as u64;
    push_num(out, ms / 1000);
    let frac = ms % 1000;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// An IP address (IPv4 without the formatting machinery), or `-`.
fn push_ip(out: &mut Vec<u8>, ip: Option<std::net::IpAddr>) {
    match ip {
        Some(std::net::IpAddr::V4(v4)) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                push_num(out, u64::from(octet));
            }
        }
        Some(ip) => {
            let _ = write!(out, "{ip}");
        }
        None => out.push(b'-'),
    }
}

/// Client text, safe inside the double quotes of a combined line: `"` and `\` escaped,
/// control and non-ASCII bytes as `\xHH` (as nginx does), so no line can be forged.
fn escaped(out: &mut Vec<u8>, text: &str) {
    for &b in text.as_bytes() {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            0x20..=0x7e => out.push(b),
            _ => {
                let _ = write!(out, "\\x{b:02X}");
            }
        }
    }
}

/// Client text as a JSON string's content: `"`, `\` and control characters escaped
/// (`\u00HH`), the rest as it is (valid UTF-8 already).
fn json_escaped(out: &mut Vec<u8>, text: &str) {
    for c in text.chars() {
        match c {
            '"' | '\\' => out.extend_from_slice(&[b'\\', c as u8]),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let mut utf8 = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
}

struct JsonSeconds(Option<Duration>);

impl std::fmt::Display for JsonSeconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(d) => write!(f, "{:.3}", d.as_secs_f64()),
            None => f.write_str("null"),
        }
    }
}

/// A second's timestamps, formatted once and reused for every line of that second.
struct Stamp {
    second: u64,
    /// `23/Nov/2026:13:48:34 +0000` (the common log format; UTC).
    clf: String,
    /// `2026-11-23T13:48:34Z`.
    iso: String,
}

thread_local! {
    static STAMP: RefCell<Stamp> = const {
        RefCell::new(Stamp { second: u64::MAX, clf: String::new(), iso: String::new() })
    };
}

fn with_time(at: SystemTime, f: impl FnOnce(&Stamp)) {
    let second = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    STAMP.with(|s| {
        let mut s = s.borrow_mut();
        if s.second != second {
            let (y, mo, d, h, mi, sec) = crate::clock::civil(second);
            const MONTHS: [&str; 12] = [
                "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
            ];
            s.clf = format!(
                "{d:02}/{}/{y}:{h:02}:{mi:02}:{sec:02} +0000",
                MONTHS[mo as usize - 1]
            );
            s.iso = format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}Z");
            s.second = second;
        }
        f(&s);
    });
}

/// `METHOD TARGET VERSION`, `Referer` and `User-Agent` of a request head, copied into
/// `into` (reused between requests): what the log line needs after the head is gone.
pub fn capture(head: &[u8], into: &mut String) -> (usize, usize) {
    into.clear();
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    into.push_str(lines.next().unwrap_or("-"));
    let request_end = into.len();
    let mut referer = "-";
    let mut agent = "-";
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("referer") {
                referer = value.trim();
            } else if name.eq_ignore_ascii_case("user-agent") {
                agent = value.trim();
            }
        }
    }
    into.push_str(referer);
    let referer_end = into.len();
    into.push_str(agent);
    (request_end, referer_end)
}

/// A value, or `-` when there is none (as access logs write it).
pub(crate) struct Shown<T>(pub Option<T>);

impl<T: std::fmt::Display> std::fmt::Display for Shown<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(request: &'a str, agent: &'a str) -> Entry<'a> {
        Entry {
            client: Some("192.0.2.7:40000".parse().unwrap()),
            at: UNIX_EPOCH + Duration::from_secs(1_795_441_714),
            request,
            referer: "-",
            user_agent: agent,
            user: None,
            identity: None,
            status: 200,
            bytes_sent: 612,
            request_time: Duration::from_micros(1500),
            upstream: Some("10.0.0.2:8080".parse().unwrap()),
            upstream_time: Some(Duration::from_micros(1200)),
            tries: 1,
            route: Some("/api/"),
            queue_time: None,
        }
    }

    #[test]
    fn combined_lines_are_nginx_s_then_fields() {
        let mut out = Vec::new();
        entry("GET /a?b=1 HTTP/1.1", "curl/8.0").write(LogFormat::Combined, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "192.0.2.7 - - [23/Nov/2026:13:48:34 +0000] \"GET /a?b=1 HTTP/1.1\" 200 612 \"-\" \"curl/8.0\" upstream=10.0.0.2:8080 upstream_time=0.001 request_time=0.001 tries=1 route=/api/ queue_time=-\n"
        );
    }

    #[test]
    fn client_text_cannot_forge_lines_or_fields() {
        let mut out = Vec::new();
        entry("GET / HTTP/1.1", "x\" 500 \"\n\u{1}é").write(LogFormat::Json, &mut out);
        let line = String::from_utf8(out).unwrap();
        assert_eq!(line.matches('\n').count(), 1);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["user_agent"], "x\" 500 \"\n\u{1}é");
        let mut combined = Vec::new();
        entry("GET / HTTP/1.1", "x\" 500 \"\n\u{1}é").write(LogFormat::Combined, &mut combined);
        let combined = String::from_utf8(combined).unwrap();
        assert!(
            combined.contains("\"x\\\" 500 \\\"\\x0A\\x01\\xC3\\xA9\""),
            "{combined}"
        );
        assert_eq!(combined.matches('\n').count(), 1);
        assert_eq!(
            (v["status"].as_u64(), v["tries"].as_u64()),
            (Some(200), Some(1))
        );
        assert_eq!(v["time"], "2026-11-23T13:48:34Z");
        assert_eq!(v["upstream_time"], 0.001);
    }

    #[test]
    fn dates() {
        use crate::clock::civil;
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil(1_795_441_714), (2026, 11, 23, 13, 48, 34));
    }

    #[test]
    fn heads_are_captured() {
        let mut s = String::new();
        let head = b"GET /x HTTP/1.1\r\nHost: a\r\nUser-Agent: ua/1\r\nreferer: http://r/\r\n\r\n";
        let (r, f) = capture(head, &mut s);
        assert_eq!(
            (&s[..r], &s[r..f], &s[f..]),
            ("GET /x HTTP/1.1", "http://r/", "ua/1")
        );
    }
}
