//! nginx's gzip module (and ngx_brotli's `brotli*` directives) as a route's `compress`:
//! what each level hands down (a level's directive replaces the one above it, as nginx
//! merges them), the table written on a route, and a note on each directive that does
//! not carry over as it is.

use crate::tree::Node;
use crate::Notes;

/// The directives this module takes in.
pub const DIRECTIVES: &[&str] = &[
    "gzip",
    "gzip_comp_level",
    "gzip_types",
    "gzip_min_length",
    "gzip_static",
    "gzip_vary",
    "gzip_proxied",
    "gzip_disable",
    "gzip_http_version",
    "gzip_buffers",
    "brotli",
    "brotli_comp_level",
    "brotli_types",
    "brotli_min_length",
    "brotli_static",
    "brotli_window",
    "brotli_buffers",
];

/// nginx's defaults: `gzip_comp_level 1`, ngx_brotli's `brotli_comp_level 6`, a
/// `*_min_length` of 20 bytes, and `text/html` always among the types.
const GZIP_LEVEL: u32 = 1;
const BROTLI_LEVEL: u32 = 6;
const MIN_LENGTH: u64 = 20;

/// What a route answers with, as far as compression goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serves {
    /// A server's answers: compressed on the fly.
    Proxied,
    /// A `root`'s files: their copies compressed ahead.
    Files,
}

/// The compression settings in force at a level.
#[derive(Debug, Clone, Default)]
pub struct Compression {
    gzip: Coding,
    brotli: Coding,
}

/// One coding's directives, as set so far from the levels above.
#[derive(Debug, Clone, Default)]
struct Coding {
    on: Option<bool>,
    level: Option<u32>,
    types: Option<Vec<String>>,
    min_length: Option<u64>,
    /// `*_static on` or `always`.
    precompressed: Option<bool>,
}

impl Compression {
    /// Takes in `d`, one of [`DIRECTIVES`], noting what does not carry over as it is.
    pub fn take(&mut self, d: &Node, notes: &mut Notes) {
        let (family, setting) = d.name.split_once('_').unwrap_or((&d.name, ""));
        let coding = if family == "gzip" {
            &mut self.gzip
        } else {
            &mut self.brotli
        };
        let a0 = d.arg(0).unwrap_or("");
        match setting {
            "" => {
                coding.on = Some(a0 == "on");
                if a0 == "on" {
                    notes.push(d.note("carried as the compress of the routes that proxy; a root's files are compressed ahead only (gzip_static's and brotli_static's copies)"));
                }
            }
            "comp_level" => match a0.parse() {
                Ok(n) => coding.level = Some(n),
                Err(_) => notes.push(d.note(format!("{a0}: not a level; left out"))),
            },
            "types" => coding.types = Some(d.args.iter().map(|t| t.to_ascii_lowercase()).collect()),
            "min_length" => match a0.parse() {
                Ok(n) => coding.min_length = Some(n),
                Err(_) => notes.push(d.note(format!("{a0}: not a length in bytes; left out"))),
            },
            "static" => {
                coding.precompressed = Some(a0 != "off");
                if a0 == "always" {
                    notes.push(d.note("always: sluice sends a copy only to a client that accepts its coding (as on)"));
                }
            }
            _ => notes.push(d.note(note(setting, a0))),
        }
    }

    /// The `compress` table of a route that `serves` so, where nginx compresses.
    pub fn table(&self, serves: Serves) -> Option<String> {
        match serves {
            Serves::Proxied => self.on_the_fly(),
            Serves::Files => [&self.gzip, &self.brotli]
                .iter()
                .any(|c| c.precompressed == Some(true))
                .then(|| "{ precompressed = true }".to_string()),
        }
    }

    /// `{ gzip = 5, br = 6, types = [...], min_length = 1000 }` for what is on.
    fn on_the_fly(&self) -> Option<String> {
        let (gzip, brotli) = (&self.gzip, &self.brotli);
        let on = |c: &Coding| c.on == Some(true);
        if !on(gzip) && !on(brotli) {
            return None;
        }
        let mut fields = Vec::new();
        if on(gzip) {
            fields.push(format!(
                "gzip = {}",
                gzip.level.unwrap_or(GZIP_LEVEL).clamp(1, 9)
            ));
        }
        if on(brotli) {
            let level = brotli.level.unwrap_or(BROTLI_LEVEL).min(11);
            fields.push(format!("br = {level}"));
        }
        // nginx always compresses text/html; sluice has one list for both codings.
        let mut types = vec!["text/html".to_string()];
        for c in [gzip, brotli].into_iter().filter(|c| on(c)) {
            let listed = c.types.clone().unwrap_or_default();
            types.extend(listed.into_iter().filter(|t| media_type(t)));
        }
        types.dedup();
        let mut unique = Vec::new();
        for t in types {
            if !unique.contains(&t) {
                unique.push(t);
            }
        }
        let quoted: Vec<String> = unique.iter().map(|t| format!("\"{t}\"")).collect();
        fields.push(format!("types = [{}]", quoted.join(", ")));
        let first_on = if on(gzip) { gzip } else { brotli };
        let min = first_on.min_length.unwrap_or(MIN_LENGTH);
        fields.push(format!("min_length = {min}"));
        Some(format!("{{ {} }}", fields.join(", ")))
    }
}

/// A type sluice's `types` takes: `type/subtype` or `*` (nginx's `gzip_types *`).
fn media_type(t: &str) -> bool {
    t == "*"
        || t.split_once('/').is_some_and(|(a, b)| {
            let token = |s: &str| {
                !s.is_empty()
                    && s.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b"!#$&^_.+-*".contains(&c))
            };
            token(a) && token(b)
        })
}

/// What sluice does instead of the directives it has no key for.
fn note(setting: &str, value: &str) -> String {
    match (setting, value) {
        ("vary", "off") => "sluice sends Vary: Accept-Encoding with every response it may compress (a cache would mix codings without it)".into(),
        ("vary", _) => "sluice sends Vary: Accept-Encoding with every response it may compress: nothing to write".into(),
        ("proxied", "any") => "sluice compresses whatever Via a request carries, as gzip_proxied any: nothing to write".into(),
        ("proxied", _) => "sluice compresses for requests that came through a proxy (Via) too, whatever the response's Cache-Control, as gzip_proxied any".into(),
        ("disable", _) => "not translated: sluice compresses for any client that accepts the coding (msie6, the usual value, names a browser of 2001)".into(),
        ("http_version", "1.0") => "sluice never compresses for an HTTP/1.0 client (it knows no chunked framing), as nginx's default".into(),
        ("http_version", _) => "sluice compresses for HTTP/1.1 and HTTP/2 clients: nothing to write".into(),
        ("buffers", _) => "sluice compresses each read of a body as it comes, and flushes it: nothing to set".into(),
        ("window", _) => "sluice sizes brotli's window to the body (up to 4 MiB): nothing to set".into(),
        _ => "not translated: sluice has no equivalent".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_types_and_lengths_make_one_table() {
        let mut c = Compression::default();
        c.gzip.on = Some(true);
        c.gzip.level = Some(5);
        c.gzip.types = Some(vec![
            "application/json".into(),
            "text/html".into(),
            "bad".into(),
        ]);
        let upstream = Serves::Proxied;
        assert_eq!(
            c.table(upstream).unwrap(),
            "{ gzip = 5, types = [\"text/html\", \"application/json\"], min_length = 20 }"
        );
        assert_eq!(c.table(Serves::Files), None);
        c.brotli.on = Some(true);
        c.brotli.precompressed = Some(true);
        c.gzip.min_length = Some(1000);
        let both = c.table(upstream).unwrap();
        assert!(
            both.starts_with("{ gzip = 5, br = 6,") && both.ends_with("min_length = 1000 }"),
            "{both}"
        );
        assert_eq!(c.table(Serves::Files).unwrap(), "{ precompressed = true }");
        c.gzip.on = Some(false);
        c.brotli.on = Some(false);
        assert_eq!(c.table(upstream), None);
    }
}
