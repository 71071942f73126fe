//! A route's `compress`: `true` (every coding at its default level, the default types),
//! or a table choosing codings, levels, types, a minimum length and precompressed files.
//! It reads and checks the key; choosing a coding per request is the proxy's.

use crate::model::{Action, Compress};
use crate::reader::{Reader, Span};
use crate::reference::{names, route};
use toml_edit::{TableLike, Value};

/// `gzip = true`'s level. zlib-rs's level 2 makes smaller output than C zlib's level 1
/// (nginx's default) with less CPU; its level 1 makes 22 to 45% larger output.
pub const DEFAULT_GZIP: u32 = 2;
/// `br = true`'s quality: brotli's cheapest level that beats gzip's output clearly.
pub const DEFAULT_BR: u32 = 4;
/// `zstd = true`'s level (zstd's own default).
pub const DEFAULT_ZSTD: u32 = 3;
/// Below this many bytes a coding's header and the CPU cost more than they save.
pub const DEFAULT_MIN_LENGTH: u64 = 256;

/// Text and the structured formats of the web; not images, fonts or archives, which
/// are compressed already.
pub const DEFAULT_TYPES: &[&str] = &[
    "text/*",
    "application/json",
    "application/*+json",
    "application/javascript",
    "application/xml",
    "application/*+xml",
    "image/svg+xml",
    "application/wasm",
];

/// A coding's key: its name, highest level and default level.
struct Coding {
    name: &'static str,
    lowest: u32,
    highest: u32,
    default: u32,
}

const GZIP: Coding = Coding {
    name: "gzip",
    lowest: 1,
    highest: 9,
    default: DEFAULT_GZIP,
};
const BR: Coding = Coding {
    name: "br",
    lowest: 0,
    highest: 11,
    default: DEFAULT_BR,
};
// Above 19, zstd's levels need windows of tens of megabytes per response.
const ZSTD: Coding = Coding {
    name: "zstd",
    lowest: 1,
    highest: 19,
    default: DEFAULT_ZSTD,
};

/// The route's `compress`, if it has one (`compress = false` has none).
pub(crate) fn compress(
    r: &mut Reader,
    table: &dyn TableLike,
    action: Option<&Action>,
) -> Option<Compress> {
    let item = table.get("compress")?;
    let compress = if let Some(on) = item.as_bool() {
        on.then(defaults)
    } else if let Some(t) = item.as_table_like() {
        from_table(r, t, item.span())
    } else {
        r.error(
            item.span(),
            "`compress` must be true, false or a table",
            "write compress = true, or compress = { gzip = 6, types = [\"text/*\"] }",
        );
        None
    }?;
    fits(r, &compress, action, item);
    Some(compress)
}

/// A proxied route compresses on the fly; a `root` route sends its files' copies
/// compressed ahead (`precompressed`); a `return` has nothing to compress.
fn fits(r: &mut Reader, compress: &Compress, action: Option<&Action>, item: &toml_edit::Item) {
    let (message, hint) = match action {
        Some(Action::Proxy { .. }) if compress.precompressed => (
            "`precompressed` is for a `root` route's files",
            "remove it, or move it to the route with `root`",
        ),
        Some(Action::Files { .. }) if !compress.precompressed => (
            "a `root` route's files are not compressed on the fly",
            "write compress = { precompressed = true } and keep FILE.gz, FILE.br or FILE.zst beside each file",
        ),
        Some(Action::Return(_)) => (
            "`compress` is for a route with `upstream` or `root`",
            "remove it: sluice's own answers are short",
        ),
        _ => return,
    };
    let key = item.as_table_like().and_then(|t| t.get("precompressed"));
    let span = key.and_then(|v| v.span()).or(item.span());
    r.error(span, message, hint);
}

/// `compress = true`.
fn defaults() -> Compress {
    Compress {
        gzip: Some(DEFAULT_GZIP),
        br: Some(DEFAULT_BR),
        zstd: Some(DEFAULT_ZSTD),
        types: DEFAULT_TYPES.iter().map(|t| t.to_string()).collect(),
        min_length: DEFAULT_MIN_LENGTH,
        precompressed: false,
    }
}

/// `compress = { ... }`: codings not named are off, unless it names none.
fn from_table(r: &mut Reader, t: &dyn TableLike, whole: Span) -> Option<Compress> {
    r.only_keys(t, &names(route::COMPRESS), "`compress`");
    let named = [GZIP.name, BR.name, ZSTD.name]
        .iter()
        .any(|c| t.contains_key(c));
    let mut level = |coding: &Coding| match t.get(coding.name) {
        None if named => None,
        None => Some(coding.default),
        Some(_) => level(r, t, coding),
    };
    let (gzip, br, zstd) = (level(&GZIP), level(&BR), level(&ZSTD));
    let min_length = r
        .integer(t, "min_length", u64::MAX >> 1)
        .unwrap_or(DEFAULT_MIN_LENGTH);
    let precompressed = r.boolean(t, "precompressed").unwrap_or(false);
    let types = types(r, t);
    let turned_off = |c: &Coding| t.get(c.name).is_none_or(|v| v.as_bool() == Some(false));
    if named && [GZIP, BR, ZSTD].iter().all(turned_off) && !precompressed {
        r.error(
            whole,
            "`compress` turns every coding off",
            "give a coding a level (gzip = 6), or remove `compress`",
        );
        return None;
    }
    Some(Compress {
        gzip,
        br,
        zstd,
        types: types?,
        min_length,
        precompressed,
    })
}

/// `gzip = 6`, `gzip = true` (its default level) or `gzip = false` (off).
fn level(r: &mut Reader, t: &dyn TableLike, coding: &Coding) -> Option<u32> {
    let v = r.value(t, coding.name, "a level, true or false")?;
    let range = i64::from(coding.lowest)..=i64::from(coding.highest);
    match (v.as_bool(), v.as_integer()) {
        (Some(on), _) => on.then_some(coding.default),
        (_, Some(n)) if range.contains(&n) => Some(n as u32),
        _ => {
            r.error(
                v.span(),
                format!(
                    "`{}` must be a level from {} to {}",
                    coding.name, coding.lowest, coding.highest
                ),
                format!(
                    "write {} = {} (its default), or false to turn it off",
                    coding.name, coding.default
                ),
            );
            None
        }
    }
}

/// `types = ["text/*", "application/json"]`: media types, a `*` in place of a part.
fn types(r: &mut Reader, t: &dyn TableLike) -> Option<Vec<String>> {
    let Some(v) = r.value(t, "types", "a list of media types") else {
        return Some(DEFAULT_TYPES.iter().map(|t| t.to_string()).collect());
    };
    let Some(list) = v.as_array() else {
        r.error(
            v.span(),
            "`types` must be a list of media types",
            "write types = [\"text/*\", \"application/json\"]",
        );
        return None;
    };
    let mut out = Vec::new();
    for item in list.iter() {
        match item.as_str().map(str::to_ascii_lowercase) {
            Some(ty) if media_type(&ty) => out.push(ty),
            _ => type_error(r, item),
        }
    }
    (out.len() == list.len()).then_some(out)
}

fn type_error(r: &mut Reader, item: &Value) {
    r.error(
        item.span(),
        format!("{} is not a media type", item.to_string().trim()),
        "write \"type/subtype\" without parameters, a `*` for a part (\"text/*\", \"application/*+json\"), or \"*\" for any",
    );
}

/// `type/subtype` (at most one `*`), or `*`.
fn media_type(text: &str) -> bool {
    let token = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-*".contains(&b))
    };
    let stars = text.bytes().filter(|b| *b == b'*').count();
    match text.split_once('/') {
        _ if text == "*" => true,
        Some((ty, sub)) => {
            !ty.is_empty() && !sub.is_empty() && token(ty) && token(sub) && stars <= 1
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Compress;

    fn with(types: &[&str]) -> Compress {
        Compress {
            gzip: Some(1),
            br: None,
            zstd: None,
            types: types.iter().map(|t| t.to_string()).collect(),
            min_length: 0,
            precompressed: false,
        }
    }

    #[test]
    fn patterns_take_their_types_and_a_wildcard_never_takes_an_event_stream() {
        let c = with(super::DEFAULT_TYPES);
        for yes in [
            "text/html",
            "text/css",
            "application/json",
            "application/ld+json",
        ] {
            assert!(c.compresses(yes), "{yes}");
        }
        for no in ["image/png", "application/octet-stream", "text/event-stream"] {
            assert!(!c.compresses(no), "{no}");
        }
        assert!(with(&["*"]).compresses("image/png"));
        assert!(!with(&["*"]).compresses("text/event-stream"));
        assert!(with(&["text/event-stream"]).compresses("text/event-stream"));
    }

    #[test]
    fn media_types_are_checked() {
        for ok in ["*", "text/*", "application/*+json", "image/svg+xml"] {
            assert!(super::media_type(ok), "{ok}");
        }
        for bad in [
            "text",
            "/json",
            "text/",
            "text/html; charset=utf-8",
            "*/*/*",
            "a*/*",
        ] {
            assert!(!super::media_type(bad), "{bad}");
        }
    }
}
