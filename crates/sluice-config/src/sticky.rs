//! An upstream's `sticky`: sessions kept on their server, by a cookie sluice sets
//! (`cookie`) or by the application's session cookie it learns (`learn`).

use crate::model::{CookieAttributes, SameSite, Sticky};
use crate::reader::Reader;
use crate::reference::{names, upstream};
use std::time::Duration;
use toml_edit::TableLike;

/// Sessions an upstream remembers at most, unless `max_sessions` says otherwise.
const MAX_SESSIONS: usize = 100_000;

pub(crate) fn sticky(r: &mut Reader, t: &dyn TableLike, upstream: &str) -> Option<Sticky> {
    let item = t.get("sticky")?;
    let Some(s) = item.as_table_like() else {
        r.error(
            item.span(),
            "`sticky` must be a table",
            "write sticky = { cookie = \"srv_id\" } or sticky = { learn = \"JSESSIONID\" }",
        );
        return None;
    };
    r.only_keys(
        s,
        &names(upstream::STICKY),
        &format!("[upstream.{upstream}] sticky"),
    );
    if t.get("balance").and_then(|b| b.as_str()) == Some("hash") {
        r.error(
            item.span(),
            "`sticky` with balance = \"hash\": hashing already keeps a key on its server",
            "remove one of them",
        );
    }
    let cookie = r.string(s, "cookie");
    let learn = r.string(s, "learn");
    match (cookie, learn) {
        (Some((name, span)), None) => {
            valid_name(r, &name, span)?;
            not_for(r, s, &["timeout", "max_sessions"], "learn");
            Some(Sticky::Cookie {
                name,
                cookie: attributes(r, s),
            })
        }
        (None, Some((name, span))) => {
            valid_name(r, &name, span)?;
            let set = [
                "path", "max_age", "domain", "secure", "httponly", "samesite",
            ];
            not_for(r, s, &set, "cookie");
            Some(Sticky::Learn {
                name,
                timeout: r
                    .duration(s, "timeout")
                    .unwrap_or(Duration::from_secs(3600)),
                max_sessions: r
                    .integer(s, "max_sessions", 100_000_000)
                    .map_or(MAX_SESSIONS, |n| n as usize),
            })
        }
        _ => {
            r.error(
                item.span(),
                "`sticky` takes one of `cookie` and `learn`",
                "write sticky = { cookie = \"srv_id\" } (sluice's cookie) or sticky = { learn = \"JSESSIONID\" } (the application's)",
            );
            None
        }
    }
}

/// A cookie attribute's value (`path`, `domain`): visible characters, none that would
/// end the attribute (`;`, `,`).
fn attribute(r: &mut Reader, s: &dyn TableLike, key: &str) -> Option<String> {
    let (value, span) = r.string(s, key)?;
    let fits = |b: u8| b.is_ascii_graphic() && b != b';' && b != b',';
    if value.is_empty() || !value.bytes().all(fits) {
        r.error(
            span,
            format!("{key} \"{value}\" cannot be a cookie attribute"),
            "visible characters without ; or , (e.g. path = \"/shop/\")",
        );
        return None;
    }
    Some(value)
}

/// A cookie name: an HTTP token.
fn valid_name(r: &mut Reader, name: &str, span: crate::reader::Span) -> Option<()> {
    if !crate::headers::is_token(name) {
        r.error(
            span,
            format!("\"{name}\" is not a cookie name"),
            "letters, digits, - and _, e.g. \"srv_id\"",
        );
        return None;
    }
    Some(())
}

/// Keys that go with the other mode are errors.
fn not_for(r: &mut Reader, s: &dyn TableLike, keys: &[&str], mode: &str) {
    for key in keys {
        if let Some(k) = s.key(key) {
            r.error(
                k.span(),
                format!("`{key}` goes with sticky `{mode}`"),
                format!("remove `{key}`"),
            );
        }
    }
}

fn attributes(r: &mut Reader, s: &dyn TableLike) -> CookieAttributes {
    let same_site =
        r.string(s, "samesite")
            .and_then(|(v, span)| match v.to_ascii_lowercase().as_str() {
                "strict" => Some(SameSite::Strict),
                "lax" => Some(SameSite::Lax),
                "none" => Some(SameSite::None),
                _ => {
                    r.error(
                        span,
                        format!("samesite \"{v}\" is none of strict, lax, none"),
                        "write samesite = \"lax\"",
                    );
                    None
                }
            });
    CookieAttributes {
        path: attribute(r, s, "path").unwrap_or_else(|| "/".to_string()),
        max_age: r.duration(s, "max_age"),
        domain: attribute(r, s, "domain"),
        secure: r.boolean(s, "secure").unwrap_or(false) || same_site == Some(SameSite::None),
        http_only: r.boolean(s, "httponly").unwrap_or(true),
        same_site,
    }
}
