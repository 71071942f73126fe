//! `GET /`: the live dashboard, one static page (HTML, three scripts and a style sheet,
//! compiled in: no build step, nothing fetched from elsewhere) that polls
//! `/api/upstreams` and `/api/status` every second and keeps the last five minutes in
//! the browser. Nothing is kept or computed here. `/#server=IP:PORT` opens with that
//! server's recent errors shown. For tests, the page sets `data-polls` on `<body>`
//! (successful polls so far) and `data-error` on a script error.
//!
//! The files carry no data, so they are served without the token: a browser cannot
//! send a bearer token from a page it navigated to, and with a token configured the
//! page's polls get `401` and it says so, instead of the browser showing a bare error.
//! The data stays behind the token. The Content-Security-Policy allows only these files
//! and same-origin requests; the scripts insert every text from the API with
//! `textContent`, never as markup.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::Response;

const HTML: &str = include_str!("../assets/dashboard.html");
/// The page's own script: polling, state, tables.
const JS: &str = include_str!("../assets/dashboard.js");
/// From two polls to the figures of the second between them; formatting.
const FIGURES_JS: &str = include_str!("../assets/figures.js");
/// The SVG line charts.
const CHART_JS: &str = include_str!("../assets/chart.js");
const CSS: &str = include_str!("../assets/dashboard.css");

/// What the page may load and run: its own files, requests to this listener.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// A file of the page: its text and content type.
pub struct Asset {
    body: &'static str,
    content_type: &'static str,
}

/// The file served at `path`, if it is one of the page's.
pub fn asset(path: &str) -> Option<Asset> {
    let (body, content_type) = match path {
        "/" | "/dashboard" => (HTML, "text/html; charset=utf-8"),
        "/dashboard.js" => (JS, "text/javascript; charset=utf-8"),
        "/figures.js" => (FIGURES_JS, "text/javascript; charset=utf-8"),
        "/chart.js" => (CHART_JS, "text/javascript; charset=utf-8"),
        "/dashboard.css" => (CSS, "text/css; charset=utf-8"),
        _ => return None,
    };
    Some(Asset { body, content_type })
}

pub fn reply(asset: Asset) -> Response<Full<Bytes>> {
    let mut reply = Response::new(Full::new(Bytes::from_static(asset.body.as_bytes())));
    let headers = reply.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    // Small files: a browser asks again (a 200, not a 304: no validators) and never
    // runs an old script against a newer API after an upgrade.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    reply
}

#[cfg(test)]
mod tests {
    use super::{asset, CHART_JS, CSS, FIGURES_JS, HTML, JS};

    #[test]
    fn the_page_loads_the_files_served_beside_it() {
        // Relative, so the page also works behind a reverse proxy under a prefix.
        for script in ["figures.js", "chart.js", "dashboard.js"] {
            let tag = format!(r#"<script src="{script}" defer></script>"#);
            assert!(HTML.contains(&tag), "{tag}");
            assert!(asset(&format!("/{script}")).is_some(), "{script}");
        }
        // Deferred scripts run in order: dashboard.js uses what the others define.
        assert!(HTML.find("figures.js") < HTML.find("dashboard.js"));
        assert!(HTML.find("chart.js") < HTML.find("dashboard.js"));
        assert!(HTML.contains(r#"<link rel="stylesheet" href="dashboard.css">"#));
        for path in ["/", "/dashboard", "/dashboard.css"] {
            assert!(asset(path).is_some(), "{path}");
        }
        assert!(asset("/dashboard.html").is_none());
        assert!(!CSS.is_empty());
    }

    /// Text from the API (causes, routes, names) must never become markup; the
    /// policy forbids inline scripts and styles, so the page must not need them.
    #[test]
    fn the_script_never_writes_markup() {
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "setAttribute('style'",
        ] {
            for (name, js) in [
                ("dashboard.js", JS),
                ("figures.js", FIGURES_JS),
                ("chart.js", CHART_JS),
            ] {
                assert!(!js.contains(sink), "{name} uses {sink}");
            }
        }
        assert!(!HTML.contains("<script>") && !HTML.contains("style="));
    }
}
