//! The failure-handling keys of an upstream: passive checks (`max_fails`, `fail_window`,
//! `eject_for`, `fail_status`), retries (`retries`, `retry_non_idempotent`,
//! `retry_budget`), `slow_start`, and the `[upstream.NAME.health]` table.

use crate::model::{FailurePolicy, HealthCheck, RetryPolicy};
use crate::reader::Reader;
use crate::reference::{names, upstream};
use std::time::Duration;
use toml_edit::{Item, TableLike};

pub fn failure(r: &mut Reader, t: &dyn TableLike) -> FailurePolicy {
    FailurePolicy {
        max_fails: r.integer(t, "max_fails", 1000).unwrap_or(3) as u32,
        fail_window: r
            .timeout(t, "fail_window")
            .unwrap_or(Duration::from_secs(10)),
        eject_for: r.timeout(t, "eject_for").unwrap_or(Duration::from_secs(10)),
        fail_status: fail_status(r, t).unwrap_or_else(|| vec![502, 503, 504]),
    }
}

fn fail_status(r: &mut Reader, t: &dyn TableLike) -> Option<Vec<u16>> {
    let v = r.value(t, "fail_status", "a list of statuses")?;
    let list = v.as_array().map(|a| {
        a.iter()
            .map(|s| s.as_integer().filter(|n| (500..600).contains(n)))
            .collect::<Option<Vec<_>>>()
    });
    match list {
        Some(Some(statuses)) => Some(statuses.into_iter().map(|s| s as u16).collect()),
        _ => {
            r.error(
                v.span(),
                "`fail_status` must be a list of 5xx statuses",
                "write fail_status = [502, 503, 504], or [] for none",
            );
            None
        }
    }
}

pub fn retry(r: &mut Reader, t: &dyn TableLike) -> RetryPolicy {
    let budget = r.number(t, "retry_budget").filter(|b| {
        let ok = (0.0..=1.0).contains(b);
        if !ok {
            let span = t.get("retry_budget").and_then(Item::span);
            r.error(
                span,
                format!("retry_budget = {b} is not a fraction"),
                "0.2 lets retries add at most 20% to the upstream's load",
            );
        }
        ok
    });
    let non_idempotent = r.boolean(t, "retry_non_idempotent").unwrap_or(false);
    RetryPolicy {
        retries: r.integer(t, "retries", 10).unwrap_or(1) as u32,
        non_idempotent,
        budget: budget.unwrap_or(0.2),
        buffer: retry_buffer(r, t).unwrap_or(0),
    }
}

/// The largest `retry_buffer`: a request body held in memory per request.
const MAX_RETRY_BUFFER: u64 = 16 << 20;

/// `retry_buffer = "64KiB"` (B, KiB, MiB) or a number of bytes.
fn retry_buffer(r: &mut Reader, t: &dyn TableLike) -> Option<usize> {
    let v = r.value(t, "retry_buffer", "a size")?;
    let bytes = match (v.as_integer(), v.as_str()) {
        (Some(n), _) => u64::try_from(n).ok(),
        (_, Some(text)) => size(text),
        _ => None,
    };
    match bytes.filter(|b| *b <= MAX_RETRY_BUFFER) {
        Some(b) => Some(b as usize),
        None => {
            r.error(
                v.span(),
                "`retry_buffer` is not a size up to 16 MiB",
                "write it as \"64KiB\", \"1MiB\" or a number of bytes",
            );
            None
        }
    }
}

/// "64KiB", "1MiB", "512B" as bytes.
fn size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let n: u64 = text[..digits].parse().ok()?;
    let unit = match text[digits..].trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        _ => return None,
    };
    n.checked_mul(unit)
}

pub fn health(r: &mut Reader, t: &dyn TableLike, upstream: &str) -> Option<HealthCheck> {
    let item = t.get("health")?;
    let Some(h) = item.as_table_like() else {
        r.error(
            item.span(),
            "`health` must be a table",
            format!("write [upstream.{upstream}.health] with path = \"/health\""),
        );
        return None;
    };
    r.only_keys(
        h,
        &names(upstream::HEALTH),
        &format!("[upstream.{upstream}.health]"),
    );
    let path = match r.string(h, "path") {
        Some((p, _)) if p.starts_with('/') => p,
        Some((p, span)) => {
            r.error(
                span,
                format!("health path \"{p}\" does not start with /"),
                "write path = \"/health\"",
            );
            p
        }
        None => "/".to_string(),
    };
    Some(HealthCheck {
        path,
        host: r.string(h, "host").map(|(host, _)| host),
        interval: r.timeout(h, "interval").unwrap_or(Duration::from_secs(2)),
        timeout: r.timeout(h, "timeout").unwrap_or(Duration::from_secs(1)),
        expect: expect(r, h).unwrap_or((200, 399)),
        rise: r.integer(h, "rise", 100).unwrap_or(2).max(1) as u32,
        fall: r.integer(h, "fall", 100).unwrap_or(3).max(1) as u32,
    })
}

/// `expect = 200`, `expect = "2xx"` or `expect = "200-399"`.
fn expect(r: &mut Reader, h: &dyn TableLike) -> Option<(u16, u16)> {
    let v = r.value(h, "expect", "a status or range")?;
    let range = if let Some(n) = v.as_integer() {
        Some((n, n))
    } else {
        v.as_str().and_then(parse_range)
    };
    match range {
        Some((lo, hi)) if (100..600).contains(&lo) && (lo..600).contains(&hi) => {
            Some((lo as u16, hi as u16))
        }
        _ => {
            r.error(
                v.span(),
                "`expect` is not a status or status range",
                "write expect = 200, \"2xx\" or \"200-399\"",
            );
            None
        }
    }
}

fn parse_range(s: &str) -> Option<(i64, i64)> {
    if let Some(class) = s.strip_suffix("xx") {
        let c: i64 = class.parse().ok()?;
        return Some((c * 100, c * 100 + 99));
    }
    let (lo, hi) = s.split_once('-')?;
    Some((lo.trim().parse().ok()?, hi.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::size("64KiB"), Some(65_536));
        assert_eq!(super::size("1MiB"), Some(1 << 20));
        assert_eq!(super::size("512"), Some(512));
        assert_eq!(super::size("512B"), Some(512));
        for bad in ["", "KiB", "64kb", "1.5MiB", "-1"] {
            assert_eq!(super::size(bad), None, "{bad}");
        }
    }
}
