//! `[limit.NAME]`: a request rate per key, nginx's `limit_req_zone` (`rate`, `burst`,
//! `key`, `$remote_addr` by default), and a route's `limit`, naming the limits its
//! requests count against.

use crate::model::RateLimit;
use crate::reader::Reader;
use crate::reader::Span;
use crate::reference::{names, route};
use toml_edit::TableLike;

/// Every `[limit.NAME]` table, in the order written.
pub fn limits(r: &mut Reader, root: &dyn TableLike) -> Vec<RateLimit> {
    let Some(item) = root.get("limit") else {
        return Vec::new();
    };
    let Some(table) = item.as_table_like() else {
        r.error(
            item.span(),
            "`limit` must be a table of named limits",
            "write [limit.NAME] with rate = \"10/s\"",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, entry) in table.iter() {
        let span = entry
            .span()
            .or_else(|| table.key(name).and_then(|k| k.span()));
        let Some(t) = entry.as_table_like() else {
            r.error(
                span,
                format!("limit `{name}` must be a table"),
                format!("write [limit.{name}] with rate = \"10/s\""),
            );
            continue;
        };
        if let Some(limit) = limit(r, name, t, span) {
            out.push(limit);
        }
    }
    out
}

fn limit(r: &mut Reader, name: &str, t: &dyn TableLike, span: Span) -> Option<RateLimit> {
    r.only_keys(t, &names(route::LIMIT), &format!("[limit.{name}]"));
    let key = match r.string(t, "key") {
        Some((text, at)) => crate::balance::template(r, "key", &text, at)?,
        None => crate::key::parse("$remote_addr").expect("a valid key"),
    };
    let burst = r.integer(t, "burst", 1_000_000).unwrap_or(0) as u32;
    let Some((text, at)) = r.string(t, "rate") else {
        if t.get("rate").is_none() {
            r.error(
                span,
                format!("limit `{name}` has no `rate`"),
                "add rate = \"10/s\" (or \"600/m\")",
            );
        }
        return None;
    };
    let Some(per_second) = rate(&text) else {
        r.error(
            at,
            format!("rate \"{text}\" is not a rate"),
            "write requests per second or minute above zero, e.g. \"10/s\" or \"30/m\"",
        );
        return None;
    };
    Some(RateLimit {
        name: name.to_string(),
        key,
        per_second,
        burst,
    })
}

/// "10/s", "0.5/s", "30/m" as requests per second.
fn rate(text: &str) -> Option<f64> {
    let (n, unit) = text.trim().split_once('/')?;
    let n: f64 = n
        .trim()
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n > 0.0)?;
    match unit.trim() {
        "s" => Some(n),
        "m" => Some(n / 60.0),
        _ => None,
    }
}

/// A route's `limit = "NAME"` or list of names: indexes into the config's limits.
pub fn route_limits(r: &mut Reader, table: &dyn TableLike, limits: &[RateLimit]) -> Vec<usize> {
    let items = r.one_or_list(table, "limit", "a limit's name or a list of them");
    let mut out = Vec::new();
    for item in items {
        match item
            .as_str()
            .and_then(|n| limits.iter().position(|l| l.name == n))
        {
            Some(i) if !out.contains(&i) => out.push(i),
            Some(_) => {}
            None => r.error(
                item.span(),
                "`limit` names no [limit.NAME]",
                "define it as [limit.NAME] with rate = \"10/s\"",
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn rates() {
        assert_eq!(super::rate("10/s"), Some(10.0));
        assert_eq!(super::rate("30/m"), Some(0.5));
        assert_eq!(super::rate(" 0.5 / s "), Some(0.5));
        for bad in ["0/s", "10", "10/h", "-1/s", "x/s", "inf/s"] {
            assert_eq!(super::rate(bad), None, "{bad}");
        }
    }
}
