//! `request_headers` and `response_headers` of a route: headers set (with variables, as
//! nginx's `proxy_set_header` and `add_header`) and removed. Headers that frame the
//! message or the connection are sluice's own and cannot be touched.

use crate::model::HeaderEdits;
use crate::reader::Reader;
use crate::reference::{names, route};
use toml_edit::TableLike;

/// Headers sluice writes or strips itself to keep each hop's framing right.
const MANAGED: &[&str] = &[
    "connection",
    "content-length",
    "transfer-encoding",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
];

/// `KEY = { set = { "X-Name" = "value $var" }, remove = ["Server"] }`.
pub(crate) fn edits(r: &mut Reader, route: &dyn TableLike, key: &str) -> HeaderEdits {
    let mut edits = HeaderEdits::default();
    let Some(item) = route.get(key) else {
        return edits;
    };
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            format!("`{key}` must be a table"),
            format!(
                "write {key} = {{ set = {{ \"X-Name\" = \"value\" }}, remove = [\"X-Other\"] }}"
            ),
        );
        return edits;
    };
    r.only_keys(t, &names(route::HEADER_EDITS), &format!("`{key}`"));
    if let Some(set) = t.get("set") {
        match set.as_table_like() {
            Some(set) => {
                for (name, value) in set.iter() {
                    let span = set.key(name).and_then(|k| k.span());
                    let Some(name) = header_name(r, name, span) else {
                        continue;
                    };
                    let Some(text) = value.as_str() else {
                        r.error(
                            value.span(),
                            format!("the value of `{name}` must be a string"),
                            "put it in double quotes",
                        );
                        continue;
                    };
                    if let Some(v) = crate::answer::value(r, text, value.span()) {
                        edits.set.push((name, v));
                    }
                }
            }
            None => r.error(
                set.span(),
                "`set` must be a table of header names and values",
                "write set = { \"X-Name\" = \"value\" }",
            ),
        }
    }
    edits.remove = removed(r, t);
    edits
}

fn removed(r: &mut Reader, t: &dyn TableLike) -> Vec<String> {
    let Some(v) = r.value(t, "remove", "a list of header names") else {
        return Vec::new();
    };
    let Some(list) = v.as_array() else {
        r.error(
            v.span(),
            "`remove` must be a list of header names",
            "write remove = [\"Server\", \"X-Powered-By\"]",
        );
        return Vec::new();
    };
    list.iter()
        .filter_map(|item| match item.as_str() {
            Some(name) => header_name(r, name, item.span()),
            None => {
                r.error(
                    item.span(),
                    "a header name must be a string",
                    "put it in double quotes",
                );
                None
            }
        })
        .collect()
}

/// An HTTP token (RFC 9110): what a header's or a cookie's name is made of.
pub(crate) fn is_token(name: &str) -> bool {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !name.is_empty() && name.bytes().all(token)
}

/// A valid header name that sluice does not manage itself, as written.
pub(crate) fn header_name(
    r: &mut Reader,
    name: &str,
    span: Option<std::ops::Range<usize>>,
) -> Option<String> {
    if !is_token(name) {
        r.error(
            span,
            format!("\"{name}\" is not a header name"),
            "letters, digits and - only, e.g. \"X-Real-IP\"",
        );
        return None;
    }
    if MANAGED.iter().any(|m| m.eq_ignore_ascii_case(name)) {
        r.error(
            span,
            format!("`{name}` is managed by sluice (it frames the message or the connection)"),
            "leave it out: sluice writes it for each hop",
        );
        return None;
    }
    Some(name.to_string())
}
