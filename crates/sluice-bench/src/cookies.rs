//! A virtual user's cookie jar, kept as browsers and JMeter's HTTP Cookie Manager keep
//! one (RFC 6265: a cookie's domain and path, its expiry and `Max-Age`, `Secure` sent
//! over https:// only; `HttpOnly` changes nothing for a client that runs no script), by
//! the `cookie_store` crate. Each user has its own: a session cookie one user is given
//! (`JSESSIONID`) is sent back on that user's requests alone.

use cookie_store::{CookieStore, RawCookie};
use url::Url;

/// One user's cookies.
#[derive(Debug)]
pub struct Jar {
    store: CookieStore,
    /// The scenario's target: requests' paths are joined to it.
    base: Url,
}

impl Jar {
    /// An empty jar for requests to `target_url` (`http://host:port`); `None` for a URL
    /// the jar cannot read (the target parsed it already, so not in practice).
    pub fn new(target_url: &str) -> Option<Jar> {
        Some(Jar {
            store: CookieStore::default(),
            base: Url::parse(target_url).ok()?,
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
    pub fn header(&self, path: &str) -> Option<String> {
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
        let jar = Jar::with("http://shop.test:8080", &given).unwrap();
        assert_eq!(jar.header("/x").as_deref(), Some("lang=en"));
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
