//! `--follow`: where a redirect leads, as the next request a user's browser would send.
//!
//! Each hop is a sample of its own (k6 counts each as an `http_req`), under the
//! request's label with ` (redirected)` after it, so the table shows the redirect and the
//! page it leads to apart. A chain stops after [`MAX_HOPS`] hops, as browsers stop
//! (an error, `redirect: more than 10 hops`). The targets redirects lead to are kept per
//! worker thread, so a redirect to the same place costs no new name lookup.

use crate::target::{RequestSpec, Resolve, Target, TargetError};
use std::cell::RefCell;
use std::collections::HashMap;

/// Hops followed before a chain counts as a loop (Chromium and curl stop at 20 and 50;
/// 10 is what load tools such as k6 follow by default).
pub const MAX_HOPS: usize = 10;

/// Distinct redirect targets kept per worker thread; past this, each new one is looked
/// up again (a site that redirects everywhere does not grow the generator).
const CACHED: usize = 64;

/// The statuses that send a client elsewhere with a `Location` to follow.
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// A worker thread's resolved redirect targets, by absolute URL.
#[derive(Default)]
pub struct Redirects {
    targets: RefCell<HashMap<String, Target>>,
}

impl Redirects {
    /// The request a redirect with `status` to `location` asks for, after `from`: GET
    /// without a body for 301, 302 and 303 (as browsers do; HEAD stays HEAD), the same
    /// method and body for 307 and 308. Its label is `from`'s own with ` (redirected)`.
    pub fn next(
        &self,
        from: &RequestSpec,
        status: u16,
        location: &str,
        resolve: &[Resolve],
    ) -> Result<RequestSpec, TargetError> {
        let url = absolute(&from.target, location);
        let target = self.target(&url, resolve)?;
        let keep = matches!(status, 307 | 308) || from.method == "HEAD";
        let (method, body) = match keep {
            true => (from.method.as_str(), from.body.clone()),
            false => ("GET", Vec::new()),
        };
        let headers: Vec<String> = from
            .headers
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case("host"))
            .filter(|(n, _)| keep || !n.eq_ignore_ascii_case("content-length"))
            .map(|(n, v)| format!("{n}: {v}"))
            .collect();
        let mut next = RequestSpec::new(method, target, &headers, body)?;
        next.label = match from.label.ends_with(" (redirected)") {
            true => from.label.clone(),
            false => format!("{} (redirected)", from.label),
        };
        Ok(next)
    }

    fn target(&self, url: &str, resolve: &[Resolve]) -> Result<Target, TargetError> {
        if let Some(t) = self.targets.borrow().get(url) {
            return Ok(t.clone());
        }
        let target = Target::parse_with(url, resolve)?;
        let mut targets = self.targets.borrow_mut();
        if targets.len() < CACHED {
            targets.insert(url.to_string(), target.clone());
        }
        Ok(target)
    }
}

/// `location` as an absolute URL, resolved against `from` (RFC 3986 5.2, for the forms
/// servers send: absolute, scheme-relative `//host/path`, absolute-path `/path`, and a
/// path relative to the current one).
pub fn absolute(from: &Target, location: &str) -> String {
    let lower = location.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return location.to_string();
    }
    let scheme = if from.tls.is_some() {
        "https:"
    } else {
        "http:"
    };
    if location.starts_with("//") {
        return format!("{scheme}{location}");
    }
    let origin = format!("{scheme}//{}", from.authority);
    if location.starts_with('/') {
        return format!("{origin}{location}");
    }
    let path = from.path.split(['?', '#']).next().unwrap_or("/");
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    format!(
        "{origin}{}{location}",
        if dir.is_empty() { "/" } else { dir }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(method: &str, url: &str, body: &[u8]) -> RequestSpec {
        let headers = ["X-Trace: 1".to_string(), "Host: shop.test".to_string()];
        RequestSpec::new(method, Target::parse(url).unwrap(), &headers, body.to_vec()).unwrap()
    }

    #[test]
    fn locations_resolve_as_browsers_resolve_them() {
        let from = Target::parse("http://127.0.0.1:8080/shop/cart?x=1").unwrap();
        let cases = [
            ("https://127.0.0.1:8443/a", "https://127.0.0.1:8443/a"),
            ("//127.0.0.2:9/b", "http://127.0.0.2:9/b"),
            (
                "/login?next=/cart",
                "http://127.0.0.1:8080/login?next=/cart",
            ),
            ("checkout", "http://127.0.0.1:8080/shop/checkout"),
        ];
        for (location, expected) in cases {
            assert_eq!(absolute(&from, location), expected, "{location}");
        }
    }

    #[test]
    fn the_method_and_body_follow_the_status() {
        let redirects = Redirects::default();
        let post = spec("POST", "http://127.0.0.1:8080/form", b"a=1");
        let seen = redirects.next(&post, 303, "/done", &[]).unwrap();
        assert_eq!((seen.method.as_str(), seen.body.len()), ("GET", 0));
        assert_eq!(seen.label, "POST /form (redirected)");
        assert_eq!(seen.target.path, "/done");
        let kept = redirects.next(&post, 307, "/again", &[]).unwrap();
        assert_eq!(
            (kept.method.as_str(), &kept.body[..]),
            ("POST", &b"a=1"[..])
        );
        // Host is the new target's; the user's other headers go along.
        assert!(kept.headers.iter().all(|(n, _)| n != "Host"));
        assert!(kept.headers.iter().any(|(n, v)| n == "X-Trace" && v == "1"));
        // A hop of a hop keeps one suffix.
        let again = redirects.next(&seen, 302, "/final", &[]).unwrap();
        assert_eq!(again.label, "POST /form (redirected)");
        assert!(is_redirect(301) && is_redirect(308) && !is_redirect(304) && !is_redirect(300));
    }
}
