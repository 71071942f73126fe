//! A virtual user's cookie jar, kept as browsers and JMeter's HTTP Cookie Manager keep
//! one (RFC 6265: a cookie's domain and path, its expiry and `Max-Age`, `Secure` sent
//! over https:// only; `HttpOnly` changes nothing for a client that runs no script), by
//! the `cookie_store` crate. Each user has its own: a session cookie one user is given
//! (`JSESSIONID`) is sent back on that user's requests alone.

use cookie_store::{CookieStore, RawCookie};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use url::Url;

/// How long a `Cookie` header made for a path is sent again as it is: a cookie that
/// expires meanwhile goes at most this much longer (Max-Age counts whole seconds).
const MADE_FOR: Duration = Duration::from_secs(1);

/// Paths whose headers are kept at most (a path per request would be none kept).
const MADE_PATHS: usize = 64;

/// One user's cookies.
#[derive(Debug)]
pub struct Jar {
    store: CookieStore,
    /// The scenario's target: requests' paths are joined to it.
    base: Url,
    /// The `Cookie` header made for each path (without its query), until a response
    /// sets a cookie or [`MADE_FOR`] passes: made afresh, it costs a URL parse, an IDNA
    /// check of the host and a clock read per cookie, a tenth of a logged-in request's
    /// CPU (`bench/runs/2026-11-29-login-flow/NOTE.md`).
    made: HashMap<String, Option<String>>,
    made_at: Instant,
}

impl Jar {
    /// An empty jar for requests to `target_url` (`http://host:port`); `None` for a URL
    /// the jar cannot read (the target parsed it already, so not in practice).
    pub fn new(target_url: &str) -> Option<Jar> {
        Some(Jar {
            store: CookieStore::default(),
            base: Url::parse(target_url).ok()?,
            made: HashMap::new(),
            made_at: Instant::now(),
        })
    }

    /// A jar for `target_url` holding `cookies` (`Set-Cookie` values, as a scenario's
    /// `cookies = [...]` gives them); `Err` says why the first that would never be sent
    /// to the target was refused.
    pub fn with(target_url: &str, cookies: &[String]) -> Result<Jar, String> {
        let mut jar = Jar::new(target_url).ok_or("the target is no URL")?;
        for value in cookies {
            let cookie = RawCookie::parse(value.as_str())
                .map_err(|e| format!("{value:?} is not a cookie ({e})"))?;
            jar.store
                .insert_raw(&cookie.into_owned(), &jar.base)
                .map_err(|e| format!("{value:?} would never be sent to {target_url}: {e}"))?;
        }
        Ok(jar)
    }

    /// Keeps what a response to `path` set (its `Set-Cookie` values); a cookie its rules
    /// refuse (another domain's, a malformed one) is dropped, as a browser drops it.
    pub fn store(&mut self, path: &str, set_cookies: &[String]) {
        let Ok(url) = self.base.join(path) else {
            return;
        };
        for value in set_cookies {
            if let Ok(cookie) = RawCookie::parse(value.as_str()) {
                let _ = self.store.insert_raw(&cookie.into_owned(), &url);
            }
        }
        self.made.clear();
    }

    /// The value of the user's unexpired cookie `name` for the target, whatever its
    /// path (JMeter's `${COOKIE_name}`).
    pub fn value(&self, name: &str) -> Option<String> {
        self.store
            .iter_unexpired()
            .find(|c| c.name() == name && c.domain.matches(&self.base))
            .map(|c| c.value().to_string())
    }

    /// The `Cookie` header's value for a request to `path`, if any cookie goes with it.
    pub fn header(&mut self, path: &str) -> Option<String> {
        let path = path.split_once('?').map_or(path, |(p, _)| p);
        if self.made_at.elapsed() > MADE_FOR || self.made.len() >= MADE_PATHS {
            self.made.clear();
            self.made_at = Instant::now();
        }
        if let Some(made) = self.made.get(path) {
            return made.clone();
        }
        let header = self.make(path);
        self.made.insert(path.to_string(), header.clone());
        header
    }

    fn make(&self, path: &str) -> Option<String> {
        self.store.iter_any().next()?;
        let url = self.base.join(path).ok()?;
        let pairs: Vec<String> = self
            .store
            .get_request_values(&url)
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_go_back_by_domain_path_and_scheme_as_a_browser_sends_them() {
        let mut jar = Jar::new("http://shop.test:8080").unwrap();
        jar.store(
            "/login",
            &[
                "JSESSIONID=abc; Path=/; HttpOnly".into(),
                "cart=1; Path=/cart".into(),
                "tracker=x; Domain=other.test".into(),
                "secure=s; Secure".into(),
                "gone=1; Max-Age=0".into(),
            ],
        );
        assert_eq!(jar.header("/home").as_deref(), Some("JSESSIONID=abc"));
        let cart = jar.header("/cart/items").unwrap();
        assert!(
            cart.contains("JSESSIONID=abc") && cart.contains("cart=1"),
            "{cart}"
        );
        // A new value replaces the old; an expired one removes it.
        jar.store("/", &["JSESSIONID=def; Path=/".into()]);
        assert_eq!(jar.header("/home").as_deref(), Some("JSESSIONID=def"));
        jar.store("/", &["JSESSIONID=; Path=/; Max-Age=0".into()]);
        assert_eq!(jar.header("/home"), None);
        let given = ["lang=en; Path=/".to_string()];
        let mut jar = Jar::with("http://shop.test:8080", &given).unwrap();
        assert_eq!(jar.header("/x").as_deref(), Some("lang=en"));
        // Made once for a path (its query aside), made again once a response sets one.
        assert_eq!(jar.header("/x?page=2").as_deref(), Some("lang=en"));
        jar.store("/", &["sid=7; Path=/".into()]);
        let both = jar.header("/x").unwrap();
        assert!(both.contains("lang=en") && both.contains("sid=7"), "{both}");
        let other = ["lang=en; Domain=elsewhere.test".to_string()];
        let refused = Jar::with("http://shop.test:8080", &other).unwrap_err();
        assert!(
            refused.contains("would never be sent to http://shop.test:8080"),
            "{refused}"
        );
        let mut tls = Jar::new("https://shop.test").unwrap();
        tls.store("/", &["secure=s; Secure; Path=/".into()]);
        assert_eq!(tls.header("/").as_deref(), Some("secure=s"));
    }
}
