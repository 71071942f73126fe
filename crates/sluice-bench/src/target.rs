//! What a load test sends: the target URL and the request, encoded once.

use rustls::pki_types::ServerName;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Why a target or request could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("`{0}` is not an http:// or https:// URL (write it as http://host:port/path)")]
    NotHttp(String),
    #[error("`{host}` is not a name TLS can verify: {why}")]
    ServerName { host: String, why: String },
    #[error("bad --resolve `{0}` (write it as HOST:PORT:ADDRESS, e.g. shop.test:443:127.0.0.1)")]
    BadResolve(String),
    #[error("`{0}` has no host")]
    NoHost(String),
    #[error("`{url}`: bad port `{port}`")]
    BadPort { url: String, port: String },
    #[error("`{host}` does not resolve: {cause}")]
    Resolve { host: String, cause: String },
    #[error("bad header `{0}` (write it as 'Name: value')")]
    BadHeader(String),
    #[error("bad method `{0}` (a token such as GET or POST)")]
    BadMethod(String),
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// As the user wrote it, for reports.
    pub url: String,
    /// The `Host` header value: host and port as written.
    pub authority: String,
    /// Path and query, origin form.
    pub path: String,
    /// The resolved address connections go to.
    pub addr: SocketAddr,
    /// For `https://`: the name sent as SNI and verified in the server's certificate.
    pub tls: Option<ServerName<'static>>,
}

/// curl's `--resolve HOST:PORT:ADDRESS`: connections for `HOST:PORT` go to `ADDRESS`,
/// and the URL's name is still the one sent (`Host`, SNI) and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolve {
    pub host: String,
    pub port: u16,
    pub addr: IpAddr,
}

impl std::str::FromStr for Resolve {
    type Err = TargetError;
    fn from_str(text: &str) -> Result<Resolve, TargetError> {
        let bad = || TargetError::BadResolve(text.into());
        let (host, rest) = text.split_once(':').ok_or_else(bad)?;
        let (port, addr) = rest.split_once(':').ok_or_else(bad)?;
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        Ok(Resolve {
            host: host.to_ascii_lowercase(),
            port: port.parse().map_err(|_| bad())?,
            addr: addr.parse().map_err(|_| bad())?,
        })
    }
}

impl Target {
    /// Parses `http[s]://host[:port][/path]` and resolves the host.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        Target::parse_with(url, &[])
    }

    /// Like [`Target::parse`], with `resolve` overriding the system's resolver.
    pub fn parse_with(url: &str, resolve: &[Resolve]) -> Result<Target, TargetError> {
        let (rest, tls, default_port) = if let Some(rest) = strip_scheme(url, "http://") {
            (rest, false, 80)
        } else if let Some(rest) = strip_scheme(url, "https://") {
            (rest, true, 443)
        } else {
            return Err(TargetError::NotHttp(url.into()));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'?' => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        if authority.is_empty() {
            return Err(TargetError::NoHost(url.into()));
        }
        let (host, port) = split_port(url, authority, default_port)?;
        let overridden = resolve
            .iter()
            .find(|r| r.port == port && r.host.eq_ignore_ascii_case(host));
        let addr = match overridden {
            Some(r) => SocketAddr::new(r.addr, port),
            None => lookup(host, port)?,
        };
        let tls = match tls {
            true => Some(server_name(host)?),
            false => None,
        };
        Ok(Target {
            url: url.into(),
            authority: authority.into(),
            path,
            addr,
            tls,
        })
    }
}

/// The name TLS sends and verifies for `host` (a DNS name or an IP address).
fn server_name(host: &str) -> Result<ServerName<'static>, TargetError> {
    ServerName::try_from(host.to_string()).map_err(|e| TargetError::ServerName {
        host: host.into(),
        why: e.to_string(),
    })
}

fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let head = url.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme)
        .then(|| &url[scheme.len()..])
}

/// `host:port`, `[v6]:port`, or a host alone (the scheme's port).
fn split_port<'a>(
    url: &str,
    authority: &'a str,
    default_port: u16,
) -> Result<(&'a str, u16), TargetError> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| TargetError::NoHost(url.into()))?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => default_port,
        Some(p) => p.parse().map_err(|_| TargetError::BadPort {
            url: url.into(),
            port: p.into(),
        })?,
    };
    Ok((host, port))
}

fn lookup(host: &str, port: u16) -> Result<SocketAddr, TargetError> {
    let failed = |cause: String| TargetError::Resolve {
        host: host.into(),
        cause,
    };
    let mut addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| failed(e.to_string()))?;
    addrs.next().ok_or_else(|| failed("no address".to_string()))
}

/// One request, as every virtual user sends it.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: String,
    pub target: Target,
    /// Extra headers, in order, as `(name, value)`.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A label for reports; `METHOD path` by default.
    pub label: String,
}

impl RequestSpec {
    /// A request with `method` to `target`; `headers` as `Name: value` strings.
    pub fn new(
        method: &str,
        target: Target,
        headers: &[String],
        body: Vec<u8>,
    ) -> Result<RequestSpec, TargetError> {
        if method.is_empty()
            || !method
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        {
            return Err(TargetError::BadMethod(method.into()));
        }
        let headers = headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RequestSpec {
            label: format!("{method} {}", target.path),
            method: method.into(),
            target,
            headers,
            body,
        })
    }

    /// The request's bytes: `keep_alive` false asks the server to close after it.
    pub fn encode(&self, keep_alive: bool) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target.path).into_bytes();
        let has = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        if !has("host") {
            out.extend_from_slice(format!("Host: {}\r\n", self.target.authority).as_bytes());
        }
        for (name, value) in &self.headers {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        if !self.body.is_empty() && !has("content-length") {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        if !keep_alive && !has("connection") {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

fn parse_header(text: &str) -> Result<(String, String), TargetError> {
    let bad = || TargetError::BadHeader(text.into());
    let (name, value) = text.split_once(':').ok_or_else(bad)?;
    let name = name.trim();
    let ok_name = !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
    let value = value.trim_matches([' ', '\t']);
    if !ok_name || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(bad());
    }
    Ok((name.into(), value.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = Target::parse("http://127.0.0.1:8080/a?b=1").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/a?b=1")
        );
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        let t = Target::parse("HTTP://127.0.0.1").unwrap();
        assert_eq!((t.path.as_str(), t.addr.port()), ("/", 80));
        let t = Target::parse("http://[::1]:9/x").unwrap();
        assert_eq!(t.addr, "[::1]:9".parse().unwrap());
        assert!(matches!(
            Target::parse("ftp://a/"),
            Err(TargetError::NotHttp(_))
        ));
        let t = Target::parse("https://localhost/x").unwrap();
        assert_eq!(t.addr.port(), 443);
        assert_eq!(t.tls, Some(ServerName::try_from("localhost").unwrap()));
        assert_eq!(Target::parse("http://localhost/").unwrap().tls, None);
        assert!(matches!(
            Target::parse("http:///x"),
            Err(TargetError::NoHost(_))
        ));
        assert!(matches!(
            Target::parse("http://a:99999/"),
            Err(TargetError::BadPort { .. })
        ));
        assert!(matches!(
            Target::parse("http://no-such-host.invalid/"),
            Err(TargetError::Resolve { .. })
        ));
    }

    #[test]
    fn resolve_aims_a_name_at_an_address() {
        let shop: Resolve = "shop.test:443:127.0.0.2".parse().unwrap();
        let v6: Resolve = "shop.test:8443:[::1]".parse().unwrap();
        let t = Target::parse_with("https://shop.test/cart", &[shop.clone(), v6]).unwrap();
        assert_eq!(t.addr, "127.0.0.2:443".parse().unwrap());
        assert_eq!(t.authority, "shop.test");
        assert_eq!(t.tls, Some(ServerName::try_from("shop.test").unwrap()));
        let t = Target::parse_with("https://shop.test:8443/", &[shop]);
        assert!(
            matches!(t, Err(TargetError::Resolve { .. })),
            "another port: not aimed"
        );
        let v6: Resolve = "shop.test:8443:[::1]".parse().unwrap();
        let t = Target::parse_with("https://SHOP.test:8443/", &[v6]).unwrap();
        assert_eq!(t.addr, "[::1]:8443".parse().unwrap());
        for bad in [
            "shop.test",
            "shop.test:443",
            "shop.test:x:127.0.0.1",
            "a:1:nowhere",
        ] {
            assert!(bad.parse::<Resolve>().is_err(), "{bad}");
        }
    }

    #[test]
    fn requests_encode_once() {
        let t = Target::parse("http://127.0.0.1:8080/up").unwrap();
        let headers = ["X-A: 1".to_string(), "Content-Type: text/plain".to_string()];
        let r = RequestSpec::new("POST", t.clone(), &headers, b"hi".to_vec()).unwrap();
        assert_eq!(
            String::from_utf8(r.encode(false)).unwrap(),
            "POST /up HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        );
        assert_eq!(r.label, "POST /up");
        assert!(RequestSpec::new("GE T", t.clone(), &[], vec![]).is_err());
        assert!(RequestSpec::new("GET", t, &["NoColon".into()], vec![]).is_err());
    }
}
