//! Routes that sluice answers itself: `return` (nginx's `return`: a status with a
//! location or a body), `redirect = "https"` (301 to the same host and request URI over
//! HTTPS) and `root` (static files from a directory).

use crate::key;
use crate::model::{Action, Return};
use crate::reader::Reader;
use crate::reference::{names, route};
use std::path::Path;
use toml_edit::TableLike;

/// Where `redirect = "https"` sends a request.
const TO_HTTPS: &str = "https://$host$request_uri";

/// `return = 204`, `return = { status = 301, location = "https://$host$request_uri" }`,
/// `return = { status = 200, body = "ok\n" }`.
pub(crate) fn returned(r: &mut Reader, table: &dyn TableLike) -> Option<Return> {
    let item = table.get("return")?;
    if let Some(status) = item.as_integer() {
        return status_in_range(r, status, item.span()).map(|status| Return {
            status,
            location: None,
            body: None,
        });
    }
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            "`return` must be a status or a table",
            "write return = { status = 301, location = \"https://$host$request_uri\" }",
        );
        return None;
    };
    r.only_keys(t, &names(route::RETURN), "`return`");
    let Some(status) = r.integer(t, "status", 999) else {
        if t.get("status").is_none() {
            r.error(
                item.span(),
                "`return` has no `status`",
                "add status = 301 (or 200, 404, ...)",
            );
        }
        return None;
    };
    let status = status_in_range(r, status as i64, t.get("status").and_then(|v| v.span()))?;
    let location = match r.string(t, "location") {
        Some((text, span)) => Some(template(r, &text, span)?),
        None => None,
    };
    let body = r.string(t, "body").map(|(b, _)| b);
    fits(r, status, &location, &body, item.span())?;
    Some(Return {
        status,
        location,
        body,
    })
}

/// A status sluice can answer with (not 1xx, which would need a second response).
fn status_in_range(
    r: &mut Reader,
    status: i64,
    span: Option<std::ops::Range<usize>>,
) -> Option<u16> {
    if (200..=599).contains(&status) {
        return Some(status as u16);
    }
    r.error(
        span,
        format!("status {status} cannot be returned"),
        "use a status from 200 to 599",
    );
    None
}

/// A location goes with a redirect (3xx) or 201; a body with anything else that has one.
fn fits(
    r: &mut Reader,
    status: u16,
    location: &Option<crate::model::KeyTemplate>,
    body: &Option<String>,
    span: Option<std::ops::Range<usize>>,
) -> Option<()> {
    let redirect = (300..400).contains(&status) && status != 304;
    let problem = match (location.is_some(), body.is_some()) {
        (false, _) if redirect => Some("a redirect needs a `location`"),
        (true, true) => Some("`return` takes `location` or `body`, not both"),
        (true, false) if !redirect && status != 201 => {
            Some("`location` goes with a 3xx status or 201")
        }
        (_, true) if status == 204 || status == 304 => Some("a 204 or 304 response has no body"),
        _ => None,
    };
    match problem {
        Some(message) => {
            r.error(
                span,
                message,
                "e.g. return = { status = 301, location = \"https://$host$request_uri\" }",
            );
            None
        }
        None => Some(()),
    }
}

fn template(
    r: &mut Reader,
    text: &str,
    span: Option<std::ops::Range<usize>>,
) -> Option<crate::model::KeyTemplate> {
    if text.bytes().any(|b| b.is_ascii_control()) {
        r.error(
            span,
            "a control character in a header value",
            "write it on one line, without \\r or \\n",
        );
        return None;
    }
    match key::template_with(text, &r.captures) {
        Ok(t) => Some(t),
        Err(e) => {
            r.error(
                span,
                e.message,
                "variables are written $host, ${request_uri}, ...",
            );
            None
        }
    }
}

/// `redirect = "https"`: 301 to `https://$host$request_uri`.
pub(crate) fn redirect(r: &mut Reader, table: &dyn TableLike) -> Option<Return> {
    let (to, span) = r.string(table, "redirect")?;
    if to != "https" {
        r.error(
            span,
            format!("`redirect` = \"{to}\" is not a redirect sluice knows"),
            "write redirect = \"https\", or return = { status = 301, location = \"...\" } for another target",
        );
        return None;
    }
    Some(Return {
        status: 301,
        location: Some(key::template(TO_HTTPS).ok()?),
        body: None,
    })
}

/// `root = "DIR"`, relative to the config file's directory; that it is a directory is
/// checked with what else the config names on disk (`crate::on_disk`).
pub(crate) fn root(r: &mut Reader, table: &dyn TableLike) -> Option<Action> {
    let (dir, span) = r.string(table, "root")?;
    let root = Path::new(r.file)
        .parent()
        .unwrap_or(Path::new(""))
        .join(&dir);
    let at = crate::tls::place(r, span);
    Some(Action::Files { root, at })
}

/// A header value template, for `headers`.
pub(crate) fn value(
    r: &mut Reader,
    text: &str,
    span: Option<std::ops::Range<usize>>,
) -> Option<crate::model::KeyTemplate> {
    template(r, text, span)
}
