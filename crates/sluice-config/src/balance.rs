//! The balancing keys of an upstream: `balance` and the keys that only some algorithms
//! take (`hash_key`, `hash_method`, `hash_bound`, `ewma_decay`).

use crate::key;
use crate::model::{Balance, HashMethod, KeyTemplate};
use crate::reader::Reader;
use std::time::Duration;
use toml_edit::TableLike;

const NAMES: &str = "round_robin, least_conn, random_two, peak_ewma or hash";

/// The upstream's balancing, round robin when not given. Keys that do not apply to the
/// chosen algorithm are errors, so a typo in `balance` cannot silently drop a hash key.
pub fn balance(r: &mut Reader, t: &dyn TableLike) -> Balance {
    let name = r.string(t, "balance");
    let chosen = name.as_ref().map_or("round_robin", |(n, _)| n.as_str());
    let balance = match chosen {
        "round_robin" => Balance::RoundRobin,
        "least_conn" => Balance::LeastConn,
        "random_two" => Balance::RandomTwo,
        "peak_ewma" => Balance::PeakEwma {
            decay: r
                .timeout(t, "ewma_decay")
                .unwrap_or(Duration::from_secs(10)),
        },
        "hash" => hash(r, t),
        other => {
            let span = name.as_ref().and_then(|(_, s)| s.clone());
            r.error(
                span,
                format!("unknown balance \"{other}\""),
                format!("use {NAMES}"),
            );
            Balance::RoundRobin
        }
    };
    let only_for = |key: &str| match key {
        "ewma_decay" => "peak_ewma",
        _ => "hash",
    };
    for key in ["hash_key", "hash_method", "hash_bound", "ewma_decay"] {
        let wanted = only_for(key);
        if chosen != wanted && t.contains_key(key) {
            let span = t.key(key).and_then(|k| k.span());
            r.error(
                span,
                format!("`{key}` applies only with balance = \"{wanted}\""),
                format!("set balance = \"{wanted}\" or remove `{key}`"),
            );
        }
    }
    balance
}

fn hash(r: &mut Reader, t: &dyn TableLike) -> Balance {
    let key = match r.string(t, "hash_key") {
        Some((text, span)) => template(r, "hash_key", &text, span),
        None => {
            if !t.contains_key("hash_key") {
                let span = t.key("balance").and_then(|k| k.span());
                r.error(
                    span,
                    "balance = \"hash\" needs a `hash_key`",
                    "add hash_key = \"$arg_room\" (or $cookie_NAME, $http_NAME, $remote_addr, ...)",
                );
            }
            None
        }
    };
    let method = match r.string(t, "hash_method") {
        None => HashMethod::Ketama,
        Some((m, _)) if m == "ketama" => HashMethod::Ketama,
        Some((m, _)) if m == "maglev" => HashMethod::Maglev,
        Some((m, span)) => {
            r.error(
                span,
                format!("unknown hash_method \"{m}\""),
                "use ketama (nginx-compatible ring) or maglev",
            );
            HashMethod::Ketama
        }
    };
    let bound = r.number(t, "hash_bound").filter(|c| {
        let ok = c.is_finite() && *c > 1.0;
        if !ok {
            let span = t.get("hash_bound").and_then(|v| v.span());
            r.error(
                span,
                format!("hash_bound = {c} must be above 1"),
                "1.25 lets a server carry at most 25% above the average load",
            );
        }
        ok
    });
    Balance::Hash {
        key: key.unwrap_or(KeyTemplate { parts: Vec::new() }),
        method,
        bound,
    }
}

/// The key template `text` of the key named `name` (`hash_key`, a limit's `key`).
pub(crate) fn template(
    r: &mut Reader,
    name: &str,
    text: &str,
    span: Option<std::ops::Range<usize>>,
) -> Option<KeyTemplate> {
    match key::parse(text) {
        Ok(t) => Some(t),
        Err(e) => {
            // Point into the string: past the opening quote, at the offending `$`.
            let at = span.map(|s| s.start + 1 + e.offset..s.end);
            r.error(
                at,
                format!("{name}: {}", e.message),
                "write a variable as $arg_room or ${arg_room}, with any literal text around it",
            );
            None
        }
    }
}
