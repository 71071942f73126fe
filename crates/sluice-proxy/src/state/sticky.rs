//! An upstream's sticky sessions (`sticky`): which server a request's session is on, and
//! what a response tells (the cookie to set, or the application's session to learn).
//!
//! `cookie`: the cookie's value is the server's identity, as nginx's `sticky cookie`
//! makes it (the MD5 of `IP:port` in hexadecimal), so that clients bound by nginx stay
//! where they were. `learn`: a table from the application's session cookie's value to
//! the server that set it, shared by all workers, kept across reloads; an entry unseen
//! for `timeout` is gone. Never picks a server itself: it names one, and the balancer's
//! snapshot says whether it may take the request.

use crate::state::server::ServerState;
use md5::{Digest, Md5};
use sluice_config::{CookieAttributes, SameSite, Sticky};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One upstream's stickiness.
pub struct Stickiness {
    /// The cookie a request names its session in.
    pub cookie: String,
    mode: Mode,
}

enum Mode {
    /// Each server's identity (by index), and the attributes after the value.
    Insert {
        ids: Vec<[u8; 32]>,
        attributes: String,
    },
    Learn(Sessions),
}

/// A learned session's server, and when it was last seen.
type Seen = (SocketAddr, Instant);

/// A full table is swept for timed-out sessions at most this often: a flood of new
/// sessions must not make every response walk it under the lock.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Learned sessions: cookie value to server, with when each was last seen. The table
/// is carried across reloads; its limits are the config's.
pub struct Sessions {
    table: Arc<Mutex<Table>>,
    timeout: Duration,
    max: usize,
}

#[derive(Default)]
struct Table {
    seen: HashMap<Box<[u8]>, Seen>,
    /// When a full table was last swept.
    swept: Option<Instant>,
}

impl Stickiness {
    /// The stickiness of an upstream with these servers (their addresses, by index); a
    /// reload keeps `previous`'s learned sessions.
    pub fn new(
        config: &Sticky,
        servers: &[Arc<ServerState>],
        previous: Option<&Stickiness>,
    ) -> Self {
        match config {
            Sticky::Cookie { name, cookie } => Stickiness {
                cookie: name.clone(),
                mode: Mode::Insert {
                    ids: servers.iter().map(|s| identity(s.addr)).collect(),
                    attributes: attributes(cookie),
                },
            },
            Sticky::Learn {
                name,
                timeout,
                max_sessions,
            } => {
                let kept = previous.and_then(|p| match &p.mode {
                    Mode::Learn(s) if p.cookie == *name => Some(s.table.clone()),
                    _ => None,
                });
                Stickiness {
                    cookie: name.clone(),
                    mode: Mode::Learn(Sessions {
                        table: kept.unwrap_or_default(),
                        timeout: *timeout,
                        max: *max_sessions,
                    }),
                }
            }
        }
    }

    /// The server (index into `servers`) the session `value` is on, if it is known.
    pub fn server(&self, value: &[u8], servers: &[Arc<ServerState>]) -> Option<usize> {
        if value.is_empty() {
            return None;
        }
        match &self.mode {
            Mode::Insert { ids, .. } => ids.iter().position(|id| id[..] == *value),
            Mode::Learn(sessions) => {
                let addr = sessions.find(value)?;
                servers.iter().position(|s| s.addr == addr)
            }
        }
    }

    /// What a response of server `server` (its index, at `addr`) to a request whose
    /// session was `value` tells: the `Set-Cookie` value to add to it (a cookie of
    /// sluice's own naming another server than the request did), or the application's
    /// session its `Set-Cookie` headers began (learned).
    pub fn answered(
        &self,
        (server, addr): (usize, SocketAddr),
        value: &[u8],
        headers: &[httparse::Header<'_>],
    ) -> Option<Vec<u8>> {
        match &self.mode {
            Mode::Insert { ids, attributes } => {
                let id = ids.get(server).filter(|id| id[..] != *value)?;
                let mut cookie = Vec::with_capacity(self.cookie.len() + 33 + attributes.len());
                cookie.extend_from_slice(self.cookie.as_bytes());
                cookie.push(b'=');
                cookie.extend_from_slice(id);
                cookie.extend_from_slice(attributes.as_bytes());
                Some(cookie)
            }
            Mode::Learn(sessions) => {
                match set_cookie(headers, &self.cookie) {
                    Some(new) => sessions.learn(new, addr),
                    // The session goes on where it is: seen now.
                    None if !value.is_empty() => sessions.touch(value, addr),
                    None => {}
                }
                None
            }
        }
    }

    /// Sessions it remembers (learned ones; `None` for a cookie of its own).
    pub fn sessions(&self) -> Option<usize> {
        match &self.mode {
            Mode::Insert { .. } => None,
            Mode::Learn(s) => Some(s.lock().seen.len()),
        }
    }
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn find(&self, value: &[u8]) -> Option<SocketAddr> {
        let table = self.lock();
        let (addr, seen) = table.seen.get(value)?;
        (seen.elapsed() < self.timeout).then_some(*addr)
    }

    fn touch(&self, value: &[u8], addr: SocketAddr) {
        let mut table = self.lock();
        if let Some(entry) = table.seen.get_mut(value).filter(|(a, _)| *a == addr) {
            entry.1 = Instant::now();
        }
    }

    /// Binds session `value` to `addr`. Full: forgets the sessions that timed out (a
    /// sweep a second at most), and learns nothing if none did.
    fn learn(&self, value: &[u8], addr: SocketAddr) {
        let mut table = self.lock();
        let now = Instant::now();
        if let Some(entry) = table.seen.get_mut(value) {
            *entry = (addr, now);
            return;
        }
        if table.seen.len() >= self.max {
            if table.swept.is_some_and(|at| now - at < SWEEP_EVERY) {
                return;
            }
            let timeout = self.timeout;
            table.seen.retain(|_, (_, seen)| now - *seen < timeout);
            table.swept = Some(now);
            if table.seen.len() >= self.max {
                return;
            }
        }
        table.seen.insert(value.into(), (addr, now));
    }
}

/// A server's identity in the cookie: the MD5 of `IP:port`, in hexadecimal (nginx's).
fn identity(addr: SocketAddr) -> [u8; 32] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Md5::digest(addr.to_string().as_bytes());
    std::array::from_fn(|i| HEX[usize::from(digest[i / 2] >> (4 * (1 - i % 2)) & 0xf)])
}

/// `; Path=/; Max-Age=3600; ...`: the attributes after the cookie's value.
fn attributes(c: &CookieAttributes) -> String {
    let mut out = format!("; Path={}", c.path);
    if let Some(age) = c.max_age {
        out.push_str(&format!("; Max-Age={}", age.as_secs()));
    }
    if let Some(domain) = &c.domain {
        out.push_str(&format!("; Domain={domain}"));
    }
    if c.secure {
        out.push_str("; Secure");
    }
    if c.http_only {
        out.push_str("; HttpOnly");
    }
    if let Some(same) = c.same_site {
        out.push_str(match same {
            SameSite::Strict => "; SameSite=Strict",
            SameSite::Lax => "; SameSite=Lax",
            SameSite::None => "; SameSite=None",
        });
    }
    out
}

/// The value a response's `Set-Cookie` gives cookie `name`, if one does (not when it
/// deletes it: an empty value).
fn set_cookie<'h>(headers: &[httparse::Header<'h>], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("set-cookie"))
        .find_map(|h| {
            let pair = h.value.split(|b| *b == b';').next()?;
            let eq = pair.iter().position(|b| *b == b'=')?;
            (pair[..eq].trim_ascii() == name.as_bytes()).then(|| pair[eq + 1..].trim_ascii())
        })
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(addrs: &[&str]) -> Vec<Arc<ServerState>> {
        addrs
            .iter()
            .map(|a| ServerState::new(a.parse().unwrap()))
            .collect()
    }

    #[test]
    fn a_servers_identity_is_nginxs() {
        // nginx's sticky module: the MD5 of "127.0.0.1:8080" in hexadecimal, as
        // Python's hashlib gives it.
        let id = identity("127.0.0.1:8080".parse().unwrap());
        assert_eq!(&id, b"5958c386bf5e9109ac10d2a628645aea");
    }

    #[test]
    fn learned_sessions_stay_until_they_time_out_or_room_runs_out() {
        let config = Sticky::Learn {
            name: "JSESSIONID".into(),
            timeout: Duration::from_millis(200),
            max_sessions: 2,
        };
        let servers = states(&["10.0.0.1:80", "10.0.0.2:80"]);
        let s = Stickiness::new(&config, &servers, None);
        let set = |v: &'static str| {
            [httparse::Header {
                name: "Set-Cookie",
                value: v.as_bytes(),
            }]
        };
        for (server, cookie) in [
            (1, "JSESSIONID=abc; Path=/; HttpOnly"),
            (0, "JSESSIONID=def"),
            (0, "JSESSIONID=ghi"),
        ] {
            assert_eq!(
                s.answered((server, servers[server].addr), b"", &set(cookie)),
                None
            );
        }
        assert_eq!(s.server(b"abc", &servers), Some(1));
        assert_eq!(s.server(b"def", &servers), Some(0));
        // Full: the third was not learned.
        assert_eq!(s.server(b"ghi", &servers), None);
        // A reload keeps them.
        let again = Stickiness::new(&config, &servers, Some(&s));
        assert_eq!(again.server(b"abc", &servers), Some(1));
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(again.server(b"abc", &servers), None);
    }

    #[test]
    fn the_cookie_is_set_only_when_the_request_named_another_server() {
        let config = Sticky::Cookie {
            name: "srv".into(),
            cookie: CookieAttributes {
                path: "/".into(),
                max_age: Some(Duration::from_secs(60)),
                domain: None,
                secure: true,
                http_only: true,
                same_site: Some(SameSite::Lax),
            },
        };
        let servers = states(&["10.0.0.1:80"]);
        let s = Stickiness::new(&config, &servers, None);
        let cookie = s.answered((0, servers[0].addr), b"", &[]).unwrap();
        let id = identity(servers[0].addr);
        let id = std::str::from_utf8(&id).unwrap();
        let want = format!("srv={id}; Path=/; Max-Age=60; Secure; HttpOnly; SameSite=Lax");
        assert_eq!(String::from_utf8(cookie).unwrap(), want);
        assert_eq!(s.server(id.as_bytes(), &servers), Some(0));
        assert_eq!(s.answered((0, servers[0].addr), id.as_bytes(), &[]), None);
    }
}
